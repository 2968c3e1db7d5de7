/* load: loading into a datastore: tag records in any order -> sorted by partition and key
 * -> every touched partition updated -> one commit.
 *
 *     st_load *l = st_load_new(s, &opts, &err);
 *     for each tag:  st_load_add(l, row, tag, &err);     // tag NULL: a tagset without tags
 *     st_load_commit(l, &stats, &err);                  // ends l, committed or not
 *
 * st_load_add places each record (st_store_place on the store's partition
 * key, which must be a key field) and hands it to the loaders' front end
 * (store/recsort.h: an external sort by (partition, key), stable, so a
 * tagset's tags keep the order they were added in). st_load_commit ends the input, begins a
 * whole-store writer (st_store_begin(s, ST_ALL_VOLUMES)), runs
 * st_update_partition on every partition that received records, and, when
 * the options age off or remove keys, on every other partition too (any may
 * hold tagsets to remove); then it commits once. So a load is visible all
 * at once or not at all, and a load that failed or was killed is simply run
 * again. A load the caller cancels (opts.cancelled) stops at the next
 * partition or before the commit, committing nothing. The options' write
 * label also labels the generation. With
 * opts.to_adds the loader runs st_update_adds instead (Gecko's split: the
 * day's tags wait in each partition's adds file for the cycle's update);
 * the policy then does not apply and only touched partitions are visited.
 *
 * Memory: the sort's parcel (opts.sort.parcel_bytes, default 1 GiB), plus
 * one partition update at a time (store/update.h).
 *
 * Errors: st_load_add refuses a record with bad values (ST_EINPUT) and stays
 * usable; any other failure (the sort's I/O, memory) leaves the loader able
 * only to be freed. A failed commit leaves the store as it was.
 * A loader belongs to one thread and its store handle to the loader until
 * commit or free. */
#ifndef COMB_STORE_LOAD_H
#define COMB_STORE_LOAD_H

#include <stdbool.h>

#include "store/datastore.h"
#include "store/err.h"
#include "store/schema.h"
#include "store/sort.h"
#include "store/update.h"

typedef struct st_load_opts {
    st_update_opts update; /* policy and write options for every partition */
    st_sort_opts sort;     /* parcel size, temporary directory (prefix: ignored) */
    bool to_adds;          /* stage into adds files (st_update_adds), for a later update */
    /* Asked between partitions and before the commit: true stops the load
     * with ST_ECANCEL, nothing committed (NULL: never). */
    bool (*cancelled)(void *ctx);
    void *cancel_ctx;
} st_load_opts;

void st_load_opts_default(st_load_opts *o);

typedef struct st_load st_load;

/* A loader into the store s (opts NULL: defaults). */
st_load *st_load_new(st_store *s, const st_load_opts *opts, st_err *err);
/* The store's schema, which the rows passed to st_load_add follow. */
const st_schema *st_load_schema(const st_load *l);
/* One tag: its tagset row (row_size bytes) and tag row (tag_size bytes), or
 * tag NULL for a tagset without tags (or without new tags). */
int st_load_add(st_load *l, const void *row, const void *tag, st_err *err);
/* Records added so far. */
uint64_t st_load_count(const st_load *l);
/* Sorts, updates, commits and frees l; stats (may be NULL) is filled.
 * Returns 0 (also when there was nothing to load: no new generation), -1
 * (nothing committed) or -2 (committed, but the directory fsync after the
 * rename failed: see st_store_commit). */
int st_load_commit(st_load *l, st_update_stats *stats, st_err *err);
/* Frees l without committing; NULL is allowed. */
void st_load_free(st_load *l);

#endif
