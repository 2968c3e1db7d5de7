/* scan: runs a query's scan over a store's partitions (or a tagset file):
 * partition elimination, zone-map ranges, the columns it needs, a block at
 * a time through the kernels, partitions in parallel on worker threads
 * that never touch the VM; then the consumers' results are merged and
 * turned into comb values on the calling thread. */
#include "config.h"
#include "vm/query/qplan.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "store/fileload.h"
#include "store/mem.h"
#include "vm/natives.h"
#include "vm/progress.h"

#define HLL_BITS 12
#define HLL_REGS (1u << HLL_BITS)

/* ---- growable byte buffers (C memory: workers use them) ---------------- */

typedef struct Buf {
    unsigned char *p;
    size_t len, cap;
} Buf;

static unsigned char *buf_room(Buf *b, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *p = mem_realloc(b->p, b->cap, cap);
        if (!p)
            return NULL;
        b->p = p;
        b->cap = cap;
    }
    unsigned char *r = b->p + b->len;
    b->len += n;
    return r;
}

static void buf_free(Buf *b)
{
    mem_free(b->p, b->cap);
    memset(b, 0, sizeof *b);
}

/* ---- the files to read ------------------------------------------------- */

typedef struct Part {
    const char *path;
    uint32_t fi;        /* the source's file number */
    uint32_t gpart;     /* global partition number (0 for a file) */
} Part;

/* The source's files to read: its list as the scan began (a reference:
 * a load through the source during the scan gives the source a new one). */
typedef struct PartList {
    VFiles *files;
    Part *p;
    uint32_t n, total;  /* after elimination, before */
} PartList;

static bool part_wanted(const QScan *sc, uint32_t g)
{
    if (sc->nparts == UINT32_MAX)
        return true;
    for (uint32_t i = 0; i < sc->nparts; i++)
        if (sc->parts[i] == g)
            return true;
    return false;
}

static void list_parts(VM *vm, const QScan *sc, PartList *pl)
{
    VFiles *f = sc->src->files;
    pl->p = vm_alloc(vm, (f->n + 1) * sizeof *pl->p);
    pl->files = vm_files_ref(f);
    pl->n = 0;
    pl->total = f->n;
    for (uint32_t i = 0; i < f->n; i++) {
        uint32_t g = f->parts ? f->parts[i] : 0;
        if (part_wanted(sc, g))
            pl->p[pl->n++] = (Part){f->paths[i], i, g};
    }
}

static void free_parts(VM *vm, PartList *pl)
{
    if (pl->files) {
        vm_files_unref(pl->files);
        vm_free_mem(vm, pl->p, (pl->total + 1) * sizeof *pl->p);
        pl->files = NULL;
    }
}

/* ---- ranges and partitions from the predicate -------------------------- */

/* v (a string, a bool, an int of a set) in field f's storage form (clamped
 * to its range): false if no value of the field can equal it. A number
 * field compared with a number has its test instead (QExpr.num). */
static bool encode_const(const st_field *f, const QExpr *k, unsigned char *out, bool *exact)
{
    *exact = true;
    memset(out, 0, f->width);
    switch (f->type) {
    case ST_F32: case ST_F64:
        return false;
    case ST_CHAR:
        if (k->type != QT_STR || k->kn > f->width || memchr(k->ks, 0, k->kn))
            return false;
        memcpy(out, k->ks, k->kn);
        return true;
    case ST_ENUM: {
        int s = k->type == QT_STR ? st_field_enum_find(f, k->ks, k->kn) : -1;
        out[0] = (unsigned char)(s < 0 ? 0 : s);
        return s >= 0;
    }
    default: {
        if (k->type != QT_INT && k->type != QT_BOOL)
            return false;
        int64_t lo, hi, x = k->ki;
        vm_int_range(f, &lo, &hi);
        *exact = x >= lo && x <= hi;
        x = x < lo ? lo : x > hi ? hi : x;
        memcpy(out, &x, f->width);
        return true;
    }
    }
}

typedef struct Ranges {
    st_range *r;
    unsigned char *bytes;   /* bounds, ST_MAX_CHAR each */
    uint32_t n, cap;
} Ranges;

static void add_bound(VM *vm, QPlan *p, Ranges *rs, uint32_t col, const unsigned char *lo,
                      const unsigned char *hi, uint32_t width)
{
    if (rs->n == rs->cap) {
        uint32_t cap = rs->cap ? 2 * rs->cap : 8;
        st_range *r = qp_alloc(vm, p, cap * sizeof *r);
        if (rs->n)
            memcpy(r, rs->r, rs->n * sizeof *r);
        rs->r = r;
        rs->cap = cap;
    }
    unsigned char *l = lo ? qp_alloc(vm, p, width) : NULL, *h = hi ? qp_alloc(vm, p, width) : NULL;
    if (l)
        memcpy(l, lo, width);
    if (h)
        memcpy(h, hi, width);
    rs->r[rs->n++] = (st_range){col, l, h};
}

static void ranges_of(VM *vm, QPlan *p, const QExpr *e, Ranges *rs);

/* A number test's bound v in field f's storage form: a narrower int is
 * the low bytes, and a f32 the nearest float (no f32 lies between a bound
 * and its nearest float, so the range keeps what it should). */
static void num_bytes(const st_field *f, QNum v, unsigned char *out)
{
    if (f->type == ST_F32) {
        float x = (float)v.f;
        memcpy(out, &x, 4);
    } else {
        memcpy(out, &v, f->width);
    }
}

/* The run of values a number test keeps as a range: none for all but a
 * run (!=), an empty one (lo above hi) for none. */
static void range_of_num(VM *vm, QPlan *p, const st_field *f, int col, const QNumTest *t,
                         Ranges *rs)
{
    unsigned char lo[8], hi[8];
    if (t->kind == QN_ALL || t->kind == QN_OUT)
        return;
    num_bytes(f, t->lo, lo);
    num_bytes(f, t->hi, hi);
    add_bound(vm, p, rs, (uint32_t)col, t->kind == QN_LE ? NULL : lo, t->kind == QN_GE ? NULL : hi,
              f->width);
}

/* A comparison of a field with a constant gives a range of that column. */
static void range_of_compare(VM *vm, QPlan *p, const QExpr *e, Ranges *rs)
{
    const st_schema *s = p->scan.vs->s;
    if (e->a->op != QX_FIELD || e->b->op != QOP_CONST || e->op == QOP_NE || e->mask)
        return;
    const st_field *f = &s->fields[e->a->field];
    unsigned char v[ST_MAX_CHAR];
    bool exact;
    if (e->num.kind) {
        range_of_num(vm, p, f, e->a->field, &e->num, rs);
        return;
    }
    if (f->type == ST_CHAR && e->op != QOP_EQ)
        return;     /* zone maps hold 8-byte prefixes; equality is enough */
    if (!encode_const(f, e->b, v, &exact)) {
        if (e->op == QOP_EQ) {  /* nothing can match: an empty range */
            unsigned char one = 1, zero = 0;
            if (f->width == 1)
                add_bound(vm, p, rs, (uint32_t)e->a->field, &one, &zero, 1);
        }
        return;
    }
    bool lo = e->op == QOP_EQ || e->op == QOP_GT || e->op == QOP_GE;
    bool hi = e->op == QOP_EQ || e->op == QOP_LT || e->op == QOP_LE;
    add_bound(vm, p, rs, (uint32_t)e->a->field, lo ? v : NULL, hi ? v : NULL, f->width);
}

static void ranges_of(VM *vm, QPlan *p, const QExpr *e, Ranges *rs)
{
    if (!e)
        return;
    switch (e->op) {
    case QOP_AND:
        ranges_of(vm, p, e->a, rs);
        ranges_of(vm, p, e->b, rs);
        return;
    case QOP_EQ: case QOP_LT: case QOP_LE: case QOP_GT: case QOP_GE:
        range_of_compare(vm, p, e, rs);
        return;
    case QX_QUANT:
        /* any(tags, P): some tag of a kept tagset satisfies P's ranges */
        if (e->fn == QF_any)
            ranges_of(vm, p, e->a, rs);
        return;
    default:
        return;
    }
}

/* The one stored value partkey == c allows, into v: 1, 0 when none can
 * equal c, -1 when many can (a float above the ints stands for many u64s;
 * 0.0 is -0.0 too). */
static int eq_value(const st_field *f, const QExpr *e, unsigned char *v)
{
    bool exact;
    const QNumTest *t = &e->num;
    if (!t->kind)
        return encode_const(f, e->b, v, &exact) && exact;
    if (t->kind == QN_NONE)
        return 0;
    if (t->kind != QN_IN || memcmp(&t->lo, &t->hi, sizeof t->lo))
        return -1;
    num_bytes(f, t->lo, v);
    return 1;
}

/* The partitions a where can touch: partkey == c or partkey in set. */
static bool parts_of(VM *vm, QPlan *p, const QExpr *e, uint32_t **out, uint32_t *n)
{
    QScan *sc = &p->scan;
    const st_field *f = &sc->vs->s->fields[sc->src->partkey];
    unsigned char v[ST_MAX_CHAR];
    bool exact;
    if (!e)
        return false;
    if (e->op == QOP_AND)
        return parts_of(vm, p, e->a, out, n) || parts_of(vm, p, e->b, out, n);
    if (e->op == QOP_EQ && e->a->op == QX_FIELD && e->a->field == (int)sc->src->partkey &&
        e->b->op == QOP_CONST) {
        int one = eq_value(f, e, v);
        if (one < 0)
            return false;
        *out = qp_alloc(vm, p, sizeof **out);
        *n = 0;
        if (one) {
            uint32_t vol, part;
            st_storeinfo info;
            st_store_info(sc->src->st, &info);
            st_store_place(sc->src->st, v, f->width, &vol, &part);
            (*out)[(*n)++] = vol * info.partitions + part;
        }
        return true;
    }
    /* (a float above the ints stands for many u64 values: no elimination) */
    if (e->op == QX_SET && e->set && !e->set->match && e->a->op == QX_FIELD &&
        e->a->field == (int)sc->src->partkey && e->set->type != QT_FLOAT &&
        !(e->set->big && e->set->big->n)) {
        const QSet *s = e->set;
        st_storeinfo info;
        st_store_info(sc->src->st, &info);
        *out = qp_alloc(vm, p, (s->n + 1) * sizeof **out);
        *n = 0;
        for (size_t i = 0; i < s->n; i++) {
            QExpr k = {.type = s->type, .ki = s->ints[i], .ks = s->strs[i], .kn = s->lens[i]};
            uint32_t vol, part, g, j;
            if (!encode_const(f, &k, v, &exact) || !exact)
                continue;
            st_store_place(sc->src->st, v, f->width, &vol, &part);
            g = vol * info.partitions + part;
            for (j = 0; j < *n && (*out)[j] != g; j++)
                ;
            if (j == *n)
                (*out)[(*n)++] = g;
        }
        return true;
    }
    return false;
}

static void prepare(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    if (sc->ranges || sc->nparts)
        return;
    Ranges rs = {0};
    ranges_of(vm, p, sc->where, &rs);
    ranges_of(vm, p, sc->tag_where, &rs);
    sc->ranges = rs.r;
    sc->nranges = rs.n;
    sc->nparts = UINT32_MAX;
    if (sc->src->st && !parts_of(vm, p, sc->where, &sc->parts, &sc->nparts))
        sc->nparts = UINT32_MAX;
    sc->footer_count = sc->consumer == QC_COUNT && !sc->where && !sc->tag_where;
}

/* ---- consumers' state per worker ----------------------------------------- */

typedef struct AggState {
    uint64_t n;         /* values seen (rows for count()) */
    VSum sum;           /* sum, avg */
    bool has;
    unsigned char *best;    /* min/max: the key bytes of the best so far */
    struct DSet *ds;    /* distinct */
} AggState;

typedef struct DSet {
    uint64_t *h;
    size_t n, mask;
} DSet;

typedef struct Group {
    uint64_t hash;
    unsigned char *key;
    AggState *aggs;
} Group;

typedef struct GroupTable {
    Group *g;
    uint32_t *slots;    /* group index + 1 */
    size_t n, cap, mask;
    Buf arena;          /* keys and min/max bytes */
} GroupTable;

typedef struct ColStat {
    uint64_t count, nulls;
    VSum sum;               /* for the mean: ints exactly, whatever the order */
    bool has;
    int64_t imin, imax;     /* integers, times, bools, enum indices */
    double fmin, fmax;      /* floats */
    char *smin, *smax;      /* char[N] (NUL-terminated copies) */
    uint64_t syms[4];       /* an enum's symbols seen: its min and max are by their text */
    uint8_t hll[HLL_REGS];
} ColStat;

/* The rows one partition collected: records of [sort key][row][u32 ntags][tags],
 * or [sort key][row][tag] for tag rows. */
typedef struct PartRows {
    Buf b;
    uint64_t n;
    uint64_t spilled;   /* rows of the partition handed to the external sort */
    bool done;
} PartRows;

typedef struct Shared Shared;

typedef struct Worker {
    Shared *sh;
    KCtx k;
    uint64_t count;
    GroupTable gt;
    Buf keys;           /* a batch's group keys (or dense codes) */
    uint32_t *dense;    /* small-domain keys: group index + 1 per key code */
    uint32_t ndense;    /* codes (0: keys go through the table alone) */
    uint64_t *dcount;   /* dense, every aggregate count(): rows per code */
    ColStat *stats;
    unsigned char *row, *tag;
    st_reader *r;           /* the open file, closed here too if a comb call raises */
    pthread_t th;
    bool started;
} Worker;

struct Shared {
    VM *vm;
    QPlan *p;
    const QScan *sc;
    PartList parts;
    PartRows *rows;         /* per partition (COLLECT) */
    atomic_uint next;       /* the next partition to claim */
    atomic_bool stop;
    pthread_mutex_t mu;
    char err[600];
    uint64_t prefix_rows;   /* COLLECT with a limit and no sort: rows of the done prefix */
    uint32_t prefix;
    VLoader *loader;        /* WRITE (one worker) */
    uint64_t written;
    st_read_stats io;
    size_t budget;          /* COLLECT with a sort and no take: bytes of rows held */
    atomic_size_t held;     /* bytes of rows in the partitions' buffers */
    QSpill *spill;          /* the rows once past the budget (under mu) */
    st_nbuf_opts ropts;     /* the partitions' readers' */
    st_known_schema known;  /* the source's schema: files with it need not parse theirs */
};

static void fail(Shared *sh, const char *msg)
{
    pthread_mutex_lock(&sh->mu);
    if (!sh->err[0])
        snprintf(sh->err, sizeof sh->err, "%s", msg);
    pthread_mutex_unlock(&sh->mu);
    atomic_store(&sh->stop, true);
}

static const char oom[] = "out of memory in a scan";

/* A scan's error, raised on the VM's thread: a kernel's "line:col: message"
 * at that place of the program, as the row steps raise theirs; others (I/O,
 * memory) at the pipeline. */
_Noreturn static void raise_error(VM *vm, const char *msg)
{
    unsigned line, col;
    int n = 0;
    if (sscanf(msg, "%u:%u: %n", &line, &col, &n) == 2 && n > 0)
        vm_error_at(vm, line, col, msg + n);
    vm_error(vm, "%s", msg);
}

/* ---- group tables ----------------------------------------------------- */

/* The n <= 8 bytes at p as a little-endian word, by whole loads that may
 * overlap: bytes stored one by one into a word and then loaded whole stall
 * the load (no store forwarding), once per row. */
static inline uint64_t load_small(const unsigned char *p, size_t n)
{
    uint32_t lo, hi;
    if (n >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        return x;
    }
    if (n >= 4) {
        memcpy(&lo, p, 4);
        memcpy(&hi, p + n - 4, 4);
        return lo | (uint64_t)hi << (8 * (n - 4));
    }
    if (n == 0)
        return 0;
    return p[0] | (uint64_t)p[n / 2] << (8 * (n / 2)) | (uint64_t)p[n - 1] << (8 * (n - 1));
}

static uint64_t hash_key(const unsigned char *k, size_t n)
{
    if (n <= 16) {  /* short keys, the usual: two words mixed */
        uint64_t a = load_small(k, n < 8 ? n : 8), b = n > 8 ? load_small(k + 8, n - 8) : 0;
        a ^= b * UINT64_C(0x9E3779B97F4A7C15) + n;
        a ^= a >> 33;
        a *= UINT64_C(0xff51afd7ed558ccd);
        a ^= a >> 33;
        return a | 1;
    }
    return XXH3_64bits(k, n) | 1;
}

static bool dset_add(DSet *d, uint64_t h)
{
    if (!d->mask) {
        d->h = mem_calloc(16, 8);
        if (!d->h)
            return false;
        d->mask = 15;
    }
    if (2 * (d->n + 1) > d->mask + 1) {
        size_t cap = (d->mask + 1) * 2;
        uint64_t *nh = mem_calloc(cap, 8);
        if (!nh)
            return false;
        for (size_t i = 0; i <= d->mask; i++)
            if (d->h[i]) {
                size_t j = d->h[i] & (cap - 1);
                while (nh[j])
                    j = (j + 1) & (cap - 1);
                nh[j] = d->h[i];
            }
        mem_free(d->h, (d->mask + 1) * 8);
        d->h = nh;
        d->mask = cap - 1;
    }
    size_t j = h & d->mask;
    while (d->h[j] && d->h[j] != h)
        j = (j + 1) & d->mask;
    if (!d->h[j]) {
        d->h[j] = h;
        d->n++;
    }
    return true;
}

static void dset_free(DSet *d)
{
    if (d) {
        mem_free(d->h, (d->mask + 1) * 8);
        mem_free(d, sizeof *d);
    }
}

static inline bool key_eq(const unsigned char *a, const unsigned char *b, size_t n)
{
    if (n > 16)
        return !memcmp(a, b, n);
    size_t n0 = n < 8 ? n : 8;
    return load_small(a, n0) == load_small(b, n0) &&
           (n <= 8 || load_small(a + 8, n - 8) == load_small(b + 8, n - 8));
}

/* The group of key (inserting it): its index, or -1 out of memory. */
static long group_find(const QScan *sc, GroupTable *t, const unsigned char *key, uint64_t h)
{
    if (t->mask) {
        for (size_t i = h & t->mask; t->slots[i]; i = (i + 1) & t->mask) {
            Group *g = &t->g[t->slots[i] - 1];
            if (g->hash == h && key_eq(g->key, key, sc->keyw))
                return (long)(t->slots[i] - 1);
        }
    }
    if (2 * (t->n + 1) > t->mask + 1 || !t->mask) {
        size_t ns = t->mask ? (t->mask + 1) * 2 : 64;
        uint32_t *s = mem_calloc(ns, 4);
        if (!s)
            return -1;
        for (size_t i = 0; i < t->n; i++) {
            size_t j = t->g[i].hash & (ns - 1);
            while (s[j])
                j = (j + 1) & (ns - 1);
            s[j] = (uint32_t)i + 1;
        }
        mem_free(t->slots, t->mask ? (t->mask + 1) * 4 : 0);
        t->slots = s;
        t->mask = ns - 1;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        Group *g = mem_realloc(t->g, t->cap * sizeof *g, cap * sizeof *g);
        if (!g)
            return -1;
        t->g = g;
        t->cap = cap;
    }
    Group *g = &t->g[t->n];
    g->hash = h;
    g->key = mem_alloc(sc->keyw + 1);
    g->aggs = mem_calloc((size_t)sc->nagg_list + 1, sizeof(AggState));
    if (!g->key || !g->aggs) {
        mem_free(g->key, sc->keyw + 1);
        mem_free(g->aggs, ((size_t)sc->nagg_list + 1) * sizeof(AggState));
        return -1;
    }
    memcpy(g->key, key, sc->keyw);
    size_t i = h & t->mask;
    while (t->slots[i])
        i = (i + 1) & t->mask;
    t->slots[i] = (uint32_t)t->n + 1;
    return (long)t->n++;
}

static void group_free(const QScan *sc, GroupTable *t)
{
    for (size_t i = 0; i < t->n; i++) {
        for (int a = 0; a < sc->nagg_list; a++) {
            mem_free(t->g[i].aggs[a].best, qx_keywidth(sc->agg_list[a]->a ? sc->agg_list[a]->a : sc->agg_list[a]));
            dset_free(t->g[i].aggs[a].ds);
        }
        mem_free(t->g[i].key, sc->keyw + 1);
        mem_free(t->g[i].aggs, ((size_t)sc->nagg_list + 1) * sizeof(AggState));
    }
    mem_free(t->g, t->cap * sizeof *t->g);
    mem_free(t->slots, t->mask ? (t->mask + 1) * 4 : 0);
    buf_free(&t->arena);
    memset(t, 0, sizeof *t);
}

/* Folds one value (key bytes kb of the argument, or vector value j) in. */
static bool agg_add(const QExpr *ag, AggState *s, const KVec *v, uint32_t j, const unsigned char *kb)
{
    const QExpr *a = ag->a;
    if (ag->fn == QF_count && !a) {
        s->n++;
        return true;
    }
    if (v->valid && !v->valid[j])
        return true;    /* nil: aggregates skip it */
    s->n++;
    switch (ag->fn) {
    case QF_sum:
    case QF_avg:
        if (a->type == QT_FLOAT || kvec_float(v, j))
            v_sum_float(&s->sum, v->f[j]);
        else
            v_sum_int(&s->sum, v->i[j]);
        return true;
    case QF_min:
    case QF_max: {
        uint32_t w = qx_keywidth(a);
        if (!s->best && !(s->best = mem_alloc(w)))
            return false;
        int c = s->has ? memcmp(kb, s->best, w) : 0;
        if (!s->has || (ag->fn == QF_min ? c < 0 : c > 0))
            memcpy(s->best, kb, w);
        s->has = true;
        return true;
    }
    case QF_distinct:
        if (!s->ds && !(s->ds = mem_calloc(1, sizeof *s->ds)))
            return false;
        return dset_add(s->ds, hash_key(kb, qx_keywidth(a)));
    default:
        return true;
    }
}

static bool agg_merge(const QExpr *ag, AggState *into, const AggState *from)
{
    into->n += from->n;
    v_sum_merge(&into->sum, &from->sum);
    if ((ag->fn == QF_min || ag->fn == QF_max) && from->has) {
        uint32_t w = qx_keywidth(ag->a);
        int c = into->has ? memcmp(from->best, into->best, w) : 0;
        if (!into->best && !(into->best = mem_alloc(w)))
            return false;
        if (!into->has || (ag->fn == QF_min ? c < 0 : c > 0))
            memcpy(into->best, from->best, w);
        into->has = true;
    }
    if (ag->fn == QF_distinct && from->ds) {
        if (!into->ds && !(into->ds = mem_calloc(1, sizeof *into->ds)))
            return false;
        for (size_t i = 0; i <= from->ds->mask; i++)
            if (from->ds->h[i] && !dset_add(into->ds, from->ds->h[i]))
                return false;
    }
    return true;
}

/* Dense group keys: a key whose values are few (an enum symbol, a bool, a
 * u8 or i8 field, also as first/last(tags, P).f) has a code, 0 for nil and
 * 1 + its rank otherwise; when the codes of all the keys together number
 * at most DENSE_MAX, a row's code indexes an array of group indices
 * directly, and only a code's first row goes through the group table.
 * Rows of one code have one encoded key, so the groups are the table's.
 * COMB_GROUP_HASH=1 in the environment turns this off (tests compare). */
#define DENSE_MAX (1u << 17)

/* The codes of key e, or 0 when its values are not few. */
static uint32_t key_codes(const st_schema *s, const QExpr *e)
{
    bool fieldish = e->op == QX_FIELD ||
                    (e->op == QX_QUANT && (e->fn == QF_first || e->fn == QF_last));
    if (e->type == QT_BOOL)
        return 257;     /* a bool field's byte, or a condition's 0 or 1 */
    if (!fieldish || e->field < 0)
        return 0;
    const st_field *f = &s->fields[e->field];
    if (e->type == QT_STR && e->is_enum && f->type == ST_ENUM)
        return f->nsyms + 2;    /* nil, the symbols, and "?" for bytes past them */
    if (e->type == QT_INT && (f->type == ST_U8 || f->type == ST_I8))
        return 257;
    return 0;
}

/* The number of dense codes of sc's group keys, or 0 when they are too many. */
static uint32_t dense_codes(const QScan *sc)
{
    uint64_t n = 1;
    for (int i = 0; i < sc->nkeys && n; i++) {
        n *= key_codes(sc->vs->s, sc->keys[i]);
        if (n > DENSE_MAX)
            n = 0;
    }
    return (uint32_t)n;
}

/* Adds each row's code of key e (vector v) times stride to code[]. */
static void add_codes(const st_schema *s, const QExpr *e, const KVec *v, uint32_t n,
                      uint32_t stride, uint32_t *code)
{
    uint32_t last = e->type == QT_STR ? s->fields[e->field].nsyms : 0;
    const uint8_t *valid = v->valid;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t c;
        if (e->type == QT_STR)
            c = 1 + ((uint64_t)v->i[j] < last ? (uint32_t)v->i[j] : last);
        else
            c = 1 + (uint32_t)(v->i[j] & 0xff);
        code[j] += (valid && !valid[j] ? 0 : c) * stride;
    }
}

/* Whether every aggregate is count() of rows. */
static bool counts_only(const QScan *sc)
{
    for (int a = 0; a < sc->nagg_list; a++)
        if (sc->agg_list[a]->fn != QF_count || sc->agg_list[a]->a)
            return false;
    return true;
}

/* Folds the rows counted per dense code into their groups' counts. */
static void dense_flush(Worker *w)
{
    const QScan *sc = w->sh->sc;
    for (uint32_t c = 0; w->dcount && c < w->ndense; c++) {
        if (!w->dcount[c])
            continue;
        Group *g = &w->gt.g[w->dense[c] - 1];
        for (int a = 0; a < sc->nagg_list; a++)
            g->aggs[a].n += w->dcount[c];
        w->dcount[c] = 0;
    }
}

/* Row j's group key into p (sc->keyw bytes). */
static void key_at(const QScan *sc, const KVec *const *kv, const uint32_t *kw, uint32_t j,
                   unsigned char *p)
{
    for (int i = 0; i < sc->nkeys; i++) {
        k_key(sc->keys[i], kv[i], j, false, p);
        p += kw[i];
    }
}

static void consume_group(Worker *w, bool tag, const KSel *sel)
{
    const QScan *sc = w->sh->sc;
    KCtx *k = &w->k;
    unsigned char ab[4096];
    const KVec *kv[64], *av[64];
    uint32_t kw[64];
    if (sc->keyw > 4096 || sc->nkeys > 64 || sc->nagg_list > 64) {
        fail(w->sh, "group by: too many or too wide keys");
        return;
    }
    for (int i = 0; i < sc->nkeys; i++) {
        kv[i] = k_eval(k, sc->keys[i], tag, sel);
        kw[i] = qx_keywidth(sc->keys[i]);
    }
    for (int a = 0; a < sc->nagg_list; a++)
        av[a] = sc->agg_list[a]->a ? k_eval(k, sc->agg_list[a]->a, tag, sel) : NULL;
    /* Every row's key (or code) first, then the lookups: a key hashed right
     * after its bytes were stored one by one would stall its loads. */
    w->keys.len = 0;
    size_t each = w->ndense ? sizeof(uint32_t) : sc->keyw;
    unsigned char *keys = buf_room(&w->keys, (size_t)sel->n * each + 1);
    uint32_t *code = (uint32_t *)(void *)keys;
    if (!keys || (w->ndense && !w->dense && !(w->dense = mem_calloc(w->ndense, 4))) ||
        (w->ndense && counts_only(sc) && !w->dcount && !(w->dcount = mem_calloc(w->ndense, 8)))) {
        fail(w->sh, oom);
        return;
    }
    if (w->ndense) {
        memset(code, 0, (size_t)sel->n * 4);
        for (int i = 0, stride = 1; i < sc->nkeys; i++) {
            add_codes(sc->vs->s, sc->keys[i], kv[i], sel->n, (uint32_t)stride, code);
            stride *= (int)key_codes(sc->vs->s, sc->keys[i]);
        }
    } else {
        for (uint32_t j = 0; j < sel->n; j++)
            key_at(sc, kv, kw, j, keys + (size_t)j * sc->keyw);
    }
    for (uint32_t j = 0; j < sel->n; j++) {
        long gi;
        if (!w->ndense) {
            const unsigned char *key = keys + (size_t)j * sc->keyw;
            gi = group_find(sc, &w->gt, key, hash_key(key, sc->keyw));
        } else if (w->dense[code[j]]) {
            gi = (long)w->dense[code[j]] - 1;
        } else {
            key_at(sc, kv, kw, j, ab);
            gi = group_find(sc, &w->gt, ab, hash_key(ab, sc->keyw));
            w->dense[code[j]] = (uint32_t)(gi + 1);
        }
        if (gi < 0) {
            fail(w->sh, oom);
            return;
        }
        if (w->dcount) {    /* counts alone: one add per row, folded in at the end */
            w->dcount[code[j]]++;
            continue;
        }
        Group *g = &w->gt.g[gi];
        for (int a = 0; a < sc->nagg_list; a++) {
            const QExpr *ag = sc->agg_list[a];
            if (ag->a && (ag->fn == QF_min || ag->fn == QF_max || ag->fn == QF_distinct))
                k_key(ag->a, av[a], j, false, ab);
            if (!agg_add(ag, &g->aggs[a], av[a] ? av[a] : &(KVec){0}, j, ab)) {
                fail(w->sh, oom);
                return;
            }
        }
    }
}

/* ---- stat ------------------------------------------------------------- */

/* Columns of stat: the schema's fields, then the tags per tagset. */
static uint32_t stat_ncols(const QScan *sc)
{
    return sc->vs->s->nfields + (sc->vs->s->tag_size && !sc->tags);
}

/* HyperLogLog: a register per hash prefix keeps the longest run of zeros. */
static inline void hll_add(uint8_t *reg, uint64_t h)
{
    uint32_t r = (uint32_t)(h >> (64 - HLL_BITS));
    uint8_t rank = (uint8_t)(__builtin_clzll(h << HLL_BITS | (UINT64_C(1) << (HLL_BITS - 1))) + 1);
    if (rank > reg[r])
        reg[r] = rank;
}

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    return x ^ x >> 33;
}

/* One loop per column type over the rows' indices idx[0 .. n). */
/* ORD: x as an int64 in x's order (min and max keep it); SEEN: x as comb
 * reads it, for distinct. */
#define STAT_LOOP(T, ORD, SEEN)                                                  \
    for (uint32_t j = 0; j < n; j++) {                                           \
        T x = ((const T *)col)[idx[j]];                                          \
        int64_t v = (ORD);                                                       \
        c->nulls += x == 0;                                                      \
        v_sum_int(&c->sum, x);                                                   \
        if (v < lo) lo = v;                                                      \
        if (v > hi) hi = v;                                                      \
        hll_add(c->hll, mix64(SEEN));                                            \
    }
#define STAT_INTS(T) STAT_LOOP(T, (int64_t)x, (uint64_t)(int64_t)x)
/* A u64 with its top bit flipped orders as an int64 (stat_rows flips back). */
#define U64_ORD(x) ((int64_t)((x) ^ UINT64_C(1) << 63))

static bool stat_column(ColStat *c, const st_field *f, const void *col, const uint32_t *idx, uint32_t n)
{
    if (!n)
        return true;
    c->count += n;
    if (f->type == ST_CHAR) {
        uint32_t w = f->width;
        for (uint32_t j = 0; j < n; j++) {
            const char *p = (const char *)col + (size_t)idx[j] * w, *z = memchr(p, 0, w);
            size_t len = z ? (size_t)(z - p) : w;
            c->nulls += len == 0;
            hll_add(c->hll, XXH3_64bits(p, len));
            for (int which = 0; which < 2; which++) {
                char **m = which ? &c->smax : &c->smin;
                int cmp = *m ? strncmp(p, *m, w) : 0;
                if (*m && (which ? cmp <= 0 : cmp >= 0))
                    continue;
                if (!*m && !(*m = mem_alloc((size_t)w + 1)))
                    return false;
                memcpy(*m, p, len);
                (*m)[len] = 0;
            }
        }
        return true;
    }
    if (f->type == ST_F32 || f->type == ST_F64) {
        double lo = c->has ? c->fmin : INFINITY, hi = c->has ? c->fmax : -INFINITY;
        for (uint32_t j = 0; j < n; j++) {
            double v = f->type == ST_F32 ? ((const float *)col)[idx[j]] : ((const double *)col)[idx[j]];
            uint64_t bits;
            c->nulls += v == 0;
            v_sum_float(&c->sum, v);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            v = v == 0 ? 0 : isnan(v) ? NAN : v;  /* one -0 and one NaN, as keys */
            memcpy(&bits, &v, 8);
            hll_add(c->hll, mix64(bits));
        }
        c->fmin = lo;
        c->fmax = hi;
        c->has = true;
        return true;
    }
    int64_t lo = c->has ? c->imin : INT64_MAX, hi = c->has ? c->imax : INT64_MIN;
    uint64_t nulls = c->nulls;
    switch (f->type) {
    case ST_U8: case ST_BOOL: case ST_ENUM: STAT_INTS(uint8_t); break;
    case ST_U16: STAT_INTS(uint16_t); break;
    case ST_U32: STAT_INTS(uint32_t); break;
    case ST_I8: STAT_INTS(int8_t); break;
    case ST_I16: STAT_INTS(int16_t); break;
    case ST_I32: STAT_INTS(int32_t); break;
    case ST_U64: STAT_LOOP(uint64_t, U64_ORD(x), qx_u64_seen(x)); break;
    default: STAT_INTS(int64_t); break;
    }
    if (f->type == ST_ENUM) {
        c->nulls = nulls;   /* every symbol is a value */
        for (uint32_t j = 0; j < n; j++) {
            uint8_t k = ((const uint8_t *)col)[idx[j]];
            c->syms[k >> 6] |= UINT64_C(1) << (k & 63);
        }
    }
    c->imin = lo;
    c->imax = hi;
    c->has = true;
    return true;
}

/* Stat of the tags-per-tagset column: a u32 field of its own. */
static const st_field tag_count_field = {.name = "#tags", .type = ST_U32, .width = 4};

static void consume_stat(Worker *w, bool tag, const KSel *sel)
{
    const QScan *sc = w->sh->sc;
    const st_schema *s = sc->vs->s;
    const st_batch *b = w->k.b;
    /* Three index lists: the rows, the tags of the rows' tagsets, the
     * tagsets of the rows (when rows are tags). */
    uint32_t *tags, ntags = 0;
    uint32_t *lists = mem_alloc(((size_t)b->ntags + b->ntagsets + 2) * 4);
    if (!lists) {
        fail(w->sh, oom);
        return;
    }
    tags = lists;
    if (s->tag_size && !tag)
        for (uint32_t j = 0; j < sel->n; j++)
            for (uint32_t i = b->tag_start[sel->idx[j]]; i < b->tag_start[sel->idx[j] + 1]; i++)
                tags[ntags++] = i;
    uint32_t *owners = lists + ntags;
    for (uint32_t j = 0; tag && j < sel->n; j++)
        owners[j] = w->k.owner[sel->idx[j]];
    for (uint32_t f = 0; f < s->nfields; f++) {
        bool tagf = s->fields[f].role == ST_TAG;
        const uint32_t *idx = tagf ? (tag ? sel->idx : tags) : (tag ? owners : sel->idx);
        uint32_t n = tagf && !tag ? ntags : sel->n;
        if (!stat_column(&w->stats[f], &s->fields[f], b->cols[f], idx, n))
            fail(w->sh, oom);
    }
    if (stat_ncols(sc) > s->nfields)
        stat_column(&w->stats[s->nfields], &tag_count_field, b->cols[s->nfields], sel->idx, sel->n);
    mem_free(lists, ((size_t)b->ntags + b->ntagsets + 2) * 4);
}

static void stat_merge(const QScan *sc, ColStat *into, ColStat *from)
{
    for (uint32_t c = 0; c < stat_ncols(sc); c++) {
        ColStat *a = &into[c], *b = &from[c];
        uint32_t w = c < sc->vs->s->nfields ? sc->vs->s->fields[c].width : 0;
        a->count += b->count;
        a->nulls += b->nulls;
        v_sum_merge(&a->sum, &b->sum);
        if (b->has) {
            a->imin = a->has && a->imin < b->imin ? a->imin : b->imin;
            a->imax = a->has && a->imax > b->imax ? a->imax : b->imax;
            a->fmin = a->has && a->fmin < b->fmin ? a->fmin : b->fmin;
            a->fmax = a->has && a->fmax > b->fmax ? a->fmax : b->fmax;
            a->has = true;
        }
        for (int which = 0; which < 2; which++) {
            char **x = which ? &a->smax : &a->smin, **y = which ? &b->smax : &b->smin;
            if (*y && (!*x || (which ? strcmp(*y, *x) > 0 : strcmp(*y, *x) < 0))) {
                mem_free(*x, *x ? (size_t)w + 1 : 0);
                *x = *y;
                *y = NULL;
            }
        }
        for (int i = 0; i < 4; i++)
            a->syms[i] |= b->syms[i];
        for (uint32_t r = 0; r < HLL_REGS; r++)
            if (b->hll[r] > a->hll[r])
                a->hll[r] = b->hll[r];
    }
}

/* The first (hi: last) by text of the enum symbols seen, as min() and
 * max() and sort order them; an index beyond the symbols as its number. */
static Value enum_bound(VM *vm, const st_field *f, const ColStat *cs, bool hi)
{
    int best = -1;
    for (int k = 0; k < 256; k++) {
        if (!(cs->syms[k >> 6] >> (k & 63) & 1))
            continue;
        if ((uint32_t)k >= f->nsyms)
            return v_int(k);
        if (best < 0 || (strcmp(f->syms[k], f->syms[best]) > 0) == hi)
            best = k;
    }
    return best < 0 ? v_nil() : v_obj(vm_str_cstr(vm, f->syms[best]));
}

static double hll_estimate(const uint8_t *reg)
{
    double sum = 0;
    uint32_t zeros = 0;
    for (uint32_t i = 0; i < HLL_REGS; i++) {
        sum += 1.0 / (double)(UINT64_C(1) << reg[i]);
        zeros += reg[i] == 0;
    }
    double m = HLL_REGS, e = 0.7213 / (1 + 1.079 / m) * m * m / sum;
    if (e <= 2.5 * m && zeros)
        e = m * __builtin_log(m / zeros);
    return e;
}

/* ---- collecting rows -------------------------------------------------- */

static size_t record_size(const QScan *sc, uint32_t ntags)
{
    const st_schema *s = sc->vs->s;
    /* a tag count only where the schema has tags to count */
    size_t tags = sc->tags ? s->tag_size : s->tag_size ? 4 + (size_t)ntags * s->tag_size : 0;
    return sc->keyw + s->row_size + tags;
}

static void consume_rows(Worker *w, uint32_t pi, bool tag, const KSel *sel)
{
    Shared *sh = w->sh;
    const QScan *sc = sh->sc;
    const st_schema *s = sc->vs->s;
    const st_batch *b = w->k.b;
    PartRows *pr = &sh->rows[pi];
    const KVec *kv[64];
    if (sc->nsort > 64) {
        fail(sh, "sort: too many keys");
        return;
    }
    for (int i = 0; i < sc->nsort; i++)
        kv[i] = k_eval(&w->k, sc->sort[i].e, tag, sel);
    for (uint32_t j = 0; j < sel->n; j++) {
        if (!sc->nsort && pr->n >= sc->limit)
            return;
        uint32_t r = sel->idx[j], t = tag ? w->k.owner[r] : r;
        /* tags only when a tag column was decoded (a select may need none) */
        bool with_tags = s->tag_size && !tag && b->tag_start;
        uint32_t lo = with_tags ? b->tag_start[t] : 0;
        uint32_t nt = with_tags ? b->tag_start[t + 1] - lo : 0;
        unsigned char *p = buf_room(&pr->b, record_size(sc, nt));
        if (!p) {
            fail(sh, oom);
            return;
        }
        for (int i = 0; i < sc->nsort; i++) {
            k_key(sc->sort[i].e, kv[i], j, sc->sort[i].desc, p);
            p += qx_keywidth(sc->sort[i].e);
        }
        st_batch_row(s, b, t, p);
        p += s->row_size;
        if (tag) {
            st_batch_tag(s, b, r, p);
        } else if (s->tag_size) {
            memcpy(p, &nt, 4);
            p += 4;
            for (uint32_t i = 0; i < nt; i++, p += s->tag_size)
                st_batch_tag(s, b, lo + i, p);
        }
        pr->n++;
    }
}

/* The bytes of the record at r. */
static size_t record_len(const QScan *sc, const unsigned char *r)
{
    uint32_t nt = 0;
    if (!sc->tags && sc->vs->s->tag_size)
        memcpy(&nt, r + sc->keyw + sc->vs->s->row_size, 4);
    return record_size(sc, nt);
}

/* Offsets of the records of a buffer. */
static size_t *record_offsets(const QScan *sc, const PartRows *pr, size_t *n)
{
    size_t *o = mem_alloc((pr->n + 1) * sizeof *o), off = 0;
    if (!o)
        return NULL;
    for (uint64_t i = 0; i < pr->n; i++) {
        o[i] = off;
        off += record_len(sc, pr->b.p + off);
    }
    *n = pr->n;
    return o;
}

/* What qsort_r's comparisons read: the records and their keys' width. */
typedef struct SortCtx {
    const unsigned char *base;
    uint32_t keyw;
} SortCtx;

static int cmp_records(const void *a, const void *b, void *ctx)
{
    const SortCtx *sx = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = memcmp(sx->base + x, sx->base + y, sx->keyw);
    return c ? c : (x < y ? -1 : x > y);
}

/* Sorts a partition's records by key and keeps the first limit of them. */
static bool prune(const QScan *sc, PartRows *pr)
{
    size_t n, *o = record_offsets(sc, pr, &n);
    if (!o)
        return false;
    SortCtx sx = {pr->b.p, sc->keyw};
    if (n)
        qsort_r(o, n, sizeof *o, cmp_records, &sx);
    Buf nb = {0};
    size_t keepn = n < sc->limit ? n : (size_t)sc->limit;
    for (size_t i = 0; i < keepn; i++) {
        size_t len = record_len(sc, pr->b.p + o[i]);
        unsigned char *p = buf_room(&nb, len);
        if (!p) {
            buf_free(&nb);
            mem_free(o, (n + 1) * sizeof *o);
            return false;
        }
        memcpy(p, pr->b.p + o[i], len);
    }
    mem_free(o, (n + 1) * sizeof *o);
    buf_free(&pr->b);
    pr->b = nb;
    pr->n = keepn;
    return true;
}

/* Hands partition pi's collected rows to the external sort (made by the
 * first call), emptying its buffer. */
static void spill_rows(Shared *sh, uint32_t pi)
{
    PartRows *pr = &sh->rows[pi];
    st_err err = {0};
    pthread_mutex_lock(&sh->mu);
    if (!sh->spill)
        sh->spill = qspill_new(sh->sc, sh->budget / 2, &err);
    bool ok = sh->spill != NULL;
    for (size_t off = 0, i = 0; ok && i < pr->n; i++) {
        size_t n = qspill_add(sh->spill, pi, pr->spilled + i, pr->b.p + off, &err);
        ok = n > 0;
        off += n;
    }
    pthread_mutex_unlock(&sh->mu);
    atomic_fetch_sub(&sh->held, pr->b.len);
    pr->spilled += pr->n;
    pr->n = 0;
    pr->b.len = 0;
    if (!ok)
        fail(sh, err.msg);
}

/* ---- writing ---------------------------------------------------------- */

static void consume_write(Worker *w, bool tag, const KSel *sel)
{
    Shared *sh = w->sh;
    const st_schema *s = sh->sc->vs->s;
    const st_batch *b = w->k.b;
    st_err err;
    for (uint32_t j = 0; j < sel->n; j++) {
        uint32_t r = sel->idx[j], t = tag ? w->k.owner[r] : r;
        st_batch_row(s, b, t, w->row);
        uint32_t lo = tag ? r : s->tag_size ? b->tag_start[t] : 0;
        uint32_t hi = tag ? r + 1 : s->tag_size ? b->tag_start[t + 1] : 0;
        int rc = 0;
        if (lo == hi)
            rc = vm_loader_add_raw(sh->loader, w->row, NULL, &err);
        for (uint32_t i = lo; i < hi && rc == 0; i++) {
            st_batch_tag(s, b, i, w->tag);
            rc = vm_loader_add_raw(sh->loader, w->row, w->tag, &err);
        }
        if (rc < 0) {
            fail(sh, err.msg);
            return;
        }
        sh->written++;
    }
}

/* ---- the scan of one partition ----------------------------------------- */

/* Buffers of 256 KiB: partition files are read whole, one after another,
 * and smaller buffers come back from the allocator warm instead of as
 * fresh pages to fault in for every file. */
static const st_nbuf_opts scan_io = {.nbufs = 3, .bufsize = 256 << 10};

/* Scans use the process's cache (store/cache.h) from its second scan on: a
 * one-shot `comb -e` reads nothing twice and would only pay for filling it. */
static unsigned long nscans; /* touched by the VM's thread only */

static bool uses_cache(unsigned long scan_number)
{
    return scan_number > 1;
}

static st_nbuf_opts with_cache(st_nbuf_opts o)
{
    o.cache = uses_cache(nscans);
    return o;
}

/* The first row of [lo, hi) whose first key field (column c, sorted in the
 * file) orders after k, or at or after it when !after. */
static uint32_t key_search(const st_field *f, const char *c, uint32_t lo, uint32_t hi,
                           uint64_t k, bool after)
{
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint64_t v = st_field_order(f, c + (size_t)mid * f->width);
        if (after ? v <= k : v < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Narrows the batch's tagsets [*lo, *hi) to those the where's ranges on the
 * first key field allow: a file is sorted by its key, so two binary searches
 * find them (Gecko's key query reads a few rows of its block, not all; the
 * where still tests each row left). */
static void key_rows(const QScan *sc, const st_batch *b, uint32_t *lo, uint32_t *hi)
{
    const st_field *f = &sc->vs->s->fields[0];
    for (uint32_t i = 0; i < sc->nranges; i++) {
        const st_range *q = &sc->ranges[i];
        if (q->col != 0 || !b->cols[0])
            continue;
        if (q->lo)
            *lo = key_search(f, b->cols[0], *lo, *hi, st_field_order(f, q->lo), false);
        if (q->hi)
            *hi = key_search(f, b->cols[0], *lo, *hi, st_field_order(f, q->hi), true);
    }
}

/* The scan's columns and zone-map ranges, to a reader of one of its files. */
static int select_where(const QScan *sc, st_reader *r, st_err *err)
{
    uint32_t cols[ST_MAX_FIELDS + 1], ncols = 0;
    for (uint32_t c = 0; c < st_schema_ncols(sc->vs->s); c++)
        if (sc->want[c])
            cols[ncols++] = c;
    if (st_reader_select(r, cols, ncols, err) < 0)
        return -1;
    return st_reader_where(r, sc->ranges, sc->nranges, err);
}

/* Opens partition pi's file for w; false (the scan has failed) when it
 * cannot. */
static bool part_open(Worker *w, uint32_t pi)
{
    Shared *sh = w->sh;
    const QScan *sc = sh->sc;
    st_err err;
    st_reader *r = w->r = vm_files_reader(sh->parts.files, sh->parts.p[pi].fi, &sh->ropts, &sh->known, &err);
    if (!r || select_where(sc, r, &err) < 0) {
        fail(sh, err.msg);
        st_reader_close(r);
        w->r = NULL;
        return false;
    }
    return true;
}

/* One block of w's open partition pi through the where and the consumer:
 * true, or false at the partition's end, on failure or once the scan has
 * stopped. */
static bool part_step(Worker *w, uint32_t pi)
{
    Shared *sh = w->sh;
    const QScan *sc = sh->sc;
    const st_batch *b;
    st_err err;
    if (atomic_load(&sh->stop))
        return false;
    int rc = st_reader_next(w->r, &b, &err);
    if (rc < 0)
        fail(sh, err.msg);
    if (rc != 1)
        return false;
    if (vm_poll_flag & POLL_SIGINT) {
        atomic_store(&sh->stop, true);
        return false;
    }
    if (k_batch(&w->k, b) < 0) {
        fail(sh, w->k.err);
        return false;
    }
    uint32_t lo = b->first, hi = b->ntagsets;
    key_rows(sc, b, &lo, &hi);
    KSel all = {w->k.selbuf[1], hi - lo}, sel = {w->k.selbuf[2], 0};
    for (uint32_t i = 0, n = all.n; i < n; i++)
        all.idx[i] = lo + i;        /* n a local: all.n could alias all.idx */
    if (sc->where)
        k_filter(&w->k, sc->where, false, &all, &sel);
    else
        sel = all;
    bool tag = sc->tags;
    if (tag) {
        /* one row per tag of the kept tagsets */
        KSel t = {sel.idx == w->k.selbuf[1] ? w->k.selbuf[2] : w->k.selbuf[1], 0};
        const uint32_t *st = b->tag_start;
        for (uint32_t j = 0; j < sel.n; j++)
            for (uint32_t i = st[sel.idx[j]]; i < st[sel.idx[j] + 1]; i++)
                t.idx[t.n++] = i;
        sel = t;
        if (sc->tag_where) {
            KSel out = {sel.idx == w->k.selbuf[1] ? w->k.selbuf[2] : w->k.selbuf[1], 0};
            k_filter(&w->k, sc->tag_where, true, &sel, &out);
            sel = out;
        }
    }
    if (w->k.err[0]) {
        fail(sh, w->k.err);
        return false;
    }
    size_t held = sh->rows ? sh->rows[pi].b.len : 0;
    switch (sc->consumer) {
    case QC_COUNT: w->count += sel.n; break;
    case QC_COLLECT: consume_rows(w, pi, tag, &sel); break;
    case QC_GROUP: consume_group(w, tag, &sel); break;
    case QC_STAT: consume_stat(w, tag, &sel); break;
    case QC_WRITE: consume_write(w, tag, &sel); break;
    }
    if (w->k.err[0])
        fail(sh, w->k.err);
    vm_progress_add(0, 1, 0);
    if (sc->consumer != QC_COLLECT)
        return true;
    PartRows *pr = &sh->rows[pi];
    if (sc->nsort && sc->limit != UINT64_MAX && pr->n > 2 * sc->limit + 1024 && !prune(sc, pr))
        fail(sh, oom);
    if (sc->nsort && sc->limit == UINT64_MAX &&
        atomic_fetch_add(&sh->held, pr->b.len - held) + pr->b.len - held > sh->budget / 2)
        spill_rows(sh, pi);     /* past the budget: to the external sort */
    return !(!sc->nsort && pr->n >= sc->limit);
}

/* Closes w's partition pi, adding up its reads. */
static void part_close(Worker *w, uint32_t pi)
{
    Shared *sh = w->sh;
    const QScan *sc = sh->sc;
    st_read_stats rs;
    st_reader_stats(w->r, &rs);
    vm_files_release(sh->parts.files, sh->parts.p[pi].fi, w->r);
    w->r = NULL;
    vm_progress_add(1, 0, rs.bytes_read);
    pthread_mutex_lock(&sh->mu);
    sh->io.blocks_read += rs.blocks_read;
    sh->io.blocks_skipped += rs.blocks_skipped;
    sh->io.bytes_read += rs.bytes_read;
    if (sc->consumer == QC_COLLECT && !sc->nsort && sc->limit != UINT64_MAX) {
        /* Once the first partitions hold limit rows, the rest need not run. */
        sh->rows[pi].done = true;
        while (sh->prefix < sh->parts.n && sh->rows[sh->prefix].done)
            sh->prefix_rows += sh->rows[sh->prefix++].n;
        if (sh->prefix_rows >= sc->limit)
            atomic_store(&sh->stop, true);
    }
    pthread_mutex_unlock(&sh->mu);
}

static void scan_part(Worker *w, uint32_t pi)
{
    if (!part_open(w, pi))
        return;
    while (part_step(w, pi))
        ;
    part_close(w, pi);
}

static void *work(void *arg)
{
    Worker *w = arg;
    Shared *sh = w->sh;
    for (;;) {
        uint32_t i = atomic_fetch_add(&sh->next, 1);
        if (i >= sh->parts.n || atomic_load(&sh->stop))
            break;
        scan_part(w, i);
    }
    return NULL;
}

/* The cores online, asked once: glibc reads a sysfs file for each ask, and
 * a key query's whole scan costs less than that read. */
static long cores(void)
{
    static atomic_long n;
    long c = atomic_load(&n);
    if (!c)
        atomic_store(&n, c = sysconf(_SC_NPROCESSORS_ONLN));
    return c;
}

static int nthreads(const QScan *sc, uint32_t nparts)
{
    const char *env = getenv("COMB_THREADS");
    long n = env ? atol(env) : cores();
    if (n < 1)
        n = 1;
    if (n > QS_MAX_THREADS)
        n = QS_MAX_THREADS;
    if (sc->consumer == QC_WRITE || sc->vm_calls)
        n = 1;  /* the loader takes rows from one thread; comb runs on the VM's */
    return (int)(n > (long)nparts ? (nparts ? nparts : 1) : n);
}

static bool worker_init(Worker *w, Shared *sh)
{
    const QScan *sc = sh->sc;
    const st_schema *s = sc->vs->s;
    memset(w, 0, sizeof *w);
    w->sh = sh;
    if (k_ctx_take(&w->k, &sh->p->scan) < 0)
        return false;
    if (sc->consumer == QC_GROUP)
        w->ndense = getenv("COMB_GROUP_HASH") ? 0 : dense_codes(sc);
    if (sc->consumer == QC_STAT && !(w->stats = mem_calloc(stat_ncols(sc), sizeof(ColStat))))
        return false;
    w->row = mem_alloc(s->row_size + 1);
    w->tag = mem_alloc(s->tag_size + 1);
    return w->row && w->tag;
}

static void worker_free(Worker *w)
{
    const QScan *sc = w->sh->sc;
    if (w->stats) {
        for (uint32_t c = 0; c < stat_ncols(sc); c++) {
            uint32_t wd = c < sc->vs->s->nfields ? sc->vs->s->fields[c].width : 0;
            mem_free(w->stats[c].smin, w->stats[c].smin ? wd + 1 : 0);
            mem_free(w->stats[c].smax, w->stats[c].smax ? wd + 1 : 0);
        }
        mem_free(w->stats, stat_ncols(sc) * sizeof(ColStat));
    }
    group_free(sc, &w->gt);
    mem_free(w->dense, w->dense ? (size_t)w->ndense * 4 : 0);
    mem_free(w->dcount, w->dcount ? (size_t)w->ndense * 8 : 0);
    st_reader_close(w->r);
    buf_free(&w->keys);
    mem_free(w->row, sc->vs->s->row_size + 1);
    mem_free(w->tag, sc->vs->s->tag_size + 1);
    k_ctx_keep(&w->sh->p->scan, &w->k);
}

/* ---- results as comb values -------------------------------------------- */

static void set(VM *vm, VMap *m, const char *k, Value v)
{
    vm_map_set(vm, m, v_obj(vm_str_cstr(vm, k)), v);
}

static Value agg_value(VM *vm, const QExpr *ag, const AggState *s)
{
    Value r;
    switch (ag->fn) {
    case QF_count:
        return v_int((int64_t)s->n);
    case QF_distinct:
        return v_int(s->ds ? (int64_t)s->ds->n : 0);
    case QF_sum:
        if (!s->n)
            return v_nil();
        if (!v_sum_value(&s->sum, &r))
            qx_error(vm, ag, "integer overflow in sum");
        return r;
    case QF_avg:
        return s->n ? v_float(v_sum_mean(&s->sum, s->n)) : v_nil();
    default:    /* min, max */
        return s->has ? qx_key_value(vm, ag->a, s->best) : v_nil();
    }
}

static int cmp_groups(const void *a, const void *b, void *keyw)
{
    return memcmp(((const Group *)a)->key, ((const Group *)b)->key, *(const uint32_t *)keyw);
}

static Value group_rows(VM *vm, const QScan *sc, GroupTable *t)
{
    uint32_t keyw = sc->keyw;
    if (t->n)   /* qsort of NULL, 0 is undefined */
        qsort_r(t->g, t->n, sizeof *t->g, cmp_groups, &keyw);
    VArray *a = vm_array_new(vm, t->n);
    Value av = v_obj(a);
    vm_push_root(vm, av);
    /* A group's aggregates' values, held where the collector sees them: a
     * comb call in an item around them may collect (min and max of strings
     * are new strings). */
    VArray *held = vm_array_new(vm, (size_t)sc->nagg_list);
    vm_push_root(vm, v_obj(held));
    for (int j = 0; j < sc->nagg_list; j++)
        vm_array_push(vm, held, v_nil());
    for (size_t i = 0; i < t->n; i++) {
        Group *g = &t->g[i];
        VMap *m = vm_map_new(vm, (size_t)(sc->nkeys + sc->naggs));
        vm_array_push(vm, a, v_obj(m));
        const unsigned char *k = g->key;
        for (int j = 0; j < sc->nkeys; j++) {
            vm_map_set(vm, m, v_obj(sc->key_names[j]), qx_key_value(vm, sc->keys[j], k));
            k += qx_keywidth(sc->keys[j]);
        }
        for (int j = 0; j < sc->nagg_list; j++)
            held->items[j] = agg_value(vm, sc->agg_list[j], &g->aggs[j]);
        for (int j = 0; j < sc->naggs; j++)
            vm_map_set(vm, m, v_obj(sc->aggs[j].name), rows_eval_aggs(vm, sc->aggs[j].e, held->items));
    }
    vm_pop_root(vm, 2);
    return av;
}

/* A u64 as comb has it: above the ints, the nearest float. */
static Value u64_value(int64_t bits)
{
    return bits < 0 ? v_float((double)(uint64_t)bits) : v_int(bits);
}

static Value stat_rows(VM *vm, const QScan *sc, ColStat *st)
{
    const st_schema *s = sc->vs->s;
    VArray *a = vm_array_new(vm, stat_ncols(sc));
    Value av = v_obj(a);
    vm_push_root(vm, av);
    for (uint32_t c = 0; c < stat_ncols(sc); c++) {
        const st_field *f = c < s->nfields ? &s->fields[c] : NULL;
        ColStat *cs = &st[c];
        VMap *m = vm_map_new(vm, 8);
        char type[32];
        vm_array_push(vm, a, v_obj(m));
        set(vm, m, "field", v_obj(vm_str_cstr(vm, f ? f->name : "#tags")));
        set(vm, m, "type", v_obj(vm_str_cstr(vm, f ? vm_field_type_name(f, type, sizeof type) : "u32")));
        set(vm, m, "count", v_int((int64_t)cs->count));
        set(vm, m, "nulls", v_int((int64_t)cs->nulls));
        Value lo = v_nil(), hi = v_nil(), mean = v_nil();
        if (f && f->type == ST_CHAR) {
            lo = cs->smin ? v_obj(vm_str_cstr(vm, cs->smin)) : v_nil();
            hi = cs->smax ? v_obj(vm_str_cstr(vm, cs->smax)) : v_nil();
        } else if (cs->has && f && (f->type == ST_F32 || f->type == ST_F64)) {
            lo = v_float(cs->fmin);
            hi = v_float(cs->fmax);
        } else if (cs->has && f && f->type == ST_ENUM) {
            lo = enum_bound(vm, f, cs, false);
            hi = enum_bound(vm, f, cs, true);
        } else if (cs->has && f && f->type == ST_TIME) {
            char buf[40];
            st_time_format(cs->imin, buf, sizeof buf);
            lo = v_obj(vm_str_cstr(vm, buf));
            st_time_format(cs->imax, buf, sizeof buf);
            hi = v_obj(vm_str_cstr(vm, buf));
        } else if (cs->has && f && f->type == ST_U64) {
            lo = u64_value(U64_ORD((uint64_t)cs->imin));
            hi = u64_value(U64_ORD((uint64_t)cs->imax));
        } else if (cs->has) {
            lo = v_int(cs->imin);
            hi = v_int(cs->imax);
        }
        if (cs->count && (!f || (f->type != ST_CHAR && f->type != ST_ENUM && f->type != ST_TIME)))
            mean = v_float(v_sum_mean(&cs->sum, cs->count));
        set(vm, m, "min", lo);
        set(vm, m, "max", hi);
        set(vm, m, "mean", mean);
        uint64_t distinct = (uint64_t)(hll_estimate(cs->hll) + 0.5);  /* an estimate: at most count */
        set(vm, m, "distinct", v_int((int64_t)(distinct < cs->count ? distinct : cs->count)));
    }
    vm_pop_root(vm, 1);
    return av;
}

/* The collected rows in order: every partition's records in one buffer
 * (sorted if the scan sorts), or read back from the external sort. */
typedef struct Ordered {
    PartRows all;
    size_t off;
    uint64_t i, n;      /* rows read; rows to read */
} Ordered;

static void ordered_begin(VM *vm, Shared *sh, Ordered *o)
{
    const QScan *sc = sh->sc;
    uint64_t n = 0;
    for (uint32_t i = 0; i < sh->parts.n; i++)
        n += sh->rows[i].spilled + sh->rows[i].n;
    o->n = n < sc->limit ? n : sc->limit;
    if (sh->spill) {
        st_err err;
        for (uint32_t i = 0; i < sh->parts.n; i++)
            spill_rows(sh, i);
        if (sh->err[0])
            raise_error(vm, sh->err);
        if (qspill_finish(sh->spill, &err) < 0)
            vm_error(vm, "%s", err.msg);
        return;
    }
    /* One buffer in partition order (sorting then sees every record). */
    for (uint32_t i = 0; i < sh->parts.n; i++) {
        unsigned char *p = sh->rows[i].b.len ? buf_room(&o->all.b, sh->rows[i].b.len) : NULL;
        if (sh->rows[i].b.len && !p)
            vm_throw(vm, v_obj(vm->oom));
        if (p)
            memcpy(p, sh->rows[i].b.p, sh->rows[i].b.len);
        o->all.n += sh->rows[i].n;
        buf_free(&sh->rows[i].b);
    }
    if (sc->nsort && !prune(sc, &o->all))
        vm_throw(vm, v_obj(vm->oom));
}

/* The record at *off of a buffer, moving *off past it. */
static const unsigned char *next_record(const QScan *sc, const unsigned char *base, size_t *off)
{
    const unsigned char *r = base + *off;
    *off += record_len(sc, r);
    return r;
}

/* The next row's record in order, or NULL at the end. */
static const unsigned char *ordered_next(VM *vm, Shared *sh, Ordered *o)
{
    const unsigned char *r;
    st_err err;
    if (o->i >= o->n)
        return NULL;
    o->i++;
    if (!sh->spill)
        return next_record(sh->sc, o->all.b.p, &o->off);
    int rc = qspill_next(sh->spill, &r, &err);
    if (rc < 0)
        vm_error(vm, "%s", err.msg);
    return rc ? r : NULL;
}

/* A collected record as the row (a map) comb sees. */
static Value record_value(VM *vm, const QScan *sc, const unsigned char *p)
{
    const st_schema *s = sc->vs->s;
    uint32_t nt = 0;
    const unsigned char *row = p + sc->keyw, *tags = row + s->row_size;
    if (!sc->tags && s->tag_size) {
        memcpy(&nt, tags, 4);
        tags += 4;
    }
    return vm_record_value(vm, sc->vs, row, s->tag_size ? tags : NULL, nt, sc->out_fields, sc->tags);
}

/* The collected rows of every partition, in order, as maps. */
static Value collect_rows(VM *vm, Shared *sh, Ordered *o)
{
    ordered_begin(vm, sh, o);
    VArray *a = vm_array_new(vm, o->n);
    Value av = v_obj(a);
    vm_push_root(vm, av);
    for (const unsigned char *r; (r = ordered_next(vm, sh, o));)
        vm_array_push(vm, a, record_value(vm, sh->sc, r));
    vm_pop_root(vm, 1);
    return av;
}

static uint64_t footer_count(VM *vm, const QScan *sc, const PartList *pl)
{
    uint64_t n = 0;
    st_nbuf_opts io = with_cache(scan_io);
    st_known_schema known = {sc->vs->s, sc->vs->text, sc->vs->text_len};
    for (uint32_t i = 0; i < pl->n; i++) {
        st_err err;
        st_reader *r = vm_files_reader(pl->files, pl->p[i].fi, &io, &known, &err);
        st_file_info info;
        if (!r)
            vm_error(vm, "%s", err.msg);
        st_reader_info(r, &info);
        vm_files_release(pl->files, pl->p[i].fi, r);
        n += sc->tags ? info.ntags : info.ntagsets;
    }
    return n;
}

/* ---- running ----------------------------------------------------------- */

typedef struct Run {
    Shared sh;
    Worker *w;          /* [wcap], made for the threads the scan runs */
    int nw, wcap;
    Ordered ord;
    /* a cursor (scan_open) */
    bool sorted;        /* its rows come from ord, after the whole scan */
    uint32_t pi;        /* else the partition being read, a block at a time, */
    PartRows *cur;      /* the buffer of the block's rows, */
    size_t off;         /* the next row's record there, */
    uint64_t left, sent;    /* rows left there, rows given */
} Run;

static void run_free(Run *run)
{
    Shared *sh = &run->sh;
    for (int i = 0; i < run->nw; i++)
        worker_free(&run->w[i]);
    mem_free(run->w, (size_t)run->wcap * sizeof *run->w);
    for (uint32_t i = 0; sh->rows && i < sh->parts.n; i++)
        buf_free(&sh->rows[i].b);
    mem_free(sh->rows, (sh->parts.n + 1) * sizeof *sh->rows);
    buf_free(&run->ord.all.b);
    qspill_free(sh->spill);
    pthread_mutex_destroy(&sh->mu);
}

/* The run's C memory is released by a handle's free, so a raise in the
 * middle (out of memory, an interrupt) leaks nothing; a cursor's also by
 * scan_close, when the loop reading it ends. */
static void run_handle_free(VM *vm, void *data)
{
    Run *run = *(Run **)data;
    if (run) {
        free_parts(vm, &run->sh.parts);
        run_free(run);
        mem_free(run, sizeof *run);
        *(Run **)data = NULL;
    }
}

static const VHandleType run_type = {.name = "scan", .free = run_handle_free};

static void run_workers(VM *vm, void *ud)
{
    Run *run = ud;
    Shared *sh = &run->sh;
    int n = nthreads(sh->sc, sh->parts.n);
    uint64_t bytes = 0;
    for (uint32_t i = 0; vm_progress_enabled() && i < sh->parts.n; i++) {
        struct stat st;
        bytes += stat(sh->parts.p[i].path, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    vm_progress_begin(sh->sc->src->path, sh->parts.n, 0, bytes);
    if (!(run->w = mem_calloc((size_t)n, sizeof *run->w)))
        vm_throw(vm, v_obj(vm->oom));
    run->wcap = n;
    for (int i = 0; i < n; i++) {
        if (!worker_init(&run->w[i], sh)) {
            run->nw = i + 1;
            vm_throw(vm, v_obj(vm->oom));
        }
        run->nw = i + 1;
    }
    for (int i = 1; i < n; i++)
        run->w[i].started = pthread_create(&run->w[i].th, NULL, work, &run->w[i]) == 0;
    work(&run->w[0]);
    for (int i = 1; i < n; i++)
        if (run->w[i].started)
            pthread_join(run->w[i].th, NULL);
        else
            work(&run->w[i]);   /* no thread: do its share here */
    vm_check_interrupt(vm);
    if (sh->err[0])
        raise_error(vm, sh->err);
}

/* A run of p's scan, owned by the handle *hp (pushed as a root). */
static Run *run_new(VM *vm, QPlan *p, VHandle **hp)
{
    QScan *sc = &p->scan;
    prepare(vm, p);
    VHandle *h = *hp = vm_handle_new(vm, &run_type, sizeof(Run *));
    vm_push_root(vm, v_obj(h));
    Run *run = mem_calloc(1, sizeof *run);
    if (!run)
        vm_throw(vm, v_obj(vm->oom));
    *(Run **)handle_data(h) = run;
    Shared *sh = &run->sh;
    pthread_mutex_init(&sh->mu, NULL);
    nscans++;
    sh->ropts = with_cache(scan_io);
    sh->known = (st_known_schema){sc->vs->s, sc->vs->text, sc->vs->text_len};
    sh->vm = vm;
    sh->p = p;
    sh->sc = sc;
    sh->budget = qspill_budget();
    list_parts(vm, sc, &sh->parts);
    return run;
}

static void run_rows(VM *vm, Run *run)
{
    Shared *sh = &run->sh;
    sh->rows = mem_calloc(sh->parts.n + 1, sizeof *sh->rows);
    if (!sh->rows)
        vm_throw(vm, v_obj(vm->oom));
}

/* Runs the workers over every partition. */
static void run_all(VM *vm, VHandle *h)
{
    if (vm_protect(vm, run_workers, *(Run **)handle_data(h)) < 0) {
        /* A comb call raised mid-scan, or an interrupt: close the readers
         * now, not when the collector gets to the handle. */
        run_handle_free(vm, handle_data(h));
        vm_rethrow(vm);
    }
}

Value scan_run(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    VHandle *h;
    Run *run = run_new(vm, p, &h);
    Shared *sh = &run->sh;
    Value result;
    if (sc->footer_count) {
        result = v_int((int64_t)footer_count(vm, sc, &sh->parts));
        goto done;
    }
    run_rows(vm, run);
    Value keep = v_nil();
    if (sc->consumer == QC_WRITE) {
        sh->loader = vm_loader_new(vm, sc->write_target, sc->src->schema, sc->write_opts, &keep);
        vm_push_root(vm, keep);
        if (!st_schema_equal(vschema(sh->loader->schema)->s, sc->vs->s))
            vm_error(vm, "write: the target's schema differs from the source's");
    }
    run_all(vm, h);
    switch (sc->consumer) {
    case QC_COUNT: {
        uint64_t n = 0;
        for (int i = 0; i < run->nw; i++)
            n += run->w[i].count;
        result = v_int((int64_t)n);
        break;
    }
    case QC_GROUP:
        for (int i = 0; i < run->nw; i++)
            dense_flush(&run->w[i]);
        for (int i = 1; i < run->nw; i++) {
            GroupTable *from = &run->w[i].gt;
            for (size_t g = 0; g < from->n; g++) {
                long gi = group_find(sc, &run->w[0].gt, from->g[g].key, from->g[g].hash);
                if (gi < 0)
                    vm_throw(vm, v_obj(vm->oom));
                for (int a = 0; a < sc->nagg_list; a++)
                    if (!agg_merge(sc->agg_list[a], &run->w[0].gt.g[gi].aggs[a], &from->g[g].aggs[a]))
                        vm_throw(vm, v_obj(vm->oom));
            }
        }
        if (sc->nkeys == 0 && run->w[0].gt.n == 0 && group_find(sc, &run->w[0].gt, (const unsigned char *)"", hash_key((const unsigned char *)"", 0)) < 0)
            vm_throw(vm, v_obj(vm->oom));   /* no keys: one group, even of nothing */
        result = group_rows(vm, sc, &run->w[0].gt);
        break;
    case QC_STAT:
        for (int i = 1; i < run->nw; i++)
            stat_merge(sc, run->w[0].stats, run->w[i].stats);
        result = stat_rows(vm, sc, run->w[0].stats);
        break;
    case QC_WRITE:
        vm_loader_finish(vm, sh->loader);
        result = v_int((int64_t)sh->written);
        vm_pop_root(vm, 1);
        break;
    default:
        result = collect_rows(vm, sh, &run->ord);
        break;
    }
done:
    run_handle_free(vm, handle_data(h));
    vm_pop_root(vm, 1);
    return result;
}

/* ---- a cursor: the rows one at a time ------------------------------------ */

Value scan_open(VM *vm, QPlan *p)
{
    VHandle *h;
    Run *run = run_new(vm, p, &h);
    Shared *sh = &run->sh;
    run_rows(vm, run);
    if (p->scan.nsort) {
        /* The last row may come first: all of them, in parallel, into the
         * sort (in memory, or external past the budget). */
        run_all(vm, h);
        ordered_begin(vm, sh, &run->ord);
        run->sorted = true;
    } else {
        /* A block at a time, on this thread, as the rows are asked for. */
        if (!(run->w = mem_calloc(1, sizeof *run->w)))
            vm_throw(vm, v_obj(vm->oom));
        run->wcap = run->nw = 1;
        if (!worker_init(&run->w[0], sh))
            vm_throw(vm, v_obj(vm->oom));
    }
    vm_pop_root(vm, 1);
    return v_obj(h);
}

bool scan_next(VM *vm, Value cursor, Value *row)
{
    Run *run = *(Run **)handle_data(AS_HANDLE(cursor));
    if (!run)
        return false;
    Shared *sh = &run->sh;
    const QScan *sc = sh->sc;
    const unsigned char *r;
    if (run->sorted) {
        if (!(r = ordered_next(vm, sh, &run->ord)))
            return false;
        *row = record_value(vm, sc, r);
        return true;
    }
    Worker *w = &run->w[0];
    while (!run->left) {
        if (run->sent >= sc->limit)
            return false;
        if (!w->r && (run->pi >= sh->parts.n || !part_open(w, run->pi))) {
            if (sh->err[0])
                raise_error(vm, sh->err);
            return false;
        }
        PartRows *pr = run->cur = &sh->rows[run->pi];
        pr->b.len = 0;
        pr->n = 0;
        if (!part_step(w, run->pi))
            part_close(w, run->pi++);
        vm_check_interrupt(vm);
        if (sh->err[0])
            raise_error(vm, sh->err);
        run->off = 0;
        run->left = pr->n < sc->limit - run->sent ? pr->n : sc->limit - run->sent;
    }
    run->left--;
    run->sent++;
    *row = record_value(vm, sc, next_record(sc, run->cur->b.p, &run->off));
    return true;
}

void scan_close(VM *vm, Value cursor)
{
    run_handle_free(vm, handle_data(AS_HANDLE(cursor)));
}

/* ---- explain ----------------------------------------------------------- */

static const char *const consumer_names[] = {
    [QC_COUNT] = "count", [QC_COLLECT] = "rows", [QC_GROUP] = "group", [QC_STAT] = "stat",
    [QC_WRITE] = "write",
};

/* A where as bound (nil: none). */
static Value where_text(VM *vm, const QExpr *e, const st_schema *s)
{
    if (!e)
        return v_nil();
    VStrBuf sb;
    vm_sb_init(vm, &sb, 64);
    qx_show(vm, &sb, e, s);
    return v_obj(vm_sb_done(vm, &sb));
}

Value scan_explain(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    const st_schema *s = sc->vs->s;
    prepare(vm, p);
    VMap *m = vm_map_new(vm, 12);
    Value mv = v_obj(m);
    vm_push_root(vm, mv);
    PartList pl;
    list_parts(vm, sc, &pl);
    uint64_t blocks = 0, kept = 0, cached = 0;
    bool cache = uses_cache(nscans + 1);    /* the scan, were it run now */
    st_nbuf_opts io = with_cache(scan_io);
    st_known_schema known = {s, sc->vs->text, sc->vs->text_len};
    st_err err;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < pl.n; i++) {
        st_reader *r = vm_files_reader(pl.files, pl.p[i].fi, &io, &known, &err);
        if (!r) {
            rc = -1;
            break;
        }
        st_file_info info;
        st_reader_info(r, &info);
        blocks += info.nblocks;
        rc = select_where(sc, r, &err);
        kept += rc < 0 || sc->footer_count ? 0 : st_reader_blocks_kept(r);
        cached += rc < 0 || sc->footer_count || !cache ? 0 : st_reader_blocks_cached(r);
        vm_files_release(pl.files, pl.p[i].fi, r);
    }
    uint32_t nread = pl.n, total = pl.total;
    free_parts(vm, &pl);
    if (rc < 0)
        vm_error(vm, "%s", err.msg);
    set(vm, m, "source", v_obj(vm_str_cstr(vm, sc->src->path)));
    set(vm, m, "partitions", v_int(total));
    set(vm, m, "partitions_read", v_int(nread));
    set(vm, m, "blocks", v_int((int64_t)blocks));
    set(vm, m, "blocks_read", v_int((int64_t)kept));
    set(vm, m, "blocks_cached", v_int((int64_t)cached));
    VArray *cols = vm_array_new(vm, 8);
    set(vm, m, "columns", v_obj(cols));
    for (uint32_t c = 0; !sc->footer_count && c < st_schema_ncols(s); c++)
        if (sc->want[c])
            vm_array_push(vm, cols, v_obj(vm_str_cstr(vm, st_schema_col(s, c)->name)));
    VArray *ranges = vm_array_new(vm, sc->nranges);
    set(vm, m, "zone_ranges", v_obj(ranges));
    for (uint32_t i = 0; i < sc->nranges; i++) {
        const st_field *f = st_schema_col(s, sc->ranges[i].col);
        char lo[64] = "", hi[64] = "", buf[160];
        if (sc->ranges[i].lo)
            st_field_format(f, sc->ranges[i].lo, lo, sizeof lo);
        if (sc->ranges[i].hi)
            st_field_format(f, sc->ranges[i].hi, hi, sizeof hi);
        snprintf(buf, sizeof buf, "%s in [%s, %s]", f->name, sc->ranges[i].lo ? lo : "-inf",
                 sc->ranges[i].hi ? hi : "+inf");
        vm_array_push(vm, ranges, v_obj(vm_str_cstr(vm, buf)));
    }
    set(vm, m, "where", where_text(vm, sc->where, s));
    set(vm, m, "tag_where", where_text(vm, sc->tag_where, s));
    set(vm, m, "rows", v_obj(vm_str_cstr(vm, sc->tags ? "tags" : "tagsets")));
    set(vm, m, "does", v_obj(vm_str_cstr(vm, sc->footer_count ? "count from the footers"
                                                             : consumer_names[sc->consumer])));
    set(vm, m, "threads", v_int(nthreads(sc, nread)));
    VArray *steps = vm_array_new(vm, (size_t)p->nsteps);
    set(vm, m, "then", v_obj(steps));
    for (int i = 0; i < p->nsteps; i++)
        if (p->steps[i].verb != QV_explain)
            vm_array_push(vm, steps, v_obj(vm_str_cstr(vm, vm_verbs[p->steps[i].verb].name)));
    vm_pop_root(vm, 1);
    return mv;
}
