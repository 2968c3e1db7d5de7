/* rowspill: the rows a scan collects for a sort without take, once they
 * pass the memory budget (COMB_SORT_MB): handed to the store's external
 * sort (store/sort.h), which spills sorted runs to $TMPDIR and merges
 * them, then read back in order in the collected form (vm/query/scan.c's
 * records: [sort key][row][u32 ntags][tags], or [sort key][row][tag]).
 *
 * The sorter takes fixed-width records, so a tagset becomes one record per
 * tag (one if it has none): [sort key][partition][sequence][tag index]
 * [row][u32 ntags][tag], the numbers big-endian. The sort compares the key
 * and the three numbers as bytes: rows with equal keys come out by
 * partition, then in the order the partition gave them, as the sort in
 * memory orders them, whatever order the workers added them in; and a
 * tagset's tags stay together, in order. */
#include "config.h"
#include "vm/query/qplan.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/mem.h"
#include "store/sort.h"
#include "vm/lib.h"

#define DEFAULT_MB 256

struct QSpill {
    const QScan *sc;
    st_sorter *sorter;
    size_t cmpw, recw;  /* bytes compared; bytes of a sorter record */
    unsigned char *rec; /* a sorter record being made */
    unsigned char *out; /* a row read back, in the collected form */
    size_t out_cap;
};

size_t qspill_budget(void)
{
    long long mb = lib_env_megabytes("COMB_SORT_MB", DEFAULT_MB);
    return (size_t)(mb < 1 ? 1 : mb) << 20;
}

static int cmp_spilled(const void *a, const void *b, void *ctx)
{
    return memcmp(a, b, ((const QSpill *)ctx)->cmpw);
}

/* n bytes of v, most significant first: memcmp orders them as numbers. */
static void put_be(unsigned char *p, uint64_t v, int n)
{
    while (n--) {
        p[n] = (unsigned char)v;
        v >>= 8;
    }
}

/* The first 8 bytes compared, as a number in their memcmp order. */
static uint64_t prefix_spilled(const void *rec, void *ctx)
{
    const unsigned char *p = rec;
    uint64_t v = 0;
    (void)ctx;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static size_t tagw(const QScan *sc)
{
    return sc->vs->s->tag_size;
}

QSpill *qspill_new(const QScan *sc, size_t budget, st_err *err)
{
    QSpill *q = mem_calloc(1, sizeof *q);
    if (!q) {
        st_err_set(err, ST_ENOMEM, "out of memory in a sort");
        return NULL;
    }
    q->sc = sc;
    q->cmpw = sc->keyw + 16;
    q->recw = q->cmpw + sc->vs->s->row_size + 4 + tagw(sc);
    st_sort_opts o = {.parcel_bytes = budget, .prefix = prefix_spilled};
    q->rec = mem_calloc(1, q->recw);
    if (!q->rec || !(q->sorter = st_sorter_new(q->recw, cmp_spilled, q, &o, err))) {
        if (!q->rec)
            st_err_set(err, ST_ENOMEM, "out of memory in a sort");
        qspill_free(q);
        return NULL;
    }
    return q;
}

/* The record's fields after the compared bytes. */
static unsigned char *rec_row(const QSpill *q, unsigned char *rec)
{
    return rec + q->cmpw;
}

size_t qspill_add(QSpill *q, uint32_t part, uint64_t seq, const unsigned char *r, st_err *err)
{
    const QScan *sc = q->sc;
    const st_schema *s = sc->vs->s;
    uint32_t nt = 0;
    const unsigned char *tags = r + sc->keyw + s->row_size;
    if (sc->tags) {
        nt = 1;
    } else if (s->tag_size) {
        memcpy(&nt, tags, 4);
        tags += 4;
    }
    unsigned char *p = q->rec;
    memcpy(p, r, sc->keyw);
    put_be(p + sc->keyw, part, 4);
    put_be(p + sc->keyw + 4, seq, 8);
    memcpy(rec_row(q, p), r + sc->keyw, s->row_size);
    memcpy(rec_row(q, p) + s->row_size, &nt, 4);
    unsigned char *tag = rec_row(q, p) + s->row_size + 4;
    uint32_t i = 0;
    do {    /* a record even for a tagset without tags */
        put_be(p + sc->keyw + 12, i, 4);
        if (i < nt)
            memcpy(tag, tags + (size_t)i * tagw(sc), tagw(sc));
        if (st_sorter_add(q->sorter, p, err) < 0)
            return 0;
    } while (++i < nt);
    return sc->keyw + s->row_size + (sc->tags ? tagw(sc) : s->tag_size ? 4 + (size_t)nt * tagw(sc) : 0);
}

int qspill_finish(QSpill *q, st_err *err)
{
    return st_sorter_finish(q->sorter, err);
}

int qspill_next(QSpill *q, const unsigned char **out, st_err *err)
{
    const QScan *sc = q->sc;
    const st_schema *s = sc->vs->s;
    const void *v;
    int rc = st_sorter_next(q->sorter, &v, err);
    if (rc != 1)
        return rc;
    const unsigned char *rec = v;
    uint32_t nt;
    memcpy(&nt, rec + q->cmpw + s->row_size, 4);
    bool counted = !sc->tags && s->tag_size;
    size_t need = sc->keyw + s->row_size + 4 + (size_t)(nt ? nt : 1) * tagw(sc);
    if (need > q->out_cap) {
        unsigned char *o = mem_realloc(q->out, q->out_cap, need);
        if (!o) {
            st_err_set(err, ST_ENOMEM, "out of memory in a sort");
            return -1;
        }
        q->out = o;
        q->out_cap = need;
    }
    unsigned char *p = q->out;
    memcpy(p, rec, sc->keyw);
    memcpy(p + sc->keyw, rec + q->cmpw, s->row_size);
    p += sc->keyw + s->row_size;
    if (counted) {
        memcpy(p, &nt, 4);
        p += 4;
    }
    /* A tagset's records follow one another: the first carries tag 0. */
    for (uint32_t i = 0; i < nt; i++) {
        if (i && (rc = st_sorter_next(q->sorter, &v, err)) != 1) {
            if (!rc)
                st_err_set(err, ST_ECORRUPT, "sort: a tagset's tags were cut short");
            return -1;
        }
        memcpy(p, (const unsigned char *)v + q->cmpw + s->row_size + 4, tagw(sc));
        p += tagw(sc);
    }
    *out = q->out;
    return 1;
}

void qspill_free(QSpill *q)
{
    if (!q)
        return;
    st_sorter_free(q->sorter);
    mem_free(q->rec, q->recw);
    mem_free(q->out, q->out_cap);
    mem_free(q, sizeof *q);
}
