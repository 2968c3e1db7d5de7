/* sets: the right side of `a in S`: a hash set of values (ints, floats by
 * bits, strings) that the kernels and row steps look values up in, built
 * from an array, a map's keys or a query's one column; or a matcher
 * handle, matcher(fn), whose comb function the scan asks per string. */
#include "config.h"
#include "vm/query/bind.h"

#include <math.h>
#include <string.h>
#include <xxhash.h>

#include "vm/natives.h"

/* ---- matchers ----------------------------------------------------------- */

/* matcher(fn): a comb function s -> bool as the right side of `in`. The
 * scan asks it on the VM's thread (QScan.vm_calls). */
typedef struct Matcher {
    Value fn;
} Matcher;

static void matcher_mark(VM *vm, void *data)
{
    vm_mark(vm, ((Matcher *)data)->fn);
}

static void matcher_show(VM *vm, void *data, VStrBuf *sb)
{
    vm_sb_addc(vm, sb, "matcher(");
    vm_show(vm, sb, ((Matcher *)data)->fn, false);
    vm_sb_addc(vm, sb, ")");
}

const VHandleType vm_matcher_type = {.name = "matcher", .mark = matcher_mark, .show = matcher_show};

Value nat_matcher(VM *vm, int argc, Value *argv)
{
    (void)argc;
    if (!IS_FUNC(argv[0]) && argv[0].type != VT_NATIVE)
        vm_arg_error(vm, 0, "a function", argv[0]);
    VHandle *h = vm_handle_new(vm, &vm_matcher_type, sizeof(Matcher));
    ((Matcher *)handle_data(h))->fn = argv[0];
    return v_obj(h);
}

/* ---- hash sets --------------------------------------------------------- */

static uint64_t set_hash(const void *p, size_t n)
{
    uint64_t h = XXH3_64bits(p, n);
    return h ? h : 1;
}

static bool set_find(const QSet *s, uint64_t h, const void *p, size_t n, size_t *slot)
{
    size_t i = h & s->mask;
    for (; s->hashes[i]; i = (i + 1) & s->mask) {
        if (s->hashes[i] != h)
            continue;
        uint32_t j = s->idx[i];
        bool eq = s->type == QT_STR ? s->lens[j] == n && !memcmp(s->strs[j], p, n)
                  : s->type == QT_FLOAT ? !memcmp(&s->floats[j], p, 8)
                                        : !memcmp(&s->ints[j], p, 8);
        if (eq)
            return true;
    }
    *slot = i;
    return false;
}

bool qset_has(const QSet *s, const void *p, size_t n)
{
    size_t slot;
    return s->mask && set_find(s, set_hash(p, n), p, n, &slot);
}

static void set_add(Binder *b, QSet *s, Value v, const QExpr *at)
{
    char d[96];
    int64_t i = 0;
    double f = 0;
    const void *p = &i;
    size_t n = 8;
    if (s->type == QT_STR) {
        if (!IS_STR(v))
            goto mismatch;
        p = AS_STR(v)->data;
        n = AS_STR(v)->len;
    } else if (s->type == QT_FLOAT) {
        if (!IS_NUM(v))
            goto mismatch;
        f = IS_INT(v) ? (double)v.as.i : v.as.f;
        if (isnan(f) || (IS_INT(v) && ops_cmp_int_float(v.as.i, f)))
            return;     /* equals no float (NaN not even itself) */
        f = f == 0 ? 0 : f; /* -0 is 0 */
        p = &f;
    } else if (IS_INT(v) || (s->type == QT_BOOL && IS_BOOL(v))) {
        i = IS_BOOL(v) ? v.as.b : v.as.i;
    } else if (IS_FLOAT(v) && s->type == QT_INT) {
        if (!ops_float_int(v.as.f, &i)) {
            if (s->big)     /* no int equals it, a big value may */
                set_add(b, s->big, v, at);
            return;
        }
    } else {
        goto mismatch;
    }
    uint64_t h = set_hash(p, n);
    size_t slot;
    if (set_find(s, h, p, n, &slot))
        return;
    s->ints[s->n] = i;
    s->floats[s->n] = f;
    s->strs[s->n] = (char *)p;  /* the string stays alive in the plan's keep */
    s->lens[s->n] = (uint32_t)n;
    s->hashes[slot] = h;
    s->idx[slot] = (uint32_t)s->n++;
    return;
mismatch:
    bind_error(b, at, "the set holds %s %s, which cannot equal %s", v_type_name(v) [0] == 'i' ? "an" : "a",
               v_type_name(v), qb_describe(b, at, d, sizeof d));
}

/* A set for n values (its arrays are the plan's, freed with it). */
static QSet *new_set(Binder *b, QType t, size_t n)
{
    QSet *s = qp_alloc(b->vm, b->p, sizeof *s);
    size_t slots = 16;
    while (slots < 2 * n + 2)
        slots *= 2;
    s->type = t;
    s->mask = slots - 1;
    s->hashes = qp_alloc(b->vm, b->p, slots * 8);
    s->idx = qp_alloc(b->vm, b->p, slots * 4);
    s->cap = n + 1;
    s->ints = qp_alloc(b->vm, b->p, s->cap * 8);
    s->floats = qp_alloc(b->vm, b->p, s->cap * 8);
    s->strs = qp_alloc(b->vm, b->p, s->cap * sizeof(char *));
    s->lens = qp_alloc(b->vm, b->p, s->cap * 4);
    return s;
}

/* ---- binding `a in S` --------------------------------------------------- */

static bool numeric_type(QType t)
{
    return t == QT_INT || t == QT_FLOAT;
}

/* The lines of a stream (lines(path), a file), read to its end. */
static Value stream_items(VM *vm, VHandle *h)
{
    VArray *a = vm_array_new(vm, 16);
    vm_push_root(vm, v_obj(a));
    int64_t pos = 0;
    Value x, y;
    while (h->type->next(vm, handle_data(h), &pos, &x, &y))
        vm_array_push(vm, a, x);
    vm_pop_root(vm, 1);
    return v_obj(a);
}

/* The values of a set: an array's items, a map's keys, a query's rows'
 * only column, a stream's lines (*text set). */
static VArray *set_values(Binder *b, QExpr *at, Value v, bool *text)
{
    *text = IS_HANDLE(v) && AS_HANDLE(v)->type != &vm_query_type && AS_HANDLE(v)->type->next;
    if (*text)
        v = stream_items(b->vm, AS_HANDLE(v));
    if (IS_HANDLE(v) && AS_HANDLE(v)->type == &vm_query_type)
        v = vm_query_run(b->vm, v);
    if (IS_MAP(v)) {
        VArray *a = vm_array_new(b->vm, AS_MAP(v)->live);
        size_t pos = 0;
        Value k, x;
        while (vm_map_next(AS_MAP(v), &pos, &k, &x))
            vm_array_push(b->vm, a, k);
        return a;
    }
    if (!IS_ARRAY(v))
        bind_error(b, at, "'in' needs an array, a map, lines(...) or a matcher on its right, not %s",
                   v_type_name(v));
    VArray *a = AS_ARRAY(v);
    if (!a->len || !IS_MAP(a->items[0]))
        return a;
    /* rows of one column, as a query gives */
    VArray *vals = vm_array_new(b->vm, a->len);
    for (size_t i = 0; i < a->len; i++) {
        VMap *m = IS_MAP(a->items[i]) ? AS_MAP(a->items[i]) : NULL;
        size_t pos = 0;
        Value k, x;
        if (!m || m->live != 1 || !vm_map_next(m, &pos, &k, &x))
            bind_error(b, at, "'in' over rows needs rows of one column");
        vm_array_push(b->vm, vals, x);
    }
    return vals;
}

QExpr *qb_in(Binder *b, Value node)
{
    QExpr *e = qb_new(b, QX_SET, node);
    e->a = qb_expr(b, nval(node, 3));
    QExpr *setx = qb_expr(b, nval(node, 4));
    e->type = QT_BOOL;
    e->tag = e->a->tag;
    char d[96];
    if (setx->op != QOP_CONST)
        bind_error(b, setx, "the set after 'in' must not depend on the row's fields");
    e->k = setx->k;
    if (IS_HANDLE(e->k) && AS_HANDLE(e->k)->type == &vm_matcher_type) {
        if (e->a->type != QT_STR && e->a->type != QT_ANY)
            bind_error(b, e->a, "a matcher matches strings, not %s", qb_describe(b, e->a, d, sizeof d));
        void *mc = qx_call_new(b->vm, b->p, ((Matcher *)handle_data(AS_HANDLE(e->k)))->fn, e,
                               "the matcher's function");
        e->set = qp_alloc(b->vm, b->p, sizeof *e->set);
        e->set->match = qx_call_str;
        e->set->mdata = mc;
        return e;
    }
    bool text;
    VArray *vals = set_values(b, setx, setx->k, &text);
    qp_keep(b->vm, b->p, v_obj(vals));
    /* lines of numbers for a number field: as int() or float() reads them */
    for (size_t i = 0; text && numeric_type(e->a->type) && i < vals->len; i++) {
        Value n = (e->a->type == QT_FLOAT ? nat_float : nat_int)(b->vm, 1, &vals->items[i]);
        if (IS_INT(n) || IS_FLOAT(n))
            vals->items[i] = n;
    }
    if (e->a->type == QT_ANY) {
        e->k = v_obj(vals);
        return e;   /* the row steps look the values up one by one */
    }
    QType t = e->a->type == QT_NIL ? QT_INT : e->a->type;
    e->set = new_set(b, t, vals->len);
    if (e->a->big)
        e->set->big = new_set(b, QT_FLOAT, vals->len);
    for (size_t i = 0; i < vals->len; i++)
        set_add(b, e->set, vals->items[i], e->a);
    if (e->a->is_enum && e->a->op == QX_FIELD) {
        const st_field *fd = &b->vs->s->fields[e->a->field];
        e->mask = qb_mask(b);
        for (uint32_t k = 0; k < fd->nsyms; k++)
            if (qset_has(e->set, fd->syms[k], strlen(fd->syms[k])))
                qb_mask_set(e->mask, k);
    }
    return e;
}
