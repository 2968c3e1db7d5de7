/* test_kernel: the fixed-width keys that group and sort by compare by
 * memcmp as their values do (ints with signs, floats with -0, strings by
 * bytes, nil first), descending keys the other way round, and decode back
 * to the same values. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "vm/query/qplan.h"

static int sign(int c)
{
    return (c > 0) - (c < 0);
}

static void ints_order_as_numbers(void **state)
{
    (void)state;
    int64_t v[] = {INT64_MIN, -5, -1, 0, 1, 7, 1000000, INT64_MAX};
    uint8_t valid[8];
    memset(valid, 1, sizeof valid);
    KVec k = {.i = v, .valid = valid};
    QExpr e = {.type = QT_INT};
    unsigned char a[9], b[9];
    assert_int_equal(qx_keywidth(&e), 9);
    for (uint32_t i = 0; i < 8; i++)
        for (uint32_t j = 0; j < 8; j++) {
            k_key(&e, &k, i, false, a);
            k_key(&e, &k, j, false, b);
            assert_int_equal(sign(memcmp(a, b, 9)), (v[i] > v[j]) - (v[i] < v[j]));
            k_key(&e, &k, i, true, a);
            k_key(&e, &k, j, true, b);
            assert_int_equal(sign(memcmp(a, b, 9)), (v[i] < v[j]) - (v[i] > v[j]));
        }
}

static void floats_and_nil(void **state)
{
    (void)state;
    double v[] = {-INFINITY, -2.5, -0.0, 0.0, 1e-300, 3.25, INFINITY};
    uint8_t valid[7] = {1, 1, 1, 1, 1, 1, 1};
    KVec k = {.f = v, .valid = valid};
    QExpr e = {.type = QT_FLOAT};
    unsigned char a[9], b[9], nil[9];
    for (uint32_t i = 0; i + 1 < 7; i++) {
        k_key(&e, &k, i, false, a);
        k_key(&e, &k, i + 1, false, b);
        assert_true(memcmp(a, b, 9) < 0 || (v[i] == 0 && v[i + 1] == 0 && !memcmp(a, b, 9)));
    }
    valid[0] = 0;
    k_key(&e, &k, 0, false, nil);
    k_key(&e, &k, 1, false, a);
    assert_true(memcmp(nil, a, 9) < 0);     /* nil first */
}

static void strings_by_bytes(void **state)
{
    (void)state;
    const char *s[] = {"", "BILL", "RICS", "RICSX", "SWITCH"};
    uint32_t l[5];
    for (int i = 0; i < 5; i++)
        l[i] = (uint32_t)strlen(s[i]);
    KVec k = {.sp = s, .sl = l};
    QExpr e = {.type = QT_STR, .strw = 6};
    unsigned char a[7], b[7];
    assert_int_equal(qx_keywidth(&e), 7);
    for (uint32_t i = 0; i + 1 < 5; i++) {
        k_key(&e, &k, i, false, a);
        k_key(&e, &k, i + 1, false, b);
        assert_true(memcmp(a, b, 7) < 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ints_order_as_numbers),
        cmocka_unit_test(floats_and_nil),
        cmocka_unit_test(strings_by_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
