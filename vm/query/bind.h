/* bind: the binder's state and the helpers its files share: bind.c binds
 * expressions (names to fields, types checked, constants prepared),
 * sets.c the right side of `in`, plan.c a pipeline's stages. Internal to
 * vm/query/. A plan node is an array [op, line, col, operands...]
 * (vm/query/query.h). */
#ifndef COMB_QUERY_BIND_H
#define COMB_QUERY_BIND_H

#include "vm/query/qplan.h"

typedef enum { SC_TAGSET, SC_TAG, SC_MAP } Scope;

typedef struct Binder {
    VM *vm;
    QPlan *p;
    VArray *caps;
    VMap *modvals;          /* the module variables the stage read, as _pipe saw them (slot -> value) */
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

static inline int64_t nint(Value node, size_t i)
{
    return AS_ARRAY(node)->items[i].as.i;
}

static inline Value nval(Value node, size_t i)
{
    return AS_ARRAY(node)->items[i];
}

static inline size_t nlen(Value node)
{
    return AS_ARRAY(node)->len;
}

#define bind_error(b, at, ...) qx_error((b)->vm, at, __VA_ARGS__)

/* A plain value: equal ones bind alike (strings are immutable). */
static inline bool qb_plain(Value v)
{
    return IS_NIL(v) || IS_BOOL(v) || IS_INT(v) || IS_FLOAT(v) || IS_STR(v);
}

static inline bool qb_same_plain(Value a, Value b)
{
    return a.type == b.type && v_equal(a, b);  /* 1 and 1.0 bind apart */
}

/* ---- vm/query/bind.c: expressions -------------------------------------- */

/* The bound form of a plan node. */
QExpr *qb_expr(Binder *b, Value node);
/* The same, which must be a condition (true or false): what names it. */
QExpr *qb_bool(Binder *b, Value node, const char *what);
/* A new node of op at node's position (or at line:col), in the plan. */
QExpr *qb_new(Binder *b, int op, Value node);
QExpr *qb_new_at(Binder *b, int op, int line, int col);
/* A constant v, kept with the plan. */
QExpr *qb_const(Binder *b, Value node, Value v);
/* How an operand reads in a message: "'onum' (u64)", "\"abc\" (a string)". */
const char *qb_describe(Binder *b, const QExpr *e, char *buf, size_t n);
/* Is name a field of the rows in this scope? Its index, -2: yes, in the
 * rows' maps; -1: no. */
int qb_field_of(Binder *b, VStr *name);
/* A bit per enum symbol (256), in the plan. */
uint8_t *qb_mask(Binder *b);

static inline void qb_mask_set(uint8_t *m, uint32_t k)
{
    m[k >> 3] |= (uint8_t)(1u << (k & 7));
}

/* ---- vm/query/sets.c: `a in S` ----------------------------------------- */

QExpr *qb_in(Binder *b, Value node);

#endif
