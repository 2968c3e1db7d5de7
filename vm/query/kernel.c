/* kernel: query expressions over the column vectors of a decoded block,
 * a vector at a time: filters narrow a selection vector (row indices),
 * values fill typed vectors. Comparisons of a field with a constant run as
 * one tight loop per storage type; everything else evaluates its operands
 * to vectors first. Kernels run on scan threads: they never call the VM;
 * an error (overflow, division by zero, no memory) is left in k->err. */
#include "config.h"
#include "vm/query/qplan.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <string.h>

#include "store/mem.h"

/* Loops over a column made vector code (-O2 alone leaves most of them a
 * row at a time: a copy that widens u16s to int64s, a test of each value). */
#if defined(__GNUC__) && !defined(__clang__)
#define VECTOR_LOOPS __attribute__((optimize("tree-vectorize")))
#else
#define VECTOR_LOOPS
#endif

/* Scratch per expression node: its value vector and selections. */
#define NSEL 4

typedef struct Slot {
    KVec v;
    uint32_t *sel[NSEL];
} Slot;

static void free_slots(KCtx *k)
{
    Slot *s = (Slot *)k->vecs;
    for (int i = 0; s && i < k->scan->nslots; i++) {
        mem_free(s[i].v.i, k->vec_cap * 8);
        mem_free(s[i].v.f, k->vec_cap * 8);
        mem_free(s[i].v.sp, k->vec_cap * sizeof(char *));
        mem_free(s[i].v.sl, k->vec_cap * 4);
        mem_free(s[i].v.valid, k->vec_cap);
        mem_free(s[i].v.isf, k->vec_cap);
        for (int j = 0; j < NSEL; j++)
            mem_free(s[i].sel[j], k->vec_cap * 4);
        memset(&s[i], 0, sizeof s[i]);
    }
}

/* Does e read a tagset field for tag rows (which needs each tag's tagset)? */
static bool reads_up(const QExpr *e, const st_schema *s, bool tag)
{
    if (!e)
        return false;
    if (e->op == QX_FIELD)
        return tag && s->fields[e->field].role != ST_TAG;
    if (e->op == QX_QUANT)
        return reads_up(e->a, s, true);
    return reads_up(e->a, s, tag) || reads_up(e->b, s, tag) || reads_up(e->c, s, tag);
}

static bool scan_needs_owner(const QScan *sc)
{
    const st_schema *s = sc->vs->s;
    /* group by and count read tag rows' tagsets only through fields */
    bool need = (sc->tags && sc->consumer != QC_GROUP && sc->consumer != QC_COUNT) ||
                reads_up(sc->where, s, false) || reads_up(sc->tag_where, s, true);
    for (int i = 0; i < sc->nsort; i++)
        need |= reads_up(sc->sort[i].e, s, sc->tags);
    for (int i = 0; i < sc->nkeys; i++)
        need |= reads_up(sc->keys[i], s, sc->tags);
    for (int i = 0; i < sc->nagg_list; i++)
        need |= reads_up(sc->agg_list[i]->a, s, sc->tags);
    return need;
}

int k_ctx_init(KCtx *k, const QScan *scan)
{
    memset(k, 0, sizeof *k);
    k->scan = scan;
    k->need_owner = scan_needs_owner(scan);
    k->s = scan->vs->s;
    k->vecs = mem_calloc((size_t)scan->nslots + 1, sizeof(Slot));
    k->md = pcre2_match_data_create(1, NULL);
    return k->vecs && k->md ? 0 : -1;
}

void k_ctx_free(KCtx *k)
{
    free_slots(k);
    mem_free(k->vecs, ((size_t)k->scan->nslots + 1) * sizeof(Slot));
    mem_free(k->owner, k->owner_cap * 4);
    for (int i = 0; i < KSELBUFS; i++)
        mem_free(k->selbuf[i], k->sel_cap * 4);
    if (k->md)
        pcre2_match_data_free(k->md);
    memset(k, 0, sizeof *k);
}

void k_ctx_keep(QScan *scan, KCtx *k)
{
    if (!scan->idle_k)
        scan->idle_k = mem_alloc(QS_MAX_THREADS * sizeof *scan->idle_k);
    if (!scan->idle_k || scan->nidle_k == QS_MAX_THREADS || !k->vecs) {
        k_ctx_free(k);
        return;
    }
    k->b = NULL;
    k->err[0] = 0;
    scan->idle_k[scan->nidle_k++] = *k;
    memset(k, 0, sizeof *k);
}

int k_ctx_take(KCtx *k, QScan *scan)
{
    if (!scan->nidle_k)
        return k_ctx_init(k, scan);
    *k = scan->idle_k[--scan->nidle_k];
    return 0;
}

void k_ctx_drop(QScan *scan)
{
    while (scan->nidle_k)
        k_ctx_free(&scan->idle_k[--scan->nidle_k]);
    mem_free(scan->idle_k, scan->idle_k ? QS_MAX_THREADS * sizeof *scan->idle_k : 0);
    scan->idle_k = NULL;
}

static void *slot_buf(KCtx *k, void **p, size_t size)
{
    if (!*p && !(*p = mem_alloc(k->vec_cap * size + 1)))
        snprintf(k->err, sizeof k->err, "out of memory in a scan");
    return *p;
}

static Slot *slot(KCtx *k, const QExpr *e)
{
    return &((Slot *)k->vecs)[e->slot];
}

/* The tag starts of the batch (its own, or built from the counts). */
static const uint32_t *tag_start(KCtx *k)
{
    if (k->b->tag_start)
        return k->b->tag_start;
    return k->selbuf[0];
}

int k_batch(KCtx *k, const st_batch *b)
{
    k->b = b;
    size_t rows = b->ntagsets > b->ntags ? b->ntagsets : b->ntags;
    if (rows + 1 > k->vec_cap) {
        free_slots(k);
        for (int i = 0; i < KSELBUFS; i++)
            mem_free(k->selbuf[i], k->sel_cap * 4);
        k->vec_cap = k->sel_cap = (rows + 1) * 5 / 4;
        for (int i = 0; i < KSELBUFS; i++)
            if (!(k->selbuf[i] = mem_alloc(k->sel_cap * 4))) {
                snprintf(k->err, sizeof k->err, "out of memory in a scan");
                return -1;
            }
    }
    const void *counts = k->s->tag_size ? b->cols[k->s->nfields] : NULL;
    if (!counts)
        return 0;
    if (!b->tag_start) {
        uint32_t sum = 0;
        for (uint32_t t = 0; t < b->ntagsets; t++) {
            uint32_t c;
            memcpy(&c, (const char *)counts + 4 * (size_t)t, 4);
            k->selbuf[0][t] = sum;
            sum += c;
        }
        k->selbuf[0][b->ntagsets] = sum;
    }
    if (!k->need_owner)
        return 0;
    if (b->ntags > k->owner_cap) {
        mem_free(k->owner, k->owner_cap * 4);
        k->owner_cap = (size_t)b->ntags * 5 / 4 + 1;
        if (!(k->owner = mem_alloc(k->owner_cap * 4))) {
            k->owner_cap = 0;
            snprintf(k->err, sizeof k->err, "out of memory in a scan");
            return -1;
        }
    }
    /* a mark at each tagset's first tag (tagsets without tags share it),
     * then a running sum: no branch per tagset on its count */
    const uint32_t *st = tag_start(k);
    uint32_t *own = k->owner, nt = b->ntags, ns = b->ntagsets, sum = 0;
    memset(own, 0, (size_t)nt * 4);
    for (uint32_t t = 1; t < ns; t++)
        if (st[t] < nt)
            own[st[t]]++;
    for (uint32_t i = 0; i < nt; i++)   /* locals: own's stores could alias b */
        own[i] = sum += own[i];
    return 0;
}

/* ---- fields --------------------------------------------------------------- */

/* The index in field f's column of row r (a tag when tag). */
static inline uint32_t at(const KCtx *k, const st_field *f, bool tag, uint32_t r)
{
    return tag && f->role != ST_TAG ? k->owner[r] : r;
}

/* One gather loop per storage type: row j's value is column value
 * idx[j] (its tag's or its tagset's), or, for rows in one run, value
 * first + j (a loop the compiler widens a vector at a time). */
#define GATHER(T, CT)                                                              \
    do {                                                                           \
        const T *c = (const T *)(const void *)col;                                 \
        if (run)                                                                   \
            for (uint32_t j = 0; j < n; j++)                                       \
                out[j] = (CT)c[first + j];                                         \
        else if (own)                                                              \
            for (uint32_t j = 0; j < n; j++)                                       \
                out[j] = (CT)c[own[idx[j]]];                                       \
        else                                                                       \
            for (uint32_t j = 0; j < n; j++)                                       \
                out[j] = (CT)c[idx[j]];                                            \
    } while (0)

VECTOR_LOOPS static void gather_int(const st_field *f, const char *col, bool run, uint32_t first,
                       const uint32_t *own, const uint32_t *idx, uint32_t n, int64_t *out)
{
    switch (f->type) {
    case ST_U8: case ST_BOOL: case ST_ENUM: GATHER(uint8_t, int64_t); break;
    case ST_U16: GATHER(uint16_t, int64_t); break;
    case ST_U32: GATHER(uint32_t, int64_t); break;
    case ST_I8: GATHER(int8_t, int64_t); break;
    case ST_I16: GATHER(int16_t, int64_t); break;
    case ST_I32: GATHER(int32_t, int64_t); break;
    default:
        if (run)    /* the column's own words */
            memcpy(out, col + (size_t)first * 8, (size_t)n * 8);
        else
            GATHER(int64_t, int64_t);
        break;
    }
}

VECTOR_LOOPS static void gather_float(const st_field *f, const char *col, bool run, uint32_t first,
                         const uint32_t *own, const uint32_t *idx, uint32_t n, double *out)
{
    if (f->type == ST_F32)
        GATHER(float, double);
    else
        GATHER(double, double);
}

/* Whether idx[0 .. n) is idx[0], idx[0] + 1, ...: a loop without an
 * exit, made vector code. */
VECTOR_LOOPS static bool is_run(const uint32_t *idx, uint32_t n)
{
    uint32_t off = 0, first = idx[0];
    for (uint32_t j = 0; j < n; j++)
        off |= idx[j] ^ (first + j);
    return !off;
}

static void eval_field(KCtx *k, const QExpr *e, bool tag, const KSel *in, KVec *v)
{
    const st_field *f = &k->s->fields[e->field];
    const char *col = k->b->cols[e->field];
    uint32_t w = f->width, n = in->n;
    const uint32_t *idx = in->idx, *own = tag && f->role != ST_TAG ? k->owner : NULL;
    /* a run of rows: first and last n - 1 apart, and each its place (a
     * quantifier's picks are not in order: rows without a tag read 0) */
    uint32_t first = n ? idx[0] : 0;
    bool run = !own && n && idx[n - 1] - first == n - 1 && is_run(idx, n);
    if (e->type == QT_FLOAT) {
        gather_float(f, col, run, first, own, idx, n, v->f);
        return;
    }
    if (e->type != QT_STR) {
        gather_int(f, col, run, first, own, idx, n, v->i);
        return;
    }
    if (f->type == ST_ENUM) {   /* (an enum's vector has i: alloc_vec) */
        /* the codes as ints, then each its symbol from tables made once
         * per batch (past the symbols, "?"): loops without a branch */
        const char *sym[256];
        uint32_t symlen[256];
        for (uint32_t s = 0; s < 256; s++) {
            sym[s] = s < f->nsyms ? f->syms[s] : "?";
            symlen[s] = s < f->nsyms ? (uint32_t)strlen(f->syms[s]) : 1;
        }
        gather_int(f, col, run, first, own, idx, n, v->i);
        for (uint32_t j = 0; j < n; j++) {
            uint8_t s = (uint8_t)v->i[j];
            v->sp[j] = sym[s];
            v->sl[j] = symlen[s];
        }
        return;
    }
    for (uint32_t j = 0; j < n; j++) {
        const char *p = col + (size_t)at(k, f, tag, idx[j]) * w;
        const char *z = memchr(p, 0, w);
        v->sp[j] = p;
        v->sl[j] = z ? (uint32_t)(z - p) : w;
    }
}

/* ---- filters -------------------------------------------------------------- */

static void filter(KCtx *k, const QExpr *e, bool tag, const KSel *in, KSel *out);
static const KVec *evaluate(KCtx *k, const QExpr *e, bool tag, const KSel *in);

/* An operation of e failed for some row: its message at e's place, unless
 * an operand failed first (a row's first error is its error; which row's
 * the scan reports is first_error's to settle). */
static void fail(KCtx *k, const QExpr *e, const char *msg)
{
    if (!k->err[0])
        snprintf(k->err, sizeof k->err, "%d:%d: %s", e->line, e->col, msg);
}

/* One loop per test over a column of C type T, compared as CT with the
 * bounds (qnum.c's tests). The counts and pointers are locals: stores
 * through out->idx could alias in->n, and the compiler would reload it
 * every row. */
#define NUM_LOOP(test)                                                                 \
    for (j = 0; j < nin; j++) { r = ix[j]; ox[m] = r; m += (test); }
#define NUM_COL(T, CT, lo, hi)                                                         \
    do {                                                                               \
        const T *c = (const T *)col;                                                   \
        const uint32_t *ix = in->idx;                                                  \
        uint32_t *ox = out->idx, nin = in->n;                                          \
        CT l = (CT)(lo), h = (CT)(hi);                                                 \
        switch (kind) {                                                                \
        case QN_LE: NUM_LOOP((CT)c[r] <= h) break;                                     \
        case QN_GE: NUM_LOOP((CT)c[r] >= l) break;                                     \
        case QN_IN:                                                                    \
            if (l == h) NUM_LOOP((CT)c[r] == l)                                        \
            else NUM_LOOP(((CT)c[r] >= l) & ((CT)c[r] <= h))                           \
            break;                                                                     \
        default: /* OUT (a NaN is outside) */                                          \
            if (l == h) NUM_LOOP((CT)c[r] != l)                                        \
            else NUM_LOOP(!((CT)c[r] >= l && (CT)c[r] <= h))                           \
            break;                                                                     \
        }                                                                              \
    } while (0)

/* An enum field at the rows' own level against a mask of its symbols:
 * true if done. */
static bool filter_mask(KCtx *k, const QExpr *fx, const uint8_t *mask, bool tag, const KSel *in,
                        KSel *out)
{
    if (!mask || fx->op != QX_FIELD || (k->s->fields[fx->field].role == ST_TAG) != tag)
        return false;
    const uint8_t *c = (const uint8_t *)k->b->cols[fx->field];
    const uint32_t *ix = in->idx;
    uint32_t *ox = out->idx, n = in->n, m = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t r = ix[j];
        ox[m] = r;
        m += (mask[c[r] >> 3] >> (c[r] & 7)) & 1;
    }
    out->n = m;
    return true;
}

/* field OP constant, the field at the rows' own level: true if done. */
static bool filter_field_const(KCtx *k, const QExpr *e, bool tag, const KSel *in, KSel *out)
{
    const QExpr *fx = e->a, *kx = e->b;
    if (fx->op != QX_FIELD || kx->op != QOP_CONST)
        return false;
    const st_field *f = &k->s->fields[fx->field];
    if ((f->role == ST_TAG) != tag)
        return false;
    const char *col = k->b->cols[fx->field];
    uint32_t j, r, m = 0;
    int op = e->op;
    if (filter_mask(k, fx, e->mask, tag, in, out))
        return true;
    if (f->type == ST_CHAR && kx->type == QT_STR && (op == QOP_EQ || op == QOP_NE)) {
        if (kx->kn > f->width || memchr(kx->ks, 0, kx->kn)) {
            if (op == QOP_NE)
                memcpy(out->idx, in->idx, (size_t)in->n * 4);
            m = op == QOP_NE ? in->n : 0;
        } else {
            uint32_t w = f->width, n = kx->kn;
            bool eq = op == QOP_EQ;
            for (j = 0; j < in->n; j++) {
                r = in->idx[j];
                const char *p = col + (size_t)r * w;
                out->idx[m] = r;
                m += (!memcmp(p, kx->ks, n) && (n == w || !p[n])) == eq;
            }
        }
    } else if (!e->num.kind) {
        return false;
    } else if (e->num.kind == QN_ALL || e->num.kind == QN_NONE) {
        m = e->num.kind == QN_ALL ? in->n : 0;
        memmove(out->idx, in->idx, (size_t)m * 4);
    } else {
        /* the bounds lie within the column's type: compare in it */
        QNumKind kind = e->num.kind;
        QNum lo = e->num.lo, hi = e->num.hi;
        switch (f->type) {
        case ST_U8: NUM_COL(uint8_t, uint8_t, lo.i, hi.i); break;
        case ST_U16: NUM_COL(uint16_t, uint16_t, lo.i, hi.i); break;
        case ST_U32: NUM_COL(uint32_t, uint32_t, lo.i, hi.i); break;
        case ST_U64: NUM_COL(uint64_t, uint64_t, lo.u, hi.u); break;
        case ST_I8: NUM_COL(int8_t, int8_t, lo.i, hi.i); break;
        case ST_I16: NUM_COL(int16_t, int16_t, lo.i, hi.i); break;
        case ST_I32: NUM_COL(int32_t, int32_t, lo.i, hi.i); break;
        case ST_I64: case ST_TIME: NUM_COL(int64_t, int64_t, lo.i, hi.i); break;
        case ST_F32: NUM_COL(float, double, lo.f, hi.f); break;
        case ST_F64: NUM_COL(double, double, lo.f, hi.f); break;
        default: return false;
        }
    }
    out->n = m;
    return true;
}

static bool valid_at(const KVec *v, uint32_t j)
{
    return !v->valid || v->valid[j];
}

static double num_at(const QExpr *e, const KVec *v, uint32_t j)
{
    return e->type == QT_FLOAT || kvec_float(v, j) ? v->f[j] : (double)v->i[j];
}

/* Value j of two number vectors (a big expression's holds ints and floats)
 * as comb compares numbers (ops.h): -1, 0, 1, or 2 for unordered (NaN). */
static int compare_num(const QExpr *a, const KVec *va, const QExpr *b, const KVec *vb, uint32_t j)
{
    bool fa = a->type == QT_FLOAT || kvec_float(va, j), fb = b->type == QT_FLOAT || kvec_float(vb, j);
    return ops_cmp_num(fa, fa ? 0 : va->i[j], fa ? va->f[j] : 0, fb, fb ? 0 : vb->i[j],
                       fb ? vb->f[j] : 0);
}

/* Compares value j of two vectors: -1, 0, 1, or 2 for unordered (NaN). */
static int compare_at(const QExpr *a, const KVec *va, const QExpr *b, const KVec *vb, uint32_t j)
{
    if (a->type == QT_STR)
        return ops_cmp_bytes(va->sp[j], va->sl[j], vb->sp[j], vb->sl[j]);
    return compare_num(a, va, b, vb, j);
}

static void filter_compare(KCtx *k, const QExpr *e, bool tag, const KSel *in, KSel *out)
{
    uint32_t m = 0;
    if (filter_field_const(k, e, tag, in, out))
        return;
    if (e->a->type == QT_NIL || e->b->type == QT_NIL) {
        /* x == nil: x is missing (first/last of no tag) */
        const QExpr *x = e->a->type == QT_NIL ? e->b : e->a;
        const KVec *v = evaluate(k, x, tag, in);
        bool want_nil = e->op == QOP_EQ;
        for (uint32_t j = 0; j < in->n; j++) {
            out->idx[m] = in->idx[j];
            m += (!valid_at(v, j) || x->type == QT_NIL) == want_nil;
        }
        out->n = m;
        return;
    }
    const KVec *va = evaluate(k, e->a, tag, in);
    const KVec *vb = evaluate(k, e->b, tag, in);
    for (uint32_t j = 0; j < in->n; j++) {
        out->idx[m] = in->idx[j];
        if (valid_at(va, j) && valid_at(vb, j))     /* a missing value's slot is not set */
            m += qx_holds(e->op, compare_at(e->a, va, e->b, vb, j));
    }
    out->n = m;
}

/* The text of value j of a string or int vector, for regexes and sets. */
static const char *text_at(const QExpr *e, const KVec *v, uint32_t j, char *buf, uint32_t *n)
{
    if (e->type == QT_STR) {
        *n = v->sl[j];
        return v->sp[j];
    }
    *n = (uint32_t)snprintf(buf, 24, "%lld", (long long)v->i[j]);
    return buf;
}

static void filter_match(KCtx *k, const QExpr *e, bool tag, const KSel *in, KSel *out)
{
    uint32_t m = 0;
    if (filter_mask(k, e->a, e->mask, tag, in, out))
        return;
    const KVec *v = evaluate(k, e->a, tag, in);
    bool want = e->op != QOP_NOMATCH;
    for (uint32_t j = 0; j < in->n; j++) {
        char buf[24];
        uint32_t n = 0;
        bool text = valid_at(v, j) && !kvec_float(v, j);  /* a float has none, as in row steps */
        const char *s = text ? text_at(e->a, v, j, buf, &n) : NULL;
        int rc = text ? pcre2_match(e->re, (PCRE2_SPTR)s, n, 0, 0, k->md, NULL) : -1;
        if (rc < -1 && rc != PCRE2_ERROR_NOMATCH)
            snprintf(k->err, sizeof k->err, "%d:%d: regex match failed (%d)", e->line, e->col, rc);
        out->idx[m] = in->idx[j];
        m += text && (rc >= 0) == want;
    }
    out->n = m;
}

/* A big expression's float value d in an int set: as the int it equals, or
 * among the set's other floats. */
static bool float_in_set(const QSet *s, double d)
{
    int64_t i;
    if (ops_float_int(d, &i))
        return qset_has(s, &i, 8);
    return s->big && qset_has(s->big, &d, 8);
}

static void filter_set(KCtx *k, const QExpr *e, bool tag, const KSel *in, KSel *out)
{
    uint32_t m = 0;
    if (filter_mask(k, e->a, e->mask, tag, in, out))
        return;
    const KVec *v = evaluate(k, e->a, tag, in);
    const QSet *s = e->set;
    for (uint32_t j = 0; j < in->n; j++) {
        bool hit = false;
        if (!valid_at(v, j)) {
            hit = false;
        } else if (s->match) {
            hit = s->match(s->mdata, v->sp[j], v->sl[j]);
        } else if (s->type == QT_STR) {
            hit = qset_has(s, v->sp[j], v->sl[j]);
        } else if (s->type == QT_FLOAT) {
            double d = num_at(e->a, v, j);
            d = d == 0 ? 0 : d;
            hit = qset_has(s, &d, 8);
        } else if (kvec_float(v, j)) {
            hit = float_in_set(s, v->f[j]);
        } else {
            hit = qset_has(s, &v->i[j], 8);
        }
        out->idx[m] = in->idx[j];
        m += hit;
    }
    out->n = m;
}

/* in minus sub (both ascending) into out. */
static void difference(const KSel *in, const KSel *sub, KSel *out)
{
    uint32_t m = 0, s = 0;
    for (uint32_t j = 0; j < in->n; j++) {
        uint32_t r = in->idx[j];
        while (s < sub->n && sub->idx[s] < r)
            s++;
        if (s < sub->n && sub->idx[s] == r)
            continue;
        out->idx[m++] = r;
    }
    out->n = m;
}

static void merge(const KSel *a, const KSel *b, KSel *out)
{
    uint32_t i = 0, j = 0, m = 0;
    while (i < a->n || j < b->n) {
        if (j >= b->n || (i < a->n && a->idx[i] < b->idx[j]))
            out->idx[m++] = a->idx[i++];
        else
            out->idx[m++] = b->idx[j++];
    }
    out->n = m;
}

static KSel scratch(KCtx *k, const QExpr *e, int i)
{
    Slot *s = slot(k, e);
    KSel r = {slot_buf(k, (void **)&s->sel[i], 4), 0};
    return r;
}

/* The tags of the tagsets in (ascending) into t. */
static void tags_of(KCtx *k, const KSel *in, KSel *t)
{
    const uint32_t *st = tag_start(k), *ix = in->idx; /* locals: t->idx could alias them */
    uint32_t *ox = t->idx, m = 0;
    for (uint32_t j = 0, n = in->n; j < n; j++) {
        /* a run of consecutive tagsets has one range of tags */
        uint32_t j0 = j;
        while (j + 1 < n && ix[j + 1] == ix[j] + 1)
            j++;
        for (uint32_t i = st[ix[j0]], hi = st[ix[j] + 1]; i < hi; i++)
            ox[m++] = i;
    }
    t->n = m;
}

/* Whether a quantifier's predicate holds for every tag (none, or true). */
static bool every_tag(const QExpr *e)
{
    return !e->a || (e->a->op == QOP_CONST && e->a->type == QT_BOOL && e->a->ki);
}

/* Whether a tag's answer hit decides its tagset's quantifier, so that the
 * row steps ask no later tag: any's and first's first hit, all's first
 * miss. */
static bool decides(const QExpr *e, bool hit)
{
    return e->fn == QF_all ? !hit : hit && (e->fn == QF_any || e->fn == QF_first);
}

/* The hits again after the predicate failed for some tag, asked a tag at a
 * time in order and up to the deciding tag of each tagset: the error is
 * the row steps' (the first tag they ask that fails), or none when every
 * failing tag comes after its tagset's decision. */
static void quant_in_order(KCtx *k, const QExpr *e, const KSel *in, KSel *hits)
{
    const uint32_t *st = tag_start(k);
    uint32_t m = 0;
    k->err[0] = 0;
    for (uint32_t j = 0; j < in->n && !k->err[0]; j++) {
        for (uint32_t i = st[in->idx[j]]; i < st[in->idx[j] + 1]; i++) {
            uint32_t r = i, o;
            KSel one = {&r, 1}, hit = {&o, 0};
            filter(k, e->a, true, &one, &hit);
            if (k->err[0])
                break;
            if (hit.n)
                hits->idx[m++] = i;
            if (decides(e, hit.n))
                break;
        }
    }
    hits->n = m;
}

/* The tags of in's tagsets that satisfy the quantifier's predicate. */
static void quant_tags(KCtx *k, const QExpr *e, const KSel *in, KSel *hits)
{
    KSel all = scratch(k, e, 0);
    *hits = scratch(k, e, 1);
    if (!all.idx || !hits->idx) {
        hits->n = 0;
        return;
    }
    tags_of(k, in, &all);
    bool clean = !k->err[0];
    filter(k, e->a, true, &all, hits);
    if (clean && k->err[0])
        quant_in_order(k, e, in, hits);
}

/* For each tagset of in, how many hits it has and its first and last:
 * hits are ascending tag indices, and a tagset's tags are a range. */
typedef struct TagHits {
    uint32_t n, first, last;
} TagHits;

/* The hits hx[*h ..] (nh in all) among tags lo .. hi - 1, moving *h past
 * them. Callers keep *h, hx and nh in locals: inlined, the loop then stays
 * in registers. */
static inline TagHits hits_in(const uint32_t *hx, uint32_t nh, uint32_t *h, uint32_t lo, uint32_t hi)
{
    uint32_t i = *h;
    while (i < nh && hx[i] < lo)
        i++;
    uint32_t i0 = i;
    while (i < nh && hx[i] < hi)
        i++;
    *h = i;
    return i == i0 ? (TagHits){0, 0, 0} : (TagHits){i - i0, hx[i0], hx[i - 1]};
}

static void filter_quant(KCtx *k, const QExpr *e, const KSel *in, KSel *out)
{
    KSel hits = {NULL, 0};
    if (!every_tag(e))
        quant_tags(k, e, in, &hits);
    const uint32_t *st = tag_start(k), *ix = in->idx, *hx = hits.idx;
    uint32_t *ox = out->idx, m = 0, h = 0, nh = hits.n;
    bool every = every_tag(e), any = e->fn == QF_any;
    for (uint32_t j = 0, n = in->n; j < n; j++) {
        uint32_t t = ix[j], lo = st[t], hi = st[t + 1];
        uint32_t c = every ? hi - lo : hits_in(hx, nh, &h, lo, hi).n;
        ox[m] = t;
        m += any ? c > 0 : c == hi - lo;
    }
    out->n = m;
}

/* A bool value used as a filter (a bool field, or a constant). */
static void filter_value(KCtx *k, const QExpr *e, bool tag, const KSel *in, KSel *out)
{
    const KVec *v = evaluate(k, e, tag, in);
    uint32_t m = 0;
    for (uint32_t j = 0; j < in->n; j++) {
        out->idx[m] = in->idx[j];
        m += valid_at(v, j) && v->i[j];
    }
    out->n = m;
}

static void filter(KCtx *k, const QExpr *e, bool tag, const KSel *in, KSel *out)
{
    KSel t1, t2, t3;
    if (k->err[0]) {
        out->n = 0;
        return;
    }
    switch (e->op) {
    case QOP_AND:
        t1 = scratch(k, e, 0);
        if (!t1.idx)
            break;
        filter(k, e->a, tag, in, &t1);
        filter(k, e->b, tag, &t1, out);
        return;
    case QOP_OR:
        t1 = scratch(k, e, 0), t2 = scratch(k, e, 1), t3 = scratch(k, e, 2);
        if (!t1.idx || !t2.idx || !t3.idx)
            break;
        filter(k, e->a, tag, in, &t1);
        difference(in, &t1, &t2);
        filter(k, e->b, tag, &t2, &t3);
        merge(&t1, &t3, out);
        return;
    case QOP_NOT:
        t1 = scratch(k, e, 0);
        if (!t1.idx)
            break;
        filter(k, e->a, tag, in, &t1);
        difference(in, &t1, out);
        return;
    case QOP_EQ: case QOP_NE: case QOP_LT: case QOP_LE: case QOP_GT: case QOP_GE:
        filter_compare(k, e, tag, in, out);
        return;
    case QOP_MATCH:
    case QOP_NOMATCH:
        filter_match(k, e, tag, in, out);
        return;
    case QX_SET:
        filter_set(k, e, tag, in, out);
        return;
    case QX_QUANT:
        if (e->fn == QF_any || e->fn == QF_all) {
            filter_quant(k, e, in, out);
            return;
        }
        /* fall through */
    default:
        filter_value(k, e, tag, in, out);
        return;
    }
    out->n = 0;
}

/* ---- values --------------------------------------------------------------- */

static bool alloc_vec(KCtx *k, const QExpr *e, KVec *v)
{
    bool ok = slot_buf(k, (void **)&v->valid, 1) != NULL;
    switch (e->type) {
    case QT_FLOAT: ok &= slot_buf(k, (void **)&v->f, 8) != NULL; break;
    case QT_STR:
        ok &= slot_buf(k, (void **)&v->sp, sizeof(char *)) != NULL;
        ok &= slot_buf(k, (void **)&v->sl, 4) != NULL;
        if (e->is_enum)     /* the symbols' indices too: dense group keys */
            ok &= slot_buf(k, (void **)&v->i, 8) != NULL;
        break;
    default:
        ok &= slot_buf(k, (void **)&v->i, 8) != NULL;
        if (e->big) {
            ok &= slot_buf(k, (void **)&v->f, 8) != NULL;
            ok &= slot_buf(k, (void **)&v->isf, 1) != NULL;
        }
        break;
    }
    return ok;
}

static void all_valid(KVec *v, uint32_t n)
{
    memset(v->valid, 1, n);
}

/* A u64 column's values above the ints (negative as int64) are their
 * nearest floats, as comb has them. */
VECTOR_LOOPS static void big_floats(KVec *v, uint32_t n)
{
    bool any = false;
    for (uint32_t j = 0; j < n; j++)
        any |= v->i[j] < 0;
    v->floats = any;
    for (uint32_t j = 0; any && j < n; j++) {
        v->isf[j] = v->i[j] < 0;
        v->f[j] = (double)(uint64_t)v->i[j];
    }
}

/* One operator's loop: op a constant where it is inlined (eval_arith's
 * switch), so that each loop holds only its own operation. */
static inline __attribute__((always_inline)) ArithStatus
arith_loop(int op, const QExpr *e, const KVec *a, const KVec *b, uint32_t n, KVec *v)
{
    ArithStatus bad = AR_OK;
    bool mixed = v->floats;
    for (uint32_t j = 0; j < n; j++) {
        bool ok = valid_at(a, j) && valid_at(b, j), fl = mixed && (kvec_float(a, j) || kvec_float(b, j));
        ArithStatus st;
        v->valid[j] = ok;
        if (mixed)
            v->isf[j] = fl;
        if (e->type == QT_FLOAT || fl)
            st = ops_float(op, num_at(e->a, a, j), num_at(e->b, b, j), &v->f[j]);
        else
            st = ops_int(op, a->i[j], b->i[j], &v->i[j]);
        if (st != AR_OK && ok)
            bad = st;
    }
    return bad;
}

static void eval_arith(KCtx *k, const QExpr *e, bool tag, const KSel *in, KVec *v)
{
    const KVec *a = evaluate(k, e->a, tag, in);
    const KVec *b = evaluate(k, e->b, tag, in);
    ArithStatus bad;
    /* an int result over a big operand's floats: floats there too */
    v->floats = e->big && (a->floats || b->floats);
    switch (e->op - QOP_ADD) {
    case ARITH_ADD: bad = arith_loop(ARITH_ADD, e, a, b, in->n, v); break;
    case ARITH_SUB: bad = arith_loop(ARITH_SUB, e, a, b, in->n, v); break;
    case ARITH_MUL: bad = arith_loop(ARITH_MUL, e, a, b, in->n, v); break;
    case ARITH_DIV: bad = arith_loop(ARITH_DIV, e, a, b, in->n, v); break;
    default: bad = arith_loop(ARITH_MOD, e, a, b, in->n, v); break;
    }
    if (bad)
        fail(k, e, ops_message[bad]);
}

/* max_by/min_by(tags, e) per tagset: into pick, the tag with the greatest
 * (least) number e, the first of equals; valid where some tag has one. */
static bool pick_by(KCtx *k, const QExpr *e, const KSel *in, KSel *pick, KVec *v)
{
    KSel all = scratch(k, e, 0);
    if (!all.idx)
        return false;
    tags_of(k, in, &all);
    const KVec *x = evaluate(k, e->a, true, &all);
    const uint32_t *st = tag_start(k);
    bool any = false, max = e->fn == QF_max_by;
    for (uint32_t j = 0, p = 0, n = in->n; j < n; j++) {
        uint32_t t = in->idx[j], cnt = st[t + 1] - st[t], best = UINT32_MAX;
        for (uint32_t end = p + cnt; p < end; p++) {
            if (x->valid && !x->valid[p])
                continue;
            bool fp = e->a->type == QT_FLOAT || kvec_float(x, p);
            if (fp && isnan(x->f[p]))
                continue;
            if (best != UINT32_MAX) {
                bool fb = e->a->type == QT_FLOAT || kvec_float(x, best);
                int c = ops_cmp_num(fp, x->i ? x->i[p] : 0, fp ? x->f[p] : 0, fb, x->i ? x->i[best] : 0,
                                    fb ? x->f[best] : 0);
                if (max ? c != 1 : c != -1)
                    continue;
            }
            best = p;
        }
        v->valid[j] = best != UINT32_MAX;
        any |= v->valid[j];
        pick->idx[j] = v->valid[j] ? all.idx[best] : 0;
    }
    return any;
}

/* The field of the picked tags (pick.idx[j] for tagset j, where v is
 * valid; any: some is) into v. */
static void read_picked(KCtx *k, const QExpr *e, const KSel *in, KSel *pick, bool any, KVec *v)
{
    if (!any) {     /* no tag to read: nil values, set so that no reader meets garbage */
        if (v->i)
            memset(v->i, 0, in->n * sizeof *v->i);
        if (v->f)
            memset(v->f, 0, in->n * sizeof *v->f);
        for (uint32_t j = 0; v->sp && j < in->n; j++)
            v->sp[j] = "", v->sl[j] = 0;
        return;
    }
    /* tags without a hit read tag 0, then count as nil by their validity */
    pick->n = in->n;
    QExpr fx = {.op = QX_FIELD, .type = e->type, .field = e->field, .is_enum = e->is_enum};
    eval_field(k, &fx, true, pick, v);
}

/* count/first/last(tags, PRED) and max_by/min_by(tags, e) per tagset:
 * those but count read their field once for all the tagsets, from the
 * picked tags. */
static void eval_quant(KCtx *k, const QExpr *e, const KSel *in, KVec *v)
{
    KSel hits = {NULL, 0};
    KSel pick = scratch(k, e, 2);
    if (!pick.idx)
        return;
    if (picks_by(e->fn)) {
        bool any = pick_by(k, e, in, &pick, v);
        read_picked(k, e, in, &pick, any, v);
        return;
    }
    if (!every_tag(e))
        quant_tags(k, e, in, &hits);
    const uint32_t *st = tag_start(k), *hx = hits.idx;
    uint32_t h = 0, nh = hits.n;
    bool any = false, every = every_tag(e);
    for (uint32_t j = 0, n = in->n; j < n; j++) {
        uint32_t t = in->idx[j], lo = st[t], hi = st[t + 1];
        TagHits r = !every ? hits_in(hx, nh, &h, lo, hi)
                  : hi > lo ? (TagHits){hi - lo, lo, hi - 1} : (TagHits){0, 0, 0};
        v->valid[j] = e->fn == QF_count || r.n > 0;
        any |= r.n > 0;
        if (e->fn == QF_count)
            v->i[j] = r.n;
        pick.idx[j] = !r.n ? 0 : e->fn == QF_first ? r.first : r.last;
    }
    if (e->fn != QF_count)
        read_picked(k, e, in, &pick, any, v);
}

/* A comb function of the row (QX_CALL), asked row by row on the VM's thread. */
static void eval_call(KCtx *k, const QExpr *e, bool tag, const KSel *in, KVec *v)
{
    const KVec *args[QX_MAX_ARGS];
    int n = 0;
    for (const QExpr *x = e->a; x; x = x->b)
        args[n++] = evaluate(k, x->a, tag, in);
    for (uint32_t j = 0; j < in->n; j++)
        v->i[j] = qx_call(e, args, j);
    all_valid(v, in->n);
}

/* day(t), hour(t) */
static void eval_func(KCtx *k, const QExpr *e, bool tag, const KSel *in, KVec *v)
{
    const KVec *a = evaluate(k, e->a, tag, in);
    bool notime = false, over = false;
    for (uint32_t j = 0; j < in->n; j++) {
        v->valid[j] = valid_at(a, j);
        if (kvec_float(a, j))
            notime |= v->valid[j];
        else if (e->fn == QF_hour)
            v->i[j] = ops_hour(a->i[j]);
        else
            over |= ops_day(a->i[j], &v->i[j]) != AR_OK && v->valid[j];
    }
    char msg[128];
    if (notime)
        snprintf(msg, sizeof msg, OPS_NOTIME_FMT, vm_query_funcs[e->fn].name, "float");
    if (notime || over)
        fail(k, e, notime ? msg : ops_message[AR_OVERFLOW]);
}

/* if c { a } else { b }: the condition splits the rows, and each branch is
 * computed for its own rows only (as in comb, a branch not taken cannot
 * fail); then the values are laid out in the rows' order. */
static void eval_if(KCtx *k, const QExpr *e, bool tag, const KSel *in, KVec *v)
{
    KSel yes = scratch(k, e, 0), no = scratch(k, e, 1);
    if (!yes.idx || !no.idx) {
        memset(v->valid, 0, in->n);
        return;
    }
    filter(k, e->a, tag, in, &yes);
    difference(in, &yes, &no);
    const KVec *vy = evaluate(k, e->b, tag, &yes), *vn = evaluate(k, e->c, tag, &no);
    v->floats = e->big && (vy->floats || vn->floats);
    for (uint32_t j = 0, h = 0, m = 0; j < in->n; j++) {
        bool took = h < yes.n && yes.idx[h] == in->idx[j];
        const QExpr *x = took ? e->b : e->c;
        const KVec *s = took ? vy : vn;
        uint32_t i = took ? h++ : m++;
        bool ok = x->type != QT_NIL && valid_at(s, i);
        v->valid[j] = ok;
        if (e->type == QT_FLOAT)
            v->f[j] = ok ? num_at(x, s, i) : 0;
        else if (e->type == QT_STR)
            v->sp[j] = ok ? s->sp[i] : "", v->sl[j] = ok ? s->sl[i] : 0;
        else
            v->i[j] = ok ? s->i[i] : 0;
        if (v->floats) {
            v->isf[j] = ok && kvec_float(s, i);
            v->f[j] = v->isf[j] ? s->f[i] : 0;
        }
    }
}

static const KVec *evaluate(KCtx *k, const QExpr *e, bool tag, const KSel *in)
{
    KVec *v = &slot(k, e)->v;
    if (!alloc_vec(k, e, v) || k->err[0]) {
        memset(v->valid, 0, in->n);
        return v;
    }
    switch (e->op) {
    case QX_FIELD:
        eval_field(k, e, tag, in, v);
        all_valid(v, in->n);
        if (e->big)
            big_floats(v, in->n);
        break;
    case QOP_CONST:
        for (uint32_t j = 0; j < in->n; j++) {
            if (e->type == QT_FLOAT)
                v->f[j] = e->kf;
            else if (e->type == QT_STR)
                v->sp[j] = e->ks, v->sl[j] = e->kn;
            else
                v->i[j] = e->ki;
        }
        memset(v->valid, e->type != QT_NIL, in->n);
        break;
    case QOP_NEG: {
        const KVec *a = evaluate(k, e->a, tag, in);
        bool over = false;
        v->floats = a->floats;
        for (uint32_t j = 0; j < in->n; j++) {
            v->valid[j] = valid_at(a, j);
            if (a->floats)
                v->isf[j] = kvec_float(a, j);
            if (e->type == QT_FLOAT || kvec_float(a, j))
                v->f[j] = -a->f[j];
            else if (ops_int_neg(a->i[j], &v->i[j]) != AR_OK && v->valid[j])
                over = true;
        }
        if (over)
            fail(k, e, ops_message[AR_OVERFLOW]);
        break;
    }
    case QOP_ADD: case QOP_SUB: case QOP_MUL: case QOP_DIV: case QOP_MOD:
        eval_arith(k, e, tag, in, v);
        break;
    case QOP_IF:
        eval_if(k, e, tag, in, v);
        break;
    case QX_QUANT:
        if (e->fn == QF_count || e->fn == QF_first || e->fn == QF_last || picks_by(e->fn)) {
            eval_quant(k, e, in, v);
            if (e->big)
                big_floats(v, in->n);
            break;
        }
        /* any/all as a value: a condition */
        __attribute__((fallthrough));
    default:
        if (e->op == QX_FUNC) {
            eval_func(k, e, tag, in, v);
            break;
        }
        if (e->op == QX_CALL) {
            eval_call(k, e, tag, in, v);
            break;
        }
        /* a condition as a bool value */
        {
            KSel hit = scratch(k, e, NSEL - 1);
            if (!hit.idx)
                break;
            filter(k, e, tag, in, &hit);
            /* a mark per row (valid's bytes, indexed by row: every row is
             * under vec_cap), then each row's mark: loops without a chain
             * from one row to the next, as a walk of hit beside in has */
            uint8_t *mark = v->valid;
            const uint32_t *ix = in->idx;
            for (uint32_t j = 0; j < in->n; j++)
                mark[ix[j]] = 0;
            for (uint32_t h = 0; h < hit.n; h++)
                mark[hit.idx[h]] = 1;
            for (uint32_t j = 0; j < in->n; j++)
                v->i[j] = mark[ix[j]];
            all_valid(v, in->n);
        }
        break;
    }
    return v;
}

/* ---- the scan's entry points ---------------------------------------------- */

/* After a batch failed: its rows one at a time, in order, until one fails,
 * so that the error is the first row's, as the VM and the row steps, which
 * go a row at a time, meet it (a batch evaluates node by node, and a later
 * row may fail at an earlier node). The batch's own error stands when no
 * row fails alone (out of memory). Results are left undefined: the scan
 * stops. */
static void first_error(KCtx *k, const QExpr *e, bool tag, const KSel *in, bool cond)
{
    char batch_err[sizeof k->err];
    memcpy(batch_err, k->err, sizeof batch_err);
    for (uint32_t j = 0; j < in->n; j++) {
        uint32_t r = in->idx[j], o;
        KSel one = {&r, 1}, out = {&o, 0};
        k->err[0] = 0;
        if (cond)
            filter(k, e, tag, &one, &out);
        else
            evaluate(k, e, tag, &one);
        if (k->err[0])
            return;
    }
    memcpy(k->err, batch_err, sizeof batch_err);
}

void k_filter(KCtx *k, const QExpr *e, bool tag, const KSel *in, KSel *out)
{
    bool clean = !k->err[0];
    filter(k, e, tag, in, out);
    if (clean && k->err[0] && in->n > 1)
        first_error(k, e, tag, in, true);
}

const KVec *k_eval(KCtx *k, const QExpr *e, bool tag, const KSel *in)
{
    bool clean = !k->err[0];
    const KVec *v = evaluate(k, e, tag, in);
    if (clean && k->err[0] && in->n > 1)
        first_error(k, e, tag, in, false);
    return v;
}

/* ---- keys ----------------------------------------------------------------- */

/* A u64 field's own values (no arithmetic): ints >= 0 or floats above the
 * ints, in order as the unsigned column (as comb reads them: qx_u64_seen);
 * 8 bytes of key, as other ints. */
bool qx_u64_key(const QExpr *e)
{
    return e->big && (e->op == QX_FIELD || e->op == QX_QUANT);
}

uint32_t qx_keywidth(const QExpr *e)
{
    return 1 + (e->type == QT_STR ? e->strw : e->type == QT_NIL ? 0 : e->big && !qx_u64_key(e) ? 17 : 8);
}

static void put_be(unsigned char *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);   /* one store, not eight */
#endif
    memcpy(p, &v, 8);
}

static uint64_t get_be(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* doubles in an order-preserving unsigned form; -0 as 0, and every NaN
 * as one, after +inf (a NaN's sign and payload would split groups and
 * put some first) */
uint64_t qx_float_bits(double d)
{
    uint64_t u;
    d = d == 0 ? 0 : d;
    if (isnan(d))
        return UINT64_C(0xfff8000000000000);    /* the positive quiet NaN's */
    memcpy(&u, &d, 8);
    return u >> 63 ? ~u : u | UINT64_C(1) << 63;
}

/* float_bits undone. */
double qx_bits_float(uint64_t u)
{
    u = u >> 63 ? u & ~(UINT64_C(1) << 63) : ~u;
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* A big expression's value j as 17 bytes in number order: its nearest
 * double, then what orders the ints one double stands for: the int (kind
 * 0); a float sorts as the int it equals (and is one then), or after
 * those ints (kind 1: above 2^63-1), or has no int beside it. */
static void big_key(const KVec *v, uint32_t j, unsigned char *out)
{
    double d = kvec_float(v, j) ? v->f[j] : (double)v->i[j];
    uint64_t t = (uint64_t)v->i[j] ^ UINT64_C(1) << 63;
    bool kind = false;
    if (kvec_float(v, j)) {
        int64_t i;
        bool integral = ops_float_int(d, &i);
        kind = !integral;
        t = integral ? (uint64_t)i ^ UINT64_C(1) << 63 : d >= 0x1p63 ? UINT64_MAX : 0;
    }
    put_be(out, qx_float_bits(d));
    put_be(out + 8, t);
    out[16] = kind;
}

/* Copies n bytes (zeroes them when s is NULL) with whole moves that may
 * overlap: keys are short, and a call of memcpy or memset per row would
 * cost more than the key. */
static inline void small_move(unsigned char *d, const unsigned char *s, uint32_t n)
{
    static const unsigned char zero[16];
    if (n > 16) {
        if (s)
            memcpy(d, s, n);
        else
            memset(d, 0, n);
        return;
    }
    const unsigned char *src = s ? s : zero;
    if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, src + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, src, 4);
        memcpy(&b, src + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n) {
        d[0] = src[0];
        d[n / 2] = src[n / 2];
        d[n - 1] = src[n - 1];
    }
}

void k_key(const QExpr *e, const KVec *v, uint32_t j, bool desc, unsigned char *out)
{
    uint32_t w = qx_keywidth(e);
    small_move(out, NULL, w);
    if (valid_at(v, j) && e->type != QT_NIL) {
        out[0] = 1;
        if (e->type == QT_STR)
            small_move(out + 1, (const unsigned char *)v->sp[j], v->sl[j] < e->strw ? v->sl[j] : e->strw);
        else if (e->type == QT_FLOAT)
            put_be(out + 1, qx_float_bits(v->f[j]));
        else if (qx_u64_key(e))
            put_be(out + 1, qx_u64_seen((uint64_t)v->i[j]));
        else if (e->big)
            big_key(v, j, out + 1);
        else
            put_be(out + 1, (uint64_t)v->i[j] ^ UINT64_C(1) << 63);
    }
    if (desc)
        for (uint32_t i = 0; i < w; i++)
            out[i] = (unsigned char)~out[i];
}

void k_keys(const QExpr *e, const KVec *v, uint32_t n, unsigned char *out, size_t stride)
{
    bool ints = e->type == QT_INT || e->type == QT_BOOL;
    if (!ints || v->floats || (e->big && !qx_u64_key(e)) || (v->valid && memchr(v->valid, 0, n))) {
        for (uint32_t j = 0; j < n; j++)
            k_key(e, v, j, false, out + (size_t)j * stride);
        return;
    }
    /* all ints, all there: the usual key of a field, without a test a row */
    uint64_t flip = qx_u64_key(e) ? 0 : UINT64_C(1) << 63;
    for (uint32_t j = 0; j < n; j++) {
        unsigned char *p = out + (size_t)j * stride;
        uint64_t x = (uint64_t)v->i[j];
        p[0] = 1;
        put_be(p + 1, flip ? x ^ flip : qx_u64_seen(x));
    }
}

Value qx_key_value(VM *vm, const QExpr *e, const unsigned char *key)
{
    if (!key[0])
        return v_nil();
    uint64_t u = e->type == QT_STR ? 0 : get_be(key + 1);
    switch (e->type) {
    case QT_STR: {
        const char *s = (const char *)key + 1;
        const char *z = memchr(s, 0, e->strw);
        return v_obj(vm_str_new(vm, s, z ? (size_t)(z - s) : e->strw));
    }
    case QT_FLOAT:
        return v_float(qx_bits_float(u));
    case QT_BOOL:
        return v_bool((u ^ UINT64_C(1) << 63) != 0);
    default:
        if (qx_u64_key(e))
            return u >> 63 ? v_float((double)u) : v_int((int64_t)u);
        if (e->big && key[17])  /* a float (big_key) */
            return v_float(qx_bits_float(u));
        return v_int((int64_t)(get_be(key + (e->big ? 9 : 1)) ^ UINT64_C(1) << 63));
    }
}
