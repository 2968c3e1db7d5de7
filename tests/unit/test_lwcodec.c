/* test_lwcodec: run-length and frame-of-reference columns round trip over
 * edge and random data, give any rows as a full decode does, and refuse or
 * survive (never reading outside their bytes) damage to any byte. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "store/bytes.h"
#include "store/lwcodec.h"
#include "store/mem.h"
#include "tests/unit/xorshift.h"

enum { NMAX = 700 };

typedef enum pattern { ALL_EQUAL, ALTERNATING, RANDOM, RUNS, ASCENDING, NEGATIVE, HIGH, NPATTERNS } pattern;

/* n values of w bytes of a pattern into col. */
static void fill(pattern pt, uint32_t n, uint32_t w, uint64_t *rng, unsigned char *col)
{
    uint64_t x = xorshift(rng), run = 0;
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *v = col + (size_t)i * w;
        uint64_t k;
        switch (pt) {
        case ALL_EQUAL: k = 0x9e3779b97f4a7c15ULL; break;
        case ALTERNATING: k = i % 2 ? UINT64_MAX : 0; break;
        case RANDOM: k = xorshift(rng); break;
        case RUNS:
            if (run-- == 0) {
                x = xorshift(rng);
                run = xorshift(rng) % 40;
            }
            k = x;
            break;
        case ASCENDING: k = x + i * 3; break;
        case NEGATIVE: k = (uint64_t)(int64_t)((int64_t)(xorshift(rng) % 2001) - 1000); break;
        default: k = (UINT64_C(1) << 63) + xorshift(rng) % 5000; break;  /* u64 above 2^63 */
        }
        for (uint32_t b = 0; b < w; b++)     /* any width: the bytes of k, again */
            v[b] = (unsigned char)(k >> (8 * (b % 8)));
    }
}

/* The runs of equal values in col, counted plainly. */
static uint32_t runs_of(const unsigned char *col, uint32_t n, uint32_t w)
{
    uint32_t runs = n > 0;
    for (uint32_t i = 1; i < n; i++)
        runs += memcmp(col + (size_t)i * w, col + (size_t)(i - 1) * w, w) != 0;
    return runs;
}

/* Encodes col by codec (for FOR with sign), checks it, decodes it and
 * compares; gathers random selections and compares them with the decode.
 * Returns the encoded bytes (the caller frees them, *len long). */
static unsigned char *round_trip(unsigned codec, bool sign, const unsigned char *col, uint32_t n,
                                 uint32_t w, uint64_t *rng, size_t *len)
{
    size_t rle, fr;
    st_lw_sizes(col, n, w, sign, &rle, &fr);
    size_t sz = codec == ST_LW_RLE ? rle : fr;
    assert_true(sz > 0);
    unsigned char *enc = mem_alloc(sz);
    if (codec == ST_LW_RLE)
        st_lw_rle_encode(col, n, w, enc);
    else
        st_lw_for_encode(col, n, w, sign, enc);
    st_err err = {0};
    assert_int_equal(st_lw_check(codec, enc, sz, n, w, &err), 0);
    unsigned char *out = mem_alloc((size_t)n * w);
    st_lw_decode(codec, enc, n, w, out);
    assert_memory_equal(out, col, (size_t)n * w);
    uint32_t *rows = mem_alloc(n * sizeof *rows);
    unsigned char *got = mem_alloc((size_t)n * w);
    for (int round = 0; round < 8; round++) {
        uint32_t k = 0, keep = (uint32_t)(xorshift(rng) % 100);  /* a percentage */
        for (uint32_t i = 0; i < n; i++)
            if (xorshift(rng) % 100 < keep)
                rows[k++] = i;
        if (k && round == 7)   /* rows may repeat: they need order, not distinctness */
            for (uint32_t j = 0; j < k; j++)
                rows[j] = rows[0];
        st_lw_gather(codec, enc, n, w, rows, k, got);
        for (uint32_t j = 0; j < k; j++)
            assert_memory_equal(got + (size_t)j * w, col + (size_t)rows[j] * w, w);
    }
    mem_free(rows, n * sizeof *rows);
    mem_free(got, (size_t)n * w);
    mem_free(out, (size_t)n * w);
    *len = sz;
    return enc;
}

static void round_trips_and_gathers(void **state)
{
    (void)state;
    uint64_t rng = 0x1234567;
    const uint32_t widths[] = {1, 2, 4, 8, 3, 36};
    const uint32_t ns[] = {1, 2, 7, 64, 255, NMAX};
    unsigned char *col = mem_alloc((size_t)NMAX * 36);
    for (int pt = 0; pt < NPATTERNS; pt++)
        for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++)
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                uint32_t w = widths[wi], n = ns[ni];
                size_t len;
                fill((pattern)pt, n, w, &rng, col);
                unsigned char *r = round_trip(ST_LW_RLE, false, col, n, w, &rng, &len);
                mem_free(r, len);
                if (pt == ALL_EQUAL)    /* one run */
                    assert_int_equal(len, 4 + 4 + w);
                for (int sign = 0; sign < 2 && (w == 1 || w == 2 || w == 4 || w == 8); sign++) {
                    unsigned char *e = round_trip(ST_LW_FOR, sign, col, n, w, &rng, &len);
                    if (pt == ALL_EQUAL)
                        assert_int_equal(e[0], 0);  /* no bits: the reference alone */
                    if (pt == NEGATIVE && sign && w >= 2)   /* packed by range, not as huge unsigned */
                        assert_true(e[0] <= 11);
                    if (pt == ALTERNATING && !sign && n > 1)
                        assert_int_equal(e[0], w == 8 ? 64 : 8 * w);
                    mem_free(e, len);
                }
                size_t rle, fr;
                st_lw_sizes(col, n, w, false, &rle, &fr);
                assert_int_equal(fr == 0, !(w == 1 || w == 2 || w == 4 || w == 8));
                size_t rle_signed;  /* runs are runs, whatever order the values have */
                st_lw_sizes(col, n, w, true, &rle_signed, &fr);
                assert_int_equal(rle_signed, rle);
                assert_int_equal(rle, 4 + (size_t)runs_of(col, n, w) * (4 + w));
            }
    mem_free(col, (size_t)NMAX * 36);
}

/* Every byte of an encoded column changed, and its length cut or grown: the
 * check refuses it, or it decodes and gathers (as other values: the block's
 * checksum is what catches those) without reading outside its bytes; a
 * change to the run count, the last run end, the bit width or the bytes
 * reserved is always refused. */
static void damage_is_refused_or_harmless(void **state)
{
    (void)state;
    uint64_t rng = 99;
    const uint32_t n = 300;
    for (int c = 0; c < 3; c++) {
        uint32_t w = c == 0 ? 36 : 8;
        unsigned codec = c == 0 ? ST_LW_RLE : c == 1 ? ST_LW_FOR : ST_LW_RLE;
        unsigned char *col = mem_alloc((size_t)n * w);
        fill(c == 1 ? ASCENDING : RUNS, n, w, &rng, col);
        size_t len;
        unsigned char *enc = round_trip(codec, false, col, n, w, &rng, &len);
        unsigned char *out = mem_alloc((size_t)n * w);
        uint32_t rows[3] = {0, n / 2, n - 1};
        size_t last_end = 4 * (size_t)st_get32(enc);    /* RLE: the last run end's offset */
        for (size_t i = 0; i < len; i++)
            for (int v = 0; v < 3; v++) {
                const unsigned char flips[3] = {0xff, 0x01, 0x80};
                unsigned char *bad = mem_alloc(len);    /* exactly len: ASan sees any overread */
                memcpy(bad, enc, len);
                bad[i] ^= flips[v];
                st_err err = {0};
                int rc = st_lw_check(codec, bad, len, n, w, &err);
                bool run_table = codec == ST_LW_RLE && (i < 4 || (i >= last_end && i < last_end + 4));
                bool bits = codec == ST_LW_FOR && i < 8;
                if (run_table || bits)
                    assert_int_equal(rc, -1);
                if (rc == 0) {
                    st_lw_decode(codec, bad, n, w, out);
                    st_lw_gather(codec, bad, n, w, rows, 3, out);
                } else {
                    assert_true(err.msg[0] != '\0');
                }
                mem_free(bad, len);
            }
        for (size_t cut = 0; cut < len + 9; cut += cut < len ? 1 : 9) {     /* other lengths */
            unsigned char *bad = mem_alloc(cut + 1);
            memcpy(bad, enc, cut < len ? cut : len);
            st_err err = {0};
            if (cut != len)
                assert_int_equal(st_lw_check(codec, bad, cut, n, w, &err), -1);
            mem_free(bad, cut + 1);
        }
        st_err err = {0};   /* for fewer or more values than it holds */
        assert_int_equal(st_lw_check(codec, enc, len, n - 1, w, &err), -1);
        assert_int_equal(st_lw_check(codec, enc, len, 0, w, &err), -1);
        mem_free(out, (size_t)n * w);
        mem_free(enc, len);
        mem_free(col, (size_t)n * w);
    }
}

/* The FOR layout written the plain way, value by value (the encoder
 * before it packed a word at a time): what st_lw_for_encode must match
 * byte for byte. */
static void for_reference(const unsigned char *col, uint32_t n, uint32_t w, bool sign, unsigned char *out,
                          size_t len)
{
    uint64_t v[NMAX], lo = 0, hi = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t x = 0;
        for (uint32_t b = 0; b < w; b++)
            x |= (uint64_t)col[(size_t)i * w + b] << (8 * b);
        if (sign && w < 8 && (x >> (8 * w - 1)) & 1)
            x |= UINT64_MAX << (8 * w);
        v[i] = x;
        if (i == 0 || (sign ? (int64_t)x < (int64_t)lo : x < lo))
            lo = x;
        if (i == 0 || (sign ? (int64_t)x > (int64_t)hi : x > hi))
            hi = x;
    }
    unsigned bits = 0;
    while (bits < 64 && (hi - lo) >> bits)
        bits++;
    if (bits > 56)
        bits = 64;
    memset(out, 0, len);
    out[0] = (unsigned char)bits;
    st_put64(out + 8, lo);
    for (uint32_t i = 0; i < n; i++)
        for (unsigned b = 0; b < bits; b++) {
            uint64_t at = (uint64_t)i * bits + b;
            out[16 + at / 8] |= (unsigned char)((((v[i] - lo) >> b) & 1) << (at % 8));
        }
}

/* The encoder gives the plain layout's bytes exactly, for every bit width
 * of every value width, signed and not, over lengths around the 64-bit
 * words it packs. */
static void for_matches_plain_layout(void **state)
{
    (void)state;
    uint64_t rng = 4242;
    unsigned char col[NMAX * 8], got[16 + NMAX * 8 + 8 + 1], want[16 + NMAX * 8 + 8];
    const uint32_t ns[] = {1, 2, 3, 63, 64, 65, 127, 128, 129, NMAX};
    for (uint32_t w = 1; w <= 8; w *= 2)
        for (int sign = 0; sign < 2; sign++)
            for (unsigned range = 0; range <= 8 * w; range++)
                for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                    uint32_t n = ns[ni];
                    uint64_t base = xorshift(&rng);
                    for (uint32_t i = 0; i < n; i++) {
                        uint64_t off = range == 64 ? xorshift(&rng)
                                                   : xorshift(&rng) & ((UINT64_C(1) << range) - 1);
                        uint64_t k = base + off;
                        for (uint32_t b = 0; b < w; b++)
                            col[(size_t)i * w + b] = (unsigned char)(k >> (8 * b));
                    }
                    size_t rle, len;
                    st_lw_sizes(col, n, w, sign, &rle, &len);
                    memset(got, 0xa5, sizeof got);
                    st_lw_for_encode(col, n, w, sign, got);
                    for_reference(col, n, w, sign, want, len);
                    assert_memory_equal(got, want, len);
                    assert_int_equal(got[len], 0xa5);   /* nothing written past its size */
                }
}

/* A bit width FOR never writes (57 .. 63, or wider than the values) is
 * refused, even with the length it would have. */
static void odd_bit_widths_are_refused(void **state)
{
    (void)state;
    const uint32_t n = 10;
    for (unsigned bits = 0; bits <= 70; bits++) {
        for (uint32_t w = 1; w <= 8; w *= 2) {
            size_t len = 16 + ((size_t)n * bits + 7) / 8 + 8;
            unsigned char *p = mem_calloc(1, len);
            p[0] = (unsigned char)bits;
            st_err err = {0};
            bool ok = (bits <= 56 || bits == 64) && bits <= 8 * w;
            assert_int_equal(st_lw_check(ST_LW_FOR, p, len, n, w, &err), ok ? 0 : -1);
            mem_free(p, len);
        }
    }
    st_err err = {0};
    unsigned char p[64] = {0};
    assert_int_equal(st_lw_check(ST_LW_FOR, p, 24, 1, 3, &err), -1);    /* a width FOR does not take */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trips_and_gathers),
        cmocka_unit_test(damage_is_refused_or_harmless),
        cmocka_unit_test(odd_bit_widths_are_refused),
        cmocka_unit_test(for_matches_plain_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
