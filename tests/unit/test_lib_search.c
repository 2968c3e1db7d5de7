/* test_lib_search: search.pair's vectorised loops (SSE2, AVX2 where the
 * processor has it) find what the portable loop finds, and that is what a
 * plain scan finds, on random text of small alphabets (many hits) and
 * large ones (few), at every start, distance and end near the vector
 * widths, and at unaligned addresses. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "tests/unit/xorshift.h"
#include "vm/lib_search.h"

/* The plain definition. */
static size_t naive(const unsigned char *p, size_t i, size_t end, unsigned char b1, size_t d,
                    unsigned char b2)
{
    for (size_t j = i; j + d < end; j++)
        if (p[j] == b1 && p[j + d] == b2)
            return j;
    return end;
}

static void check_all(const unsigned char *p, size_t n, unsigned char b1, size_t d,
                      unsigned char b2)
{
    for (size_t i = 0; i < n; i += 1 + i / 16)
        for (size_t end = i; end <= n; end += 1 + (end - i) / 8) {
            size_t want = naive(p, i, end, b1, d, b2);
            for (int level = PAIR_PORTABLE; level <= PAIR_BEST; level++)
                assert_int_equal(search_pair_find(p, i, end, b1, d, b2, level), want);
        }
}

static void levels_agree_on_random_text(void **state)
{
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15u;
    static unsigned char buf[700];
    for (int round = 0; round < 60; round++) {
        unsigned alphabet = round % 3 == 0 ? 2 : round % 3 == 1 ? 8 : 256;
        size_t off = (size_t)(xorshift(&seed) % 32);     /* unaligned starts */
        size_t n = 64 + (size_t)(xorshift(&seed) % (sizeof buf - 64 - 32));
        for (size_t k = 0; k < n; k++)
            buf[off + k] = (unsigned char)('a' + xorshift(&seed) % alphabet);
        unsigned char b1 = (unsigned char)('a' + xorshift(&seed) % alphabet);
        unsigned char b2 = (unsigned char)('a' + xorshift(&seed) % alphabet);
        size_t d = (size_t)(xorshift(&seed) % 40);
        check_all(buf + off, n, b1, d, b2);
    }
}

static void edges(void **state)
{
    (void)state;
    unsigned char p[100];
    memset(p, 'x', sizeof p);
    p[99] = 'y';
    for (int level = PAIR_PORTABLE; level <= PAIR_BEST; level++) {
        /* the one hit in the last byte, found by every width's tail */
        assert_int_equal(search_pair_find(p, 0, 100, 'y', 0, 'y', level), 99);
        assert_int_equal(search_pair_find(p, 0, 99, 'y', 0, 'y', level), 99);
        assert_int_equal(search_pair_find(p, 0, 100, 'x', 1, 'y', level), 98);
        /* a distance that reaches past end finds nothing */
        assert_int_equal(search_pair_find(p, 0, 100, 'x', 100, 'x', level), 100);
        assert_int_equal(search_pair_find(p, 50, 50, 'x', 0, 'x', level), 50);
        /* byte values above 127 (signed in the vector compares) */
        p[40] = 0xff;
        p[45] = 0x80;
        assert_int_equal(search_pair_find(p, 0, 100, 0xff, 5, 0x80, level), 40);
        p[40] = p[45] = 'x';
    }
    assert_true(search_pair_level() >= PAIR_PORTABLE && search_pair_level() <= PAIR_AVX2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(levels_agree_on_random_text),
        cmocka_unit_test(edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
