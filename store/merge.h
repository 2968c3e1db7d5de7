/* merge: the partition update's core: merge sorted old and add tagsets.
 *
 * Both inputs are streams of fixed-width records in key order; consecutive
 * records with equal keys (keycmp == 0) form one tagset (a key and its tags).
 * For every key present in either input a policy decides what the new stream
 * holds; tagsets the policy removes (age-off) go to a second sink, the delete
 * file of Gecko's pu, so nothing leaves the store without a record of it.
 *
 * The merge knows nothing of the file format: sources and sinks are
 * callbacks, so a tagset file reader, a sorter or an array can feed it and a
 * tagset file writer can take its output. Input out of order is refused with
 * the source's name and the record's position. Memory: the largest tagset of
 * each input, plus one record. */
#ifndef COMB_STORE_MERGE_H
#define COMB_STORE_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "store/err.h"
#include "store/sort.h"

/* A stream of records: next returns 1 with *rec set (valid until the next
 * call), 0 at the end, -1 with err filled. name is used in messages. */
typedef struct st_source {
    int (*next)(void *self, const void **rec, st_err *err);
    void *self;
    const char *name;
} st_source;

/* A sorter's output (after st_sorter_finish) as a source: the add stream of
 * a partition update is usually the day's tags through st_sorter. */
st_source st_source_of_sorter(st_sorter *s, const char *name);

/* n records of rec_size bytes, contiguous, sharing one key. n == 0: absent. */
typedef struct st_tagset {
    const unsigned char *recs;
    size_t n;
} st_tagset;

/* Receives whole tagsets in key order; 0, or -1 with err filled to stop the
 * merge. put == NULL discards what would go there. */
typedef struct st_sink {
    int (*put)(void *self, const st_tagset *ts, st_err *err);
    void *self;
} st_sink;

/* What the new stream holds for one key. When only one side has the key,
 * KEEP_OLD, TAKE_ADD and COMBINE all keep that side's tagset. */
typedef enum st_merge_action {
    ST_MERGE_KEEP_OLD, /* old; the add tagset goes to the discarded sink */
    ST_MERGE_TAKE_ADD, /* add; the old tagset goes to the discarded sink */
    ST_MERGE_COMBINE,  /* old's records followed by add's (Gecko's update) */
    ST_MERGE_REMOVE,   /* nothing; old's then add's records go to removed */
    ST_MERGE_FAIL      /* stop the merge: the policy filled err */
} st_merge_action;

/* Decides for one key; old or add has n == 0 when that side lacks the key. */
typedef st_merge_action (*st_merge_policy)(const st_tagset *old, const st_tagset *add,
                                           void *ctx, st_err *err);

typedef struct st_merge_spec {
    size_t rec_size;
    st_cmp_fn keycmp; /* compares the keys of two records */
    void *key_ctx;
    st_source old, add;
    st_merge_policy policy; /* NULL: combine everything */
    void *policy_ctx;
    st_sink out, removed, discarded;
} st_merge_spec;

typedef struct st_merge_stats {
    uint64_t old_tagsets, add_tagsets, out_tagsets, removed_tagsets, discarded_tagsets;
    /* Trust but verify: old_recs + add_recs == out_recs + removed_recs + discarded_recs. */
    uint64_t old_recs, add_recs, out_recs, removed_recs, discarded_recs;
} st_merge_stats;

/* Runs the merge to the end of both inputs. 0, or -1 with err filled (the
 * sinks may have received part of the output: write them to temporary files
 * and commit only on success). stats may be NULL. */
int st_merge(const st_merge_spec *spec, st_merge_stats *stats, st_err *err);

/* The merge's parts, for a caller that moves most tagsets some other way
 * (store/update.c copies untouched ones block column by block column) and
 * merges the rest as st_merge would. A side: one input's current tagset in
 * buf (n records), and the record after it (the first of the next tagset)
 * in ahead. A side that only holds records (st_merge_append) is zeroed with
 * spec set, and needs no open. */
typedef struct st_merge_side {
    const st_source *src;
    const char *name;
    const st_merge_spec *spec;
    unsigned char *buf, *ahead;
    size_t n, cap; /* records in buf, room for */
    int has_ahead;
    uint64_t pos; /* records read, for messages */
} st_merge_side;

/* Opens a side on src (named dflt when src has no name) and loads its first tagset. */
int st_merge_open_side(st_merge_side *sd, const st_merge_spec *spec, const st_source *src,
                       const char *dflt, st_err *err);
/* Makes the next tagset the current one (n == 0 at the end); input out of order is refused. */
int st_merge_load(st_merge_side *sd, st_err *err);
/* Appends n records to the side's buffer. */
int st_merge_append(st_merge_side *sd, const void *recs, size_t n, st_err *err);
void st_merge_close_side(st_merge_side *sd);
/* The error for record pos of input name sorting before the one above it. */
int st_merge_disorder(const char *name, uint64_t pos, st_err *err);
/* One key: the policy's action on old and add (n == 0 where absent; old's
 * records are o's buffer, which may take add's), applied and counted. The
 * caller clears err->msg first (the policy's failure is told by it). */
int st_merge_key(const st_merge_spec *sp, st_merge_side *o, const st_tagset *old,
                 const st_tagset *add, st_merge_stats *st, st_err *err);

#endif
