/* fileload: tags in any order into a new tagset file, through the loaders'
 * front end (store/recsort.h). (Loading into a datastore is store/load.h.)
 *
 * st_fileload_add takes a tagset row and at most one tag row at a time, in any
 * order. The records (store/record.h) are sorted by key, stably, and come out
 * grouped: consecutive records with equal keys make one tagset holding their
 * tags in the order they were added, with the key and tagset fields of its
 * LAST record (a later add updates a tagset's summary fields). A record
 * without a tag contributes no tag, so a tagset can have none. Without tag
 * fields each record is a tagset of its own, as in a datastore.
 *
 * st_fileload_finish writes the tagsets to path through st_writer
 * (temporary name, fsync, rename), replacing any old file; a failure
 * leaves what was there.
 *
 * Memory: the sort's parcel (opts.parcel_bytes) plus one file writer.
 *
 * Ownership: the loader keeps a pointer to the schema, which must outlive
 * it; st_fileload_free releases it (finished or not). */
#ifndef COMB_STORE_FILELOAD_H
#define COMB_STORE_FILELOAD_H

#include <stdint.h>

#include "store/err.h"
#include "store/record.h" /* st_batch_row and st_batch_tag, which its callers use */
#include "store/schema.h"
#include "store/sort.h"
#include "store/tagfile.h"

typedef struct st_fileload_opts {
    st_sort_opts sort;   /* parcel size, temporary directory */
    st_write_opts write; /* block size, codec, label */
} st_fileload_opts;

void st_fileload_opts_default(st_fileload_opts *o);

typedef struct st_fileload_stats {
    uint64_t records;    /* st_fileload_add calls */
    uint64_t tagsets;    /* tagsets written */
    uint64_t tags;       /* tags written */
} st_fileload_stats;

typedef struct st_fileload st_fileload;

/* opts may be NULL for the defaults. */
st_fileload *st_fileload_file(const char *path, const st_schema *s, const st_fileload_opts *opts,
                          st_err *err);
/* tag may be NULL: the tagset gets no tag from this record. Bool and enum
 * values are checked here, so a bad one is refused before anything is sorted
 * (ST_EINPUT, and the loader goes on). */
int st_fileload_add(st_fileload *l, const void *row, const void *tag, st_err *err);
/* Sorts and writes the file. 0, or -1 with the target untouched. */
int st_fileload_finish(st_fileload *l, st_fileload_stats *stats, st_err *err);
void st_fileload_free(st_fileload *l);

#endif
