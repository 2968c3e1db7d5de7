/* test_cache: the process's cache of decoded columns: hits, LRU eviction,
 * references across eviction, and readers served from it. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "store/bytes.h"
#include "store/cache.h"
#include "store/lwcodec.h"
#include "store/mem.h"
#include "store/tagfile.h"
#include "tests/unit/gen_store.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", gen_tmpdir("cache"));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    st_cache_set_limit(0);
    gen_rmdir(dir);
    return 0;
}

static const st_file_id f1 = {1, 2, 3, 4, 6}, f2 = {1, 2, 3, 5, 6}, f3 = {1, 2, 3, 4, 7};

static void hits_misses_and_off(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    char data[100];
    memset(data, 'x', sizeof data);
    st_cache_put(&f1, 0, 0, data, sizeof data); /* off: nothing kept */
    assert_null(st_cache_get(&f1, 0, 0));
    assert_int_equal(mem_in_use(), base);

    st_cache_set_limit(1 << 20);
    st_cache_put(&f1, 7, 2, data, sizeof data);
    st_cache_ent *e = st_cache_get(&f1, 7, 2);
    assert_non_null(e);
    assert_int_equal(st_cache_size(e), sizeof data);
    assert_memory_equal(st_cache_data(e), data, sizeof data);
    st_cache_release(e);
    /* Another file (a different mtime, or only ctime: a reused inode given
     * the old size and mtime by cp -p), block or column is another key. */
    assert_null(st_cache_get(&f2, 7, 2));
    assert_null(st_cache_get(&f3, 7, 2));
    assert_null(st_cache_get(&f1, 8, 2));
    assert_null(st_cache_get(&f1, 7, 3));
    st_cache_stats st;
    st_cache_stats_get(&st);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.bytes, sizeof data);
    assert_true(st.hits >= 1 && st.misses >= 3);
    st_cache_set_limit(0);
    assert_int_equal(mem_in_use(), base);
}

static void evicts_least_recently_used(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    char a[400], b[400], c[400];
    memset(a, 'a', sizeof a);
    memset(b, 'b', sizeof b);
    memset(c, 'c', sizeof c);
    st_cache_stats before;
    st_cache_stats_get(&before);
    st_cache_set_limit(1000); /* room for two */
    st_cache_put(&f1, 0, 0, a, sizeof a);
    st_cache_put(&f1, 1, 0, b, sizeof b);
    st_cache_release(st_cache_get(&f1, 0, 0)); /* a is now newer than b */
    st_cache_put(&f1, 2, 0, c, sizeof c);
    st_cache_ent *ea = st_cache_get(&f1, 0, 0), *eb = st_cache_get(&f1, 1, 0),
                 *ec = st_cache_get(&f1, 2, 0);
    assert_non_null(ea);
    assert_null(eb);
    assert_non_null(ec);
    st_cache_stats st;
    st_cache_stats_get(&st);
    assert_int_equal(st.entries, 2);
    assert_int_equal(st.evictions - before.evictions, 1);
    assert_true(st.bytes <= 1000);

    /* Evicted while referenced: the data stays valid until released. */
    st_cache_set_limit(0);
    assert_memory_equal(st_cache_data(ea), a, sizeof a);
    assert_memory_equal(st_cache_data(ec), c, sizeof c);
    st_cache_release(ea);
    st_cache_release(ec);
    assert_int_equal(mem_in_use(), base);

    /* An entry larger than the bound is not kept. */
    st_cache_set_limit(100);
    st_cache_put(&f1, 0, 0, a, sizeof a);
    assert_null(st_cache_get(&f1, 0, 0));
    st_cache_set_limit(0);
}

/* Passes: a pass bigger than the cache keeps what it cached (the next
 * pass over the same keys hits it) instead of evicting it for its own new
 * entries; a new pass makes room of what the passes before used, least
 * recently used first; st_cache_set_limit(0) ends passes (plain LRU). */
static void passes_keep_what_they_cached(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    char d[400];
    memset(d, 'd', sizeof d);
    st_cache_set_limit(1000); /* room for two */
    for (int pass = 0; pass < 3; pass++) {  /* blocks 0, 1, 2, 3 each pass */
        st_cache_begin_pass();
        for (uint64_t blk = 0; blk < 4; blk++) {
            st_cache_ent *e = st_cache_get(&f1, blk, 0);
            assert_true((e != NULL) == (pass > 0 && blk < 2));  /* 0 and 1 kept, 2 and 3 not */
            st_cache_release(e);
            if (!e)
                st_cache_put(&f1, blk, 0, d, sizeof d);
        }
    }
    st_cache_begin_pass();  /* another pass, over other keys: 0 goes, then 1 */
    st_cache_release(st_cache_get(&f1, 1, 0));
    st_cache_put(&f1, 9, 0, d, sizeof d);
    st_cache_ent *e0 = st_cache_get(&f1, 0, 0), *e1 = st_cache_get(&f1, 1, 0), *e9 = st_cache_get(&f1, 9, 0);
    assert_null(e0);
    assert_non_null(e1);
    assert_non_null(e9);
    st_cache_release(e1);
    st_cache_release(e9);
    st_cache_put(&f1, 8, 0, d, sizeof d);   /* this pass holds two: not kept */
    assert_null(st_cache_get(&f1, 8, 0));
    st_cache_set_limit(0);
    st_cache_set_limit(1000);   /* passes ended: LRU, the newest kept */
    for (uint64_t blk = 0; blk < 4; blk++)
        st_cache_put(&f1, blk, 0, d, sizeof d);
    e0 = st_cache_get(&f1, 0, 0);
    st_cache_ent *e3 = st_cache_get(&f1, 3, 0);
    assert_null(e0);
    assert_non_null(e3);
    st_cache_release(e3);
    st_cache_set_limit(0);
    assert_int_equal(mem_in_use(), base);
}

static void put_is_best_effort(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    char a[64] = "first", b[64] = "second";
    st_cache_set_limit(1 << 20);
    mem_fail_after(1);
    st_cache_put(&f1, 0, 0, a, sizeof a); /* out of memory: not cached, no error */
    mem_fail_after(0);
    assert_null(st_cache_get(&f1, 0, 0));
    st_cache_put(&f1, 0, 0, a, sizeof a);
    st_cache_put(&f1, 0, 0, b, sizeof b); /* already there: kept as it was */
    st_cache_ent *e = st_cache_get(&f1, 0, 0);
    assert_string_equal(st_cache_data(e), "first");
    st_cache_release(e);
    st_cache_set_limit(0);
    assert_int_equal(mem_in_use(), base);
}

/* ---- readers ----------------------------------------------------------- */

static const char calls_text[] = "key onum: u64\nkey ts: time\ntagset state: enum(open, billed, closed)\n"
                                 "tag sys: enum(RICS, BILL, SWITCH)\ntag bsid: u16\ntag dnum: char[16]\n";

static st_schema *write_calls(const char *path, gen_tagsets *t)
{
    st_err err = {0};
    st_schema *s = st_schema_parse(calls_text, strlen(calls_text), 1, 1, &err);
    assert_non_null(s);
    gen g = {42};
    gen_make_tagsets(&g, s, 3000, 6, 1, t);
    st_write_opts o;
    st_write_opts_default(&o);
    o.block_size = 8192;
    st_writer *w = st_writer_create(path, s, &o, &err);
    assert_non_null(w);
    for (uint32_t i = 0; i < t->n; i++)
        assert_int_equal(st_writer_append(w, gen_row(s, t, i), gen_tags(s, t, i), gen_ntags(t, i), &err), 0);
    assert_int_equal(st_writer_commit(w, &err), 0);
    return s;
}

/* Reads the file with the columns cols (n of them) and checks every batch
 * against the model; returns the reader's stats. */
/* A reader of path decoding the columns cols (n of them). */
static st_reader *open_cols(const char *path, const uint32_t *cols, uint32_t n, bool cache)
{
    st_err err = {0};
    st_nbuf_opts io;
    st_nbuf_opts_default(&io);
    io.cache = cache;
    st_reader *r = st_reader_open(path, &io, &err);
    if (!r)
        fail_msg("%s", err.msg);
    assert_int_equal(st_reader_select(r, cols, n, &err), 0);
    return r;
}

static st_read_stats read_all(const char *path, const st_schema *s, const gen_tagsets *t,
                              const uint32_t *cols, uint32_t n, bool cache)
{
    st_err err = {0};
    st_reader *r = open_cols(path, cols, n, cache);
    const st_batch *b;
    uint32_t at = 0;
    int rc;
    while ((rc = st_reader_next(r, &b, &err)) == 1) {
        for (uint32_t c = 0; c < st_schema_ncols(s); c++) {
            bool want = false;
            for (uint32_t i = 0; i < n; i++)
                want |= cols[i] == c;
            if (want)
                assert_non_null(b->cols[c]);
        }
        at = gen_check_batch(s, t, at, b);
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(at, t->n);
    st_read_stats st;
    st_reader_stats(r, &st);
    st_reader_close(r);
    return st;
}

static void readers_share_decoded_columns(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/calls.ts", dir);
    gen_tagsets t;
    st_schema *s = write_calls(path, &t);
    size_t base = mem_in_use();
    st_cache_set_limit(64 << 20);
    uint32_t two[] = {2, 4}, one[] = {4}, three[] = {0, 2, 4};
    st_read_stats first = read_all(path, s, &t, two, 2, true);
    assert_true(first.blocks_read > 1);
    assert_int_equal(first.blocks_cached, 0);
    /* The same columns, or fewer: every block from the cache, no bytes read. */
    st_read_stats again = read_all(path, s, &t, two, 2, true);
    assert_int_equal(again.blocks_cached, first.blocks_read);
    assert_int_equal(again.blocks_read, 0);
    assert_int_equal(again.bytes_read, 0);
    st_read_stats fewer = read_all(path, s, &t, one, 1, true);
    assert_int_equal(fewer.blocks_cached, first.blocks_read);
    /* A column not cached yet: read from the file, then cached too. */
    st_read_stats more = read_all(path, s, &t, three, 3, true);
    assert_int_equal(more.blocks_read, first.blocks_read);
    more = read_all(path, s, &t, three, 3, true);
    assert_int_equal(more.blocks_cached, first.blocks_read);
    /* A reader without the cache reads the file. */
    st_read_stats plain = read_all(path, s, &t, two, 2, false);
    assert_int_equal(plain.blocks_read, first.blocks_read);

    /* A replaced file is another file: a damaged copy renamed over the
     * path is read from disk, and its damage found, not hidden by the cache. */
    char bad[420];
    snprintf(bad, sizeof bad, "%s.bad", path);
    size_t n;
    unsigned char *f = gen_slurp(path, &n);
    /* A byte in the middle of block 0's column 4 (a column the readers read). */
    size_t block0 = 40 + st_get32(f + 20) + st_get32(f + 24);
    uint64_t off[8];
    uint32_t len[8];
    st_err err = {0};
    uint64_t foot = st_get64(f + n - 32);
    uint32_t size0 = st_get32(f + foot + 40 + 8); /* block 0's footer entry */
    assert_int_equal(st_block_locate(s, st_get32(f + 8), f + block0, size0, off, len, &err), 0);
    f[block0 + off[4] + len[4] / 2] ^= 0x10;
    FILE *out = fopen(bad, "wb");
    assert_int_equal(fwrite(f, 1, n, out), n);
    fclose(out);
    mem_free(f, n + 1);
    assert_int_equal(rename(bad, path), 0);
    st_nbuf_opts io;
    st_nbuf_opts_default(&io);
    io.cache = true;
    st_reader *r = st_reader_open(path, &io, &err);
    assert_non_null(r);
    assert_int_equal(st_reader_select(r, two, 2, &err), 0);
    const st_batch *b;
    assert_int_equal(st_reader_next(r, &b, &err), -1);
    assert_non_null(strstr(err.msg, "calls.ts: block 0: column 'bsid': checksum mismatch"));
    st_reader_close(r);

    st_cache_set_limit(0);
    assert_int_equal(mem_in_use(), base);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* How many blocks a reader of path decoding cols would take from the
 * cache (explain's figure), before reading any. */
static uint64_t blocks_cached(const char *path, const uint32_t *cols, uint32_t n)
{
    st_reader *r = open_cols(path, cols, n, false);
    uint64_t k = st_reader_blocks_cached(r);
    st_reader_close(r);
    return k;
}

static void predicts_cached_blocks(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/calls.ts", dir);
    gen_tagsets t;
    st_schema *s = write_calls(path, &t);
    size_t base = mem_in_use();
    uint32_t two[] = {2, 4}, one[] = {4}, three[] = {0, 2, 4};
    st_cache_set_limit(64 << 20);
    assert_int_equal(blocks_cached(path, two, 2), 0);
    st_read_stats first = read_all(path, s, &t, two, 2, true);
    st_cache_stats before, after;
    st_cache_stats_get(&before);
    assert_int_equal(blocks_cached(path, two, 2), first.blocks_read);
    assert_int_equal(blocks_cached(path, one, 1), first.blocks_read);
    assert_int_equal(blocks_cached(path, three, 3), 0);   /* column 0 is not there */
    /* Looking is not using: no hit or miss counted (the opens count none:
     * their readers do not use the cache). */
    st_cache_stats_get(&after);
    assert_int_equal(after.hits, before.hits);
    assert_int_equal(after.misses, before.misses);
    assert_int_equal(read_all(path, s, &t, two, 2, true).blocks_cached, first.blocks_read);
    st_cache_set_limit(0);  /* off: nothing cached */
    assert_int_equal(blocks_cached(path, two, 2), 0);
    assert_int_equal(mem_in_use(), base);
    gen_free_tagsets(s, &t);
    st_schema_free(s);
}

/* Rows of a file like an event store's: run, event, a reference the same
 * for 50 rows, a random double: 12000 tagsets in 4 KiB blocks. */
static st_schema *write_events(const char *path)
{
    const char *text = "key run: u32; key event: u64; tagset ref: char[36]; tagset x: f64";
    st_err err = {0};
    st_schema *s = st_schema_parse(text, strlen(text), 1, 1, &err);
    assert_non_null(s);
    st_write_opts o;
    st_write_opts_default(&o);
    o.block_size = 4096;
    st_writer *w = st_writer_create(path, s, &o, &err);
    assert_non_null(w);
    unsigned char row[56];
    for (uint32_t i = 0; i < 12000; i++) {
        double x = i * 0.37;
        uint64_t xb;
        memcpy(&xb, &x, 8);
        gen_event_row(s, i, 1 + i / 500, 7 * (uint64_t)i, xb, row);
        assert_int_equal(st_writer_append(w, row, NULL, 0, &err), 0);
    }
    assert_int_equal(st_writer_commit(w, &err), 0);
    return s;
}

/* Column c of b (left encoded or not) gathered at every step-th row, the
 * first 200, holds what a decoding reader's batch a holds there. */
static void gathers_as_decoded(const st_schema *s, const st_batch *b, const st_batch *a, uint32_t c,
                               uint32_t step)
{
    uint32_t rows[200] = {0}, k = 0, w = s->fields[c].width;
    unsigned char got[200 * 36];
    for (uint32_t i = 0; i < b->ntagsets && k < 200; i += step)
        rows[k++] = i;
    st_batch_gather(s, b, c, rows, k, got);
    for (uint32_t j = 0; j < k; j++)
        assert_memory_equal(got + (size_t)j * w, (const char *)a->cols[c] + (size_t)rows[j] * w, w);
}

/* Columns left encoded (st_reader_defer) give, gathered, the values a
 * decoding reader gives; the cache keeps them encoded, much smaller than
 * decoded, and serves them on the next pass, which reads nothing. */
static void deferred_columns_cached_encoded(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/ev.ts", dir);
    st_schema *s = write_events(path);
    size_t base = mem_in_use();
    st_cache_set_limit(64 << 20);
    uint32_t cols[] = {0, 1, 2, 3}, deferred[] = {1, 2};
    st_err err = {0};
    st_nbuf_opts io;
    st_nbuf_opts_default(&io);
    for (int pass = 0; pass < 2; pass++) {
        st_reader *plain = st_reader_open(path, &io, &err);
        io.cache = true;
        st_reader *r = st_reader_open(path, &io, &err);
        io.cache = false;
        assert_non_null(plain);
        assert_non_null(r);
        assert_int_equal(st_reader_select(r, cols, 4, &err), 0);
        assert_int_equal(st_reader_defer(r, deferred, 2, &err), 0);
        const st_batch *a, *b;
        uint64_t nblocks = 0, enc = 0;
        while (st_reader_next(r, &b, &err) == 1) {
            assert_int_equal(st_reader_next(plain, &a, &err), 1);
            for (uint32_t c = 0; c < 4; c++) {
                enc += b->enc[c].codec != 0;
                gathers_as_decoded(s, b, a, c, 3);
            }
            assert_non_null(b->cols[3]);    /* not deferred: decoded */
            nblocks++;
        }
        assert_int_equal(st_reader_next(plain, &a, &err), 0);
        assert_int_equal(enc, 2 * nblocks);    /* event by FOR, ref by RLE: both left encoded */
        st_read_stats rs;
        st_reader_stats(r, &rs);
        assert_int_equal(pass ? rs.blocks_cached : rs.blocks_read, nblocks);
        assert_int_equal(pass ? rs.bytes_read : 0, 0);
        st_cache_stats cs;
        st_cache_stats_get(&cs);
        /* run and x decoded (12 bytes a row), event and ref encoded: far
         * less than their 44 bytes a row decoded */
        assert_true(cs.bytes < 12000 * 12 + 12000 * 44 / 8);
        st_reader_close(r);
        st_reader_close(plain);
    }
    st_cache_set_limit(0);
    assert_int_equal(mem_in_use(), base);
    st_schema_free(s);
}

/* A block's columns cached both ways, encoded by a reader leaving them so
 * and decoded by one that does not (ST_CACHE_ENCODED keeps their keys
 * apart): each reader then takes its own form, reads nothing, and sees or
 * gathers the values the file holds. */
static void both_forms_cached_apart(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/ev2.ts", dir);
    st_schema *s = write_events(path);
    st_cache_set_limit(64 << 20);
    uint32_t cols[] = {0, 1, 2, 3}, deferred[] = {1, 2};
    uint64_t nblocks = 0;
    for (int round = 0; round < 4; round++) {
        bool defer = round % 2 == 0;    /* first the deferring reader: encoded, then decoded */
        st_err err = {0};
        st_reader *r = open_cols(path, cols, 4, true), *plain = open_cols(path, cols, 4, false);
        assert_int_equal(st_reader_defer(r, deferred, defer ? 2 : 0, &err), 0);
        const st_batch *a, *b;
        nblocks = 0;
        while (st_reader_next(r, &b, &err) == 1) {
            assert_int_equal(st_reader_next(plain, &a, &err), 1);
            for (uint32_t c = 0; c < 4; c++) {
                bool enc = defer && (c == 1 || c == 2);
                assert_true(enc ? !b->cols[c] && b->enc[c].codec : b->cols[c] && !b->enc[c].codec);
                gathers_as_decoded(s, b, a, c, 7);
            }
            nblocks++;
        }
        assert_int_equal(err.code, 0);
        st_read_stats rs;
        st_reader_stats(r, &rs);
        assert_int_equal(rs.blocks_cached, round < 2 ? 0 : nblocks);
        if (round >= 2)
            assert_int_equal(rs.bytes_read, 0);
        st_reader_close(r);
        st_reader_close(plain);
    }
    st_cache_stats cs;
    st_cache_stats_get(&cs);
    /* a block's run, x, and event and ref both ways; the file's header and footer */
    assert_int_equal(cs.entries, 6 * nblocks + 1);
    st_cache_set_limit(0);
    st_schema_free(s);
}

static void note_bad(void *ctx, const char *path, uint64_t block, const char *msg)
{
    (void)path;
    if (block == 1)     /* the block damaged: its message, once */
        snprintf(ctx, 300, "%s", msg);
}

/* A run table damaged behind correct checksums (a bug, or a hostile file):
 * verify names the file, block and column; a reader leaving the column
 * encoded refuses the block as one decoding it does, with the same words. */
static void damaged_run_table_is_named(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/ev.ts", dir);
    st_schema *s = write_events(path);
    size_t n;
    unsigned char *f = gen_slurp(path, &n);
    uint64_t foot = st_get64(f + n - 32);
    /* block 1's footer entry (FORMAT.md, "Footer") */
    const unsigned char *e1 = f + foot + 40 + 24 + 2 * (size_t)s->key_size + 16 * (size_t)st_schema_ncols(s);
    unsigned char *blk = f + st_get64(e1);
    uint64_t off[8];
    uint32_t len[8];
    st_err err = {0};
    assert_int_equal(st_block_locate(s, 6, blk, st_get32(e1 + 8), off, len, &err), 0);
    unsigned char *d = blk + ST_BLOCK_HEADER + ST_BLOCK_DIRENT * 2;   /* ref's entry */
    assert_int_equal(d[0], ST_LW_RLE);
    st_put32(blk + off[2], st_get32(blk + off[2]) + 1);   /* one run more than it holds */
    st_put64(d + 12, XXH3_64bits(blk + off[2], len[2]));
    st_put64(blk, XXH3_64bits(blk + 8, st_block_head_size(s) - 8));
    FILE *out = fopen(path, "wb");
    assert_int_equal(fwrite(f, 1, n, out), n);
    fclose(out);
    mem_free(f, n + 1);
    char msg[300] = "";
    assert_int_equal(st_reader_verify(path, NULL, note_bad, msg, &err), 1);
    assert_non_null(strstr(msg, "column 'ref': run table of"));
    uint32_t cols[] = {0, 2}, deferred[] = {2};
    for (int defer = 0; defer < 2; defer++) {
        st_reader *r = open_cols(path, cols, 2, false);
        assert_int_equal(st_reader_defer(r, deferred, (uint32_t)defer, &err), 0);
        const st_batch *b;
        assert_int_equal(st_reader_next(r, &b, &err), 1);
        assert_int_equal(st_reader_next(r, &b, &err), -1);
        assert_non_null(strstr(err.msg, "ev.ts: block 1: column 'ref': run table of"));
        st_reader_close(r);
    }
    st_schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hits_misses_and_off),
        cmocka_unit_test(evicts_least_recently_used),
        cmocka_unit_test(put_is_best_effort),
        cmocka_unit_test(readers_share_decoded_columns),
        cmocka_unit_test(predicts_cached_blocks),
        cmocka_unit_test(passes_keep_what_they_cached),
        cmocka_unit_test(deferred_columns_cached_encoded),
        cmocka_unit_test(both_forms_cached_apart),
        cmocka_unit_test(damaged_run_table_is_named),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
