/* test_bindex: a block's bitmap index gives each value's rows exactly,
 * round trips through its bytes, and refuses damage to its structure. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <roaring/roaring.h>
#include <string.h>

#include "store/bindex.h"
#include "store/bytes.h"
#include "store/dynlib.h"
#include "store/mem.h"
#include "store/schema.h"
#include "tests/unit/xorshift.h"

/* CRoaring's own reader, which comb does not call (it reads bitmaps in
 * place, st_bidx_or_rows, and store/roarload.c binds only what comb
 * calls): bound here, to compare the two readings. */
#define READER_FUNCS(X)                                                                            \
    X(roaring_bitmap_t *, roaring_bitmap_portable_deserialize_safe, (const char *b, size_t n),     \
      (b, n))                                                                                      \
    X(uint64_t, roaring_bitmap_get_cardinality, (const roaring_bitmap_t *r), (r))
ST_DYN_LIB(READER_FUNCS, ROARING_SONAME, "the bitmap index library")

static st_schema *parse(const char *t)
{
    st_err err;
    st_schema *s = st_schema_parse(t, strlen(t), 1, 1, &err);
    assert_non_null(s);
    return s;
}

/* The rows of value i of index idx of n rows, read in place into a bitset
 * with a guard word after it (which must stay untouched): the count, or
 * -1 when st_bidx_or_rows refuses the bitmap. */
static int64_t rows_at(const unsigned char *idx, size_t len, uint32_t i, uint32_t n, uint64_t *w)
{
    size_t nw = (n + 63) / 64;
    memset(w, 0, nw * 8);
    w[nw] = 0x5a5a5a5a5a5a5a5aULL;
    size_t at = st_bidx_at(idx, i);
    uint32_t sz = st_bidx_size(idx, i);
    int rc = at + sz <= len ? st_bidx_or_rows(idx + at, sz, n, w) : -1;
    assert_true(w[nw] == 0x5a5a5a5a5a5a5a5aULL);
    int64_t c = 0;
    for (size_t j = 0; j < nw; j++)
        c += __builtin_popcountll(w[j]);
    return rc < 0 ? -1 : c;
}

/* Random columns of every indexable type: each value's bitmap, read in
 * place a word at a time, is exactly the rows that hold it and what
 * CRoaring reads of it; absent values have none, and the index checks.
 * Blocks of up to 140,000 rows: arrays, runs and bitsets of rows, in one
 * roaring container or several. */
static void rows_of_every_value(void **state)
{
    (void)state;
    st_schema *s = parse("key k: u32; tagset b: bool index; tagset e: enum(x, y, z) index; "
                         "tagset i: i16 index; tagset c: char[3] index; tagset w: char[8] index");
    uint64_t rng = 7;
    for (int round = 0; round < 48; round++) {
        uint32_t n = 1 + (uint32_t)(xorshift(&rng) % (round % 8 == 7 ? 140000 : 3000));
        uint64_t *w = mem_alloc(((n + 63) / 64 + 1) * 8);
        for (uint32_t fi = 1; fi < s->nfields; fi++) {
            const st_field *f = &s->fields[fi];
            unsigned char *col = mem_alloc((size_t)n * f->width);
            uint32_t spread = 1 + (uint32_t)(xorshift(&rng) % 40);
            bool sorted = xorshift(&rng) % 3 == 0;  /* runs of rows */
            for (uint32_t r = 0; r < n; r++) {
                uint64_t v = sorted ? (uint64_t)r * spread / n : xorshift(&rng) % spread;
                if (f->type == ST_BOOL)
                    v &= 1;
                if (f->type == ST_ENUM)
                    v %= 3;
                if (f->type == ST_I16)
                    v = (uint64_t)(int64_t)((int16_t)v - 20);
                if (f->type == ST_CHAR && f->width == 8)
                    v *= UINT64_C(0x9e3779b97f4a7c15);  /* values ordered by every byte */
                memset(col + (size_t)r * f->width, 0, f->width);
                memcpy(col + (size_t)r * f->width, &v, f->width < 8 ? f->width : 8);
            }
            unsigned char *idx;
            size_t len;
            st_err err;
            assert_int_equal(st_bidx_build(f, col, n, &idx, &len, &err), 0);
            assert_int_equal(st_bidx_check(idx, len, n, false, &err), 0);
            uint64_t total = 0;
            for (uint32_t i = 0; i < st_bidx_nvalues(idx); i++) {
                uint64_t v = st_bidx_value(idx, i);
                assert_int_equal(st_bidx_find(idx, v), i);
                int64_t c = rows_at(idx, len, i, n, w);
                assert_true(c > 0);
                total += (uint64_t)c;
                load_once();
                roaring_bitmap_t *b = lib.roaring_bitmap_portable_deserialize_safe(
                    (const char *)idx + st_bidx_at(idx, i), st_bidx_size(idx, i));
                assert_non_null(b);
                assert_int_equal(lib.roaring_bitmap_get_cardinality(b), c);
                for (uint32_t r = 0; r < n; r++) {
                    bool in = (w[r / 64] >> (r % 64)) & 1;
                    assert_int_equal(in, st_bidx_key(f, col + (size_t)r * f->width) == v);
                    assert_int_equal(in, roaring_bitmap_contains(b, r));
                }
                roaring_bitmap_free(b);
            }
            assert_int_equal(total, n);
            assert_int_equal(st_bidx_find(idx, 0xdeadbeef), st_bidx_nvalues(idx));
            mem_free(idx, len);
            mem_free(col, (size_t)n * f->width);
        }
        mem_free(w, ((n + 63) / 64 + 1) * 8);
    }
    st_schema_free(s);
}

/* Damage to the structure is refused: counts, sizes, order, rows past
 * the block, rows missing, bytes left over. */
static void damage_is_refused(void **state)
{
    (void)state;
    st_schema *s = parse("key k: u32; tagset e: u8 index");
    const st_field *f = &s->fields[1];
    unsigned char col[100];
    for (int r = 0; r < 100; r++)
        col[r] = (unsigned char)(r % 4);
    unsigned char *idx;
    size_t len;
    st_err err;
    assert_int_equal(st_bidx_build(f, col, 100, &idx, &len, &err), 0);
    assert_int_equal(st_bidx_check(idx, len, 100, false, &err), 0);
    assert_int_equal(st_bidx_check(idx, len, 99, false, &err), -1);      /* a row past the block */
    assert_int_equal(st_bidx_check(idx, len, 101, false, &err), -1);     /* a row missing */
    assert_int_equal(st_bidx_check(idx, len - 1, 100, false, &err), -1); /* truncated */
    assert_int_equal(st_bidx_check(idx, 3, 100, false, &err), -1);
    unsigned char *copy = mem_alloc(len + 1);
    memcpy(copy, idx, len);
    copy[len] = 0;
    assert_int_equal(st_bidx_check(copy, len + 1, 100, false, &err), -1); /* bytes after */
    assert_non_null(strstr(err.msg, "after its bitmaps"));
    memcpy(copy, idx, len);
    st_put64(copy + 4 + 12, 0);     /* the second value no longer above the first */
    assert_int_equal(st_bidx_check(copy, len, 100, false, &err), -1);
    assert_non_null(strstr(err.msg, "out of order"));
    memcpy(copy, idx, len);
    st_put32(copy, 1000);           /* more values than rows */
    assert_int_equal(st_bidx_check(copy, len, 100, false, &err), -1);
    memcpy(copy, idx, len);
    for (size_t i = 4 + 12 * 4; i < len; i++) {    /* every byte of the bitmaps */
        copy[i] ^= 0x5a;
        int rc = st_bidx_check(copy, len, 100, false, &err);
        /* read in place: never a row past the block (rows_at's guard);
         * refused, or, where still well formed, each row once */
        uint64_t total = 0, w[3];
        bool refused = false;
        for (uint32_t v = 0; v < st_bidx_nvalues(copy); v++) {
            int64_t c = rows_at(copy, len, v, 100, w);
            refused |= c < 0;
            total += c < 0 ? 0 : (uint64_t)c;
        }
        /* verify's check reads them as a query does: what a query
         * refuses it refuses, and what it passes holds each row once */
        if (refused)
            assert_int_equal(rc, -1);
        if (rc == 0)
            assert_int_equal(total, 100);
        copy[i] ^= 0x5a;
    }
    mem_free(copy, len + 1);
    mem_free(idx, len);
    st_schema_free(s);
}

/* The bitmap of rows [a, e) (every step-th) of n, as an index holds it:
 * its bytes into *bm, its size returned. */
static uint32_t bitmap_of(const st_field *f, uint32_t n, uint32_t a, uint32_t e, uint32_t step,
                          unsigned char *bm, size_t cap)
{
    unsigned char col[1000];
    for (uint32_t r = 0; r < n; r++)
        col[r] = r >= a && r < e && (r - a) % step == 0 ? 0 : 1;
    unsigned char *idx;
    size_t len;
    st_err err;
    assert_int_equal(st_bidx_build(f, col, n, &idx, &len, &err), 0);
    uint32_t sz = st_bidx_size(idx, 0);
    assert_true(st_bidx_value(idx, 0) == 0 && sz <= cap);
    memcpy(bm, idx + st_bidx_at(idx, 0), sz);
    mem_free(idx, len);
    return sz;
}

/* Two values whose bitmaps share rows are refused, whether the rows they
 * hold add up to more than the block's, or to exactly its count with rows
 * missing: of runs and of arrays of rows. */
static void shared_rows_are_refused(void **state)
{
    (void)state;
    st_schema *s = parse("key k: u32; tagset e: u8 index");
    const st_field *f = &s->fields[1];
    const uint32_t n = 1000;
    /* rows of the first value, then the second: [a, e) every step-th */
    static const uint32_t cases[][6] = {
        {0, 600, 1, 400, 1000, 1},  /* runs: 200 rows in both, 1200 in all */
        {0, 600, 1, 400, 800, 1},   /* runs: 200 in both, 800..999 in none: 1000 in all */
        {0, 1000, 2, 0, 1000, 2},   /* arrays: the same rows twice, the odd ones in none */
        {0, 1000, 2, 500, 1000, 1}, /* an array and a run: 250 in both, 250 in none */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        unsigned char idx[4 + 24 + 2 * 4096];
        uint32_t s0 = bitmap_of(f, n, cases[c][0], cases[c][1], cases[c][2], idx + 28, 4096);
        uint32_t s1 = bitmap_of(f, n, cases[c][3], cases[c][4], cases[c][5], idx + 28 + s0, 4096);
        st_put32(idx, 2);
        st_put64(idx + 4, 3);
        st_put32(idx + 12, s0);
        st_put64(idx + 16, 7);
        st_put32(idx + 24, s1);
        st_err err;
        assert_int_equal(st_bidx_check(idx, 28 + s0 + s1, n, true, &err), 0); /* the directory holds */
        assert_int_equal(st_bidx_check(idx, 28 + s0 + s1, n, false, &err), -1);
        assert_non_null(strstr(err.msg, "index bitmap 1 is of rows another value's bitmap holds"));
    }
    st_schema_free(s);
}

/* The schema says which fields have an index, and refuses one elsewhere. */
/* st_bidx_count of random bitsets over random [lo, hi), word edges and
 * empty ranges included, is the rows a bit-by-bit walk finds there. */
static void counts_rows_in_ranges(void **state)
{
    (void)state;
    uint64_t seed = 0x2545f4914f6cdd1dULL, w[8];
    for (int round = 0; round < 20000; round++) {
        for (int j = 0; j < 8; j++) {
            uint64_t x = xorshift(&seed);
            w[j] = round % 3 == 0 ? x : round % 3 == 1 ? x & xorshift(&seed) : ~UINT64_C(0);
        }
        uint32_t lo = (uint32_t)(xorshift(&seed) % 513), hi = (uint32_t)(xorshift(&seed) % 513);
        if (round % 7 == 0)
            hi = (lo | 63) + 1 < 512 ? (lo | 63) + 1 : 512;   /* to a word's end */
        uint64_t want = 0;
        for (uint32_t i = lo; i < hi; i++)
            want += w[i >> 6] >> (i & 63) & 1;
        assert_int_equal(st_bidx_count(w, lo, hi), want);
    }
}

static void schema_declares_indexes(void **state)
{
    (void)state;
    st_schema *s = parse("key run: u32 ; key ev: u64; tagset ok: bool index; tagset x: f64; "
                         "tagset k: enum(a, b) index");
    assert_int_equal(s->nindex, 2);
    assert_int_equal(st_schema_index_of(s, 2), 0);
    assert_int_equal(st_schema_index_of(s, 3), -1);
    assert_int_equal(st_schema_index_of(s, 4), 1);
    size_t n;
    char *text = st_schema_format(s, &n);
    assert_string_equal(text, "key run: u32\nkey ev: u64\ntagset ok: bool index\ntagset x: f64\n"
                              "tagset k: enum(a, b) index\n");
    st_schema *again = st_schema_parse(text, n, 1, 1, &(st_err){0});
    assert_true(st_schema_equal(s, again));
    st_schema *plain = parse("key run: u32 ; key ev: u64; tagset ok: bool; tagset x: f64; "
                             "tagset k: enum(a, b) index");
    assert_false(st_schema_equal(s, plain));
    st_schema_free(plain);
    st_schema_free(again);
    mem_free(text, n + 1);
    st_schema_free(s);
    /* (a tag field's index is an order index: test_oindex) */
    static const char *const bad[] = {"key k: u32; tagset x: f64 index",
                                      "key k: u32; tagset c: char[9] index", "key k: u32; tagset v: u32 index"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        st_err err;
        assert_null(st_schema_parse(bad[i], strlen(bad[i]), 1, 1, &err));
        assert_non_null(strstr(err.msg, "an index needs a key or tagset field of type"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_of_every_value),
        cmocka_unit_test(damage_is_refused),
        cmocka_unit_test(shared_rows_are_refused),
        cmocka_unit_test(counts_rows_in_ranges),
        cmocka_unit_test(schema_declares_indexes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
