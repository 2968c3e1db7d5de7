/* test_tagfile: tagset files round-trip, skip, seek, and survive damage and faults. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "store/bytes.h"
#include "store/cache.h"
#include "store/mem.h"
#include "store/sysio.h"
#include "store/tagfile.h"
#include "tests/unit/gen_store.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", gen_tmpdir("tagfile"));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gen_rmdir(dir);
    return 0;
}

static const char *file(const char *name)
{
    static char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static st_schema *parse(const char *text)
{
    st_err err = {0};
    st_schema *s = st_schema_parse(text, strlen(text), 1, 1, &err);
    if (!s)
        fail_msg("%s", err.msg);
    return s;
}

static const char calls_text[] = "key onum: u64\nkey ts: time\ntagset state: enum(open, billed, closed)\n"
                                 "tag sys: enum(RICS, BILL, SWITCH)\ntag bsid: u16\ntag dnum: char[16]\n";

static st_write_opts opts(uint32_t block_size, st_codec codec)
{
    st_write_opts o;
    st_write_opts_default(&o);
    o.block_size = block_size;
    o.codec = codec;
    o.io.bufsize = 8192;
    return o;
}

/* Writes model t; returns 0 or -1 with err set (the writer cleaned up). */
static int write_model(const char *path, const st_schema *s, const gen_tagsets *t, const st_write_opts *o,
                       st_err *err)
{
    st_writer *w = st_writer_create(path, s, o, err);
    if (!w)
        return -1;
    for (uint32_t i = 0; i < t->n; i++) {
        if (st_writer_append(w, gen_row(s, t, i), gen_tags(s, t, i), gen_ntags(t, i), err) < 0) {
            st_writer_abort(w);
            return -1;
        }
    }
    assert_int_equal(st_writer_count(w), t->n);
    return st_writer_commit(w, err);
}

/* Reads the whole file back and compares it with the model. Returns blocks. */
static uint64_t check_model(const char *path, const st_schema *s, const gen_tagsets *t)
{
    st_err err = {0};
    st_reader *r = st_reader_open(path, NULL, &err);
    if (!r)
        fail_msg("%s", err.msg);
    assert_true(st_schema_equal(st_reader_schema(r), s));
    const st_batch *b;
    uint32_t at = 0;
    uint64_t blocks = 0;
    int rc;
    while ((rc = st_reader_next(r, &b, &err)) == 1) {
        assert_int_equal(b->block, blocks);
        at = gen_check_batch(st_reader_schema(r), t, at, b);
        blocks++;
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(at, t->n);
    st_file_info info;
    st_reader_info(r, &info);
    assert_int_equal(info.nblocks, blocks);
    assert_int_equal(info.ntagsets, t->n);
    assert_int_equal(info.ntags, t->tag_start[t->n]);
    st_reader_close(r);
    return blocks;
}

/* Blocks are filled greedily up to the block size; only a block of one
 * tagset may exceed it. */
static void check_block_sizes(const char *path, const st_schema *s, const gen_tagsets *t,
                              uint32_t block_size, uint64_t blocks)
{
    st_err err = {0};
    st_reader *r = st_reader_open(path, NULL, &err);
    assert_int_equal(st_reader_select(r, NULL, 0, &err), 0);
    const st_batch *b;
    uint32_t at = 0;
    uint64_t seen = 0;
    while (st_reader_next(r, &b, &err) == 1) {
        uint64_t raw = 0;
        for (uint32_t i = at; i < at + b->ntagsets; i++)
            raw += st_block_tagset_size(s, gen_ntags(t, i));
        at += b->ntagsets;
        assert_true(raw <= block_size || b->ntagsets == 1);
        if (at < t->n)
            assert_true(raw + st_block_tagset_size(s, gen_ntags(t, at)) > block_size);
        seen++;
    }
    assert_int_equal(seen, blocks);
    st_reader_close(r);
}

static void random_files_round_trip(void **state)
{
    (void)state;
    gen g = {21};
    for (int round = 0; round < 60; round++) {
        st_schema *s = gen_schema(&g, 20, round % 3);
        gen_tagsets t;
        gen_make_tagsets(&g, s, (uint32_t)gen_below(&g, 3000), round % 4 == 0 ? 300 : 10, 1, &t);
        st_write_opts o = opts(4096 << gen_below(&g, 4), (st_codec)(round % 3));
        st_err err = {0};
        if (write_model(file("rt"), s, &t, &o, &err) < 0)
            fail_msg("%s", err.msg);
        uint64_t blocks = check_model(file("rt"), s, &t);
        check_block_sizes(file("rt"), s, &t, o.block_size, blocks);
        gen_free_tagsets(s, &t);
        st_schema_free(s);
    }
    assert_int_equal(gen_count_temps(dir), 0);
}

/* A reader given the schema its file's header holds uses that schema (not
 * a parse of its own) and reads the same rows; given another, it parses
 * the header's. */
static void a_known_schema_is_used_when_the_header_matches(void **state)
{
    (void)state;
    gen g = {5};
    st_schema *s = parse(calls_text), *other = parse("key onum: u64\ntagset dur: u32\n");
    gen_tagsets t;
    gen_make_tagsets(&g, s, 500, 5, 1, &t);
    st_write_opts o = opts(4096, ST_CODEC_LZ4);
    st_err err = {0};
    if (write_model(file("known"), s, &t, &o, &err) < 0)
        fail_msg("%s", err.msg);
    size_t n, on;
    char *text = st_schema_format(s, &n), *otext = st_schema_format(other, &on);
    st_known_schema known = {s, text, n}, wrong = {other, otext, on};
    for (int k = 0; k < 2; k++) {
        st_reader *r = st_reader_open_known(file("known"), NULL, k ? &wrong : &known, &err);
        if (!r)
            fail_msg("%s", err.msg);
        if (k)
            assert_ptr_not_equal(st_reader_schema(r), other);
        else
            assert_ptr_equal(st_reader_schema(r), s);
        assert_true(st_schema_equal(st_reader_schema(r), s));
        const st_batch *b;
        uint32_t at = 0;
        int rc;
        while ((rc = st_reader_next(r, &b, &err)) == 1)
            at = gen_check_batch(st_reader_schema(r), &t, at, b);
        assert_int_equal(rc, 0);
        assert_int_equal(at, t.n);
        st_reader_close(r);
    }
    mem_free(text, n + 1);
    mem_free(otext, on + 1);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
    st_schema_free(other);
}

static void empty_file_and_label(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen_tagsets t;
    gen g = {1};
    gen_make_tagsets(&g, s, 0, 0, 1, &t);
    st_write_opts o = opts(ST_BLOCK_DEFAULT, ST_CODEC_LZ4);
    o.label = "cycle 2026-12-02";
    st_err err = {0};
    assert_int_equal(write_model(file("empty"), s, &t, &o, &err), 0);
    assert_int_equal(check_model(file("empty"), s, &t), 0);
    st_reader *r = st_reader_open(file("empty"), NULL, &err);
    assert_string_equal(st_reader_label(r), "cycle 2026-12-02");
    st_file_info info;
    st_reader_info(r, &info);
    assert_int_equal(info.version, ST_FORMAT_VERSION);  /* may hold RLE or FOR columns: 6 */
    assert_int_equal(info.block_size, ST_BLOCK_DEFAULT);
    assert_int_equal(info.codec, ST_CODEC_LZ4);
    st_reader_close(r);
    o.light = false;    /* LZ4 only (COMB_CODEC=lz4), no indexes: version 2 */
    assert_int_equal(write_model(file("empty"), s, &t, &o, &err), 0);
    r = st_reader_open(file("empty"), NULL, &err);
    st_reader_info(r, &info);
    assert_int_equal(info.version, ST_FORMAT_VERSION_PLAIN);
    st_reader_close(r);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* COMB_CODEC: unset or empty, columns by RLE or FOR where smaller (version
 * 6); lz4, LZ4 only (here version 2, as before). Any other value, a typo or
 * a codec it does not name, is refused with its name and nothing written,
 * where it was taken for the default: version 6 files, unasked, that an
 * older comb does not read. */
static void codec_env_is_checked(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen_tagsets t;
    gen g = {21};
    gen_make_tagsets(&g, s, 200, 3, 1, &t);
    const struct {
        const char *value;
        uint32_t version;   /* 0: refused */
    } cases[] = {{NULL, ST_FORMAT_VERSION}, {"", ST_FORMAT_VERSION}, {"lz4", ST_FORMAT_VERSION_PLAIN},
                 {"LZ4", 0}, {"lz4hc", 0}, {"none", 0}, {"rle", 0}, {"lz4 ", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].value)
            setenv("COMB_CODEC", cases[i].value, 1);
        else
            unsetenv("COMB_CODEC");
        st_write_opts o = opts(4096, ST_CODEC_LZ4);
        st_err err = {0};
        unlink(file("env"));
        int rc = write_model(file("env"), s, &t, &o, &err);
        unsetenv("COMB_CODEC");
        if (!cases[i].version) {
            assert_int_equal(rc, -1);
            assert_int_equal(err.code, ST_EINPUT);
            char want[64];
            snprintf(want, sizeof want, "COMB_CODEC=%s:", cases[i].value);
            assert_non_null(strstr(err.msg, want));
            assert_int_equal(access(file("env"), F_OK), -1);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_true(check_model(file("env"), s, &t) > 0);
        st_reader *r = st_reader_open(file("env"), NULL, &err);
        assert_non_null(r);
        st_file_info info;
        st_reader_info(r, &info);
        assert_int_equal(info.version, cases[i].version);
        st_reader_close(r);
    }
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* The longest schemas the limits allow still travel in the header. */
static void huge_schema_travels_in_the_header(void **state)
{
    (void)state;
    size_t cap = 2 << 20, n = 0;
    char *text = mem_alloc(cap);
    n += (size_t)snprintf(text + n, cap - n, "key k: u32\n");
    for (int f = 0; f < 80; f++) {
        n += (size_t)snprintf(text + n, cap - n, "tagset e%d: enum(", f);
        for (int k = 0; k < 255; k++)
            n += (size_t)snprintf(text + n, cap - n, "%s%.58s%03d", k ? ", " : "",
                                  "symbol_with_a_long_name_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", k);
        n += (size_t)snprintf(text + n, cap - n, ")\n");
    }
    assert_true(n > (1 << 20));
    st_schema *s = parse(text);
    gen_tagsets t;
    gen g = {13};
    gen_make_tagsets(&g, s, 10, 0, 1, &t);
    st_write_opts o = opts(ST_BLOCK_DEFAULT, ST_CODEC_LZ4);
    st_err err = {0};
    assert_int_equal(write_model(file("huge"), s, &t, &o, &err), 0);
    check_model(file("huge"), s, &t);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
    mem_free(text, cap);
}

/* A tagset larger than the block size gets a block of its own. */
static void oversized_tagset_gets_its_own_block(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen g = {2};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 5, 3, 1, &t);
    /* The same rows with 20000 tags (380 KB) on tagset 2. */
    uint32_t counts[5] = {1, 0, 20000, 2, 0};
    gen_tagsets big;
    big.n = 5;
    big.rows = mem_alloc(5 * s->row_size + 1);
    big.tag_start = mem_alloc(6 * sizeof *big.tag_start);
    memcpy(big.rows, t.rows, 5 * s->row_size);
    big.tag_start[0] = 0;
    for (int i = 0; i < 5; i++)
        big.tag_start[i + 1] = big.tag_start[i] + counts[i];
    big.tags = mem_alloc(big.tag_start[5] * s->tag_size + 1);
    for (uint64_t j = 0; j < big.tag_start[5]; j++)
        gen_fields(&g, s, s->nrow, s->nfields, big.tags + j * s->tag_size);
    st_write_opts o = opts(4096, ST_CODEC_LZ4);
    st_err err = {0};
    assert_int_equal(write_model(file("big"), s, &big, &o, &err), 0);
    assert_int_equal(check_model(file("big"), s, &big), 3);
    gen_free_tagsets(s, &big);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

static void wide_schema_without_tags(void **state)
{
    (void)state;
    char text[16384];
    size_t n = (size_t)snprintf(text, sizeof text, "key run: u32\nkey event: u64\n");
    for (int i = 0; i < 200; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "tagset a%d: %s\n", i,
                              i % 4 == 0 ? "f32" : i % 4 == 1 ? "i16" : i % 4 == 2 ? "bool" : "char[6]");
    st_schema *s = parse(text);
    gen g = {3};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 2000, 50, 1, &t);
    assert_int_equal(t.tag_start[t.n], 0);
    st_write_opts o = opts(64 << 10, ST_CODEC_LZ4);
    st_err err = {0};
    assert_int_equal(write_model(file("wide"), s, &t, &o, &err), 0);
    assert_true(check_model(file("wide"), s, &t) > 10);
    /* Two of the 202 columns. */
    st_reader *r = st_reader_open(file("wide"), NULL, &err);
    uint32_t cols[2] = {1, 150};
    assert_int_equal(st_reader_select(r, cols, 2, &err), 0);
    const st_batch *b;
    uint32_t at = 0;
    while (st_reader_next(r, &b, &err) == 1) {
        for (uint32_t c = 0; c < 202; c++)
            assert_true((b->cols[c] != NULL) == (c == 1 || c == 150));
        at = gen_check_batch(s, &t, at, b);
    }
    assert_int_equal(at, t.n);
    st_reader_close(r);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* Reads every block of r, checking the batches against t and that they show
 * exactly the columns in cols; the blocks served from the cache. */
static uint64_t read_showing(st_reader *r, const st_schema *s, const gen_tagsets *t,
                             const uint32_t *cols, uint32_t n)
{
    st_err err = {0};
    const st_batch *b;
    uint32_t at = 0;
    st_reader_rewind(r);
    while (st_reader_next(r, &b, &err) == 1) {
        for (uint32_t c = 0; c < st_schema_ncols(s); c++) {
            bool want = false;
            for (uint32_t i = 0; i < n; i++)
                want |= cols[i] == c;
            assert_true((b->cols[c] != NULL) == want);
        }
        at = gen_check_batch(s, t, at, b);
    }
    assert_int_equal(at, t->n);
    st_read_stats rs;
    st_reader_stats(r, &rs);
    return rs.blocks_cached;
}

/* A reader of a wide file through the cache shows the columns selected
 * last, read or cached, as a seek's key columns with them. */
static void cached_blocks_show_the_columns_selected(void **state)
{
    (void)state;
    char text[8192];
    size_t n = (size_t)snprintf(text, sizeof text, "key run: u32\nkey event: u64\n");
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "tagset a%d: %s\n", i, i % 2 ? "u16" : "char[3]");
    st_schema *s = parse(text);
    gen g = {5};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 1500, 50, 1, &t);
    st_write_opts o = opts(16 << 10, ST_CODEC_LZ4);
    st_err err = {0};
    assert_int_equal(write_model(file("wide-cached"), s, &t, &o, &err), 0);
    st_cache_set_limit(64 << 20);
    st_reader *r = st_reader_open(file("wide-cached"), NULL, &err);
    st_reader_set_cache(r, true);
    st_file_info info;
    st_reader_info(r, &info);
    assert_true(info.nblocks > 3);
    uint32_t one[2] = {1, 60}, two[3] = {0, 7, 101};
    assert_int_equal(st_reader_select(r, one, 2, &err), 0);
    assert_int_equal(read_showing(r, s, &t, one, 2), 0);            /* read, then cached */
    assert_int_equal(read_showing(r, s, &t, one, 2), info.nblocks);
    assert_int_equal(st_reader_select(r, two, 3, &err), 0);
    assert_int_equal(read_showing(r, s, &t, two, 3), 0);            /* 7 and 101 not cached */
    assert_int_equal(read_showing(r, s, &t, two, 3), info.nblocks);
    assert_int_equal(st_reader_select(r, one, 2, &err), 0);
    assert_int_equal(read_showing(r, s, &t, one, 2), info.nblocks);
    /* a seek's block shows the key columns too */
    unsigned char key[64];
    assert_true(s->key_size <= sizeof key);   /* a row begins with its key, as a key lies */
    memcpy(key, t.rows + (size_t)t.n / 2 * s->row_size, s->key_size);
    st_reader_rewind(r);
    st_reader_seek(r, key);
    const st_batch *b;
    assert_int_equal(st_reader_next(r, &b, &err), 1);
    for (uint32_t c = 0; c < st_schema_ncols(s); c++)
        assert_true((b->cols[c] != NULL) == (c < 2 || c == 60));
    st_reader_close(r);
    st_cache_set_limit(0);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

static void bad_input_is_refused_and_loses_nothing(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    st_err err = {0};
    st_write_opts o = opts(4096, ST_CODEC_LZ4);
    st_writer *w = st_writer_create(file("order"), s, &o, &err);
    unsigned char row[17] = {0}, tag[19] = {0};
    uint64_t onum = 7325551212;
    int64_t ts = 1796216700;
    memcpy(row, &onum, 8);
    memcpy(row + 8, &ts, 8);
    assert_int_equal(st_writer_append(w, row, tag, 1, &err), 0);
    assert_int_equal(st_writer_append(w, row, NULL, 0, &err), 0); /* equal keys are fine */
    onum--;
    memcpy(row, &onum, 8);
    assert_int_equal(st_writer_append(w, row, NULL, 0, &err), -1);
    assert_int_equal(err.code, ST_EINPUT);
    char want[600];
    snprintf(want, sizeof want, "%s: tagset 2: key (onum=7325551211, ts=2026-12-02T13:05:00Z) is out of "
             "order: it comes before the previous key (onum=7325551212, ts=2026-12-02T13:05:00Z)",
             file("order"));
    assert_string_equal(err.msg, want);
    onum += 2;
    memcpy(row, &onum, 8);
    row[16] = 3;
    assert_int_equal(st_writer_append(w, row, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "tagset 2: enum field 'state' holds 3 (it has 3 symbols)"));
    row[16] = 2;
    tag[0] = 9;
    assert_int_equal(st_writer_append(w, row, tag, 1, &err), -1);
    assert_non_null(strstr(err.msg, "enum field 'sys' holds 9 (it has 3 symbols) in tag 0"));
    tag[0] = 1;
    assert_int_equal(st_writer_append(w, row, tag, 60000000, &err), -1);
    assert_non_null(strstr(err.msg, "a tagset of 60000000 tags takes 1140000021 bytes, more than the limit"));
    assert_int_equal(st_writer_append(w, row, tag, 1, &err), 0);
    assert_int_equal(st_writer_count(w), 3);
    assert_int_equal(st_writer_commit(w, &err), 0);
    st_reader *r = st_reader_open(file("order"), NULL, &err);
    st_file_info info;
    st_reader_info(r, &info);
    assert_int_equal(info.ntagsets, 3);
    assert_int_equal(info.ntags, 2);
    st_reader_close(r);

    /* A writer told its values are checked (st_write_opts.checked) leaves
     * them alone, but still refuses keys out of order and oversized tagsets. */
    o.checked = true;
    w = st_writer_create(file("checked"), s, &o, &err);
    row[16] = 3;
    assert_int_equal(st_writer_append(w, row, NULL, 0, &err), 0);
    onum--;
    memcpy(row, &onum, 8);
    assert_int_equal(st_writer_append(w, row, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "is out of order"));
    onum++;
    memcpy(row, &onum, 8);
    assert_int_equal(st_writer_append(w, row, tag, 60000000, &err), -1);
    assert_non_null(strstr(err.msg, "more than the limit"));
    st_writer_abort(w);
    o.checked = false;
    row[16] = 2;

    st_schema *notags = parse("key k: u32\ntagset v: u8\n");
    w = st_writer_create(file("notags"), notags, &o, &err);
    assert_int_equal(st_writer_append(w, row, tag, 1, &err), -1);
    assert_non_null(strstr(err.msg, "the schema has no tag fields, but the tagset has 1 tags"));
    st_writer_abort(w);
    assert_int_equal(access(file("notags"), F_OK), -1);

    o.block_size = 100;
    assert_null(st_writer_create(file("x"), s, &o, &err));
    assert_non_null(strstr(err.msg, "block size 100 is outside 4096 .. 268435456"));
    o.block_size = 4096;
    o.codec = (st_codec)7;
    assert_null(st_writer_create(file("x"), s, &o, &err));
    assert_non_null(strstr(err.msg, "unknown codec 7"));
    o.codec = ST_CODEC_LZ4;
    static char label[ST_LABEL_MAX + 2];
    memset(label, 'l', ST_LABEL_MAX + 1);
    o.label = label;
    assert_null(st_writer_create(file("x"), s, &o, &err));
    assert_non_null(strstr(err.msg, "label of 65537 bytes is longer than 65536"));
    assert_int_equal(gen_count_temps(dir), 0);
    st_schema_free(notags);
    st_schema_free(s);
}

/* A sorted file of n tagsets with keys 0, 10, 20, ... and its block map. */
typedef struct layout {
    uint32_t nblocks;
    uint32_t first[4096]; /* model index of each block's first tagset */
} layout;

static void map_blocks(const char *path, layout *l)
{
    st_err err = {0};
    st_reader *r = st_reader_open(path, NULL, &err);
    assert_int_equal(st_reader_select(r, NULL, 0, &err), 0);
    const st_batch *b;
    uint32_t at = 0;
    l->nblocks = 0;
    while (st_reader_next(r, &b, &err) == 1) {
        l->first[l->nblocks++] = at;
        at += b->ntagsets;
    }
    l->first[l->nblocks] = at;
    st_reader_close(r);
}

static void zone_maps_skip_blocks(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen g = {4};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 20000, 6, 1, &t);
    for (uint32_t i = 0; i < t.n; i++) {
        uint64_t onum = (uint64_t)i * 10;
        memcpy(t.rows + (size_t)i * s->row_size, &onum, 8);
    }
    st_write_opts o = opts(8192, ST_CODEC_LZ4);
    st_err err = {0};
    assert_int_equal(write_model(file("zone"), s, &t, &o, &err), 0);
    layout l;
    map_blocks(file("zone"), &l);
    assert_true(l.nblocks > 50);
    st_reader *r = st_reader_open(file("zone"), NULL, &err);
    for (int q = 0; q < 200; q++) {
        uint64_t lo = gen_below(&g, 210000), hi = lo + gen_below(&g, q % 2 ? 500 : 30000);
        uint16_t blo = (uint16_t)gen_below(&g, 65536), bhi = (uint16_t)(blo + gen_below(&g, 3000));
        st_range ranges[2] = {{0, &lo, &hi}, {4, &blo, bhi < blo ? NULL : &bhi}};
        uint32_t nr = 1 + (uint32_t)(q % 3 == 0);
        assert_int_equal(st_reader_where(r, ranges, nr, &err), 0);
        st_reader_seek(r, NULL);
        /* Expected: blocks with an onum in range (and a bsid in range). */
        uint64_t expect = 0, hits = 0, found = 0;
        for (uint32_t k = 0; k < l.nblocks; k++) {
            uint64_t bmin = (uint64_t)l.first[k] * 10, bmax = (uint64_t)(l.first[k + 1] - 1) * 10;
            bool keep = bmax >= lo && bmin <= hi;
            if (nr == 2) {
                /* A zone map knows the block's min and max bsid, not each value. */
                uint16_t vmin = UINT16_MAX, vmax = 0;
                uint64_t j0 = t.tag_start[l.first[k]], j1 = t.tag_start[l.first[k + 1]];
                for (uint64_t j = j0; j < j1; j++) {
                    uint16_t v;
                    memcpy(&v, t.tags + j * s->tag_size + s->fields[4].offset, 2);
                    vmin = v < vmin ? v : vmin;
                    vmax = v > vmax ? v : vmax;
                }
                keep &= j1 > j0 && vmax >= blo && (bhi < blo || vmin <= bhi);
            }
            expect += keep;
            if (keep)
                for (uint32_t i = l.first[k]; i < l.first[k + 1]; i++)
                    hits += (uint64_t)i * 10 >= lo && (uint64_t)i * 10 <= hi;
        }
        st_read_stats before, after;
        st_reader_stats(r, &before);
        const st_batch *b;
        while (st_reader_next(r, &b, &err) == 1) {
            const uint64_t *onums = b->cols[0];
            for (uint32_t i = 0; i < b->ntagsets; i++)
                found += onums[i] >= lo && onums[i] <= hi;
        }
        st_reader_stats(r, &after);
        assert_int_equal(after.blocks_read - before.blocks_read, expect);
        assert_int_equal(after.blocks_skipped - before.blocks_skipped, l.nblocks - expect);
        assert_int_equal(found, hits);
    }
    st_range bad = {99, NULL, NULL};
    assert_int_equal(st_reader_where(r, &bad, 1, &err), -1);
    assert_non_null(strstr(err.msg, "no column 99 (the schema has 7)"));
    st_reader_close(r);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

static void seek_reads_one_block(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen g = {5};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 20000, 4, 1, &t);
    /* Keys 0, 0, 2, 2, 4, ...: pairs of equal keys, odd keys absent. */
    for (uint32_t i = 0; i < t.n; i++) {
        uint64_t onum = (uint64_t)(i / 2) * 2;
        memcpy(t.rows + (size_t)i * s->row_size, &onum, 8);
        memset(t.rows + (size_t)i * s->row_size + 8, 0, 8);
    }
    st_write_opts o = opts(4096, ST_CODEC_LZ4HC);
    st_err err = {0};
    assert_int_equal(write_model(file("seek"), s, &t, &o, &err), 0);
    layout l;
    map_blocks(file("seek"), &l);
    st_reader *r = st_reader_open(file("seek"), NULL, &err);
    uint32_t cols[1] = {3}; /* a tag column: keys are gathered anyway */
    assert_int_equal(st_reader_select(r, cols, 1, &err), 0);
    for (int q = 0; q < 300; q++) {
        unsigned char key[16] = {0};
        uint64_t k = q == 0 ? 0 : q == 1 ? 20000 : q == 2 ? UINT64_MAX : gen_below(&g, 20000);
        memcpy(key, &k, 8);
        uint32_t want = (uint32_t)(k >= 20000 ? t.n : (k + 1) / 2 * 2); /* first index with key >= k */
        st_read_stats before, after;
        st_reader_stats(r, &before);
        st_reader_seek(r, key);
        const st_batch *b;
        int rc = st_reader_next(r, &b, &err);
        st_reader_stats(r, &after);
        if (want == t.n) {
            assert_int_equal(rc, 0);
            continue;
        }
        assert_int_equal(rc, 1);
        assert_int_equal(after.blocks_read - before.blocks_read, 1);
        assert_int_equal(l.first[b->block] + b->first, want);
        uint32_t next = gen_check_batch(s, &t, want, b);
        if (b->block + 1 < l.nblocks) {
            assert_int_equal(st_reader_next(r, &b, &err), 1);
            assert_int_equal(b->first, 0);
            gen_check_batch(s, &t, next, b);
        }
    }
    st_reader_close(r);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* ---- damage ------------------------------------------------------------------ */

typedef struct region {
    uint64_t off, len;
} region;

/* Block byte ranges, read from the file per docs/FORMAT.md. */
static uint32_t block_regions(const unsigned char *f, size_t n, const st_schema *s, region *out)
{
    uint64_t foot = st_get64(f + n - 32);
    uint64_t nblocks = st_get64(f + foot + 16);
    size_t es = 24 + 2 * (size_t)s->key_size + 16 * st_schema_ncols(s);
    for (uint64_t i = 0; i < nblocks; i++) {
        const unsigned char *e = f + foot + 40 + i * es;
        out[i].off = st_get64(e);
        out[i].len = st_get32(e + 8);
    }
    return (uint32_t)nblocks;
}

static void put_file(const char *path, const unsigned char *p, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, n, fp), n);
    fclose(fp);
}

typedef struct bad_list {
    int n;
    uint64_t block;
    char msg[512];
} bad_list;

static void note_bad(void *ctx, const char *path, uint64_t block, const char *msg)
{
    bad_list *l = ctx;
    (void)path;
    l->n++;
    l->block = block;
    snprintf(l->msg, sizeof l->msg, "%s", msg);
}

/* Opens and reads everything; returns the error (code 0 if none). */
static st_err read_all(const char *path)
{
    st_err err = {0};
    st_reader *r = st_reader_open(path, NULL, &err);
    if (!r)
        return err;
    const st_batch *b;
    while (st_reader_next(r, &b, &err) == 1)
        ;
    st_reader_close(r);
    return err;
}

static void every_bit_flip_is_detected(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen g = {6};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 250, 3, 1, &t);
    st_write_opts o = opts(4096, ST_CODEC_LZ4);
    o.label = "L";
    st_err err = {0};
    assert_int_equal(write_model(file("good"), s, &t, &o, &err), 0);
    size_t n;
    unsigned char *f = gen_slurp(file("good"), &n);
    region blocks[16];
    uint32_t nb = block_regions(f, n, s, blocks);
    assert_true(nb >= 2);
    const char *bad = file("flip");
    int in_blocks = 0;
    for (size_t bit = 0; bit < n * 8; bit++) {
        size_t at = bit / 8;
        f[at] ^= (unsigned char)(1u << bit % 8);
        put_file(bad, f, n);
        f[at] ^= (unsigned char)(1u << bit % 8);
        st_err e = read_all(bad);
        if (e.code != ST_ECORRUPT && e.code != ST_EVERSION)
            fail_msg("flip of bit %zu (byte %zu of %zu) not detected: %d %s", bit, at, n, e.code, e.msg);
        assert_memory_equal(e.msg, bad, strlen(bad));
        int64_t blk = -1;
        for (uint32_t i = 0; i < nb; i++)
            if (at >= blocks[i].off && at < blocks[i].off + blocks[i].len)
                blk = i;
        if (blk < 0)
            continue;
        in_blocks++;
        char want[600];
        snprintf(want, sizeof want, "%s: block %lld: ", bad, (long long)blk);
        assert_memory_equal(e.msg, want, strlen(want));
        bad_list l = {0};
        assert_int_equal(st_reader_verify(bad, NULL, note_bad, &l, &err), 1);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.block, (uint64_t)blk);
        assert_memory_equal(l.msg, want, strlen(want));
    }
    assert_true(in_blocks > (int)n * 8 / 2);
    bad_list l = {0};
    assert_int_equal(st_reader_verify(file("good"), NULL, note_bad, &l, &err), 0);
    assert_int_equal(l.n, 0);
    mem_free(f, n + 1);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

static void truncation_magic_and_versions(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen g = {7};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 40, 3, 1, &t);
    st_write_opts o = opts(4096, ST_CODEC_NONE);
    st_err err = {0};
    assert_int_equal(write_model(file("good"), s, &t, &o, &err), 0);
    size_t n;
    unsigned char *f = gen_slurp(file("good"), &n);
    const char *bad = file("cut");
    for (size_t len = 0; len < n; len++) {
        put_file(bad, f, len);
        st_err e = read_all(bad);
        assert_int_equal(e.code, ST_ECORRUPT);
        assert_memory_equal(e.msg, bad, strlen(bad));
    }
    char want[600];
    put_file(bad, f, n - 1);
    snprintf(want, sizeof want, "%s: no trailer: the file is truncated or was never finished", bad);
    assert_string_equal(read_all(bad).msg, want);

    f[0] = 'X';
    put_file(bad, f, n);
    snprintf(want, sizeof want, "%s: not a tagset file (bad magic)", bad);
    assert_string_equal(read_all(bad).msg, want);
    f[0] = 0x89;

    /* A newer version, its header checksum correct: named as newer, not corrupt. */
    size_t hsize = 32 + st_get32(f + 20) + st_get32(f + 24) + 8;
    st_put32(f + 8, ST_FORMAT_VERSION + 1);
    st_put64(f + hsize - 8, XXH3_64bits(f, hsize - 8));
    put_file(bad, f, n);
    st_err e = read_all(bad);
    assert_int_equal(e.code, ST_EVERSION);
    snprintf(want, sizeof want, "%s: format version %d is newer than this comb reads (%d); upgrade comb",
             bad, ST_FORMAT_VERSION + 1, ST_FORMAT_VERSION);
    assert_string_equal(e.msg, want);
    st_put32(f + 8, ST_FORMAT_VERSION);
    st_put32(f + 12, 0x10);
    st_put64(f + hsize - 8, XXH3_64bits(f, hsize - 8));
    put_file(bad, f, n);
    e = read_all(bad);
    assert_int_equal(e.code, ST_EVERSION);
    assert_non_null(strstr(e.msg, "uses features this comb does not know (flags 00000010)"));
    st_put32(f + 12, 0);
    /* A schema that does not parse, behind a good checksum. */
    memcpy(f + 32, "kez", 3);
    st_put64(f + hsize - 8, XXH3_64bits(f, hsize - 8));
    put_file(bad, f, n);
    snprintf(want, sizeof want, "%s: schema in the header: 1:1: expected 'key', 'tagset' or 'tag' to "
             "start a field, got 'kez'", bad);
    assert_string_equal(read_all(bad).msg, want);
    mem_free(f, n + 1);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* Footer claims that do not match the blocks, behind good checksums. */
static void verify_checks_the_footer_against_blocks(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen g = {8};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 400, 3, 1, &t);
    /* Keys far apart and ts 0, so the edits below keep the footer's keys in order. */
    for (uint32_t i = 0; i < t.n; i++) {
        uint64_t key[2] = {(uint64_t)i * 1000000000, 0};
        memcpy(t.rows + (size_t)i * s->row_size, key, 16);
    }
    st_write_opts o = opts(4096, ST_CODEC_LZ4);
    st_err err = {0};
    assert_int_equal(write_model(file("good"), s, &t, &o, &err), 0);
    size_t n;
    unsigned char *f = gen_slurp(file("good"), &n);
    uint64_t foot = st_get64(f + n - 32), fsize = st_get64(f + n - 24);
    size_t es = 24 + 2 * 16 + 16 * 7;
    unsigned char *e1 = f + foot + 40 + es; /* block 1's entry */
    static const struct {
        size_t at;
        const char *msg;
    } cases[] = {
        {24 + 32 + 16 * 4 + 8, "block 1: column 'bsid' differs from its zone map"},
        {24 + 9, "block 1: first key differs from the footer's"},
        {24 + 16 + 9, "block 1: last key differs from the footer's"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        e1[cases[k].at] ^= 0x40;
        st_put64(f + foot + fsize - 8, XXH3_64bits(f + foot, fsize - 8));
        put_file(file("bad"), f, n);
        bad_list l = {0};
        int64_t nbad = st_reader_verify(file("bad"), NULL, note_bad, &l, &err);
        if (nbad != 1 || !strstr(l.msg, cases[k].msg))
            fail_msg("case %zu: %lld bad, '%s' / '%s'", k, (long long)nbad, l.msg, err.msg);
        e1[cases[k].at] ^= 0x40;
    }
    assert_int_equal(st_reader_verify(file("nope"), NULL, note_bad, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "cannot open: No such file or directory"));
    mem_free(f, n + 1);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* ---- faults ------------------------------------------------------------------- */

static void write_faults_keep_the_previous_file(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen g = {9};
    gen_tagsets old, t;
    gen_make_tagsets(&g, s, 300, 3, 1, &old);
    gen_make_tagsets(&g, s, 3000, 5, 1, &t);
    st_write_opts o = opts(4096, ST_CODEC_LZ4);
    o.io.bufsize = 4096;
    st_err err = {0};
    const char *path = file("gen");
    const st_sys_op ops[] = {ST_SYS_WRITE, ST_SYS_WRITE, ST_SYS_FSYNC};
    const int errs[] = {EIO, ENOSPC, EIO};
    for (int k = 0; k < 3; k++) {
        for (unsigned long nth = 1;; nth += k < 2 ? 3 : 1) {
            assert_int_equal(write_model(path, s, &old, &o, &err), 0);
            size_t n0;
            unsigned char *before = gen_slurp(path, &n0);
            st_sys_fail_after(ops[k], nth, errs[k]);
            int rc = write_model(path, s, &t, &o, &err);
            st_sys_fail_after(ops[k], 0, 0);
            assert_int_equal(gen_count_temps(dir), 0);
            mem_free(before, n0 + 1);
            if (rc == 0 || (k == 2 && nth == 2)) {
                /* Past the last write, or the directory fsync: the new file stands. */
                check_model(path, s, &t);
                if (rc == 0)
                    break;
                continue;
            }
            assert_int_equal(err.code, ST_EIO);
            assert_non_null(strstr(err.msg, strerror(errs[k])));
            assert_memory_equal(err.msg, path, strlen(path));
            size_t n1;
            unsigned char *after = gen_slurp(path, &n1);
            assert_int_equal(n1, n0);
            check_model(path, s, &old);
            mem_free(after, n1 + 1);
        }
    }
    gen_free_tagsets(s, &old);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

static void read_faults_name_file_and_block(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen g = {10};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 3000, 5, 1, &t);
    st_write_opts o = opts(4096, ST_CODEC_LZ4);
    st_err err = {0};
    assert_int_equal(write_model(file("rf"), s, &t, &o, &err), 0);
    st_nbuf_opts io = {3, 4096, false, false};
    for (unsigned long nth = 1; nth < 12; nth++) {
        st_sys_fail_after(ST_SYS_READ, nth, EIO);
        st_reader *r = st_reader_open(file("rf"), &io, &err);
        int rc = -1;
        if (r) {
            const st_batch *b;
            while ((rc = st_reader_next(r, &b, &err)) == 1)
                ;
        }
        st_sys_fail_after(ST_SYS_READ, 0, 0);
        assert_int_equal(rc, -1);
        assert_int_equal(err.code, ST_EIO);
        assert_memory_equal(err.msg, file("rf"), strlen(file("rf")));
        if (r)
            assert_non_null(strstr(err.msg, ": Input/output error (block "));
        st_reader_close(r);
    }
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* Some columns of random schemas: only their bytes are read (a fraction of
 * the file), they equal the model, and a read that fails in the middle is
 * named by file and block. */
static void selected_columns_read_only_their_bytes(void **state)
{
    (void)state;
    gen g = {12};
    for (int round = 0; round < 30; round++) {
        st_schema *s = gen_schema(&g, 30, round % 2);
        gen_tagsets t;
        gen_make_tagsets(&g, s, 1500, 6, 1, &t);
        st_write_opts o = opts(8192, (st_codec)(round % 3));
        st_err err = {0};
        assert_int_equal(write_model(file("sel"), s, &t, &o, &err), 0);
        uint32_t ncols = st_schema_ncols(s), col = (uint32_t)gen_below(&g, ncols);
        for (int fault = 0; fault < 2; fault++) {
            st_reader *r = st_reader_open(file("sel"), NULL, &err);
            assert_non_null(r);
            assert_int_equal(st_reader_select(r, &col, 1, &err), 0);
            uint64_t expect = 0;    /* explain's figure: what the reads below take */
            assert_int_equal(st_reader_bytes_kept(r, &expect, &err), 0);
            if (fault)
                st_sys_fail_after(ST_SYS_READ, 3, EIO);
            const st_batch *b;
            uint32_t at = 0;
            int rc;
            while ((rc = st_reader_next(r, &b, &err)) == 1) {
                assert_non_null(b->cols[col]);
                at = gen_check_batch(s, &t, at, b);
            }
            st_sys_fail_after(ST_SYS_READ, 0, 0);
            st_read_stats rs;
            st_file_info info;
            st_reader_stats(r, &rs);
            st_reader_info(r, &info);
            if (fault && rc < 0) {
                assert_int_equal(err.code, ST_EIO);
                assert_memory_equal(err.msg, file("sel"), strlen(file("sel")));
                assert_non_null(strstr(err.msg, "(block "));
            } else {
                assert_int_equal(rc, 0);
                assert_int_equal(at, t.n);
                assert_int_equal(rs.bytes_read, expect);
                if (ncols > 4 && st_schema_col(s, col)->width == 1 && col < s->nrow)
                    assert_true(rs.bytes_read < info.size / 2);
            }
            st_reader_close(r);
        }
        gen_free_tagsets(s, &t);
        st_schema_free(s);
    }
}

/* Drops path's pages from the page cache, where the file system can. */
static void evict(const char *path)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

/* 6000 tagsets of s from seed, written in 4 KiB blocks to name: the file's
 * bytes, and its blocks' places into blocks (*nb of them). */
static unsigned char *write_blocks(const char *name, const st_schema *s, unsigned seed, gen_tagsets *t,
                                   size_t *n, region *blocks, uint32_t *nb)
{
    gen g = {seed};
    gen_make_tagsets(&g, s, 6000, 5, 1, t);
    st_write_opts o = opts(4096, ST_CODEC_LZ4);
    st_err err = {0};
    assert_int_equal(write_model(file(name), s, t, &o, &err), 0);
    unsigned char *f = gen_slurp(file(name), n);
    *nb = block_regions(f, *n, s, blocks);
    return f;
}

/* A scan of a file damaged in block k stopped there: it delivered the k
 * blocks before it and names file and block. */
static void stopped_at(int rc, const st_err *err, uint32_t seen, const char *path, uint32_t k)
{
    char want[600];
    snprintf(want, sizeof want, "%s: block %u: ", path, k);
    assert_int_equal(rc, -1);
    assert_int_equal(err->code, ST_ECORRUPT);
    assert_memory_equal(err->msg, want, strlen(want));
    assert_int_equal(seen, k);
}

/* A scan of some columns asks the kernel for the next blocks' bytes ahead
 * (plan_ahead, reading their heads early) when they are not in memory
 * (the file is evicted first; on tmpfs it stays, and the warm path runs):
 * that changes neither what it reads nor its errors. Over more blocks than
 * one window of advice, the bytes read are explain's figure, and a damaged
 * head of any block, in the first window, at its edges or in the last
 * block, is reported by that block when the scan reaches it, after every
 * block before it was read. Advice on an index the schema lacks, or past
 * its fields, is ignored. */
static void scan_advice_reads_and_names_as_before(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen_tagsets t;
    st_err err = {0};
    size_t n;
    static region blocks[4096];
    uint32_t nb, col = 2; /* state: a byte a tagset */
    unsigned char *f = write_blocks("adv", s, 13, &t, &n, blocks, &nb);
    assert_true(nb > 2 * 16 + 2);
    uint32_t damage[] = {UINT32_MAX, 1, 5, 15, 16, 17, nb - 1};
    const char *bad = file("advbad");
    for (size_t d = 0; d < sizeof damage / sizeof *damage; d++) {
        uint32_t k = damage[d];
        if (k != UINT32_MAX)
            f[blocks[k].off] ^= 0x10;
        put_file(bad, f, n);
        if (k != UINT32_MAX)
            f[blocks[k].off] ^= 0x10;
        evict(bad);
        st_reader *r = st_reader_open(bad, NULL, &err);
        assert_non_null(r);
        assert_int_equal(st_reader_select(r, &col, 1, &err), 0);
        st_reader_expect_index(r, col);
        st_reader_expect_index(r, 1000);
        uint64_t expect = 0;
        if (k == UINT32_MAX)
            assert_int_equal(st_reader_bytes_kept(r, &expect, &err), 0);
        const st_batch *b;
        uint32_t at = 0, seen = 0;
        int rc;
        while ((rc = st_reader_next(r, &b, &err)) == 1) {
            at = gen_check_batch(s, &t, at, b);
            seen++;
        }
        st_read_stats rs;
        st_reader_stats(r, &rs);
        if (k == UINT32_MAX) {
            assert_int_equal(rc, 0);
            assert_int_equal(at, t.n);
            assert_int_equal(seen, nb);
            assert_int_equal(rs.bytes_read, expect);
            assert_true(rs.bytes_read < n / 2);
        } else {
            stopped_at(rc, &err, seen, bad, k);
        }
        st_reader_close(r);
    }
    mem_free(f, n + 1);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* An index the scan said it reads (st_reader_expect_index) is asked for
 * ahead in a cold scan; each block's index bytes are the same as a reader
 * without the advice reads, and a damaged index in a block of the window is
 * named by file and block when that block's index is read. */
static void expected_indexes_read_and_name_as_before(void **state)
{
    (void)state;
    st_schema *s = parse("key onum: u64\nkey ts: time\ntagset state: enum(open, billed, closed) index\n"
                         "tag sys: enum(RICS, BILL, SWITCH)\ntag bsid: u16\n");
    gen_tagsets t;
    st_err err = {0};
    size_t n;
    static region blocks[4096];
    uint32_t nb, field = 2;
    unsigned char *f = write_blocks("eidx", s, 14, &t, &n, blocks, &nb);
    assert_true(nb > 16 + 2);
    st_reader *plain = st_reader_open(file("eidx"), NULL, &err);
    assert_non_null(plain);
    assert_int_equal(st_reader_select(plain, NULL, 0, &err), 0);
    uint32_t damage[] = {UINT32_MAX, 0, 3, 16, nb - 1};
    const char *bad = file("eidxbad");
    for (size_t d = 0; d < sizeof damage / sizeof *damage; d++) {
        uint32_t k = damage[d];
        st_reader_rewind(plain);
        assert_int_equal(st_reader_select(plain, NULL, 0, &err), 0);
        uint64_t at = 0;
        if (k != UINT32_MAX) {
            uint32_t col, idx;
            assert_int_equal(st_reader_block_sizes(plain, k, field, &col, &idx, &err), 0);
            assert_true(idx > 0);
            at = blocks[k].off + blocks[k].len - idx / 2; /* the only index ends the block */
            f[at] ^= 0x10;
        }
        put_file(bad, f, n);
        if (k != UINT32_MAX)
            f[at] ^= 0x10;
        evict(bad);
        st_reader *r = st_reader_open(bad, NULL, &err);
        assert_non_null(r);
        assert_int_equal(st_reader_select(r, NULL, 0, &err), 0);
        st_reader_expect_index(r, field);
        const st_batch *b, *pb;
        uint32_t seen = 0;
        int rc;
        while ((rc = st_reader_next(r, &b, &err)) == 1) {
            assert_int_equal(st_reader_next(plain, &pb, &err), 1);
            const unsigned char *idx, *pidx;
            size_t len, plen;
            if (st_reader_index(r, field, &idx, &len, &err) < 0) {
                rc = -1;
                break;
            }
            assert_int_equal(st_reader_index(plain, field, &pidx, &plen, &err), 0);
            assert_int_equal(len, plen);
            assert_memory_equal(idx, pidx, len);
            seen++;
        }
        if (k == UINT32_MAX) {
            assert_int_equal(rc, 0);
            assert_int_equal(seen, nb);
        } else {
            stopped_at(rc, &err, seen, bad, k);
        }
        st_reader_close(r);
    }
    st_reader_close(plain);
    mem_free(f, n + 1);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* A writer killed mid-file leaves the old file under the real name. */
static void killed_writer_leaves_no_half_file(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen g = {11};
    gen_tagsets old, t;
    gen_make_tagsets(&g, s, 200, 3, 1, &old);
    gen_make_tagsets(&g, s, 5000, 5, 1, &t);
    st_write_opts o = opts(4096, ST_CODEC_LZ4);
    o.io.bufsize = 4096;
    st_err err = {0};
    const char *path = file("killed");
    for (int with_old = 0; with_old < 2; with_old++) {
        unlink(path);
        if (with_old)
            assert_int_equal(write_model(path, s, &old, &o, &err), 0);
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            st_writer *w = st_writer_create(path, s, &o, &err);
            for (uint32_t i = 0; w && i < t.n; i++) {
                st_writer_append(w, gen_row(s, &t, i), gen_tags(s, &t, i), gen_ntags(&t, i), &err);
                if (i == t.n / 2 && write(ready[1], "x", 1) == 1)
                    pause(); /* mid-file, blocks on disk: wait for the kill */
            }
            _exit(3);
        }
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFSIGNALED(status));
        close(ready[0]);
        close(ready[1]);
        assert_int_equal(gen_count_temps(dir), 1); /* the half file, under its temp name */
        if (with_old)
            check_model(path, s, &old);
        else
            assert_int_equal(access(path, F_OK), -1);
        gen_rmdir(dir);
        snprintf(dir, sizeof dir, "%s", gen_tmpdir("tagfile"));
        path = file("killed");
    }
    gen_free_tagsets(s, &old);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

static void allocation_failures_lose_nothing(void **state)
{
    (void)state;
    st_schema *s = parse(calls_text);
    gen g = {12};
    gen_tagsets old, t;
    gen_make_tagsets(&g, s, 50, 3, 1, &old);
    gen_make_tagsets(&g, s, 400, 3, 1, &t);
    st_write_opts o = opts(4096, ST_CODEC_LZ4);
    st_err err = {0};
    const char *path = file("oom");
    assert_int_equal(write_model(path, s, &old, &o, &err), 0);
    size_t base = mem_in_use();
    int failures = 0;
    for (unsigned long nth = 1; nth < 120; nth++) {
        mem_fail_after(nth);
        int rc = write_model(path, s, &t, &o, &err);
        mem_fail_after(0);
        assert_int_equal(mem_in_use(), base);
        assert_int_equal(gen_count_temps(dir), 0);
        if (rc == 0) {
            check_model(path, s, &t);
            assert_int_equal(write_model(path, s, &old, &o, &err), 0);
        } else {
            failures++;
            assert_int_equal(err.code, ST_ENOMEM);
            check_model(path, s, &old);
        }
    }
    assert_true(failures > 10);
    for (unsigned long nth = 1; nth < 30; nth++) {
        mem_fail_after(nth);
        st_reader *r = st_reader_open(path, NULL, &err);
        int rc = r ? 1 : -1;
        const st_batch *b;
        while (rc == 1)
            rc = st_reader_next(r, &b, &err);
        mem_fail_after(0);
        if (rc < 0)
            assert_int_equal(err.code, ST_ENOMEM);
        st_reader_close(r);
        assert_int_equal(mem_in_use(), base);
    }
    gen_free_tagsets(s, &old);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_files_round_trip),
        cmocka_unit_test(a_known_schema_is_used_when_the_header_matches),
        cmocka_unit_test(empty_file_and_label),
        cmocka_unit_test(codec_env_is_checked),
        cmocka_unit_test(huge_schema_travels_in_the_header),
        cmocka_unit_test(oversized_tagset_gets_its_own_block),
        cmocka_unit_test(wide_schema_without_tags),
        cmocka_unit_test(cached_blocks_show_the_columns_selected),
        cmocka_unit_test(bad_input_is_refused_and_loses_nothing),
        cmocka_unit_test(zone_maps_skip_blocks),
        cmocka_unit_test(seek_reads_one_block),
        cmocka_unit_test(every_bit_flip_is_detected),
        cmocka_unit_test(truncation_magic_and_versions),
        cmocka_unit_test(selected_columns_read_only_their_bytes),
        cmocka_unit_test(scan_advice_reads_and_names_as_before),
        cmocka_unit_test(expected_indexes_read_and_name_as_before),
        cmocka_unit_test(verify_checks_the_footer_against_blocks),
        cmocka_unit_test(write_faults_keep_the_previous_file),
        cmocka_unit_test(read_faults_name_file_and_block),
        cmocka_unit_test(killed_writer_leaves_no_half_file),
        cmocka_unit_test(allocation_failures_lose_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
