/* recsort: the loaders' front end: tags in any order -> checked tag records
 * (store/record.h) -> external sort by (partition, key) -> read back one
 * partition at a time, as st_merge add streams.
 *
 *     st_recsort *r = st_recsort_new(schema, nparts, "load", &sort_opts, &err);
 *     for each tag:  st_recsort_add(r, part, row, tag, &err);
 *     st_recsort_finish(r, &err);
 *     while (st_recsort_next_part(r, &part, &err) == 1)
 *         merge st_recsort_source(r, part) into the target for part;
 *
 * Both loaders use it and differ only in their target: st_fileload (a new
 * tagset file, one partition) and st_load (a datastore's partitions, each
 * updated by store/update.h). The sort is stable, so records with equal keys
 * come out in the order they were added: a tagset's tags keep their order
 * and its last record gives its tagset fields (store/record.h).
 *
 * Errors: st_recsort_add refuses a record with bad values (ST_EINPUT,
 * prefixed with the name and the record's number) and stays usable; any
 * other failure (the sort's I/O, memory) leaves it able only to be freed.
 *
 * Memory: the sort's parcel (opts.parcel_bytes), plus three records.
 * Ownership: the schema must outlive the recsort; st_recsort_free releases
 * the rest (and the sort's temporary files). */
#ifndef COMB_STORE_RECSORT_H
#define COMB_STORE_RECSORT_H

#include <stdint.h>

#include "store/err.h"
#include "store/merge.h"
#include "store/schema.h"
#include "store/sort.h"

typedef struct st_recsort st_recsort;

/* Records for nparts partitions (>= 1), ordered by partition then key.
 * name prefixes messages and names the sources. opts may be NULL (the
 * defaults); its prefix is ignored (the recsort gives its own). */
st_recsort *st_recsort_new(const st_schema *s, uint32_t nparts, const char *name,
                           const st_sort_opts *opts, st_err *err);
/* One tag of partition part (< nparts): its tagset row and tag row, or tag
 * NULL for a tagset without tags (or without new tags). */
int st_recsort_add(st_recsort *r, uint32_t part, const void *row, const void *tag, st_err *err);
/* Records added so far. */
uint64_t st_recsort_count(const st_recsort *r);
/* Ends the input and sorts. 0, or -1 (also after an earlier failure). */
int st_recsort_finish(st_recsort *r, st_err *err);
/* After finish, the next partition that has records: 1 with *part set (in
 * ascending order), 0 when no records remain, -1 on error. */
int st_recsort_next_part(st_recsort *r, uint32_t *part, st_err *err);
/* After finish, partition part's records in key order as a source of
 * records (st_rec_size bytes), ending at the first record of another
 * partition. Partitions are read in ascending order, each to its end (as
 * st_merge does); a partition without records gives an empty source. */
st_source st_recsort_source(st_recsort *r, uint32_t part);
void st_recsort_free(st_recsort *r); /* NULL is allowed */

#endif
