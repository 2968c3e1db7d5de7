/* lib_store: comb's handles for schemas, tagset files, file writers and
 * datastores, shared by the store natives and the query engine.
 *
 * Every handle that reads a schema holds a "schema" handle (VSchema), so the
 * field names and enum symbols exist as comb strings once per schema, not
 * once per row. */
#ifndef COMB_LIB_STORE_H
#define COMB_LIB_STORE_H

#include <stdatomic.h>

#include "store/datastore.h"
#include "store/load.h"
#include "store/fileload.h"
#include "store/schema.h"
#include "store/reading.h"
#include "store/tagfile.h"
#include "vm/vm.h"

typedef struct VSchema {
    st_schema *s;
    VStr **names;     /* [nfields]: field names */
    VStr ***syms;     /* [nfields]: enum fields' symbols, else NULL */
    VStr *tags_name;  /* "tags" */
    char *text;       /* st_schema_format's (readers check files' headers against it) */
    size_t text_len;
} VSchema;

/* Scratch for encoding one tagset: its row and tag rows, grown as needed.
 * Belongs to a handle (freed with vm_rowbuf_free), so a raise leaks nothing. */
typedef struct VRowBuf {
    unsigned char *row;
    size_t row_cap;
    unsigned char *tags;
    size_t tags_cap;
    uint32_t ntags;
} VRowBuf;

/* A snapshot's files (a store's, or a tagset file's one), listed once and
 * shared by the handles on that snapshot, the scans reading it and `for`
 * loops over it, each holding a reference: a load through a handle gives it
 * a new list while a scan of the old one goes on. A store's list holds the
 * snapshot too, whose pin keeps the files from being removed. References
 * are taken and dropped on the VM's thread only. */
typedef struct VFiles {
    uint32_t refs, n;
    char **paths;
    uint32_t *parts;    /* a store's: each path's partition (volume x partitions + p) */
    uint64_t *sizes;    /* a store's: each file's size as its commit recorded it */
    st_mkeys *keys;     /* a store's: each file's partition keys, as its manifest records */
    uint32_t partkey;   /* a store's: the partition key's field */
    _Atomic(st_reader *) *idle; /* a store's: each path's reader kept between scans */
    st_reading *sess;   /* a store's: whose budget its idle readers count in (a reference) */
    st_store *st;       /* a store's snapshot (a reference of its own) */
} VFiles;

VFiles *vm_files_ref(VFiles *f);
void vm_files_unref(VFiles *f);   /* NULL is allowed */

/* `for` over a source: its files, read in order by a reader of its own. */
typedef struct VIter {
    VFiles *files;   /* the list being read (a reference), NULL between loops */
    uint32_t fi;
    st_reader *r;
    const st_batch *b;
    uint32_t t;
    int64_t pos;     /* tagsets passed */
} VIter;

/* A tagset file ("tagfile" handle) or a datastore ("store" handle) opened
 * for reading; queries open readers of their own on its files. */
typedef struct VSource {
    VHandle *schema;
    char *path;        /* the file, or the store's directory */
    st_store *st;      /* a store's snapshot; NULL for a file */
    uint32_t partkey;  /* a store's partition-key field */
    st_file_info info; /* a file's facts */
    char *label;       /* a file's label (the cycle's), "" if none */
    VFiles *files;     /* what a scan or loop starting now reads */
    VIter it;
    VRowBuf rows;     /* the tagset `for` is at */
} VSource;

/* A reader of file i for a scan: the one an earlier scan of the same
 * snapshot left idle, else a new one. Any thread. */
st_reader *vm_files_reader(const VFiles *f, uint32_t i, const st_nbuf_opts *io,
                           const st_known_schema *known, st_err *err);
/* The scan is done with it: a store's is kept idle for the next scan (the
 * files of a snapshot never change), within its session's bound on the
 * descriptors so kept (store/reading.h); others are closed. Any thread. */
void vm_files_release(const VFiles *f, uint32_t i, st_reader *r);

/* The session ran a command, which may have changed stores in any way: the
 * next open of a store checks its MANIFEST. */
void vm_store_recheck(void);

/* open(path) of a directory (a datastore) or a tagset file: true and the
 * handle in *out; false for anything else, which open() reads as a file. */
bool vm_store_open(VM *vm, VStr *path, Value *out);

extern const VHandleType vm_schema_type, vm_tagfile_type, vm_store_type, vm_writer_type,
    vm_loader_type;

static inline VSchema *vschema(VHandle *h)
{
    return handle_data(h);
}

/* Parses schema text; NULL with the store's message ("3:5: ...") in err. */
VHandle *vm_schema_parse(VM *vm, const char *text, size_t len, int line, int col, st_err *err);
/* The schema handle of a schema, tagset file or store value, or NULL. */
VHandle *vm_schema_of(Value v);

/* The source of a tagfile or store handle, or NULL. */
VSource *vm_source_of(Value v);

/* ---- rows: comb values <-> fixed-width fields (vm/field.c) ------------------ */

/* The comb value of field f stored at p: int (integers, time), float,
 * bool, string (char[N] up to its first NUL, enum symbol). */
Value vm_field_value(VM *vm, const VSchema *vs, uint32_t f, const void *p);
/* The same, a string given as last[i] when it has the same bytes
 * (consecutive rows often name the same file), which it then becomes
 * (last NULL: none kept; the caller keeps them alive). */
Value vm_field_shared(VM *vm, const VSchema *vs, uint32_t f, const unsigned char *p,
                      VStr **last, uint32_t i);
/* Stores v into field f at dst, or raises "what: field 'x' ...". */
void vm_field_store(VM *vm, const VSchema *vs, uint32_t f, Value v, void *dst, const char *what);

void vm_rowbuf_free(VM *vm, VRowBuf *b);
/* Makes *p (of *cap bytes) hold at least need bytes; raises out of memory. */
void *vm_grow(VM *vm, unsigned char **p, size_t *cap, size_t need);
/* Encodes a tagset map {key fields, tagset fields, tags: [{tag fields}...]}
 * into b; missing non-key fields are zero, unknown ones an error. */
void vm_tagset_encode(VM *vm, const VSchema *vs, Value ts, VRowBuf *b, const char *what);
/* Encodes a flat map of tagset and tag fields into b: the row and one tag. */
void vm_flat_encode(VM *vm, const VSchema *vs, VMap *m, VRowBuf *b, const char *what);
/* What a row shows: the tagset fields row holds, packed in this order
 * (the schema's row layout holds them all), and the tag fields marked in
 * fields. */
typedef struct VRowShape {
    const uint32_t *row;
    uint32_t nrow;
    const bool *fields;     /* [nfields] */
    uint32_t ntag;          /* the tag fields marked in fields, counted (once a plan) */
    VStr *const *names;     /* row's names (NULL: its fields'), as a select calls them */
    VStr **last;            /* [nrow]: the last string of each, given again for the same
                             * bytes (NULL: none kept); the caller keeps them alive */
} VRowShape;
/* The map of a tagset row and its tag rows: the fields shape shows (NULL:
 * all, row in the schema's layout), and `tags`, an array of maps, unless
 * it shows no tag field.
 * flat: the row and one tag row as one map, as `| tags` shows a tag. */
Value vm_record_value(VM *vm, const VSchema *vs, const unsigned char *row,
                      const unsigned char *tags, uint32_t ntags, const VRowShape *shape, bool flat);

/* The values an integer field (u8..i64, bool, time) can hold. */
void vm_int_range(const st_field *f, int64_t *lo, int64_t *hi);
/* "u64", "char[16]", "enum"...: a field's type as the schema text writes it. */
const char *vm_field_type_name(const st_field *f, char *buf, size_t n);

/* ---- loading ------------------------------------------------------------ */

/* Loading rows into a file or store through the external sort
 * (store/fileload.h); the loader lives in a handle (*keep: root it) so a
 * raise in the middle frees it. */
typedef struct VLoader {
    st_fileload *l;     /* into a new tagset file */
    st_load *sl;      /* into a store (store/load.h) */
    struct VSource *target; /* that store's handle (the caller keeps it) */
    VHandle *schema;
    struct VRowBuf buf;
} VLoader;

/* target: a store handle, or a path (then schema is required). opts as
 * write()'s: block_size, codec, level, label, parcel, tmpdir. */
VLoader *vm_loader_new(VM *vm, Value target, VHandle *schema, VMap *opts, Value *keep);
/* Row n (for messages): a tagset map with `tags`, or a flat map of tagset
 * and tag fields (one tag). */
void vm_loader_add(VM *vm, VLoader *l, Value row, uint64_t n);
/* One record of raw rows (tag NULL: none), for scans that write: 0, or -1
 * with err filled. Never raises (scan threads call it). */
int vm_loader_add_raw(VLoader *l, const void *row, const void *tag, st_err *err);
/* Sorts, writes and commits; the number of records loaded. */
int64_t vm_loader_finish(VM *vm, VLoader *l);

/* ---- read_text's streams (vm/lib_text.c) ----------------------------------- */

/* read_text(..., {stream: true}) is a "text rows" value; each loop, load or
 * query over it reads the files anew through a cursor (vm_text_cursor_type,
 * iterable, closed with its loop). */
extern const VHandleType vm_text_rows_type, vm_text_cursor_type;
/* The time fields of rows from read_text (an array it made, its stream,
 * or a schema), by name; NULL when v is none of those or not known. */
VArray *vm_text_time_columns(VM *vm, Value v);
/* Whether a cursor can give its records as bytes of target's layout (the
 * same schema text); if so it does from now on, and every file it opens
 * must name all the key fields. */
bool vm_text_raw(VM *vm, VHandle *cursor, const VSchema *target);
/* The next record as a tagset row and a tag row (NULL when no column names
 * a tag field), valid until the next call; false at the end. */
bool vm_text_next_raw(VM *vm, VHandle *cursor, const unsigned char **row,
                      const unsigned char **tag);

#endif
