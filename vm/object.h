/* object: the heap object types of the VM (strings, arrays, maps, functions,
 * native handles, modules) and the functions that make and use them.
 * Every constructor allocates through vm_alloc, which raises "out of memory"
 * in the VM instead of returning NULL. Ownership: see vm/value.h. */
#ifndef COMB_OBJECT_H
#define COMB_OBJECT_H

#include <stdio.h>

#include "vm/value.h"

typedef struct VM VM;

/* ---- strings ---------------------------------------------------------- */

/* Immutable bytes with a length; may hold NUL. A string is NUL-terminated
 * (after len) when made by vm_str_new, vm_str_cstr, vm_str_alloc or
 * vm_sb_done, so names can be printed with %s; any other (a view, a later
 * prefix) may not be: print those with "%.*s".
 * An owner keeps its bytes inline in chars[], with spare capacity when it
 * was made by `+`; a view (flag STR_VIEW) is a longer prefix of an owner's
 * buffer, so that `s += t` in a loop appends in place: the owner's `used`
 * marks how far its bytes are written, and a string ending exactly there may
 * be extended without copying (the bytes of shorter strings never change). */
typedef struct VStr {
    Obj hdr;
    size_t len;
    const char *data;   /* the bytes: chars, or an owner's chars for a view */
    size_t cap;         /* owner: bytes room in chars[] */
    size_t used;        /* owner: bytes written in chars[] */
    char chars[];
} VStr;

#define STR_VIEW 1u
/* made by a concatenation: one more concatenation onto it is likely (a
 * chain `a + b + c + ...`), so its successor gets room to grow in place */
#define STR_CAT 2u
/* the bytes of a file mapped into memory (vm_str_mapped), not chars[]
 * (which hold the mapping's record): unmapped when the string is
 * collected; its used is 0, so nothing is ever appended in place */
#define STR_MAPPED 4u

/* The string whose chars[] hold s's bytes: s itself unless a view. */
static inline VStr *str_owner(VStr *s)
{
    if (s->hdr.flags & STR_VIEW)
        return (VStr *)(void *)((char *)(uintptr_t)s->data - offsetof(VStr, chars));
    return s;
}

/* A new string holding a copy of len bytes at p. */
VStr *vm_str_new(VM *vm, const char *p, size_t len);
VStr *vm_str_cstr(VM *vm, const char *s);
/* A new string of len bytes for the caller to fill through str_wbuf before
 * the string is used in any other way. */
VStr *vm_str_alloc(VM *vm, size_t len);
static inline char *str_wbuf(VStr *s) { return s->chars; }
/* A string of the len bytes of the file fd (named name) from offset at
 * (len > 0), mapped read-only, not copied; NULL if the file cannot be
 * mapped. The byte after them can be read (it is not part of the string).
 * If the file shrinks meanwhile, the bytes past its end read as zeros (a
 * SIGBUS handler maps them) and the VM's next poll raises
 * "cannot read 'NAME': changed size while being read" (vm_str_raise_cut). */
VStr *vm_str_mapped(VM *vm, int fd, uint64_t at, size_t len, const VStr *name);
/* Unmaps the bytes of a string made by vm_str_mapped. */
void vm_str_unmap(VM *vm, VStr *s);
/* Raises the error of a mapping found cut (POLL_CUT), if any is left. */
void vm_str_raise_cut(VM *vm);
/* a + b; appends in place when a ends at its owner's written end. */
VStr *vm_str_concat(VM *vm, VStr *a, VStr *b);
uint32_t str_hash(VStr *s);
bool str_equal(const VStr *a, const VStr *b);
int str_compare(const VStr *a, const VStr *b);
bool str_eq_cstr(const VStr *s, const char *c);

/* A growable byte buffer for building strings of unknown length. Its bytes
 * belong to the collector (a string object), so an error raised while
 * building leaks nothing. Keep the builder in a C local; root sb.s across a
 * vm_call. */
typedef struct VStrBuf {
    VStr *s;
} VStrBuf;
void vm_sb_init(VM *vm, VStrBuf *sb, size_t hint);
void vm_sb_add(VM *vm, VStrBuf *sb, const char *p, size_t n);
void vm_sb_addc(VM *vm, VStrBuf *sb, const char *c);
void vm_sb_printf(VM *vm, VStrBuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
VStr *vm_sb_done(VM *vm, VStrBuf *sb);

/* ---- arrays ----------------------------------------------------------- */

/* An array whose rows are still columns (a group by's result, until
 * read): ARRAY_COLUMNS in its flags, cols in place of items, len 0.
 * AS_ARRAY makes its rows (maps) on the first access of any kind, so
 * every reader sees a plain array; until then a row costs its cells. */
#define ARRAY_COLUMNS 1u

typedef struct VColumns {
    VM *vm;
    size_t n;           /* rows */
    uint32_t nf;        /* fields */
    Value *names;       /* [nf] the fields' names (strings) */
    Value *cells;       /* [n * nf] row by row */
    Value *built;       /* the rows as they are made (kept here: freed if that raises) */
} VColumns;

typedef struct VArray {
    Obj hdr;
    union {
        Value *items;
        VColumns *cols; /* ARRAY_COLUMNS */
    };
    size_t len, cap;
    struct VArray *times;   /* the names of its rows' time fields (read_text's rows), which
                             * tables show as times; NULL */
} VArray;

VArray *vm_array_new(VM *vm, size_t cap);
void vm_array_push(VM *vm, VArray *a, Value v);
void vm_array_reserve(VM *vm, VArray *a, size_t cap);
/* An array of n rows of nf fields named names[0 .. nf), held as columns:
 * the caller fills its cols->cells (row by row) before anything else
 * allocates. */
VArray *vm_array_columns(VM *vm, size_t n, uint32_t nf, const Value *names);
/* Its length, as columns too: counting the rows makes none of them. */
static inline size_t vm_array_len(Value v)
{
    const VArray *a = (const VArray *)v.as.o;
    return (a->hdr.flags & ARRAY_COLUMNS) ? a->cols->n : a->len;
}

/* ---- maps ------------------------------------------------------------- */

/* Maps keep insertion order: entries[] in the order keys were added (a
 * deleted entry keeps its place with an VT_UNDEF key until the next resize),
 * and index[] is an open-addressing table of slots {hash, entry number + 1}
 * (entry 0: empty), so that a probe compares hashes without touching the
 * entries. A dense map (flag MAP_DENSE) has had only the keys 0, 1, 2...
 * added in that order and nothing deleted: it keeps just the values, vals[k]
 * for key k, and no index, so a map used as an int-keyed table costs what
 * an array does; the first other key turns it into the general form.
 * Keys are any value but nil and NaN; a float key with an integral value is
 * stored as the int, so m[1] and m[1.0] are one entry. */
typedef struct MapEntry {
    Value key, val;
} MapEntry;

#define MAP_DENSE 1u
/* A keyed map made for a few keys (a row) holds its entries in its own
 * block, after the VMap, until it outgrows them: one allocation a row. Its
 * hdr.hash is the room it was made with (the block's size says it). */
#define MAP_INLINE 2u

typedef struct MapSlot {
    uint32_t hash, entry;
} MapSlot;

typedef struct VMap {
    Obj hdr;
    union {
        MapEntry *entries;
        Value *vals;    /* dense */
    };
    MapSlot *index;
    size_t count;       /* entries[] used, deleted ones included */
    size_t live;        /* entries with a key */
    size_t cap;         /* entries[] room */
    size_t mask;        /* index[] size - 1 */
} VMap;

VMap *vm_map_new(VM *vm, size_t cap);
/* A map for cap keys other than 0, 1, 2... (a row's field names): in the
 * general form at once, not made dense and then converted. */
VMap *vm_map_new_keyed(VM *vm, size_t cap);
/* A map of n keys, all different strings (not checked), set to vals in
 * order: a row made without looking its keys up. */
VMap *vm_map_row(VM *vm, const Value *keys, const Value *vals, size_t n);
/* The value at key, or false when absent (*out untouched). */
bool vm_map_get(VM *vm, VMap *m, Value key, Value *out);
Value *vm_map_ref(VMap *m, Value key);   /* no error: NULL if absent or bad key */
void vm_map_set(VM *vm, VMap *m, Value key, Value val);
bool vm_map_del(VM *vm, VMap *m, Value key);
/* Iteration: *pos starts at 0; returns false at the end. */
bool vm_map_next(VMap *m, size_t *pos, Value *key, Value *val);

/* ---- functions -------------------------------------------------------- */

typedef struct VmPos {
    uint32_t line, col;
} VmPos;

struct VModule;

/* A compiled function: code, constants, nested functions, positions. */
typedef struct VProto {
    Obj hdr;
    uint32_t *code;
    VmPos *pos;         /* source position of each instruction, or NULL: */
    uint64_t posat;     /* then at this offset of its module's posfd */
    size_t ncode;
    Value *k;
    size_t nk;
    struct VProto **protos;
    size_t nprotos;
    uint8_t *upv_local; /* upvalue i captures the enclosing function's */
    uint8_t *upv_index; /* register (upv_local) or upvalue upv_index[i] */
    uint32_t line, col;
    uint8_t nparams, maxregs, nupvals;
    VStr *name;         /* NULL for an anonymous fn; "<main>" for a module's main */
    struct VModule *module;
    struct VArray *source;  /* [first line, text] it was compiled from (vm/place.c), or NULL */
} VProto;

typedef struct VUpval {
    Obj hdr;
    Value *v;           /* the stack slot while open; &closed once closed */
    Value closed;
    struct VUpval *next_open;
} VUpval;

typedef struct VFunc {
    Obj hdr;
    VProto *p;
    VUpval *up[];
} VFunc;

VProto *vm_proto_new(VM *vm, struct VModule *mod);
VFunc *vm_func_new(VM *vm, VProto *p);

/* ---- natives and handles ---------------------------------------------- */

struct VmNativeDef;

typedef struct VNative {
    Obj hdr;
    const struct VmNativeDef *def;
} VNative;

/* What kind of thing a native handle is; one static descriptor per kind. */
typedef struct VHandleType {
    const char *name;                       /* what type() returns */
    void (*free)(VM *vm, void *data);       /* release what data holds; may be NULL */
    void (*mark)(VM *vm, void *data);       /* vm_mark the values it holds; may be NULL */
    /* `for a, b in handle`: produce the next element into *a (and *b for a
     * second loop variable), return false at the end; *cursor is an int that
     * starts at 0 for each loop. NULL: the handle is not iterable. */
    bool (*next)(VM *vm, void *data, int64_t *cursor, Value *a, Value *b);
    /* print(handle) and str(handle) append its text; NULL: "<name>". */
    void (*show)(VM *vm, void *data, VStrBuf *sb);
    /* `for` over the handle iterates what this returns instead (a fresh
     * cursor with next, so loops over one value do not share a position);
     * NULL: next is called on the handle itself. */
    Value (*iter)(VM *vm, Value self);
    /* A cursor holding resources (open files) releases them now: its loop
     * ended, however it ended (vm_iter_push). May be NULL. */
    void (*close)(VM *vm, void *data);
} VHandleType;

typedef struct VHandle {
    Obj hdr;
    const VHandleType *type;
    size_t size;
    _Alignas(16) unsigned char data[];
} VHandle;

/* A new handle with size zeroed bytes of payload, returned as data(). */
VHandle *vm_handle_new(VM *vm, const VHandleType *type, size_t size);
static inline void *handle_data(VHandle *h) { return h->data; }

/* ---- modules ---------------------------------------------------------- */

enum { MOD_COMPILED, MOD_RUNNING, MOD_LOADED };

/* A compiled file: its top-level variables live in vars[], found by name
 * through symbols (name -> slot). Exported ones (top-level fn and let) are
 * what `mod.name` reads from another module. */
typedef struct VModule {
    Obj hdr;
    VStr *name, *path;
    VMap *symbols;
    Value *vars;
    uint8_t *exported;
    size_t nvars, cap;
    int state;
    VProto *main;       /* until it has run */
    VArray *source;     /* the last text compiled into it (vm/place.c), or NULL */
    int posfd;          /* the cache file its functions were loaded from, or -1 */
} VModule;

VModule *vm_module_new(VM *vm, const char *name, const char *path);
/* The slot of a top-level name, added (undefined) if new. */
size_t vm_module_slot(VM *vm, VModule *m, VStr *name, bool exported);

/* ---- the rest --------------------------------------------------------- */

/* A key as maps store it: an integral float becomes the int (1.0 is the
 * key 1); false for keys a map refuses (nil, NaN), left as they are. */
bool vm_map_norm_key(Value *k);
/* Hash of a map key (after normalisation); equal keys hash equal. */
uint32_t vm_hash_value(Value v);
void vm_map_reserve(VM *vm, VMap *m, size_t cap);
void vm_map_traverse(VM *vm, VMap *m);
void vm_map_release(VM *vm, VMap *m);

/* For the collector: what an object keeps alive, its size, releasing it. */
void vm_obj_traverse(VM *vm, Obj *o);
void vm_obj_release(VM *vm, Obj *o);

#endif
