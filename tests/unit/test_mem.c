/* test_mem: the allocation hook counts bytes and fails on demand. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "store/mem.h"

static void counts_live_bytes(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    char *p = mem_alloc(100);
    assert_non_null(p);
    assert_int_equal(mem_in_use(), base + 100);
    p = mem_realloc(p, 100, 300);
    assert_non_null(p);
    assert_int_equal(mem_in_use(), base + 300);
    mem_free(p, 300);
    assert_int_equal(mem_in_use(), base);
}

static void fails_the_nth_allocation(void **state)
{
    (void)state;
    mem_fail_after(3);
    void *a = mem_alloc(8), *b = mem_alloc(8), *c = mem_alloc(8), *d = mem_alloc(8);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(c);
    assert_non_null(d); /* only the n-th fails, then the hook is off */
    mem_free(a, 8);
    mem_free(b, 8);
    mem_free(d, 8);
}

static void limit_caps_growth(void **state)
{
    (void)state;
    mem_set_limit(mem_in_use() + 1000);
    void *a = mem_alloc(600);
    assert_non_null(a);
    assert_null(mem_alloc(600));
    void *b = mem_realloc(a, 600, 900);
    assert_non_null(b);
    assert_null(mem_realloc(b, 900, 1100));
    mem_free(b, 900);
    mem_set_limit(0);
}

static void calloc_zeroes_and_checks_overflow(void **state)
{
    (void)state;
    unsigned char *p = mem_calloc(16, 4);
    assert_non_null(p);
    for (int i = 0; i < 64; i++)
        assert_int_equal(p[i], 0);
    mem_free(p, 64);
    assert_null(mem_calloc(SIZE_MAX / 2, 4));
}

static void strdup_copies(void **state)
{
    (void)state;
    char *s = mem_strdup("tagset");
    assert_string_equal(s, "tagset");
    mem_free(s, strlen(s) + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_live_bytes),
        cmocka_unit_test(fails_the_nth_allocation),
        cmocka_unit_test(limit_caps_growth),
        cmocka_unit_test(calloc_zeroes_and_checks_overflow),
        cmocka_unit_test(strdup_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
