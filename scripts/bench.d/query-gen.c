/* query-gen: the query benchmark's data: a Gecko-like datastore (calls,
 * a tagset per call, a tag per tap point that saw it) written through
 * comb's own loader, and the same calls as text for the peers: calls.txt
 * (a line per tagset, its tags after it, for mawk) and t.csv / g.csv
 * (tagsets and tags, for sqlite3 and DuckDB).
 *
 *   query-gen DIR NTAGSETS    (about 5 tags per tagset)
 *
 * Deterministic (a fixed xorshift seed). Writes DIR/sample: an onum and
 * bsid that exist, for the benchmark's key query. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/datastore.h"
#include "store/load.h"
#include "store/mem.h"

static const char schema_text[] =
    "key onum: u64; key ts: time\n"
    "tagset bsid: u16; tagset dur: u32; tagset state: enum(open, billed, closed)\n"
    "tag sys: enum(RICS, BILL, SWITCH, LEC, IXC, TAP, CRIS); tag status: u8; tag dnum: char[12]\n";
static const char *const states[] = {"open", "billed", "closed"};
static const char *const syss[] = {"RICS", "BILL", "SWITCH", "LEC", "IXC", "TAP", "CRIS"};

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng % n;
}

static void die(const char *what, const st_err *err)
{
    fprintf(stderr, "query-gen: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

static FILE *out(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        die(path, NULL);
    return f;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: query-gen DIR NTAGSETS\n");
        return 2;
    }
    const char *dir = argv[1];
    uint64_t n = strtoull(argv[2], NULL, 10);
    char path[4096];
    st_err err;
    st_schema *s = st_schema_parse(schema_text, sizeof schema_text - 1, 1, 1, &err);
    if (!s)
        die("schema", &err);
    snprintf(path, sizeof path, "%s/store", dir);
    st_store_meta meta = {"calls", "onum", 2, 16, schema_text, sizeof schema_text - 1};
    if (st_store_create(path, &meta, &err) < 0)
        die(path, &err);
    st_store *st = st_store_open(path, &err);
    if (!st)
        die(path, &err);
    st_load *l = st_load_new(st, NULL, &err);
    if (!l)
        die("loader", &err);
    FILE *txt = out(dir, "calls.txt"), *tcsv = out(dir, "t.csv"), *gcsv = out(dir, "g.csv");
    fprintf(tcsv, "id,onum,ts,bsid,dur,state\n");
    fprintf(gcsv, "id,seq,sys,status,dnum\n");
    unsigned char row[64], tag[32];
    uint64_t sample_onum = 0, sample_bsid = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t onum = 7325550000ull + rnd(n / 2 + 1);
        int64_t ts = 1796083200 + (int64_t)i;  /* unique: no two calls share a key */
        uint16_t bsid = (uint16_t)rnd(200);
        uint32_t dur = (uint32_t)rnd(3600);
        uint8_t state = (uint8_t)rnd(3);
        memcpy(row, &onum, 8);
        memcpy(row + 8, &ts, 8);
        memcpy(row + 16, &bsid, 2);
        memcpy(row + 18, &dur, 4);
        row[22] = state;
        if (i == n / 3) {
            sample_onum = onum;
            sample_bsid = bsid;
        }
        fprintf(txt, "%" PRIu64 "|%" PRId64 "|%u|%u|%s", onum, ts, bsid, dur, states[state]);
        fprintf(tcsv, "%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%u,%u,%s\n", i, onum, ts, bsid, dur, states[state]);
        uint64_t ntags = 1 + rnd(9);
        for (uint64_t j = 0; j < ntags; j++) {
            uint8_t sys = (uint8_t)rnd(7), status = (uint8_t)rnd(4);
            char dnum[13];
            snprintf(dnum, sizeof dnum, "201555%04u", (unsigned)rnd(10000));
            tag[0] = sys;
            tag[1] = status;
            memset(tag + 2, 0, 12);
            memcpy(tag + 2, dnum, strlen(dnum));
            if (st_load_add(l, row, tag, &err) < 0)
                die("add", &err);
            fprintf(txt, "|%s:%u:%s", syss[sys], status, dnum);
            fprintf(gcsv, "%" PRIu64 ",%" PRIu64 ",%s,%u,%s\n", i, j, syss[sys], status, dnum);
        }
        fputc('\n', txt);
    }
    st_update_stats stats;
    if (st_load_commit(l, &stats, &err) < 0)
        die("load", &err);
    st_store_close(st);
    st_schema_free(s);
    if (fclose(txt) || fclose(tcsv) || fclose(gcsv))
        die("text files", NULL);
    FILE *f = out(dir, "sample");
    fprintf(f, "%" PRIu64 " %" PRIu64 "\n", sample_onum, sample_bsid);
    fclose(f);
    printf("query-gen: %" PRIu64 " tagsets, %" PRIu64 " tags\n", stats.out_tagsets, stats.out_tags);
    return 0;
}
