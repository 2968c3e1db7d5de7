/* test_proj: a tag field's projection: the schema declares it (with or
 * without a list of the fields it carries) on an integer or time tag
 * field only, once, and prints it back; its schema and columns; a file
 * written with one carries beside it exactly its tags in the field's order
 * (by st_writer_append and st_writer_append_batch alike), named by the
 * file's footer checksum, so a projection of another file, or of the same
 * file rewritten, is refused; verify passes on it and names it when
 * damaged or holding other tags; a file written without one says so;
 * version 5 in the header. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "store/bytes.h"
#include "store/mem.h"
#include "store/proj.h"
#include "store/schema.h"
#include "store/tagfile.h"
#include "tests/unit/gen_store.h"
#include "tests/unit/xorshift.h"

static st_schema *parse(const char *t)
{
    st_err err;
    st_schema *s = st_schema_parse(t, strlen(t), 1, 1, &err);
    if (!s)
        fail_msg("%s: %s", t, err.msg);
    return s;
}

static void refused(const char *t, const char *why)
{
    st_err err;
    assert_null(st_schema_parse(t, strlen(t), 1, 1, &err));
    if (!strstr(err.msg, why))
        fail_msg("%s: %s (wanted %s)", t, err.msg, why);
}

static void schema_declares_projections(void **state)
{
    (void)state;
    st_schema *s = parse("key k: u32; tag t: time index projection(v); tag v: u16; tag w: u8");
    int f = st_schema_proj(s);
    assert_int_equal(f, 1);
    assert_true(s->fields[1].index && s->fields[1].carried && s->fields[2].carried);
    assert_false(s->fields[3].carried);
    size_t len;
    char *text = st_schema_format(s, &len);
    assert_non_null(strstr(text, "tag t: time index projection(v)\n"));
    st_schema *back = parse(text);
    assert_true(st_schema_equal(s, back));
    mem_free(text, len + 1);
    st_err err;
    st_schema *ps = st_proj_schema(s, &err);
    assert_non_null(ps);
    assert_int_equal(ps->nfields, 2);
    assert_int_equal(ps->nkeys, 1);
    assert_string_equal(ps->fields[0].name, "t");
    assert_string_equal(ps->fields[1].name, "v");
    assert_int_equal(st_proj_col(s, 1), 0);
    assert_int_equal(st_proj_col(s, 2), 1);
    assert_int_equal(st_proj_col(s, 3), UINT32_MAX);
    assert_int_equal(st_proj_col(s, 0), UINT32_MAX);
    st_schema_free(ps);
    st_schema_free(back);
    st_schema_free(s);

    /* without a list, every tag field; a list of every one prints as none */
    s = parse("key k: u32; tag a: u8; tag t: i64 projection(a, b); tag b: f64");
    text = st_schema_format(s, &len);
    assert_non_null(strstr(text, "tag t: i64 projection\n"));
    assert_int_equal(st_proj_col(s, 1), 1);
    assert_int_equal(st_proj_col(s, 2), 0);
    assert_int_equal(st_proj_col(s, 3), 2);
    mem_free(text, len + 1);
    st_schema_free(s);
    s = parse("key k: u32; tag t: u32 projection(); tag b: f64");
    text = st_schema_format(s, &len);
    assert_non_null(strstr(text, "tag t: u32 projection()\n"));
    mem_free(text, len + 1);
    st_schema_free(s);
    s = parse("key k: u32; tag t: u32");
    assert_int_equal(st_schema_proj(s), -1);
    assert_null(st_proj_schema(s, &err));
    st_schema_free(s);

    refused("key k: u32; tag s: enum(a, b) projection", "integer or time");
    refused("key k: u32; tag x: f64 projection", "integer or time");
    refused("key k: u32; tagset x: u32 projection", "integer or time");
    refused("key k: u32; tag a: u32 projection; tag b: u32 projection", "one projection at most");
    refused("key k: u32; tagset g: u8; tag a: u32 projection(g)", "'g' is not one");
    refused("key k: u32; tag a: u32 projection(z)", "'z' is not a field");
    refused("key k: u32; tag a: u32 projection(b; tag b: u8", "',' or ')'");
}

static void no_bad(void *ctx, const char *path, uint64_t block, const char *msg)
{
    (void)ctx, (void)block;
    fail_msg("%s: %s", path, msg);
}

static void count_bad(void *ctx, const char *path, uint64_t block, const char *msg)
{
    (void)block;
    if (strstr(path, ".proj") && strstr(msg, ".proj"))
        (*(int *)ctx)++;
    else
        fail_msg("not the projection: %s: %s", path, msg);
}

/* The message of the one bad block or file verify names (ctx: a char[512]). */
static void note_msg(void *ctx, const char *path, uint64_t block, const char *msg)
{
    (void)block;
    if (!strstr(path, ".proj") || *(char *)ctx)
        fail_msg("not the projection alone: %s: %s", path, msg);
    snprintf(ctx, 512, "%s", msg);
}

/* n tagsets of 0 to 3 tags (t: a time, v: a u16 from t, w: a byte) into
 * path, through a batch copy (append_batch) when batch is set. */
static void write_file(const char *path, const st_schema *s, uint32_t n, uint64_t seed, bool batch)
{
    st_write_opts o;
    st_write_opts_default(&o);
    o.block_size = 4096;
    o.checked = batch;
    st_err err;
    st_writer *w = st_writer_create(path, s, &o, &err);
    assert_non_null(w);
    if (batch) {    /* copy a plain file written first */
        char plain[600];
        snprintf(plain, sizeof plain, "%s.src", path);
        st_schema *ps = parse("key k: u32; tag t: time index projection(v); tag v: u16; tag w: u8");
        write_file(plain, ps, n, seed, false);
        st_reader *r = st_reader_open(plain, NULL, &err);
        assert_non_null(r);
        const st_batch *b;
        while (st_reader_next(r, &b, &err) == 1)
            assert_int_equal(st_writer_append_batch(w, b, 0, b->ntagsets, &err), 0);
        st_reader_close(r);
        st_schema_free(ps);
        assert_int_equal(st_writer_commit(w, &err), 0);
        return;
    }
    uint64_t rng = seed;
    for (uint32_t k = 0; k < n; k++) {
        unsigned char row[4], tags[3 * 11];
        uint32_t nt = (uint32_t)(xorshift(&rng) % 4);
        st_put32(row, k);
        for (uint32_t j = 0; j < nt; j++) {
            uint64_t t = 1764547200 + xorshift(&rng) % 86400;
            st_put64(tags + 11 * j, t);
            st_put16(tags + 11 * j + 8, (uint16_t)(t % 1000));
            tags[11 * j + 10] = (unsigned char)j;
        }
        assert_int_equal(st_writer_append(w, row, tags, nt, &err), 0);
    }
    assert_int_equal(st_writer_commit(w, &err), 0);
}

/* The projection holds every tag of the file, (t, v) as the file has
 * them, in t's order. */
static void check_projection(const char *path, const st_schema *s, uint32_t version)
{
    st_err err;
    st_reader *r = st_reader_open(path, NULL, &err);
    assert_non_null(r);
    st_file_info info;
    st_reader_info(r, &info);
    assert_int_equal(info.version, version);
    assert_true(info.projected);
    uint64_t want = 0, got = 0;
    const st_batch *b;
    while (st_reader_next(r, &b, &err) == 1)
        for (uint32_t i = 0; i < b->ntags; i++)
            want += st_get64((const unsigned char *)b->cols[1] + 8 * (size_t)i) * 65537 +
                    st_get16((const unsigned char *)b->cols[2] + 2 * (size_t)i);
    st_reader *pr = st_proj_open(path, s, &info, NULL, &err);
    assert_non_null(pr);
    st_reader_close(r);
    uint64_t n = 0, last = 0;
    while (st_reader_next(pr, &b, &err) == 1)
        for (uint32_t i = 0; i < b->ntagsets; i++, n++) {
            uint64_t t = st_get64((const unsigned char *)b->cols[0] + 8 * (size_t)i);
            assert_true(t >= last);
            last = t;
            got += t * 65537 + st_get16((const unsigned char *)b->cols[1] + 2 * (size_t)i);
        }
    st_reader_close(pr);
    assert_int_equal(n, info.ntags);
    assert_true(n > 0);
    assert_int_equal(got, want);
}

static void files_carry_their_projection(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("proj");
    char a[400], b[400], pa[420], pb[420];
    snprintf(a, sizeof a, "%s/a.ts", dir);
    snprintf(b, sizeof b, "%s/b.ts", dir);
    snprintf(pa, sizeof pa, "%s.proj", a);
    snprintf(pb, sizeof pb, "%s.proj", b);
    st_schema *s = parse("key k: u32; tag t: time index projection(v); tag v: u16; tag w: u8");
    write_file(a, s, 3000, 5, false);
    setenv("COMB_CODEC", "lz4", 1);     /* LZ4 only: version 5, as before RLE and FOR */
    write_file(b, s, 2000, 6, true);
    unsetenv("COMB_CODEC");
    check_projection(a, s, ST_FORMAT_VERSION);
    check_projection(b, s, 5);
    st_err err;
    assert_int_equal(st_reader_verify(a, NULL, no_bad, NULL, &err), 0);
    assert_int_equal(st_reader_verify(b, NULL, no_bad, NULL, &err), 0);

    /* another file's projection is refused, by open and verify */
    size_t len;
    unsigned char *other = gen_slurp(pb, &len);
    FILE *fp = fopen(pa, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(other, 1, len, fp), len);
    fclose(fp);
    mem_free(other, len + 1);
    st_reader *r = st_reader_open(a, NULL, &err);
    st_file_info info;
    st_reader_info(r, &info);
    assert_null(st_proj_open(a, s, &info, NULL, &err));
    assert_non_null(strstr(err.msg, "not the projection of"));
    int nbad = 0;
    assert_int_equal(st_reader_verify(a, NULL, count_bad, &nbad, &err), 1);
    assert_int_equal(nbad, 1);
    st_reader_close(r);

    /* rewritten (other tags): the old projection went with the commit's */
    write_file(a, s, 2500, 7, false);
    check_projection(a, s, ST_FORMAT_VERSION);

    /* a damaged byte of a block: verify names the projection's block */
    unsigned char *bytes = gen_slurp(pa, &len);
    bytes[len / 2] ^= 0x40;
    fp = fopen(pa, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(bytes, 1, len, fp), len);
    fclose(fp);
    mem_free(bytes, len + 1);
    nbad = 0;
    assert_int_equal(st_reader_verify(a, NULL, count_bad, &nbad, &err), 1);
    assert_int_equal(nbad, 1);

    /* the file's label and count, other tags (zeros): the blocks hold,
     * the digest of what verify read of them tells */
    r = st_reader_open(a, NULL, &err);
    assert_non_null(r);
    st_reader_info(r, &info);
    st_reader_close(r);
    st_proj *p = st_proj_new(s, &err);
    unsigned char *zeros = mem_calloc(info.ntags, s->tag_size);
    assert_true(p && zeros && info.ntags);
    assert_int_equal(st_proj_add(p, zeros, (uint32_t)info.ntags, &err), 0);
    st_write_opts o;
    st_write_opts_default(&o);
    o.block_size = 4096;
    assert_int_equal(st_proj_write(p, a, info.id, &o, &err), 0);
    st_proj_free(p);
    mem_free(zeros, info.ntags * s->tag_size);
    char msg[512] = "";
    assert_int_equal(st_reader_verify(a, NULL, note_msg, msg, &err), 1);
    assert_non_null(strstr(msg, ".proj: holds other tags than its file's"));

    /* missing */
    unlink(pa);
    nbad = 0;
    assert_int_equal(st_reader_verify(a, NULL, count_bad, &nbad, &err), 1);

    /* written without (a store's dels): flagged, verify asks for none */
    st_write_opts_default(&o);
    o.no_projection = true;
    st_writer *w = st_writer_create(a, s, &o, &err);
    unsigned char row[4] = {1, 0, 0, 0}, tag[11] = {0};
    assert_int_equal(st_writer_append(w, row, tag, 1, &err), 0);
    assert_int_equal(st_writer_commit(w, &err), 0);
    assert_int_equal(access(pa, F_OK), -1);
    r = st_reader_open(a, NULL, &err);
    st_reader_info(r, &info);
    assert_false(info.projected);
    assert_int_equal(info.version, ST_FORMAT_VERSION);
    assert_null(st_proj_open(a, s, &info, NULL, &err));
    assert_non_null(strstr(err.msg, "without its projection"));
    st_reader_close(r);
    assert_int_equal(st_reader_verify(a, NULL, no_bad, NULL, &err), 0);
    st_schema_free(s);
    gen_rmdir(dir);
}

/* Rewrites the header of the file at path with version (0: as it was) and
 * flags, its checksum remade; returns the version it had. */
static uint32_t rewrite_header(const char *path, uint32_t version, uint32_t flags)
{
    size_t len;
    unsigned char *f = gen_slurp(path, &len);
    size_t hsize = 32 + st_get32(f + 20) + st_get32(f + 24) + 8;
    uint32_t was = st_get32(f + 8);
    st_put32(f + 8, version ? version : was);
    st_put32(f + 12, flags);
    st_put64(f + hsize - 8, XXH3_64bits(f, hsize - 8));
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(f, 1, len, fp), len);
    fclose(fp);
    mem_free(f, len + 1);
    return was;
}

/* Version 5 and its flag: a header saying 4 is refused (the flag is not
 * 4's; without it, a projection's schema is not 4's either). */
static void older_versions_refused(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("projv");
    char path[400];
    snprintf(path, sizeof path, "%s/v.ts", dir);
    st_schema *s = parse("key k: u32; tag t: time projection; tag v: u16; tag w: u8");
    write_file(path, s, 200, 9, false);
    st_err err;
    for (int flag = 1; flag >= 0; flag--) {
        assert_int_equal(rewrite_header(path, 4, (uint32_t)flag), flag ? ST_FORMAT_VERSION : 4);
        assert_null(st_reader_open(path, NULL, &err));
        assert_non_null(strstr(err.msg, flag ? "flags 00000001" : "a projection in a file of format version 4"));
    }
    st_schema_free(s);
    gen_rmdir(dir);
}

/* The header's projection flag on a file whose schema declares none (a
 * writer never sets it so; a hostile or damaged header, its checksum
 * remade) is refused when the file opens: verify took the flag's word and
 * summed the file's tag rows as a projection's rows of every field, reading
 * its tagset columns as far as its tag count, past their end. */
static void flag_without_projection_refused(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("projf");
    char path[400];
    snprintf(path, sizeof path, "%s/f.ts", dir);
    st_schema *s = parse("key k: u32; tag t: time; tag v: u16; tag w: u8");
    write_file(path, s, 200, 5, false);    /* 1.5 tags a tagset: more tags than tagsets */
    rewrite_header(path, 0, 1);
    st_err err = {0};
    assert_null(st_reader_open(path, NULL, &err));
    assert_non_null(strstr(err.msg, "f.ts: "));
    assert_non_null(strstr(err.msg, "a projection its schema does not declare"));
    assert_int_equal(st_reader_verify(path, NULL, no_bad, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "a projection its schema does not declare"));
    st_schema_free(s);
    gen_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(schema_declares_projections),
        cmocka_unit_test(files_carry_their_projection),
        cmocka_unit_test(older_versions_refused),
        cmocka_unit_test(flag_without_projection_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
