/* update: the partition update (Gecko's pu): merge sorted adds into one
 * partition's tagset file, removed tagsets into its delete file.
 *
 *     st_store *s = st_store_open(dir, &err);
 *     st_schema *schema = st_update_store_schema(s, &err);
 *     st_txn *t = st_store_begin(s, vol, &err);      // moves s to the current generation
 *     st_update_partition(t, s, schema, vol, part, &adds, &opts, &stats, &err);
 *     ...                                            // more partitions of vol
 *     st_store_commit(t, &err);                      // or st_store_abort(t) after any failure
 *
 * st_update_partition reads the partition's current tags file (through s,
 * which must be the handle t began on) as records (store/record.h), merges
 * the add records (sorted by key, every one placed in this partition; NULL:
 * the partition's adds file, if it has one) and stages in t:
 *   tags.G  the merged tagsets (the tags file is dropped if none remain);
 *   dels.G  the tagsets this update removed (dropped if none, so a dels file
 *           always belongs to its partition's last update);
 *   adds    dropped, when the adds came from the partition's adds file.
 * It does NOT commit: the caller commits t, so one generation can carry
 * many partitions (one volume's job, or a whole load: store/load.h). If it
 * fails, t holds stages never written and must be aborted; the generation
 * current before stays current and whole. Only existing files are dropped,
 * so an update with nothing to do (no tags, no adds, no dels) stages nothing.
 *
 * st_update_adds is the split step before it: the adds accumulate in the
 * partition's adds file until an update with adds NULL merges them.
 *
 * The policy, per key (records with equal keys, old ones first):
 *   1. a key in opts.remove_keys is removed: all its records go to dels;
 *   2. COMBINE (default, Gecko's update): the add's tags follow the old
 *      tagset's; the tagset fields are the last record's (the add's);
 *      REPLACE: an add tagset replaces the old tagset of its key, which is
 *      counted in replaced_tagsets (not written to dels: the key stays);
 *   3. age-off: if the tagset step 2 keeps has opts.age_field (a key or
 *      tagset field of type time or integer) below opts.age_cutoff, all the
 *      key's records go to dels instead.
 * Tagsets with equal keys in an old file are combined into one.
 * An old tagset no add touches and the policy keeps goes from its decoded
 * block to the new file column by column, runs of them at a time (no
 * records made); the file is byte for byte what the records would give.
 *
 * Memory: the largest tagset of each side plus a record reader and two
 * writers (about 3 x the write options' nbuf buffers and two blocks). */
#ifndef COMB_STORE_UPDATE_H
#define COMB_STORE_UPDATE_H

#include <stddef.h>
#include <stdint.h>

#include "store/datastore.h"
#include "store/err.h"
#include "store/merge.h"
#include "store/schema.h"
#include "store/tagfile.h"

typedef enum st_update_mode { ST_UPDATE_COMBINE, ST_UPDATE_REPLACE } st_update_mode;

typedef struct st_update_opts {
    st_update_mode mode;
    const char *age_field;   /* NULL: no age-off */
    int64_t age_cutoff;      /* tagsets with age_field < age_cutoff are removed */
    const void *remove_keys; /* nremove bare keys (key_size bytes each), ascending */
    size_t nremove;
    st_write_opts write;     /* block size, codec, label (the cycle's) of new files */
} st_update_opts;

void st_update_opts_default(st_update_opts *o);

/* Totals, added to by each partition update. */
typedef struct st_update_stats {
    uint64_t partitions;                    /* partitions updated */
    uint64_t old_tagsets, add_tagsets;      /* keys read from each side */
    uint64_t out_tagsets, out_tags;         /* written to tags files */
    uint64_t removed_tagsets, removed_tags; /* written to dels files */
    uint64_t replaced_tagsets;              /* old tagsets a REPLACE superseded */
} st_update_stats;

/* Parses a store's schema text: the canonical text of st_schema_parse, or
 * a comb form `schema NAME { ... }` around it. Errors give line and column. */
st_schema *st_update_schema(const char *text, size_t len, st_err *err);
/* The same for the schema in a store's STORE file. */
st_schema *st_update_store_schema(const st_store *s, st_err *err);

/* Checks the options against a store and its schema (age field, remove
 * keys' order, mode) and gives the partition key field, which must be a key
 * field; st_update_partition does this itself. pk may be NULL. */
int st_update_check(const st_store *s, const st_schema *schema, const st_update_opts *o,
                    const st_field **pk, st_err *err);

/* Updates partition (vol, part) inside t, as described above. stats may be NULL. */
int st_update_partition(st_txn *t, const st_store *s, const st_schema *schema, uint32_t vol,
                        uint32_t part, const st_source *adds, const st_update_opts *o,
                        st_update_stats *stats, st_err *err);

/* The cycle's split step: merges the add stream (not NULL) into the
 * partition's adds file, combining, with no policy (only o's write options
 * apply; nothing is removed; tags and dels are untouched). A later
 * st_update_partition with adds NULL merges that file into the tags and
 * drops it. In stats, out_* count the new adds file. */
int st_update_adds(st_txn *t, const st_store *s, const st_schema *schema, uint32_t vol,
                   uint32_t part, const st_source *adds, const st_update_opts *o,
                   st_update_stats *stats, st_err *err);

#endif
