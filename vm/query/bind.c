/* bind: a pipeline's expressions bound to their source: names to fields
 * (or variables), types checked with clear messages, constants, enum
 * symbols and regexes prepared for the kernels, Gecko's rule that a bare
 * tag field in a tagset-level where means any(tags, ...), quantifiers,
 * aggregates and calls. */
#include "config.h"
#include "vm/query/bind.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vm/natives.h"
#include "vm/regex.h"
#include "vm/suggest.h"

_Noreturn void qx_error(VM *vm, const QExpr *at, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vm_error_at(vm, (uint32_t)at->line, (uint32_t)at->col, msg);
}

QExpr *qb_new_at(Binder *b, int op, int line, int col)
{
    QExpr *e = qp_alloc(b->vm, b->p, sizeof *e);
    e->op = op;
    e->line = line;
    e->col = col;
    e->field = -1;
    e->k = v_nil();
    e->slot = b->nslots++;
    return e;
}

QExpr *qb_new(Binder *b, int op, Value node)
{
    return qb_new_at(b, op, (int)nint(node, 1), (int)nint(node, 2));
}

static const char *type_word(QType t)
{
    switch (t) {
    case QT_NIL: return "nil";
    case QT_BOOL: return "a bool";
    case QT_INT: return "an int";
    case QT_FLOAT: return "a float";
    case QT_STR: return "a string";
    default: return "a value";
    }
}

/* How an operand reads in a message: "'onum' (u64)", "\"abc\" (a string)". */
const char *qb_describe(Binder *b, const QExpr *e, char *buf, size_t n)
{
    char t[32];
    if (e->op == QX_FIELD && b->vs) {
        const st_field *f = &b->vs->s->fields[e->field];
        snprintf(buf, n, "'%s' (%s)", f->name, vm_field_type_name(f, t, sizeof t));
    } else if (e->op == QOP_CONST) {
        VStrBuf sb;
        vm_sb_init(b->vm, &sb, 16);
        vm_show(b->vm, &sb, e->k, true);
        VStr *s = vm_sb_done(b->vm, &sb);
        snprintf(buf, n, "%.*s (%s)", s->len > 40 ? 40 : (int)s->len, s->data,
                 IS_OBJ(e->k) && !IS_STR(e->k) ? v_type_name(e->k) : type_word(e->type));
    } else if (e->op == QX_CALL) {
        snprintf(buf, n, "a call of a comb function");
    } else {
        snprintf(buf, n, "%s", type_word(e->type));
    }
    return buf;
}

static bool numeric(QType t)
{
    return t == QT_INT || t == QT_FLOAT;
}

QExpr *qb_const(Binder *b, Value node, Value v)
{
    QExpr *e = qb_new(b, QOP_CONST, node);
    e->k = v;
    qp_keep(b->vm, b->p, v);
    switch (v.type) {
    case VT_NIL: e->type = QT_NIL; break;
    case VT_BOOL: e->type = QT_BOOL; e->ki = v.as.b; break;
    case VT_INT: e->type = QT_INT; e->ki = v.as.i; e->kf = (double)v.as.i; break;
    case VT_FLOAT: e->type = QT_FLOAT; e->kf = v.as.f; break;
    case VT_STR:
        e->type = QT_STR;
        e->ks = AS_STR(v)->data;
        e->kn = (uint32_t)AS_STR(v)->len;
        e->strw = e->kn;
        break;
    default: e->type = QT_ANY; break;
    }
    return e;
}

#define TAG_FIELD_HINT "'%s' is a tag field: use any(tags, %s ...), or `| tags` for a row per tag"

_Noreturn static void unknown_name(Binder *b, const QExpr *at, VStr *name)
{
    const char *cands[ST_MAX_FIELDS + 2];
    size_t n = 0;
    const VSchema *vs = b->src_vs;
    int f = vs ? st_schema_find(vs->s, name->data, name->len) : -1;
    if (f >= 0 && vs->s->fields[f].role == ST_TAG)
        bind_error(b, at, TAG_FIELD_HINT, name->data, name->data);
    if (b->vs && b->scope != SC_MAP) {
        const st_schema *s = b->vs->s;
        for (uint32_t i = 0; i < s->nfields && n < ST_MAX_FIELDS; i++)
            cands[n++] = s->fields[i].name;
        if (s->tag_size)
            cands[n++] = "tags";
    } else {
        for (int i = 0; i < b->ncols && n < ST_MAX_FIELDS; i++)
            cands[n++] = b->cols[i]->data;
    }
    const char *hint = vm_suggest(name->data, name->len, cands, n);
    bind_error(b, at, "unknown field '%s'%s%s%s", name->data, hint ? " (did you mean '" : "",
               hint ? hint : "", hint ? "'?)" : "");
}

static int col_index(Binder *b, VStr *name)
{
    for (int i = 0; i < b->ncols; i++)
        if (str_equal(b->cols[i], name))
            return i;
    return -1;
}

/* Is name a field of the rows in this scope? (-2: yes, in the rows' maps) */
int qb_field_of(Binder *b, VStr *name)
{
    if (b->scope == SC_MAP)
        return !b->cols_known || col_index(b, name) >= 0 ? -2 : -1;
    return st_schema_find(b->vs->s, name->data, name->len);
}

/* A group's items are computed from their aggregates after the scan, with
 * no row (Binder.aggs 1): a row's value there is an error, not a nil (or a
 * crash). */
#define OUTSIDE_AGG "outside an aggregate: in group by ... { }, a value of the rows is a key " \
                    "or inside an aggregate (sum, min, max, ...)"

static QExpr *bind_field(Binder *b, Value node, VStr *name, int f)
{
    QExpr *e;
    if (b->aggs == 1) {
        QExpr at = {.line = (int)nint(node, 1), .col = (int)nint(node, 2)};
        bind_error(b, &at, "'%s' " OUTSIDE_AGG, name->data);
    }
    if (f == -2) {
        e = qb_new(b, QX_MAPGET, node);
        e->name = name;
        e->type = QT_ANY;
        return e;
    }
    const st_field *fd = &b->vs->s->fields[f];
    e = qb_new(b, QX_FIELD, node);
    e->field = f;
    e->name = b->vs->names[f];
    e->tag = fd->role == ST_TAG;
    if (e->tag && b->scope == SC_TAGSET && !b->quantify)
        bind_error(b, e, TAG_FIELD_HINT, fd->name, fd->name);
    switch (fd->type) {
    case ST_F32: case ST_F64: e->type = QT_FLOAT; break;
    case ST_BOOL: e->type = QT_BOOL; break;
    case ST_CHAR: e->type = QT_STR; e->strw = fd->width; break;
    case ST_ENUM:
        e->type = QT_STR;
        e->is_enum = true;
        for (uint32_t k = 0; k < fd->nsyms; k++)
            if (strlen(fd->syms[k]) > e->strw)
                e->strw = (uint32_t)strlen(fd->syms[k]);
        break;
    default:
        e->type = QT_INT;
        e->big = fd->type == ST_U64;
        break;
    }
    return e;
}

static void read_modvar(QPlan *p, uint32_t slot, Value v)
{
    if (p->nmodvars < 0)
        return;
    if (p->nmodvars == QP_MODVARS || !qb_plain(v)) {
        p->nmodvars = -1;
        return;
    }
    p->modvar[p->nmodvars] = slot;
    p->modval[p->nmodvars++] = v;
}

/* A name: a field of the rows if there is one, else the variable. */
static QExpr *bind_name(Binder *b, Value node)
{
    int op = (int)nint(node, 0);
    VStr *name;
    Value var = v_undef();
    if (op == QOP_FIELD) {
        name = AS_STR(nval(node, 3));
    } else if (op == QOP_MODVAR) {
        name = AS_STR(nval(node, 4));
        size_t slot = (size_t)nint(node, 3);
        Value *was = b->modvals ? vm_map_ref(b->modvals, v_int((int64_t)slot)) : NULL;
        if (was)
            var = *was;
        read_modvar(b->p, (uint32_t)slot, var);
    } else {
        name = AS_STR(nval(node, 4));
        var = b->caps->items[nint(node, 3)];
    }
    int f = qb_field_of(b, name);
    if (f != -1 && !(f == -2 && !b->cols_known && var.type != VT_UNDEF))
        return bind_field(b, node, name, f);
    if (str_eq_cstr(name, "tags") && b->scope != SC_MAP && b->vs->s->tag_size) {
        QExpr at = {.line = (int)nint(node, 1), .col = (int)nint(node, 2)};
        bind_error(b, &at, "tags is used as any(tags, PRED), all, count, first or last(tags, PRED)");
    }
    if (var.type == VT_UNDEF) {
        QExpr at = {.line = (int)nint(node, 1), .col = (int)nint(node, 2)};
        unknown_name(b, &at, name);
    }
    return qb_const(b, node, var);
}

/* A value computed where the pipeline was written; none of the variables it
 * used may be a field (the field would shadow it, silently otherwise). */
static QExpr *bind_capture(Binder *b, Value node)
{
    if (IS_STR(nval(node, 4)))
        return bind_name(b, node);
    Value used = nval(node, 5);
    for (size_t i = 0; IS_ARRAY(used) && i < AS_ARRAY(used)->len; i++) {
        VStr *n = AS_STR(AS_ARRAY(used)->items[i]);
        if (qb_field_of(b, n) >= 0 || (b->scope == SC_MAP && b->cols_known && col_index(b, n) >= 0)) {
            QExpr at = {.line = (int)nint(node, 1), .col = (int)nint(node, 2)};
            bind_error(b, &at, "'%s' is both a field and a variable used here: rename the variable",
                       n->data);
        }
    }
    return qb_const(b, node, b->caps->items[nint(node, 3)]);
}

/* The first tag field (tag) or tagset field e reads outside a quantifier,
 * or NULL. A quantifier reads at the tagset level: it is what a tagset
 * field is here (wrapped in any(tags, ...) it would run per tag). */
static const QExpr *field_in(Binder *b, const QExpr *e, bool tag)
{
    if (!e || e->op == QX_QUANT)
        return e && !tag ? e : NULL;
    if (e->op == QX_FIELD && (b->vs->s->fields[e->field].role == ST_TAG) == tag)
        return e;
    const QExpr *f = field_in(b, e->a, tag);
    f = f ? f : field_in(b, e->b, tag);
    return f ? f : field_in(b, e->c, tag);
}

/* Gecko's rule: in a tagset-level where, the smallest condition that reads
 * tag fields (a comparison, `in`, `~`, between, a bool field) means "some
 * tag satisfies it": it becomes any(tags, COND). A condition that also
 * reads a tagset field is ambiguous and an error. */
static QExpr *quantify(Binder *b, QExpr *e)
{
    if (!b->quantify || b->scope != SC_TAGSET || !e->tag || e->type != QT_BOOL)
        return e;
    const QExpr *ts = field_in(b, e, false);
    if (ts) {
        const QExpr *tg = field_in(b, e, true);
        char what[64];
        if (ts->op == QX_QUANT)
            snprintf(what, sizeof what, "%s(tags, ...)", vm_query_funcs[ts->fn].name);
        else
            snprintf(what, sizeof what, "the tagset field '%s'", ts->name->data);
        bind_error(b, e, "this condition mixes the tag field '%s' and %s: "
                   "say which tags, with any(tags, ...) or all(tags, ...)", tg->name->data, what);
    }
    QExpr *q = qb_new_at(b, QX_QUANT, e->line, e->col);
    q->fn = QF_any;
    q->a = e;
    q->type = QT_BOOL;
    return q;
}

/* node bound where a condition is asked: a call of the program there must
 * give true or false (and so quantifies over tags like any condition). */
static QExpr *condition(Binder *b, Value node)
{
    QExpr *e = qb_expr(b, node);
    if (e->op == QX_CALL)
        e->type = QT_BOOL;
    return e;
}

QExpr *qb_bool(Binder *b, Value node, const char *what)
{
    QExpr *e = quantify(b, condition(b, node));
    char d[96];
    if (e->type != QT_BOOL && e->type != QT_ANY)
        bind_error(b, e, "%s must be true or false, not %s", what, qb_describe(b, e, d, sizeof d));
    return e;
}

static QExpr *bind_num(Binder *b, Value node, const char *what)
{
    QExpr *e = qb_expr(b, node);
    char d[96];
    if (!numeric(e->type) && e->type != QT_ANY)
        bind_error(b, e, "%s needs a number, not %s", what, qb_describe(b, e, d, sizeof d));
    return e;
}


static bool comparable(int op, QType x, QType y)
{
    if (x == QT_ANY || y == QT_ANY)
        return true;
    if ((x == QT_NIL || y == QT_NIL) && (op == QOP_EQ || op == QOP_NE))
        return true;
    if (numeric(x) && numeric(y))
        return true;
    return x == y && (x == QT_STR || op == QOP_EQ || op == QOP_NE);
}

static int mirror(int op)
{
    switch (op) {
    case QOP_LT: return QOP_GT;
    case QOP_LE: return QOP_GE;
    case QOP_GT: return QOP_LT;
    case QOP_GE: return QOP_LE;
    default: return op;
    }
}

uint8_t *qb_mask(Binder *b)
{
    return qp_alloc(b->vm, b->p, 32);
}

/* An enum field compared with a constant string: the symbols that hold
 * (none for == with a string that is no symbol: the field's value is a
 * string, as over rows, not a checked name). */
static void enum_compare(Binder *b, QExpr *e, QExpr *f, QExpr *k)
{
    const st_field *fd = &b->vs->s->fields[f->field];
    if (k->type != QT_STR)
        return;
    e->mask = qb_mask(b);
    for (uint32_t s = 0; s < fd->nsyms; s++)
        if (qx_holds(e->op, ops_cmp_bytes(fd->syms[s], strlen(fd->syms[s]), k->ks, k->kn)))
            qb_mask_set(e->mask, s);
}

/* A field compared with a constant, prepared as a test of its column. */
static void prepare_compare(Binder *b, QExpr *e)
{
    if (e->a->op != QX_FIELD || e->b->op != QOP_CONST)
        return;
    if (e->a->is_enum)
        enum_compare(b, e, e->a, e->b);
    else if (numeric(e->a->type) && numeric(e->b->type))
        qx_num_test(e, &b->vs->s->fields[e->a->field]);
}

/* A time field compared with a string: say how a time is written. */
static const char *time_hint(Binder *b, const QExpr *e)
{
    for (const QExpr *x = e->a; x; x = x == e->a ? e->b : NULL)
        if (x->op == QX_FIELD && b->vs && b->vs->s->fields[x->field].type == ST_TIME &&
            (x == e->a ? e->b : e->a)->type == QT_STR)
            return " (a time is written without quotes: 2026-12-02 or 2026-12-02T13:05)";
    return "";
}

static QExpr *bind_compare(Binder *b, Value node, int op)
{
    QExpr *e = qb_new(b, op, node);
    e->a = qb_expr(b, nval(node, 3));
    e->b = qb_expr(b, nval(node, 4));
    e->type = QT_BOOL;
    char d1[96], d2[96];
    if (!comparable(op, e->a->type, e->b->type))
        bind_error(b, e, "type mismatch: %s %s %s%s", qb_describe(b, e->a, d1, sizeof d1), qx_op_sym[op],
                   qb_describe(b, e->b, d2, sizeof d2), time_hint(b, e));
    if (e->a->op == QOP_CONST && e->b->op != QOP_CONST) {
        QExpr *t = e->a;    /* constants on the right */
        e->a = e->b;
        e->b = t;
        e->op = mirror(op);
    }
    e->tag = e->a->tag || e->b->tag;
    prepare_compare(b, e);
    return e;
}

static QExpr *bind_arith(Binder *b, Value node, int op)
{
    QExpr *e = qb_new(b, op, node);
    e->a = qb_expr(b, nval(node, 3));
    e->b = qb_expr(b, nval(node, 4));
    char d1[96], d2[96];
    if (e->a->type == QT_ANY || e->b->type == QT_ANY)
        e->type = QT_ANY;
    else if (numeric(e->a->type) && numeric(e->b->type))
        e->type = e->a->type == QT_INT && e->b->type == QT_INT ? QT_INT : QT_FLOAT;
    else
        bind_error(b, e, "type mismatch: %s %s %s", qb_describe(b, e->a, d1, sizeof d1), qx_op_sym[op],
                   qb_describe(b, e->b, d2, sizeof d2));
    e->tag = e->a->tag || e->b->tag;
    e->big = e->type == QT_INT && (e->a->big || e->b->big);
    return e;
}

/* A regex for `~`: a regex value or a pattern string, compiled now. */
static void prepare_regex(Binder *b, QExpr *e)
{
    QExpr *pat = e->b;
    Value re = pat->k;
    char d[96];
    if (pat->op != QOP_CONST || (!IS_STR(re) && !(IS_HANDLE(re) && AS_HANDLE(re)->type == &vm_regex_type)))
        bind_error(b, pat, "'~' needs a regex or a pattern string on its right, not %s",
                   qb_describe(b, pat, d, sizeof d));
    if (IS_STR(re)) {
        char err[200];
        VHandle *h = vm_regex_new(b->vm, AS_STR(re)->data, AS_STR(re)->len, "", err, sizeof err);
        if (!h)
            bind_error(b, pat, "%s", err);
        re = v_obj(h);
        qp_keep(b->vm, b->p, re);
    }
    e->k = re;
    e->re = vm_regex_code(AS_HANDLE(re));
    QExpr *s = e->a;
    if (s->type != QT_STR && s->type != QT_INT && s->type != QT_ANY)
        bind_error(b, s, "'~' matches strings and ints, not %s", qb_describe(b, s, d, sizeof d));
    if (s->is_enum && s->op == QX_FIELD) {
        /* Match each symbol now: the scan looks up a bit per value. */
        const st_field *fd = &b->vs->s->fields[s->field];
        pcre2_match_data *md = pcre2_match_data_create(1, NULL);
        if (!md)
            vm_throw(b->vm, v_obj(b->vm->oom));
        e->mask = qb_mask(b);
        for (uint32_t k = 0; k < fd->nsyms; k++)
            if ((pcre2_match(e->re, (PCRE2_SPTR)fd->syms[k], strlen(fd->syms[k]), 0, 0, md, NULL) >= 0) ==
                (e->op == QOP_MATCH))
                qb_mask_set(e->mask, k);
        pcre2_match_data_free(md);
    }
}


/* ---- functions ---- */

static bool is_tags_name(Value node)
{
    int op = (int)nint(node, 0);
    Value name = op == QOP_FIELD ? nval(node, 3) : op == QOP_CONST ? v_nil() : nval(node, 4);
    return IS_STR(name) && str_eq_cstr(AS_STR(name), "tags");
}

/* any/all/count/first/last(tags, PRED): PRED over each tag. */
/* bind_num is defined below qb_bool; quantifiers picking a tag by a value
 * bind theirs with it. */
static QExpr *bind_num(Binder *b, Value node, const char *what);

static QExpr *bind_quant(Binder *b, Value node, int fn, QExpr *e)
{
    size_t nargs = nlen(node) - 4;
    if (!is_tags_name(nval(node, 4)))
        bind_error(b, e, "%s(...) takes tags first: %s(tags, PRED)", vm_query_funcs[fn].name,
                   vm_query_funcs[fn].name);
    if (b->aggs == 1)
        bind_error(b, e, "%s(tags, ...) " OUTSIDE_AGG, vm_query_funcs[fn].name);
    if (b->scope == SC_TAG)
        bind_error(b, e, "%s(tags, ...) inside a quantifier or after `| tags`: the rows are tags already",
                   vm_query_funcs[fn].name);
    if (b->scope != SC_MAP && !b->vs->s->tag_size)
        bind_error(b, e, "the schema has no tag fields");
    e->op = QX_QUANT;
    e->fn = fn;
    e->type = fn == QF_count ? QT_INT : QT_BOOL;
    if (b->scope == SC_MAP) {
        Value tn = nval(node, 4);
        e->b = bind_field(b, tn, AS_STR(nint(tn, 0) == QOP_FIELD ? nval(tn, 3) : nval(tn, 4)), -2);
    }
    if (nargs == 2) {
        Scope saved = b->scope;
        bool known = b->cols_known;
        if (saved == SC_TAGSET)
            b->scope = SC_TAG;
        b->cols_known = false;  /* a tag's keys, then its tagset's */
        e->a = picks_by(fn) ? bind_num(b, nval(node, 5), vm_query_funcs[fn].name)
                            : qb_bool(b, nval(node, 5), vm_query_funcs[fn].name);
        b->scope = saved;
        b->cols_known = known;
    }
    return e;
}

/* An aggregate's argument: any value for min, max and distinct; a
 * condition for count(PRED); a number or a bool (counted as 1 and 0) for
 * sum and avg; a number for the others. */
static QExpr *bind_agg_arg(Binder *b, Value node, int fn)
{
    if (fn != QF_count && fn != QF_sum && fn != QF_avg)
        return fn == QF_distinct || fn == QF_min || fn == QF_max
                   ? qb_expr(b, node)
                   : bind_num(b, node, vm_query_funcs[fn].name);
    QExpr *e = qb_expr(b, node);
    char d[96];
    if (fn == QF_count && e->type != QT_BOOL && e->type != QT_ANY)
        bind_error(b, e, "count(PRED) needs a condition (true or false), not %s",
                   qb_describe(b, e, d, sizeof d));
    if (fn != QF_count && !numeric(e->type) && e->type != QT_BOOL && e->type != QT_ANY)
        bind_error(b, e, "%s needs a number or a bool, not %s", vm_query_funcs[fn].name,
                   qb_describe(b, e, d, sizeof d));
    return e;
}

static QExpr *bind_agg(Binder *b, Value node, int fn, QExpr *e)
{
    if (b->aggs != 1)
        bind_error(b, e, b->aggs ? "aggregates do not nest" :
                   "%s() is an aggregate: use it in group by ... { name: %s(...) }",
                   vm_query_funcs[fn].name, vm_query_funcs[fn].name);
    e->op = QX_AGG;
    e->fn = fn;
    char d[96];
    QExpr *q = NULL;
    if (nlen(node) > 4) {
        b->aggs = 2;
        e->a = bind_agg_arg(b, nval(node, 4), fn);
        q = fn == QF_quantile ? qb_expr(b, nval(node, 5)) : NULL;
        b->aggs = 1;
        e->tag = e->a->tag;
    }
    if (fn == QF_quantile) {
        double qv = q->type == QT_INT ? (double)q->ki : q->kf;
        if (q->op != QOP_CONST || !numeric(q->type) || !(qv >= 0 && qv <= 1))
            bind_error(b, q, "quantile(e, q) needs q a number from 0 to 1, not %s",
                       qb_describe(b, q, d, sizeof d));
        e->kf = qv;
    }
    bool floats = fn == QF_avg || fn == QF_median || fn == QF_quantile || fn == QF_variance ||
                  fn == QF_stddev;
    e->type = fn == QF_count || fn == QF_distinct ? QT_INT
              : floats                            ? QT_FLOAT
              : e->a->type == QT_BOOL && fn == QF_sum ? QT_INT
                                                  : e->a->type;
    if (e->a && e->a->type == QT_ANY && fn != QF_count && fn != QF_distinct)
        e->type = floats ? QT_FLOAT : QT_ANY;
    if (b->nagg == b->capagg) {
        int cap = b->capagg ? 2 * b->capagg : 8;
        QExpr **l = qp_alloc(b->vm, b->p, (size_t)cap * sizeof *l);
        if (b->nagg)
            memcpy(l, b->agg_list, (size_t)b->nagg * sizeof *l);
        b->agg_list = l;
        b->capagg = cap;
    }
    e->agg = b->nagg;
    b->agg_list[b->nagg++] = e;
    return e;
}

/* f(args) with f a function of the program (captured when the pipeline
 * was written), asked of comb per row: any value (QT_ANY), or where it is
 * a condition (qb_bool) true or false. */
static QExpr *bind_comb_call(Binder *b, Value node)
{
    QExpr *e = qb_new(b, QX_CALL, node);
    QExpr *fx = qb_expr(b, nval(node, 3));
    char d[96];
    if (fx->op != QOP_CONST || (!IS_FUNC(fx->k) && fx->k.type != VT_NATIVE))
        bind_error(b, fx, "%s is not a function", qb_describe(b, fx, d, sizeof d));
    if (nlen(node) - 4 > QX_MAX_ARGS)
        bind_error(b, e, "a function called in a query takes at most %d arguments", QX_MAX_ARGS);
    void *cc = qx_call_new(b->vm, b->p, fx->k, e, "a function called in a query");
    QExpr **tail = &e->a;
    for (size_t i = 4; i < nlen(node); i++) {
        QExpr *arg = *tail = qb_new(b, QX_ARG, node);
        arg->a = qb_expr(b, nval(node, i));
        arg->type = arg->a->type;
        arg->tag = arg->a->tag;
        e->tag |= arg->tag;
        tail = &arg->b;
    }
    e->call = cc;
    e->k = fx->k;
    e->type = QT_ANY;
    return e;
}

static QExpr *bind_call(Binder *b, Value node)
{
    if (!IS_STR(nval(node, 3)))
        return bind_comb_call(b, node);
    QExpr *e = qb_new(b, QX_FUNC, node);
    VStr *name = AS_STR(nval(node, 3));
    int fn = vm_query_func_find(name->data, name->len);
    int nargs = (int)nlen(node) - 4;
    const QueryFuncDef *d = &vm_query_funcs[fn];
    if (fn == QF_count && (nargs == 0 || (nargs == 1 && !is_tags_name(nval(node, 4)))))
        return bind_agg(b, node, fn, e);    /* count(), count(PRED) */
    if (nargs < d->min_args || nargs > d->max_args)
        bind_error(b, e, "%s", d->help);
    bool indexed = b->indexed;
    b->indexed = false;
    switch (fn) {
    case QF_first: case QF_last: case QF_max_by: case QF_min_by:
        if (!indexed)
            bind_error(b, e, "%s(tags, %s) needs .field after it: %s(tags, %s).sys", d->name,
                       picks_by(fn) ? "e" : "PRED", d->name, picks_by(fn) ? "e" : "PRED");
        return bind_quant(b, node, fn, e);
    case QF_any: case QF_all: case QF_count:
        return bind_quant(b, node, fn, e);
    case QF_sum: case QF_min: case QF_max: case QF_avg: case QF_distinct:
    case QF_median: case QF_quantile: case QF_variance: case QF_stddev:
        return bind_agg(b, node, fn, e);
    case QF_between: {
        /* lo <= x && x <= hi, typed and checked as such */
        e->op = QOP_AND;
        e->type = QT_BOOL;
        e->a = qb_new(b, QOP_GE, node);
        e->b = qb_new(b, QOP_LE, node);
        e->a->a = e->b->a = qb_expr(b, nval(node, 4));
        e->a->b = qb_expr(b, nval(node, 5));
        e->b->b = qb_expr(b, nval(node, 6));
        e->a->type = e->b->type = QT_BOOL;
        char d1[96], d2[96];
        for (QExpr *c = e->a; c; c = c == e->a ? e->b : NULL)
            if (!comparable(c->op, c->a->type, c->b->type))
                bind_error(b, c->b, "type mismatch: between(%s, %s, ...)",
                           qb_describe(b, c->a, d1, sizeof d1), qb_describe(b, c->b, d2, sizeof d2));
        e->tag = e->a->a->tag || e->a->b->tag || e->b->b->tag;
        e->a->tag = e->b->tag = e->tag;
        prepare_compare(b, e->a);
        prepare_compare(b, e->b);
        return e;
    }
    default:    /* day, hour */
        e->fn = fn;
        e->a = qb_expr(b, nval(node, 4));
        if (e->a->type != QT_INT && e->a->type != QT_ANY) {
            char d1[96];
            bind_error(b, e->a, "%s() needs a time, not %s", d->name, qb_describe(b, e->a, d1, sizeof d1));
        }
        e->type = e->a->type;
        e->tag = e->a->tag;
        return e;
    }
}

/* obj.key: first/last(tags, PRED).field, or a key of a map in row steps. */
static QExpr *bind_index(Binder *b, Value node)
{
    Value objn = nval(node, 3), keyn = nval(node, 4);
    QExpr *e = qb_new(b, QOP_INDEX, node);
    int op = (int)nint(objn, 0);
    if (op == QOP_CALL && IS_STR(nval(objn, 3))) {
        VStr *fname = AS_STR(nval(objn, 3));
        int fn = vm_query_func_find(fname->data, fname->len);
        if (fn == QF_first || fn == QF_last || picks_by(fn)) {
            b->indexed = true;
            QExpr *q = qb_expr(b, objn);
            if (nint(keyn, 0) != QOP_CONST || !IS_STR(nval(keyn, 3)))
                bind_error(b, q, "%s(tags, ...) needs .field after it", fname->data);
            VStr *key = AS_STR(nval(keyn, 3));
            if (b->scope == SC_MAP) {
                q->name = key;
                q->type = QT_ANY;
                return q;
            }
            int f = st_schema_find(b->vs->s, key->data, key->len);
            if (f < 0)
                unknown_name(b, q, key);
            Scope saved = b->scope;
            b->scope = SC_TAG;
            QExpr *fx = bind_field(b, keyn, key, f);
            b->scope = saved;
            q->field = f;
            q->type = fx->type;
            q->strw = fx->strw;
            q->is_enum = fx->is_enum;
            q->big = fx->big;
            return q;
        }
    }
    if (b->scope != SC_MAP)
        bind_error(b, e, "'.' applies to first, last(tags, PRED) and max_by, min_by(tags, e) here");
    e->a = qb_expr(b, objn);
    e->b = qb_expr(b, keyn);
    e->type = QT_ANY;
    return e;
}

/* The type of a value that is x's or y's (an if's branches, the operands
 * of a value-giving && or ||): one type, ints and floats give a float, nil
 * takes the other's; -1 when they cannot be one column. */
static int one_type(QType x, QType y)
{
    if (x == QT_ANY || y == QT_ANY)
        return QT_ANY;
    if (x == y || y == QT_NIL)
        return x;
    if (x == QT_NIL)
        return y;
    return numeric(x) && numeric(y) ? QT_FLOAT : -1;
}

/* e (an if: a the condition, b and c the values) typed from its values. */
static QExpr *typed_choice(Binder *b, QExpr *e, const char *what)
{
    int t = one_type(e->b->type, e->c->type);
    char d1[96], d2[96];
    if (t < 0)
        bind_error(b, e, "%s gives %s or %s: in a query its values must be of one type", what,
                   qb_describe(b, e->b, d1, sizeof d1), qb_describe(b, e->c, d2, sizeof d2));
    e->type = (QType)t;
    e->tag = e->a->tag || e->b->tag || e->c->tag;
    e->big = t == QT_INT && (e->b->big || e->c->big);
    e->strw = e->b->strw > e->c->strw ? e->b->strw : e->c->strw;
    return e;
}

/* a && b, a || b: over conditions a condition; given other values, as in
 * comb, the operand that decided: a || b is if a { a } else { b } (a's
 * truth: not nil, and true if a bool), a && b is if a { b } else { a }. */
static QExpr *bind_logic(Binder *b, Value node, int op)
{
    QExpr *e = qb_new(b, op, node);
    e->a = condition(b, nval(node, 3));     /* a call beside && or || is a condition */
    e->b = condition(b, nval(node, 4));
    if ((e->a->type == QT_BOOL && e->b->type == QT_BOOL) || e->a->type == QT_ANY || e->b->type == QT_ANY) {
        /* conditions; or over maps' values, which the row steps take as comb does */
        e->a = quantify(b, e->a);   /* a bare bool tag field is a condition here */
        e->b = quantify(b, e->b);
        e->type = e->a->type == QT_BOOL && e->b->type == QT_BOOL ? QT_BOOL : QT_ANY;
        e->tag = e->a->tag || e->b->tag;
        return e;
    }
    QExpr *x = e->a, *truth = x;
    if (x->type != QT_BOOL) {
        truth = qb_new(b, QOP_NE, node);
        truth->a = x;
        truth->b = qb_const(b, node, v_nil());
        truth->type = QT_BOOL;
        truth->tag = x->tag;
    }
    QExpr *c = qb_new(b, QOP_IF, node);
    c->a = truth;
    c->b = op == QOP_OR ? x : e->b;
    c->c = op == QOP_OR ? e->b : x;
    c->fn = op;     /* explain shows it as written */
    return typed_choice(b, c, op == QOP_AND ? "'&&'" : "'||'");
}

static QExpr *bind_node(Binder *b, Value node)
{
    if (!IS_ARRAY(node))
        vm_error(b->vm, "bad query plan");
    int op = (int)nint(node, 0);
    QExpr *e;
    char d[96];
    switch (op) {
    case QOP_CONST:
        return qb_const(b, node, nval(node, 3));
    case QOP_FIELD:
    case QOP_MODVAR:
        return bind_name(b, node);
    case QOP_CAPTURE:
        return bind_capture(b, node);
    case QOP_NEG:
        e = qb_new(b, op, node);
        e->a = bind_num(b, nval(node, 3), "unary '-'");
        e->type = e->a->type;
        e->tag = e->a->tag;
        e->big = e->a->big;
        return e;
    case QOP_NOT:
        e = qb_new(b, op, node);
        e->a = qb_bool(b, nval(node, 3), "'!'");
        e->type = QT_BOOL;
        e->tag = e->a->tag;
        return e;
    case QOP_ADD: case QOP_SUB: case QOP_MUL: case QOP_DIV: case QOP_MOD:
        return bind_arith(b, node, op);
    case QOP_EQ: case QOP_NE: case QOP_LT: case QOP_LE: case QOP_GT: case QOP_GE:
        return bind_compare(b, node, op);
    case QOP_AND:
    case QOP_OR:
        return bind_logic(b, node, op);
    case QOP_IF:
        e = qb_new(b, op, node);
        e->a = qb_bool(b, nval(node, 3), "an if's condition");
        e->b = qb_expr(b, nval(node, 4));
        e->c = qb_expr(b, nval(node, 5));
        return typed_choice(b, e, "this if");
    case QOP_MATCH:
    case QOP_NOMATCH:
        e = qb_new(b, op, node);
        e->a = qb_expr(b, nval(node, 3));
        e->b = qb_expr(b, nval(node, 4));
        e->type = QT_BOOL;
        e->tag = e->a->tag;
        prepare_regex(b, e);
        return e;
    case QOP_IN:
        return qb_in(b, node);
    case QOP_INRANGE:
        e = qb_new(b, QOP_AND, node);
        e->a = qb_new(b, QOP_GE, node);
        e->b = qb_new(b, QOP_LT, node);
        e->a->a = e->b->a = qb_expr(b, nval(node, 3));
        e->a->b = qb_expr(b, nval(node, 4));
        e->b->b = qb_expr(b, nval(node, 5));
        e->type = e->a->type = e->b->type = QT_BOOL;
        for (QExpr *c = e->a; c; c = c == e->a ? e->b : NULL)
            if (!comparable(c->op, c->a->type, c->b->type))
                bind_error(b, c->b, "type mismatch: %s in a range of %s",
                           qb_describe(b, c->a, d, sizeof d), type_word(c->b->type));
        e->tag = e->a->tag = e->b->tag = e->a->a->tag || e->a->b->tag || e->b->b->tag;
        return e;
    case QOP_CALL:
        return bind_call(b, node);
    case QOP_INDEX:
        return bind_index(b, node);
    default:
        vm_error(b->vm, "bad query plan");
    }
}

/* A bare bool field is quantified where it is a condition (bind_bool), so
 * `flag == false` quantifies the comparison, not the field. */
QExpr *qb_expr(Binder *b, Value node)
{
    QExpr *e = bind_node(b, node);
    return e->op == QX_FIELD ? e : quantify(b, e);
}
