/* lwcodec: run-length and frame-of-reference column codecs (layouts in lwcodec.h). */
#include "config.h"
#include "store/lwcodec.h"

#include <inttypes.h>
#include <string.h>

#include "store/bytes.h"

#define FOR_HEAD 16u
#define FOR_PAD 8u
#define FOR_MAXBITS 56u /* past this a value may straddle 9 bytes: 64 bits are used */

/* ---- run-length --------------------------------------------------------- */

static size_t rle_len(size_t runs, uint32_t w)
{
    return 4 + runs * (4 + (size_t)w);
}

void st_lw_rle_encode(const void *col, uint32_t n, uint32_t w, unsigned char *out)
{
    const unsigned char *p = col;
    uint32_t runs = 0;
    /* the ends first, then the values after them (their count known) */
    for (uint32_t i = 1; i <= n; i++)
        if (i == n || memcmp(p + (size_t)i * w, p + (size_t)(i - 1) * w, w) != 0)
            st_put32(out + 4 + 4 * (size_t)runs++, i);
    st_put32(out, runs);
    unsigned char *v = out + 4 + 4 * (size_t)runs;
    for (uint32_t r = 0, start = 0; r < runs; r++) {
        memcpy(v + (size_t)r * w, p + (size_t)start * w, w);
        start = st_get32(out + 4 + 4 * (size_t)r);
    }
}

static int rle_check(const unsigned char *p, size_t len, uint32_t n, uint32_t w, st_err *err)
{
    if (len < 4)
        return st_err_set(err, ST_ECORRUPT, "run table of %zu bytes", len);
    uint32_t runs = st_get32(p);
    if (runs == 0 || runs > n || len != rle_len(runs, w))
        return st_err_set(err, ST_ECORRUPT, "run table of %" PRIu32 " runs in %zu bytes for %" PRIu32
                          " values", runs, len, n);
    uint32_t prev = 0;
    for (uint32_t r = 0; r < runs; r++) {
        uint32_t e = st_get32(p + 4 + 4 * (size_t)r);
        if (e <= prev || e > n)
            return st_err_set(err, ST_ECORRUPT, "run %" PRIu32 " ends at row %" PRIu32 " after %" PRIu32
                              " (of %" PRIu32 ")", r, e, prev, n);
        prev = e;
    }
    if (prev != n)
        return st_err_set(err, ST_ECORRUPT, "runs end at row %" PRIu32 " of %" PRIu32, prev, n);
    return 0;
}

static void rle_decode(const unsigned char *p, uint32_t w, unsigned char *out)
{
    uint32_t runs = st_get32(p);
    const unsigned char *v = p + 4 + 4 * (size_t)runs;
    for (uint32_t r = 0, start = 0; r < runs; r++) {
        uint32_t end = st_get32(p + 4 + 4 * (size_t)r);
        size_t len = (size_t)(end - start) * w, have = w;
        unsigned char *o = out + (size_t)start * w;
        memcpy(o, v + (size_t)r * w, w);
        while (have < len) {    /* doubling: a long run costs a few copies */
            size_t k = have < len - have ? have : len - have;
            memcpy(o + have, o, k);
            have += k;
        }
        start = end;
    }
}

static void rle_gather(const unsigned char *p, uint32_t w, const uint32_t *rows, uint32_t k,
                       unsigned char *out)
{
    uint32_t runs = st_get32(p), r = 0;
    const unsigned char *ends = p + 4, *v = ends + 4 * (size_t)runs;
    for (uint32_t j = 0; j < k; j++) {
        while (st_get32(ends + 4 * (size_t)r) <= rows[j])   /* rows in order: a walk */
            r++;
        memcpy(out + (size_t)j * w, v + (size_t)r * w, w);
    }
}

/* ---- frame of reference, bit-packed --------------------------------------- */

/* Value i of a column of w-byte values, as a u64 (sign-extended when sign). */
static uint64_t load(const unsigned char *p, uint32_t w, bool sign)
{
    switch (w) {
    case 1: return sign ? (uint64_t)(int64_t)(int8_t)p[0] : p[0];
    case 2: {
        uint16_t x;
        memcpy(&x, p, 2);
        return sign ? (uint64_t)(int64_t)(int16_t)x : x;
    }
    case 4: {
        uint32_t x;
        memcpy(&x, p, 4);
        return sign ? (uint64_t)(int64_t)(int32_t)x : x;
    }
    default: {
        uint64_t x;
        memcpy(&x, p, 8);
        return x;
    }
    }
}

static bool for_width(uint32_t w)
{
    return w == 1 || w == 2 || w == 4 || w == 8;
}

/* The runs of equal values, and min and max in the values' order (signed
 * or not), in one pass; inlined for each constant width and sign so the
 * loop has no per-value switch. */
static inline __attribute__((always_inline)) void
for_scan(const unsigned char *p, uint32_t n, uint32_t w, bool sign, size_t *runs_, uint64_t *lo_,
         uint64_t *hi_)
{
    uint64_t prev = load(p, w, sign), lo = prev, hi = prev;
    size_t runs = 1;
    for (uint32_t i = 1; i < n; i++) {
        uint64_t x = load(p + (size_t)i * w, w, sign);
        runs += x != prev;
        prev = x;
        if (sign ? (int64_t)x < (int64_t)lo : x < lo)
            lo = x;
        if (sign ? (int64_t)x > (int64_t)hi : x > hi)
            hi = x;
    }
    *runs_ = runs;
    *lo_ = lo;
    *hi_ = hi;
}

/* Packs the n values less ref, bits each (1..63), into d: 64 bits at a
 * time, so a value costs a shift and an or, and each word one store. */
static inline __attribute__((always_inline)) void
for_pack(const unsigned char *p, uint32_t n, uint32_t w, bool sign, uint64_t ref, unsigned bits,
         unsigned char *d)
{
    uint64_t acc = 0;
    unsigned have = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t x = load(p + (size_t)i * w, w, sign) - ref;
        acc |= x << have;
        have += bits;
        if (have >= 64) {
            memcpy(d, &acc, 8);
            d += 8;
            have -= 64;
            acc = have ? x >> (bits - have) : 0;
        }
    }
    if (have)   /* the padding after the packed bytes takes the whole word */
        memcpy(d, &acc, 8);
}

/* Calls F(p, n, w, sign, ...) with w and sign constants, so each width
 * gets its own loop. */
#define FOR_EACH_WIDTH(F, p, n, w, sign, ...)                                   \
    do {                                                                        \
        switch ((w) * 2 + (sign)) {                                             \
        case 2: F(p, n, 1, false, __VA_ARGS__); break;                          \
        case 3: F(p, n, 1, true, __VA_ARGS__); break;                           \
        case 4: F(p, n, 2, false, __VA_ARGS__); break;                          \
        case 5: F(p, n, 2, true, __VA_ARGS__); break;                           \
        case 8: F(p, n, 4, false, __VA_ARGS__); break;                          \
        case 9: F(p, n, 4, true, __VA_ARGS__); break;                           \
        case 16: F(p, n, 8, false, __VA_ARGS__); break;                         \
        default: F(p, n, 8, true, __VA_ARGS__); break;                          \
        }                                                                       \
    } while (0)

/* The bits of each packed value for values from lo to hi. */
static unsigned for_bits(uint64_t lo, uint64_t hi)
{
    uint64_t range = hi - lo;
    unsigned bits = range ? 64u - (unsigned)__builtin_clzll(range) : 0;
    return bits > FOR_MAXBITS ? 64 : bits;
}

static size_t for_len(uint32_t n, unsigned bits)
{
    return FOR_HEAD + (size_t)(((uint64_t)n * bits + 7) / 8) + FOR_PAD;
}

void st_lw_sizes(const void *col, uint32_t n, uint32_t w, bool sign, size_t *rle, size_t *fr)
{
    const unsigned char *p = col;
    if (!for_width(w)) {    /* RLE alone: runs by their bytes */
        size_t runs = 1;
        for (uint32_t i = 1; i < n; i++)
            runs += memcmp(p + (size_t)i * w, p + (size_t)(i - 1) * w, w) != 0;
        *rle = rle_len(runs, w);
        *fr = 0;
        return;
    }
    size_t runs;
    uint64_t lo, hi;
    FOR_EACH_WIDTH(for_scan, p, n, w, sign, &runs, &lo, &hi);
    *rle = rle_len(runs, w);
    *fr = for_len(n, for_bits(lo, hi));
}

void st_lw_for_encode(const void *col, uint32_t n, uint32_t w, bool sign, unsigned char *out)
{
    const unsigned char *p = col;
    size_t runs;
    uint64_t ref, hi;
    FOR_EACH_WIDTH(for_scan, p, n, w, sign, &runs, &ref, &hi);
    unsigned bits = for_bits(ref, hi);
    size_t len = for_len(n, bits);
    memset(out, 0, len);
    out[0] = (unsigned char)bits;
    st_put64(out + 8, ref);
    unsigned char *d = out + FOR_HEAD;
    if (bits == 64) {
        for (uint32_t i = 0; i < n; i++) {
            uint64_t x = load(p + (size_t)i * w, w, sign) - ref;
            memcpy(d + (size_t)i * 8, &x, 8);
        }
    } else if (bits) {
        FOR_EACH_WIDTH(for_pack, p, n, w, sign, ref, bits, d);
    }
}

static int for_check(const unsigned char *p, size_t len, uint32_t n, uint32_t w, st_err *err)
{
    if (!for_width(w))
        return st_err_set(err, ST_ECORRUPT, "frame of reference for values of %" PRIu32 " bytes", w);
    if (len < FOR_HEAD)
        return st_err_set(err, ST_ECORRUPT, "frame of reference of %zu bytes", len);
    unsigned bits = p[0];
    for (int i = 1; i < 8; i++)
        if (p[i])
            return st_err_set(err, ST_ECORRUPT, "frame of reference with reserved byte %d = %02x", i, p[i]);
    if ((bits > FOR_MAXBITS && bits != 64) || bits > 8 * w)
        return st_err_set(err, ST_ECORRUPT, "bit width %u for values of %" PRIu32 " bytes", bits, w);
    if (len != for_len(n, bits))
        return st_err_set(err, ST_ECORRUPT, "%zu bytes of %u-bit values for %" PRIu32 " values", len, bits, n);
    return 0;
}

/* Value i of a checked FOR column, its low w bytes to out. */
static inline void for_value(const unsigned char *p, uint32_t i, uint32_t w, unsigned char *out)
{
    unsigned bits = p[0];
    uint64_t x = st_get64(p + 8);
    if (bits) {
        uint64_t at = (uint64_t)i * bits, word;
        memcpy(&word, p + FOR_HEAD + at / 8, 8);
        x += bits == 64 ? word : (word >> (at % 8)) & ((UINT64_C(1) << bits) - 1);
    }
    memcpy(out, &x, w);     /* little-endian: the low bytes first */
}

/* ---- either -------------------------------------------------------------- */

int st_lw_check(unsigned codec, const unsigned char *p, size_t len, uint32_t n, uint32_t w,
                st_err *err)
{
    if (n == 0)
        return st_err_set(err, ST_ECORRUPT, "an encoded column of no values");
    return codec == ST_LW_RLE ? rle_check(p, len, n, w, err) : for_check(p, len, n, w, err);
}

void st_lw_decode(unsigned codec, const unsigned char *p, uint32_t n, uint32_t w, void *out)
{
    if (codec == ST_LW_RLE) {
        rle_decode(p, w, out);
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        for_value(p, i, w, (unsigned char *)out + (size_t)i * w);
}

void st_lw_gather(unsigned codec, const unsigned char *p, uint32_t n, uint32_t w,
                  const uint32_t *rows, uint32_t k, void *out)
{
    (void)n;
    if (codec == ST_LW_RLE) {
        rle_gather(p, w, rows, k, out);
        return;
    }
    for (uint32_t j = 0; j < k; j++)
        for_value(p, rows[j], w, (unsigned char *)out + (size_t)j * w);
}
