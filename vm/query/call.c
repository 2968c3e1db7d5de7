/* call: comb functions a query calls per row: a matcher's (`f in M`) or
 * one called with fields (`where ok(onum)`, `select s: lower(dnum)`), from
 * the kernels (conditions only, arguments as column vectors) and the row
 * steps (as values). On the VM's thread
 * only (QScan.vm_calls); their errors go up through the scan like any
 * raise. */
#include "config.h"
#include "vm/query/qplan.h"

/* A comb function the scan calls, and where the query calls it. */
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

void *qx_call_new(VM *vm, QPlan *p, Value fn, const QExpr *at, const char *what)
{
    CombCall *cc = qp_alloc(vm, p, sizeof *cc);
    *cc = (CombCall){vm, fn, at, what};
    return cc;
}

/* What the kernels ask per string (QSet.match). */
bool qx_call_str(void *data, const char *s, size_t n)
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
    return call_bool(cc, n, argv);
}

Value qx_call_values(const QExpr *e, int argc, Value *argv)
{
    if (e->type == QT_BOOL)
        return v_bool(call_bool(e->call, argc, argv));
    const CombCall *cc = e->call;
    return vm_call(cc->vm, cc->fn, argc, argv);
}
