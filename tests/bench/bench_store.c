/* bench_store: the store benchmark's driver (run by scripts/bench.d/store).
 *
 *   bench_store write PATH MB [lz4|hc|none]   write a Gecko-like file of MB MiB uncompressed
 *   bench_store scan PATH [FIELD...]          scan it: all columns, or the fields named
 *   bench_store seek PATH N                   N seeks to random keys, each reading its block
 *   bench_store dump PATH OUT MB              the first MB MiB of decoded column bytes, for lz4 -b
 *
 * Each prints one line of name=value pairs. Data: calls keyed (onum, ts,
 * cid) in onum order, 1 to 7 tags each, from a fixed seed. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "store/mem.h"
#include "store/tagfile.h"

static const char schema_text[] =
    "key onum: u64\n"
    "key ts: time\n"
    "key cid: u32\n"
    "tagset state: enum(open, billed, closed, exited)\n"
    "tagset first: time\n"
    "tag sys: enum(RICS, BILL, SWITCH, CABS, TAPA, TAPB, MPS)\n"
    "tag bsid: u16\n"
    "tag dnum: char[16]\n"
    "tag status: u8\n"
    "tag dur: u32\n"
    "tag when: time\n";

#define ONUM0 UINT64_C(7325550000)

static uint64_t rng = 42;

static uint64_t rnd(void)
{
    uint64_t z = (rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
           (double)u.ru_stime.tv_usec / 1e6;
}

static long peak_rss_kb(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

static void die(const st_err *err)
{
    fprintf(stderr, "bench_store: %s\n", err->msg);
    exit(1);
}

/* Field offsets, looked up once. */
typedef struct layout {
    uint32_t onum, ts, cid, state, first, sys, bsid, dnum, status, dur, when;
} layout;

static uint32_t off(const st_schema *s, const char *name)
{
    return s->fields[st_schema_find(s, name, strlen(name))].offset;
}

#define BATCH 65536 /* tagsets generated (untimed) before each timed append run */

/* Generates BATCH calls into rows/tags/counts; keys continue from *onum, *ts. */
static void generate(const st_schema *s, const layout *l, unsigned char *rows, unsigned char *tags,
                     uint32_t *counts, uint64_t *onum, int64_t *ts)
{
    unsigned char *t = tags;
    for (uint32_t i = 0; i < BATCH; i++) {
        unsigned char *row = rows + (size_t)i * s->row_size;
        uint64_t r = rnd();
        *onum += r % 3 == 0;             /* a few calls per number */
        *ts += 1 + (int64_t)(r >> 8) % 7; /* keys strictly increase */
        uint32_t cid = (uint32_t)(r >> 16) % 100000;
        uint8_t state = (uint8_t)((r >> 40) % 4);
        int64_t first = *ts - (int64_t)((r >> 44) % 600);
        memcpy(row + l->onum, onum, 8);
        memcpy(row + l->ts, ts, 8);
        memcpy(row + l->cid, &cid, 4);
        memcpy(row + l->state, &state, 1);
        memcpy(row + l->first, &first, 8);
        counts[i] = 1 + (uint32_t)((r >> 50) % 7);
        for (uint32_t j = 0; j < counts[i]; j++, t += s->tag_size) {
            uint64_t q = rnd();
            uint8_t sys = (uint8_t)j, status = (uint8_t)(q % 3 == 0);
            uint16_t bsid = (uint16_t)((q >> 8) % 512);
            uint32_t dur = (uint32_t)(q >> 20) % 3600;
            int64_t when = *ts + (int64_t)j;
            char dnum[16] = "2015550000";
            for (uint32_t d = 0, v = (uint32_t)(q >> 32) % 10000; d < 4; d++, v /= 10)
                dnum[9 - d] = (char)('0' + v % 10);
            memcpy(t + l->sys, &sys, 1);
            memcpy(t + l->bsid, &bsid, 2);
            memcpy(t + l->dnum, dnum, 16);
            memcpy(t + l->status, &status, 1);
            memcpy(t + l->dur, &dur, 4);
            memcpy(t + l->when, &when, 8);
        }
    }
}

static int cmd_write(const char *path, uint64_t mb, const char *codec)
{
    st_err err;
    st_schema *s = st_schema_parse(schema_text, strlen(schema_text), 1, 1, &err);
    layout l = {off(s, "onum"), off(s, "ts"), off(s, "cid"), off(s, "state"), off(s, "first"),
                off(s, "sys"), off(s, "bsid"), off(s, "dnum"), off(s, "status"), off(s, "dur"),
                off(s, "when")};
    st_write_opts o;
    st_write_opts_default(&o);
    o.codec = strcmp(codec, "none") == 0 ? ST_CODEC_NONE : strcmp(codec, "hc") == 0 ? ST_CODEC_LZ4HC
                                                                                      : ST_CODEC_LZ4;
    o.label = "bench";
    size_t rows_n = (size_t)BATCH * s->row_size, tags_n = (size_t)BATCH * 7 * s->tag_size;
    unsigned char *rows = mem_alloc(rows_n), *tags = mem_alloc(tags_n);
    uint32_t *counts = mem_alloc(BATCH * sizeof *counts);
    uint64_t onum = ONUM0, raw = 0, want = mb << 20, ntags = 0;
    int64_t ts = 1796216700;
    double secs = 0, cpu = 0, t0 = now(), c0 = cpu_seconds();
    st_writer *w = st_writer_create(path, s, &o, &err);
    if (!w)
        die(&err);
    while (raw < want) {
        secs += now() - t0;
        cpu += cpu_seconds() - c0;
        generate(s, &l, rows, tags, counts, &onum, &ts);
        t0 = now();
        c0 = cpu_seconds();
        const unsigned char *t = tags;
        for (uint32_t i = 0; i < BATCH && raw < want; i++) {
            if (st_writer_append(w, rows + (size_t)i * s->row_size, t, counts[i], &err) < 0)
                die(&err);
            t += (size_t)counts[i] * s->tag_size;
            raw += st_block_tagset_size(s, counts[i]);
            ntags += counts[i];
        }
    }
    uint64_t ntagsets = st_writer_count(w);
    if (st_writer_commit(w, &err) < 0)
        die(&err);
    secs += now() - t0;
    cpu += cpu_seconds() - c0;
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    printf("raw_bytes=%" PRIu64 " file_bytes=%ld tagsets=%" PRIu64 " tags=%" PRIu64
           " seconds=%.3f cpu=%.3f raw_mbps=%.1f\n",
           raw, size, ntagsets, ntags, secs, cpu, (double)raw / secs / 1048576.0);
    mem_free(rows, rows_n);
    mem_free(tags, tags_n);
    mem_free(counts, BATCH * sizeof *counts);
    st_schema_free(s);
    return 0;
}

static uint64_t raw_size(const st_reader *r)
{
    const st_schema *s = st_reader_schema(r);
    st_file_info in;
    st_reader_info(r, &in);
    return in.ntagsets * st_block_tagset_size(s, 0) + in.ntags * s->tag_size;
}

static int cmd_scan(const char *path, int nf, char **fields)
{
    st_err err;
    double t0 = now(), c0 = cpu_seconds();
    st_reader *r = st_reader_open(path, NULL, &err);
    if (!r)
        die(&err);
    const st_schema *s = st_reader_schema(r);
    if (nf > 0) {
        uint32_t cols[64];
        for (int i = 0; i < nf && i < 64; i++) {
            int c = st_schema_find(s, fields[i], strlen(fields[i]));
            if (c < 0) {
                fprintf(stderr, "bench_store: no field %s\n", fields[i]);
                return 1;
            }
            cols[i] = (uint32_t)c;
        }
        if (st_reader_select(r, cols, (uint32_t)nf, &err) < 0)
            die(&err);
    }
    const st_batch *b;
    uint64_t tagsets = 0, decoded = 0;
    int rc;
    while ((rc = st_reader_next(r, &b, &err)) == 1) {
        tagsets += b->ntagsets;
        for (uint32_t c = 0; c < b->ncols; c++)
            if (b->cols[c])
                decoded += (uint64_t)(st_schema_col_is_tag(s, c) ? b->ntags : b->ntagsets) *
                           st_schema_col(s, c)->width;
    }
    if (rc < 0)
        die(&err);
    double secs = now() - t0;
    uint64_t raw = raw_size(r);
    st_read_stats st;
    st_reader_stats(r, &st);
    printf("tagsets=%" PRIu64 " blocks=%" PRIu64 " decoded_bytes=%" PRIu64 " seconds=%.3f cpu=%.3f"
           " file_raw_mbps=%.1f decoded_mbps=%.1f rss_kb=%ld\n",
           tagsets, st.blocks_read, decoded, secs, cpu_seconds() - c0, (double)raw / secs / 1048576.0,
           (double)decoded / secs / 1048576.0, peak_rss_kb());
    st_reader_close(r);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmd_seek(const char *path, int n)
{
    st_err err;
    st_reader *r = st_reader_open(path, NULL, &err);
    if (!r)
        die(&err);
    st_file_info in;
    st_reader_info(r, &in);
    double *lat = mem_alloc((size_t)n * sizeof *lat);
    uint64_t span = in.ntagsets / 3 + 1, found = 0;
    for (int i = 0; i < n; i++) {
        unsigned char key[20] = {0};
        uint64_t onum = ONUM0 + rnd() % span;
        memcpy(key, &onum, 8);
        double t0 = now();
        st_reader_seek(r, key);
        const st_batch *b;
        int rc = st_reader_next(r, &b, &err);
        lat[i] = (now() - t0) * 1e6;
        if (rc < 0)
            die(&err);
        found += rc == 1 && b->first < b->ntagsets;
    }
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += lat[i];
    printf("seeks=%d found=%" PRIu64 " mean_us=%.1f p50_us=%.1f p99_us=%.1f\n", n, found, sum / n,
           lat[n / 2], lat[n * 99 / 100]);
    mem_free(lat, (size_t)n * sizeof *lat);
    st_reader_close(r);
    return 0;
}

static int cmd_dump(const char *path, const char *out, uint64_t mb)
{
    st_err err;
    st_reader *r = st_reader_open(path, NULL, &err);
    if (!r)
        die(&err);
    const st_schema *s = st_reader_schema(r);
    FILE *f = fopen(out, "wb");
    if (!f) {
        perror(out);
        return 1;
    }
    const st_batch *b;
    uint64_t written = 0;
    while (written < mb << 20 && st_reader_next(r, &b, &err) == 1) {
        for (uint32_t c = 0; c < b->ncols; c++) {
            size_t n = (size_t)(st_schema_col_is_tag(s, c) ? b->ntags : b->ntagsets) * st_schema_col(s, c)->width;
            fwrite(b->cols[c], 1, n, f);
            written += n;
        }
    }
    fclose(f);
    printf("dumped_bytes=%" PRIu64 "\n", written);
    st_reader_close(r);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "write") == 0)
        return cmd_write(argv[2], strtoull(argv[3], NULL, 10), argc > 4 ? argv[4] : "lz4");
    if (argc >= 3 && strcmp(argv[1], "scan") == 0)
        return cmd_scan(argv[2], argc - 3, argv + 3);
    if (argc == 4 && strcmp(argv[1], "seek") == 0)
        return cmd_seek(argv[2], atoi(argv[3]));
    if (argc == 5 && strcmp(argv[1], "dump") == 0)
        return cmd_dump(argv[2], argv[3], strtoull(argv[4], NULL, 10));
    fprintf(stderr, "usage: bench_store write PATH MB [lz4|hc|none] | scan PATH [FIELD...] |"
                    " seek PATH N | dump PATH OUT MB\n");
    return 2;
}
