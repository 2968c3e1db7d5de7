/* aggs: a group by's aggregate states, a column per aggregate indexed by
 * group, updated a batch at a time by one typed loop per aggregate and
 * value type (see aggs.h). */
#include "config.h"
#include "vm/query/aggs.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "store/mem.h"
#include "vm/cpu.h"
#include "vm/query/gtable.h"

/* What an aggregate keeps per group (besides n, its values counted). */
typedef enum {
    K_ROWS,     /* count(): n */
    K_COUNTIF,  /* count(PRED): n, the rows where it holds */
    K_SUM,      /* sum, avg: a VSum */
    K_MIN,      /* min, max of ints, bools, floats: a u64 in their order */
    K_MAX,
    K_KMIN,     /* min, max of strings and big ints: the key bytes */
    K_KMAX,
    K_DISTINCT, /* distinct: the count; the (group, value hash) pairs in a table */
    K_VAR,      /* variance, stddev: Welford's mean and m2 */
    K_QUANT,    /* median, quantile: the values, as (group, value) records */
} Kind;

/* A distinct count's pairs met lately, by hash: a value repeated in a
 * group (the usual) is known without a probe of the table. */
#define SEEN 4096
#define BITS (65536 / 64)

typedef struct Quant {
    uint32_t g;
    double x;
} Quant;

struct QAgg {
    const QExpr *e;     /* the QX_AGG */
    Kind kind;
    uint32_t size;      /* bytes of state per group */
    uint32_t w;         /* K_KMIN, K_KMAX, K_DISTINCT: bytes of the argument's key */
    uint32_t cap;       /* groups n and st have room for */
    uint64_t *n;        /* [cap], the block n and st share */
    unsigned char *st;  /* [cap * size], after n */
    GTable *pairs;      /* K_DISTINCT */
    uint64_t *seen;     /* K_DISTINCT: [SEEN] hashes of pairs in pairs, by their low bits */
    bool narrow;        /* the argument is a field of 32 bits or less: a batch's sum fits an int64 */
    uint64_t *bits;     /* K_DISTINCT of one group over a field of 16 bits or less:
                         * [BITS] a bit per value (low 16 bits) seen, not pairs */
    Quant *q;           /* K_QUANT: [nq] */
    size_t nq, qcap;
    double *sorted;     /* K_QUANT once asked: each group's values in a row, */
    size_t *at;         /* group g's from at[g] to at[g + 1] */
    unsigned char *kb;  /* a key's bytes */
};

/* Ints, a u64 field's values, bools and floats: one word in their order. */
static bool word_arg(const QExpr *a)
{
    return (a->type == QT_INT && (!a->big || qx_u64_key(a))) || a->type == QT_BOOL ||
           a->type == QT_FLOAT;
}

static Kind kind_of(const QExpr *e)
{
    switch (e->fn) {
    case QF_count: return e->a ? K_COUNTIF : K_ROWS;
    case QF_sum: case QF_avg: return K_SUM;
    case QF_min: return word_arg(e->a) ? K_MIN : K_KMIN;
    case QF_max: return word_arg(e->a) ? K_MAX : K_KMAX;
    case QF_distinct: return K_DISTINCT;
    case QF_variance: case QF_stddev: return K_VAR;
    default: return K_QUANT;    /* median, quantile */
    }
}

/* A distinct count of a field whose values fit 16 bits (its low 16 bits
 * tell them apart): one bitmap counts them, when there is one group. */
static bool small_field(const st_schema *sch, const QExpr *x)
{
    if (x->op != QX_FIELD || x->field < 0 || x->type == QT_STR || x->type == QT_FLOAT)
        return false;
    switch (sch->fields[x->field].type) {
    case ST_U8: case ST_I8: case ST_U16: case ST_I16: case ST_BOOL: return true;
    default: return false;
    }
}

bool qa_init(QAggs *s, const QScan *sc)
{
    memset(s, 0, sizeof *s);
    s->one = sc->nkeys == 0;
    if (!sc->nagg_list)
        return true;
    if (!(s->a = mem_calloc((size_t)sc->nagg_list, sizeof *s->a)))
        return false;
    s->n = sc->nagg_list;
    for (int i = 0; i < s->n; i++) {
        QAgg *a = &s->a[i];
        a->e = sc->agg_list[i];
        a->kind = kind_of(a->e);
        a->w = a->e->a ? qx_keywidth(a->e->a) : 0;
        switch (a->kind) {
        case K_SUM: a->size = sizeof(VSum); break;
        case K_MIN: case K_MAX: a->size = 8; break;
        case K_KMIN: case K_KMAX: a->size = a->w; break;
        case K_VAR: a->size = sizeof(QVar); break;
        default: a->size = 0; break;
        }
        const QExpr *x = a->e->a;
        a->narrow = x && x->op == QX_FIELD && x->field >= 0 && x->type == QT_INT &&
                    sc->vs->s->fields[x->field].width <= 4;
        if (a->kind == K_DISTINCT && s->one && small_field(sc->vs->s, a->e->a)) {
            if (!(a->bits = mem_calloc(BITS, 8)))
                return false;
        } else if (a->kind == K_DISTINCT) {
            if (!(a->pairs = mem_alloc(sizeof *a->pairs)) ||
                !(a->seen = mem_calloc(SEEN, sizeof *a->seen)))
                return false;
            gt_init(a->pairs, 12);
        }
        if (a->w && !(a->kb = mem_alloc(a->w)))
            return false;
    }
    return true;
}

static void quant_sorted_free(QAgg *a, uint32_t ngroups)
{
    mem_free(a->sorted, a->sorted ? a->nq * sizeof *a->sorted : 0);
    mem_free(a->at, a->at ? ((size_t)ngroups + 1) * sizeof *a->at : 0);
    a->sorted = NULL;
    a->at = NULL;
}

void qa_free(QAggs *s)
{
    for (int i = 0; i < s->n; i++) {
        QAgg *a = &s->a[i];
        mem_free(a->n, (size_t)a->cap * (8 + a->size));
        if (a->pairs) {
            gt_free(a->pairs);
            mem_free(a->pairs, sizeof *a->pairs);
        }
        mem_free(a->seen, a->seen ? SEEN * sizeof *a->seen : 0);
        mem_free(a->bits, a->bits ? BITS * 8 : 0);
        mem_free(a->q, a->qcap * sizeof *a->q);
        quant_sorted_free(a, s->cap);
        mem_free(a->kb, a->w);
    }
    mem_free(s->a, (size_t)s->n * sizeof *s->a);
    memset(s, 0, sizeof *s);
}

bool qa_grow(QAggs *s, uint32_t ngroups)
{
    if (ngroups <= s->cap)
        return true;
    uint32_t cap = s->cap ? s->cap : 64;
    while (cap < ngroups)
        cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
    for (int i = 0; i < s->n; i++) {
        /* n and st in one block: a failure leaves both as they were */
        QAgg *a = &s->a[i];
        size_t each = 8 + a->size;
        unsigned char *m = mem_calloc(cap, each);
        if (!m)
            return false;
        if (a->cap) {
            memcpy(m, a->n, (size_t)a->cap * 8);
            memcpy(m + (size_t)cap * 8, a->st, (size_t)a->cap * a->size);
        }
        mem_free(a->n, (size_t)a->cap * each);
        a->n = (uint64_t *)(void *)m;
        a->st = m + (size_t)cap * 8;
        a->cap = cap;
    }
    s->cap = cap;
    return true;
}

/* ---- the update loops ---------------------------------------------------- */

#define VALID(v, j) (!(v)->valid || (v)->valid[j])

/* Value j of v as comb's number (a big expression's floats included). */
static inline double num_at(const QExpr *a, const KVec *v, uint32_t j)
{
    return a->type == QT_FLOAT || kvec_float(v, j) ? v->f[j] : (double)v->i[j];
}

/* Value j of v (a word_arg) as a u64 in its order. */
static inline uint64_t word_at(const QExpr *a, const KVec *v, uint32_t j)
{
    if (a->type == QT_FLOAT)
        return qx_float_bits(v->f[j]);
    return a->big ? qx_u64_seen((uint64_t)v->i[j]) : (uint64_t)v->i[j] ^ UINT64_C(1) << 63;
}

static void update_sum(QAgg *a, const KVec *v, const uint32_t *gid, uint32_t n)
{
    VSum *s = (VSum *)(void *)a->st;
    if (a->e->a->type == QT_FLOAT) {
        for (uint32_t j = 0; j < n; j++)
            if (VALID(v, j)) {
                v_sum_float(&s[gid[j]], v->f[j]);
                a->n[gid[j]]++;
            }
    } else if (!v->floats) {    /* the usual: ints, without a branch */
        for (uint32_t j = 0; j < n; j++) {
            bool ok = VALID(v, j);
            s[gid[j]].i += ok ? v->i[j] : 0;
            a->n[gid[j]] += ok;
        }
    } else {
        for (uint32_t j = 0; j < n; j++)
            if (VALID(v, j)) {
                if (kvec_float(v, j))
                    v_sum_float(&s[gid[j]], v->f[j]);
                else
                    v_sum_int(&s[gid[j]], v->i[j]);
                a->n[gid[j]]++;
            }
    }
}

static void update_minmax(QAgg *a, const KVec *v, const uint32_t *gid, uint32_t n)
{
    uint64_t *best = (uint64_t *)(void *)a->st;
    bool min = a->kind == K_MIN;
    for (uint32_t j = 0; j < n; j++) {
        if (!VALID(v, j))
            continue;
        uint32_t g = gid[j];
        uint64_t x = word_at(a->e->a, v, j);
        if (!a->n[g]++ || (min ? x < best[g] : x > best[g]))
            best[g] = x;
    }
}

static void update_keyed(QAgg *a, const KVec *v, const uint32_t *gid, uint32_t n)
{
    bool min = a->kind == K_KMIN;
    for (uint32_t j = 0; j < n; j++) {
        if (!VALID(v, j))
            continue;
        uint32_t g = gid[j];
        unsigned char *best = a->st + (size_t)g * a->w;
        k_key(a->e->a, v, j, false, a->kb);
        int c = a->n[g]++ ? memcmp(a->kb, best, a->w) : (min ? -1 : 1);
        if (min ? c < 0 : c > 0)
            memcpy(best, a->kb, a->w);
    }
}

/* Adds the pair (g, value hash h) to a distinct count: false out of memory. */
static bool distinct_add(QAgg *a, uint32_t g, uint64_t h)
{
    unsigned char pair[12];
    memcpy(pair, &g, 4);
    memcpy(pair + 4, &h, 8);
    /* h is a hash already: mixed with g, it is the pair's in the cache */
    uint64_t c = h ^ (uint64_t)g * UINT64_C(0x9E3779B97F4A7C15);
    uint64_t *seen = &a->seen[c & (SEEN - 1)];
    if (*seen == c)     /* (equal 64-bit hashes: the same pair, as distinct has it) */
        return true;
    uint32_t before = a->pairs->n;
    if (gt_find(a->pairs, pair, gt_hash(pair, sizeof pair)) < 0)
        return false;
    a->n[g] += a->pairs->n != before;
    *seen = c;
    return true;
}

static bool update_distinct(QAgg *a, const KVec *v, const uint32_t *gid, uint32_t n)
{
    const QExpr *x = a->e->a;
    bool word = word_arg(x);
    for (uint32_t j = 0; j < n; j++) {
        if (!VALID(v, j))
            continue;
        uint64_t h;
        if (word) {
            h = gt_mix(word_at(x, v, j));
        } else {
            k_key(x, v, j, false, a->kb);
            h = gt_hash(a->kb, a->w);
        }
        if (!distinct_add(a, gid[j], h))
            return false;
    }
    return true;
}

static void update_var(QAgg *a, const KVec *v, const uint32_t *gid, uint32_t n)
{
    QVar *st = (QVar *)(void *)a->st;
    bool floats = a->e->a->type == QT_FLOAT;
    for (uint32_t j = 0; j < n; j++) {
        if (!VALID(v, j))
            continue;
        uint32_t g = gid[j];
        a->n[g]++;
        if (floats || kvec_float(v, j))
            qa_var_float(&st[g], v->f[j]);
        else
            qa_var_int(&st[g], v->i[j]);
    }
}

static bool quant_room(QAgg *a, size_t more)
{
    if (a->nq + more <= a->qcap)
        return true;
    size_t cap = a->qcap ? a->qcap : 1024;
    while (cap < a->nq + more)
        cap *= 2;
    Quant *q = mem_realloc(a->q, a->qcap * sizeof *q, cap * sizeof *q);
    if (!q)
        return false;
    a->q = q;
    a->qcap = cap;
    return true;
}

static bool update_quant(QAgg *a, const KVec *v, const uint32_t *gid, uint32_t n)
{
    if (!quant_room(a, n))
        return false;
    for (uint32_t j = 0; j < n; j++)
        if (VALID(v, j)) {
            a->q[a->nq++] = (Quant){gid[j], num_at(a->e->a, v, j)};
            a->n[gid[j]]++;
        }
    return true;
}

/* ---- one group: loops without group indices ---------------------------- */

/* The least (min) or greatest of y[0 .. n) (n > 0), as signed or
 * unsigned words: plain reductions, made vector code for the host's
 * vector unit where it has one of those named (the baseline x86-64 has
 * no compare of 64-bit words). */
#define REDUCE(T)                                                              \
    do {                                                                       \
        const T *z = (const T *)(const void *)y;                               \
        T b = z[0];                                                            \
        if (min)                                                               \
            for (uint32_t j = 1; j < n; j++)                                   \
                b = z[j] < b ? z[j] : b;                                       \
        else                                                                   \
            for (uint32_t j = 1; j < n; j++)                                   \
                b = z[j] > b ? z[j] : b;                                       \
        return (uint64_t)b;                                                    \
    } while (0)

#define BOUND(name, attrs)                                                     \
    attrs static uint64_t name(const int64_t *y, uint32_t n, bool min, bool u) \
    {                                                                          \
        if (u)                                                                 \
            REDUCE(uint64_t);                                                  \
        REDUCE(int64_t);                                                       \
    }
#define VECTORISED __attribute__((optimize("tree-vectorize")))
BOUND(bound_base, VECTORISED)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* chosen by vm/cpu.c, not target_clones: whose resolver links libgcc's
 * CPUID at every start of comb (docs/GRE.md, start-up) */
BOUND(bound_avx2, VECTORISED __attribute__((target("avx2"))))
BOUND(bound_avx512, VECTORISED __attribute__((target("avx512f"))))
static uint64_t bound(const int64_t *y, uint32_t n, bool min, bool u)
{
    static uint64_t (*f)(const int64_t *, uint32_t, bool, bool);
    if (!f)
        f = vm_cpu_has(VM_CPU_AVX512F) ? bound_avx512
            : vm_cpu_has(VM_CPU_AVX2)  ? bound_avx2
                                       : bound_base;
    return f(y, n, min, u);
}
#else
#define bound bound_base
#endif

/* min and max of all-valid ints (a u64 field's as unsigned words) in
 * one loop each; false when v is not such. */
static bool one_minmax(QAgg *a, const KVec *v, uint32_t n)
{
    const QExpr *x = a->e->a;
    if (x->type == QT_FLOAT || v->floats || (x->big && !qx_u64_key(x)))
        return false;
    uint64_t best = ((uint64_t *)(void *)a->st)[0], w;
    bool min = a->kind == K_MIN;
    /* a loop each way: the other bound would cost as much again */
    if (x->big)     /* u64: qx_u64_seen keeps their order */
        w = qx_u64_seen(bound(v->i, n, min, true));
    else
        w = bound(v->i, n, min, false) ^ UINT64_C(1) << 63;
    if (!a->n[0] || (min ? w < best : w > best))
        ((uint64_t *)(void *)a->st)[0] = w;
    a->n[0] += n;
    return true;
}

/* sum and avg of all-valid ints: false when v is not such. */
static bool one_sum(QAgg *a, const KVec *v, uint32_t n)
{
    if (a->e->a->type == QT_FLOAT || v->floats)
        return false;
    __int128 sum = 0;
    if (a->narrow) {    /* 2^30 values under 2^32 fit an int64: a vector loop */
        for (uint64_t j0 = 0; j0 < n; j0 += 1u << 30) {
            int64_t s64 = 0;
            for (uint64_t j = j0, e = n - j0 > 1u << 30 ? j0 + (1u << 30) : n; j < e; j++)
                s64 += v->i[j];
            sum += s64;
        }
    } else {
        for (uint32_t j = 0; j < n; j++)
            sum += v->i[j];
    }
    v_sum_int((VSum *)(void *)a->st, sum);
    a->n[0] += n;
    return true;
}

static void one_bits(QAgg *a, const KVec *v, uint32_t n)
{
    uint64_t count = a->n[0];
    for (uint32_t j = 0; j < n; j++) {
        if (!VALID(v, j))
            continue;
        uint16_t y = (uint16_t)v->i[j];
        uint64_t m = UINT64_C(1) << (y & 63), *wd = &a->bits[y >> 6];
        count += !(*wd & m);
        *wd |= m;
    }
    a->n[0] = count;
}

/* Aggregate a of one group over v: true if done here. */
static bool update_one(QAgg *a, const KVec *v, uint32_t n)
{
    if (a->bits) {
        one_bits(a, v, n);
        return true;
    }
    if (!v || (v->valid && memchr(v->valid, 0, n)))
        return false;
    switch (a->kind) {
    case K_SUM: return one_sum(a, v, n);
    case K_MIN: case K_MAX: return one_minmax(a, v, n);
    default: return false;
    }
}

bool qa_update(QAggs *s, int i, const KVec *v, const uint32_t *gid, uint32_t n)
{
    QAgg *a = &s->a[i];
    if (s->one && n && update_one(a, v, n))
        return true;
    switch (a->kind) {
    case K_ROWS:
        for (uint32_t j = 0; j < n; j++)
            a->n[gid[j]]++;
        return true;
    case K_COUNTIF:
        for (uint32_t j = 0; j < n; j++)
            a->n[gid[j]] += VALID(v, j) && v->i[j];
        return true;
    case K_SUM: update_sum(a, v, gid, n); return true;
    case K_MIN: case K_MAX: update_minmax(a, v, gid, n); return true;
    case K_KMIN: case K_KMAX: update_keyed(a, v, gid, n); return true;
    case K_DISTINCT: return update_distinct(a, v, gid, n);
    case K_VAR: update_var(a, v, gid, n); return true;
    default: return update_quant(a, v, gid, n);
    }
}

void qa_prefetch(const QAggs *s, uint32_t g)
{
    for (int i = 0; i < s->n; i++) {
        __builtin_prefetch(&s->a[i].n[g]);
        if (s->a[i].size)
            __builtin_prefetch(s->a[i].st + (size_t)g * s->a[i].size);
    }
}

void qa_add_rows(QAggs *s, uint32_t g, uint64_t rows)
{
    for (int i = 0; i < s->n; i++)
        s->a[i].n[g] += rows;
}

/* ---- merging ---------------------------------------------------------------- */

/* Group g's state of from (its count fn, its state fst) into group t of into.
 * fst may be unaligned (a spilled record's bytes): states are copied out. */
static void merge_state(QAgg *into, uint32_t t, uint64_t fn, const unsigned char *fst)
{
    if (!fn)
        return;
    uint64_t tn = into->n[t];
    into->n[t] += fn;
    switch (into->kind) {
    case K_SUM: {
        VSum f;
        memcpy(&f, fst, sizeof f);
        v_sum_merge((VSum *)(void *)into->st + t, &f);
        break;
    }
    case K_MIN: case K_MAX: {
        uint64_t *ib = (uint64_t *)(void *)into->st, fb;
        memcpy(&fb, fst, 8);
        if (!tn || (into->kind == K_MIN ? fb < ib[t] : fb > ib[t]))
            ib[t] = fb;
        break;
    }
    case K_KMIN: case K_KMAX: {
        unsigned char *ib = into->st + (size_t)t * into->w;
        int c = tn ? memcmp(fst, ib, into->w) : (into->kind == K_KMIN ? -1 : 1);
        if (into->kind == K_KMIN ? c < 0 : c > 0)
            memcpy(ib, fst, into->w);
        break;
    }
    case K_VAR: {
        QVar f;
        memcpy(&f, fst, sizeof f);
        qa_var_merge((QVar *)(void *)into->st + t, &f);
        break;
    }
    default:
        break;
    }
}

static bool merge_one(QAgg *into, const QAgg *from, const uint32_t *map, uint32_t ngroups)
{
    if (into->bits) {   /* one group, from's if it has it */
        uint64_t count = 0;
        if (!ngroups)
            return true;
        for (uint32_t i = 0; i < BITS; i++)
            count += (uint64_t)__builtin_popcountll(into->bits[i] |= from->bits[i]);
        into->n[0] = count;
        return true;
    }
    if (into->kind == K_DISTINCT) {
        for (uint32_t p = 0; p < from->pairs->n; p++) {
            const unsigned char *k = gt_key(from->pairs, p);
            uint32_t g;
            uint64_t h;
            memcpy(&g, k, 4);
            memcpy(&h, k + 4, 8);
            if (!distinct_add(into, map[g], h))
                return false;
        }
        return true;
    }
    if (into->kind == K_QUANT) {
        if (!quant_room(into, from->nq))
            return false;
        for (size_t i = 0; i < from->nq; i++)
            into->q[into->nq++] = (Quant){map[from->q[i].g], from->q[i].x};
    }
    for (uint32_t g = 0; g < ngroups; g++)
        merge_state(into, map[g], from->n[g], from->st + (size_t)g * from->size);
    return true;
}

bool qa_merge(QAggs *into, const QAggs *from, const uint32_t *map, uint32_t ngroups)
{
    for (int i = 0; i < into->n; i++)
        if (!merge_one(&into->a[i], &from->a[i], map, ngroups))
            return false;
    return true;
}

/* ---- spilling: a group's states as bytes ------------------------------------ */

bool qa_spillable(const QAggs *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->a[i].kind == K_DISTINCT || s->a[i].kind == K_QUANT)
            return false;
    return true;
}

size_t qa_recw(const QAggs *s)
{
    size_t w = 0;
    for (int i = 0; i < s->n; i++)
        w += 8 + s->a[i].size;
    return w;
}

size_t qa_bytes(const QAggs *s)
{
    size_t b = 0;
    for (int i = 0; i < s->n; i++)
        b += (size_t)s->a[i].cap * (8 + s->a[i].size);
    return b;
}

void qa_save(const QAggs *s, uint32_t g, unsigned char *out)
{
    for (int i = 0; i < s->n; i++) {
        const QAgg *a = &s->a[i];
        memcpy(out, &a->n[g], 8);
        memcpy(out + 8, a->st + (size_t)g * a->size, a->size);
        out += 8 + a->size;
    }
}

void qa_load(QAggs *s, uint32_t g, const unsigned char *in)
{
    for (int i = 0; i < s->n; i++) {
        QAgg *a = &s->a[i];
        uint64_t n;
        memcpy(&n, in, 8);
        merge_state(a, g, n, in + 8);
        in += 8 + a->size;
    }
}

void qa_clear(QAggs *s, uint32_t g)
{
    for (int i = 0; i < s->n; i++) {
        QAgg *a = &s->a[i];
        a->n[g] = 0;
        memset(a->st + (size_t)g * a->size, 0, a->size);
    }
}

/* ---- values --------------------------------------------------------------- */

void qa_var_merge(QVar *into, const QVar *from)
{
    into->ni += from->ni;
    into->s1 += from->s1;
    into->over |= from->over || __builtin_add_overflow(into->s2, from->s2, &into->s2);
    if (from->nf) {     /* Chan et al.: two means and m2s into one */
        double d = from->mean - into->mean, nt = (double)(into->nf + from->nf);
        into->mean += d * (double)from->nf / nt;
        into->m2 += from->m2 + d * d * (double)into->nf * (double)from->nf / nt;
        into->nf += from->nf;
    }
}

Value qa_var_value(VM *vm, const QExpr *ag, const QVar *v)
{
    uint64_t n = v->ni + v->nf;
    if (n < 2)
        return v_nil();
    if (v->over)
        qx_error(vm, ag, "integer overflow in %s", vm_query_funcs[ag->fn].name);
    /* the ints' m2 is (ni * s2 - s1^2) / ni, exact in the numerator when it fits */
    __int128 ns2, s1s1, num;
    long double m2i = 0, meani = 0;
    if (v->ni) {
        meani = (long double)v->s1 / (long double)v->ni;
        if (!__builtin_mul_overflow((__int128)v->ni, v->s2, &ns2) &&
            !__builtin_mul_overflow(v->s1, v->s1, &s1s1) && !__builtin_sub_overflow(ns2, s1s1, &num))
            m2i = (long double)num / (long double)v->ni;
        else
            m2i = (long double)v->s2 - (long double)v->s1 * meani;
    }
    long double m2 = m2i;
    if (v->nf) {
        long double d = (long double)v->mean - meani;
        m2 += (long double)v->m2 + (v->ni ? d * d * (long double)v->ni * (long double)v->nf / (long double)n : 0);
    }
    double var = (double)((m2 > 0 ? m2 : 0) / (long double)(n - 1));
    return v_float(ag->fn == QF_stddev ? sqrt(var) : var);
}

/* Reorders v[0 .. n) (numbers, no NaN) so that v[k] is the value sort
 * would put there, the ones before it not after it and those after not
 * before (Hoare's select, median of three). */
static void select_kth(double *v, size_t n, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;
    while (hi > lo) {
        ptrdiff_t mid = lo + (hi - lo) / 2;
        if (v[mid] < v[lo]) { double t = v[mid]; v[mid] = v[lo]; v[lo] = t; }
        if (v[hi] < v[lo]) { double t = v[hi]; v[hi] = v[lo]; v[lo] = t; }
        if (v[hi] < v[mid]) { double t = v[hi]; v[hi] = v[mid]; v[mid] = t; }
        double p = v[mid];
        ptrdiff_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < p)
                i++;
            while (p < v[j])
                j--;
            if (i <= j) {
                double t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (kk <= j)
            hi = j;
        else if (kk >= i)
            lo = i;
        else
            return;
    }
}

double qa_quantile(double *v, size_t n, double q)
{
    /* NaN comes after every number, as sort has it: moved to the end
     * first, the numbers are selected by plain compares */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(v[i])) {
            double t = v[m];
            v[m++] = v[i];
            v[i] = t;
        }
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo >= m)
        return NAN;
    select_kth(v, m, lo);
    if (lo + 1 >= n || pos == (double)lo)
        return v[lo];
    if (lo + 1 >= m)    /* the next is a NaN */
        return NAN;
    double next = v[lo + 1];    /* the least of those after lo */
    for (size_t i = lo + 2; i < m; i++)
        next = v[i] < next ? v[i] : next;
    return v[lo] + (pos - (double)lo) * (next - v[lo]);
}

/* The values of a K_QUANT in a row per group (once): a counting sort. */
static bool quant_sort(QAgg *a, uint32_t ngroups)
{
    if (a->at)
        return true;
    a->at = mem_calloc((size_t)ngroups + 1, sizeof *a->at);
    a->sorted = mem_alloc(a->nq * sizeof *a->sorted + 1);
    if (!a->at || !a->sorted) {
        quant_sorted_free(a, ngroups);
        return false;
    }
    for (uint32_t g = 0; g < ngroups; g++)
        a->at[g + 1] = a->at[g] + a->n[g];
    for (size_t i = 0; i < a->nq; i++)
        a->sorted[a->at[a->q[i].g]++] = a->q[i].x;
    for (uint32_t g = ngroups; g > 0; g--)  /* at[g] ran to the next's start */
        a->at[g] = a->at[g - 1];
    a->at[0] = 0;
    return true;
}

Value qa_value(VM *vm, const QAggs *s, int i, uint32_t g)
{
    QAgg *a = &s->a[i];
    const QExpr *e = a->e;
    uint64_t n = a->n[g];
    Value r;
    switch (a->kind) {
    case K_ROWS: case K_COUNTIF: return v_int((int64_t)n);
    case K_DISTINCT: return v_int((int64_t)n);
    case K_SUM: {
        const VSum *sum = (const VSum *)(const void *)a->st + g;
        if (!n)
            return v_nil();
        if (e->fn == QF_avg)
            return v_float(v_sum_mean(sum, n));
        if (!v_sum_value(sum, &r))
            qx_error(vm, e, "integer overflow in sum");
        return r;
    }
    case K_MIN: case K_MAX: {
        uint64_t x = ((const uint64_t *)(const void *)a->st)[g];
        if (!n)
            return v_nil();
        if (e->a->type == QT_FLOAT)
            return v_float(qx_bits_float(x));
        if (e->a->big)  /* a u64 above the ints is the float comb reads */
            return x > INT64_MAX ? v_float((double)x) : v_int((int64_t)x);
        int64_t iv = (int64_t)(x ^ UINT64_C(1) << 63);
        return e->a->type == QT_BOOL ? v_bool(iv != 0) : v_int(iv);
    }
    case K_KMIN: case K_KMAX:
        return n ? qx_key_value(vm, e->a, a->st + (size_t)g * a->w) : v_nil();
    case K_VAR:
        return qa_var_value(vm, e, (const QVar *)(const void *)a->st + g);
    default:
        if (!n)
            return v_nil();
        if (!quant_sort(a, s->cap))
            vm_throw(vm, v_obj(vm->oom));
        return v_float(qa_quantile(a->sorted + a->at[g], n, e->fn == QF_median ? 0.5 : e->kf));
    }
}
