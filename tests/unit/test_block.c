/* test_block: blocks encode and decode column by column, and refuse damage. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <lz4.h>
#include <lz4hc.h>
#include <xxhash.h>

#include "store/block.h"
#include "store/bytes.h"
#include "store/lwcodec.h"
#include "store/mem.h"
#include "tests/unit/gen_store.h"

/* Recomputes a block's head checksum after an edit behind it. */
static void seal(const st_schema *s, unsigned char *blk)
{
    st_put64(blk, XXH3_64bits(blk + 8, st_block_head_size(s) - 8));
}

/* Encodes all of t into one block; the bytes are a copy the caller frees. */
static unsigned char *encode_by(const st_schema *s, const gen_tagsets *t, st_codec codec, bool light,
                                size_t *n, st_zone *zones)
{
    st_err err = {0};
    st_block_enc *e = st_block_enc_new(s, codec, 0, light, &err);
    assert_non_null(e);
    uint64_t raw = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        assert_int_equal(st_block_enc_add(e, gen_row(s, t, i), gen_tags(s, t, i), gen_ntags(t, i), &err), 0);
        raw += st_block_tagset_size(s, gen_ntags(t, i));
    }
    assert_int_equal(st_block_enc_count(e), t->n);
    assert_int_equal(st_block_enc_raw(e), raw);
    const unsigned char *p;
    const st_zone *z;
    assert_int_equal(st_block_enc_finish(e, &p, n, &z, &err), 0);
    assert_int_equal(st_block_enc_count(e), 0);
    unsigned char *copy = mem_alloc(*n);
    memcpy(copy, p, *n);
    if (zones)
        memcpy(zones, z, st_schema_ncols(s) * sizeof *z);
    st_block_enc_free(e);
    return copy;
}

/* LZ4 only, as format versions 2 to 5 hold. */
static unsigned char *encode(const st_schema *s, const gen_tagsets *t, st_codec codec, size_t *n,
                             st_zone *zones)
{
    return encode_by(s, t, codec, false, n, zones);
}

/* The codec byte of column c's directory entry. */
static unsigned codec_of(const unsigned char *blk, uint32_t c)
{
    return blk[ST_BLOCK_HEADER + ST_BLOCK_DIRENT * c];
}

static void round_trips_random_blocks(void **state)
{
    (void)state;
    gen g = {11};
    uint32_t nlight = 0;    /* columns stored by RLE or FOR, over the rounds */
    for (int round = 0; round < 150; round++) {
        st_schema *s = gen_schema(&g, 25, round % 4);
        gen_tagsets t;
        gen_make_tagsets(&g, s, 1 + (uint32_t)gen_below(&g, 300), round % 5 == 0 ? 200 : 12, 0, &t);
        st_codec codec = (st_codec)(round % 3);
        bool light = round % 2;     /* RLE and FOR where smaller: version 6 */
        uint32_t version = light ? 6 : 2;
        size_t n;
        uint32_t ncols = st_schema_ncols(s);
        st_zone zones[ST_MAX_FIELDS + 1];
        unsigned char *blk = encode_by(s, &t, codec, light, &n, zones);
        st_batch b;
        st_batch_init(&b);
        st_err err = {0};
        assert_int_equal(st_block_decode(s, version, blk, n, NULL, NULL, &b, &err), 0);
        for (uint32_t c = 0; c < ncols; c++)
            nlight += codec_of(blk, c) >= ST_LW_RLE;
        assert_int_equal(b.ntagsets, t.n);
        assert_int_equal(b.ntags, t.tag_start[t.n]);
        assert_int_equal(gen_check_batch(s, &t, 0, &b), t.n);
        /* Zones are the true range of each decoded column. */
        for (uint32_t c = 0; c < ncols; c++) {
            st_zone z;
            uint32_t count = st_schema_col_is_tag(s, c) ? b.ntags : b.ntagsets;
            st_block_zone(s, c, b.cols[c], count, &z);
            assert_memory_equal(&z, &zones[c], sizeof z);
            const st_field *f = st_schema_col(s, c);
            for (uint32_t i = 0; i < count; i++) {
                uint64_t o = st_field_order(f, (const char *)b.cols[c] + (size_t)i * f->width);
                assert_true(o >= z.min && o <= z.max);
            }
        }
        /* One column at a time: only it (and for tags, the counts) comes back. */
        bool want[ST_MAX_FIELDS + 1];
        for (uint32_t c = 0; c < ncols; c++) {
            memset(want, 0, sizeof want);
            want[c] = true;
            assert_int_equal(st_block_decode(s, version, blk, n, want, NULL, &b, &err), 0);
            for (uint32_t k = 0; k < ncols; k++) {
                bool counts = k == s->nfields && c >= s->nrow;
                assert_true((b.cols[k] != NULL) == (k == c || counts));
            }
            assert_true((b.tag_start != NULL) == (c >= s->nrow));
            gen_check_batch(s, &t, 0, &b);
        }
        mem_free(blk, n);
        st_batch_free(&b);
        gen_free_tagsets(s, &t);
        st_schema_free(s);
    }
    assert_true(nlight > 0);    /* the rounds above went through RLE or FOR too */
}

static st_schema *calls_schema(void)
{
    static const char text[] = "key onum: u64\nkey ts: time\ntagset state: enum(open, billed, closed)\n"
                               "tag sys: enum(RICS, BILL, SWITCH)\ntag bsid: u16\ntag dnum: char[16]\n";
    st_err err = {0};
    st_schema *s = st_schema_parse(text, sizeof text - 1, 1, 1, &err);
    assert_non_null(s);
    return s;
}

static void compression_shrinks_and_none_stores(void **state)
{
    (void)state;
    st_schema *s = calls_schema();
    gen g = {3};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 2000, 4, 1, &t);
    /* Regular data compresses: make the keys a sequence. */
    for (uint32_t i = 0; i < t.n; i++) {
        uint64_t onum = 7325550000u + i / 3;
        memcpy(t.rows + (size_t)i * s->row_size, &onum, 8);
    }
    size_t raw_n, lz4_n, hc_n;
    unsigned char *raw = encode(s, &t, ST_CODEC_NONE, &raw_n, NULL);
    unsigned char *lz4 = encode(s, &t, ST_CODEC_LZ4, &lz4_n, NULL);
    unsigned char *hc = encode(s, &t, ST_CODEC_LZ4HC, &hc_n, NULL);
    uint64_t total = 0;
    for (uint32_t i = 0; i < t.n; i++)
        total += st_block_tagset_size(s, gen_ntags(&t, i));
    assert_int_equal(raw_n, total + ST_BLOCK_HEADER + ST_BLOCK_DIRENT * st_schema_ncols(s));
    assert_true(lz4_n < raw_n);
    assert_true(hc_n <= lz4_n);
    assert_int_equal(raw[ST_BLOCK_HEADER], 0);     /* onum column stored raw */
    assert_int_equal(lz4[ST_BLOCK_HEADER], 1);     /* ... and LZ4 */
    mem_free(raw, raw_n);
    mem_free(lz4, lz4_n);
    mem_free(hc, hc_n);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

static void empty_tag_columns_have_empty_zones(void **state)
{
    (void)state;
    st_schema *s = calls_schema();
    unsigned char row[17] = {1};
    st_err err = {0};
    st_block_enc *e = st_block_enc_new(s, ST_CODEC_LZ4, 0, false, &err);
    assert_int_equal(st_block_enc_add(e, row, NULL, 0, &err), 0);
    const unsigned char *p;
    size_t n;
    const st_zone *z;
    assert_int_equal(st_block_enc_finish(e, &p, &n, &z, &err), 0);
    assert_true(z[3].min > z[3].max);
    assert_int_equal(z[6].min, 0); /* the counts column: one zero */
    assert_int_equal(z[6].max, 0);
    st_batch b;
    st_batch_init(&b);
    assert_int_equal(st_block_decode(s, 2, p, n, NULL, NULL, &b, &err), 0);
    assert_int_equal(b.ntags, 0);
    assert_non_null(b.cols[3]);
    assert_int_equal(b.tag_start[1], 0);
    st_batch_free(&b);
    st_block_enc_free(e);
    st_schema_free(s);
}

static void every_bit_flip_is_caught(void **state)
{
    (void)state;
    st_schema *s = calls_schema();
    gen g = {4};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 20, 3, 1, &t);
    size_t n;
    unsigned char *blk = encode(s, &t, ST_CODEC_LZ4, &n, NULL);
    st_batch b;
    st_batch_init(&b);
    st_err err = {0};
    for (size_t bit = 0; bit < n * 8; bit++) {
        blk[bit / 8] ^= (unsigned char)(1u << bit % 8);
        assert_int_equal(st_block_decode(s, 2, blk, n, NULL, NULL, &b, &err), -1);
        assert_int_equal(err.code, ST_ECORRUPT);
        assert_non_null(strstr(err.msg, "checksum mismatch"));
        blk[bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    for (size_t len = 0; len < n; len++)
        assert_int_equal(st_block_decode(s, 2, blk, len, NULL, NULL, &b, &err), -1);
    assert_int_equal(st_block_decode(s, 2, blk, n, NULL, NULL, &b, &err), 0);
    mem_free(blk, n);
    st_batch_free(&b);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* Damage behind a correct checksum (a bug, or a hostile file) is still named. */
typedef struct damage {
    size_t at;      /* byte offset to overwrite */
    uint32_t value; /* little-endian u32 written there */
    const char *msg;
} damage;

static void structure_is_checked_behind_the_checksum(void **state)
{
    (void)state;
    st_schema *s = calls_schema();
    gen g = {5};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 50, 3, 1, &t);
    size_t n;
    unsigned char *blk = encode(s, &t, ST_CODEC_LZ4, &n, NULL);
    const size_t d = ST_BLOCK_HEADER, e = ST_BLOCK_DIRENT;
    const damage cases[] = {
        {8, 0x4b4c4241, "no block magic"},
        {12, 0, "block claims 0 tagsets and"},
        {20, 6, "block has 6 columns, the schema 7"},
        {20, 1u << 30, "block has 1073741824 columns"},
        {12, 51, "column 'onum' holds 400 bytes, expected 408"},
        {16, 0xffffffffu, "column 'sys' holds"},
        {d, 7, "column 'onum' has unknown codec bytes 07 00 00 00"},
        {d, 0x100, "column 'onum' has unknown codec bytes 00 01 00 00"},
        {d + 8, 1, "column 'onum' stores 1 bytes for 400"},
        {d + 2 * e + 8, 0x7fffffff, "column 'state' runs past the end of the block"},
    };
    st_batch b;
    st_batch_init(&b);
    st_err err = {0};
    unsigned char *bad = mem_alloc(n);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(bad, blk, n);
        st_put32(bad + cases[i].at, cases[i].value);
        seal(s, bad);
        assert_int_equal(st_block_decode(s, 2, bad, n, NULL, NULL, &b, &err), -1);
        assert_int_equal(err.code, ST_ECORRUPT);
        if (!strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: got '%s'", i, err.msg);
    }
    /* Counts that do not add up to the block's tags (stored raw to edit them). */
    size_t rn;
    unsigned char *rawblk = encode(s, &t, ST_CODEC_NONE, &rn, NULL);
    size_t counts_at = d + e * 7;
    for (int c = 0; c < 6; c++)
        counts_at += st_get32(rawblk + d + e * (size_t)c + 8);
    st_put32(rawblk + counts_at, st_get32(rawblk + counts_at) + 1);
    st_put64(rawblk + d + e * 6 + 12, XXH3_64bits(rawblk + counts_at, st_get32(rawblk + d + e * 6 + 8)));
    seal(s, rawblk);
    bool want[7] = {0};
    want[2] = true;
    assert_int_equal(st_block_decode(s, 2, rawblk, rn, want, NULL, &b, &err), 0); /* counts not asked */
    want[6] = true;
    assert_int_equal(st_block_decode(s, 2, rawblk, rn, want, NULL, &b, &err), -1);
    assert_non_null(strstr(err.msg, "tag counts add up to"));
    mem_free(rawblk, rn);
    /* A block longer than its columns. */
    unsigned char *longer = mem_alloc(n + 1);
    memcpy(longer, blk, n);
    longer[n] = 0;
    seal(s, longer);
    assert_int_equal(st_block_decode(s, 2, longer, n + 1, NULL, NULL, &b, &err), -1);
    assert_string_equal(err.msg, "block has 1 bytes after its last column");
    mem_free(longer, n + 1);
    mem_free(bad, n);
    mem_free(blk, n);
    st_batch_free(&b);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

static void allocation_failures_are_clean(void **state)
{
    (void)state;
    st_schema *s = calls_schema();
    gen g = {6};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 100, 5, 1, &t);
    size_t n;
    unsigned char *blk = encode(s, &t, ST_CODEC_LZ4HC, &n, NULL);
    size_t base = mem_in_use();
    for (unsigned long nth = 1; nth < 40; nth++) {
        st_err err = {0};
        mem_fail_after(nth);
        st_block_enc *e = st_block_enc_new(s, ST_CODEC_LZ4, 0, false, &err);
        int rc = e ? 0 : -1;
        for (uint32_t i = 0; i < t.n && rc == 0; i++)
            rc = st_block_enc_add(e, gen_row(s, &t, i), gen_tags(s, &t, i), gen_ntags(&t, i), &err);
        const unsigned char *p;
        size_t pn;
        const st_zone *z;
        if (rc == 0)
            rc = st_block_enc_finish(e, &p, &pn, &z, &err);
        st_batch b;
        st_batch_init(&b);
        if (rc == 0)
            rc = st_block_decode(s, 2, blk, n, NULL, NULL, &b, &err);
        mem_fail_after(0);
        if (rc < 0)
            assert_int_equal(err.code, ST_ENOMEM);
        else
            gen_check_batch(s, &t, 0, &b);
        st_batch_free(&b);
        st_block_enc_free(e);
        assert_int_equal(mem_in_use(), base);
    }
    mem_free(blk, n);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* Only some columns' bytes, found through the head: the same batch as a
 * decode of the whole block, and damage in a column named when, and only
 * when, that column is decoded. */
static void columns_decode_on_their_own(void **state)
{
    (void)state;
    gen g = {21};
    for (int round = 0; round < 60; round++) {
        st_schema *s = gen_schema(&g, 20, round % 3);
        gen_tagsets t;
        gen_make_tagsets(&g, s, 1 + (uint32_t)gen_below(&g, 200), 8, 0, &t);
        size_t n;
        unsigned char *blk = encode(s, &t, (st_codec)(round % 3), &n, NULL);
        uint32_t ncols = st_schema_ncols(s);
        uint64_t off[ST_MAX_FIELDS + 1];
        uint32_t len[ST_MAX_FIELDS + 1];
        st_err err = {0};
        assert_int_equal(st_block_locate(s, 2, blk, n, off, len, &err), 0);
        bool want[ST_MAX_FIELDS + 1];
        const void *data[ST_MAX_FIELDS + 1];
        for (uint32_t c = 0; c < ncols; c++)
            want[c] = gen_below(&g, 2);
        /* Each needed column from a copy of its own bytes, nothing else. */
        unsigned char *copies[ST_MAX_FIELDS + 1] = {0};
        for (uint32_t c = 0; c < ncols; c++) {
            data[c] = NULL;
            if (!st_block_needs(s, want, c))
                continue;
            copies[c] = mem_alloc(len[c] + 1);
            memcpy(copies[c], blk + off[c], len[c]);
            data[c] = copies[c];
        }
        st_batch part, whole;
        st_batch_init(&part);
        st_batch_init(&whole);
        assert_int_equal(st_block_decode_cols(s, 2, blk, n, data, want, NULL, &part, &err), 0);
        assert_int_equal(st_block_decode(s, 2, blk, n, want, NULL, &whole, &err), 0);
        for (uint32_t c = 0; c < ncols; c++) {
            assert_true((part.cols[c] != NULL) == st_block_needs(s, want, c));
            if (part.cols[c]) {
                size_t bytes = (size_t)(st_schema_col_is_tag(s, c) ? t.tag_start[t.n] : t.n) *
                               st_schema_col(s, c)->width;
                assert_memory_equal(part.cols[c], whole.cols[c], bytes);
            }
        }
        gen_check_batch(s, &t, 0, &part);
        /* A flipped byte in a column: caught by that column's checksum. */
        for (uint32_t c = 0; c < ncols; c++) {
            if (!copies[c] || !len[c])
                continue;
            copies[c][len[c] / 2] ^= 0x40;
            assert_int_equal(st_block_decode_cols(s, 2, blk, n, data, want, NULL, &part, &err), -1);
            assert_int_equal(err.code, ST_ECORRUPT);
            char msg[128];
            snprintf(msg, sizeof msg, "column '%s': checksum mismatch", st_schema_col(s, c)->name);
            assert_non_null(strstr(err.msg, msg));
            copies[c][len[c] / 2] ^= 0x40;
        }
        /* A needed column not given is refused, not read past the head. */
        for (uint32_t c = 0; c < ncols; c++)
            if (copies[c]) {
                data[c] = NULL;
                assert_int_equal(st_block_decode_cols(s, 2, blk, n, data, want, NULL, &part, &err), -1);
                assert_non_null(strstr(err.msg, "was not read"));
                data[c] = copies[c];
                break;
            }
        for (uint32_t c = 0; c < ncols; c++)
            mem_free(copies[c], copies[c] ? len[c] + 1 : 0);
        mem_free(blk, n);
        st_batch_free(&part);
        st_batch_free(&whole);
        gen_free_tagsets(s, &t);
        st_schema_free(s);
    }
}

/* Format version 1 blocks (one checksum over the whole block, directory
 * entries without checksums) still decode, and their damage is caught. */
static void version_1_blocks_still_decode(void **state)
{
    (void)state;
    st_schema *s = calls_schema();
    gen g = {8};
    gen_tagsets t;
    gen_make_tagsets(&g, s, 40, 3, 1, &t);
    size_t n;
    unsigned char *blk = encode(s, &t, ST_CODEC_LZ4, &n, NULL);
    uint32_t ncols = st_schema_ncols(s);
    /* The same block laid out as version 1 wrote it. */
    size_t shrink = (size_t)(ST_BLOCK_DIRENT - ST_BLOCK_DIRENT_V1) * ncols, n1 = n - shrink;
    unsigned char *v1 = mem_alloc(n1);
    memcpy(v1, blk, ST_BLOCK_HEADER);
    for (uint32_t c = 0; c < ncols; c++)
        memcpy(v1 + ST_BLOCK_HEADER + ST_BLOCK_DIRENT_V1 * c, blk + ST_BLOCK_HEADER + ST_BLOCK_DIRENT * c,
               ST_BLOCK_DIRENT_V1);
    memcpy(v1 + ST_BLOCK_HEADER + ST_BLOCK_DIRENT_V1 * ncols, blk + st_block_head_size(s),
           n - st_block_head_size(s));
    st_put64(v1, XXH3_64bits(v1 + 8, n1 - 8));
    st_batch b;
    st_batch_init(&b);
    st_err err = {0};
    assert_int_equal(st_block_decode(s, 1, v1, n1, NULL, NULL, &b, &err), 0);
    assert_int_equal(gen_check_batch(s, &t, 0, &b), t.n);
    /* The whole-block checksum covers the columns too. */
    v1[n1 - 1] ^= 1;
    bool want[7] = {true};
    assert_int_equal(st_block_decode(s, 1, v1, n1, want, NULL, &b, &err), -1);
    assert_non_null(strstr(err.msg, "checksum mismatch"));
    mem_free(v1, n1);
    mem_free(blk, n);
    st_batch_free(&b);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* Tagsets shaped like an event store's: a constant run, ascending event
 * numbers, a 36-byte reference the same for 50 rows, small signed numbers,
 * random doubles; tags on every third tagset only, none at all when
 * tagless. */
static void events(const st_schema *s, uint32_t n, bool tagless, gen_tagsets *t)
{
    gen g = {77};
    gen_make_tagsets(&g, s, n, tagless ? 0 : 2, 1, t);
    for (uint32_t i = 0; i < n; i++) {
        int16_t small = (int16_t)((int)gen_below(&g, 200) - 100);
        gen_event_row(s, i, 7, 100000 + 3 * (uint64_t)i, (uint64_t)(int64_t)small,
                      (unsigned char *)gen_row(s, t, i));
    }
}

static const char events_text[] = "key run: u32\nkey event: u64\ntagset ref: char[36]\n"
                                  "tagset small: i16\ntagset x: f64\ntag hit: u32\n";

/* A block may store columns by RLE or FOR (version 6): it decodes as the
 * LZ4 block of the same tagsets does, its deferred columns give any rows
 * as the decoded ones, and a version 5 reader refuses it. */
static void light_codecs_decode_and_gather(void **state)
{
    (void)state;
    st_err err = {0};
    st_schema *s = st_schema_parse(events_text, strlen(events_text), 1, 1, &err);
    assert_non_null(s);
    uint32_t ncols = st_schema_ncols(s);
    for (int tagless = 0; tagless < 2; tagless++) {
        gen_tagsets t;
        events(s, 300, tagless, &t);
        size_t n6, n2;
        unsigned char *b6 = encode_by(s, &t, ST_CODEC_LZ4, true, &n6, NULL);
        unsigned char *b2 = encode(s, &t, ST_CODEC_LZ4, &n2, NULL);
        assert_true(n6 < n2);
        assert_int_equal(codec_of(b6, 0), ST_LW_RLE);   /* the run: one run */
        assert_int_equal(codec_of(b6, 1), ST_LW_FOR);   /* events: 10 bits each */
        assert_int_equal(codec_of(b6, 2), ST_LW_RLE);   /* references: 6 runs */
        assert_int_equal(codec_of(b6, 3), ST_LW_FOR);   /* small: 8 bits each, signed */
        st_batch a, b;
        st_batch_init(&a);
        st_batch_init(&b);
        assert_int_equal(st_block_decode(s, 6, b6, n6, NULL, NULL, &a, &err), 0);
        assert_int_equal(st_block_decode(s, 2, b2, n2, NULL, NULL, &b, &err), 0);
        assert_int_equal(gen_check_batch(s, &t, 0, &a), t.n);
        for (uint32_t c = 0; c < ncols; c++) {
            size_t len = (size_t)(st_schema_col_is_tag(s, c) ? a.ntags : a.ntagsets) * st_schema_col(s, c)->width;
            assert_true(!len || !memcmp(a.cols[c], b.cols[c], len));
        }
        /* deferred: left encoded, gathered at random rows as decoded */
        bool defer[ST_MAX_FIELDS + 1] = {true, true, true, true, true, true, true};
        st_batch d;
        st_batch_init(&d);
        assert_int_equal(st_block_decode(s, 6, b6, n6, NULL, defer, &d, &err), 0);
        gen g = {5};
        uint32_t rows[300], k = 0;
        unsigned char got[300 * 36];
        for (uint32_t i = 0; i < 300; i++)
            if (gen_below(&g, 10) == 0)
                rows[k++] = i;
        for (uint32_t c = 0; c < s->nrow; c++) {
            uint32_t w = s->fields[c].width;
            bool light = codec_of(b6, c) >= ST_LW_RLE;    /* x (random) is not */
            assert_true((d.cols[c] == NULL) == light && d.enc[c].codec == (light ? codec_of(b6, c) : 0));
            st_batch_gather(s, &d, c, rows, k, got);
            for (uint32_t j = 0; j < k; j++)
                assert_memory_equal(got + (size_t)j * w, (char *)a.cols[c] + (size_t)rows[j] * w, w);
            st_batch_gather(s, &a, c, rows, k, got);   /* from a decoded column, the same */
            for (uint32_t j = 0; j < k; j++)
                assert_memory_equal(got + (size_t)j * w, (char *)a.cols[c] + (size_t)rows[j] * w, w);
        }
        assert_non_null(d.cols[s->nrow]);   /* tag columns are decoded, deferred or not */
        /* format versions before 6 know no such codec */
        assert_int_equal(st_block_decode(s, 5, b6, n6, NULL, NULL, &a, &err), -1);
        assert_non_null(strstr(err.msg, "unknown codec"));
        /* every byte flipped is caught (the column checksums) */
        for (size_t i = 0; i < n6; i++) {
            b6[i] ^= 0x5a;
            assert_int_equal(st_block_decode(s, 6, b6, n6, NULL, defer, &d, &err), -1);
            b6[i] ^= 0x5a;
        }
        /* a run table damaged behind its checksum is named */
        const unsigned char *e = b6 + ST_BLOCK_HEADER + ST_BLOCK_DIRENT * 2;
        uint64_t off = st_block_head_size(s);
        for (uint32_t c = 0; c < 2; c++)
            off += st_get32(b6 + ST_BLOCK_HEADER + ST_BLOCK_DIRENT * c + 8);
        st_put32(b6 + off + 8, 301);    /* the second run's end, past the rows */
        st_put64(b6 + ST_BLOCK_HEADER + ST_BLOCK_DIRENT * 2 + 12, XXH3_64bits(b6 + off, st_get32(e + 8)));
        seal(s, b6);
        for (int dfr = 0; dfr < 2; dfr++) {
            assert_int_equal(st_block_decode(s, 6, b6, n6, NULL, dfr ? defer : NULL, &d, &err), -1);
            assert_non_null(strstr(err.msg, "column 'ref'"));
            assert_non_null(strstr(err.msg, "run 1 ends at row 301"));
        }
        st_batch_free(&a);
        st_batch_free(&b);
        st_batch_free(&d);
        mem_free(b6, n6);
        mem_free(b2, n2);
        gen_free_tagsets(s, &t);
    }
    st_schema_free(s);
}

/* The codec the writer's whole rule (docs/STORE.md) takes for a column of
 * n raw bytes, LZ4 compressed always, by codec as the encoder does at
 * level 0. */
static unsigned full_rule(const st_field *f, const unsigned char *col, size_t n, st_codec codec)
{
    uint32_t w = f->width, nv = (uint32_t)(n / w);
    bool sign = f->type == ST_I8 || f->type == ST_I16 || f->type == ST_I32 || f->type == ST_I64;
    size_t rle, fr;
    st_lw_sizes(col, nv, w, sign, &rle, &fr);
    size_t light = fr && fr < rle ? fr : rle;
    int bound = LZ4_compressBound((int)n), k = 0;
    char *dst = mem_alloc((size_t)bound);
    if (codec == ST_CODEC_LZ4)
        k = LZ4_compress_default((const char *)col, dst, (int)n, bound);
    else if (codec == ST_CODEC_LZ4HC)
        k = LZ4_compress_HC((const char *)col, dst, (int)n, bound, LZ4HC_CLEVEL_DEFAULT);
    mem_free(dst, (size_t)bound);
    size_t best = k > 0 && (size_t)k < n ? (size_t)k : n;
    size_t slack = best / 4 > n / 32 ? best / 4 : n / 32;
    if (light < n && light <= best + slack)
        return fr && fr < rle ? ST_LW_FOR : ST_LW_RLE;
    return k > 0 && (size_t)k < n ? 1 : 0;
}

/* Each column's codec in a block is the one the whole rule takes, though
 * the writer skips LZ4 where the light codec's size alone decides: over
 * random blocks, columns of a few equal runs whose RLE size is around
 * 1/32 of raw (sure by that), a little above it (sure by LZ4's least
 * output) and further above (LZ4 decides), and cycles of a few values
 * that FOR packs to a few bits but LZ4 to far less. */
static void light_choice_is_the_full_rules(void **state)
{
    (void)state;
    gen g = {31};
    uint32_t nsure = 0, nlz4 = 0;    /* columns each way, so both paths ran */
    st_err err = {0};
    st_schema *ev = st_schema_parse(events_text, strlen(events_text), 1, 1, &err);
    assert_non_null(ev);
    for (int round = 0; round < 120; round++) {
        bool edge = round >= 80;
        st_schema *s = edge ? ev : gen_schema(&g, 25, round % 4);
        gen_tagsets t;
        if (edge) {   /* small: k equal runs over 3000 tagsets, or a cycle of k values */
            uint32_t nt = 3000, k = 2 + (uint32_t)(round - 80) / 2 * 3;
            bool cycle = round % 2;
            events(s, nt, round % 4 < 2, &t);
            for (uint32_t i = 0; i < nt; i++)
                gen_event_row(s, i, 7, 100000 + 3 * (uint64_t)i, cycle ? i % k : i * k / nt,
                              (unsigned char *)gen_row(s, &t, i));
        } else {
            gen_make_tagsets(&g, s, 1 + (uint32_t)gen_below(&g, 2000), round % 5 == 0 ? 200 : 12, 0, &t);
        }
        st_codec codec = round % 3 == 2 ? ST_CODEC_LZ4HC : ST_CODEC_LZ4;
        size_t n;
        unsigned char *blk = encode_by(s, &t, codec, true, &n, NULL);
        st_batch b;
        st_batch_init(&b);
        assert_int_equal(st_block_decode(s, 6, blk, n, NULL, NULL, &b, &err), 0);
        for (uint32_t c = 0; c < st_schema_ncols(s); c++) {
            size_t raw = st_get32(blk + ST_BLOCK_HEADER + ST_BLOCK_DIRENT * c + 4);
            if (raw == 0)
                continue;
            const st_field *f = st_schema_col(s, c);
            assert_int_equal(codec_of(blk, c), full_rule(f, b.cols[c], raw, codec));
            size_t stored = st_get32(blk + ST_BLOCK_HEADER + ST_BLOCK_DIRENT * c + 8);
            if (codec_of(blk, c) >= ST_LW_RLE && stored <= st_block_light_sure(raw))
                nsure += stored > raw / 32;     /* sure by LZ4's least output alone */
            else
                nlz4++;
        }
        mem_free(blk, n);
        st_batch_free(&b);
        gen_free_tagsets(s, &t);
        if (!edge)
            st_schema_free(s);
    }
    st_schema_free(ev);
    assert_true(nsure > 0 && nlz4 > 0);
}

/* LZ4 gives at least one byte per 256 of input, the premise of the
 * writer's skipping it (st_block_light_sure), however repetitive the
 * input and however hard or fast it compresses. */
static void lz4_output_is_at_least_a_256th(void **state)
{
    (void)state;
    const int nmax = 1 << 20;
    char *src = mem_calloc(1, (size_t)nmax), *dst = mem_alloc((size_t)LZ4_compressBound(nmax));
    for (int n = 1; n <= nmax; n = n < 600 ? n + 1 : n * 2 + 1) {
        int bound = LZ4_compressBound(n);
        int ks[4] = {LZ4_compress_default(src, dst, n, bound), LZ4_compress_fast(src, dst, n, bound, 65537),
                     LZ4_compress_HC(src, dst, n, bound, LZ4HC_CLEVEL_MAX),
                     LZ4_compress_HC(src, dst, n, bound, 1)};
        for (int i = 0; i < 4; i++)
            assert_true(ks[i] > 0 && (size_t)ks[i] >= (size_t)n / 256);
    }
    mem_free(src, (size_t)nmax);
    mem_free(dst, (size_t)LZ4_compressBound(nmax));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trips_random_blocks),
        cmocka_unit_test(compression_shrinks_and_none_stores),
        cmocka_unit_test(empty_tag_columns_have_empty_zones),
        cmocka_unit_test(every_bit_flip_is_caught),
        cmocka_unit_test(structure_is_checked_behind_the_checksum),
        cmocka_unit_test(allocation_failures_are_clean),
        cmocka_unit_test(columns_decode_on_their_own),
        cmocka_unit_test(version_1_blocks_still_decode),
        cmocka_unit_test(light_codecs_decode_and_gather),
        cmocka_unit_test(light_choice_is_the_full_rules),
        cmocka_unit_test(lz4_output_is_at_least_a_256th),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
