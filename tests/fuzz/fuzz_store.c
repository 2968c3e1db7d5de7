/* fuzz_store: libFuzzer target for the tagset file reader (files are untrusted).
 *
 * Each input is written to a scratch file and opened, scanned (all columns;
 * the key and tagset columns left encoded where stored by RLE or FOR and
 * gathered at rows; then two with a range, after a seek), printed value by
 * value and verified. Built with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, which turns
 * the checksum comparisons off so mutations reach the parsers behind them.
 * `make fuzz-store` builds and runs it on seeds from store_seed. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/mem.h"
#include "store/nbuf.h"
#include "store/tagfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *scratch(void)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/fuzz_store.%ld", (long)getpid());
    return path;
}

/* Prints every decoded value, as `comb` would when showing tagsets. */
static void touch(const st_schema *s, const st_batch *b)
{
    char buf[8192];
    for (uint32_t c = 0; c < b->ncols; c++) {
        if (!b->cols[c])
            continue;
        const st_field *f = st_schema_col(s, c);
        uint32_t n = st_schema_col_is_tag(s, c) ? b->ntags : b->ntagsets;
        for (uint32_t i = 0; i < n; i++)
            st_field_format(f, (const char *)b->cols[c] + (size_t)i * f->width, buf, sizeof buf);
    }
    for (uint32_t t = b->first; b->tag_start && t < b->ntagsets; t++)
        if (b->tag_start[t] > b->tag_start[t + 1] || b->tag_start[t + 1] > b->ntags)
            __builtin_trap();
}

static void scan(st_reader *r)
{
    const st_batch *b;
    st_err err;
    while (st_reader_next(r, &b, &err) == 1)
        touch(st_reader_schema(r), b);
}

/* The key and tagset columns left encoded where a block stores them by RLE
 * or FOR (st_reader_defer, as a select's shown columns are), gathered at
 * every row from the scan's first and at every third, as a collecting
 * scan gathers them at the rows its where keeps. */
static void gather(st_reader *r)
{
    const st_schema *s = st_reader_schema(r);
    uint32_t cols[ST_MAX_FIELDS], n = 0, maxw = 1;
    st_err err;
    for (uint32_t c = 0; c < s->nrow && c < ST_MAX_FIELDS; c++) {
        cols[n++] = c;
        maxw = s->fields[c].width > maxw ? s->fields[c].width : maxw;
    }
    st_reader_rewind(r);
    if (st_reader_select(r, cols, n, &err) < 0 || st_reader_defer(r, cols, n, &err) < 0)
        return;
    const st_batch *b;
    char buf[8192];
    while (st_reader_next(r, &b, &err) == 1) {
        uint32_t k = 0, *rows = mem_alloc(((size_t)b->ntagsets + 1) * 4);
        size_t size = (size_t)b->ntagsets * maxw + 1;
        unsigned char *out = rows ? mem_alloc(size) : NULL;
        for (int step = 1; out && step <= 3; step += 2) {
            k = 0;
            for (uint32_t i = b->first; i < b->ntagsets; i += (uint32_t)step)
                rows[k++] = i;
            for (uint32_t c = 0; c < n; c++) {
                const st_field *f = st_schema_col(s, c);
                st_batch_gather(s, b, c, rows, k, out);
                for (uint32_t j = 0; j < k; j++)
                    st_field_format(f, (const char *)out + (size_t)j * f->width, buf, sizeof buf);
            }
        }
        mem_free(out, size);
        mem_free(rows, ((size_t)b->ntagsets + 1) * 4);
    }
    st_reader_defer(r, NULL, 0, &err);
    st_reader_rewind(r);
}

static void note(void *ctx, const char *path, uint64_t block, const char *msg)
{
    (void)ctx, (void)path, (void)block, (void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(scratch(), "wb");
    if (!f || fwrite(data, 1, size, f) != size) {
        if (f)
            fclose(f);
        return 0;
    }
    fclose(f);
    st_err err;
    st_nbuf_opts io = {2, 4096, false, false};
    st_reader *r = st_reader_open(scratch(), &io, &err);
    if (r) {
        const st_schema *s = st_reader_schema(r);
        scan(r);
        gather(r);
        /* Two columns, a range on the first, from a key made of input bytes. */
        uint32_t cols[2] = {0, st_schema_ncols(s) - 1};
        unsigned char key[4096] = {0};
        size_t klen = s->key_size < sizeof key ? s->key_size : sizeof key;
        memcpy(key, data, size < klen ? size : klen);
        st_range range = {0, key, NULL};
        if (s->key_size <= sizeof key && st_reader_select(r, cols, 2, &err) == 0 &&
            st_reader_where(r, &range, 1, &err) == 0) {
            st_reader_seek(r, key);
            scan(r);
        }
        st_reader_close(r);
        st_reader_verify(scratch(), &io, note, NULL, &err);
    }
    return 0;
}
