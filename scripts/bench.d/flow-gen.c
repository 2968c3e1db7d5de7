/* flow-gen: data the query engine was not tuned on, for the benchmark's
 * flow shapes: a call-flow simulation. Calls arrive a second apart from
 * 50,000 subscribers (onum, skewed: some call often), each seen by 1 to 10
 * systems in turn (a tag each: when, which system, its status, the base
 * station, the seconds of the call so far, and the far end among a
 * million numbers). Text only, as a user would have it:
 *
 *   flow-gen DIR NTAGS
 *
 * writes DIR/flow.tsv (a tag a line, in the store's field order, for
 * `comb store load`), DIR/t.csv (the same tags flattened, their call's
 * fields on each line) and DIR/c.csv (a line per call) for DuckDB, in
 * arrival order. Deterministic (a fixed seed). Plain C, no comb code. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const syss[] = {"RICS", "BILL", "SETL", "SWITCH", "LEC", "IXC", "TAP"};
static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t rnd(uint64_t n)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (rng * 0x2545F4914F6CDD1Dull >> 11) % n;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: flow-gen DIR NTAGS\n");
        return 2;
    }
    char path[3][4096];
    const char *names[] = {"flow.tsv", "t.csv", "c.csv"};
    FILE *f[3];
    for (int i = 0; i < 3; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", argv[1], names[i]);
        if (!(f[i] = fopen(path[i], "w"))) {
            perror(path[i]);
            return 1;
        }
    }
    fprintf(f[1], "onum,start,cid,seen,sys,status,bsid,dur,peer\n");
    fprintf(f[2], "onum,start,cid,ntags\n");
    uint64_t want = strtoull(argv[2], NULL, 10), n = 0;
    int64_t base = 1764547200;  /* 2025-12-01 */
    for (uint64_t cid = 1; n < want; cid++) {
        uint64_t a = rnd(50000), b = rnd(50000);
        uint64_t onum = 2015550000 + (a < b ? a : b);   /* the low numbers call more */
        int64_t start = base + (int64_t)cid, seen = start;
        int ntags = 1 + (int)rnd(10), dur = 0;
        bool billed = false;
        int j;
        for (j = 0; j < ntags && n < want; j++, n++) {
            int sys = j == 0 ? (rnd(10) < 7 ? 0 : 3) : (int)rnd(7);
            if (sys == 2 && !billed)
                sys = 1;    /* a settlement follows a bill */
            billed |= sys == 1;
            int status = rnd(4) == 0 ? 1 + (int)rnd(5) : 0;
            int bsid = 1 + (int)(rnd(400) * rnd(400) / 400);
            dur += (int)rnd(j == 0 ? 60 : 900);
            uint64_t peer = 9000000000 + rnd(1000000);
            seen += (int64_t)rnd(120);
            fprintf(f[0], "%" PRIu64 "\t%" PRId64 "\t%" PRIu64 "\t%" PRId64 "\t%s\t%d\t%d\t%d\t%" PRIu64 "\n",
                    onum, start, cid, seen, syss[sys], status, bsid, dur, peer);
            fprintf(f[1], "%" PRIu64 ",%" PRId64 ",%" PRIu64 ",%" PRId64 ",%s,%d,%d,%d,%" PRIu64 "\n",
                    onum, start, cid, seen, syss[sys], status, bsid, dur, peer);
        }
        fprintf(f[2], "%" PRIu64 ",%" PRId64 ",%" PRIu64 ",%d\n", onum, start, cid, j);
    }
    for (int i = 0; i < 3; i++)
        if (fclose(f[i]) != 0) {
            perror(path[i]);
            return 1;
        }
    return 0;
}
