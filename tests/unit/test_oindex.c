/* test_oindex: a block's order index of a tag field sorts its rows by the
 * field's value (ties by row), a range of values is exactly the run two
 * searches find, damage to its structure is refused, the schema declares
 * it on integer and time tag fields only, and a file holding one is format
 * version 4, verified, and refused under an older version's header. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "store/bytes.h"
#include "store/mem.h"
#include "store/oindex.h"
#include "store/schema.h"
#include "store/tagfile.h"
#include "tests/unit/gen_store.h"
#include "tests/unit/xorshift.h"

static st_schema *parse(const char *t)
{
    st_err err;
    st_schema *s = st_schema_parse(t, strlen(t), 1, 1, &err);
    assert_non_null(s);
    return s;
}

/* A column of n random values of field f, spread over about spread values. */
static unsigned char *random_col(const st_field *f, uint32_t n, uint64_t spread, uint64_t *rng)
{
    unsigned char *col = mem_alloc((size_t)n * f->width);
    for (uint32_t r = 0; r < n; r++) {
        uint64_t v = xorshift(rng) % spread;
        if (f->type == ST_I16 || f->type == ST_I64 || f->type == ST_TIME)
            v = (uint64_t)((int64_t)v - (int64_t)(spread / 2));
        memcpy(col + (size_t)r * f->width, &v, f->width);
    }
    return col;
}

/* Random columns of every type an order index takes: the order is by
 * value then row, and every range [lo, hi] (bounds held or not, empty,
 * whole) is exactly the run st_oidx_range gives. */
static void order_and_ranges(void **state)
{
    (void)state;
    st_schema *s = parse("key k: u32; tag a: u8 index; tag b: i16 index; tag c: u32 index; "
                         "tag d: i64 index; tag e: time index; tag f: u64 index");
    uint64_t rng = 11;
    for (int round = 0; round < 30; round++) {
        uint32_t n = round == 0 ? 70000 : round == 1 ? 0 : 1 + (uint32_t)(xorshift(&rng) % 3000);
        for (uint32_t fi = 1; fi < s->nfields; fi++) {
            const st_field *f = &s->fields[fi];
            uint64_t spread = 1 + xorshift(&rng) % (f->width == 1 ? 256 : 5000);
            unsigned char *col = random_col(f, n, spread, &rng), *idx;
            size_t len;
            st_err err;
            assert_int_equal(st_oidx_build(f, col, n, &idx, &len, &err), 0);
            assert_int_equal(st_oidx_check(idx, len, n, false, &err), 0);
            for (uint32_t i = 1; i < n; i++) {
                uint32_t p = st_oidx_row(idx, i - 1), q = st_oidx_row(idx, i);
                uint64_t vp = st_field_order(f, col + (size_t)p * f->width);
                uint64_t vq = st_field_order(f, col + (size_t)q * f->width);
                assert_true(vp < vq || (vp == vq && p < q));
            }
            for (int t = 0; t < 50; t++) {
                /* bounds: a value some row holds, or any */
                uint64_t lo = n && t % 2 ? st_field_order(f, col + (xorshift(&rng) % n) * f->width)
                                         : xorshift(&rng);
                uint64_t hi = t % 5 == 0 ? lo : t % 7 == 0 ? UINT64_MAX : lo + xorshift(&rng) % 4000;
                if (t % 11 == 0)
                    lo = 0;
                if (hi < lo && t % 13)
                    hi = UINT64_MAX;
                uint32_t from, to, want = 0;
                st_oidx_range(f, col, idx, lo, hi, &from, &to);
                for (uint32_t r = 0; r < n; r++) {
                    uint64_t v = st_field_order(f, col + (size_t)r * f->width);
                    want += v >= lo && v <= hi;
                }
                assert_int_equal(to - from, want);
                for (uint32_t i = from; i < to; i++) {
                    uint64_t v = st_field_order(f, col + (size_t)st_oidx_row(idx, i) * f->width);
                    assert_true(v >= lo && v <= hi);
                }
            }
            mem_free(idx, len);
            mem_free(col, (size_t)n * f->width);
        }
    }
    st_schema_free(s);
}

/* A wrong count, width or size, a row twice or past the tags: refused. */
static void damage_is_refused(void **state)
{
    (void)state;
    st_schema *s = parse("key k: u32; tag t: time index");
    const st_field *f = &s->fields[1];
    uint64_t rng = 3;
    unsigned char *col = random_col(f, 500, 100, &rng), *idx;
    size_t len;
    st_err err;
    assert_int_equal(st_oidx_build(f, col, 500, &idx, &len, &err), 0);
    assert_int_equal(st_oidx_check(idx, len, 500, false, &err), 0);
    assert_int_equal(st_oidx_check(idx, len, 499, true, &err), -1);
    assert_non_null(strstr(err.msg, "not of the block's 499 tags"));
    assert_int_equal(st_oidx_check(idx, len - 1, 500, true, &err), -1);
    assert_non_null(strstr(err.msg, "bad size"));
    st_put32(idx + 4, 4);
    assert_int_equal(st_oidx_check(idx, len, 500, true, &err), -1);
    st_put32(idx + 4, 2);
    unsigned char keep[2];
    memcpy(keep, idx + 8, 2);
    memcpy(idx + 8, idx + 10, 2);   /* place 0 holds place 1's row too */
    assert_int_equal(st_oidx_check(idx, len, 500, true, &err), 0);  /* the size is right */
    assert_int_equal(st_oidx_check(idx, len, 500, false, &err), -1);
    assert_non_null(strstr(err.msg, "twice"));
    idx[8] = 0xff;
    idx[9] = 0x7f;
    assert_int_equal(st_oidx_check(idx, len, 500, false, &err), -1);
    assert_non_null(strstr(err.msg, "past the block's tags"));
    memcpy(idx + 8, keep, 2);
    assert_int_equal(st_oidx_check(idx, len, 500, false, &err), 0);
    mem_free(idx, len);
    mem_free(col, 500 * f->width);
    st_schema_free(s);
}

/* Integer and time tag fields take an index; other tag fields do not. */
static void schema_declares_tag_indexes(void **state)
{
    (void)state;
    st_schema *s = parse("key k: u32; tagset e: enum(a, b) index; tag t: time index; tag u: u8");
    assert_int_equal(s->nindex, 2);
    assert_true(st_schema_tag_index(s));
    assert_int_equal(st_schema_index_of(s, 2), 1);
    st_schema_free(s);
    s = parse("key k: u32; tagset e: enum(a, b) index; tag u: u8");
    assert_false(st_schema_tag_index(s));
    st_schema_free(s);
    static const char *const bad[] = {"key k: u32; tag x: f64 index", "key k: u32; tag c: char[4] index",
                                      "key k: u32; tag e: enum(a, b) index", "key k: u32; tag b: bool index"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        st_err err;
        assert_null(st_schema_parse(bad[i], strlen(bad[i]), 1, 1, &err));
        assert_non_null(strstr(err.msg, "an index (an order index, for ranges) needs an integer or time field"));
    }
}

static void no_bad(void *ctx, const char *path, uint64_t block, const char *msg)
{
    (void)ctx;
    fail_msg("%s: block %llu: %s", path, (unsigned long long)block, msg);
}

/* A file with an order index: version 4, every block verified; the same
 * bytes under a version 3 header (its checksum right) are corrupt. */
static void files_of_version_4(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("oindex");
    char path[400];
    snprintf(path, sizeof path, "%s/t.ts", dir);
    st_schema *s = parse("key k: u32; tag t: time index; tag v: u16");
    st_write_opts o;
    st_write_opts_default(&o);
    o.block_size = 4096;
    o.light = false;    /* LZ4 only: what version 4 holds */
    st_err err;
    st_writer *w = st_writer_create(path, s, &o, &err);
    assert_non_null(w);
    uint64_t rng = 5;
    for (uint32_t k = 0; k < 3000; k++) {
        unsigned char row[4], tags[3 * 10];
        uint32_t nt = (uint32_t)(xorshift(&rng) % 4);
        st_put32(row, k);
        for (uint32_t j = 0; j < nt; j++) {
            st_put64(tags + 10 * j, 1764547200 + xorshift(&rng) % 86400);
            tags[10 * j + 8] = (unsigned char)j;
            tags[10 * j + 9] = 0;
        }
        assert_int_equal(st_writer_append(w, row, tags, nt, &err), 0);
    }
    assert_int_equal(st_writer_commit(w, &err), 0);
    st_reader *r = st_reader_open(path, NULL, &err);
    assert_non_null(r);
    st_file_info info;
    st_reader_info(r, &info);
    assert_int_equal(info.version, 4);
    assert_true(info.nblocks > 3);
    st_reader_close(r);
    assert_int_equal(st_reader_verify(path, NULL, no_bad, NULL, &err), 0);

    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    unsigned char head[4096];
    size_t n = fread(head, 1, sizeof head, fp);
    fclose(fp);
    size_t hsize = 32 + st_get32(head + 20) + st_get32(head + 24) + 8;
    assert_true(hsize <= n);
    st_put32(head + 8, 3);
    st_put64(head + hsize - 8, XXH3_64bits(head, hsize - 8));
    fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fwrite(head, 1, hsize, fp), hsize);
    fclose(fp);
    assert_null(st_reader_open(path, NULL, &err));
    assert_non_null(strstr(err.msg, "an indexed tag field in a file of format version 3 or older"));
    st_schema_free(s);
    gen_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(order_and_ranges),
        cmocka_unit_test(damage_is_refused),
        cmocka_unit_test(schema_declares_tag_indexes),
        cmocka_unit_test(files_of_version_4),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
