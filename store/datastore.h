/* datastore: a directory of volumes x partitions of tagset files, with
 * snapshot readers, locked writers and atomic commits.
 *
 * Layout (docs/FORMAT.md, "Datastores", has the byte-level details):
 *   DIR/STORE           what the store is: name, V, P, partition key, schema
 *   DIR/MANIFEST        the current generation of every partition's files
 *   DIR/LOCK, READERS   lock files (writers; readers' snapshot pins)
 *   DIR/vNNN/pNNN/KIND.G  partition files: tags.G, adds.G, dels.G, where G is
 *                       the generation of the commit that staged them
 * A volume directory may be a symlink to another file system: Gecko's
 * volume is a file system, and one volume is to this store what one machine
 * is to a cluster. Tagsets go to partition st_partition_of(key bytes).
 *
 * Readers: st_store_open reads the manifest once and pins that generation
 * (a shared lock on byte G of READERS); the files it names stay on disk until
 * the reader closes, whatever writers commit meanwhile.
 *
 * Writers: st_store_begin takes the writer lock of one volume (so update jobs
 * on different volumes run in parallel, Gecko's one job per volume) or of the
 * whole store, refusing with the holder's pid if another writer has it, and
 * moves the handle's snapshot to the current generation, so the writer reads
 * (st_store_file) the latest files of its scope, the ones it replaces.
 * st_store_stage names a new file (the caller writes it, e.g. through a
 * temporary name and a rename); st_store_commit makes all staged files
 * current at once by replacing MANIFEST (write MANIFEST.tmp, fsync, rename,
 * fsync DIR). A commit that fails before the rename, an abort, or a writer
 * killed at any point leaves the previous generation current and intact;
 * its staged files are removed then or by the next st_store_begin of that
 * volume. Files a commit supersedes are deleted when no reader pins an older
 * generation, else by a later begin or commit.
 *
 * A store handle and its transactions belong to one thread at a time; open
 * one handle per thread (handles exclude each other like processes do).
 *
 * Errors: ST_EINPUT for bad arguments and for a writer lock held elsewhere,
 * ST_ECORRUPT for damaged STORE/MANIFEST, ST_EVERSION for a newer format,
 * ST_EIO and ST_ENOMEM as usual; err must not be NULL. */
#ifndef COMB_STORE_DATASTORE_H
#define COMB_STORE_DATASTORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/block.h"
#include "store/err.h"
#include "store/manifest.h"
#include "store/schema.h"

#define ST_ALL_VOLUMES UINT32_MAX

/* What st_store_create writes into STORE. */
typedef struct st_store_meta {
    const char *name;       /* printable, 1..200 bytes */
    const char *partkey;    /* the partition-key field's name, no spaces */
    uint64_t bucket;        /* 0: placed by hash; else by windows of the key (st_partition_of_time) */
    const char *keytype;    /* with a bucket, st_partition_keytype of the key (NULL: time, i64) */
    uint32_t volumes;       /* 1..1000 (Gecko: 93) */
    uint32_t partitions;    /* per volume, 1..1000 (Gecko: 52) */
    const char *schema;     /* opaque schema text, kept verbatim */
    size_t schema_len;
} st_store_meta;

typedef struct st_store st_store;
typedef struct st_txn st_txn;

/* Makes a new store directory dir (which must not exist): built under a
 * temporary name and renamed into place, so it appears whole or not at all. */
int st_store_create(const char *dir, const st_store_meta *meta, st_err *err);

/* A reader's snapshot of the store. */
st_store *st_store_open(const char *dir, st_err *err);
void st_store_close(st_store *s); /* NULL is allowed */
/* Another holder of s (one more close): handles that share a snapshot.
 * Writing through a shared s (st_store_begin) would move every holder's
 * snapshot: writers take a store of their own (st_store_shared). */
st_store *st_store_ref(st_store *s);
bool st_store_shared(const st_store *s);

typedef struct st_storeinfo {
    const char *dir, *name, *partkey, *label, *schema;
    size_t schema_len;
    uint32_t volumes, partitions;
    uint64_t bucket;        /* the placement's window in the key's units, 0: by hash */
    const char *keytype;    /* "": the key is a time or i64; else its type (u32 ...) */
    uint64_t generation;
    uint64_t files[ST_NKINDS], bytes[ST_NKINDS]; /* per kind, from the manifest */
} st_storeinfo;

/* Pointers stay valid while s is open and no commit goes through s. */
void st_store_info(const st_store *s, st_storeinfo *info);

/* Placement: XXH3-64 (seed 0) of the partition-key field's bytes, modulo the
 * number of partitions in the store; global partition g lives in volume
 * g / partitions, partition g % partitions. Part of the format: never change. */
uint32_t st_partition_of(const void *bytes, size_t len, uint32_t nparts_total);
/* A store made with a bucket (a layout for tag-time pruning) places by time
 * instead: its partition key is a time (or i64) field, and the window
 * floor(value / bucket) goes to global partition window mod nparts_total, so
 * consecutive windows fill consecutive partitions and a partition's file
 * holds few of them: zone maps on times near the key's then skip the other
 * partitions' blocks. Part of the format: never change. */
uint32_t st_partition_of_time(int64_t value, uint64_t bucket, uint32_t nparts_total);
/* Whether field f can place a store by windows of bucket units (an integer
 * or time key field); -1 with err set if not. */
int st_partition_check_bucket(const st_field *f, uint64_t bucket, st_err *err);
/* A key placed by windows that is not a time or i64 (an event store's run:
 * range partitioning) is read as its type, which STORE then names (version
 * 3): its name for st_store_meta.keytype, NULL for time and i64. */
const char *st_partition_keytype(const st_field *f);
void st_partition_split(uint32_t global, uint32_t partitions, uint32_t *vol, uint32_t *part);
/* Both at once, for this store (by hash or by windows, as it was made). */
void st_store_place(const st_store *s, const void *bytes, size_t len, uint32_t *vol,
                    uint32_t *part);
/* For a store placed by windows, the global partitions that can hold a key
 * in [lo, hi] (partition-key values as stored, len bytes; NULL: unbounded):
 * *n of them into out (room for volumes x partitions), none when lo > hi,
 * every one when the range spans that many windows. False for a store
 * placed by hash, where a range says nothing of the partitions. */
bool st_store_place_range(const st_store *s, const void *lo, const void *hi, size_t len,
                          uint32_t *out, uint32_t *n);

typedef struct st_file {
    uint32_t vol, part;
    st_kind kind;
    uint64_t gen, size; /* size as recorded at commit */
    /* a tags file of a store placed by windows: the range of the partition
     * key it holds, as its writer gave it to the commit that made it
     * (ST_KEYS_UNKNOWN: a manifest from before key ranges; read the file) */
    st_mkeys keys;
    char path[PATH_MAX];
} st_file;

/* The snapshot's file of a kind in a partition: 1 (out filled), 0 none, -1
 * bad arguments. */
int st_store_file(const st_store *s, uint32_t vol, uint32_t part, st_kind kind, st_file *out,
                  st_err *err);
/* Calls fn for every file of the snapshot in (volume, partition, kind)
 * order; stops at and returns the first nonzero result of fn. */
int st_store_files(const st_store *s, int (*fn)(const st_file *f, void *ctx), void *ctx);
/* DIR/vNNN, e.g. for a sort's temporary files on the same file system. */
int st_store_volume_dir(const st_store *s, uint32_t vol, char *buf, size_t n, st_err *err);

/* Starts a writer on one volume or ST_ALL_VOLUMES; moves s to the current
 * generation (like a commit, this invalidates st_store_info's pointers);
 * cleans up the files that crashed or aborted writers left in that scope. */
st_txn *st_store_begin(st_store *s, uint32_t vol, st_err *err);
/* The path of a new file of kind for the partition (valid until the txn
 * ends); the commit makes it current. Each (vol, part, kind) once per txn. */
int st_store_stage(st_txn *t, uint32_t vol, uint32_t part, st_kind kind, const char **path,
                   st_err *err);
/* The zone of the partition key's column in the tags file staged for the
 * partition, as its writer saw it (st_writer_commit_zone): the range the
 * commit records for it. A store placed by windows of the key needs it of
 * every tags file staged; the commit opens none of them. */
int st_store_stage_keys(st_txn *t, uint32_t vol, uint32_t part, const st_zone *z, st_err *err);
/* At commit the partition will have no file of kind. */
int st_store_drop(st_txn *t, uint32_t vol, uint32_t part, st_kind kind, st_err *err);
/* A label for the new generation (e.g. the cycle's name); printable text. */
int st_store_set_label(st_txn *t, const char *label, st_err *err);
/* Every staged file must exist. Ends t whatever happens. On success s's
 * snapshot moves to the new generation. -1 if the commit did not happen;
 * -2 if it happened but the directory fsync after the rename failed (the
 * new generation is current, though a crash might still undo it). */
int st_store_commit(st_txn *t, st_err *err);
/* Removes the staged files and ends t. NULL is allowed. */
void st_store_abort(st_txn *t);

#endif
