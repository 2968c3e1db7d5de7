/* query: pipelines as comb values: the tables of verbs, query functions
 * and operators; the query handle (run, printed, iterated, extended); the
 * _pipe native the compiler calls; and which result columns hold times. */
#include "config.h"
#include "vm/query/bind.h"

#include <stdio.h>
#include <string.h>

#include "vm/natives.h"

const VerbDef vm_verbs[QV__COUNT] = {
#define X(name, last, usage, help) {#name, last, usage, help},
#include "vm/verbs.def"
#undef X
};

const QueryFuncDef vm_query_funcs[QF__COUNT] = {
#define X(name, min, max, help) {#name, min, max, help},
    QUERY_FUNCS(X)
#undef X
};

static int find_name(const char *const *names, size_t count, size_t stride, const char *name,
                     size_t n)
{
    for (size_t i = 0; i < count; i++) {
        const char *s = *(const char *const *)((const char *)names + i * stride);
        if (strlen(s) == n && !memcmp(s, name, n))
            return (int)i;
    }
    return -1;
}

int vm_verb_find(const char *name, size_t n)
{
    return find_name(&vm_verbs[0].name, QV__COUNT, sizeof vm_verbs[0], name, n);
}

int vm_query_func_find(const char *name, size_t n)
{
    return find_name(&vm_query_funcs[0].name, QF__COUNT, sizeof vm_query_funcs[0], name, n);
}

const char *const qx_op_sym[QOP__COUNT] = {
    [QOP_ADD] = "+", [QOP_SUB] = "-", [QOP_MUL] = "*", [QOP_DIV] = "/", [QOP_MOD] = "%",
    [QOP_EQ] = "==", [QOP_NE] = "!=", [QOP_LT] = "<", [QOP_LE] = "<=", [QOP_GT] = ">",
    [QOP_GE] = ">=", [QOP_MATCH] = "~", [QOP_NOMATCH] = "!~", [QOP_IN] = "in",
};

/* ---- the query handle --------------------------------------------------- */

static void query_free(VM *vm, void *data)
{
    VQuery *q = data;
    qp_free(vm, &q->plan);
}

static void query_mark(VM *vm, void *data)
{
    VQuery *q = data;
    vm_mark(vm, q->src);
    if (q->stages)
        vm_mark_obj(vm, &q->stages->hdr);
    if (q->plan.keep)
        vm_mark_obj(vm, &q->plan.keep->hdr);
    for (int i = 0; i < q->plan.nmodvars; i++)
        vm_mark(vm, q->plan.modval[i]);
}

static Value query_iter(VM *vm, Value qv)
{
    return qcursor_open(vm, qv, qp_ready(vm, qv)->plan.nsteps);
}

static void query_show(VM *vm, void *data, VStrBuf *sb)
{
    /* The run may call comb (a matcher), and so collect: root the text so
     * far and the rows. */
    vm_push_root(vm, v_obj(sb->s));
    Value r = vm_query_run(vm, v_obj((VHandle *)((char *)data - offsetof(VHandle, data))));
    vm_push_root(vm, r);
    vm_show(vm, sb, r, false);
    vm_pop_root(vm, 2);
}

const VHandleType vm_query_type = {
    .name = "query", .free = query_free, .mark = query_mark, .iter = query_iter,
    .show = query_show,
};

/* ---- which result columns hold times ------------------------------------ */

static bool in_names(VArray *names, VStr *n)
{
    for (size_t i = 0; n && i < names->len; i++)
        if (str_equal(AS_STR(names->items[i]), n))
            return true;
    return false;
}

/* Whether e's value is a time: a time field, day() of one, min or max of
 * one, one plus or minus seconds, given the columns known to hold times. */
static bool is_time(const QPlan *p, const QExpr *e, VArray *times)
{
    if (!e)
        return false;
    if (e->op == QX_FIELD)
        return p->scan.vs->s->fields[e->field].type == ST_TIME;
    if (e->op == QX_MAPGET)
        return in_names(times, e->name);
    if ((e->op == QX_FUNC && e->fn == QF_day) ||
        (e->op == QX_AGG && (e->fn == QF_min || e->fn == QF_max)))
        return is_time(p, e->a, times);
    if (e->op == QOP_ADD || e->op == QOP_SUB)  /* a time plus or minus seconds (not two times) */
        return is_time(p, e->a, times) != is_time(p, e->b, times) &&
               (e->op == QOP_ADD || is_time(p, e->a, times));
    if (e->op == QOP_IF && !e->fn)    /* times on both branches (or nil) */
        return (is_time(p, e->b, times) || e->b->type == QT_NIL) &&
               (is_time(p, e->c, times) || e->c->type == QT_NIL) && e->type != QT_NIL;
    return false;
}

VArray *vm_query_time_columns(VM *vm, Value qv)
{
    return qp_time_columns(vm, &qp_ready(vm, qv)->plan);
}

VArray *qp_time_columns(VM *vm, const QPlan *p)
{
    VArray *times = vm_array_new(vm, 4);
    vm_push_root(vm, v_obj(times));
    /* an array or stream read_text made: its times */
    VArray *given = p->typed ? NULL : vm_text_time_columns(vm, p->array);
    vm_push_root(vm, given ? v_obj(given) : v_nil());
    for (size_t i = 0; given && i < given->len; i++)
        vm_array_push(vm, times, given->items[i]);
    vm_pop_root(vm, 1);
    const QScan *sc = &p->scan;
    if (p->typed && sc->consumer == QC_GROUP) {
        for (int i = 0; i < sc->nkeys; i++)
            if (is_time(p, sc->keys[i], times))
                vm_array_push(vm, times, v_obj(sc->key_names[i]));
        for (int i = 0; i < sc->naggs; i++)
            if (is_time(p, sc->aggs[i].e, times))
                vm_array_push(vm, times, v_obj(sc->aggs[i].name));
    } else if (p->typed && sc->consumer == QC_COLLECT) {
        for (uint32_t f = 0; f < sc->vs->s->nfields; f++)
            if (sc->vs->s->fields[f].type == ST_TIME)
                vm_array_push(vm, times, v_obj(sc->vs->names[f]));
    }
    for (int i = 0; i < p->nsteps; i++) {
        const QStep *st = &p->steps[i];
        if (st->verb != QV_select && st->verb != QV_group)
            continue;
        VArray *next = vm_array_new(vm, 4);
        vm_push_root(vm, v_obj(next));
        for (int j = 0; j < st->n; j++)
            if (is_time(p, st->e[j], times))
                vm_array_push(vm, next, v_obj(st->names[j]));
        vm_pop_root(vm, 2);
        times = next;
        vm_push_root(vm, v_obj(times));
    }
    vm_pop_root(vm, 1);
    return times;
}

Value vm_query_source(Value v)
{
    if (!IS_HANDLE(v) || AS_HANDLE(v)->type != &vm_query_type)
        return v_nil();
    return ((VQuery *)handle_data(AS_HANDLE(v)))->src;
}

bool vm_query_made_columns(Value v, void (*add)(void *acc, const char *name, size_t len), void *acc)
{
    if (!IS_HANDLE(v) || AS_HANDLE(v)->type != &vm_query_type)
        return false;
    VQuery *q = handle_data(AS_HANDLE(v));
    for (size_t i = 0; i < q->nstages; i++) {
        Value st = qp_stage(q, (int)i);
        int verb = (int)nint(st, 0);
        if (verb != QV_select && verb != QV_group)
            continue;
        /* select: name, e, ...; group: nkeys, then name, e, ... */
        for (size_t k = verb == QV_group ? 4 : 3; k + 1 < nlen(st); k += 2)
            if (IS_STR(nval(st, k)))
                add(acc, AS_STR(nval(st, k))->data, AS_STR(nval(st, k))->len);
    }
    return true;
}

/* A query's rows as a table shows them: the query run, its time columns
 * as ISO-8601 text; so also the rows of an array read_text made. Anything
 * else is returned as it is. */
Value vm_query_display(VM *vm, Value v)
{
    VArray *times;
    if (IS_ARRAY(v) && AS_ARRAY(v)->times)
        times = AS_ARRAY(v)->times;
    else if (IS_HANDLE(v) && AS_HANDLE(v)->type == &vm_query_type)
        times = vm_query_time_columns(vm, v);
    else
        return v;
    vm_push_root(vm, v_obj(times));
    Value r = IS_ARRAY(v) ? v : vm_query_run(vm, v);
    vm_push_root(vm, r);
    if (times->len && IS_ARRAY(r)) {
        VArray *shown = vm_array_new(vm, AS_ARRAY(r)->len);
        vm_push_root(vm, v_obj(shown));
        for (size_t i = 0; i < AS_ARRAY(r)->len; i++)
            vm_array_push(vm, shown, vm_query_show_times(vm, times, AS_ARRAY(r)->items[i]));
        vm_pop_root(vm, 1);
        r = v_obj(shown);
    }
    vm_pop_root(vm, 2);
    return r;
}

Value vm_query_show_times(VM *vm, VArray *times, Value row)
{
    if (!IS_MAP(row) || !times->len)
        return row;
    /* a copy: the rows may be the program's own (a query over an array) */
    VMap *m = vm_map_new(vm, AS_MAP(row)->live);
    vm_push_root(vm, v_obj(m));
    size_t pos = 0;
    Value k, x;
    while (vm_map_next(AS_MAP(row), &pos, &k, &x)) {
        if (IS_INT(x) && in_names(times, IS_STR(k) ? AS_STR(k) : NULL)) {
            char buf[40];
            st_time_format(x.as.i, buf, sizeof buf);
            x = v_obj(vm_str_cstr(vm, buf));
        }
        vm_map_set(vm, m, k, x);
    }
    vm_pop_root(vm, 1);
    return v_obj(m);
}

/* ---- running ------------------------------------------------------------ */

Value vm_query_run(VM *vm, Value qv)
{
    VQuery *q = qp_ready(vm, qv);
    QPlan *p = &q->plan;
    int verb = qp_last_verb(q);
    if (verb == QV_explain)
        return p->typed ? qexplain_scan(vm, p) : rows_run(vm, p, 0, p->array);
    if (verb == QV_schema) {
        if (!p->typed)
            vm_error(vm, "schema needs a tagset file or a store as the source");
        return v_obj(p->scan.src->schema);
    }
    if (!p->typed)
        return rows_run(vm, p, 0, p->array);
    int last = p->nsteps - 1;
    if (verb == QV_write && last >= 0 && p->steps[last].verb == QV_write && qcursor_streams(p, last)) {
        /* The rows to the target as they come, the scan closed after (or
         * as a raise leaves the native that runs this). */
        Value *level = vm->nframes ? vm->frames[vm->nframes - 1].top : vm->stack;
        Value cur = qcursor_open(vm, qv, last);
        vm_iter_push(vm, level, cur);
        Value n = rows_write(vm, p, &p->steps[last], cur);
        vm_iter_close(vm, level);
        return n;
    }
    /* Row steps that cut the rows down (a where, a take) or a count after
     * them: the rows as they come, as `for` reads them, not every row the
     * scan collects held first (a take stops the scan). */
    int to = verb == QV_count && last >= 0 && p->steps[last].verb == QV_count ? last : p->nsteps;
    bool cuts = false;
    for (int i = 0; i < to; i++)
        cuts |= p->steps[i].verb == QV_where || p->steps[i].verb == QV_take || p->steps[i].verb == QV_skip;
    if (to > 0 && (cuts || to < p->nsteps) && qcursor_streams(p, to)) {
        Value *level = vm->nframes ? vm->frames[vm->nframes - 1].top : vm->stack;
        Value cur = qcursor_open(vm, qv, to);
        vm_iter_push(vm, level, cur);
        VArray *a = to < p->nsteps ? NULL : vm_array_new(vm, 16);
        Value av = a ? v_obj(a) : v_nil(), row;
        vm_push_root(vm, av);
        int64_t n = 0;
        while (qcursor_next(vm, cur, &row)) {
            if (a)
                vm_array_push(vm, a, row);
            n++;
            vm_gc_step(vm);     /* a counted row is garbage */
        }
        vm_pop_root(vm, 1);
        vm_iter_close(vm, level);
        return a ? av : v_int(n);
    }
    vm_push_root(vm, qv);
    Value r = scan_run(vm, p);
    vm_push_root(vm, r);
    r = rows_run(vm, p, 0, r);
    vm_pop_root(vm, 2);
    return r;
}

int64_t vm_query_count(VM *vm, Value q)
{
    vm_push_root(vm, q);
    VArray *plan = vm_array_new(vm, 1);
    vm_push_root(vm, v_obj(plan));
    VArray *stage = vm_array_new(vm, 3);
    vm_array_push(vm, plan, v_obj(stage));
    vm_array_push(vm, stage, v_int(QV_count));
    vm_array_push(vm, stage, v_int(0));
    vm_array_push(vm, stage, v_int(0));
    Value argv[2] = {q, v_obj(plan)};
    Value n = nat__pipe(vm, 2, argv);
    vm_pop_root(vm, 2);
    return IS_INT(n) ? n.as.i : 0;
}

/* ---- _pipe -------------------------------------------------------------- */

/* The module variables the stage's nodes read, as they are now, into the
 * stage's record (slot -> value): a query bound later sees them as they
 * were where it was written. */
static void read_modvars(VM *vm, VArray *rec, const VModule *m, Value node)
{
    if (!IS_ARRAY(node))
        return;
    VArray *a = AS_ARRAY(node);
    if (a->len >= 5 && IS_INT(a->items[0]) && a->items[0].as.i == QOP_MODVAR && IS_INT(a->items[3]) &&
        (uint64_t)a->items[3].as.i < m->nvars) {
        if (!IS_MAP(rec->items[3]))
            rec->items[3] = v_obj(vm_map_new(vm, 4));
        vm_map_set(vm, AS_MAP(rec->items[3]), a->items[3], m->vars[a->items[3].as.i]);
    }
    for (size_t i = 0; i < a->len; i++)
        read_modvars(vm, rec, m, a->items[i]);
}

VQuery *qp_ready(VM *vm, Value qv)
{
    VQuery *q = handle_data(AS_HANDLE(qv));
    if (!q->bound) {
        qp_free(vm, &q->plan);      /* what a binding that raised had made */
        qp_bind(vm, q);
        q->bound = true;
    }
    return q;
}

/* _pipe(src, plan, captures...): `src | verb ...` as the compiler writes it. */
Value nat__pipe(VM *vm, int argc, Value *argv)
{
    Value src = argv[0];
    if (!IS_ARRAY(argv[1]))
        vm_arg_error(vm, 1, "a query plan", argv[1]);
    VArray *plan = AS_ARRAY(argv[1]);
    const VmFrame *caller = vm->nframes >= 2 ? &vm->frames[vm->nframes - 2] : NULL;
    Value mod = caller && caller->fn ? v_obj(caller->fn->p->module) : v_nil();
    bool keep_it = qkeep_able(plan, argc - 2, argv + 2, src);
    if (keep_it) {
        Value k = qkeep_find(vm, plan, argc - 2, argv + 2, mod, src);
        if (!IS_NIL(k)) {
            vm_push_root(vm, k);    /* the slot may be given to another while it runs */
            Value r = vm_query_run(vm, k);
            vm_pop_root(vm, 1);
            return r;
        }
    }
    VHandle *h = vm_handle_new(vm, &vm_query_type, sizeof(VQuery));
    Value hv = v_obj(h);
    vm_push_root(vm, hv);
    VQuery *q = handle_data(h);
    q->src = v_nil();
    bool chained = IS_HANDLE(src) && AS_HANDLE(src)->type == &vm_query_type;
    if (chained) {
        /* The parent's stage list, shared when no other query has grown
         * it (a chain grown in a loop copies nothing), else copied. */
        VQuery *parent = handle_data(AS_HANDLE(src));
        q->src = parent->src;
        if (parent->stages->len == parent->nstages) {
            q->stages = parent->stages;
        } else {
            q->stages = vm_array_new(vm, parent->nstages + plan->len);
            memcpy(q->stages->items, parent->stages->items, parent->nstages * sizeof(Value));
            q->stages->len = parent->nstages;
        }
        q->nstages = parent->nstages;
        if (parent->nstages && vm_verbs[qp_last_verb(parent)].last)
            vm_error(vm, "this query ends with '%s': nothing can follow it", vm_verbs[qp_last_verb(parent)].name);
    } else if (vm_source_of(src) || IS_ARRAY(src) ||
               (IS_HANDLE(src) && AS_HANDLE(src)->type == &vm_text_rows_type)) {
        q->src = src;
        q->stages = vm_array_new(vm, plan->len);
    } else {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "a pipeline starts from a store, a tagset file, an array of maps, text rows or a query, not %s",
                 v_type_name(src));
        Value st = plan->len ? plan->items[0] : v_nil();
        vm_error_at(vm, IS_ARRAY(st) ? (uint32_t)nint(st, 1) : 0, IS_ARRAY(st) ? (uint32_t)nint(st, 2) : 0, msg);
    }
    VArray *caps = vm_array_new(vm, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++)
        vm_array_push(vm, caps, argv[i]);
    for (size_t i = 0; i < plan->len; i++) {
        VArray *rec = vm_array_new(vm, 4);
        vm_array_push(vm, rec, plan->items[i]);
        vm_array_push(vm, rec, v_obj(caps));
        vm_array_push(vm, rec, mod);
        vm_array_push(vm, rec, v_nil());
        vm_array_push(vm, q->stages, v_obj(rec));
        q->nstages++;
        if (IS_OBJ(mod))
            read_modvars(vm, rec, (VModule *)mod.as.o, plan->items[i]);
    }
    /* A query built on a query (a where added in a loop) binds when it
     * runs: binding every step again as it grows would cost the square of
     * its length. */
    if (!chained)
        qp_ready(vm, hv);
    if (keep_it && q->plan.nmodvars >= 0)
        qkeep_put(vm, plan, hv);
    Value r = hv;
    int verb = qp_last_verb(q);
    if (verb >= 0 && vm_verbs[verb].last)
        r = vm_query_run(vm, hv);
    vm_pop_root(vm, 1);
    return r;
}
