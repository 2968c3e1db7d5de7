/* lib_math: numbers: abs, min, max, floor, ceil, round, sqrt, pow, exp, log, sin,
 * cos, tan, atan, and random numbers (random, srand).
 *
 * Ints stay ints where the answer is one (abs, min, max, floor, ceil,
 * round), and
 * overflow is an error as it is for the operators; the rest work in double.
 * The random generator is xoshiro256** with one state per process (like C's
 * rand), seeded from the clock until srand fixes it. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "vm/lib.h"
#include "vm/mathlib.h"

Value nat_abs(VM *vm, int argc, Value *argv)
{
    (void)argc;
    if (IS_FLOAT(argv[0]))
        return v_float(fabs(AS_FLOAT(argv[0])));
    int64_t n = vm_arg_int(vm, argv, 0);
    if (n == INT64_MIN)
        vm_error(vm, "integer overflow");
    return v_int(n < 0 ? -n : n);
}

/* min and max: the least (or greatest) of the arguments, or of the items
 * of a single array argument; numbers by value (NaN after every number, as
 * sort has it, so the answer does not depend on the order), strings by
 * bytes. */
/* Whether v goes before best (after it, for greatest). */
static bool beats(VM *vm, Value v, Value best, bool greatest)
{
    bool lt;
    Value a = greatest ? best : v, b = greatest ? v : best;
    if (IS_NUM(a) && IS_NUM(b))
        lt = v_order_num(a, b) < 0;
    else if ((!IS_NUM(v) && !IS_STR(v)) || vm_less(a, b, false, &lt) != AR_OK)
        vm_error(vm, "cannot compare %s and %s", v_type_name(best), v_type_name(v));
    return lt;
}

static Value extreme(VM *vm, int argc, Value *argv, bool greatest)
{
    Value *v = argv;
    size_t n = (size_t)argc;
    if (argc == 1 && IS_ARRAY(argv[0])) {
        v = AS_ARRAY(argv[0])->items;
        n = AS_ARRAY(argv[0])->len;
        if (!n)
            vm_error(vm, "the array is empty");
    }
    Value best = v[0];
    for (size_t i = 0; i < n; i++)
        if (beats(vm, v[i], best, greatest))
            best = v[i];
    return best;
}

/* max_by and min_by: the item of an array whose key (its field of that
 * name, or a function of it) is the greatest (least), compared as max and
 * min do; the first of equals; items whose key is nil left out; nil when
 * none has one (as the query functions over tags). */
static Value extreme_by(VM *vm, Value *argv, bool greatest)
{
    VArray *a = vm_arg_array(vm, argv, 0);
    if (!IS_STR(argv[1]) && !IS_FUNC(argv[1]) && argv[1].type != VT_NATIVE)
        vm_arg_error(vm, 1, "a field's name or a function", argv[1]);
    Value best = v_nil(), bestkey = v_nil();
    for (size_t i = 0; i < a->len; i++) {
        Value key;
        if (IS_STR(argv[1])) {
            if (!IS_MAP(a->items[i]))
                vm_error(vm, "item %zu is %s, not a map with the field '%s'", i, v_type_name(a->items[i]),
                         AS_STR(argv[1])->data);
            Value *f = vm_map_ref(AS_MAP(a->items[i]), argv[1]);
            key = f ? *f : v_nil();
        } else {
            vm_push_root(vm, best);
            vm_push_root(vm, bestkey);
            key = vm_call(vm, argv[1], 1, &a->items[i]);
            vm_pop_root(vm, 2);
        }
        if (!IS_NIL(key) && (IS_NIL(bestkey) || beats(vm, key, bestkey, greatest))) {
            best = a->items[i];
            bestkey = key;
        }
    }
    return best;
}

Value nat_max_by(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return extreme_by(vm, argv, true);
}

Value nat_min_by(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return extreme_by(vm, argv, false);
}

Value nat_min(VM *vm, int argc, Value *argv)
{
    return extreme(vm, argc, argv, false);
}

Value nat_max(VM *vm, int argc, Value *argv)
{
    return extreme(vm, argc, argv, true);
}

/* A number rounded by round_fn, as an int: raises when it does not fit. */
static Value to_int(VM *vm, Value *argv, double (*round_fn)(double))
{
    if (IS_INT(argv[0]))
        return argv[0];
    double f = round_fn(vm_arg_num(vm, argv, 0));
    if (!(f >= -0x1p63 && f < 0x1p63))
        vm_error(vm, "%g does not fit in an int", f);
    return v_int((int64_t)f);
}

Value nat_floor(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return to_int(vm, argv, vm_math_floor);
}

Value nat_ceil(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return to_int(vm, argv, vm_math_ceil);
}

/* round(x): an int; round(x, d): to d decimals, the float nearest the
 * decimal (so round(2.675, 2) is 2.67: the double 2.675 is below it), or
 * for d < 0 to a multiple of 10^-d; an int x stays an int. */
Value nat_round(VM *vm, int argc, Value *argv)
{
    if (argc < 2 || IS_NIL(argv[1]))
        return to_int(vm, argv, vm_math_round);
    int64_t d = vm_arg_int(vm, argv, 1);
    if (IS_INT(argv[0])) {
        int64_t x = argv[0].as.i, p = 1;
        for (int64_t i = d; i < 0 && p <= INT64_MAX / 10; i++)
            p *= 10;
        if (d >= 0 || p == 1)
            return argv[0];
        int64_t r = x % p, q = x - r;   /* toward zero, then half away from it */
        int64_t up = r >= 0 ? p - r <= r : -r >= p + r;
        if (up && __builtin_add_overflow(q, x < 0 ? -p : p, &q))
            vm_error(vm, "integer overflow");
        return v_int(d < -18 ? 0 : q);
    }
    double x = vm_arg_num(vm, argv, 0);
    if (d >= 17 || !isfinite(x))
        return v_float(x);
    if (d < 0) {
        double p = vm_math_pow(10, (double)-d);
        return v_float(vm_math_round(x / p) * p);
    }
    double p = vm_math_pow(10, (double)d), s = x * p, t = vm_math_floor(s) + 0.5;
    if (vm_math_fma(x, p, -t) == 0)     /* exactly half way: away from zero, as round(x) */
        return v_float((x < 0 ? t - 0.5 : t + 0.5) / p);
    char buf[400];  /* else the nearest: printf rounds the exact binary value */
    snprintf(buf, sizeof buf, "%.*f", (int)d, x);
    return v_float(strtod(buf, NULL));
}

/* The natives that are one C function of one number, giving a float. */
#define FLOAT_FN(fn)                                        \
    Value nat_##fn(VM *vm, int argc, Value *argv)           \
    {                                                       \
        (void)argc;                                         \
        return v_float(vm_math_##fn(vm_arg_num(vm, argv, 0)));        \
    }
FLOAT_FN(sqrt)
FLOAT_FN(exp)
FLOAT_FN(sin)
FLOAT_FN(cos)
FLOAT_FN(tan)

Value nat_log(VM *vm, int argc, Value *argv)
{
    double x = vm_arg_num(vm, argv, 0);
    if (argc < 2)
        return v_float(vm_math_log(x));
    double base = vm_arg_num(vm, argv, 1);
    if (base == 2)
        return v_float(vm_math_log2(x));
    if (base == 10)
        return v_float(vm_math_log10(x));
    return v_float(vm_math_log(x) / vm_math_log(base));
}

Value nat_atan(VM *vm, int argc, Value *argv)
{
    double y = vm_arg_num(vm, argv, 0);
    return v_float(argc > 1 ? vm_math_atan2(y, vm_arg_num(vm, argv, 1)) : vm_math_atan(y));
}

Value nat_pow(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return v_float(vm_math_pow(vm_arg_num(vm, argv, 0), vm_arg_num(vm, argv, 1)));
}

/* ---- random numbers --------------------------------------------------- */

static uint64_t rng[4];
static bool rng_seeded;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void seed(uint64_t s)
{
    for (int i = 0; i < 4; i++)
        rng[i] = splitmix(&s);
    rng_seeded = true;
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t next_random(void)
{
    if (!rng_seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed((uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 32);
    }
    uint64_t r = rotl(rng[1] * 5, 7) * 9, t = rng[1] << 17;
    rng[2] ^= rng[0];
    rng[3] ^= rng[1];
    rng[1] ^= rng[2];
    rng[0] ^= rng[3];
    rng[2] ^= t;
    rng[3] = rotl(rng[3], 45);
    return r;
}

/* A uniform draw from [0, range), range > 0, without modulo bias. */
static uint64_t below(uint64_t range)
{
    uint64_t limit = -range % range;    /* 2^64 mod range: the draws to refuse */
    uint64_t r;
    do
        r = next_random();
    while (r < limit);
    return r % range;
}

Value nat_random(VM *vm, int argc, Value *argv)
{
    if (argc == 0)
        return v_float((double)(next_random() >> 11) * 0x1p-53);
    int64_t lo = argc > 1 ? vm_arg_int(vm, argv, 0) : 0;
    int64_t hi = vm_arg_int(vm, argv, argc - 1);
    if (hi <= lo)
        vm_error(vm, "the range [%lld, %lld) is empty", (long long)lo, (long long)hi);
    return v_int((int64_t)((uint64_t)lo + below((uint64_t)hi - (uint64_t)lo)));
}

Value nat_srand(VM *vm, int argc, Value *argv)
{
    (void)argc;
    seed((uint64_t)vm_arg_int(vm, argv, 0));
    return v_nil();
}
