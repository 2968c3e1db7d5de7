/* group: group by in a scan: each worker's groups (gtable.c's hash table
 * of their keys, or for keys of few values an array indexed by their
 * codes) and the aggregates' states (aggs.c's columns), a batch at a time:
 * the batch's rows' groups first, then each aggregate's loop over them;
 * merged after the scan and turned into rows. */
#include "config.h"
#include "vm/query/run.h"

#include <stdlib.h>
#include <string.h>

#include "vm/query/aggs.h"
#include "vm/query/gtable.h"

struct GroupState {
    GTable t;           /* the groups' keys */
    QAggs aggs;
    Buf keys;           /* a batch's keys (or dense codes) */
    uint32_t *gid;      /* a batch's rows' groups */
    size_t gcap;
    uint32_t *dense;    /* small-domain keys: group index + 1 per key code */
    uint32_t ndense;    /* codes (0: keys go through the table alone) */
    uint32_t *order;    /* the groups in key order, for the result (here, so
                         * that a raise while making rows leaks nothing) */
};

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

/* Row j's group key into p (sc->keyw bytes). */
static void key_at(const QScan *sc, const KVec *const *kv, const uint32_t *kw, uint32_t j,
                   unsigned char *p)
{
    for (int i = 0; i < sc->nkeys; i++) {
        k_key(sc->keys[i], kv[i], j, false, p);
        p += kw[i];
    }
}

/* The groups of the batch's rows into g->gid: false out of memory. */
static bool batch_groups(Worker *w, const KVec *const *kv, uint32_t n)
{
    const QScan *sc = w->sh->sc;
    GroupState *g = w->grp;
    uint32_t kw[64];
    unsigned char ab[4096];
    for (int i = 0; i < sc->nkeys; i++)
        kw[i] = qx_keywidth(sc->keys[i]);
    /* Every row's key (or code) first, then the lookups: a key hashed right
     * after its bytes were stored one by one would stall its loads. */
    g->keys.len = 0;
    size_t each = g->ndense ? sizeof(uint32_t) : sc->keyw;
    unsigned char *keys = buf_room(&g->keys, (size_t)n * each + 1);
    uint32_t *code = (uint32_t *)(void *)keys;
    if (!keys || (g->ndense && !g->dense && !(g->dense = mem_calloc(g->ndense, 4))))
        return false;
    if (n > g->gcap) {
        size_t cap = n > 2 * g->gcap ? n : 2 * g->gcap;
        uint32_t *gid = mem_realloc(g->gid, g->gcap * 4, cap * 4);
        if (!gid)
            return false;
        g->gid = gid;
        g->gcap = cap;
    }
    if (g->ndense) {
        memset(code, 0, (size_t)n * 4);
        for (int i = 0, stride = 1; i < sc->nkeys; i++) {
            add_codes(sc->vs->s, sc->keys[i], kv[i], n, (uint32_t)stride, code);
            stride *= (int)key_codes(sc->vs->s, sc->keys[i]);
        }
        for (uint32_t j = 0; j < n; j++) {
            if (!g->dense[code[j]]) {
                key_at(sc, kv, kw, j, ab);
                long gi = gt_find(&g->t, ab, gt_hash(ab, sc->keyw));
                if (gi < 0)
                    return false;
                g->dense[code[j]] = (uint32_t)gi + 1;
            }
            g->gid[j] = g->dense[code[j]] - 1;
        }
        return true;
    }
    for (uint32_t j = 0; j < n; j++)
        key_at(sc, kv, kw, j, keys + (size_t)j * sc->keyw);
    for (uint32_t j = 0; j < n; j++) {
        const unsigned char *key = keys + (size_t)j * sc->keyw;
        long gi = gt_find(&g->t, key, gt_hash(key, sc->keyw));
        if (gi < 0)
            return false;
        g->gid[j] = (uint32_t)gi;
    }
    return true;
}

static bool group_consume(Worker *w, uint32_t pi, bool tag, const KSel *sel)
{
    (void)pi;
    const QScan *sc = w->sh->sc;
    KCtx *k = &w->k;
    const KVec *kv[64];
    if (sc->keyw > 4096 || sc->nkeys > 64) {
        scan_fail(w->sh, "group by: too many or too wide keys");
        return false;
    }
    for (int i = 0; i < sc->nkeys; i++)
        kv[i] = k_eval(k, sc->keys[i], tag, sel);
    if (!batch_groups(w, kv, sel->n) || !qa_grow(&w->grp->aggs, w->grp->t.n)) {
        scan_fail(w->sh, SCAN_OOM);
        return false;
    }
    for (int a = 0; a < sc->nagg_list; a++) {
        const QExpr *arg = sc->agg_list[a]->a;
        const KVec *v = arg ? k_eval(k, arg, tag, sel) : NULL;
        if (!qa_update(&w->grp->aggs, a, v, w->grp->gid, sel->n)) {
            scan_fail(w->sh, SCAN_OOM);
            return false;
        }
    }
    return true;
}

static bool group_begin(Worker *w)
{
    const QScan *sc = w->sh->sc;
    GroupState *g = w->grp = mem_calloc(1, sizeof *g);
    if (!g)
        return false;
    gt_init(&g->t, sc->keyw);
    g->ndense = getenv("COMB_GROUP_HASH") ? 0 : dense_codes(sc);
    return qa_init(&g->aggs, sc);
}

static void group_end(Worker *w)
{
    GroupState *g = w->grp;
    if (!g)
        return;
    mem_free(g->order, g->order ? (size_t)g->t.n * 4 + 4 : 0);
    gt_free(&g->t);
    qa_free(&g->aggs);
    mem_free(g->dense, g->dense ? (size_t)g->ndense * 4 : 0);
    mem_free(g->gid, g->gcap * 4);
    buf_free(&g->keys);
    mem_free(g, sizeof *g);
    w->grp = NULL;
}

/* from's groups into into's. */
static bool group_merge(Worker *into, Worker *from)
{
    GroupState *a = into->grp, *b = from->grp;
    uint32_t n = b->t.n;
    uint32_t *map = mem_alloc((size_t)n * 4 + 4);
    bool ok = map != NULL;
    for (uint32_t g = 0; ok && g < n; g++) {
        const unsigned char *k = gt_key(&b->t, g);
        long gi = gt_find(&a->t, k, gt_hash(k, a->t.keyw));
        ok = gi >= 0;
        map[g] = (uint32_t)gi;
    }
    ok = ok && qa_grow(&a->aggs, a->t.n) && qa_merge(&a->aggs, &b->aggs, map, n);
    mem_free(map, (size_t)n * 4 + 4);
    return ok;
}

/* ---- results as comb values -------------------------------------------- */

static int cmp_groups(const void *a, const void *b, void *t)
{
    const GTable *gt = t;
    return memcmp(gt_key(gt, *(const uint32_t *)a), gt_key(gt, *(const uint32_t *)b), gt->keyw);
}

/* Group g's row: its keys, then its items. held: the aggregates' values. */
static Value group_row(VM *vm, const QScan *sc, GroupState *gs, uint32_t g, VArray *held)
{
    VMap *m = vm_map_new(vm, (size_t)(sc->nkeys + sc->naggs));
    Value mv = v_obj(m);
    vm_push_root(vm, mv);
    const unsigned char *k = gt_key(&gs->t, g);
    for (int j = 0; j < sc->nkeys; j++) {
        vm_map_set(vm, m, v_obj(sc->key_names[j]), qx_key_value(vm, sc->keys[j], k));
        k += qx_keywidth(sc->keys[j]);
    }
    for (int j = 0; j < sc->nagg_list; j++)
        held->items[j] = qa_value(vm, &gs->aggs, j, g);
    for (int j = 0; j < sc->naggs; j++)
        vm_map_set(vm, m, v_obj(sc->aggs[j].name), rows_eval_aggs(vm, sc->aggs[j].e, held->items));
    vm_pop_root(vm, 1);
    return mv;
}

static Value group_rows(VM *vm, const QScan *sc, GroupState *gs)
{
    uint32_t n = gs->t.n;
    uint32_t *order = gs->order = mem_alloc((size_t)n * 4 + 4);
    if (!order)
        vm_throw(vm, v_obj(vm->oom));
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    if (n)  /* qsort of NULL, 0 is undefined */
        qsort_r(order, n, 4, cmp_groups, &gs->t);
    VArray *a = vm_array_new(vm, n);
    Value av = v_obj(a);
    vm_push_root(vm, av);
    /* A group's aggregates' values, held where the collector sees them: a
     * comb call in an item around them may collect (min and max of strings
     * are new strings). */
    VArray *held = vm_array_new(vm, (size_t)sc->nagg_list);
    vm_push_root(vm, v_obj(held));
    for (int j = 0; j < sc->nagg_list; j++)
        vm_array_push(vm, held, v_nil());
    for (uint32_t i = 0; i < n; i++)
        vm_array_push(vm, a, group_row(vm, sc, gs, order[i], held));
    vm_pop_root(vm, 2);
    return av;
}

static Value group_finish(VM *vm, Shared *sh, Worker *w, Ordered *o)
{
    (void)o;
    const QScan *sc = sh->sc;
    GroupState *gs = w->grp;
    if (sc->nkeys == 0 && gs->t.n == 0 &&
        (gt_find(&gs->t, (const unsigned char *)"", gt_hash((const unsigned char *)"", 0)) < 0 ||
         !qa_grow(&gs->aggs, 1)))
        vm_throw(vm, v_obj(vm->oom));   /* no keys: one group, even of nothing */
    return group_rows(vm, sc, gs);
}

const QConsumerOps qcons_group = {
    .begin = group_begin,
    .consume = group_consume,
    .merge = group_merge,
    .finish = group_finish,
    .end = group_end,
};
