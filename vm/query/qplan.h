/* qplan: a query bound to its source: typed expressions, the scan (what
 * runs over column vectors, block by block, in parallel) and the row steps
 * (what runs over comb values afterwards). Internal to the query engine
 * (vm/query/plan.c and bind.c bind, kernel.c evaluates, scan.c drives,
 * rowsteps.c runs the row steps; run.h is what a scan's files share).
 *
 * Values: a typed expression has a QType; its vector form (KVec) holds
 * int64 for ints, bools and times, doubles for floats, and (pointer,
 * length) pairs for strings (char[N] fields, enum symbols, constants), with
 * an optional validity byte per value (first/last of no tag is nil).
 * Keys: a value encodes into a fixed number of bytes (qx_keywidth) whose
 * memcmp order is the value order, nil first: group keys, sort keys and
 * distinct counts use that form. */
#ifndef COMB_QUERY_QPLAN_H
#define COMB_QUERY_QPLAN_H

#include <pthread.h>
#include <stdint.h>

#include "vm/lib_store.h"
#include "vm/query/query.h"

typedef enum { QT_NIL, QT_BOOL, QT_INT, QT_FLOAT, QT_STR, QT_ANY } QType;

/* Internal operators beyond QOP_: bound forms. */
enum {
    QX_FIELD = QOP__COUNT, /* a schema field (field, tag) */
    QX_MAPGET,             /* the row map's key `name` (row steps) */
    QX_QUANT,              /* any/all/count/first/last over tags: fn, a = PRED (or NULL), field */
    QX_AGG,                /* an aggregate: fn, a = argument (or NULL for count()) */
    QX_FUNC,               /* between/day/hour: fn, a, b, c */
    QX_SET,                /* a in set: a, set */
    QX_CALL,               /* a comb function of the row (a bool as a condition): call, a = first QX_ARG */
    QX_ARG,                /* an argument of a QX_CALL: a = its value, b = the next QX_ARG */
};

typedef struct QSet QSet;

/* max_by, min_by: quantifiers that pick the tag with the greatest or least
 * value of an expression (first and last pick by a predicate). */
static inline bool picks_by(int fn)
{
    return fn == QF_max_by || fn == QF_min_by;
}

/* A number field compared with a constant, as one test of the column's
 * stored values that gives comb's exact answer however their types differ
 * (an int field and a float, a float field and a big int, a u64 above the
 * ints, NaN): built by qx_num_test, read by the kernel and the zone-map
 * ranges. Bounds are inclusive, in the column's terms: int64 for the ints,
 * uint64 for u64, double for the floats. */
typedef enum { QN_UNSET, QN_ALL, QN_NONE, QN_LE, QN_GE, QN_IN, QN_OUT } QNumKind;
typedef union QNum {
    int64_t i;
    uint64_t u;
    double f;
} QNum;
typedef struct QNumTest {
    QNumKind kind;      /* LE: v <= hi; GE: v >= lo; IN: lo <= v <= hi; OUT: not IN */
    QNum lo, hi;
} QNumTest;

typedef struct QExpr {
    int op;
    QType type;
    int line, col;
    struct QExpr *a, *b, *c;
    int fn;             /* QF_ for QUANT, AGG, FUNC */
    int field;          /* QX_FIELD (and QUANT's .field): schema field index, else -1 */
    bool tag;           /* a value per tag (a tag field, or uses one) */
    bool is_enum;       /* a string that is an enum field's symbol */
    bool big;           /* QT_INT that may hold values above the ints: a u64 field, or
                         * computed from one; those values are floats (KVec.isf) */
    Value k;            /* CONST: the value; MATCH: the regex; SET: the set's source */
    VStr *name;         /* MAPGET: the key; FIELD: the field name */
    /* prepared for the kernels */
    int64_t ki;
    double kf;
    const char *ks;
    uint32_t kn;        /* bytes of ks */
    void *re;           /* pcre2_code * of a MATCH */
    QSet *set;          /* SET */
    void *call;         /* CALL: the function (call.c's) */
    uint8_t *mask;      /* enum field compared with constants: 1 bit per symbol */
    QNumTest num;       /* number field compared with a number constant */
    uint32_t strw;      /* QT_STR: the longest value (char[N]: N; symbols: the longest) */
    int slot;           /* the kernel scratch vector this node evaluates into */
    int agg;            /* QX_AGG: index of its state in a group (quantile's q: kf) */
} QExpr;

/* A hash set of values for `in`: ints (also floats with integral values),
 * floats by bits, strings. Read-only once built: threads share it. */
struct QSet {
    uint64_t *hashes;   /* 0: empty slot */
    uint32_t *idx;      /* entry of each slot */
    size_t mask;
    int64_t *ints;
    double *floats;
    char **strs;
    uint32_t *lens;
    size_t n, cap;
    QType type;
    bool (*match)(void *mdata, const char *s, size_t n);   /* a matcher instead: strings only */
    QSet *big;          /* an int set for a big expression: its floats no int equals */
    void *mdata;
};

/* Whether the set holds the value p[0 .. n) (8 bytes for ints and floats). */
bool qset_has(const QSet *s, const void *p, size_t n);

/* Consumers of the scan. */
typedef enum {
    QC_COUNT,    /* how many rows */
    QC_COLLECT,  /* the rows, perhaps at most limit, perhaps ordered by sort keys */
    QC_GROUP,    /* aggregates per group key */
    QC_STAT,     /* tagstat */
    QC_WRITE,    /* to a loader */
} QConsumer;

typedef struct QSortKey {
    QExpr *e;
    bool desc;
} QSortKey;

typedef struct QAggDef {
    VStr *name;
    QExpr *e;           /* the output expression (aggregates inside) */
} QAggDef;

/* The scan: over a store's or file's tagsets, where, then tags (+ where
 * over them), then one consumer. */
typedef struct QScan {
    VSource *src;
    const VSchema *vs;
    QExpr *where;       /* over tagsets (NULL: all); conjuncts that call comb last */
    bool tags;          /* rows are tags */
    QExpr *tag_where;   /* over tags, after `tags` */
    QConsumer consumer;
    uint64_t limit;     /* COLLECT: at most this many rows (UINT64_MAX: all) */
    QSortKey *sort;     /* COLLECT: ordered by these */
    int nsort;
    QExpr **keys;       /* GROUP */
    VStr **key_names;
    int nkeys;
    QAggDef *aggs;
    int naggs;
    QExpr **agg_list;   /* every QX_AGG inside aggs, by index */
    int nagg_list;
    bool *want;         /* columns to decode [ncols] */
    bool *out_fields;   /* fields the collected rows show [nfields] */
    bool *defer;        /* COLLECT: of want, the key and tagset columns only the collected
                         * rows show, gathered at the rows kept from blocks that store them
                         * by RLE or FOR (st_reader_defer); NULL: none [ncols] */
    uint32_t *out_row;  /* the tagset fields among them, in schema order: all a
                         * collected row holds of the tagset, packed (out_layout) */
    uint32_t nout_row;
    uint32_t out_roww;  /* bytes of that packed row */
    uint32_t out_ntag;  /* the tag fields among out_fields, counted */
    VStr **out_names;   /* a select the collector makes (by_scan): out_row in its order,
                         * with its names; else NULL */
    st_range *ranges;   /* zone-map ranges from the where's conjuncts */
    unsigned char *range_bytes;
    uint32_t nranges;
    uint32_t *parts;    /* partitions to read (global numbers), after elimination */
    uint32_t nparts;    /* UINT32_MAX: all */
    bool pk_bounded;    /* the where bounds the partition key to [pk_lo, pk_hi] (st_field_order
                         * images): the manifest's key ranges skip the partitions outside */
    uint64_t pk_lo, pk_hi;
    bool footer_count;  /* COUNT with no filter: the footers know */
    bool key_narrows;   /* the where's exact tests of the first key field (an int) are
                         * ranges qprune_rows narrows each block's rows to: of those rows
                         * only key_rest, the rest of the where, is tested (NULL: none) */
    QExpr *key_rest;
    QExpr *index_where; /* the where's conjuncts the bitmap indexes answer (prune.c) */
    const char *index_why; /* explain: why the scan uses them or not */
    bool *scan_field;   /* [nfields]: indexed, but the column costs less to read */
    int tag_order;      /* a tag field with an order index that the tag where bounds to
                         * [tag_order_lo, tag_order_hi] (st_field_order images); -1: none */
    uint64_t tag_order_lo, tag_order_hi;
    QExpr *tag_rest;    /* the tag where left to test of the tags the order index keeps */
    bool proj;          /* the scan reads the files' projections (store/proj.h): it reads
                         * tag fields only and bounds the projection field (prune.c) */
    const char *proj_why; /* explain: why not, when the schema declares one */
    uint64_t proj_lo, proj_hi; /* the projection field's bound (st_field_order images) */
    QExpr *proj_rest;   /* the tag where left to test of the rows in that bound */
    int nslots;         /* kernel scratch vectors per thread */
    bool vm_calls;      /* the workers would call comb (where, keys, aggregates'
                         * arguments): one thread, the VM's */
    uint32_t keyw;      /* bytes of a group or sort key */
    uint32_t *stat_cols;    /* STAT: the columns it computes, in order (nfields: the tags
                             * per tagset) */
    VStr **stat_names;      /* and the names it shows them by */
    uint32_t nstat;
    Value write_target;
    VMap *write_opts;
    struct KCtx *idle_k;    /* kernel scratch the last run left, for the next */
    int nidle_k;
} QScan;

/* A row step (after the scan, or all of an array source's pipeline). */
typedef struct QStep {
    int verb;
    int line, col;
    QExpr **e;          /* where/take: e[0]; select: items; sort: keys; group: keys then aggs;
                         * join: the other rows, then the keys' names */
    VStr **names;
    bool *desc;
    int n, nkeys;
    QExpr **agg_list;
    int nagg_list;
    Value write_target;
    VMap *write_opts;
    bool by_scan;       /* select: the scan's collected rows are its rows (out_layout) */
} QStep;

#define QP_MODVARS 8
/* The threads a scan runs at most, and the kernel scratch kept for them. */
#define QS_MAX_THREADS 16

typedef struct QPlan {
    bool typed;         /* the source is a store or file: scan first */
    QScan scan;
    QStep *steps;
    int nsteps;
    Value array;        /* an array source */
    /* Where allocations live: freed with the plan. */
    void **blocks;
    size_t nblocks, capblocks;
    VArray *keep;       /* values the plan refers to */
    /* The module variables the binding read, and their values then: a
     * binding kept for the next run is good while they are unchanged. */
    uint32_t modvar[QP_MODVARS];
    Value modval[QP_MODVARS];
    int nmodvars;       /* -1: too many, or one not a plain value */
} QPlan;

/* Raises a message at e's position in the program. */
_Noreturn void qx_error(VM *vm, const QExpr *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Each binary operator's symbol (vm/query/query.c). */
extern const char *const qx_op_sym[QOP__COUNT];

/* Whether a three-way comparison c (-1, 0, 1, or 2 for unordered: NaN)
 * satisfies op (QOP_EQ .. QOP_GE); unordered satisfies only !=, as in comb. */
static inline bool qx_holds(int op, int c)
{
    switch (op) {
    case QOP_EQ: return c == 0;
    case QOP_NE: return c != 0;
    case QOP_LT: return c < 0;
    case QOP_LE: return c <= 0;
    case QOP_GT: return c == 1;
    default: return c == 0 || c == 1;
    }
}

/* ---- vm/query/qnum.c: a number field against a constant, exactly ------------- */

/* Sets e->num for e (a comparison: field e->a of type f, constant e->b). */
void qx_num_test(QExpr *e, const st_field *f);

/* ---- vm/query/plan.c: a pipeline bound into its plan -------------------- */

/* Memory owned by the plan (zeroed); raises out of memory. */
void *qp_alloc(VM *vm, QPlan *p, size_t size);
void qp_free(VM *vm, QPlan *p);
/* v (an object) lives as long as the plan. */
void qp_keep(VM *vm, QPlan *p, Value v);

/* A query handle's data (vm_query_type): a pipeline: its source and stages
 * (each [stage, captures, module], so a query extended elsewhere keeps
 * each part's own values), bound. */
typedef struct VQuery {
    Value src;
    VArray *stages;     /* per stage: [its plan, the captures, the module, module variables read];
                         * the first nstages are this query's (a query built on it may share
                         * the array and append its own) */
    size_t nstages;
    bool bound;         /* plan made (a query built on a query binds when it runs) */
    QPlan plan;
} VQuery;

/* Binds q's stages into q->plan. */
void qp_bind(VM *vm, VQuery *q);
/* Marks in sc->want the columns its wheres, sort, keys and aggregates read. */
void qp_scan_uses(QScan *sc);
/* The query qv, bound if it was not (vm/query/query.c). */
VQuery *qp_ready(VM *vm, Value qv);
/* How many stages qp_bind has bound in this process: a test's measure. */
uint64_t qp_stages_bound(void);
/* vm_query_time_columns of a plan (vm/query/query.c). */
VArray *qp_time_columns(VM *vm, const QPlan *p);

/* ---- vm/query/textout.c: write(path) to a text file ---- */

/* The text format the target asks for by its name's extension (a
 * VM_TEXT_ value), or 0: a tagset file or store. */
int qtext_format(Value target);
/* Writes rows (an array, or a cursor) into the text file named by the
 * step's target through vm_text_writer; the rows written. */
Value qtext_write(VM *vm, const QPlan *p, const QStep *s, Value rows);

/* Stage i's plan array, and the last stage's verb (-1: none). */
Value qp_stage(VQuery *q, int i);
int qp_last_verb(VQuery *q);

/* ---- vm/query/kernel.c: expressions over column vectors ----------------------- */

#define KSELBUFS 3

typedef struct KVec {
    int64_t *i;
    double *f;
    const char **sp;
    uint32_t *sl;
    uint8_t *valid;     /* NULL: all valid */
    uint8_t *isf;       /* a big expression's: 1 where value j is the float f[j] (a u64
                         * above 2^63-1, as comb has it, or arithmetic on one), else the
                         * int i[j]; read only when floats */
    bool floats;        /* some value of the batch is a float (isf) */
} KVec;

/* A worker's scratch for one batch at a time. Rows of the current level:
 * tagset indices (tag = false) or tag indices. */
typedef struct KCtx {
    const QScan *scan;
    const st_batch *b;
    const st_schema *s;
    uint32_t *owner;        /* tag index -> its tagset, for the batch (if need_owner) */
    bool need_owner;        /* tag rows, or tagset fields read for tags */
    size_t owner_cap;
    KVec *vecs;             /* [nslots] */
    size_t vec_cap;         /* values each vector holds */
    uint32_t *selbuf[KSELBUFS]; /* [0]: tag starts; [1], [2]: the scan's selections */
    size_t sel_cap;
    void *md;               /* pcre2 match data of this thread */
    char err[256];          /* set by a kernel on overflow, division by zero */
} KCtx;

typedef struct KSel {
    uint32_t *idx;
    uint32_t n;
} KSel;

int k_ctx_init(KCtx *k, const QScan *scan);
void k_ctx_free(KCtx *k);
/* A run's scratch kept with its scan for the next run (a query that runs
 * again need not allocate its vectors again), and taken back: k_ctx_take
 * is k_ctx_init from a kept one when there is one. k_ctx_drop frees what
 * the scan keeps, with its plan. */
void k_ctx_keep(QScan *scan, KCtx *k);
int k_ctx_take(KCtx *k, QScan *scan);
void k_ctx_drop(QScan *scan);
/* Prepares for a batch: sizes the scratch, builds the tag owners. 0 or -1. */
int k_batch(KCtx *k, const st_batch *b);
/* A u64 as comb reads it, in u64 terms: itself up to 2^63-1, above that
 * its nearest float's value, so that the u64s one float stands for are one
 * group key or distinct value, as in comb; 2^64 (the float of the top
 * u64s) as UINT64_MAX, which no float is. In order. */
static inline uint64_t qx_u64_seen(uint64_t u)
{
    if (u <= INT64_MAX)
        return u;
    double d = (double)u;
    return d >= 0x1p64 ? UINT64_MAX : (uint64_t)d;
}
/* Whether value j of v is the float f[j] rather than the int i[j]. */
static inline bool kvec_float(const KVec *v, uint32_t j)
{
    return v->floats && v->isf[j];
}
/* Narrows in (rows of level tag) to the rows where e holds, into out
 * (out->idx must hold in->n). */
void k_filter(KCtx *k, const QExpr *e, bool tag, const KSel *in, KSel *out);
/* e's values for the rows of in, into k->vecs[e->slot]. */
const KVec *k_eval(KCtx *k, const QExpr *e, bool tag, const KSel *in);
/* Encodes value j of v (type t, width strw) as a key of qx_keywidth bytes;
 * desc inverts the order. A big expression's key orders its ints and floats
 * as numbers. */
void k_key(const QExpr *e, const KVec *v, uint32_t j, bool desc, unsigned char *out);
/* k_key (ascending) of rows 0 .. n of v, each stride bytes after the last. */
void k_keys(const QExpr *e, const KVec *v, uint32_t n, unsigned char *out, size_t stride);
uint32_t qx_keywidth(const QExpr *e);
/* Whether e is a u64 field's own values (no arithmetic on them): a key of
 * one word, unsigned (qx_u64_seen), as an int's. */
bool qx_u64_key(const QExpr *e);
/* A double as a u64 in the order of keys and sort (-0 as 0, every NaN as
 * one, after +inf), and back. */
uint64_t qx_float_bits(double d);
double qx_bits_float(uint64_t u);
/* The comb value of an encoded key. */
Value qx_key_value(VM *vm, const QExpr *e, const unsigned char *key);

/* ---- vm/query/scan.c: the scan driver ------------------------------------------ */

/* Runs the scan and returns its result: a number (COUNT, WRITE), an array
 * of maps (COLLECT, GROUP, STAT). Interrupts and kernel errors raise. */
Value scan_run(VM *vm, QPlan *p);
/* A COLLECT scan's rows one at a time, for `for` and other readers that
 * need not hold them all: without a sort, read a block at a time on the
 * VM's thread as they are asked for; with one, after the whole scan (in
 * parallel) into the sort, in memory or past COMB_SORT_MB external. A
 * handle that scan_close (or its collection) releases: readers closed,
 * temporary files removed. */
Value scan_open(VM *vm, QPlan *p);
/* The next row into *row, or false at the end. Raises as scan_run does. */
bool scan_next(VM *vm, Value cursor, Value *row);
void scan_close(VM *vm, Value cursor);

/* ---- vm/query/explain.c ---------------------------------------------------- */

/* explain: what the scan would read, as a map. */
Value qexplain_scan(VM *vm, QPlan *p);
/* explain over an array source: its length and the verbs that follow. */
Value qexplain_array(VM *vm, const QPlan *p);

/* ---- vm/query/cursor.c: a query's rows one at a time ---------------------- */

/* Whether the scan's rows can go a row at a time through steps [0, to). */
bool qcursor_streams(const QPlan *p, int to);
/* A cursor (a handle `for` reads) over the rows of the query qv's steps
 * [0, to), lazy when they stream; and its next row. */
Value qcursor_open(VM *vm, Value qv, int to);
bool qcursor_next(VM *vm, Value cursor, Value *row);

/* ---- vm/query/keep.c: bound queries kept for their next run --------------- */

/* Whether `src | plan` with these captures may be kept: a count or stat of
 * a store or file, captures all plain values. */
bool qkeep_able(VArray *plan, int ncaps, const Value *caps, Value src);
/* The query kept for plan, if it was bound from the same things; else nil. */
Value qkeep_find(VM *vm, VArray *plan, int ncaps, const Value *caps, Value mod, Value src);
void qkeep_put(VM *vm, VArray *plan, Value q);
/* Lets go of the kept bindings that read a snapshot of the store in dir,
 * and so of their pins (vm/query/reading.c: a newer one is being opened). */
void qkeep_forget(VM *vm, const char *dir);

/* ---- vm/query/call.c: comb calls from the kernels and row steps ----------- */

/* Calls a QX_CALL's comb function with its arguments' values at j (args[i]
 * the vector of its i-th QX_ARG): the bool it returns (the kernels ask only
 * calls that are conditions). On the VM's thread only (QScan.vm_calls); its
 * errors raise. */
#define QX_MAX_ARGS 8
bool qx_call(const QExpr *e, const KVec *const *args, uint32_t j);
/* The same with the arguments' values (row steps): what it returns, which
 * must be a bool where the call is a condition (type QT_BOOL). */
Value qx_call_values(const QExpr *e, int argc, Value *argv);
/* A call of fn for the expression at (what names it in a message), in the
 * plan: a QX_CALL's call, or a matcher's QSet.mdata. */
void *qx_call_new(VM *vm, QPlan *p, Value fn, const QExpr *at, const char *what);
/* A matcher's QSet.match: fn(s[0 .. n)). */
bool qx_call_str(void *call, const char *s, size_t n);

/* ---- vm/query/rowsteps.c: row steps over comb values ------------------------------- */

/* Runs steps [from, nsteps) over rows (an array of maps) or a scan result. */
Value rows_run(VM *vm, QPlan *p, int from, Value rows);
/* The first of steps [from, nsteps) that needs all its rows at once: not
 * a where, select or take, which go a row at a time (rows_step). */
int rows_streams_to(const QPlan *p, int from);
/* *row through steps [from, to) (where, select, take; taken[i] counts the
 * rows step i's take let through): 0 when a step drops it, 1 when it
 * passes (*row the result), 2 when it passes and a take has had all its
 * rows, -1 when a take had them already (no later row can pass either).
 * *row must be rooted. */
int rows_step(VM *vm, const QPlan *p, int from, int to, uint64_t *taken, Value *row);
/* A write step's: rows (an array, or a cursor handle read to its end)
 * to its target; how many rows it read (as the scan's write counts). */
Value rows_write(VM *vm, QPlan *p, const QStep *s, Value rows);
/* e's value for a row (map) with outer the enclosing row (a tagset around a
 * tag), for row steps. */
Value rows_eval(VM *vm, const QExpr *e, Value row, Value outer);
/* e's value where its aggregates (QX_AGG) have the values aggs[e->agg]. */
Value rows_eval_aggs(VM *vm, const QExpr *e, const Value *aggs);
/* The order of row steps: nil, bools, numbers, strings, others; <0, 0, >0. */
int rows_compare(Value a, Value b);

#endif
