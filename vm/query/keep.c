/* keep: bound queries kept for their next run, so that a loop or the
 * prompt running the same count or stat again skips binding it; the VM's
 * reading session (vm/query/reading.c) lets them go. */
#include "config.h"
#include "vm/query/bind.h"

#include <string.h>

#include "vm/query/reading.h"

/* A loop or the prompt runs the same query again and again. A count or stat
 * (ending the pipeline, so the query value is never seen) reuses the last
 * binding made at that place in the program when it reads the same store
 * snapshot or file handle, and the values it captured and the module
 * variables it read are equal plain values (a function, array or matcher
 * may change without changing identity: those bind anew). */
#define KEPT_QUERIES 16

bool qkeep_able(VArray *plan, int ncaps, const Value *caps, Value src)
{
    if (!vm_source_of(src) || !plan->len)
        return false;
    Value last = plan->items[plan->len - 1];
    int verb = IS_ARRAY(last) ? (int)nint(last, 0) : -1;
    if (verb != QV_count && verb != QV_stat)
        return false;
    for (int i = 0; i < ncaps; i++)
        if (!qb_plain(caps[i]))
            return false;
    return true;
}

static Value *kept_slot(VM *vm, VArray *plan)
{
    VArray *k = vm_reading_kept(vm);
    while (k->len < KEPT_QUERIES)
        vm_array_push(vm, k, v_nil());
    return &k->items[((uintptr_t)plan >> 4) % KEPT_QUERIES];
}

static bool same_source(Value a, Value b)
{
    const VSource *x = vm_source_of(a), *y = vm_source_of(b);
    return x == y || (x->st && x->st == y->st);
}

void qkeep_forget(VM *vm, const char *dir)
{
    VArray *k = vm_reading_kept(vm);
    for (size_t i = 0; i < k->len; i++) {
        if (!IS_HANDLE(k->items[i]))
            continue;
        const VSource *src = vm_source_of(((VQuery *)handle_data(AS_HANDLE(k->items[i])))->src);
        if (src->st && !strcmp(src->path, dir))
            k->items[i] = v_nil();
    }
}

/* The query kept for plan, if it was bound from the same things. */
Value qkeep_find(VM *vm, VArray *plan, int ncaps, const Value *caps, Value mod, Value src)
{
    Value h = *kept_slot(vm, plan);
    if (!IS_HANDLE(h))
        return v_nil();
    VQuery *q = handle_data(AS_HANDLE(h));
    if (q->nstages != plan->len || !same_source(q->src, src))
        return v_nil();
    for (size_t i = 0; i < plan->len; i++) {
        VArray *rec = AS_ARRAY(q->stages->items[i]);
        if (rec->items[0].as.o != plan->items[i].as.o || rec->items[2].type != mod.type ||
            (IS_OBJ(mod) && rec->items[2].as.o != mod.as.o))
            return v_nil();
    }
    VArray *was = AS_ARRAY(AS_ARRAY(q->stages->items[0])->items[1]);
    for (int i = 0; i < ncaps; i++)
        if (!qb_same_plain(was->items[i], caps[i]))
            return v_nil();
    VModule *m = IS_NIL(mod) ? NULL : (VModule *)mod.as.o;
    for (int i = 0; i < q->plan.nmodvars; i++)
        if (!m || q->plan.modvar[i] >= m->nvars ||
            !qb_same_plain(q->plan.modval[i], m->vars[q->plan.modvar[i]]))
            return v_nil();
    return h;
}

void qkeep_put(VM *vm, VArray *plan, Value q)
{
    *kept_slot(vm, plan) = q;
}
