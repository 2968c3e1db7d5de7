/* value: what the operators do to values (equality, ordering, arithmetic:
 * ops.h's scalar operations chosen by the operands' types); and the names
 * of types. */
#include "config.h"

#include <math.h>

#include "vm/vm.h"

/* a against b for two numbers: -1, 0, 1, or 2 when unordered (NaN). */
static int cmp_num(Value a, Value b)
{
    return ops_cmp_num(a.type == VT_FLOAT, a.as.i, a.as.f, b.type == VT_FLOAT, b.as.i, b.as.f);
}

int v_order_num(Value a, Value b)
{
    int c = cmp_num(a, b);
    if (c != 2)
        return c;
    bool na = IS_FLOAT(a) && isnan(a.as.f), nb = IS_FLOAT(b) && isnan(b.as.f);
    return (int)na - (int)nb;
}

bool v_sum_value(const VSum *s, Value *out)
{
    if (s->floats) {
        *out = v_float(s->f + (double)s->i);
        return true;
    }
    if (s->i < INT64_MIN || s->i > INT64_MAX)
        return false;
    *out = v_int((int64_t)s->i);
    return true;
}

double v_sum_mean(const VSum *s, uint64_t n)
{
    return (s->f + (double)s->i) / (double)n;
}

bool v_equal(Value a, Value b)
{
    if (IS_NUM(a) && IS_NUM(b))
        return cmp_num(a, b) == 0;
    if (a.type != b.type)
        return false;
    switch (a.type) {
    case VT_NIL:
        return true;
    case VT_BOOL:
        return a.as.b == b.as.b;
    case VT_STR:
        return str_equal(AS_STR(a), AS_STR(b));
    default:
        return a.as.o == b.as.o;
    }
}

ArithStatus vm_less(Value a, Value b, bool or_equal, bool *out)
{
    int c;
    if (IS_NUM(a) && IS_NUM(b))
        c = cmp_num(a, b);
    else if (IS_STR(a) && IS_STR(b))
        c = str_compare(AS_STR(a), AS_STR(b));
    else
        return AR_TYPES;
    *out = c < 0 || (or_equal && c == 0);
    return AR_OK;
}

static double num_as_float(Value v)
{
    return v.type == VT_INT ? (double)v.as.i : v.as.f;
}

ArithStatus vm_arith(VM *vm, int op, Value a, Value b, Value *out)
{
    ArithStatus st;
    if (a.type == VT_INT && b.type == VT_INT) {
        int64_t r;
        if ((st = ops_int(op, a.as.i, b.as.i, &r)) == AR_OK)
            *out = v_int(r);
        return st;
    }
    if (IS_NUM(a) && IS_NUM(b)) {
        double r;
        if ((st = ops_float(op, num_as_float(a), num_as_float(b), &r)) == AR_OK)
            *out = v_float(r);
        return st;
    }
    if (op == ARITH_ADD && IS_STR(a) && IS_STR(b)) {
        *out = v_obj(vm_str_concat(vm, AS_STR(a), AS_STR(b)));
        return AR_OK;
    }
    return AR_TYPES;
}

ArithStatus vm_negate(Value a, Value *out)
{
    if (a.type == VT_INT) {
        int64_t r;
        ArithStatus st = ops_int_neg(a.as.i, &r);
        if (st == AR_OK)
            *out = v_int(r);
        return st;
    }
    if (a.type == VT_FLOAT) {
        *out = v_float(-a.as.f);
        return AR_OK;
    }
    return AR_TYPES;
}

const char *v_type_name(Value v)
{
    switch (v.type) {
    case VT_NIL:
        return "nil";
    case VT_BOOL:
        return "bool";
    case VT_INT:
        return "int";
    case VT_FLOAT:
        return "float";
    case VT_STR:
        return "string";
    case VT_ARRAY:
        return "array";
    case VT_MAP:
        return "map";
    case VT_FUNC:
    case VT_NATIVE:
        return "function";
    case VT_HANDLE:
        return AS_HANDLE(v)->type->name;
    case VT_MODULE:
        return "module";
    default:
        return "undefined";
    }
}
