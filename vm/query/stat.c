/* stat: tagstat, per-field statistics of a scan's rows (of the columns
 * asked for, QScan.stat_cols, and only those decoded): count, nils
 * (zeros), min, max, mean and a distinct count estimated by HyperLogLog,
 * per worker, merged after the scan. */
#include "config.h"
#include "vm/query/run.h"
#include "vm/query/gtable.h"
#include "vm/mathlib.h"

#include <math.h>
#include <string.h>
#include <xxhash.h>

#define HLL_BITS 12
#define HLL_REGS (1u << HLL_BITS)

typedef struct ColStat {
    uint64_t count, nulls;
    VSum sum;               /* for the mean: ints exactly, whatever the order */
    bool has;
    int64_t imin, imax;     /* integers, times, bools, enum indices */
    double fmin, fmax;      /* floats */
    char *smin, *smax;      /* char[N] (NUL-terminated copies) */
    uint64_t syms[4];       /* an enum's symbols seen: its min and max are by their text */
    uint8_t hll[HLL_REGS];
    uint64_t bits[1024];    /* a field of 16 bits or less: its values seen (low 16 bits),
                             * into hll once at the end (HLL counts a value once) */
} ColStat;

/* Stat's i-th column's field (the tags per tagset: a u32 of its own). */
static const st_field tag_count_field = {.name = "#tags", .type = ST_U32, .width = 4};

static const st_field *stat_field(const QScan *sc, uint32_t i)
{
    uint32_t c = sc->stat_cols[i];
    return c < sc->vs->s->nfields ? &sc->vs->s->fields[c] : &tag_count_field;
}

/* HyperLogLog: a register per hash prefix keeps the longest run of zeros. */
static inline void hll_add(uint8_t *reg, uint64_t h)
{
    uint32_t r = (uint32_t)(h >> (64 - HLL_BITS));
    uint8_t rank = (uint8_t)(__builtin_clzll(h << HLL_BITS | (UINT64_C(1) << (HLL_BITS - 1))) + 1);
    if (rank > reg[r])
        reg[r] = rank;
}

/* One loop per column type over the rows' indices idx[0 .. n), its sums
 * in locals. ORD: x as an int64 in x's order (min and max keep it);
 * SEEN: x as comb reads it, for distinct: a narrow field's values as
 * bits, a wider one's hashed unless it repeats the last row's. */
#define STAT_LOOP(T, ORD, SEEN, NARROW)                                          \
    for (uint32_t j = 0; j < n; j++) {                                           \
        T x = ((const T *)col)[idx[j]];                                          \
        int64_t v = (ORD);                                                       \
        nulls += x == 0;                                                         \
        sum += x;                                                                \
        lo = v < lo ? v : lo;                                                    \
        hi = v > hi ? v : hi;                                                    \
        if (NARROW) {                                                            \
            uint16_t b = (uint16_t)x;                                            \
            c->bits[b >> 6] |= UINT64_C(1) << (b & 63);                          \
        } else if (!j || x != last) {                                            \
            hll_add(c->hll, gt_mix(SEEN));                                       \
        }                                                                        \
        last = x;                                                                \
    }
#define STAT_INTS(T, NARROW) STAT_LOOP(T, (int64_t)x, (uint64_t)(int64_t)x, NARROW)
/* A u64 with its top bit flipped orders as an int64 (stat_rows flips back). */
#define U64_ORD(x) ((int64_t)((x) ^ UINT64_C(1) << 63))

/* A narrow field's values seen into its registers, as the loop would have
 * added them. */
static void stat_bits(ColStat *c, const st_field *f)
{
    for (uint32_t i = 0; i < 1024; i++)
        for (uint64_t w = c->bits[i]; w; w &= w - 1) {
            uint16_t b = (uint16_t)(i * 64 + (uint32_t)__builtin_ctzll(w));
            int64_t x = f->type == ST_I8 ? (int8_t)b : f->type == ST_I16 ? (int16_t)b : b;
            hll_add(c->hll, gt_mix((uint64_t)x));
        }
    memset(c->bits, 0, sizeof c->bits);
}

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
            hll_add(c->hll, gt_mix(bits));
        }
        c->fmin = lo;
        c->fmax = hi;
        c->has = true;
        return true;
    }
    int64_t lo = c->has ? c->imin : INT64_MAX, hi = c->has ? c->imax : INT64_MIN;
    uint64_t nulls = 0;
    __int128 sum = 0;
    switch (f->type) {
    case ST_U8: case ST_BOOL: case ST_ENUM: { uint8_t last = 0; STAT_INTS(uint8_t, 1); break; }
    case ST_U16: { uint16_t last = 0; STAT_INTS(uint16_t, 1); break; }
    case ST_U32: { uint32_t last = 0; STAT_INTS(uint32_t, 0); break; }
    case ST_I8: { int8_t last = 0; STAT_INTS(int8_t, 1); break; }
    case ST_I16: { int16_t last = 0; STAT_INTS(int16_t, 1); break; }
    case ST_I32: { int32_t last = 0; STAT_INTS(int32_t, 0); break; }
    case ST_U64: { uint64_t last = 0; STAT_LOOP(uint64_t, U64_ORD(x), qx_u64_seen(x), 0); break; }
    default: { int64_t last = 0; STAT_INTS(int64_t, 0); break; }
    }
    v_sum_int(&c->sum, sum);
    if (f->type != ST_ENUM)     /* every symbol is a value */
        c->nulls += nulls;
    if (f->type == ST_ENUM) {
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

static bool stat_consume(Worker *w, uint32_t pi, bool tag, const KSel *sel)
{
    (void)pi;
    const QScan *sc = w->sh->sc;
    const st_schema *s = sc->vs->s;
    const st_batch *b = w->k.b;
    /* Three index lists: the rows, the tags of the rows' tagsets, the
     * tagsets of the rows (when rows are tags). */
    uint32_t *tags, ntags = 0;
    uint32_t *lists = mem_alloc(((size_t)b->ntags + b->ntagsets + 2) * 4);
    if (!lists) {
        scan_fail(w->sh, SCAN_OOM);
        return false;
    }
    tags = lists;
    bool tagf = false;
    for (uint32_t i = 0; i < sc->nstat; i++)
        tagf |= sc->stat_cols[i] >= s->nrow && sc->stat_cols[i] < s->nfields;
    if (tagf && !tag)
        for (uint32_t j = 0; j < sel->n; j++)
            for (uint32_t i = b->tag_start[sel->idx[j]]; i < b->tag_start[sel->idx[j] + 1]; i++)
                tags[ntags++] = i;
    uint32_t *owners = lists + ntags;
    for (uint32_t j = 0; tag && j < sel->n; j++)
        owners[j] = w->k.owner[sel->idx[j]];
    for (uint32_t i = 0; i < sc->nstat; i++) {
        uint32_t c = sc->stat_cols[i];
        bool tagc = c >= s->nrow && c < s->nfields;  /* a tag field */
        const uint32_t *idx = tagc ? (tag ? sel->idx : tags) : (tag && c < s->nfields ? owners : sel->idx);
        uint32_t n = tagc && !tag ? ntags : sel->n;
        if (!stat_column(&w->stats[i], stat_field(sc, i), b->cols[c], idx, n))
            scan_fail(w->sh, SCAN_OOM);
    }
    mem_free(lists, ((size_t)b->ntags + b->ntagsets + 2) * 4);
    return true;
}

static bool stat_merge(Worker *wi, Worker *wf)
{
    const QScan *sc = wi->sh->sc;
    ColStat *into = wi->stats, *from = wf->stats;
    for (uint32_t c = 0; c < sc->nstat; c++) {
        ColStat *a = &into[c], *b = &from[c];
        uint32_t w = stat_field(sc, c)->width;
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
        for (int i = 0; i < 1024; i++)
            a->bits[i] |= b->bits[i];
        for (uint32_t r = 0; r < HLL_REGS; r++)
            if (b->hll[r] > a->hll[r])
                a->hll[r] = b->hll[r];
    }
    return true;
}

static bool stat_begin(Worker *w)
{
    return (w->stats = mem_calloc(w->sh->sc->nstat, sizeof(ColStat))) != NULL;
}

static void stat_end(Worker *w)
{
    const QScan *sc = w->sh->sc;
    if (!w->stats)
        return;
    for (uint32_t c = 0; c < sc->nstat; c++) {
        uint32_t wd = stat_field(sc, c)->width;
        mem_free(w->stats[c].smin, w->stats[c].smin ? wd + 1 : 0);
        mem_free(w->stats[c].smax, w->stats[c].smax ? wd + 1 : 0);
    }
    mem_free(w->stats, sc->nstat * sizeof(ColStat));
    w->stats = NULL;
}

/* ---- results as comb values -------------------------------------------- */

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
        e = m * vm_math_log(m / zeros);
    return e;
}

/* A u64 as comb has it: above the ints, the nearest float. */
static Value u64_value(int64_t bits)
{
    return bits < 0 ? v_float((double)(uint64_t)bits) : v_int(bits);
}

static Value stat_rows(VM *vm, const QScan *sc, ColStat *st)
{
    VArray *a = vm_array_new(vm, sc->nstat);
    Value av = v_obj(a);
    vm_push_root(vm, av);
    for (uint32_t c = 0; c < sc->nstat; c++) {
        const st_field *f = stat_field(sc, c) == &tag_count_field ? NULL : stat_field(sc, c);
        ColStat *cs = &st[c];
        VMap *m = vm_map_new(vm, 8);
        char type[32];
        vm_array_push(vm, a, v_obj(m));
        map_setc(vm, m, "field", sc->stat_names[c] ? v_obj(sc->stat_names[c])
                                                   : v_obj(vm_str_cstr(vm, "#tags")));
        map_setc(vm, m, "type", v_obj(vm_str_cstr(vm, f ? vm_field_type_name(f, type, sizeof type) : "u32")));
        map_setc(vm, m, "count", v_int((int64_t)cs->count));
        map_setc(vm, m, "nulls", v_int((int64_t)cs->nulls));
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
        map_setc(vm, m, "min", lo);
        map_setc(vm, m, "max", hi);
        map_setc(vm, m, "mean", mean);
        stat_bits(cs, f ? f : &tag_count_field);
        uint64_t distinct = (uint64_t)(hll_estimate(cs->hll) + 0.5);  /* an estimate: at most count */
        map_setc(vm, m, "distinct", v_int((int64_t)(distinct < cs->count ? distinct : cs->count)));
    }
    vm_pop_root(vm, 1);
    return av;
}

static Value stat_finish(VM *vm, Shared *sh, Worker *w, Ordered *o)
{
    (void)o;
    return stat_rows(vm, sh->sc, w->stats);
}

const QConsumerOps qcons_stat = {
    .begin = stat_begin,
    .consume = stat_consume,
    .merge = stat_merge,
    .finish = stat_finish,
    .end = stat_end,
};
