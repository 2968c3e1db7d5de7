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
#include "vm/mathlib.h"
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
    K_QUANT,    /* median, quantile: a QList of the values (ints kept ints) */
} Kind;

/* A quantile's values: each group's first QIN in its state, the others in
 * a list of chunks (each twice the last from 4, up to QCHUNK values)
 * carved from slabs the aggregate owns, so that a value is stored once,
 * where its group's are: no (group, value) records, no sort of them by
 * group, no copy of the chunks when workers merge (their lists are
 * joined, their slabs handed over), and a group of a few values (many
 * groups, as by a call) needs no chunk to reach. Words: ints while every
 * value is one, else floats (the ints made floats when a float came). */
typedef union QWord {
    int64_t i;
    double f;
} QWord;

typedef struct QChunk {
    struct QChunk *next;    /* the group's older chunk */
    uint32_t n, cap;
    QWord v[];
} QChunk;

#define QIN 2

typedef struct QList {
    QChunk *head, *tail;    /* the newest (the one with room), the oldest */
    QWord in[QIN];          /* the first values, [nin] */
    uint32_t nin;
} QList;

typedef struct QSlab {
    struct QSlab *next;
    size_t size, used;      /* bytes, after the header */
} QSlab;

#define QCHUNK 8192
#define QSLAB (64u << 10)

/* A distinct count's pairs met lately, by hash: a value repeated in a
 * group (the usual) is known without a probe of the table. */
#define SEEN 4096
#define BITS (65536 / 64)

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
    QSlab *slabs;       /* K_QUANT: where its chunks are, the one in use first */
    size_t nslabs;
    bool floats;        /* K_QUANT: the words are floats */
    QWord *row;         /* K_QUANT asked: a group's values in a row, [nrow] */
    size_t nrow;
    uint64_t *hist;     /* the ints' radix select's counts, [QA_HIST] */
    unsigned char *kb;  /* a key's bytes */
    /* K_MIN, K_MAX of an enum field: each code's rank among the keys of
     * the symbols (and "?" past them) in sort's order, [256], and the key
     * of each rank, [256 * w]: the words are ranks */
    uint8_t *rank;
    unsigned char *keyof;
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

/* An enum field's min or max as a K_MIN or K_MAX of its codes' ranks
 * (a compare of words a row, not of keys): the ranks and their keys.
 * false: out of memory. */
static bool enum_ranks(QAgg *a, const st_schema *sch)
{
    const QExpr *x = a->e->a;
    if (x->op != QX_FIELD || x->field < 0 || !x->is_enum || sch->fields[x->field].type != ST_ENUM)
        return true;
    uint32_t ns = sch->fields[x->field].nsyms, w = a->w;
    if (!(a->rank = mem_alloc(256)) || !(a->keyof = mem_calloc(256, w)))
        return false;
    /* each code's key as k_key makes it (codes past the symbols read "?") */
    unsigned char *keys = mem_alloc((size_t)256 * w);
    if (!keys)
        return false;
    for (uint32_t c = 0; c < 256; c++) {
        const char *sym = c < ns ? sch->fields[x->field].syms[c] : "?";
        size_t len = strlen(sym);
        unsigned char *k = keys + (size_t)c * w;
        memset(k, 0, w);
        k[0] = 1;
        memcpy(k + 1, sym, len < w - 1 ? len : w - 1);
    }
    /* the codes in the keys' order (insertion: 256 of them), then each
     * its rank, equal keys one */
    uint8_t ord[256];
    for (uint32_t c = 0; c < 256; c++) {
        uint32_t i = c;
        for (; i > 0 && memcmp(keys + (size_t)ord[i - 1] * w, keys + (size_t)c * w, w) > 0; i--)
            ord[i] = ord[i - 1];
        ord[i] = (uint8_t)c;
    }
    for (uint32_t i = 0, r = 0; i < 256; i++) {
        const unsigned char *k = keys + (size_t)ord[i] * w;
        r += i && memcmp(k, keys + (size_t)ord[i - 1] * w, w) != 0;
        a->rank[ord[i]] = (uint8_t)r;
        memcpy(a->keyof + (size_t)r * w, k, w);
    }
    mem_free(keys, (size_t)256 * w);
    a->kind = a->kind == K_KMIN ? K_MIN : K_MAX;
    a->size = 8;
    return true;
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
        case K_QUANT: a->size = sizeof(QList); break;
        default: a->size = 0; break;
        }
        if ((a->kind == K_KMIN || a->kind == K_KMAX) && !enum_ranks(a, sc->vs->s))
            return false;
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
        a->floats = x && x->type == QT_FLOAT;
    }
    return true;
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
        while (a->slabs) {
            QSlab *next = a->slabs->next;
            mem_free(a->slabs, sizeof *a->slabs + a->slabs->size);
            a->slabs = next;
        }
        mem_free(a->row, a->nrow * 8);
        mem_free(a->hist, a->hist ? QA_HIST * sizeof *a->hist : 0);
        mem_free(a->kb, a->w);
        mem_free(a->rank, a->rank ? 256 : 0);
        mem_free(a->keyof, a->keyof ? (size_t)256 * a->w : 0);
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
    uint64_t *best = (uint64_t *)(void *)a->st, *cnt = a->n;
    bool min = a->kind == K_MIN;
    const QExpr *e = a->e->a;
    if (!a->rank && e->type == QT_INT && !e->big) {
        /* the usual, ints: the state's fields in registers (a count's
         * store could be a size_t of a's), the best stored without a branch
         * (with many groups, whether a value beats its group's is a coin) */
        const int64_t *in = v->i;
        const uint8_t *valid = v->valid;
        for (uint32_t j = 0; j < n; j++) {
            if (valid && !valid[j])
                continue;
            uint32_t g = gid[j];
            uint64_t x = (uint64_t)in[j] ^ UINT64_C(1) << 63, b = best[g];
            best[g] = !cnt[g]++ || (min ? x < b : x > b) ? x : b;
        }
        return;
    }
    for (uint32_t j = 0; j < n; j++) {
        if (!VALID(v, j))
            continue;
        uint32_t g = gid[j];
        uint64_t x = a->rank ? a->rank[(uint8_t)v->i[j]] : word_at(e, v, j);
        if (!cnt[g]++ || (min ? x < best[g] : x > best[g]))
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
    if (a->narrow && !v->floats) {
        /* a field of 32 bits or less: a square fits a u64, and the sum of
         * squares fits the 128 bits without a test (2^64 of them would not) */
        for (uint32_t j = 0; j < n; j++) {
            bool ok = VALID(v, j);
            int64_t x = ok ? v->i[j] : 0;
            QVar *q = &st[gid[j]];
            q->ni += ok;
            q->s1 += x;
            q->s2 += (uint64_t)x * (uint64_t)x;
            a->n[gid[j]] += ok;
        }
        return;
    }
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

/* A new chunk at the head of list l, twice its last (4 values for the
 * first, QCHUNK at most): NULL out of memory. */
static QChunk *quant_chunk(QAgg *a, QList *l)
{
    uint32_t cap = l->head ? l->head->cap * 2 : 4;
    cap = cap > QCHUNK ? QCHUNK : cap;
    size_t bytes = sizeof(QChunk) + (size_t)cap * sizeof(QWord);
    QSlab *sl = a->slabs;
    if (!sl || sl->size - sl->used < bytes) {
        /* slabs of 64 KiB, doubling to 4 MiB: few for a few values */
        size_t size = (size_t)QSLAB << (a->nslabs < 6 ? a->nslabs : 6);
        size = size < bytes ? bytes : size;
        if (!(sl = mem_alloc(sizeof *sl + size)))
            return NULL;
        sl->next = a->slabs;
        sl->size = size;
        sl->used = 0;
        a->slabs = sl;
        a->nslabs++;
    }
    QChunk *c = (QChunk *)(void *)((unsigned char *)(sl + 1) + sl->used);
    sl->used += bytes;
    c->next = l->head;
    c->n = 0;
    c->cap = cap;
    if (!l->head)
        l->tail = c;
    l->head = c;
    return c;
}

/* A K_QUANT's ints made floats, when a float comes (a u64 above the ints,
 * or a big expression's arithmetic). */
static void quant_floats(QAgg *a)
{
    QList *l = (QList *)(void *)a->st;
    for (uint32_t g = 0; !a->floats && g < a->cap; g++) {
        for (uint32_t i = 0; i < l[g].nin; i++)
            l[g].in[i].f = (double)l[g].in[i].i;
        for (QChunk *c = l[g].head; c; c = c->next)
            for (uint32_t i = 0; i < c->n; i++)
                c->v[i].f = (double)c->v[i].i;
    }
    a->floats = true;
}

/* Adds w to list q: false out of memory. */
static inline bool quant_put(QAgg *a, QList *q, QWord w)
{
    if (q->nin < QIN) {
        q->in[q->nin++] = w;
        return true;
    }
    QChunk *c = q->head;
    if ((!c || c->n == c->cap) && !(c = quant_chunk(a, q)))
        return false;
    c->v[c->n++] = w;
    return true;
}

/* Folds v's valid values into their groups' lists. */
static bool update_quant(QAgg *a, const KVec *v, const uint32_t *gid, uint32_t n)
{
    const QExpr *x = a->e->a;
    QList *l = (QList *)(void *)a->st;
    if (v->floats && !a->floats)
        quant_floats(a);
    bool floats = a->floats;    /* a local: the stores below could alias a */
    for (uint32_t j = 0; j < n; j++) {
        if (!VALID(v, j))
            continue;
        uint32_t g = gid[j];
        QWord w;
        if (floats)
            w.f = num_at(x, v, j);
        else
            w.i = v->i[j];
        if (!quant_put(a, &l[g], w))
            return false;
        a->n[g]++;
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
    if (a->rank || x->type == QT_FLOAT || v->floats || (x->big && !qx_u64_key(x)))
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
    case K_ROWS: {
        /* runs of one group's rows (a tagset's tags by a tagset field, as
         * the batch's first rows show) added at once: each row's store
         * would wait on the last's; else row by row (no test a row) */
        uint64_t *cnt = a->n;
        uint32_t same = 0, look = n < 64 ? n : 64;
        for (uint32_t j = 1; j < look; j++)
            same += gid[j] == gid[j - 1];
        if (4 * same < look) {
            for (uint32_t j = 0; j < n; j++)
                cnt[gid[j]]++;
            return true;
        }
        for (uint32_t j = 0, k; j < n; j = k) {
            for (k = j + 1; k < n && gid[k] == gid[j]; k++)
                ;
            cnt[gid[j]] += k - j;
        }
        return true;
    }
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
        if (s->a[i].kind == K_QUANT) {  /* its newest chunk too (a load that
                                         * waits, but nothing waits on it) */
            const QChunk *c = ((const QList *)(const void *)s->a[i].st)[g].head;
            if (c)
                __builtin_prefetch(c);
        }
    }
}

int qa_rows_at(const QAggs *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->a[i].kind == K_ROWS)
            return i;
    return -1;
}

uint64_t qa_count(const QAggs *s, int i, uint32_t g)
{
    return s->a[i].n[g];
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

static bool merge_one(QAgg *into, QAgg *from, const uint32_t *map, uint32_t ngroups)
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
            if (!distinct_add(into, map ? map[g] : g, h))
                return false;
        }
        return true;
    }
    if (into->kind == K_QUANT) {
        /* from's lists joined to into's (after their chunk with room),
         * and its slabs handed over (after the one in use) */
        if (from->floats && !into->floats)
            quant_floats(into);
        if (into->floats && !from->floats)
            quant_floats(from);
        QList *il = (QList *)(void *)into->st, *fl = (QList *)(void *)from->st;
        for (uint32_t g = 0; g < ngroups; g++) {
            QList *t = &il[map ? map[g] : g], *f = &fl[g];
            for (uint32_t k = 0; k < f->nin; k++)
                if (!quant_put(into, t, f->in[k]))
                    return false;
            f->nin = 0;
            if (!f->head)
                continue;
            if (t->head)
                t->tail->next = f->head;
            else
                t->head = f->head;
            t->tail = f->tail;
            f->head = f->tail = NULL;
        }
        if (from->slabs) {
            QSlab *last = from->slabs;
            while (last->next)
                last = last->next;
            QSlab **at = into->slabs ? &into->slabs->next : &into->slabs;
            last->next = *at;
            *at = from->slabs;
            into->nslabs += from->nslabs;
            from->slabs = NULL;
            from->nslabs = 0;
        }
    }
    for (uint32_t g = 0; g < ngroups; g++)
        merge_state(into, map ? map[g] : g, from->n[g], from->st + (size_t)g * from->size);
    return true;
}

bool qa_merge(QAggs *into, QAggs *from, const uint32_t *map, uint32_t ngroups)
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
    return v_float(ag->fn == QF_stddev ? vm_math_sqrt(var) : var);
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

/* Sorts v[0 .. n) (a few values) by insertion. */
static void sort_few(int64_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        int64_t x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

#define SIGN (UINT64_C(1) << 63)    /* an int ^ SIGN: a u64 in the ints' order */

/* The k-th least (from 0) of v[0 .. n), k < n, by radix select: the
 * values counted by their top bits above the least (as many counts as
 * about the values, QA_HIST at most: a small group clears few), then the
 * values of the count that holds the k-th moved to the front and counted
 * by their next bits, and so on: passes that read the values, where a
 * sort or Hoare's select moves them many times (values of a range of 2^16
 * are done in one). Reorders v, keeping its values. */
static int64_t select_int(int64_t *v, size_t n, size_t k, uint64_t *hist)
{
    while (n > 16) {
        uint64_t lo = (uint64_t)v[0] ^ SIGN, hi = lo;
        for (size_t i = 1; i < n; i++) {
            uint64_t u = (uint64_t)v[i] ^ SIGN;
            lo = u < lo ? u : lo;
            hi = u > hi ? u : hi;
        }
        if (lo == hi)
            return v[0];
        int span = 64 - __builtin_clzll(hi - lo), bits = 64 - __builtin_clzll(n);
        bits = bits > QA_BITS ? QA_BITS : bits;
        bits = bits > span ? span : bits;
        int shift = span - bits;
        memset(hist, 0, ((size_t)1 << bits) * sizeof *hist);
        for (size_t i = 0; i < n; i++)
            hist[(((uint64_t)v[i] ^ SIGN) - lo) >> shift]++;
        uint64_t b = 0;
        while (hist[b] <= k)
            k -= hist[b++];
        if (!shift)
            return (int64_t)((lo + b) ^ SIGN);
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if ((((uint64_t)v[i] ^ SIGN) - lo) >> shift == b) {
                int64_t t = v[m];
                v[m++] = v[i];
                v[i] = t;
            }
        n = m;
    }
    sort_few(v, n);
    return v[k];
}

double qa_quantile_int(int64_t *v, size_t n, double q, uint64_t *hist)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    int64_t x = select_int(v, n, lo, hist);
    if (lo + 1 >= n || pos == (double)lo)
        return (double)x;
    /* the next value: x again if more than lo + 1 are at most x, else
     * the least above it (one pass, no branch) */
    size_t le = 0;
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        le += v[i] <= x;
        next = v[i] > x && v[i] < next ? v[i] : next;
    }
    double a = (double)x, b = (double)(le > lo + 1 ? x : next);
    return a + (pos - (double)lo) * (b - a);
}

/* Group g's values in a row: its first ones when they are all, its one
 * chunk, or a->row with them all (the list is then left as it was). NULL
 * out of memory. */
static QWord *quant_row(QAgg *a, uint32_t g, uint64_t n)
{
    QList *q = &((QList *)(void *)a->st)[g];
    QChunk *c = q->head;
    if (!c)
        return q->in;
    if (!q->nin && !c->next)
        return c->v;
    if (n > a->nrow) {
        mem_free(a->row, a->nrow * 8);
        a->nrow = 0;
        if (!(a->row = mem_alloc(n * 8)))
            return NULL;
        a->nrow = n;
    }
    QWord *w = a->row;
    memcpy(w, q->in, q->nin * sizeof *w);
    for (size_t at = q->nin; c; at += c->n, c = c->next)
        memcpy(w + at, c->v, c->n * sizeof *c->v);
    return w;
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
        if (a->rank)
            return qx_key_value(vm, e->a, a->keyof + x * a->w);
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
        QWord *w = quant_row(a, g, n);
        if (!w || (!a->hist && !(a->hist = mem_alloc(QA_HIST * sizeof *a->hist))))
            vm_throw(vm, v_obj(vm->oom));
        double q = e->fn == QF_median ? 0.5 : e->kf;
        if (a->floats)
            return v_float(qa_quantile(&w->f, n, q));
        return v_float(qa_quantile_int(&w->i, n, q, a->hist));
    }
}
