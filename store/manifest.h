/* manifest: a datastore's two text files, STORE (what the store is) and
 * MANIFEST (which file generation each partition holds now).
 *
 * Both are short text a person can read, ending in a line "xxh3 <16 hex>":
 * the XXH3-64 of every byte before that line, verified on every load. The
 * exact layout is in docs/FORMAT.md, "Datastores". Parsing trusts nothing:
 * every field is checked and every error names the file and line. */
#ifndef COMB_STORE_MANIFEST_H
#define COMB_STORE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/err.h"

/* The kinds of file a partition holds, in manifest column order. */
#define ST_KINDS(X)                                                                 \
    X(ST_TAGS, "tags") /* the partition's tagset file */                            \
    X(ST_ADDS, "adds") /* sorted tags to merge in this cycle */                     \
    X(ST_DELS, "dels") /* tagsets the last update removed (Gecko's delete file) */

#define ST_KIND_ENUM(e, name) e,
typedef enum st_kind { ST_KINDS(ST_KIND_ENUM) ST_NKINDS } st_kind;
#undef ST_KIND_ENUM

extern const char *const st_kind_names[ST_NKINDS];

#define ST_MAX_VOLUMES 1000u    /* directory names have three digits */
#define ST_MAX_PARTITIONS 1000u /* per volume */
#define ST_TEXT_MAX 200         /* store name, partition key, label */
#define ST_SCHEMA_MAX (16u << 20)

/* One partition's file of one kind: gen 0 means there is none. */
typedef struct st_mfile {
    uint64_t gen, size;
} st_mfile;

/* What a partition's tags file holds of the partition key (a store placed
 * by windows of it): the range of its values, as st_field_order images (the
 * zone maps its writer wrote, handed to the commit), so that a query on a
 * range of the key skips the partitions outside it without opening their
 * files. */
typedef enum st_keys_state {
    ST_KEYS_UNKNOWN, /* not recorded (a manifest older than key ranges): read it */
    ST_KEYS_RANGE,   /* every row's key is in [lo, hi] */
    ST_KEYS_NONE,    /* the file holds no rows */
} st_keys_state;

typedef struct st_mkeys {
    uint64_t lo, hi;
    st_keys_state state;
} st_mkeys;

/* Whether k (not UNKNOWN) is the range of a file whose key's zone map
 * spans min..max (min > max: the file holds no rows). */
static inline bool st_mkeys_match(const st_mkeys *k, uint64_t min, uint64_t max)
{
    return min > max ? k->state == ST_KEYS_NONE
                     : k->state == ST_KEYS_RANGE && k->lo == min && k->hi == max;
}

typedef struct st_manifest {
    uint64_t generation; /* commits so far; 0 for a new store */
    uint32_t volumes, partitions;
    char label[ST_TEXT_MAX + 1]; /* the last commit's label, e.g. the cycle's */
    st_mfile *files;             /* [volumes][partitions][ST_NKINDS] */
    /* 'u' or 'i' when the manifest records key ranges (version 2) of an
     * unsigned or signed key, else 0 and keys is NULL */
    char keysign;
    st_mkeys *keys;              /* [volumes][partitions] */
} st_manifest;

/* The key types STORE version 3 may name (partkeytype), by st_type: u8,
 * u16, u32, u64, i8, i16, i32. */
#define ST_META_NKEYTYPES 7
extern const char *const st_meta_keytypes[ST_META_NKEYTYPES];

/* The store's fixed description, written once by create. */
typedef struct st_meta {
    char name[ST_TEXT_MAX + 1];
    char partkey[ST_TEXT_MAX + 1]; /* the field whose bytes place tagsets */
    uint64_t bucket;               /* 0, or windows of the key place them (STORE version 2) */
    char keytype[ST_TEXT_MAX + 1]; /* "", or the key's type when not time or i64 (version 3) */
    uint32_t volumes, partitions;
    char *schema; /* opaque text (part A's schema), schema_len bytes + NUL */
    size_t schema_len;
} st_meta;

/* An empty manifest (generation 0, no files) for volumes x partitions. */
int st_manifest_init(st_manifest *m, uint32_t volumes, uint32_t partitions, st_err *err);
int st_manifest_copy(st_manifest *dst, const st_manifest *src, st_err *err);
void st_manifest_free(st_manifest *m);
st_mfile *st_manifest_at(const st_manifest *m, uint32_t vol, uint32_t part, st_kind kind);
/* Makes m record key ranges of a key of that sign ('u' or 'i'), every
 * partition's unknown until set; a no-op if it records them already. */
int st_manifest_keys(st_manifest *m, char sign, st_err *err);
/* A partition's key range: NULL when m records none. */
st_mkeys *st_manifest_keys_at(const st_manifest *m, uint32_t vol, uint32_t part);

/* Loads and verifies path (from an open fd when fd >= 0, else by name). */
int st_manifest_load(st_manifest *m, int fd, const char *path, st_err *err);
/* The manifest's bytes, mem_alloc'd (free with *n). */
int st_manifest_format(const st_manifest *m, char **buf, size_t *n, st_err *err);

/* Checks a name, partition key or label: 1..ST_TEXT_MAX printable bytes
 * (label may be empty), no spaces in a partition key. */
int st_meta_check_text(const char *what, const char *s, int allow_empty, int allow_space,
                       st_err *err);
int st_meta_format(const st_meta *meta, char **buf, size_t *n, st_err *err);
int st_meta_load(st_meta *meta, const char *path, st_err *err);
void st_meta_free(st_meta *meta);

#endif
