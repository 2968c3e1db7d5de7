/* qnum: a number field compared with a number constant, as one test of the
 * column's stored values (QNumTest). comb compares ints and floats exactly,
 * so converting either side would be wrong somewhere (an i64 near 2^53
 * against a float, a f64 against a big int, a u64 above the ints, which
 * comb reads as its nearest float). The column's values, taken in order,
 * are comb values in order, so those that satisfy a comparison are one run
 * of them (for !=, all but one run): two binary searches with comb's own
 * comparison find its ends, once per query, and the kernel tests the bounds
 * at no more cost per row than a plain comparison. */
#include "config.h"
#include "vm/query/qplan.h"

#include <math.h>
#include <string.h>

#define TOP (UINT64_C(1) << 63)

/* A column's values as an unsigned order o in [lo, hi]: an int x is
 * x ^ TOP, a u64 itself, a double its bits with the negatives reversed
 * below the positives (NaN is outside: no run holds it). */
typedef struct Dom {
    st_type type;
    uint64_t lo, hi;
} Dom;

static bool is_float(st_type t)
{
    return t == ST_F32 || t == ST_F64;
}

/* The column's value of order o, in its own terms. */
static QNum num_of(const Dom *d, uint64_t o)
{
    QNum n;
    if (is_float(d->type)) {
        uint64_t bits = o & TOP ? o & ~TOP : ~o;
        memcpy(&n.f, &bits, 8);
    } else if (d->type == ST_U64) {
        n.u = o;
    } else {
        n.i = (int64_t)(o ^ TOP);
    }
    return n;
}

/* The value of order o as comb reads it from the column. */
static Value value_of(const Dom *d, uint64_t o)
{
    QNum n = num_of(d, o);
    if (is_float(d->type))
        return v_float(n.f);
    if (d->type == ST_U64)
        return n.u > INT64_MAX ? v_float((double)n.u) : v_int((int64_t)n.u);
    return v_int(n.i);
}

/* The value of order o against k (a number, not NaN): -1, 0, 1. */
static int against(const Dom *d, uint64_t o, Value k)
{
    Value v = value_of(d, o);
    bool lt = false;
    if (v_equal(v, k))
        return 0;
    vm_less(v, k, false, &lt);
    return lt ? -1 : 1;
}

/* first_from for an int k over an int column (a u64's above the ints read
 * as floats, greater than every int): the order of k itself, or k + 1,
 * clamped. What the search finds, without its 64 steps per bound (a where
 * step per loop iteration binds its comparisons again at every step). */
static bool first_int(const Dom *d, int64_t k, int want, uint64_t *out)
{
    if (want && k == INT64_MAX) {
        *out = TOP;     /* a u64's 2^63 is the first above; no signed value is */
        return d->type == ST_U64;
    }
    int64_t t = want ? k + 1 : k;
    if (d->type == ST_U64) {
        *out = t < 0 ? d->lo : (uint64_t)t;
        return true;
    }
    uint64_t o = (uint64_t)t ^ TOP;
    if (o > d->hi)
        return false;
    *out = o < d->lo ? d->lo : o;
    return true;
}

/* The first order whose value compares with k at least as want: false if
 * none does. */
static bool first_from(const Dom *d, Value k, int want, uint64_t *out)
{
    if (IS_INT(k) && !is_float(d->type))
        return first_int(d, k.as.i, want, out);
    uint64_t lo = d->lo, hi = d->hi;
    if (against(d, hi, k) < want)
        return false;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (against(d, mid, k) >= want)
            hi = mid;
        else
            lo = mid + 1;
    }
    *out = lo;
    return true;
}

static Dom dom_of(const st_field *f)
{
    Dom d = {f->type, 0, UINT64_MAX};
    if (is_float(f->type)) {
        d.lo = ~UINT64_C(0xfff0000000000000);   /* -inf */
        d.hi = UINT64_C(0x7ff0000000000000) | TOP;  /* +inf */
    } else if (f->type != ST_U64) {
        int64_t lo, hi;
        vm_int_range(f, &lo, &hi);
        d.lo = (uint64_t)lo ^ TOP;
        d.hi = (uint64_t)hi ^ TOP;
    }
    return d;
}

/* The test for the run [lo, hi] of orders (empty: none), or for all but
 * the run when out. */
static void set_test(QNumTest *t, const Dom *d, bool empty, uint64_t lo, uint64_t hi, bool out)
{
    if (empty) {
        t->kind = out ? QN_ALL : QN_NONE;
        lo = d->hi, hi = d->lo;     /* an empty range, for the zone maps */
    } else if (lo == d->lo && hi == d->hi && !is_float(d->type)) {
        t->kind = out ? QN_NONE : QN_ALL;   /* (a float column's NaN is in no run) */
    } else {
        t->kind = out ? QN_OUT : lo == d->lo ? QN_LE : hi == d->hi ? QN_GE : QN_IN;
    }
    t->lo = num_of(d, lo);
    t->hi = num_of(d, hi);
}

void qx_num_test(QExpr *e, const st_field *f)
{
    Dom d = dom_of(f);
    Value k = e->b->k;
    bool ne = e->op == QOP_NE;
    if (IS_FLOAT(k) && isnan(k.as.f)) {     /* only != holds */
        set_test(&e->num, &d, true, 0, 0, ne);
        return;
    }
    uint64_t ge = 0, gt = 0;    /* the first values >= k and > k */
    bool has_ge = first_from(&d, k, 0, &ge), has_gt = first_from(&d, k, 1, &gt);
    uint64_t lo = d.lo, hi = d.hi;
    bool empty;
    switch (e->op) {
    case QOP_LT:
        empty = has_ge && ge == d.lo;
        hi = has_ge ? ge - 1 : d.hi;
        break;
    case QOP_LE:
        empty = has_gt && gt == d.lo;
        hi = has_gt ? gt - 1 : d.hi;
        break;
    case QOP_GT:
        empty = !has_gt;
        lo = gt;
        break;
    case QOP_GE:
        empty = !has_ge;
        lo = ge;
        break;
    default:    /* ==, != */
        empty = !has_ge || (has_gt && gt == ge);
        lo = ge;
        hi = has_gt ? gt - 1 : d.hi;
        break;
    }
    set_test(&e->num, &d, empty, lo, hi, ne);
}
