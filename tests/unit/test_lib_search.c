/* test_lib_search: search.pair's and search.packed's vectorised loops
 * (SSE2/SSSE3, AVX2 where the processor has it) find what the portable
 * loop finds, and that is what a plain scan finds, on random text of small
 * alphabets (many hits) and large ones (few), at every start, distance and
 * end near the vector widths, and at unaligned addresses; packed never
 * misses a position where one of the fingerprints it was built from ends. */
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
            for (int level = VEC_PORTABLE; level <= VEC_BEST; level++)
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
    for (int level = VEC_PORTABLE; level <= VEC_BEST; level++) {
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
    assert_true(search_vec_level() >= VEC_PORTABLE && search_vec_level() <= VEC_AVX512);
}

/* ---- packed ---- */

/* The packed filter's definition: some bucket allows each nibble (or the
 * byte is stop). */
static size_t packed_naive(const unsigned char *p, size_t i, size_t end, const unsigned char *masks,
                           int k, int stop)
{
    for (size_t j = i < (size_t)k - 1 ? (size_t)k - 1 : i; j < end; j++) {
        if (p[j] == stop)
            return j;
        for (int bucket = 0; bucket < 8; bucket++) {
            int all = 1;
            for (int b = 0; b < k; b++) {
                unsigned c = p[j - (size_t)k + 1 + (size_t)b];
                all &= masks[32 * b + (c & 15)] >> bucket & masks[32 * b + 16 + (c >> 4)] >> bucket & 1;
            }
            if (all)
                return j;
        }
    }
    return end;
}

/* The first j >= i (j >= k - 1) at which one of the n fingerprints
 * fps[f * k ..] ends, or end. */
static size_t fingerprint_at(const unsigned char *p, size_t i, size_t end, const unsigned char *fps,
                             int n, int k)
{
    for (size_t j = i < (size_t)k - 1 ? (size_t)k - 1 : i; j < end; j++)
        for (int f = 0; f < n; f++)
            if (memcmp(p + j - k + 1, fps + f * k, (size_t)k) == 0)
                return j;
    return end;
}

/* Each level against the naive filter, without a stop byte and with stop
 * (a byte of the text's alphabet, or one it lacks). */
static void packed_check(const unsigned char *p, size_t n, const unsigned char *masks, int k,
                         const unsigned char *fps, int nfp, int stop)
{
    for (size_t i = 0; i < n; i += 1 + i / 16)
        for (size_t end = i; end <= n; end += 1 + (end - i) / 8) {
            size_t want = packed_naive(p, i, end, masks, k, -1);
            size_t want_stop = packed_naive(p, i, end, masks, k, stop);
            for (int level = VEC_PORTABLE; level <= VEC_BEST; level++) {
                assert_int_equal(search_packed_find(p, i, end, masks, k, level, -1), want);
                assert_int_equal(search_packed_find(p, i, end, masks, k, level, stop), want_stop);
            }
            if (fps)
                assert_true(want <= fingerprint_at(p, i, end, fps, nfp, k));
        }
}

static void packed_agrees_on_random_text(void **state)
{
    (void)state;
    /* each level is held against the naive filter; a level this processor
     * lacks runs the best below it, so say which were not tested */
    if (search_vec_level() < VEC_AVX512)
        print_message("packed: this processor lacks levels above %d (AVX-512BW with VBMI: %d); "
                      "they ran as the best below\n",
                      search_vec_level(), VEC_AVX512);
    uint64_t seed = 0x2545f4914f6cdd1du;
    static unsigned char buf[700];
    unsigned char masks[32 * PACKED_MAX], fps[64 * PACKED_MAX];
    for (int round = 0; round < 90; round++) {
        unsigned alphabet = round % 3 == 0 ? 3 : round % 3 == 1 ? 20 : 256;
        int k = 1 + round % PACKED_MAX;
        size_t off = (size_t)(xorshift(&seed) % 32);
        size_t n = 64 + (size_t)(xorshift(&seed) % (sizeof buf - 64 - 32));
        for (size_t x = 0; x < n; x++)
            buf[off + x] = (unsigned char)('a' + xorshift(&seed) % alphabet);
        /* 2 to 64 fingerprints (some taken from the text), spread over the buckets as gre does */
        int nfp = 2 + (int)(xorshift(&seed) % 63);
        memset(masks, 0, sizeof masks);
        for (int f = 0; f < nfp; f++) {
            unsigned char *fp = fps + f * k;
            if (f % 2) {
                size_t at = (size_t)(xorshift(&seed) % (n - (size_t)k));
                memcpy(fp, buf + off + at, (size_t)k);
            } else {
                for (int b = 0; b < k; b++)
                    fp[b] = (unsigned char)('a' + xorshift(&seed) % alphabet);
            }
            int bucket = f * 8 / nfp;
            for (int b = 0; b < k; b++) {
                masks[32 * b + (fp[b] & 15)] |= (unsigned char)(1u << bucket);
                masks[32 * b + 16 + (fp[b] >> 4)] |= (unsigned char)(1u << bucket);
            }
        }
        int stop = round % 4 == 0 ? 0 : (unsigned char)('a' + xorshift(&seed) % alphabet);
        if (round % 8 == 0)
            buf[off + xorshift(&seed) % n] = 0;     /* a NUL somewhere, for stop 0 */
        packed_check(buf + off, n, masks, k, fps, nfp, stop);
        /* random masks: sparse ones pass rarely, as a bucket's empty entries block it */
        for (size_t x = 0; x < sizeof masks; x++)
            masks[x] = (unsigned char)(xorshift(&seed) & xorshift(&seed) & xorshift(&seed));
        packed_check(buf + off, n, masks, k, NULL, 0, stop);
    }
}

static void packed_edges(void **state)
{
    (void)state;
    unsigned char p[100], masks[32 * PACKED_MAX];
    memset(p, 'x', sizeof p);
    memset(masks, 0, sizeof masks);
    /* the fingerprint "\xff\x80" in bucket 7: bytes above 127 and the top bit */
    masks[0xf] = masks[16 + 0xf] = 0x80;
    masks[32 + 0x0] = masks[32 + 16 + 0x8] = 0x80;
    for (int level = VEC_PORTABLE; level <= VEC_BEST; level++) {
        assert_int_equal(search_packed_find(p, 0, 100, masks, 2, level, -1), 100);
        p[98] = 0xff;
        p[99] = 0x80;
        /* the one hit in the last byte, found by every width's tail */
        assert_int_equal(search_packed_find(p, 0, 100, masks, 2, level, -1), 99);
        assert_int_equal(search_packed_find(p, 0, 99, masks, 2, level, -1), 99);
        assert_int_equal(search_packed_find(p, 99, 100, masks, 2, level, -1), 99);
        /* a k-byte fingerprint cannot end before index k - 1 */
        p[0] = 0x80;
        assert_int_equal(search_packed_find(p, 0, 100, masks + 32, 1, level, -1), 0);
        assert_int_equal(search_packed_find(p, 0, 1, masks, 2, level, -1), 1);
        p[0] = p[98] = p[99] = 'x';
        /* a stop byte: found in the last byte as in the first one it can be (k - 1) */
        p[99] = 0;
        assert_int_equal(search_packed_find(p, 0, 100, masks, 2, level, 0), 99);
        assert_int_equal(search_packed_find(p, 0, 99, masks, 2, level, 0), 99);
        p[1] = 0;
        assert_int_equal(search_packed_find(p, 0, 100, masks, 2, level, 0), 1);
        p[1] = p[99] = 'x';
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(levels_agree_on_random_text),
        cmocka_unit_test(edges),
        cmocka_unit_test(packed_agrees_on_random_text),
        cmocka_unit_test(packed_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
