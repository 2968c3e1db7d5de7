/* ops: the scalar operations of comb's operators, defined once for the
 * three evaluators that run them: the VM (its fast paths and the Value
 * functions of value.c), the scan's kernels over typed column vectors
 * (vm/query/kernel.c) and the row steps over comb values
 * (vm/query/rowsteps.c). Int and float arithmetic with the overflow and
 * division rules, numbers compared exactly (NaN unordered), strings
 * compared bytewise, the time functions day() and hour(), and the words of
 * every error they raise (here and in ops.c). Static inline, so that a kernel's typed
 * loop calls them per element and stays a tight loop. */
#ifndef COMB_OPS_H
#define COMB_OPS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vm/mathlib.h"

/* Binary arithmetic, in the order of vm/opcodes.h and of QOP_ADD .. QOP_MOD. */
enum { ARITH_ADD, ARITH_SUB, ARITH_MUL, ARITH_DIV, ARITH_MOD };

/* What an operation came to: AR_TYPES is for the callers that hold values
 * of any type (the operands' types do not fit the operator). */
typedef enum { AR_OK, AR_TYPES, AR_OVERFLOW, AR_DIVZERO, AR_NOTIME } ArithStatus;

extern const char *const ops_arith_sym[];     /* "+", "-", ... by ARITH_ */
/* The message of a failed status other than AR_TYPES and AR_NOTIME:
 * "integer overflow", "division by zero". */
extern const char *const ops_message[];
/* The messages that name their operands, as printf formats for each
 * evaluator's own error function: the operator's symbol (or function's
 * name), then the operands' type names. */
#define OPS_TYPES_FMT "cannot apply '%s' to %s and %s"
#define OPS_UNARY_FMT "cannot apply unary '%s' to %s"
#define OPS_NOTIME_FMT "%s() needs a time (an int), not %s"

/* x op y on ints: C's truncating / and %, every overflow an error
 * (INT64_MIN / -1 and INT64_MIN % -1 too), a zero divisor an error. */
static inline ArithStatus ops_int(int op, int64_t x, int64_t y, int64_t *r)
{
    switch (op) {
    case ARITH_ADD:
        return __builtin_add_overflow(x, y, r) ? AR_OVERFLOW : AR_OK;
    case ARITH_SUB:
        return __builtin_sub_overflow(x, y, r) ? AR_OVERFLOW : AR_OK;
    case ARITH_MUL:
        return __builtin_mul_overflow(x, y, r) ? AR_OVERFLOW : AR_OK;
    default:
        if (y == 0)
            return AR_DIVZERO;
        if (y == -1 && x == INT64_MIN)
            return AR_OVERFLOW;
        *r = op == ARITH_DIV ? x / y : x % y;
        return AR_OK;
    }
}

/* x op y on floats (an int operand converted first): IEEE, but a zero
 * divisor is an error for / and % as for ints. */
static inline ArithStatus ops_float(int op, double x, double y, double *r)
{
    switch (op) {
    case ARITH_ADD:
        *r = x + y;
        return AR_OK;
    case ARITH_SUB:
        *r = x - y;
        return AR_OK;
    case ARITH_MUL:
        *r = x * y;
        return AR_OK;
    default:
        if (y == 0)
            return AR_DIVZERO;
        *r = op == ARITH_DIV ? x / y : vm_math_fmod(x, y);
        return AR_OK;
    }
}

/* The int a float equals, if there is one (in -2^63 .. 2^63-1 and
 * integral): how a float meets ints in keys, sets and arguments. */
static inline bool ops_float_int(double d, int64_t *i)
{
    if (!(d >= -0x1p63 && d < 0x1p63) || d != (double)(int64_t)d)
        return false;
    *i = (int64_t)d;
    return true;
}

/* -x on an int: -INT64_MIN overflows. (-x on a float is IEEE's.) *r is
 * written either way, so that a kernel's loop stores without a branch. */
static inline ArithStatus ops_int_neg(int64_t x, int64_t *r)
{
    *r = (int64_t)(0 - (uint64_t)x);
    return x == INT64_MIN ? AR_OVERFLOW : AR_OK;
}

/* Three-way comparisons: -1, 0, 1, or 2 when unordered (a NaN). Ints and
 * floats compare exactly: no rounding of the int. */
static inline int ops_cmp_int(int64_t x, int64_t y)
{
    return (x > y) - (x < y);
}

static inline int ops_cmp_float(double x, double y)
{
    return x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
}

static inline int ops_cmp_int_float(int64_t i, double f)
{
    if (isnan(f))
        return 2;
    if (f >= 0x1p63)
        return -1;
    if (f < -0x1p63)
        return 1;
    int64_t fi = (int64_t)f;    /* toward zero, then down: floor(f), without libm */
    if ((double)fi > f)
        fi--;
    if (i != fi)
        return i < fi ? -1 : 1;
    return (double)fi == f ? 0 : -1;
}

static inline int ops_cmp_float_int(double f, int64_t i)
{
    int c = ops_cmp_int_float(i, f);
    return c == 2 ? 2 : -c;
}

/* Two numbers, each an int (i) or a float (f) as its flag says. */
static inline int ops_cmp_num(bool fa, int64_t ia, double da, bool fb, int64_t ib, double db)
{
    if (!fa)
        return fb ? ops_cmp_int_float(ia, db) : ops_cmp_int(ia, ib);
    return fb ? ops_cmp_float(da, db) : ops_cmp_float_int(da, ib);
}

/* Strings bytewise, the shorter first on a common prefix: -1, 0, 1. */
static inline int ops_cmp_bytes(const void *a, size_t na, const void *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return na < nb ? -1 : na > nb;
}

/* day(t): time t (seconds since 1970, UTC) at the start of its day, the
 * days counted down from t (floor, so before 1970 too); overflows only
 * for a t within a day of INT64_MIN. */
static inline ArithStatus ops_day(int64_t t, int64_t *r)
{
    int64_t d = t / 86400 - (t % 86400 < 0);
    return __builtin_mul_overflow(d, (int64_t)86400, r) ? AR_OVERFLOW : AR_OK;
}

/* hour(t): the hour of time t, 0 .. 23 (UTC). */
static inline int64_t ops_hour(int64_t t)
{
    int64_t s = t % 86400;
    return (s < 0 ? s + 86400 : s) / 3600;
}

#endif
