/* recsort: tags in any order -> tag records sorted by (partition, key), read a partition at a time. */
#include "config.h"
#include "store/recsort.h"

#include <stdbool.h>
#include <string.h>

#include "store/mem.h"
#include "store/record.h"

/* A sorted record: the partition number (u32, host order; left out when
 * there is one partition), then a tag record (store/record.h). */
#define PART_BYTES 4u

struct st_recsort {
    const st_schema *s;
    char *name;
    uint32_t nparts;
    unsigned hdr;   /* PART_BYTES, or 0 for one partition */
    unsigned pbits; /* bits of a sort prefix that hold the partition */
    size_t rs;      /* bytes of a sorted record */
    unsigned char *buf; /* the record being added */
    st_sorter *sorter;
    uint64_t n;
    bool failed;
    /* Reading back: the sorted stream, one partition at a time. */
    const unsigned char *cur; /* the first record not yet returned; NULL at the end */
    bool fetch;               /* cur was returned: fetch the next before looking */
    uint32_t part;            /* the partition st_recsort_source reads */
};

static uint32_t part_of(const st_recsort *r, const unsigned char *rec)
{
    uint32_t g = 0;
    if (r->hdr)
        memcpy(&g, rec, PART_BYTES);
    return g;
}

static int part_key_cmp(const void *a, const void *b, void *ctx)
{
    const st_recsort *r = ctx;
    uint32_t pa = part_of(r, a), pb = part_of(r, b);
    if (pa != pb)
        return pa < pb ? -1 : 1;
    return st_rec_cmp((const unsigned char *)a + r->hdr, (const unsigned char *)b + r->hdr,
                      (void *)r->s);
}

/* The partition in the top bits, the first key field's image below: a
 * smaller prefix still means an earlier record, as the sort requires. */
static uint64_t part_key_prefix(const void *rec, void *ctx)
{
    const st_recsort *r = ctx;
    uint64_t k = st_rec_prefix((const unsigned char *)rec + r->hdr, (void *)r->s);
    if (!r->pbits)
        return k;
    return (uint64_t)part_of(r, rec) << (64 - r->pbits) | k >> r->pbits;
}

st_recsort *st_recsort_new(const st_schema *s, uint32_t nparts, const char *name,
                           const st_sort_opts *opts, st_err *err)
{
    if (nparts == 0) {
        st_err_set(err, ST_EINPUT, "%s: no partitions to sort records into", name);
        return NULL;
    }
    st_recsort *r = mem_calloc(1, sizeof *r);
    if (!r || !(r->name = mem_strdup(name))) {
        mem_free(r, sizeof *r);
        st_err_nomem(err, name);
        return NULL;
    }
    r->s = s;
    r->nparts = nparts;
    r->hdr = nparts > 1 ? PART_BYTES : 0;
    while (r->pbits < 32 && (1ull << r->pbits) < nparts)
        r->pbits++;
    r->rs = r->hdr + st_rec_size(s);
    if (!(r->buf = mem_calloc(1, r->rs))) {
        st_err_nomem(err, name);
        goto fail;
    }
    st_sort_opts so = {0};
    if (opts)
        so = *opts;
    so.prefix = part_key_prefix;
    if (!(r->sorter = st_sorter_new(r->rs, part_key_cmp, r, &so, err)))
        goto fail;
    return r;
fail:
    st_recsort_free(r);
    return NULL;
}

uint64_t st_recsort_count(const st_recsort *r) { return r->n; }

int st_recsort_add(st_recsort *r, uint32_t part, const void *row, const void *tag, st_err *err)
{
    if (r->failed)
        return st_err_set(err, ST_EINPUT, "%s: the loader failed earlier; free it", r->name);
    unsigned char *rec = r->buf + r->hdr;
    int rc = 0;
    if (part >= r->nparts)
        rc = st_err_set(err, ST_EINPUT, "no partition %u (there are %u)", part, r->nparts);
    else if (tag && !r->s->tag_size)
        rc = st_err_set(err, ST_EINPUT, "a tag, but the schema has no tag fields");
    if (rc == 0) {
        st_rec_make(r->s, rec, row, tag);
        rc = st_rec_check(r->s, rec, err);
    }
    if (rc < 0) {
        st_err_prefix(err, "%s: record %llu: ", r->name, (unsigned long long)r->n + 1);
        return -1;
    }
    if (r->hdr)
        memcpy(r->buf, &part, PART_BYTES);
    if (st_sorter_add(r->sorter, r->buf, err) < 0) {
        r->failed = true;
        return -1;
    }
    r->n++;
    return 0;
}

static int fetch(st_recsort *r, st_err *err)
{
    const void *p;
    int rc = st_sorter_next(r->sorter, &p, err);
    if (rc < 0)
        return -1;
    r->cur = rc ? p : NULL;
    r->fetch = false;
    return 0;
}

int st_recsort_finish(st_recsort *r, st_err *err)
{
    if (r->failed)
        return st_err_set(err, ST_EINPUT, "%s: the loader failed earlier; nothing was loaded",
                          r->name);
    if (st_sorter_finish(r->sorter, err) < 0 || fetch(r, err) < 0) {
        r->failed = true;
        return -1;
    }
    return 0;
}

int st_recsort_next_part(st_recsort *r, uint32_t *part, st_err *err)
{
    if (r->fetch && fetch(r, err) < 0)
        return -1;
    if (!r->cur)
        return 0;
    *part = part_of(r, r->cur);
    return 1;
}

/* The source's next: a record of r->part, valid until the next call (so
 * the following one is fetched only then). */
static int part_next(void *self, const void **rec, st_err *err)
{
    st_recsort *r = self;
    if (r->fetch && fetch(r, err) < 0)
        return -1;
    if (!r->cur || part_of(r, r->cur) != r->part)
        return 0;
    *rec = r->cur + r->hdr;
    r->fetch = true;
    return 1;
}

st_source st_recsort_source(st_recsort *r, uint32_t part)
{
    r->part = part;
    return (st_source){part_next, r, r->name};
}

void st_recsort_free(st_recsort *r)
{
    if (!r)
        return;
    st_sorter_free(r->sorter);
    if (r->buf)
        mem_free(r->buf, r->rs);
    mem_free(r->name, strlen(r->name) + 1);
    mem_free(r, sizeof *r);
}
