/* rowsteps: the row steps of a query, over comb values: an array source's
 * whole pipeline, and whatever follows a scan (steps after a group by,
 * a select's expressions, a sort without a scan...). Values here are
 * dynamic: a map's missing key is nil, and nil compares false with
 * anything but nil. */
#include "config.h"
#include "vm/query/aggs.h"
#include "vm/query/qplan.h"

#include <math.h>
#include <string.h>

#include "store/mem.h"
#include "vm/natives.h"
#include "vm/regex.h"

typedef struct Ctx {
    VM *vm;
    Value row, outer;
    const Value *aggs;
} Ctx;

static Value eval(Ctx *c, const QExpr *e);

#define err_at(c, e, ...) qx_error((c)->vm, e, __VA_ARGS__)

/* An operator's operands of types it does not take, in the VM's words. */
_Noreturn static void types_error(Ctx *c, const QExpr *e, const char *sym, Value a, Value b)
{
    err_at(c, e, OPS_TYPES_FMT, sym, v_type_name(a), v_type_name(b));
}

static Value map_get(Ctx *c, Value m, VStr *key)
{
    Value v;
    if (IS_MAP(m) && vm_map_get(c->vm, AS_MAP(m), v_obj(key), &v))
        return v;
    return v_nil();
}

static Value get_name(Ctx *c, const QExpr *e)
{
    if (!IS_MAP(c->row))
        err_at(c, e, "a row must be a map to have field '%s', not %s", e->name->data,
               v_type_name(c->row));
    Value v;
    if (vm_map_get(c->vm, AS_MAP(c->row), v_obj(e->name), &v))
        return v;
    return map_get(c, c->outer, e->name);
}

/* The order of rows: nil, bools, numbers (NaN last), strings, then
 * anything else. */
static int rank(Value v)
{
    switch (v.type) {
    case VT_NIL: return 0;
    case VT_BOOL: return 1;
    case VT_INT: case VT_FLOAT: return 2;
    case VT_STR: return 3;
    default: return 4;
    }
}

int rows_compare(Value a, Value b)
{
    int ra = rank(a), rb = rank(b);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    switch (ra) {
    case 1: return a.as.b - b.as.b;
    case 2: return v_order_num(a, b);
    case 3: return str_compare(AS_STR(a), AS_STR(b));
    default: return 0;
    }
}

static bool is_nil_const(const QExpr *e)
{
    return e->op == QOP_CONST && IS_NIL(e->k);
}

/* A missing value (nil) compares false with anything, as in the scan,
 * except in the tests `x == nil` and `x != nil`. */
static bool compare(Ctx *c, const QExpr *e, Value a, Value b)
{
    bool r;
    if (!is_nil_const(e->a) && !is_nil_const(e->b) && (IS_NIL(a) || IS_NIL(b)))
        return false;
    if (e->op == QOP_EQ || e->op == QOP_NE)
        return v_equal(a, b) == (e->op == QOP_EQ);
    bool swap = e->op == QOP_GT || e->op == QOP_GE;   /* a > b is b < a, as in the VM */
    bool or_equal = e->op == QOP_LE || e->op == QOP_GE;
    Value x = swap ? b : a, y = swap ? a : b;
    if (vm_less(x, y, or_equal, &r) != AR_OK)
        types_error(c, e, or_equal ? "<=" : "<", x, y);
    return r;
}

static Value arith(Ctx *c, const QExpr *e, Value a, Value b)
{
    int op = e->op - QOP_ADD;
    Value r;
    if (IS_NIL(a) || IS_NIL(b))
        return v_nil();
    ArithStatus st = vm_arith(c->vm, op, a, b, &r);
    if (st == AR_TYPES)
        types_error(c, e, ops_arith_sym[op], a, b);
    if (st != AR_OK)
        err_at(c, e, "%s", ops_message[st]);
    return r;
}

/* -a, as the VM negates. */
static Value negate(Ctx *c, const QExpr *e, Value a)
{
    Value r;
    ArithStatus st = IS_NIL(a) ? AR_OK : vm_negate(a, &r);
    if (st == AR_TYPES)
        err_at(c, e, OPS_UNARY_FMT, "-", v_type_name(a));
    if (st != AR_OK)
        err_at(c, e, "%s", ops_message[st]);
    return IS_NIL(a) ? a : r;
}

/* day(t), hour(t) (ops.h), nil for nil. */
static Value time_func(Ctx *c, const QExpr *e, Value a)
{
    int64_t r;
    if (IS_NIL(a))
        return a;
    if (!IS_INT(a))
        err_at(c, e, OPS_NOTIME_FMT, vm_query_funcs[e->fn].name, v_type_name(a));
    if (e->fn == QF_hour)
        return v_int(ops_hour(a.as.i));
    if (ops_day(a.as.i, &r) != AR_OK)
        err_at(c, e, "%s", ops_message[AR_OVERFLOW]);
    return v_int(r);
}

/* Whether a tag's value v beats *best for max_by/min_by (numbers only;
 * nil and NaN never do), and then *best = v. */
static bool better(Ctx *c, const QExpr *e, Value v, Value *best)
{
    if (IS_NIL(v) || (IS_FLOAT(v) && isnan(v.as.f)))
        return false;
    if (!IS_INT(v) && !IS_FLOAT(v))
        err_at(c, e, "%s needs a number, not %s", vm_query_funcs[e->fn].name, v_type_name(v));
    int cmp = IS_NIL(*best) ? 0 : ops_cmp_num(IS_FLOAT(v), v.as.i, v.as.f, IS_FLOAT(*best), best->as.i, best->as.f);
    if (!IS_NIL(*best) && (e->fn == QF_max_by ? cmp <= 0 : cmp >= 0))
        return false;
    *best = v;
    return true;
}

static Value quant(Ctx *c, const QExpr *e)
{
    Value tags = eval(c, e->b);
    if (IS_NIL(tags))
        tags = v_obj(vm_array_new(c->vm, 0));
    if (!IS_ARRAY(tags))
        err_at(c, e, "tags must be an array of maps, not %s", v_type_name(tags));
    VArray *a = AS_ARRAY(tags);
    Ctx in = {c->vm, v_nil(), c->row, c->aggs};
    int64_t n = 0;
    Value hit = v_nil(), best = v_nil();
    for (size_t i = 0; i < a->len; i++) {
        in.row = a->items[i];
        bool ok = !e->a || picks_by(e->fn) || v_truthy(eval(&in, e->a));
        if (!ok) {
            if (e->fn == QF_all)
                return v_bool(false);
            continue;
        }
        if (picks_by(e->fn)) {
            if (better(c, e, eval(&in, e->a), &best))
                hit = a->items[i];
            continue;
        }
        n++;
        if (e->fn == QF_any)
            return v_bool(true);
        if (e->fn == QF_first || e->fn == QF_last) {
            hit = a->items[i];
            if (e->fn == QF_first)
                break;
        }
    }
    switch (e->fn) {
    case QF_any: return v_bool(false);
    case QF_all: return v_bool(true);
    case QF_count: return v_int(n);
    default: return e->name ? map_get(c, hit, e->name) : hit;
    }
}

static bool in_set(Ctx *c, const QExpr *e, Value v)
{
    if (e->set && e->set->match)
        return IS_STR(v) && e->set->match(e->set->mdata, AS_STR(v)->data, AS_STR(v)->len);
    if (IS_MAP(e->k))
        return !IS_NIL(v) && vm_map_ref(AS_MAP(e->k), v) != NULL;
    VArray *a = AS_ARRAY(e->k);
    (void)c;
    for (size_t i = 0; i < a->len; i++)
        if (v_equal(a->items[i], v))
            return true;
    return false;
}

static Value eval(Ctx *c, const QExpr *e)
{
    Value a, b;
    switch (e->op) {
    case QOP_CONST:
        return e->k;
    case QX_MAPGET:
    case QX_FIELD:
        return get_name(c, e);
    case QOP_NEG:
        return negate(c, e, eval(c, e->a));
    case QOP_NOT:
        return v_bool(!v_truthy(eval(c, e->a)));
    case QOP_ADD: case QOP_SUB: case QOP_MUL: case QOP_DIV: case QOP_MOD:
        a = eval(c, e->a);
        return arith(c, e, a, eval(c, e->b));
    case QOP_EQ: case QOP_NE: case QOP_LT: case QOP_LE: case QOP_GT: case QOP_GE:
        a = eval(c, e->a);
        return v_bool(compare(c, e, a, eval(c, e->b)));
    case QOP_AND:   /* as in comb: the operand that decided */
        a = eval(c, e->a);
        return v_truthy(a) ? eval(c, e->b) : a;
    case QOP_OR:
        a = eval(c, e->a);
        return v_truthy(a) ? a : eval(c, e->b);
    case QOP_IF:
        return eval(c, v_truthy(eval(c, e->a)) ? e->b : e->c);
    case QOP_MATCH:
    case QOP_NOMATCH:
        a = eval(c, e->a);
        if (!IS_STR(a) && !IS_INT(a))
            return v_bool(false);
        return v_bool(vm_match(c->vm, a, e->k) == (e->op == QOP_MATCH));
    case QX_SET:
        return v_bool(in_set(c, e, eval(c, e->a)));
    case QX_QUANT:
        return quant(c, e);
    case QX_CALL: {
        Value argv[QX_MAX_ARGS];
        int n = 0;
        for (const QExpr *x = e->a; x; x = x->b) {
            argv[n] = eval(c, x->a);
            vm_push_root(c->vm, argv[n++]);  /* a later argument may call comb and collect */
        }
        Value r = qx_call_values(e, n, argv);
        vm_pop_root(c->vm, (size_t)n);
        return r;
    }
    case QX_AGG:
        return c->aggs ? c->aggs[e->agg] : v_nil();
    case QX_FUNC:
        return time_func(c, e, eval(c, e->a));
    case QOP_INDEX:
        a = eval(c, e->a);
        b = eval(c, e->b);
        if (IS_MAP(a))
            return vm_map_ref(AS_MAP(a), b) ? *vm_map_ref(AS_MAP(a), b) : v_nil();
        if (IS_ARRAY(a) && IS_INT(b) && b.as.i >= 0 && (size_t)b.as.i < AS_ARRAY(a)->len)
            return AS_ARRAY(a)->items[b.as.i];
        return v_nil();
    default:
        err_at(c, e, "this cannot be computed for a row");
    }
}

Value rows_eval(VM *vm, const QExpr *e, Value row, Value outer)
{
    Ctx c = {vm, row, outer, NULL};
    return eval(&c, e);
}

Value rows_eval_aggs(VM *vm, const QExpr *e, const Value *aggs)
{
    Ctx c = {vm, v_nil(), v_nil(), aggs};
    return eval(&c, e);
}

/* ---- steps ---------------------------------------------------------------- */

/* The map a select makes of row, into *out (rooted by the caller; it may
 * be where row was). */
static void select_row(VM *vm, const QStep *s, Value row, Value *out)
{
    vm_push_root(vm, row);
    VMap *m = vm_map_new_keyed(vm, (size_t)s->n);   /* a few fields: one allocation */
    *out = v_obj(m);
    for (int j = 0; j < s->n; j++)
        vm_map_set(vm, m, v_obj(s->names[j]), rows_eval(vm, s->e[j], row, v_nil()));
    vm_pop_root(vm, 1);
}

int rows_streams_to(const QPlan *p, int from)
{
    while (from < p->nsteps && (p->steps[from].verb == QV_where || p->steps[from].verb == QV_select ||
                                p->steps[from].verb == QV_take || p->steps[from].verb == QV_skip))
        from++;
    return from;
}

int rows_step(VM *vm, const QPlan *p, int from, int to, uint64_t *taken, Value *row)
{
    bool last = false;
    for (int i = from; i < to; i++) {
        const QStep *s = &p->steps[i];
        switch (s->verb) {
        case QV_where:
            if (!v_truthy(rows_eval(vm, s->e[0], *row, v_nil())))
                return 0;
            break;
        case QV_select:
            if (!s->by_scan)
                select_row(vm, s, *row, row);
            break;
        case QV_skip:   /* taken[i] counts the rows left out */
            if (taken[i] < (uint64_t)s->e[0]->ki) {
                taken[i]++;
                return 0;
            }
            break;
        default:    /* take */
            if (taken[i] >= (uint64_t)s->e[0]->ki)
                return -1;
            last |= ++taken[i] == (uint64_t)s->e[0]->ki;
            break;
        }
    }
    return last ? 2 : 1;
}

/* The take counts of a run of steps, where the collector frees them. */
static const VHandleType taken_type = {.name = "taken"};

/* Steps [from, to) (where, select, take) over the rows a row at a time, as
 * the scan and `for` take them: once the takes have their rows, the rest
 * are never evaluated (and cannot fail). */
static VArray *stream(VM *vm, const QPlan *p, int from, int to, VArray *in)
{
    VArray *out = vm_array_new(vm, in->len);
    vm_push_root(vm, v_obj(out));
    VHandle *h = vm_handle_new(vm, &taken_type, (size_t)to * sizeof(uint64_t));
    vm_push_root(vm, v_obj(h));
    int k = 1;
    for (size_t i = 0; i < in->len && k != 2 && k != -1; i++) {
        vm_array_push(vm, out, in->items[i]);   /* rooted there while the steps make it */
        k = rows_step(vm, p, from, to, handle_data(h), &out->items[out->len - 1]);
        if (k < 1)
            out->len--;
    }
    vm_pop_root(vm, 2);
    return out;
}

/* `| tags`: a row per tag, the tagset's fields and the tag's. */
static VArray *tags(VM *vm, VArray *in)
{
    VArray *out = vm_array_new(vm, in->len);
    Value ov = v_obj(out);
    vm_push_root(vm, ov);
    VStr *tk = vm_str_cstr(vm, "tags");
    vm_push_root(vm, v_obj(tk));
    for (size_t i = 0; i < in->len; i++) {
        Value row = in->items[i], t = IS_MAP(row) ? *(vm_map_ref(AS_MAP(row), v_obj(tk)) ?: &(Value){0}) : v_nil();
        if (!IS_ARRAY(t))
            continue;
        for (size_t j = 0; j < AS_ARRAY(t)->len; j++) {
            VMap *m = vm_map_new(vm, 8);
            vm_array_push(vm, out, v_obj(m));
            size_t pos = 0;
            Value k, v;
            while (vm_map_next(AS_MAP(row), &pos, &k, &v))
                if (!(IS_STR(k) && str_equal(AS_STR(k), tk)))
                    vm_map_set(vm, m, k, v);
            Value tag = AS_ARRAY(t)->items[j];
            for (pos = 0; IS_MAP(tag) && vm_map_next(AS_MAP(tag), &pos, &k, &v);)
                vm_map_set(vm, m, k, v);
        }
    }
    vm_pop_root(vm, 2);
    return out;
}

/* Sorting by computed keys: a stable merge sort of row numbers. */
typedef struct SortCtx {
    Value *keys;        /* [nrows * nkeys] */
    int nkeys;
    const bool *desc;
} SortCtx;

static int cmp_rows(const SortCtx *sc, size_t a, size_t b)
{
    for (int k = 0; k < sc->nkeys; k++) {
        int c = rows_compare(sc->keys[a * (size_t)sc->nkeys + (size_t)k], sc->keys[b * (size_t)sc->nkeys + (size_t)k]);
        if (c)
            return sc->desc && sc->desc[k] ? -c : c;
    }
    return 0;
}

static void merge_sort(const SortCtx *sc, size_t *x, size_t *tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    merge_sort(sc, x, tmp, h);
    merge_sort(sc, x + h, tmp, n - h);
    size_t i = 0, j = h, m = 0;
    while (i < h || j < n)
        tmp[m++] = j >= n || (i < h && cmp_rows(sc, x[i], x[j]) <= 0) ? x[i++] : x[j++];
    memcpy(x, tmp, n * sizeof *x);
}

/* The rows in the order of keys (rows x nkeys values, rooted by the caller). */
static VArray *order(VM *vm, VArray *in, VArray *keys, int nkeys, const bool *desc)
{
    size_t n = in->len;
    size_t *ix = vm_alloc(vm, (2 * n + 1) * sizeof *ix);
    for (size_t i = 0; i < n; i++)
        ix[i] = i;
    SortCtx sc = {keys->items, nkeys, desc};
    merge_sort(&sc, ix, ix + n, n);
    VArray *out = vm_array_new(vm, n);
    for (size_t i = 0; i < n; i++)
        vm_array_push(vm, out, in->items[ix[i]]);
    vm_free_mem(vm, ix, (2 * n + 1) * sizeof *ix);
    return out;
}

static VArray *sort(VM *vm, const QStep *s, VArray *in)
{
    VArray *keys = vm_array_new(vm, in->len * (size_t)s->n);
    Value kv = v_obj(keys);
    vm_push_root(vm, kv);
    for (size_t i = 0; i < in->len; i++)
        for (int k = 0; k < s->n; k++)
            vm_array_push(vm, keys, rows_eval(vm, s->e[k], in->items[i], v_nil()));
    VArray *out = order(vm, in, keys, s->n, s->desc);
    vm_pop_root(vm, 1);
    return out;
}

/* ---- group by over rows ---- */

/* Per group: its key values, then per aggregate [n, acc, set]: acc is
 * min's or max's value so far, sum's or avg's VSum or variance's and
 * stddev's QVar (a handle), or for distinct true once a NaN
 * was seen (the set, a map, cannot hold it); set is distinct's map of the
 * values, or median's and quantile's array of them. */
enum { A_N, A_ACC, A_SET, A_WIDTH };

/* A VSum, or two doubles, where the collector frees them. */
static const VHandleType acc_type = {.name = "aggregate"};

static void *acc_of(VM *vm, Value *acc, size_t size)
{
    if (IS_NIL(*acc))
        *acc = v_obj(vm_handle_new(vm, &acc_type, size));
    return handle_data(AS_HANDLE(*acc));
}

/* Adds v (a number, or a bool as 1 or 0) to s. */
static void sum_add(VSum *s, Value v)
{
    if (IS_FLOAT(v))
        v_sum_float(s, v.as.f);
    else
        v_sum_int(s, IS_BOOL(v) ? v.as.b : v.as.i);
}

static double num_of(Value v)
{
    return IS_INT(v) ? (double)v.as.i : v.as.f;
}

static void agg_fold(VM *vm, const QExpr *ag, Value *st, Value v)
{
    if (ag->fn == QF_count && !ag->a) {
        st[A_N].as.i++;
        return;
    }
    if (IS_NIL(v))
        return;
    const char *name = vm_query_funcs[ag->fn].name;
    if (ag->fn == QF_count) {
        if (!IS_BOOL(v))
            qx_error(vm, ag, "count(PRED) needs true or false, not %s", v_type_name(v));
        st[A_N].as.i += v.as.b;
        return;
    }
    bool num = ag->fn != QF_min && ag->fn != QF_max && ag->fn != QF_distinct;
    bool boolean = IS_BOOL(v) && (ag->fn == QF_sum || ag->fn == QF_avg);
    if (num && !IS_NUM(v) && !boolean)
        qx_error(vm, ag, "%s needs numbers, not %s", name, v_type_name(v));
    st[A_N].as.i++;
    switch (ag->fn) {
    case QF_sum:
    case QF_avg:
        sum_add(acc_of(vm, &st[A_ACC], sizeof(VSum)), v);
        return;
    case QF_min:
    case QF_max: {
        int c = IS_NIL(st[A_ACC]) ? 0 : rows_compare(v, st[A_ACC]);
        if (IS_NIL(st[A_ACC]) || (ag->fn == QF_min ? c < 0 : c > 0))
            st[A_ACC] = v;
        return;
    }
    case QF_distinct:
        if (IS_FLOAT(v) && isnan(v.as.f)) {
            st[A_ACC] = v_bool(true);
            return;
        }
        if (IS_NIL(st[A_SET]))
            st[A_SET] = v_obj(vm_map_new(vm, 8));
        vm_map_set(vm, AS_MAP(st[A_SET]), v, v_bool(true));
        return;
    case QF_variance:
    case QF_stddev: {
        QVar *qv = acc_of(vm, &st[A_ACC], sizeof(QVar));
        if (IS_INT(v))
            qa_var_int(qv, v.as.i);
        else
            qa_var_float(qv, v.as.f);
        return;
    }
    default:    /* median, quantile */
        if (IS_NIL(st[A_SET]))
            st[A_SET] = v_obj(vm_array_new(vm, 8));
        vm_array_push(vm, AS_ARRAY(st[A_SET]), v);
        return;
    }
}

/* median's or quantile's value of the numbers in vals (n > 0). */
static Value quantile_of(VM *vm, const QExpr *ag, VArray *vals)
{
    size_t n = vals->len;
    double *x = vm_alloc(vm, n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = num_of(vals->items[i]);
    double r = qa_quantile(x, n, ag->fn == QF_median ? 0.5 : ag->kf);
    vm_free_mem(vm, x, n * sizeof *x);
    return v_float(r);
}

static Value agg_result(VM *vm, const QExpr *ag, const Value *st)
{
    Value r;
    switch (ag->fn) {
    case QF_count: return st[A_N];
    case QF_distinct:
        return v_int((IS_NIL(st[A_SET]) ? 0 : (int64_t)AS_MAP(st[A_SET])->live) + !IS_NIL(st[A_ACC]));
    case QF_sum:
        if (IS_NIL(st[A_ACC]))
            return v_nil();
        if (!v_sum_value(handle_data(AS_HANDLE(st[A_ACC])), &r))
            qx_error(vm, ag, "integer overflow in sum");
        return r;
    case QF_avg:
        return IS_NIL(st[A_ACC]) ? v_nil() : v_float(v_sum_mean(handle_data(AS_HANDLE(st[A_ACC])), (uint64_t)st[A_N].as.i));
    case QF_variance:
    case QF_stddev:
        return IS_NIL(st[A_ACC]) ? v_nil() : qa_var_value(vm, ag, handle_data(AS_HANDLE(st[A_ACC])));
    case QF_median:
    case QF_quantile:
        return IS_NIL(st[A_SET]) ? v_nil() : quantile_of(vm, ag, AS_ARRAY(st[A_SET]));
    default: return st[A_ACC];
    }
}

/* A map key standing for a tuple of values. */
static Value tuple_key(VM *vm, const Value *vals, int n)
{
    if (n == 1 && !IS_NIL(vals[0]) && !(IS_FLOAT(vals[0]) && vals[0].as.f != vals[0].as.f))
        return vals[0];
    VStrBuf sb;
    vm_sb_init(vm, &sb, 32);
    for (int i = 0; i < n; i++) {
        /* a float equal to an int is that int, as a map's key (1.0 and 1,
         * -0.0 and 0 are one key, as == has it) */
        Value v = vals[i];
        vm_map_norm_key(&v);
        vm_sb_printf(vm, &sb, "%d:", v.type);
        vm_show(vm, &sb, v, true);
        vm_sb_add(vm, &sb, "\x1f", 1);
    }
    return v_obj(vm_sb_done(vm, &sb));
}

static VArray *group(VM *vm, const QStep *s, VArray *in)
{
    int nk = s->nkeys, na = s->nagg_list, width = nk + A_WIDTH * na;
    VMap *index = vm_map_new(vm, 16);
    VArray *groups = vm_array_new(vm, 16);    /* each: an array of width values */
    Value iv = v_obj(index), gv = v_obj(groups);
    vm_push_root(vm, iv);
    vm_push_root(vm, gv);
    Value keys[64];
    if (nk > 64)
        vm_error(vm, "group by: too many keys");
    for (size_t i = 0; i < in->len || (!nk && !groups->len); i++) {
        Value row = i < in->len ? in->items[i] : v_nil();
        for (int k = 0; k < nk; k++)
            keys[k] = rows_eval(vm, s->e[k], row, v_nil());
        Value tk = tuple_key(vm, keys, nk), *hit = vm_map_ref(index, tk);
        VArray *g;
        if (hit) {
            g = AS_ARRAY(groups->items[hit->as.i]);
        } else {
            vm_push_root(vm, tk);
            g = vm_array_new(vm, (size_t)width);
            vm_array_push(vm, groups, v_obj(g));
            for (int k = 0; k < width; k++)
                vm_array_push(vm, g, k < nk ? keys[k] : (k - nk) % A_WIDTH == A_N ? v_int(0) : v_nil());
            vm_map_set(vm, index, tk, v_int((int64_t)groups->len - 1));
            vm_pop_root(vm, 1);
        }
        for (int a = 0; i < in->len && a < na; a++) {
            const QExpr *ag = s->agg_list[a];
            Value v = ag->a ? rows_eval(vm, ag->a, row, v_nil()) : v_nil();
            agg_fold(vm, ag, &g->items[nk + A_WIDTH * a], v);
        }
    }
    /* Groups in key order, then one row each. */
    VArray *sortkeys = vm_array_new(vm, groups->len * (size_t)(nk ? nk : 1));
    vm_push_root(vm, v_obj(sortkeys));
    for (size_t i = 0; i < groups->len; i++)
        for (int k = 0; k < nk; k++)
            vm_array_push(vm, sortkeys, AS_ARRAY(groups->items[i])->items[k]);
    VArray *sorted = nk ? order(vm, groups, sortkeys, nk, NULL) : groups;
    vm_push_root(vm, v_obj(sorted));
    VArray *out = vm_array_new(vm, sorted->len);
    vm_push_root(vm, v_obj(out));
    Value aggv[64];
    if (na > 64)
        vm_error(vm, "group by: too many aggregates");
    for (size_t i = 0; i < sorted->len; i++) {
        VArray *g = AS_ARRAY(sorted->items[i]);
        VMap *m = vm_map_new(vm, (size_t)s->n);
        vm_array_push(vm, out, v_obj(m));
        for (int k = 0; k < nk; k++)
            vm_map_set(vm, m, v_obj(s->names[k]), g->items[k]);
        for (int a = 0; a < na; a++)
            aggv[a] = agg_result(vm, s->agg_list[a], &g->items[nk + A_WIDTH * a]);
        for (int j = nk; j < s->n; j++)
            vm_map_set(vm, m, v_obj(s->names[j]), rows_eval_aggs(vm, s->e[j], aggv));
    }
    vm_pop_root(vm, 5);
    return out;
}

/* ---- stat over rows ---- */

/* A column's statistics so far, new: [count, nulls, min, max, sum, n,
 * set, NaN seen]. */
static VArray *stat_col(VM *vm, VMap *cols, Value k)
{
    VArray *st = vm_array_new(vm, 8);
    vm_map_set(vm, cols, k, v_obj(st));
    Value init[8] = {v_int(0), v_int(0), v_nil(), v_nil(), v_nil(), v_int(0),
                     v_obj(vm_map_new(vm, 8)), v_bool(false)};
    for (int j = 0; j < 8; j++)
        vm_array_push(vm, st, init[j]);
    return st;
}

static Value stat(VM *vm, const QStep *step, VArray *in)
{
    /* key -> [count, nulls, min, max, sum, n, set, NaN seen]: min and max
     * skip NaN, as the scan's stat does, and distinct counts it once (the
     * set, a map, cannot hold it). A nil is no value: the rows without
     * one (nil, or no such key) are its missing ones. The fields named
     * (stat f, ...) are the only ones, in that order. */
    VMap *cols = vm_map_new(vm, 8);
    Value cv = v_obj(cols);
    vm_push_root(vm, cv);
    for (int i = 0; i < step->n; i++)
        stat_col(vm, cols, step->e[i]->k);
    int64_t nrows = 0;
    for (size_t i = 0; i < in->len; i++) {
        if (!IS_MAP(in->items[i]))
            continue;
        nrows++;
        size_t pos = 0;
        Value k, v;
        while (vm_map_next(AS_MAP(in->items[i]), &pos, &k, &v)) {
            Value *hit = vm_map_ref(cols, k);
            if (!hit && step->n)
                continue;
            Value *s = (hit ? AS_ARRAY(*hit) : stat_col(vm, cols, k))->items;
            if (IS_NIL(v))
                continue;
            s[0].as.i++;
            if ((IS_STR(v) && !AS_STR(v)->len) || (IS_INT(v) && !v.as.i) || (IS_FLOAT(v) && v.as.f == 0))
                s[1].as.i++;
            if (IS_ARRAY(v) || IS_MAP(v))
                continue;
            if (IS_NUM(v)) {
                sum_add(acc_of(vm, &s[4], sizeof(VSum)), v);
                s[5].as.i++;
            }
            if (IS_FLOAT(v) && isnan(v.as.f)) {
                s[7] = v_bool(true);
                continue;
            }
            if (IS_NIL(s[2]) || rows_compare(v, s[2]) < 0)
                s[2] = v;
            if (IS_NIL(s[3]) || rows_compare(v, s[3]) > 0)
                s[3] = v;
            vm_map_set(vm, AS_MAP(s[6]), v, v_bool(true));
        }
    }
    VArray *out = vm_array_new(vm, cols->live);
    vm_push_root(vm, v_obj(out));
    size_t pos = 0;
    Value k, v;
    while (vm_map_next(cols, &pos, &k, &v)) {
        Value *s = AS_ARRAY(v)->items;
        VMap *m = vm_map_new(vm, 8);
        vm_array_push(vm, out, v_obj(m));
        const char *names[] = {"field", "count", "nulls", "missing", "min", "max", "mean", "distinct"};
        Value vals[] = {k, s[0], s[1], v_int(nrows - s[0].as.i), s[2], s[3],
                        s[5].as.i ? v_float(v_sum_mean(handle_data(AS_HANDLE(s[4])), (uint64_t)s[5].as.i)) : v_nil(),
                        v_int((int64_t)AS_MAP(s[6])->live + s[7].as.b)};
        for (int j = 0; j < 8; j++)
            vm_map_set(vm, m, v_obj(vm_str_cstr(vm, names[j])), vals[j]);
    }
    vm_pop_root(vm, 2);
    return v_obj(out);
}

/* The rows without repeats, in their order: a row repeats one before it
 * that prints the same (the same keys in the same order, the same values;
 * 1 and 1.0 print apart, so they are two rows). */
static VArray *distinct(VM *vm, VArray *in)
{
    VArray *out = vm_array_new(vm, in->len);
    vm_push_root(vm, v_obj(out));
    VMap *seen = vm_map_new(vm, in->len);
    vm_push_root(vm, v_obj(seen));
    for (size_t i = 0; i < in->len; i++) {
        if (!IS_MAP(in->items[i]))
            vm_error(vm, "distinct needs rows (maps), not %s", v_type_name(in->items[i]));
        VStrBuf sb;     /* the row's text, as print shows it, is its identity */
        vm_sb_init(vm, &sb, 64);
        vm_show(vm, &sb, in->items[i], true);
        Value key = v_obj(vm_sb_done(vm, &sb));
        if (vm_map_ref(seen, key))
            continue;
        vm_map_set(vm, seen, key, v_bool(true));
        vm_array_push(vm, out, in->items[i]);
    }
    vm_pop_root(vm, 2);
    return out;
}

/* row's value of the join's key i (nil: it matches nothing), raising
 * when row is no map or has no such field. */
static Value join_key(VM *vm, const QStep *s, int i, Value row, const char *side)
{
    VStr *name = AS_STR(s->e[i]->k);
    Value *v = IS_MAP(row) ? vm_map_ref(AS_MAP(row), s->e[i]->k) : NULL;
    if (!v) {
        char msg[200];
        if (IS_MAP(row))
            snprintf(msg, sizeof msg, "join: %s has no field '%.*s'", side, (int)name->len, name->data);
        else
            snprintf(msg, sizeof msg, "join: %s is %s, not a map", side, v_type_name(row));
        vm_error_at(vm, (uint32_t)s->line, (uint32_t)s->col, msg);
    }
    return *v;
}

/* An equi-join of the rows with a small side: the other rows indexed by
 * their keys (a map per key, nested; the last holds arrays of rows), then
 * for each row the rows its keys find, each merged into a copy of it. */
static VArray *join(VM *vm, const QStep *s, VArray *in)
{
    Value right = s->e[0]->k;
    if (IS_HANDLE(right) && AS_HANDLE(right)->type == &vm_query_type)
        right = vm_query_run(vm, right);
    vm_push_root(vm, right);
    if (!IS_ARRAY(right)) {
        char msg[160];
        snprintf(msg, sizeof msg, "join needs a query or an array of maps to join with, not %s",
                 v_type_name(right));
        vm_error_at(vm, (uint32_t)s->line, (uint32_t)s->col, msg);
    }
    VArray *r = AS_ARRAY(right);
    VMap *index = vm_map_new(vm, r->len);
    vm_push_root(vm, v_obj(index));
    for (size_t j = 0; j < r->len; j++) {
        Value *at = NULL;
        VMap *level = index;
        for (int k = 1; k < s->n; k++) {
            Value key = join_key(vm, s, k, r->items[j], "a row of the other side");
            if (IS_NIL(key))
                break;
            if (!(at = vm_map_ref(level, key))) {
                Value made = k + 1 < s->n ? v_obj(vm_map_new(vm, 4)) : v_obj(vm_array_new(vm, 1));
                vm_map_set(vm, level, key, made);
                at = vm_map_ref(level, key);
            }
            if (k + 1 < s->n)
                level = AS_MAP(*at);
            else
                vm_array_push(vm, AS_ARRAY(*at), r->items[j]);
        }
    }
    VArray *out = vm_array_new(vm, in->len);
    vm_push_root(vm, v_obj(out));
    for (size_t i = 0; i < in->len; i++) {
        Value *at = NULL;
        VMap *level = index;
        for (int k = 1; k < s->n && level; k++) {
            Value key = join_key(vm, s, k, in->items[i], "a row");
            at = IS_NIL(key) ? NULL : vm_map_ref(level, key);
            level = at && IS_MAP(*at) ? AS_MAP(*at) : NULL;
        }
        for (size_t m = 0; at && IS_ARRAY(*at) && m < AS_ARRAY(*at)->len; m++) {
            VMap *row = AS_MAP(in->items[i]), *other = AS_MAP(AS_ARRAY(*at)->items[m]);
            VMap *both = vm_map_new(vm, row->live + other->live);
            vm_array_push(vm, out, v_obj(both));
            size_t pos = 0;
            Value key, val;
            while (vm_map_next(row, &pos, &key, &val))
                vm_map_set(vm, both, key, val);
            for (pos = 0; vm_map_next(other, &pos, &key, &val);)
                if (!vm_map_ref(both, key))
                    vm_map_set(vm, both, key, val);
        }
        vm_gc_step(vm);
    }
    vm_pop_root(vm, 3);
    return out;
}

Value rows_write(VM *vm, QPlan *p, const QStep *s, Value rows)
{
    if (qtext_format(s->write_target))
        return qtext_write(vm, p, s, rows);
    VHandle *schema = vm_schema_of(s->write_opts ? *(vm_map_ref(s->write_opts, v_obj(vm_str_cstr(vm, "schema"))) ?: &(Value){0}) : v_nil());
    if (!schema && p->typed)
        schema = p->scan.src->schema;
    Value keep;
    VLoader *l = vm_loader_new(vm, s->write_target, schema, s->write_opts, &keep);
    vm_push_root(vm, keep);
    Value row, b;
    int64_t pos = 0;
    uint64_t i = 0;
    for (; IS_ARRAY(rows) ? i < AS_ARRAY(rows)->len
                          : AS_HANDLE(rows)->type->next(vm, handle_data(AS_HANDLE(rows)), &pos, &row, &b);
         i++) {
        vm_loader_add(vm, l, IS_ARRAY(rows) ? AS_ARRAY(rows)->items[i] : row, i + 1);
        vm_gc_step(vm);     /* the rows written are garbage */
    }
    vm_loader_finish(vm, l);
    vm_pop_root(vm, 1);
    return v_int((int64_t)i);   /* the rows, as the scan's write counts them */
}

/* A stream's rows (read_text's {stream: true}) through the steps from
 * *from that go a row at a time, as they are read: the rows they keep, or
 * their count when `count` follows; *from moves past the steps done. So a
 * file of any size costs the rows kept, not the rows read. */
static Value from_stream(VM *vm, const QPlan *p, int *from, Value src)
{
    int to = rows_streams_to(p, *from);
    bool count = to < p->nsteps && p->steps[to].verb == QV_count;
    Value *level = vm->nframes ? vm->frames[vm->nframes - 1].top : vm->stack;
    VHandle *h = AS_HANDLE(src);
    Value cur = h->type->iter ? h->type->iter(vm, src) : src;
    vm_iter_push(vm, level, cur);
    VArray *out = vm_array_new(vm, 16);
    vm_push_root(vm, v_obj(out));
    VHandle *taken = vm_handle_new(vm, &taken_type, (size_t)to * sizeof(uint64_t));
    vm_push_root(vm, v_obj(taken));
    int64_t pos = 0, n = 0;
    Value row, b;
    int k = 1;
    while (k != 2 && k != -1 && AS_HANDLE(cur)->type->next(vm, handle_data(AS_HANDLE(cur)), &pos, &row, &b)) {
        vm_array_push(vm, out, row);    /* rooted there while the steps make it */
        k = rows_step(vm, p, *from, to, handle_data(taken), &out->items[out->len - 1]);
        if (k < 1 || count)
            out->len--;
        n += k >= 1;
        vm_gc_step(vm);     /* a row left out is garbage */
    }
    vm_iter_close(vm, level);
    vm_pop_root(vm, 2);
    *from = count ? to + 1 : to;
    return count ? v_int(n) : v_obj(out);
}

Value rows_run(VM *vm, QPlan *p, int from, Value rows)
{
    if (IS_HANDLE(rows))
        rows = from_stream(vm, p, &from, rows);
    for (int i = from; i < p->nsteps; i++) {
        const QStep *s = &p->steps[i];
        if (s->by_scan)
            continue;   /* the scan's rows are the select's (columns kept as they are) */
        if (!IS_ARRAY(rows))
            vm_error(vm, "'%s' needs rows, not %s", vm_verbs[s->verb].name, v_type_name(rows));
        VArray *in = AS_ARRAY(rows);
        vm_push_root(vm, rows);
        int to = rows_streams_to(p, i);
        switch (to > i ? QV_where : s->verb) {
        case QV_where:  /* where, select, take */
            rows = v_obj(stream(vm, p, i, to, in));
            i = to - 1;
            break;
        case QV_sort: rows = v_obj(sort(vm, s, in)); break;
        case QV_group: rows = v_obj(group(vm, s, in)); break;
        case QV_tags: rows = v_obj(tags(vm, in)); break;
        case QV_distinct: rows = v_obj(distinct(vm, in)); break;
        case QV_join: rows = v_obj(join(vm, s, in)); break;
        case QV_count: rows = v_int((int64_t)in->len); break;
        case QV_stat: rows = stat(vm, s, in); break;
        case QV_write: rows = rows_write(vm, p, s, rows); break;
        case QV_explain: rows = qexplain_array(vm, p); break;
        default: break;
        }
        vm_pop_root(vm, 1);
    }
    return rows;
}
