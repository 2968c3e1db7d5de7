/* plan: a pipeline bound into its plan: the plan's memory; which stages
 * the scan runs (wheres, tags, count, take, a sort and its take, group
 * by, stat, write; a sort under a select) and which follow as row steps;
 * the columns the scan decodes; the where's conjuncts that call comb put
 * last. */
#include "config.h"
#include "vm/query/bind.h"

#include <string.h>

/* ---- plan memory -------------------------------------------------------- */

void *qp_alloc(VM *vm, QPlan *p, size_t size)
{
    if (p->nblocks == p->capblocks) {
        size_t cap = p->capblocks ? 2 * p->capblocks : 32;
        p->blocks = vm_realloc(vm, p->blocks, p->capblocks * sizeof(void *), cap * sizeof(void *));
        p->capblocks = cap;
    }
    /* The size goes first so qp_free can give it back. */
    size_t *b = vm_alloc(vm, size + sizeof(size_t) * 2);
    b[0] = size;
    memset(b + 2, 0, size);
    p->blocks[p->nblocks++] = b;
    return b + 2;
}

void qp_free(VM *vm, QPlan *p)
{
    k_ctx_drop(&p->scan);
    for (size_t i = 0; i < p->nblocks; i++) {
        size_t *b = p->blocks[i];
        vm_free_mem(vm, b, b[0] + sizeof(size_t) * 2);
    }
    vm_free_mem(vm, p->blocks, p->capblocks * sizeof(void *));
    memset(p, 0, sizeof *p);
}

void qp_keep(VM *vm, QPlan *p, Value v)
{
    if (IS_OBJ(v))
        vm_array_push(vm, p->keep, v);
}

/* ---- stages ----------------------------------------------------------- */

Value qp_stage(VQuery *q, int i)
{
    return AS_ARRAY(q->stages->items[i])->items[0];
}

int qp_last_verb(VQuery *q)
{
    return q->nstages ? (int)nint(qp_stage(q, (int)q->nstages - 1), 0) : -1;
}

static void binder_for(Binder *b, VQuery *q, int i)
{
    VArray *rec = AS_ARRAY(q->stages->items[i]);
    b->caps = AS_ARRAY(rec->items[1]);
    b->modvals = IS_MAP(rec->items[3]) ? AS_MAP(rec->items[3]) : NULL;
}

/* take N: N a constant int >= 0. */
static uint64_t take_count(Binder *b, Value stage)
{
    QExpr *n = qb_expr(b, nval(stage, 3));
    char d[96];
    if (n->op != QOP_CONST || n->type != QT_INT || n->ki < 0)
        bind_error(b, n, "%s needs a count (an int >= 0), not %s", vm_verbs[nint(stage, 0)].name,
                   qb_describe(b, n, d, sizeof d));
    return (uint64_t)n->ki;
}

/* The fields an expression reads, into want (columns) and fields. */
static void uses(const QScan *sc, const QExpr *e, bool *want)
{
    if (!e)
        return;
    if (e->op == QX_FIELD || (e->op == QX_QUANT && e->field >= 0))
        want[e->field] = true;
    if (e->op == QX_QUANT && sc->vs->s->tag_size)
        want[sc->vs->s->nfields] = true;    /* the tag counts */
    uses(sc, e->a, want);
    uses(sc, e->b, want);
    uses(sc, e->c, want);
}

static QStep *add_step(Binder *b, QPlan *p, Value stage)
{
    QStep *s = &p->steps[p->nsteps++];
    s->verb = (int)nint(stage, 0);
    s->line = (int)nint(stage, 1);
    s->col = (int)nint(stage, 2);
    (void)b;
    return s;
}

static void set_cols(Binder *b, VStr **cols, int n)
{
    b->cols = cols;
    b->ncols = n;
    b->cols_known = true;
}

/* select/group items: names and expressions. */
static void bind_items(Binder *b, QStep *s, Value stage, size_t from, int n, int nkeys)
{
    s->n = n;
    s->nkeys = nkeys;
    s->e = qp_alloc(b->vm, b->p, (size_t)n * sizeof *s->e);
    s->names = qp_alloc(b->vm, b->p, (size_t)n * sizeof *s->names);
    for (int i = 0; i < n; i++) {
        s->names[i] = AS_STR(nval(stage, from + 2 * (size_t)i));
        qp_keep(b->vm, b->p, v_obj(s->names[i]));
        b->aggs = i >= nkeys && s->verb == QV_group;
        s->e[i] = qb_expr(b, nval(stage, from + 2 * (size_t)i + 1));
        b->aggs = 0;
    }
}

/* A join's columns: the rows' and those of the first of an array of maps
 * joined (a query's are not known before it runs). */
static void join_cols(Binder *b, QStep *s)
{
    Value r = s->e[0]->k;
    VMap *m = IS_ARRAY(r) && AS_ARRAY(r)->len && IS_MAP(AS_ARRAY(r)->items[0]) ? AS_MAP(AS_ARRAY(r)->items[0]) : NULL;
    if (!b->cols_known || !m) {
        b->cols_known = false;
        return;
    }
    VStr **cols = qp_alloc(b->vm, b->p, ((size_t)b->ncols + m->live) * sizeof *cols);
    memcpy(cols, b->cols, (size_t)b->ncols * sizeof *cols);
    int n = b->ncols;
    size_t pos = 0;
    Value k, v;
    while (vm_map_next(m, &pos, &k, &v))
        if (IS_STR(k) && qb_field_of(b, AS_STR(k)) < 0)
            cols[n++] = AS_STR(k);
    qp_keep(b->vm, b->p, v_obj(m));
    set_cols(b, cols, n);
}

/* The columns of the rows a step makes (for the next step's names). */
static void step_cols(Binder *b, QStep *s)
{
    if (s->verb == QV_select || s->verb == QV_group)
        set_cols(b, s->names, s->n);
    else if (s->verb == QV_join)
        join_cols(b, s);
    else if (s->verb == QV_tags)
        b->cols_known = false;  /* the tags' keys join their tagset's */
}

static void bind_step(Binder *b, QPlan *p, Value stage)
{
    QStep *s = add_step(b, p, stage);
    b->scope = SC_MAP;
    switch (s->verb) {
    case QV_where:
    case QV_take:
    case QV_skip:
        s->n = 1;
        s->e = qp_alloc(b->vm, p, sizeof *s->e);
        if (s->verb != QV_where) {
            QExpr *n = qb_const(b, stage, v_int((int64_t)take_count(b, stage)));
            s->e[0] = n;
        } else {
            s->e[0] = qb_bool(b, nval(stage, 3), "where's condition");
        }
        break;
    case QV_select:
        bind_items(b, s, stage, 3, (int)(nlen(stage) - 3) / 2, 0);
        break;
    case QV_group: {
        int nkeys = (int)nint(stage, 3);
        b->nagg = 0;
        b->agg_list = NULL;
        b->capagg = 0;
        bind_items(b, s, stage, 4, (int)(nlen(stage) - 4) / 2, nkeys);
        s->agg_list = b->agg_list;
        s->nagg_list = b->nagg;
        break;
    }
    case QV_sort: {
        int n = (int)(nlen(stage) - 3) / 2;
        s->n = n;
        s->e = qp_alloc(b->vm, p, (size_t)n * sizeof *s->e);
        s->desc = qp_alloc(b->vm, p, (size_t)n);
        for (int i = 0; i < n; i++) {
            s->e[i] = qb_expr(b, nval(stage, 3 + 2 * (size_t)i));
            s->desc[i] = AS_BOOL(nval(stage, 4 + 2 * (size_t)i));
        }
        break;
    }
    case QV_write: {
        size_t nargs = nlen(stage) - 3;
        QExpr *t = nargs ? qb_expr(b, nval(stage, 3)) : NULL;
        QExpr *o = nargs > 1 ? qb_expr(b, nval(stage, 4)) : NULL;
        QExpr at = {.line = s->line, .col = s->col};
        if (!t || nargs > 2 || t->op != QOP_CONST || (o && (o->op != QOP_CONST || !IS_MAP(o->k))))
            bind_error(b, &at, "write takes a path or a store, and an options map: write(path, {schema: s})");
        s->write_target = t->k;
        s->write_opts = o ? AS_MAP(o->k) : NULL;
        break;
    }
    case QV_stat:   /* the fields' names */
        s->n = (int)nlen(stage) - 3;
        s->e = qp_alloc(b->vm, p, (size_t)s->n * sizeof *s->e);
        for (int i = 0; i < s->n; i++)
            s->e[i] = qb_expr(b, nval(stage, 3 + (size_t)i));
        break;
    case QV_join: {
        s->n = (int)nlen(stage) - 3;
        s->e = qp_alloc(b->vm, p, (size_t)s->n * sizeof *s->e);
        for (int i = 0; i < s->n; i++)
            s->e[i] = qb_expr(b, nval(stage, 3 + (size_t)i));
        if (s->e[0]->op != QOP_CONST)
            bind_error(b, s->e[0], "join's rows are a query or an array of maps, made where the pipeline is written");
        break;
    }
    case QV_tags: {
        bool has = !b->cols_known;
        for (int i = 0; i < b->ncols && !has; i++)
            has = str_eq_cstr(b->cols[i], "tags");
        QExpr at = {.line = s->line, .col = s->col};
        if (!has)
            bind_error(b, &at, "these rows have no tags (a select or group by made them, or their source has none): `tags` makes a row per tag");
        break;
    }
    default:
        break;
    }
    step_cols(b, s);
}

/* ---- the scan's share of a typed pipeline -------------------------------- */

static void and_into(Binder *b, QExpr **where, QExpr *e)
{
    if (!*where || !e) {
        *where = *where ? *where : e;
        return;
    }
    QExpr *a = qb_new_at(b, QOP_AND, e->line, e->col);
    a->a = *where;
    a->b = e;
    a->type = QT_BOOL;
    a->tag = (*where)->tag || e->tag;
    *where = a;
}

/* The conjuncts of an AND tree, in order, found without recursion. */
static QExpr **conjuncts(Binder *b, QExpr *e, size_t *n)
{
    size_t cap = 64, sp = 0, scap = 64;
    QExpr **out = qp_alloc(b->vm, b->p, cap * sizeof *out);
    QExpr **stack = qp_alloc(b->vm, b->p, scap * sizeof *stack);
    *n = 0;
    stack[sp++] = e;
    while (sp) {
        QExpr *x = stack[--sp];
        if (x->op != QOP_AND) {
            if (*n == cap) {
                QExpr **more = qp_alloc(b->vm, b->p, 2 * cap * sizeof *more);
                memcpy(more, out, cap * sizeof *more);
                out = more;
                cap *= 2;
            }
            out[(*n)++] = x;
            continue;
        }
        if (sp + 2 > scap) {
            QExpr **more = qp_alloc(b->vm, b->p, 2 * scap * sizeof *more);
            memcpy(more, stack, sp * sizeof *more);
            stack = more;
            scap *= 2;
        }
        stack[sp++] = x->b;
        stack[sp++] = x->a;
    }
    return out;
}

static QExpr *balanced(Binder *b, QExpr **c, size_t n)
{
    if (n == 1)
        return c[0];
    QExpr *a = qb_new_at(b, QOP_AND, c[0]->line, c[0]->col);
    a->a = balanced(b, c, n / 2);
    a->b = balanced(b, c + n / 2, n - n / 2);
    a->type = QT_BOOL;
    a->tag = a->a->tag || a->b->tag;
    return a;
}

/* A where grown long (a where step per loop iteration, each and_into the
 * last) as a balanced tree of the same conjuncts in the same order: the
 * kernels, pruning and explain walk it recursively, so its depth must stay
 * small. Short ones keep their shape (explain prints them as written). */
static QExpr *rebalance(Binder *b, QExpr *e)
{
    int depth = 0;
    for (const QExpr *x = e; x && x->op == QOP_AND; x = x->a)
        depth++;
    if (depth < 32)
        return e;
    size_t n;
    QExpr **c = conjuncts(b, e, &n);
    return balanced(b, c, n);
}

/* Whether e asks a comb function (a matcher's). */
static bool calls_vm(const QExpr *e)
{
    if (!e)
        return false;
    if (e->op == QX_CALL || (e->op == QX_SET && e->set && e->set->match == qx_call_str))
        return true;
    return calls_vm(e->a) || calls_vm(e->b) || calls_vm(e->c);
}

/* Whether the scan's workers would call comb: in its wheres, its sort or
 * group keys, its aggregates' arguments. A group's items around their
 * aggregates are computed after the scan, on the VM's thread, as are the
 * row steps: calls there leave the scan parallel. */
static bool workers_call_vm(const QScan *sc)
{
    bool r = calls_vm(sc->where) || calls_vm(sc->tag_where);
    for (int k = 0; k < sc->nsort; k++)
        r |= calls_vm(sc->sort[k].e);
    for (int k = 0; k < sc->nkeys; k++)
        r |= calls_vm(sc->keys[k]);
    for (int k = 0; k < sc->nagg_list; k++)
        r |= calls_vm(sc->agg_list[k]->a);
    return r;
}

/* A where's conjuncts: those the kernels run alone into *where; those that
 * call comb set aside, to come last (residual), so that comb sees only the
 * rows the others keep. */
static void add_where(Binder *b, QExpr **where, QExpr **residual, QExpr *e)
{
    if (e->op == QOP_AND && calls_vm(e)) {
        add_where(b, where, residual, e->a);
        add_where(b, where, residual, e->b);
        return;
    }
    and_into(b, calls_vm(e) ? residual : where, e);
}

/* The scan's sort by stage i's keys (key k's node keys[k], or the stage's
 * own), and by a take right after it; returns the first stage after them. */
static int scan_sort(Binder *b, VQuery *q, QPlan *p, int i, const Value *keys)
{
    QScan *sc = &p->scan;
    Value st = qp_stage(q, i);
    sc->nsort = (int)(nlen(st) - 3) / 2;
    sc->sort = qp_alloc(b->vm, p, (size_t)sc->nsort * sizeof *sc->sort);
    for (int k = 0; k < sc->nsort; k++) {
        sc->sort[k].e = qb_expr(b, keys ? keys[k] : nval(st, 3 + 2 * (size_t)k));
        sc->sort[k].desc = AS_BOOL(nval(st, 4 + 2 * (size_t)k));
        sc->keyw += qx_keywidth(sc->sort[k].e);
        if (sc->sort[k].e->type == QT_NIL)
            bind_error(b, sc->sort[k].e, "sort by a value of the rows");
    }
    if (i + 1 < (int)q->nstages && nint(qp_stage(q, i + 1), 0) == QV_take) {
        binder_for(b, q, i + 1);
        sc->limit = take_count(b, qp_stage(q, i + 1));
        return i + 2;
    }
    return i + 1;
}

/* The name a node reads (a field, or a variable a field would shadow), or
 * NULL for anything else. */
static VStr *node_name(Value node)
{
    switch (IS_ARRAY(node) ? nint(node, 0) : -1) {
    case QOP_FIELD: return AS_STR(nval(node, 3));
    case QOP_MODVAR: return AS_STR(nval(node, 4));
    case QOP_CAPTURE: return IS_STR(nval(node, 4)) ? AS_STR(nval(node, 4)) : NULL;
    default: return NULL;
    }
}

/* `select ... | sort k, ... [| take n]` where each k names a select item
 * that is a field of the scan's rows: the scan sorts (and takes) by those
 * fields, in bounded memory (external past COMB_SORT_MB), before the
 * select, which then goes a row at a time; the order is the same (the
 * sort is stable and the select maps row to row). The sort and take are
 * marked bound (b->skip_*). Select stage i's binding context is current. */
static void sort_under_select(Binder *b, VQuery *q, QPlan *p, int i)
{
    Value sel = qp_stage(q, i), st = i + 1 < (int)q->nstages ? qp_stage(q, i + 1) : v_nil();
    int nitems = (int)(nlen(sel) - 3) / 2, nkeys = IS_NIL(st) ? 0 : (int)(nlen(st) - 3) / 2;
    Value keys[64];
    if (IS_NIL(st) || nint(st, 0) != QV_sort || nkeys > 64)
        return;
    for (int k = 0; k < nkeys; k++) {
        VStr *name = node_name(nval(st, 3 + 2 * (size_t)k)), *f;
        keys[k] = v_nil();
        for (int j = 0; name && j < nitems; j++)
            if (str_equal(AS_STR(nval(sel, 3 + 2 * (size_t)j)), name))
                keys[k] = nval(sel, 4 + 2 * (size_t)j);
        int fi = (f = node_name(keys[k])) ? qb_field_of(b, f) : -1;
        if (fi < 0 || (b->vs->s->fields[fi].role == ST_TAG && !p->scan.tags))
            return;
    }
    b->skip_from = i + 1;
    b->skip_to = scan_sort(b, q, p, i + 1, keys);
}

/* stat's columns: those named (stage st's strings, or a select's plain
 * fields: sel), else every field and the tags per tagset. A column not asked
 * for is neither decoded nor computed. */
static void stat_cols(Binder *b, QPlan *p, Value st, Value sel)
{
    QScan *sc = &p->scan;
    const st_schema *s = b->vs->s;
    bool tagcol = s->tag_size && !sc->tags;
    uint32_t n = IS_NIL(sel) ? (uint32_t)nlen(st) - 3 : (uint32_t)(nlen(sel) - 3) / 2;
    if (!n)
        n = s->nfields + tagcol;
    sc->stat_cols = qp_alloc(b->vm, p, n * sizeof *sc->stat_cols);
    sc->stat_names = qp_alloc(b->vm, p, n * sizeof *sc->stat_names);
    sc->nstat = n;
    for (uint32_t i = 0; i < n; i++) {
        VStr *name;
        int f;
        if (!IS_NIL(sel)) {
            name = AS_STR(nval(sel, 3 + 2 * (size_t)i));
            f = qb_field_of(b, node_name(nval(sel, 4 + 2 * (size_t)i)));
        } else if (nlen(st) > 3) {
            QExpr *e = qb_expr(b, nval(st, 3 + i));
            name = AS_STR(e->k);
            f = str_eq_cstr(name, "#tags") && tagcol ? (int)s->nfields : qb_field_of(b, name);
            if (f < 0)
                bind_error(b, e, "stat: no field '%s' in these rows%s", name->data,
                           tagcol ? " (\"#tags\": the tags per tagset)" : "");
        } else {
            f = (int)i;
            name = i < s->nfields ? b->vs->names[i] : NULL;
        }
        sc->stat_cols[i] = (uint32_t)f;
        sc->stat_names[i] = name;
    }
}

/* `select f, name: g, ... | stat` where each item is a field of the scan's
 * rows: the scan computes stat of those columns (by the select's names),
 * the select's maps never made. */
static int stat_under_select(Binder *b, VQuery *q, QPlan *p, int i)
{
    Value sel = qp_stage(q, i);
    int nitems = (int)(nlen(sel) - 3) / 2;
    if (i + 1 >= (int)q->nstages || nint(qp_stage(q, i + 1), 0) != QV_stat ||
        nlen(qp_stage(q, i + 1)) > 3 || !nitems)
        return i;
    for (int j = 0; j < nitems; j++) {
        Value node = nval(sel, 4 + 2 * (size_t)j);
        int f = IS_ARRAY(node) && nint(node, 0) == QOP_FIELD ? qb_field_of(b, node_name(node)) : -1;
        if (f < 0 || (b->vs->s->fields[f].role == ST_TAG && !p->scan.tags))
            return i;
    }
    p->scan.consumer = QC_STAT;
    stat_cols(b, p, qp_stage(q, i + 1), sel);
    return i + 2;
}

/* Whether node (an expression as the compiler wrote it) calls a function
 * of the program for a value, not as a condition (where's own, a side of
 * `&& || !`, a quantifier's PRED), which gives true or false. The kernels
 * hold typed columns only, so a stage with such a call in what the scan
 * would compute runs as a row step. In a group's item (in_item), a call
 * outside its aggregates runs after the scan and counts only inside one. */
static bool value_call(Value node, bool cond, bool in_item)
{
    int op = IS_ARRAY(node) ? (int)nint(node, 0) : QOP_CONST;
    if (op == QOP_CONST || op == QOP_FIELD || op == QOP_MODVAR || op == QOP_CAPTURE)
        return false;
    size_t from = 3;
    if (op == QOP_CALL && !IS_STR(nval(node, 3))) {
        if (!cond && !in_item)
            return true;
        from = 4;
    } else if (op == QOP_CALL) {
        VStr *name = AS_STR(nval(node, 3));
        int fn = vm_query_func_find(name->data, name->len);
        if (picks_by(fn))
            return value_call(nval(node, 5), false, in_item);
        bool quant = fn == QF_any || fn == QF_all || fn == QF_first || fn == QF_last ||
                     (fn == QF_count && nlen(node) == 6);
        if (quant)
            return value_call(nval(node, 5), true, in_item);
        in_item &= fn == QF_between || fn == QF_day || fn == QF_hour;   /* else an aggregate */
        from = 4;
    }
    cond = op == QOP_NOT || op == QOP_AND || op == QOP_OR;
    for (size_t i = from; i < nlen(node); i++)
        if (value_call(nval(node, i), cond, in_item))
            return true;
    return false;
}

/* Whether stage st of the scan (a where, sort or group) calls the program
 * for a value (value_call). */
static bool stage_value_call(Value st, int verb)
{
    if (verb == QV_where)
        return value_call(nval(st, 3), true, false);
    if (verb == QV_sort) {
        for (size_t k = 3; k < nlen(st); k += 2)
            if (value_call(nval(st, k), false, false))
                return true;
        return false;
    }
    if (verb == QV_group) {
        int nkeys = (int)nint(st, 3);
        for (size_t k = 5, i = 0; k < nlen(st); k += 2, i++)
            if (value_call(nval(st, k), false, (int)i >= nkeys))
                return true;
    }
    return false;
}

/* The conjuncts of a where's condition (node) that call the program for no
 * value, into the scan's where: they narrow the rows (and the partitions
 * and blocks read) before the where runs whole as a row step. */
static void where_share(Binder *b, Value node, QExpr **where, QExpr **residual)
{
    if (IS_ARRAY(node) && nint(node, 0) == QOP_AND) {
        where_share(b, nval(node, 3), where, residual);
        where_share(b, nval(node, 4), where, residual);
    } else if (!value_call(node, true, false)) {
        add_where(b, where, residual, qb_bool(b, node, "where's condition"));
    }
}

/* Binds the stages the scan can run; returns the first stage it cannot. */
static int bind_scan(Binder *b, VQuery *q, QPlan *p)
{
    QScan *sc = &p->scan;
    int n = (int)q->nstages, i = 0;
    sc->consumer = QC_COLLECT;
    sc->limit = UINT64_MAX;
    for (; i < n; i++) {
        Value st = qp_stage(q, i);
        int verb = (int)nint(st, 0);
        binder_for(b, q, i);
        b->scope = sc->tags ? SC_TAG : SC_TAGSET;
        if (stage_value_call(st, verb)) {
            b->quantify = !sc->tags;
            if (verb == QV_where)
                where_share(b, nval(st, 3), sc->tags ? &sc->tag_where : &sc->where,
                            &b->residual[sc->tags]);
            b->quantify = false;
            return i;
        }
        switch (verb) {
        case QV_where:
            b->quantify = !sc->tags;
            add_where(b, sc->tags ? &sc->tag_where : &sc->where, &b->residual[sc->tags],
                      qb_bool(b, nval(st, 3), "where's condition"));
            b->quantify = false;
            continue;
        case QV_tags:
            if (sc->tags || !b->vs->s->tag_size) {
                QExpr at = {.line = (int)nint(st, 1), .col = (int)nint(st, 2)};
                bind_error(b, &at, sc->tags ? "the rows are tags already" : "the schema has no tag fields");
            }
            sc->tags = true;
            continue;
        case QV_count:
            sc->consumer = QC_COUNT;
            return i + 1;
        case QV_take:
            sc->limit = take_count(b, st);
            return i + 1;
        case QV_sort:
            return scan_sort(b, q, p, i, NULL);
        case QV_group: {
            int nkeys = (int)nint(st, 3), nitems = (int)(nlen(st) - 4) / 2;
            sc->consumer = QC_GROUP;
            sc->nkeys = nkeys;
            sc->keys = qp_alloc(b->vm, p, (size_t)nkeys * sizeof *sc->keys);
            sc->key_names = qp_alloc(b->vm, p, (size_t)nkeys * sizeof *sc->key_names);
            sc->naggs = nitems - nkeys;
            sc->aggs = qp_alloc(b->vm, p, (size_t)sc->naggs * sizeof *sc->aggs);
            b->nagg = 0;
            b->agg_list = NULL;
            b->capagg = 0;
            for (int k = 0; k < nitems; k++) {
                VStr *name = AS_STR(nval(st, 4 + 2 * (size_t)k));
                qp_keep(b->vm, p, v_obj(name));
                b->aggs = k >= nkeys;
                QExpr *e = qb_expr(b, nval(st, 5 + 2 * (size_t)k));
                b->aggs = 0;
                if (k < nkeys) {
                    sc->keys[k] = e;
                    sc->key_names[k] = name;
                    sc->keyw += qx_keywidth(e);
                } else {
                    sc->aggs[k - nkeys] = (QAggDef){name, e};
                }
            }
            sc->agg_list = b->agg_list;
            sc->nagg_list = b->nagg;
            return i + 1;
        }
        case QV_stat:
            sc->consumer = QC_STAT;
            stat_cols(b, p, st, v_nil());
            return i + 1;
        case QV_write: {
            /* Rows written as they are: straight from the blocks (text
             * files: as a row step, through the text writer). */
            size_t nargs = nlen(st) - 3;
            QExpr *t = nargs ? qb_expr(b, nval(st, 3)) : NULL;
            if (t && t->op == QOP_CONST && qtext_format(t->k))
                return i;
            QExpr *o = nargs > 1 ? qb_expr(b, nval(st, 4)) : NULL;
            QExpr at = {.line = (int)nint(st, 1), .col = (int)nint(st, 2)};
            if (!t || nargs > 2 || t->op != QOP_CONST || (o && (o->op != QOP_CONST || !IS_MAP(o->k))))
                bind_error(b, &at, "write takes a path or a store, and an options map: write(path, {block_size: 65536})");
            sc->consumer = QC_WRITE;
            sc->write_target = t->k;
            sc->write_opts = o ? AS_MAP(o->k) : NULL;
            return i + 1;
        }
        default:    /* select, explain, schema: the scan collects, the rows step does the rest */
            if (verb == QV_select && stat_under_select(b, q, p, i) > i)
                return i + 2;
            if (verb == QV_select)
                sort_under_select(b, q, p, i);
            return i;
        }
    }
    return i;
}

void qp_scan_uses(QScan *sc)
{
    if (sc->tags)
        sc->want[sc->vs->s->nfields] = true;    /* a row per tag: the tag counts */
    uses(sc, sc->where, sc->want);
    uses(sc, sc->tag_where, sc->want);
    for (int k = 0; k < sc->nsort; k++)
        uses(sc, sc->sort[k].e, sc->want);
    for (int k = 0; k < sc->nkeys; k++)
        uses(sc, sc->keys[k], sc->want);
    for (int k = 0; k < sc->naggs; k++)
        uses(sc, sc->aggs[k].e, sc->want);
}

/* Columns the scan decodes, and the fields of the rows it hands on: all of
 * them, unless a select follows (narrow_select). */
static void scan_columns(Binder *b, QPlan *p)
{
    QScan *sc = &p->scan;
    const st_schema *s = sc->vs->s;
    sc->want = qp_alloc(b->vm, p, st_schema_ncols(s));
    sc->out_fields = qp_alloc(b->vm, p, s->nfields);
    qp_scan_uses(sc);
    if (sc->consumer == QC_COUNT || sc->consumer == QC_GROUP)
        return;
    if (sc->consumer == QC_STAT) {
        /* a tag field of tagsets reads their tags' span */
        for (uint32_t i = 0; i < sc->nstat; i++)
            sc->want[sc->stat_cols[i]] = true;
        for (uint32_t i = 0; i < sc->nstat && s->tag_size; i++)
            if (sc->stat_cols[i] >= s->nrow)
                sc->want[s->nfields] = true;
        return;
    }
    for (uint32_t f = 0; f < s->nfields; f++)
        sc->want[f] = sc->out_fields[f] = true;
    if (s->tag_size)
        sc->want[s->nfields] = true;
}

/* The fields a row step's expression reads by name. */
static void names_used(const st_schema *s, const QExpr *e, bool *need)
{
    if (!e)
        return;
    if (e->op == QX_MAPGET) {
        int f = st_schema_find(s, e->name->data, e->name->len);
        if (f >= 0)
            need[f] = true;
        for (uint32_t t = s->nrow; str_eq_cstr(e->name, "tags") && t < s->nfields; t++)
            need[t] = true;
    }
    if (e->op == QX_QUANT || (e->op == QOP_INDEX && e->a && e->a->op == QX_QUANT))
        for (uint32_t t = s->nrow; t < s->nfields; t++)
            need[t] = true;     /* names inside are the tags' */
    names_used(s, e->a, need);
    names_used(s, e->b, need);
    names_used(s, e->c, need);
}

/* A select right after a collecting scan: decode only what it reads. */
static void narrow_select(QPlan *p)
{
    QScan *sc = &p->scan;
    const st_schema *s = sc->vs->s;
    if (sc->consumer != QC_COLLECT || !p->nsteps || p->steps[0].verb != QV_select)
        return;
    memset(sc->out_fields, 0, s->nfields);
    for (int i = 0; i < p->steps[0].n; i++)
        names_used(s, p->steps[0].e[i], sc->out_fields);
    memset(sc->want, 0, st_schema_ncols(s));
    qp_scan_uses(sc);
    for (uint32_t f = 0; f < s->nfields; f++)
        sc->want[f] |= sc->out_fields[f];
    for (uint32_t f = s->nrow; f < s->nfields && !sc->tags; f++)
        if (sc->out_fields[f])
            sc->want[s->nfields] = true;
}

/* The tagset field a select item names as it is, or -1. */
static int plain_field(const st_schema *s, const QExpr *e)
{
    int f = e->op == QX_MAPGET ? st_schema_find(s, e->name->data, e->name->len) : -1;
    return f >= 0 && (uint32_t)f < s->nrow ? f : -1;
}

/* What a collected row keeps of the tagset: the fields it shows, packed,
 * so a wide schema's rows cost what the selected fields cost. A select of
 * tagset fields as they are right after the scan is made by the collector
 * itself: its fields in its order, under its names (no row map between). */
static void out_layout(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    const st_schema *s = sc->vs->s;
    QStep *st = p->nsteps ? &p->steps[0] : NULL;
    bool fused = sc->consumer == QC_COLLECT && !sc->tags && st && st->verb == QV_select;
    for (int i = 0; fused && i < st->n; i++)
        fused = plain_field(s, st->e[i]) >= 0;
    for (uint32_t f = s->nrow; fused && f < s->nfields; f++)
        fused = !sc->out_fields[f];
    uint32_t n = fused ? (uint32_t)st->n : s->nrow;
    sc->out_row = qp_alloc(vm, p, (n + 1) * sizeof *sc->out_row);
    sc->nout_row = sc->out_roww = 0;
    for (uint32_t i = 0; i < n; i++) {
        int f = fused ? plain_field(s, st->e[i]) : (int)i;
        if (fused || sc->out_fields[f]) {
            sc->out_row[sc->nout_row++] = (uint32_t)f;
            sc->out_roww += s->fields[f].width;
        }
    }
    sc->out_ntag = 0;
    for (uint32_t f = s->nrow; f < s->nfields; f++)
        sc->out_ntag += sc->out_fields[f];
    if (fused) {
        sc->out_names = st->names;
        st->by_scan = true;
    }
}

static uint64_t stages_bound;

uint64_t qp_stages_bound(void)
{
    return stages_bound;
}

void qp_bind(VM *vm, VQuery *q)
{
    stages_bound += q->nstages;
    QPlan *p = &q->plan;
    p->keep = vm_array_new(vm, 8);
    Binder b = {.vm = vm, .p = p};
    VSource *src = vm_source_of(q->src);
    int first_step = 0;
    p->steps = qp_alloc(vm, p, (q->nstages + 1) * sizeof *p->steps);
    if (src) {
        p->typed = true;
        p->scan.src = src;
        p->scan.vs = b.vs = b.src_vs = vschema(src->schema);
        first_step = bind_scan(&b, q, p);
        and_into(&b, &p->scan.where, b.residual[0]);
        and_into(&b, &p->scan.tag_where, b.residual[1]);
        p->scan.where = rebalance(&b, p->scan.where);
        p->scan.tag_where = rebalance(&b, p->scan.tag_where);
        p->scan.vm_calls = workers_call_vm(&p->scan);
        scan_columns(&b, p);
        /* The rows the scan hands on, by name. */
        const st_schema *s = b.vs->s;
        int ncols = 0;
        VStr **cols;
        if (p->scan.consumer == QC_GROUP) {
            cols = qp_alloc(vm, p, (size_t)(p->scan.nkeys + p->scan.naggs) * sizeof *cols);
            for (int k = 0; k < p->scan.nkeys; k++)
                cols[ncols++] = p->scan.key_names[k];
            for (int k = 0; k < p->scan.naggs; k++)
                cols[ncols++] = p->scan.aggs[k].name;
        } else {
            cols = qp_alloc(vm, p, (s->nfields + 1) * sizeof *cols);
            for (uint32_t f = 0; f < s->nfields; f++)
                if (p->scan.tags || s->fields[f].role != ST_TAG)
                    cols[ncols++] = b.vs->names[f];
            if (!p->scan.tags && s->tag_size)
                cols[ncols++] = b.vs->tags_name;
        }
        set_cols(&b, cols, ncols);
        if (p->scan.consumer == QC_STAT)
            b.cols_known = false;
    } else {
        p->array = q->src;  /* an array, or a stream of rows (its fields known as it runs) */
        VArray *a = IS_ARRAY(q->src) ? AS_ARRAY(q->src) : NULL;
        if (a && a->len && IS_MAP(a->items[0])) {
            VMap *m = AS_MAP(a->items[0]);
            VStr **cols = qp_alloc(vm, p, m->live * sizeof *cols);
            int n = 0;
            size_t pos = 0;
            Value k, v;
            while (vm_map_next(m, &pos, &k, &v))
                if (IS_STR(k))
                    cols[n++] = AS_STR(k);
            qp_keep(vm, p, a->items[0]);
            set_cols(&b, cols, n);
        }
    }
    b.vs = NULL;
    for (int i = first_step; i < (int)q->nstages; i++) {
        if (i >= b.skip_from && i < b.skip_to)
            continue;
        binder_for(&b, q, i);
        bind_step(&b, p, qp_stage(q, i));
    }
    if (p->typed) {
        narrow_select(p);
        out_layout(vm, p);
    }
    p->scan.nslots = p->scan.nslots > b.nslots ? p->scan.nslots : b.nslots;
}
