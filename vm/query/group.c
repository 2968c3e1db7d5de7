/* group: group by in a scan: each worker's hash table of groups (or, for
 * keys of few values, an array indexed by their codes) and the aggregates'
 * states per group; merged after the scan and turned into rows. */
#include "config.h"
#include "vm/query/run.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

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

void qgroup_rows(Worker *w, bool tag, const KSel *sel)
{
    const QScan *sc = w->sh->sc;
    KCtx *k = &w->k;
    unsigned char ab[4096];
    const KVec *kv[64], *av[64];
    uint32_t kw[64];
    if (sc->keyw > 4096 || sc->nkeys > 64 || sc->nagg_list > 64) {
        scan_fail(w->sh, "group by: too many or too wide keys");
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
        scan_fail(w->sh, SCAN_OOM);
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
            scan_fail(w->sh, SCAN_OOM);
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
                scan_fail(w->sh, SCAN_OOM);
                return;
            }
        }
    }
}

void qgroup_init(Worker *w)
{
    w->ndense = getenv("COMB_GROUP_HASH") ? 0 : dense_codes(w->sh->sc);
}

void qgroup_free(Worker *w)
{
    group_free(w->sh->sc, &w->gt);
    mem_free(w->dense, w->dense ? (size_t)w->ndense * 4 : 0);
    mem_free(w->dcount, w->dcount ? (size_t)w->ndense * 8 : 0);
    buf_free(&w->keys);
}

/* ---- results as comb values -------------------------------------------- */

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

Value qgroup_result(VM *vm, const QScan *sc, Worker *w, int nw)
{
    for (int i = 0; i < nw; i++)
        dense_flush(&w[i]);
    for (int i = 1; i < nw; i++) {
        GroupTable *from = &w[i].gt;
        for (size_t g = 0; g < from->n; g++) {
            long gi = group_find(sc, &w[0].gt, from->g[g].key, from->g[g].hash);
            if (gi < 0)
                vm_throw(vm, v_obj(vm->oom));
            for (int a = 0; a < sc->nagg_list; a++)
                if (!agg_merge(sc->agg_list[a], &w[0].gt.g[gi].aggs[a], &from->g[g].aggs[a]))
                    vm_throw(vm, v_obj(vm->oom));
        }
    }
    if (sc->nkeys == 0 && w[0].gt.n == 0 && group_find(sc, &w[0].gt, (const unsigned char *)"", hash_key((const unsigned char *)"", 0)) < 0)
        vm_throw(vm, v_obj(vm->oom));   /* no keys: one group, even of nothing */
    return group_rows(vm, sc, &w[0].gt);
}
