/* load: the loader: sort tag records by (partition, key), update each partition, commit once. */
#include "config.h"
#include "store/load.h"

#include <stdbool.h>
#include <string.h>

#include "store/mem.h"
#include "store/record.h"

/* A sorted record: the global partition number (u32, host order), then a
 * tag record (store/record.h). */
#define PART_BYTES 4u

struct st_load {
    st_store *s;
    st_load_opts o;
    st_schema *schema;
    const st_field *pk; /* the partition key */
    uint32_t partitions, nparts; /* per volume, in all */
    unsigned pbits;              /* bits of a sort prefix that hold the partition */
    size_t rs;                   /* bytes of a sorted record */
    unsigned char *buf;          /* one sorted record being built */
    st_sorter *sorter;
    uint64_t n;
    bool failed;
};

void st_load_opts_default(st_load_opts *o)
{
    st_update_opts_default(&o->update);
    memset(&o->sort, 0, sizeof o->sort);
    o->to_adds = false;
}

static uint32_t part_of(const void *rec)
{
    uint32_t g;
    memcpy(&g, rec, PART_BYTES);
    return g;
}

static int load_cmp(const void *a, const void *b, void *ctx)
{
    const st_load *l = ctx;
    uint32_t pa = part_of(a), pb = part_of(b);
    if (pa != pb)
        return pa < pb ? -1 : 1;
    return st_schema_key_cmp(l->schema, (const unsigned char *)a + PART_BYTES,
                             (const unsigned char *)b + PART_BYTES);
}

/* The partition in the top bits, the first key field's image below: a
 * smaller prefix still means an earlier record, as the sort requires. */
static uint64_t load_prefix(const void *rec, void *ctx)
{
    const st_load *l = ctx;
    uint64_t k = st_rec_prefix((const unsigned char *)rec + PART_BYTES, l->schema);
    if (!l->pbits)
        return k;
    return (uint64_t)part_of(rec) << (64 - l->pbits) | k >> l->pbits;
}

st_load *st_load_new(st_store *s, const st_load_opts *opts, st_err *err)
{
    st_load *l = mem_calloc(1, sizeof *l);
    if (!l) {
        st_err_nomem(err, "loader");
        return NULL;
    }
    l->s = s;
    if (opts)
        l->o = *opts;
    else
        st_load_opts_default(&l->o);
    if (!(l->schema = st_update_store_schema(s, err)) ||
        st_update_check(s, l->schema, &l->o.update, &l->pk, err) < 0)
        goto fail;
    st_storeinfo info;
    st_store_info(s, &info);
    l->partitions = info.partitions;
    l->nparts = info.volumes * info.partitions;
    while (l->pbits < 32 && (1ull << l->pbits) < l->nparts)
        l->pbits++;
    l->rs = PART_BYTES + st_rec_size(l->schema);
    if (!(l->buf = mem_alloc(l->rs))) {
        st_err_nomem(err, "loader");
        goto fail;
    }
    st_sort_opts so = l->o.sort;
    so.prefix = load_prefix;
    if (!(l->sorter = st_sorter_new(l->rs, load_cmp, l, &so, err)))
        goto fail;
    return l;
fail:
    st_load_free(l);
    return NULL;
}

const st_schema *st_load_schema(const st_load *l) { return l->schema; }
uint64_t st_load_count(const st_load *l) { return l->n; }

int st_load_add(st_load *l, const void *row, const void *tag, st_err *err)
{
    if (l->failed)
        return st_err_set(err, ST_EINPUT, "load: the loader failed earlier; free it");
    unsigned char *rec = l->buf + PART_BYTES;
    st_rec_make(l->schema, rec, row, tag);
    if (st_rec_check(l->schema, rec, err) < 0) {
        st_err_prefix(err, "load: record %llu: ", (unsigned long long)l->n + 1);
        return -1;
    }
    uint32_t v, p;
    st_store_place(l->s, rec + l->pk->offset, l->pk->width, &v, &p);
    uint32_t g = v * l->partitions + p;
    memcpy(l->buf, &g, PART_BYTES);
    if (st_sorter_add(l->sorter, l->buf, err) < 0) {
        l->failed = true;
        return -1;
    }
    l->n++;
    return 0;
}

/* The sorted stream, one partition at a time: an st_source that ends at
 * the first record of another partition. The record it returned stays
 * valid until its next call, so the following one is fetched only then. */
struct slice {
    st_sorter *sorter;
    const unsigned char *cur; /* the first record not yet returned; NULL at the end */
    bool fetch;               /* cur was returned: fetch the next before looking */
    uint32_t g;               /* the partition being updated */
};

static int slice_fetch(struct slice *sl, st_err *err)
{
    const void *p;
    int rc = st_sorter_next(sl->sorter, &p, err);
    if (rc < 0)
        return -1;
    sl->cur = rc ? p : NULL;
    sl->fetch = false;
    return 0;
}

static int slice_next(void *self, const void **rec, st_err *err)
{
    struct slice *sl = self;
    if (sl->fetch && slice_fetch(sl, err) < 0)
        return -1;
    if (!sl->cur || part_of(sl->cur) != sl->g)
        return 0;
    *rec = sl->cur + PART_BYTES;
    sl->fetch = true;
    return 1;
}

/* Runs the partition updates in t, in partition order. */
static int update_all(st_load *l, st_txn *t, st_update_stats *st, st_err *err)
{
    const st_update_opts *uo = &l->o.update;
    bool sweep = !l->o.to_adds && (uo->age_field || (uo->remove_keys && uo->nremove));
    struct slice sl = {.sorter = l->sorter};
    st_source src = {slice_next, &sl, "load"};
    if (slice_fetch(&sl, err) < 0)
        return -1;
    for (uint32_t g = 0; g < l->nparts; g++) {
        if (!sweep && !sl.cur)
            break;
        if (!sweep)
            g = part_of(sl.cur); /* the next partition with records */
        sl.g = g;
        uint32_t v, p;
        st_partition_split(g, l->partitions, &v, &p);
        int rc = l->o.to_adds ? st_update_adds(t, l->s, l->schema, v, p, &src, uo, st, err)
                              : st_update_partition(t, l->s, l->schema, v, p, &src, uo, st, err);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int st_load_commit(st_load *l, st_update_stats *stats, st_err *err)
{
    st_update_stats st = {0};
    st_txn *t = NULL;
    int rc = -1;
    const char *label = l->o.update.write.label;
    if (l->failed) {
        st_err_set(err, ST_EINPUT, "load: the loader failed earlier; nothing was loaded");
        goto done;
    }
    if (st_sorter_finish(l->sorter, err) < 0 || !(t = st_store_begin(l->s, ST_ALL_VOLUMES, err)) ||
        (label && st_store_set_label(t, label, err) < 0) || update_all(l, t, &st, err) < 0)
        goto done;
    if (st.partitions == 0) {
        rc = 0; /* nothing to load: no new generation */
        goto done;
    }
    rc = st_store_commit(t, err);
    t = NULL; /* the commit ended it */
done:
    st_store_abort(t);
    if (stats)
        *stats = st;
    st_load_free(l);
    return rc;
}

void st_load_free(st_load *l)
{
    if (!l)
        return;
    st_sorter_free(l->sorter);
    if (l->buf)
        mem_free(l->buf, l->rs);
    st_schema_free(l->schema);
    mem_free(l, sizeof *l);
}
