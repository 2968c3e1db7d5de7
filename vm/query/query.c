/* query: pipelines as comb values: the _pipe native, binding a pipeline's
 * plan to its source (names to fields, types checked, constants prepared,
 * the scan and the row steps chosen), running it, printing and iterating
 * it. */
#include "config.h"
#include "vm/query/qplan.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>
#include <xxhash.h>

#include "store/mem.h"
#include "vm/natives.h"
#include "vm/regex.h"
#include "vm/suggest.h"

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

/* A comb function the scan calls (a matcher's, or one called with fields):
 * on the VM's thread; its errors go up through the scan like any raise. */
typedef struct CombCall {
    VM *vm;
    Value fn;
    const QExpr *at;
    const char *what;   /* for the message when it returns no bool */
} CombCall;

static bool call_bool(const CombCall *cc, int argc, Value *argv)
{
    Value r = vm_call(cc->vm, cc->fn, argc, argv);
    if (!IS_BOOL(r))
        qx_error(cc->vm, cc->at, "%s must return true or false, not %s", cc->what, v_type_name(r));
    return AS_BOOL(r);
}

/* What the kernels ask per string (QSet.match). */
static bool call_matcher(void *data, const char *s, size_t n)
{
    Value arg = v_obj(vm_str_new(((CombCall *)data)->vm, s, n));
    return call_bool(data, 1, &arg);
}

/* Value j of an argument's vector as comb has it. */
static Value vec_value(VM *vm, const QExpr *x, const KVec *v, uint32_t j)
{
    if (v->valid && !v->valid[j])
        return v_nil();
    switch (x->type) {
    case QT_BOOL: return v_bool(v->i[j] != 0);
    case QT_INT:    /* a u64 above the ints (or arithmetic on one): a float, as rows have it */
        return kvec_float(v, j) ? v_float(v->f[j]) : v_int(v->i[j]);
    case QT_FLOAT: return v_float(v->f[j]);
    case QT_STR: return v_obj(vm_str_new(vm, v->sp[j], v->sl[j]));
    default: return v_nil();
    }
}

bool qx_call(const QExpr *e, const KVec *const *args, uint32_t j)
{
    const CombCall *cc = e->call;
    Value argv[QX_MAX_ARGS];
    int n = 0;
    for (const QExpr *x = e->a; x; x = x->b, n++)
        argv[n] = vec_value(cc->vm, x->a, args[n], j);
    return qx_call_values(e, n, argv);
}

bool qx_call_values(const QExpr *e, int argc, Value *argv)
{
    return call_bool(e->call, argc, argv);
}

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

static void keep(VM *vm, QPlan *p, Value v)
{
    if (IS_OBJ(v))
        vm_array_push(vm, p->keep, v);
}

/* ---- the query handle --------------------------------------------------- */

/* A pipeline: its source and stages (each [stage, captures, module], so a
 * query extended elsewhere keeps each part's own values), bound. */
typedef struct VQuery {
    Value src;
    VArray *stages;
    QPlan plan;
} VQuery;

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

/* A reading of a query's rows (`for`, write): as they come from the scan
 * (vm/query/scan.c's cursor) through the row steps that go a row at a time, or
 * the run's array when a step needs every row first (group by, a sort
 * after a select) or the source is an array. */
typedef struct QCursor {
    Value q;            /* the query: its plan */
    Value scan;         /* the scan's cursor, or nil */
    Value rows;         /* else the rows, or nil */
    Value row;          /* the row going through the steps */
    size_t i;           /* the next of rows */
    int to;             /* the scan's rows go through steps [0, to) */
    uint64_t taken[];   /* [nsteps]: rows each take let through */
} QCursor;

static void cursor_mark(VM *vm, void *data)
{
    QCursor *c = data;
    vm_mark(vm, c->q);
    vm_mark(vm, c->scan);
    vm_mark(vm, c->rows);
    vm_mark(vm, c->row);
}

/* The loop is over: the scan's files closed now, the rows let go. */
static void cursor_close(VM *vm, void *data)
{
    QCursor *c = data;
    if (!IS_NIL(c->scan))
        scan_close(vm, c->scan);
    c->scan = c->rows = v_nil();
}

static bool cursor_next(VM *vm, void *data, int64_t *pos, Value *a, Value *b)
{
    QCursor *c = data;
    (void)pos;
    if (IS_ARRAY(c->rows)) {
        if (c->i >= AS_ARRAY(c->rows)->len)
            return false;
        *a = *b = AS_ARRAY(c->rows)->items[c->i++];
        return true;
    }
    QPlan *p = &((VQuery *)handle_data(AS_HANDLE(c->q)))->plan;
    while (!IS_NIL(c->scan) && scan_next(vm, c->scan, &c->row)) {
        int k = rows_step(vm, p, 0, c->to, c->taken, &c->row);
        if (k < 0)
            break;
        if (k == 2)
            cursor_close(vm, c);
        if (k) {
            *a = *b = c->row;
            c->row = v_nil();
            return true;
        }
        vm_gc_step(vm);     /* a row a where left out is garbage */
    }
    cursor_close(vm, c);
    return false;
}

static const VHandleType cursor_type = {
    .name = "query cursor", .mark = cursor_mark, .next = cursor_next, .close = cursor_close,
};

/* Whether the scan's rows can go a row at a time through steps [0, to). */
static bool streams(const QPlan *p, int to)
{
    return p->typed && p->scan.consumer == QC_COLLECT && rows_streams_to(p, 0) >= to;
}

/* A cursor over the rows of steps [0, to), lazy when they stream. */
static Value cursor_open(VM *vm, Value qv, int to)
{
    VQuery *q = handle_data(AS_HANDLE(qv));
    QPlan *p = &q->plan;
    VHandle *h = vm_handle_new(vm, &cursor_type, sizeof(QCursor) + (size_t)p->nsteps * sizeof(uint64_t));
    Value hv = v_obj(h);
    vm_push_root(vm, hv);
    QCursor *c = handle_data(h);
    c->q = qv;
    c->scan = c->rows = c->row = v_nil();
    c->to = to;
    if (streams(p, to)) {
        c->scan = scan_open(vm, p);
    } else {
        Value r = vm_query_run(vm, qv);
        if (!IS_ARRAY(r))
            vm_error(vm, "this query gives %s, not rows to iterate over", v_type_name(r));
        c->rows = r;
    }
    vm_pop_root(vm, 1);
    return hv;
}

bool vm_query_streams(Value v)
{
    return IS_HANDLE(v) && AS_HANDLE(v)->type == &vm_query_type &&
           streams(&((VQuery *)handle_data(AS_HANDLE(v)))->plan,
                   ((VQuery *)handle_data(AS_HANDLE(v)))->plan.nsteps);
}

static Value query_iter(VM *vm, Value qv)
{
    return cursor_open(vm, qv, ((VQuery *)handle_data(AS_HANDLE(qv)))->plan.nsteps);
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

/* ---- binding ------------------------------------------------------------ */

typedef enum { SC_TAGSET, SC_TAG, SC_MAP } Scope;

typedef struct Binder {
    VM *vm;
    QPlan *p;
    VArray *caps;
    VModule *mod;
    const VSchema *vs;      /* the typed source's schema */
    const VSchema *src_vs;  /* the same, still known for the steps after the scan (hints) */
    Scope scope;
    int aggs;               /* 1: aggregates allowed here; 2: inside one's argument */
    QExpr **agg_list;       /* aggregates found, for the caller */
    int nagg, capagg;
    VStr **cols;            /* SC_MAP: the rows' keys, when known */
    int ncols;
    bool cols_known;
    int nslots;
    bool indexed;           /* the call being bound has .field after it */
    bool quantify;          /* a tagset-level where: bare tag fields mean any(tags, ...) */
    QExpr *residual[2];     /* the where's conjuncts that call comb (tagsets, tags) */
    int skip_from, skip_to; /* stages the scan runs after a select's (a sort, a take) */
} Binder;

static int64_t nint(Value node, size_t i)
{
    return AS_ARRAY(node)->items[i].as.i;
}

static Value nval(Value node, size_t i)
{
    return AS_ARRAY(node)->items[i];
}

static size_t nlen(Value node)
{
    return AS_ARRAY(node)->len;
}

_Noreturn void qx_error(VM *vm, const QExpr *at, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vm_error_at(vm, (uint32_t)at->line, (uint32_t)at->col, msg);
}

#define bind_error(b, at, ...) qx_error((b)->vm, at, __VA_ARGS__)

static QExpr *new_expr_at(Binder *b, int op, int line, int col)
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

static QExpr *new_expr(Binder *b, int op, Value node)
{
    return new_expr_at(b, op, (int)nint(node, 1), (int)nint(node, 2));
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
static const char *describe(Binder *b, const QExpr *e, char *buf, size_t n)
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
        snprintf(buf, n, "a call of a comb function (a condition: true or false)");
    } else {
        snprintf(buf, n, "%s", type_word(e->type));
    }
    return buf;
}

static bool numeric(QType t)
{
    return t == QT_INT || t == QT_FLOAT;
}

static QExpr *make_const(Binder *b, Value node, Value v)
{
    QExpr *e = new_expr(b, QOP_CONST, node);
    e->k = v;
    keep(b->vm, b->p, v);
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
        for (uint32_t f = 0; f < s->nfields && n < ST_MAX_FIELDS; f++)
            cands[n++] = s->fields[f].name;
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
static int field_of(Binder *b, VStr *name)
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
        e = new_expr(b, QX_MAPGET, node);
        e->name = name;
        e->type = QT_ANY;
        return e;
    }
    const st_field *fd = &b->vs->s->fields[f];
    e = new_expr(b, QX_FIELD, node);
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

/* A plain value: equal ones bind alike (strings are immutable). */
static bool plain(Value v)
{
    return IS_NIL(v) || IS_BOOL(v) || IS_INT(v) || IS_FLOAT(v) || IS_STR(v);
}

static bool same_plain(Value a, Value b)
{
    return a.type == b.type && v_equal(a, b);  /* 1 and 1.0 bind apart */
}

static void read_modvar(QPlan *p, uint32_t slot, Value v)
{
    if (p->nmodvars < 0)
        return;
    if (p->nmodvars == QP_MODVARS || !plain(v)) {
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
        if (b->mod && slot < b->mod->nvars)
            var = b->mod->vars[slot];
        read_modvar(b->p, (uint32_t)slot, var);
    } else {
        name = AS_STR(nval(node, 4));
        var = b->caps->items[nint(node, 3)];
    }
    int f = field_of(b, name);
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
    return make_const(b, node, var);
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
        if (field_of(b, n) >= 0 || (b->scope == SC_MAP && b->cols_known && col_index(b, n) >= 0)) {
            QExpr at = {.line = (int)nint(node, 1), .col = (int)nint(node, 2)};
            bind_error(b, &at, "'%s' is both a field and a variable used here: rename the variable",
                       n->data);
        }
    }
    return make_const(b, node, b->caps->items[nint(node, 3)]);
}

static QExpr *bind(Binder *b, Value node);

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
    QExpr *q = new_expr_at(b, QX_QUANT, e->line, e->col);
    q->fn = QF_any;
    q->a = e;
    q->type = QT_BOOL;
    return q;
}

static QExpr *bind_bool(Binder *b, Value node, const char *what)
{
    QExpr *e = quantify(b, bind(b, node));
    char d[96];
    if (e->type != QT_BOOL && e->type != QT_ANY)
        bind_error(b, e, "%s must be true or false, not %s", what, describe(b, e, d, sizeof d));
    return e;
}

static QExpr *bind_num(Binder *b, Value node, const char *what)
{
    QExpr *e = bind(b, node);
    char d[96];
    if (!numeric(e->type) && e->type != QT_ANY)
        bind_error(b, e, "%s needs a number, not %s", what, describe(b, e, d, sizeof d));
    return e;
}

static const char *const op_sym[QOP__COUNT] = {
    [QOP_ADD] = "+", [QOP_SUB] = "-", [QOP_MUL] = "*", [QOP_DIV] = "/", [QOP_MOD] = "%",
    [QOP_EQ] = "==", [QOP_NE] = "!=", [QOP_LT] = "<", [QOP_LE] = "<=", [QOP_GT] = ">",
    [QOP_GE] = ">=", [QOP_MATCH] = "~", [QOP_NOMATCH] = "!~", [QOP_IN] = "in",
};

/* ---- a bound expression as text (explain) ---- */

static void show_operand(VM *vm, VStrBuf *sb, const QExpr *e, const st_schema *s)
{
    bool paren = (e->op >= QOP_ADD && e->op <= QOP_INRANGE) || e->op == QX_SET;
    vm_sb_addc(vm, sb, paren ? "(" : "");
    qx_show(vm, sb, e, s);
    vm_sb_addc(vm, sb, paren ? ")" : "");
}

void qx_show(VM *vm, VStrBuf *sb, const QExpr *e, const st_schema *s)
{
    switch (e->op) {
    case QOP_CONST:
        vm_show(vm, sb, e->k, true);
        return;
    case QX_FIELD: case QX_MAPGET:
        vm_sb_add(vm, sb, e->name->data, e->name->len);
        return;
    case QOP_NEG: case QOP_NOT:
        vm_sb_addc(vm, sb, e->op == QOP_NEG ? "-" : "!");
        show_operand(vm, sb, e->a, s);
        return;
    case QX_SET: case QOP_MATCH: case QOP_NOMATCH:
        show_operand(vm, sb, e->a, s);
        vm_sb_addc(vm, sb, e->op == QX_SET ? " in " : e->op == QOP_MATCH ? " ~ " : " !~ ");
        vm_show(vm, sb, e->k, true);
        return;
    case QX_QUANT: case QX_AGG: case QX_FUNC:
        vm_sb_printf(vm, sb, "%s(%s", vm_query_funcs[e->fn].name, e->op == QX_QUANT ? "tags" : "");
        for (const QExpr *x = e->a; x; x = x == e->a ? e->b : x == e->b ? e->c : NULL) {
            vm_sb_addc(vm, sb, e->op == QX_QUANT || x != e->a ? ", " : "");
            qx_show(vm, sb, x, s);
        }
        vm_sb_addc(vm, sb, ")");
        if (e->op == QX_QUANT && e->name)
            vm_sb_printf(vm, sb, ".%s", e->name->data);
        else if (e->op == QX_QUANT && e->field >= 0 && s)
            vm_sb_printf(vm, sb, ".%s", s->fields[e->field].name);
        return;
    case QX_CALL:
        vm_show(vm, sb, e->k, false);
        vm_sb_addc(vm, sb, "(");
        for (const QExpr *x = e->a; x; x = x->b) {
            qx_show(vm, sb, x->a, s);
            vm_sb_addc(vm, sb, x->b ? ", " : "");
        }
        vm_sb_addc(vm, sb, ")");
        return;
    case QOP_AND: case QOP_OR:
        show_operand(vm, sb, e->a, s);
        vm_sb_addc(vm, sb, e->op == QOP_AND ? " && " : " || ");
        show_operand(vm, sb, e->b, s);
        return;
    case QOP_INDEX:
        show_operand(vm, sb, e->a, s);
        vm_sb_addc(vm, sb, ".");
        qx_show(vm, sb, e->b, s);
        return;
    default:
        show_operand(vm, sb, e->a, s);
        vm_sb_printf(vm, sb, " %s ", op_sym[e->op]);
        show_operand(vm, sb, e->b, s);
        return;
    }
}

/* Do two operand types compare? nil compares with anything by ==. */
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

static uint8_t *new_mask(Binder *b)
{
    return qp_alloc(b->vm, b->p, 32);
}

static void mask_set(uint8_t *m, uint32_t k)
{
    m[k >> 3] |= (uint8_t)(1u << (k & 7));
}

/* An enum field compared with a constant string: the symbols that hold
 * (none for == with a string that is no symbol: the field's value is a
 * string, as over rows, not a checked name). */
static void enum_compare(Binder *b, QExpr *e, QExpr *f, QExpr *k)
{
    const st_field *fd = &b->vs->s->fields[f->field];
    if (k->type != QT_STR)
        return;
    e->mask = new_mask(b);
    for (uint32_t s = 0; s < fd->nsyms; s++)
        if (qx_holds(e->op, ops_cmp_bytes(fd->syms[s], strlen(fd->syms[s]), k->ks, k->kn)))
            mask_set(e->mask, s);
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

static QExpr *bind_compare(Binder *b, Value node, int op)
{
    QExpr *e = new_expr(b, op, node);
    e->a = bind(b, nval(node, 3));
    e->b = bind(b, nval(node, 4));
    e->type = QT_BOOL;
    char d1[96], d2[96];
    if (!comparable(op, e->a->type, e->b->type))
        bind_error(b, e, "type mismatch: %s %s %s", describe(b, e->a, d1, sizeof d1), op_sym[op],
                   describe(b, e->b, d2, sizeof d2));
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
    QExpr *e = new_expr(b, op, node);
    e->a = bind(b, nval(node, 3));
    e->b = bind(b, nval(node, 4));
    char d1[96], d2[96];
    if (e->a->type == QT_ANY || e->b->type == QT_ANY)
        e->type = QT_ANY;
    else if (numeric(e->a->type) && numeric(e->b->type))
        e->type = e->a->type == QT_INT && e->b->type == QT_INT ? QT_INT : QT_FLOAT;
    else
        bind_error(b, e, "type mismatch: %s %s %s", describe(b, e->a, d1, sizeof d1), op_sym[op],
                   describe(b, e->b, d2, sizeof d2));
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
                   describe(b, pat, d, sizeof d));
    if (IS_STR(re)) {
        char err[200];
        VHandle *h = vm_regex_new(b->vm, AS_STR(re)->data, AS_STR(re)->len, "", err, sizeof err);
        if (!h)
            bind_error(b, pat, "%s", err);
        re = v_obj(h);
        keep(b->vm, b->p, re);
    }
    e->k = re;
    e->re = vm_regex_code(AS_HANDLE(re));
    QExpr *s = e->a;
    if (s->type != QT_STR && s->type != QT_INT && s->type != QT_ANY)
        bind_error(b, s, "'~' matches strings and ints, not %s", describe(b, s, d, sizeof d));
    if (s->is_enum && s->op == QX_FIELD) {
        /* Match each symbol now: the scan looks up a bit per value. */
        const st_field *fd = &b->vs->s->fields[s->field];
        pcre2_match_data *md = pcre2_match_data_create(1, NULL);
        if (!md)
            vm_throw(b->vm, v_obj(b->vm->oom));
        e->mask = new_mask(b);
        for (uint32_t k = 0; k < fd->nsyms; k++)
            if ((pcre2_match(e->re, (PCRE2_SPTR)fd->syms[k], strlen(fd->syms[k]), 0, 0, md, NULL) >= 0) ==
                (e->op == QOP_MATCH))
                mask_set(e->mask, k);
        pcre2_match_data_free(md);
    }
}

/* ---- sets for `in` ---- */

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
        if (!(v.as.f >= -0x1p63 && v.as.f < 0x1p63) || v.as.f != (double)(int64_t)v.as.f) {
            if (s->big)     /* no int equals it, a big value may */
                set_add(b, s->big, v, at);
            return;
        }
        i = (int64_t)v.as.f;
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
               v_type_name(v), describe(b, at, d, sizeof d));
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

/* The values of a set: an array's items, a map's keys, a query's rows'
 * only column. */
static VArray *set_values(Binder *b, QExpr *at, Value v)
{
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
        bind_error(b, at, "'in' needs an array, a map or a matcher on its right, not %s",
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

static QExpr *bind_in(Binder *b, Value node)
{
    QExpr *e = new_expr(b, QX_SET, node);
    e->a = bind(b, nval(node, 3));
    QExpr *setx = bind(b, nval(node, 4));
    e->type = QT_BOOL;
    e->tag = e->a->tag;
    char d[96];
    if (setx->op != QOP_CONST)
        bind_error(b, setx, "the set after 'in' must not depend on the row's fields");
    e->k = setx->k;
    if (IS_HANDLE(e->k) && AS_HANDLE(e->k)->type == &vm_matcher_type) {
        if (e->a->type != QT_STR && e->a->type != QT_ANY)
            bind_error(b, e->a, "a matcher matches strings, not %s", describe(b, e->a, d, sizeof d));
        CombCall *mc = qp_alloc(b->vm, b->p, sizeof *mc);
        *mc = (CombCall){b->vm, ((Matcher *)handle_data(AS_HANDLE(e->k)))->fn, e,
                         "the matcher's function"};
        e->set = qp_alloc(b->vm, b->p, sizeof *e->set);
        e->set->match = call_matcher;
        e->set->mdata = mc;
        return e;
    }
    VArray *vals = set_values(b, setx, setx->k);
    keep(b->vm, b->p, v_obj(vals));
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
        e->mask = new_mask(b);
        for (uint32_t k = 0; k < fd->nsyms; k++)
            if (qset_has(e->set, fd->syms[k], strlen(fd->syms[k])))
                mask_set(e->mask, k);
    }
    return e;
}

/* ---- functions ---- */

static bool is_tags_name(Value node)
{
    int op = (int)nint(node, 0);
    Value name = op == QOP_FIELD ? nval(node, 3) : op == QOP_CONST ? v_nil() : nval(node, 4);
    return IS_STR(name) && str_eq_cstr(AS_STR(name), "tags");
}

/* any/all/count/first/last(tags, PRED): PRED over each tag. */
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
        e->a = bind_bool(b, nval(node, 5), vm_query_funcs[fn].name);
        b->scope = saved;
        b->cols_known = known;
    }
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
    if (nlen(node) > 4) {
        b->aggs = 2;
        e->a = fn == QF_distinct || fn == QF_min || fn == QF_max
                   ? bind(b, nval(node, 4))
                   : bind_num(b, nval(node, 4), vm_query_funcs[fn].name);
        b->aggs = 1;
        e->tag = e->a->tag;
    }
    e->type = fn == QF_count || fn == QF_distinct ? QT_INT
              : fn == QF_avg                      ? QT_FLOAT
                                                  : e->a->type;
    if (e->a && e->a->type == QT_ANY)
        e->type = fn == QF_avg ? QT_FLOAT : QT_ANY;
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
 * was written): a condition asked of comb per row. */
static QExpr *bind_comb_call(Binder *b, Value node)
{
    QExpr *e = new_expr(b, QX_CALL, node);
    QExpr *fx = bind(b, nval(node, 3));
    char d[96];
    if (fx->op != QOP_CONST || (!IS_FUNC(fx->k) && fx->k.type != VT_NATIVE))
        bind_error(b, fx, "%s is not a function", describe(b, fx, d, sizeof d));
    if (nlen(node) - 4 > QX_MAX_ARGS)
        bind_error(b, e, "a function called in a query takes at most %d arguments", QX_MAX_ARGS);
    CombCall *cc = qp_alloc(b->vm, b->p, sizeof *cc);
    *cc = (CombCall){b->vm, fx->k, e, "a function called in a query"};
    QExpr **tail = &e->a;
    for (size_t i = 4; i < nlen(node); i++) {
        QExpr *arg = *tail = new_expr(b, QX_ARG, node);
        arg->a = bind(b, nval(node, i));
        arg->type = arg->a->type;
        arg->tag = arg->a->tag;
        e->tag |= arg->tag;
        tail = &arg->b;
    }
    e->call = cc;
    e->k = fx->k;
    e->type = QT_BOOL;
    return e;
}

static QExpr *bind_call(Binder *b, Value node)
{
    if (!IS_STR(nval(node, 3)))
        return bind_comb_call(b, node);
    QExpr *e = new_expr(b, QX_FUNC, node);
    VStr *name = AS_STR(nval(node, 3));
    int fn = vm_query_func_find(name->data, name->len);
    int nargs = (int)nlen(node) - 4;
    const QueryFuncDef *d = &vm_query_funcs[fn];
    if (fn == QF_count && nargs == 0)
        return bind_agg(b, node, fn, e);
    if (nargs < d->min_args || nargs > d->max_args)
        bind_error(b, e, "%s", d->help);
    bool indexed = b->indexed;
    b->indexed = false;
    switch (fn) {
    case QF_first: case QF_last:
        if (!indexed)
            bind_error(b, e, "%s(tags, PRED) needs .field after it: %s(tags, PRED).sys", d->name,
                       d->name);
        return bind_quant(b, node, fn, e);
    case QF_any: case QF_all: case QF_count:
        return bind_quant(b, node, fn, e);
    case QF_sum: case QF_min: case QF_max: case QF_avg: case QF_distinct:
        return bind_agg(b, node, fn, e);
    case QF_between: {
        /* lo <= x && x <= hi, typed and checked as such */
        e->op = QOP_AND;
        e->type = QT_BOOL;
        e->a = new_expr(b, QOP_GE, node);
        e->b = new_expr(b, QOP_LE, node);
        e->a->a = e->b->a = bind(b, nval(node, 4));
        e->a->b = bind(b, nval(node, 5));
        e->b->b = bind(b, nval(node, 6));
        e->a->type = e->b->type = QT_BOOL;
        char d1[96], d2[96];
        for (QExpr *c = e->a; c; c = c == e->a ? e->b : NULL)
            if (!comparable(c->op, c->a->type, c->b->type))
                bind_error(b, c->b, "type mismatch: between(%s, %s, ...)",
                           describe(b, c->a, d1, sizeof d1), describe(b, c->b, d2, sizeof d2));
        e->tag = e->a->a->tag || e->a->b->tag || e->b->b->tag;
        e->a->tag = e->b->tag = e->tag;
        prepare_compare(b, e->a);
        prepare_compare(b, e->b);
        return e;
    }
    default:    /* day, hour */
        e->fn = fn;
        e->a = bind(b, nval(node, 4));
        if (e->a->type != QT_INT && e->a->type != QT_ANY) {
            char d1[96];
            bind_error(b, e->a, "%s() needs a time, not %s", d->name, describe(b, e->a, d1, sizeof d1));
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
    QExpr *e = new_expr(b, QOP_INDEX, node);
    int op = (int)nint(objn, 0);
    if (op == QOP_CALL && IS_STR(nval(objn, 3))) {
        VStr *fname = AS_STR(nval(objn, 3));
        int fn = vm_query_func_find(fname->data, fname->len);
        if (fn == QF_first || fn == QF_last) {
            b->indexed = true;
            QExpr *q = bind(b, objn);
            if (nint(keyn, 0) != QOP_CONST || !IS_STR(nval(keyn, 3)))
                bind_error(b, q, "%s(tags, PRED) needs .field after it", fname->data);
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
        bind_error(b, e, "'.' applies to first(tags, PRED) and last(tags, PRED) here");
    e->a = bind(b, objn);
    e->b = bind(b, keyn);
    e->type = QT_ANY;
    return e;
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
        return make_const(b, node, nval(node, 3));
    case QOP_FIELD:
    case QOP_MODVAR:
        return bind_name(b, node);
    case QOP_CAPTURE:
        return bind_capture(b, node);
    case QOP_NEG:
        e = new_expr(b, op, node);
        e->a = bind_num(b, nval(node, 3), "unary '-'");
        e->type = e->a->type;
        e->tag = e->a->tag;
        e->big = e->a->big;
        return e;
    case QOP_NOT:
        e = new_expr(b, op, node);
        e->a = bind_bool(b, nval(node, 3), "'!'");
        e->type = QT_BOOL;
        e->tag = e->a->tag;
        return e;
    case QOP_ADD: case QOP_SUB: case QOP_MUL: case QOP_DIV: case QOP_MOD:
        return bind_arith(b, node, op);
    case QOP_EQ: case QOP_NE: case QOP_LT: case QOP_LE: case QOP_GT: case QOP_GE:
        return bind_compare(b, node, op);
    case QOP_AND:
    case QOP_OR:
        e = new_expr(b, op, node);
        e->a = bind_bool(b, nval(node, 3), op == QOP_AND ? "each side of '&&'" : "each side of '||'");
        e->b = bind_bool(b, nval(node, 4), op == QOP_AND ? "each side of '&&'" : "each side of '||'");
        e->type = QT_BOOL;
        e->tag = e->a->tag || e->b->tag;
        return e;
    case QOP_MATCH:
    case QOP_NOMATCH:
        e = new_expr(b, op, node);
        e->a = bind(b, nval(node, 3));
        e->b = bind(b, nval(node, 4));
        e->type = QT_BOOL;
        e->tag = e->a->tag;
        prepare_regex(b, e);
        return e;
    case QOP_IN:
        return bind_in(b, node);
    case QOP_INRANGE:
        e = new_expr(b, QOP_AND, node);
        e->a = new_expr(b, QOP_GE, node);
        e->b = new_expr(b, QOP_LT, node);
        e->a->a = e->b->a = bind(b, nval(node, 3));
        e->a->b = bind(b, nval(node, 4));
        e->b->b = bind(b, nval(node, 5));
        e->type = e->a->type = e->b->type = QT_BOOL;
        for (QExpr *c = e->a; c; c = c == e->a ? e->b : NULL)
            if (!comparable(c->op, c->a->type, c->b->type))
                bind_error(b, c->b, "type mismatch: %s in a range of %s",
                           describe(b, c->a, d, sizeof d), type_word(c->b->type));
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
static QExpr *bind(Binder *b, Value node)
{
    QExpr *e = bind_node(b, node);
    return e->op == QX_FIELD ? e : quantify(b, e);
}

/* ---- stages ------------------------------------------------------------- */

static Value stage_of(VQuery *q, int i)
{
    return AS_ARRAY(q->stages->items[i])->items[0];
}

static int last_verb(VQuery *q)
{
    return q->stages->len ? (int)nint(stage_of(q, (int)q->stages->len - 1), 0) : -1;
}

static void binder_for(Binder *b, VQuery *q, int i)
{
    VArray *rec = AS_ARRAY(q->stages->items[i]);
    b->caps = AS_ARRAY(rec->items[1]);
    b->mod = IS_NIL(rec->items[2]) ? NULL : AS_MODULE(rec->items[2]);
}

/* take N: N a constant int >= 0. */
static uint64_t take_count(Binder *b, Value stage)
{
    QExpr *n = bind(b, nval(stage, 3));
    char d[96];
    if (n->op != QOP_CONST || n->type != QT_INT || n->ki < 0)
        bind_error(b, n, "take needs a count (an int >= 0), not %s", describe(b, n, d, sizeof d));
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
        keep(b->vm, b->p, v_obj(s->names[i]));
        b->aggs = i >= nkeys && s->verb == QV_group;
        s->e[i] = bind(b, nval(stage, from + 2 * (size_t)i + 1));
        b->aggs = 0;
    }
}

/* The columns of the rows a step makes (for the next step's names). */
static void step_cols(Binder *b, QStep *s)
{
    if (s->verb == QV_select || s->verb == QV_group)
        set_cols(b, s->names, s->n);
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
        s->n = 1;
        s->e = qp_alloc(b->vm, p, sizeof *s->e);
        if (s->verb == QV_take) {
            QExpr *n = make_const(b, stage, v_int((int64_t)take_count(b, stage)));
            s->e[0] = n;
        } else {
            s->e[0] = bind_bool(b, nval(stage, 3), "where's condition");
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
            s->e[i] = bind(b, nval(stage, 3 + 2 * (size_t)i));
            s->desc[i] = AS_BOOL(nval(stage, 4 + 2 * (size_t)i));
        }
        break;
    }
    case QV_write: {
        size_t nargs = nlen(stage) - 3;
        QExpr *t = nargs ? bind(b, nval(stage, 3)) : NULL;
        QExpr *o = nargs > 1 ? bind(b, nval(stage, 4)) : NULL;
        QExpr at = {.line = s->line, .col = s->col};
        if (!t || nargs > 2 || t->op != QOP_CONST || (o && (o->op != QOP_CONST || !IS_MAP(o->k))))
            bind_error(b, &at, "write takes a path or a store, and an options map: write(path, {schema: s})");
        s->write_target = t->k;
        s->write_opts = o ? AS_MAP(o->k) : NULL;
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

/* ---- the scan's share of a typed pipeline ---- */

static void and_into(Binder *b, QExpr **where, QExpr *e)
{
    if (!*where || !e) {
        *where = *where ? *where : e;
        return;
    }
    QExpr *a = new_expr_at(b, QOP_AND, e->line, e->col);
    a->a = *where;
    a->b = e;
    a->type = QT_BOOL;
    a->tag = (*where)->tag || e->tag;
    *where = a;
}

/* Whether e asks a comb function (a matcher's). */
static bool calls_vm(const QExpr *e)
{
    if (!e)
        return false;
    if (e->op == QX_CALL || (e->op == QX_SET && e->set && e->set->match == call_matcher))
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
    Value st = stage_of(q, i);
    sc->nsort = (int)(nlen(st) - 3) / 2;
    sc->sort = qp_alloc(b->vm, p, (size_t)sc->nsort * sizeof *sc->sort);
    for (int k = 0; k < sc->nsort; k++) {
        sc->sort[k].e = bind(b, keys ? keys[k] : nval(st, 3 + 2 * (size_t)k));
        sc->sort[k].desc = AS_BOOL(nval(st, 4 + 2 * (size_t)k));
        sc->keyw += qx_keywidth(sc->sort[k].e);
        if (sc->sort[k].e->type == QT_NIL)
            bind_error(b, sc->sort[k].e, "sort by a value of the rows");
    }
    if (i + 1 < (int)q->stages->len && nint(stage_of(q, i + 1), 0) == QV_take) {
        binder_for(b, q, i + 1);
        sc->limit = take_count(b, stage_of(q, i + 1));
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
    Value sel = stage_of(q, i), st = i + 1 < (int)q->stages->len ? stage_of(q, i + 1) : v_nil();
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
        int fi = (f = node_name(keys[k])) ? field_of(b, f) : -1;
        if (fi < 0 || (b->vs->s->fields[fi].role == ST_TAG && !p->scan.tags))
            return;
    }
    b->skip_from = i + 1;
    b->skip_to = scan_sort(b, q, p, i + 1, keys);
}

/* Binds the stages the scan can run; returns the first stage it cannot. */
static int bind_scan(Binder *b, VQuery *q, QPlan *p)
{
    QScan *sc = &p->scan;
    int n = (int)q->stages->len, i = 0;
    sc->consumer = QC_COLLECT;
    sc->limit = UINT64_MAX;
    for (; i < n; i++) {
        Value st = stage_of(q, i);
        int verb = (int)nint(st, 0);
        binder_for(b, q, i);
        b->scope = sc->tags ? SC_TAG : SC_TAGSET;
        switch (verb) {
        case QV_where:
            b->quantify = !sc->tags;
            add_where(b, sc->tags ? &sc->tag_where : &sc->where, &b->residual[sc->tags],
                      bind_bool(b, nval(st, 3), "where's condition"));
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
                keep(b->vm, p, v_obj(name));
                b->aggs = k >= nkeys;
                QExpr *e = bind(b, nval(st, 5 + 2 * (size_t)k));
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
            return i + 1;
        case QV_write: {
            /* Rows written as they are: straight from the blocks. */
            size_t nargs = nlen(st) - 3;
            QExpr *t = nargs ? bind(b, nval(st, 3)) : NULL;
            QExpr *o = nargs > 1 ? bind(b, nval(st, 4)) : NULL;
            QExpr at = {.line = (int)nint(st, 1), .col = (int)nint(st, 2)};
            if (!t || nargs > 2 || t->op != QOP_CONST || (o && (o->op != QOP_CONST || !IS_MAP(o->k))))
                bind_error(b, &at, "write takes a path or a store, and an options map: write(path, {block_size: 65536})");
            sc->consumer = QC_WRITE;
            sc->write_target = t->k;
            sc->write_opts = o ? AS_MAP(o->k) : NULL;
            return i + 1;
        }
        default:    /* select, explain, schema: the scan collects, the rows step does the rest */
            if (verb == QV_select)
                sort_under_select(b, q, p, i);
            return i;
        }
    }
    return i;
}

static void scan_uses(QScan *sc)
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
    scan_uses(sc);
    if (sc->consumer == QC_COUNT || sc->consumer == QC_GROUP)
        return;
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
    scan_uses(sc);
    for (uint32_t f = 0; f < s->nfields; f++)
        sc->want[f] |= sc->out_fields[f];
    for (uint32_t f = s->nrow; f < s->nfields && !sc->tags; f++)
        if (sc->out_fields[f])
            sc->want[s->nfields] = true;
}

static void bind_plan(VM *vm, VQuery *q)
{
    QPlan *p = &q->plan;
    p->keep = vm_array_new(vm, 8);
    Binder b = {.vm = vm, .p = p};
    VSource *src = vm_source_of(q->src);
    int first_step = 0;
    p->steps = qp_alloc(vm, p, (q->stages->len + 1) * sizeof *p->steps);
    if (src) {
        p->typed = true;
        p->scan.src = src;
        p->scan.vs = b.vs = b.src_vs = vschema(src->schema);
        first_step = bind_scan(&b, q, p);
        and_into(&b, &p->scan.where, b.residual[0]);
        and_into(&b, &p->scan.tag_where, b.residual[1]);
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
        p->array = q->src;
        VArray *a = AS_ARRAY(q->src);
        if (a->len && IS_MAP(a->items[0])) {
            VMap *m = AS_MAP(a->items[0]);
            VStr **cols = qp_alloc(vm, p, m->live * sizeof *cols);
            int n = 0;
            size_t pos = 0;
            Value k, v;
            while (vm_map_next(m, &pos, &k, &v))
                if (IS_STR(k))
                    cols[n++] = AS_STR(k);
            keep(vm, p, a->items[0]);
            set_cols(&b, cols, n);
        }
    }
    b.vs = NULL;
    for (int i = first_step; i < (int)q->stages->len; i++) {
        if (i >= b.skip_from && i < b.skip_to)
            continue;
        binder_for(&b, q, i);
        bind_step(&b, p, stage_of(q, i));
    }
    if (p->typed)
        narrow_select(p);
    p->scan.nslots = p->scan.nslots > b.nslots ? p->scan.nslots : b.nslots;
}

/* ---- which result columns hold times ------------------------------------ */

static bool in_names(VArray *names, VStr *n)
{
    for (size_t i = 0; i < names->len; i++)
        if (str_equal(AS_STR(names->items[i]), n))
            return true;
    return false;
}

/* Whether e's value is a time: a time field, day() of one, min or max of
 * one, given the columns known to hold times. */
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
    return false;
}

VArray *vm_query_time_columns(VM *vm, Value qv)
{
    VQuery *q = handle_data(AS_HANDLE(qv));
    QPlan *p = &q->plan;
    VArray *times = vm_array_new(vm, 4);
    if (!p->typed)
        return times;
    vm_push_root(vm, v_obj(times));
    const QScan *sc = &p->scan;
    if (sc->consumer == QC_GROUP) {
        for (int i = 0; i < sc->nkeys; i++)
            if (is_time(p, sc->keys[i], times))
                vm_array_push(vm, times, v_obj(sc->key_names[i]));
        for (int i = 0; i < sc->naggs; i++)
            if (is_time(p, sc->aggs[i].e, times))
                vm_array_push(vm, times, v_obj(sc->aggs[i].name));
    } else if (sc->consumer == QC_COLLECT) {
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

/* A query's rows as a table shows them: the query run, its time columns
 * as ISO-8601 text. Anything else is returned as it is. */
Value vm_query_display(VM *vm, Value v)
{
    if (!IS_HANDLE(v) || AS_HANDLE(v)->type != &vm_query_type)
        return v;
    VArray *times = vm_query_time_columns(vm, v);
    vm_push_root(vm, v_obj(times));
    Value r = vm_query_run(vm, v);
    vm_push_root(vm, r);
    for (size_t i = 0; times->len && IS_ARRAY(r) && i < AS_ARRAY(r)->len; i++)
        vm_query_show_times(vm, times, AS_ARRAY(r)->items[i]);
    vm_pop_root(vm, 2);
    return r;
}

void vm_query_show_times(VM *vm, VArray *times, Value row)
{
    for (size_t c = 0; IS_MAP(row) && c < times->len; c++) {
        Value *t = vm_map_ref(AS_MAP(row), times->items[c]);
        if (t && IS_INT(*t)) {
            char buf[40];
            st_time_format(t->as.i, buf, sizeof buf);
            *t = v_obj(vm_str_cstr(vm, buf));
        }
    }
}

/* ---- _pipe -------------------------------------------------------------- */

Value vm_query_run(VM *vm, Value qv)
{
    VQuery *q = handle_data(AS_HANDLE(qv));
    QPlan *p = &q->plan;
    int verb = last_verb(q);
    if (verb == QV_explain)
        return p->typed ? scan_explain(vm, p) : rows_run(vm, p, 0, p->array);
    if (verb == QV_schema) {
        if (!p->typed)
            vm_error(vm, "schema needs a tagset file or a store as the source");
        return v_obj(p->scan.src->schema);
    }
    if (!p->typed)
        return rows_run(vm, p, 0, p->array);
    int last = p->nsteps - 1;
    if (verb == QV_write && last >= 0 && p->steps[last].verb == QV_write && streams(p, last)) {
        /* The rows to the target as they come, the scan closed after (or
         * as a raise leaves the native that runs this). */
        Value *level = vm->nframes ? vm->frames[vm->nframes - 1].top : vm->stack;
        Value cur = cursor_open(vm, qv, last);
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
        cuts |= p->steps[i].verb == QV_where || p->steps[i].verb == QV_take;
    if (to > 0 && (cuts || to < p->nsteps) && streams(p, to)) {
        Value *level = vm->nframes ? vm->frames[vm->nframes - 1].top : vm->stack;
        Value cur = cursor_open(vm, qv, to);
        vm_iter_push(vm, level, cur);
        VArray *a = to < p->nsteps ? NULL : vm_array_new(vm, 16);
        Value av = a ? v_obj(a) : v_nil(), row, same;
        vm_push_root(vm, av);
        int64_t n = 0, pos = 0;
        while (cursor_next(vm, handle_data(AS_HANDLE(cur)), &pos, &row, &same)) {
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

/* ---- bound queries kept --------------------------------------------------- */

/* A loop or the prompt runs the same query again and again. A count or stat
 * (ending the pipeline, so the query value is never seen) reuses the last
 * binding made at that place in the program when it reads the same store
 * snapshot or file handle, and the values it captured and the module
 * variables it read are equal plain values (a function, array or matcher
 * may change without changing identity: those bind anew). */
#define KEPT_QUERIES 16

static bool keepable(VArray *plan, int ncaps, const Value *caps, Value src)
{
    if (!vm_source_of(src) || !plan->len)
        return false;
    Value last = plan->items[plan->len - 1];
    int verb = IS_ARRAY(last) ? (int)nint(last, 0) : -1;
    if (verb != QV_count && verb != QV_stat)
        return false;
    for (int i = 0; i < ncaps; i++)
        if (!plain(caps[i]))
            return false;
    return true;
}

static Value *kept_slot(VM *vm, VArray *plan)
{
    VArray *k = vm->kept_queries;
    while (k->len < KEPT_QUERIES)
        vm_array_push(vm, k, v_nil());
    return &k->items[((uintptr_t)plan >> 4) % KEPT_QUERIES];
}

static bool same_source(Value a, Value b)
{
    const VSource *x = vm_source_of(a), *y = vm_source_of(b);
    return x == y || (x->st && x->st == y->st);
}

void vm_query_forget(VM *vm, const char *dir)
{
    VArray *k = vm->kept_queries;
    for (size_t i = 0; i < k->len; i++) {
        if (!IS_HANDLE(k->items[i]))
            continue;
        const VSource *src = vm_source_of(((VQuery *)handle_data(AS_HANDLE(k->items[i])))->src);
        if (src->st && !strcmp(src->path, dir))
            k->items[i] = v_nil();
    }
}

/* The query kept for plan, if it was bound from the same things. */
static Value kept_query(VM *vm, VArray *plan, int ncaps, const Value *caps, Value mod, Value src)
{
    Value h = *kept_slot(vm, plan);
    if (!IS_HANDLE(h))
        return v_nil();
    VQuery *q = handle_data(AS_HANDLE(h));
    if (q->stages->len != plan->len || !same_source(q->src, src))
        return v_nil();
    for (size_t i = 0; i < plan->len; i++) {
        VArray *rec = AS_ARRAY(q->stages->items[i]);
        if (rec->items[0].as.o != plan->items[i].as.o || rec->items[2].type != mod.type ||
            (IS_OBJ(mod) && rec->items[2].as.o != mod.as.o))
            return v_nil();
    }
    VArray *was = AS_ARRAY(AS_ARRAY(q->stages->items[0])->items[1]);
    for (int i = 0; i < ncaps; i++)
        if (!same_plain(was->items[i], caps[i]))
            return v_nil();
    VModule *m = IS_NIL(mod) ? NULL : (VModule *)mod.as.o;
    for (int i = 0; i < q->plan.nmodvars; i++)
        if (!m || q->plan.modvar[i] >= m->nvars ||
            !same_plain(q->plan.modval[i], m->vars[q->plan.modvar[i]]))
            return v_nil();
    return h;
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
    bool keep_it = keepable(plan, argc - 2, argv + 2, src);
    if (keep_it) {
        Value k = kept_query(vm, plan, argc - 2, argv + 2, mod, src);
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
    q->stages = vm_array_new(vm, 4);
    if (IS_HANDLE(src) && AS_HANDLE(src)->type == &vm_query_type) {
        VQuery *parent = handle_data(AS_HANDLE(src));
        q->src = parent->src;
        for (size_t i = 0; i < parent->stages->len; i++)
            vm_array_push(vm, q->stages, parent->stages->items[i]);
        if (parent->stages->len && vm_verbs[last_verb(parent)].last)
            vm_error(vm, "this query ends with '%s': nothing can follow it", vm_verbs[last_verb(parent)].name);
    } else if (vm_source_of(src) || IS_ARRAY(src)) {
        q->src = src;
    } else {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "a pipeline starts from a store, a tagset file, an array of maps or a query, not %s",
                 v_type_name(src));
        Value st = plan->len ? plan->items[0] : v_nil();
        vm_error_at(vm, IS_ARRAY(st) ? (uint32_t)nint(st, 1) : 0, IS_ARRAY(st) ? (uint32_t)nint(st, 2) : 0, msg);
    }
    VArray *caps = vm_array_new(vm, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++)
        vm_array_push(vm, caps, argv[i]);
    for (size_t i = 0; i < plan->len; i++) {
        VArray *rec = vm_array_new(vm, 3);
        vm_array_push(vm, rec, plan->items[i]);
        vm_array_push(vm, rec, v_obj(caps));
        vm_array_push(vm, rec, mod);
        vm_array_push(vm, q->stages, v_obj(rec));
    }
    bind_plan(vm, q);
    if (keep_it && q->plan.nmodvars >= 0)
        *kept_slot(vm, plan) = hv;
    Value r = hv;
    int verb = last_verb(q);
    if (verb >= 0 && vm_verbs[verb].last)
        r = vm_query_run(vm, hv);
    vm_pop_root(vm, 1);
    return r;
}
