/* test_gtable: the group keys' hash table finds every key it was given,
 * at the index of its first insertion, across rehashes and for keys of
 * every width (words compared whole, and the long ones); and the
 * aggregates' finishing arithmetic: quantiles interpolate, ints' radix
 * select answers as the floats' select of the same values does, variance
 * of ints is exact and the same in any order and split. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/mem.h"
#include "vm/query/aggs.h"
#include "vm/query/gtable.h"

static void key_of(unsigned char *k, uint32_t w, uint32_t i)
{
    memset(k, 0, w);
    for (uint32_t b = 0; b < w; b++)     /* the index spread over the key's last bytes */
        k[w - 1 - b] = b < 4 ? (unsigned char)(i >> (8 * b)) : (unsigned char)b;
}

static void finds_every_key(void **state)
{
    (void)state;
    uint32_t widths[] = {1, 3, 8, 9, 12, 16, 17, 40};
    for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++) {
        uint32_t w = widths[wi], n = w == 1 ? 256 : 100000;
        GTable t;
        unsigned char k[64];
        gt_init(&t, w);
        for (uint32_t i = 0; i < n; i++) {
            key_of(k, w, i);
            assert_int_equal(gt_find(&t, k, gt_hash(k, w)), (long)i);
        }
        assert_int_equal(t.n, n);
        for (uint32_t i = 0; i < n; i++) {
            key_of(k, w, i);
            assert_int_equal(gt_find(&t, k, gt_hash(k, w)), (long)i);
            assert_memory_equal(gt_key(&t, i), k, w);
        }
        assert_int_equal(t.n, n);
        gt_free(&t);
    }
    assert_int_equal(mem_in_use(), 0);
}

/* Keys appended without a probe (a merge in key order) get the next
 * indices, and the next gt_find makes the slots again: it finds them all,
 * appended or not, and adds only what is new. */
static void appended_keys_are_found(void **state)
{
    (void)state;
    GTable t;
    unsigned char k[12];
    gt_init(&t, 12);
    for (uint32_t i = 0; i < 1000; i++) {
        key_of(k, 12, i);
        assert_int_equal(gt_find(&t, k, gt_hash(k, 12)), (long)i);
    }
    for (uint32_t i = 1000; i < 50000; i++) {
        key_of(k, 12, i);
        assert_int_equal(gt_append(&t, k), (long)i);
    }
    assert_null(t.slots);
    for (uint32_t i = 0; i < 50001; i++) {
        key_of(k, 12, i);
        assert_int_equal(gt_find(&t, k, gt_hash(k, 12)), (long)i);
        assert_memory_equal(gt_key(&t, i), k, 12);
    }
    assert_int_equal(t.n, 50001);
    gt_free(&t);
    assert_int_equal(mem_in_use(), 0);
}

/* gt_cmp orders keys of every width as memcmp does (the merge of the
 * workers' groups relies on it): keys that differ in one byte anywhere,
 * of few values so that many are equal. */
static void compares_as_memcmp(void **state)
{
    (void)state;
    srand(7);
    for (uint32_t w = 0; w <= 20; w++)
        for (int i = 0; i < 2000; i++) {
            unsigned char a[24], b[24];
            for (uint32_t j = 0; j < w; j++)
                a[j] = b[j] = (unsigned char)(rand() % 3 * 127);
            if (w && i % 2)
                b[rand() % w] = (unsigned char)(rand() % 3 * 127);
            int m = memcmp(a, b, w), c = gt_cmp(a, b, w);
            assert_int_equal((m > 0) - (m < 0), (c > 0) - (c < 0));
        }
}

static void out_of_memory_leaves_the_table(void **state)
{
    (void)state;
    GTable t;
    unsigned char k[8];
    gt_init(&t, 8);
    long got = 0;
    mem_fail_after(3);
    uint32_t i;
    for (i = 0; i < 10000 && got >= 0; i++) {
        key_of(k, 8, i);
        got = gt_find(&t, k, gt_hash(k, 8));
    }
    mem_fail_after(0);
    assert_true(got < 0);
    for (uint32_t j = 0; j + 1 < i; j++) {  /* the keys before the failure stay */
        key_of(k, 8, j);
        assert_int_equal(gt_find(&t, k, gt_hash(k, 8)), (long)j);
    }
    gt_free(&t);
    assert_int_equal(mem_in_use(), 0);
}

static void quantiles_interpolate(void **state)
{
    (void)state;
    double v[] = {10, 1, 4, 2};
    assert_true(qa_quantile(v, 4, 0.5) == 3);       /* between 2 and 4 */
    assert_true(qa_quantile(v, 4, 0) == 1);
    assert_true(qa_quantile(v, 4, 1) == 10);
    assert_true(qa_quantile(v, 4, 1.0 / 3) == 2);
    double one[] = {7};
    assert_true(qa_quantile(one, 1, 0.9) == 7);
}

static int cmp_num(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The selection equals sorting first, on random arrays with many repeats. */
static void quantiles_select_as_sorting_would(void **state)
{
    (void)state;
    uint64_t r = 88172645463325252ull;
    double v[300], s[300];
    for (int round = 0; round < 2000; round++) {
        size_t n = 1 + round % 300;
        for (size_t i = 0; i < n; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            s[i] = (double)(r % (round % 7 ? 50 : 3));
        }
        qsort(s, n, sizeof *s, cmp_num);
        double q = (double)(round % 11) / 10;
        if (q > 1)
            q = 0.37;
        double pos = q * (double)(n - 1);
        size_t lo = (size_t)pos;
        double want = lo + 1 < n ? s[lo] + (pos - (double)lo) * (s[lo + 1] - s[lo]) : s[lo];
        memcpy(v, s, n * sizeof *v);
        for (size_t i = n; i > 1; i--) {    /* shuffled */
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            size_t j = r % i;
            double t = v[i - 1];
            v[i - 1] = v[j];
            v[j] = t;
        }
        assert_true(qa_quantile(v, n, q) == want);
    }
}

/* Sums of v[0 .. n), of their squares and their xor (wrapping): the
 * same for the same values in any order. */
static void sums_of(const int64_t *v, size_t n, uint64_t out[3])
{
    out[0] = out[1] = out[2] = 0;
    for (size_t i = 0; i < n; i++) {
        out[0] += (uint64_t)v[i];
        out[1] += (uint64_t)v[i] * (uint64_t)v[i];
        out[2] ^= (uint64_t)v[i] * UINT64_C(0x9E3779B97F4A7C15);
    }
}

/* qa_quantile_int of ints is qa_quantile of them as floats, whatever
 * their spread (one pass of counts, several, beyond 2^53 where floats
 * merge ints, the ends of the ints, all equal) and number (the few sorted,
 * the many counted), and it keeps the values (only reorders them). */
static void int_quantiles_are_the_floats(void **state)
{
    (void)state;
    uint64_t r = 88172645463325252ull;
    static const uint64_t spread[] = {1, 3, 50, 3600, 70000, UINT64_C(1) << 40,
                                      UINT64_C(1) << 60, UINT64_MAX};
    static const int sizes[] = {1, 2, 3, 16, 17, 18, 100, 1000, 5001, 200000};
    uint64_t *hist = mem_alloc(QA_HIST * sizeof *hist);
    int64_t *v = mem_alloc(200000 * sizeof *v);
    double *f = mem_alloc(200000 * sizeof *f);
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t wi = 0; wi < sizeof spread / sizeof *spread; wi++) {
            size_t n = (size_t)sizes[si];
            int64_t base = wi % 2 ? -1764000000000 : (wi == 7 ? INT64_MIN : 0);
            for (size_t i = 0; i < n; i++) {
                r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                uint64_t off = spread[wi] == UINT64_MAX ? r : r % spread[wi];
                v[i] = (int64_t)((uint64_t)base + off);
                if (wi == 7 && i % 5 == 0)      /* the ends themselves */
                    v[i] = i % 10 ? INT64_MAX : INT64_MIN;
            }
            uint64_t before[3], after[3];
            sums_of(v, n, before);
            for (int qi = 0; qi <= 10; qi += n > 10000 ? 3 : 1) {
                double q = qi == 10 ? 0.37 : qi / 9.0;
                for (size_t i = 0; i < n; i++)
                    f[i] = (double)v[i];
                assert_true(qa_quantile_int(v, n, q, hist) == qa_quantile(f, n, q));
            }
            sums_of(v, n, after);   /* the same values, reordered */
            assert_memory_equal(before, after, sizeof before);
        }
    int64_t eq[40];
    for (int i = 0; i < 40; i++)
        eq[i] = -7;
    assert_true(qa_quantile_int(eq, 40, 0.5, hist) == -7);
    int64_t two[] = {4, -6};
    assert_true(qa_quantile_int(two, 2, 0.5, hist) == -1);
    mem_free(f, 200000 * sizeof *f);
    mem_free(v, 200000 * sizeof *v);
    mem_free(hist, QA_HIST * sizeof *hist);
    assert_int_equal(mem_in_use(), 0);
}

static double var_of(const QVar *v)
{
    QExpr e = {.fn = QF_variance};
    Value r = qa_var_value(NULL, &e, v);
    return r.as.f;
}

static void variance_of_ints_is_exact_in_any_split(void **state)
{
    (void)state;
    /* big values with a small spread: the naive sum of squares in doubles
     * would lose it */
    int64_t x[] = {1764000000001, 1764000000003, 1764000000007, 1764000000002, 1764000000010};
    QVar all = {0}, a = {0}, b = {0};
    for (int i = 0; i < 5; i++)
        qa_var_int(&all, x[i]);
    for (int i = 4; i >= 0; i--)
        qa_var_int(i % 2 ? &a : &b, x[i]);
    qa_var_merge(&a, &b);
    assert_true(fabs(var_of(&all) - 14.3) < 1e-12);   /* 286 / 5 / 4, exactly so in the numerator */
    assert_true(var_of(&a) == var_of(&all));
    QVar f = {0};
    double y[] = {1.5, 2.5, 3.5};
    for (int i = 0; i < 3; i++)
        qa_var_float(&f, y[i]);
    assert_true(var_of(&f) == 1);
    QVar mixed = {0};
    qa_var_int(&mixed, 2);
    qa_var_int(&mixed, 3);
    qa_var_float(&mixed, 4.0);
    assert_true(fabs(var_of(&mixed) - 1) < 1e-12);
    QVar lone = {0};
    qa_var_int(&lone, 5);
    QExpr e = {.fn = QF_stddev};
    assert_true(IS_NIL(qa_var_value(NULL, &e, &lone)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_every_key),
        cmocka_unit_test(appended_keys_are_found),
        cmocka_unit_test(compares_as_memcmp),
        cmocka_unit_test(out_of_memory_leaves_the_table),
        cmocka_unit_test(quantiles_interpolate),
        cmocka_unit_test(quantiles_select_as_sorting_would),
        cmocka_unit_test(int_quantiles_are_the_floats),
        cmocka_unit_test(variance_of_ints_is_exact_in_any_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
