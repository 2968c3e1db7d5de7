/* loader: tags in any order into a tagset file or a datastore, through the
 * external sort and the partition merge. */
#include "config.h"
#include "store/loader.h"

#include <string.h>

#include "store/merge.h"
#include "store/mem.h"

/* A sort record: the global partition (u32), a flag saying a tag follows
 * the row, the tagset row, the tag row (zeros when there is no tag). */
#define REC_HDR 5u

struct st_loader {
    const st_schema *s;
    st_store *store;   /* NULL: a file target */
    char *path;        /* file target */
    uint32_t partkey;
    st_loader_opts o;
    size_t rec_size;
    st_sorter *sorter;
    unsigned char *rec, *ahead, *cur, *old_rec; /* rec_size each */
    bool have_ahead;
    uint32_t part;     /* the partition being written */
    unsigned char *tags;  /* a tagset's tag rows for the writer */
    size_t tags_cap;
    st_writer *w;
    st_loader_stats stats;
};

void st_loader_opts_default(st_loader_opts *o)
{
    memset(o, 0, sizeof *o);
    st_write_opts_default(&o->write);
}

static uint32_t rec_part(const unsigned char *r)
{
    uint32_t p;
    memcpy(&p, r, 4);
    return p;
}

static int rec_cmp(const void *a, const void *b, void *ctx)
{
    const st_loader *l = ctx;
    uint32_t pa = rec_part(a), pb = rec_part(b);
    if (pa != pb)
        return pa < pb ? -1 : 1;
    return st_schema_key_cmp(l->s, (const unsigned char *)a + REC_HDR,
                             (const unsigned char *)b + REC_HDR);
}

/* The partition in the high half, the first key field's order image's
 * high half below it: a smaller prefix means a smaller record. */
static uint64_t rec_prefix(const void *rec, void *ctx)
{
    const st_loader *l = ctx;
    const st_field *f = &l->s->fields[0];
    uint64_t o = st_field_order(f, (const unsigned char *)rec + REC_HDR + f->offset);
    return (uint64_t)rec_part(rec) << 32 | o >> 32;
}

static int key_cmp(const void *a, const void *b, void *ctx)
{
    const st_loader *l = ctx;
    return st_schema_key_cmp(l->s, (const unsigned char *)a + REC_HDR,
                             (const unsigned char *)b + REC_HDR);
}

static st_loader *loader_new(const st_schema *s, const st_loader_opts *opts, st_err *err)
{
    st_loader *l = mem_calloc(1, sizeof *l);
    if (!l) {
        st_err_nomem(err, "loader");
        return NULL;
    }
    l->s = s;
    if (opts)
        l->o = *opts;
    else
        st_loader_opts_default(&l->o);
    l->rec_size = REC_HDR + s->row_size + s->tag_size;
    l->o.sort.prefix = rec_prefix;
    l->rec = mem_calloc(4, l->rec_size);
    if (!l->rec) {
        st_err_nomem(err, "loader");
        st_loader_free(l);
        return NULL;
    }
    l->ahead = l->rec + l->rec_size;
    l->cur = l->ahead + l->rec_size;
    l->old_rec = l->cur + l->rec_size;
    l->sorter = st_sorter_new(l->rec_size, rec_cmp, l, &l->o.sort, err);
    if (!l->sorter) {
        st_loader_free(l);
        return NULL;
    }
    return l;
}

st_loader *st_loader_file(const char *path, const st_schema *s, const st_loader_opts *opts,
                          st_err *err)
{
    st_loader *l = loader_new(s, opts, err);
    if (l && !(l->path = mem_strdup(path))) {
        st_err_nomem(err, path);
        st_loader_free(l);
        return NULL;
    }
    return l;
}

st_loader *st_loader_store(st_store *st, const st_schema *s, uint32_t partkey,
                           const st_loader_opts *opts, st_err *err)
{
    if (partkey >= s->nrow) {
        st_err_set(err, ST_EINPUT, "the partition key must be a key or tagset field");
        return NULL;
    }
    st_loader *l = loader_new(s, opts, err);
    if (l) {
        l->store = st;
        l->partkey = partkey;
    }
    return l;
}

int st_loader_add(st_loader *l, const void *row, const void *tag, st_err *err)
{
    const st_schema *s = l->s;
    if (tag && !s->tag_size)
        return st_err_set(err, ST_EINPUT, "the schema has no tag fields");
    if (st_schema_check_row(s, row, false, err) < 0 || (tag && st_schema_check_row(s, tag, true, err) < 0))
        return -1;
    uint32_t part = 0;
    if (l->store) {
        st_storeinfo info;
        const st_field *f = &s->fields[l->partkey];
        uint32_t vol, p;
        st_store_info(l->store, &info);
        st_store_place(l->store, (const unsigned char *)row + f->offset, f->width, &vol, &p);
        part = vol * info.partitions + p;
    }
    memcpy(l->rec, &part, 4);
    l->rec[4] = tag != NULL;
    memcpy(l->rec + REC_HDR, row, s->row_size);
    if (s->tag_size) {
        if (tag)
            memcpy(l->rec + REC_HDR + s->row_size, tag, s->tag_size);
        else
            memset(l->rec + REC_HDR + s->row_size, 0, s->tag_size);
    }
    if (st_sorter_add(l->sorter, l->rec, err) < 0)
        return -1;
    l->stats.records++;
    return 0;
}

/* ---- the add side: the sorted records of one partition ------------------ */

static int advance(st_loader *l, st_err *err)
{
    const void *p;
    int rc = st_sorter_next(l->sorter, &p, err);
    if (rc < 0)
        return -1;
    l->have_ahead = rc > 0;
    if (rc > 0)
        memcpy(l->ahead, p, l->rec_size);
    return 0;
}

static int add_next(void *self, const void **rec, st_err *err)
{
    st_loader *l = self;
    if (!l->have_ahead || rec_part(l->ahead) != l->part)
        return 0;
    memcpy(l->cur, l->ahead, l->rec_size);
    *rec = l->cur;
    return advance(l, err) < 0 ? -1 : 1;
}

/* ---- the old side: a partition's current file as records ----------------- */

typedef struct old_src {
    st_loader *l;
    st_reader *r;
    const st_batch *b;
    uint32_t t, k;  /* tagset in the batch, tag within it */
} old_src;

static void copy_fields(const st_schema *s, uint32_t from, uint32_t to, void *const *cols,
                        uint32_t i, unsigned char *dst)
{
    for (uint32_t f = from; f < to; f++) {
        const st_field *fd = &s->fields[f];
        if (cols[f])
            memcpy(dst + fd->offset, (const char *)cols[f] + (size_t)i * fd->width, fd->width);
        else
            memset(dst + fd->offset, 0, fd->width);
    }
}

void st_batch_row(const st_schema *s, const st_batch *b, uint32_t t, unsigned char *row)
{
    copy_fields(s, 0, s->nrow, b->cols, t, row);
}

void st_batch_tag(const st_schema *s, const st_batch *b, uint32_t i, unsigned char *tag)
{
    copy_fields(s, s->nrow, s->nfields, b->cols, i, tag);
}

static int old_next(void *self, const void **rec, st_err *err)
{
    old_src *o = self;
    const st_schema *s = o->l->s;
    unsigned char *r = o->l->old_rec;
    while (!o->b || o->t >= o->b->ntagsets) {
        int rc = st_reader_next(o->r, &o->b, err);
        if (rc <= 0)
            return rc;
        o->t = o->k = 0;
    }
    const st_batch *b = o->b;
    uint32_t ntags = s->tag_size ? b->tag_start[o->t + 1] - b->tag_start[o->t] : 0;
    memcpy(r, &o->l->part, 4);
    r[4] = ntags > 0;
    copy_fields(s, 0, s->nrow, b->cols, o->t, r + REC_HDR);
    if (ntags) {
        copy_fields(s, s->nrow, s->nfields, b->cols, b->tag_start[o->t] + o->k,
                    r + REC_HDR + s->row_size);
        if (++o->k < ntags) {
            *rec = r;
            return 1;
        }
    }
    o->t++;
    o->k = 0;
    *rec = r;
    return 1;
}

static int empty_next(void *self, const void **rec, st_err *err)
{
    (void)self, (void)rec, (void)err;
    return 0;
}

/* ---- the output: whole tagsets to the writer ----------------------------- */

static int put_tagset(void *self, const st_tagset *ts, st_err *err)
{
    st_loader *l = self;
    const st_schema *s = l->s;
    size_t rs = l->rec_size, n = 0;
    if (s->tag_size && ts->n * s->tag_size > l->tags_cap) {
        size_t cap = ts->n * s->tag_size * 2;
        unsigned char *t = mem_realloc(l->tags, l->tags_cap, cap);
        if (!t)
            return st_err_nomem(err, "loader: tagset");
        l->tags = t;
        l->tags_cap = cap;
    }
    for (size_t i = 0; i < ts->n; i++) {
        const unsigned char *r = ts->recs + i * rs;
        if (r[4])
            memcpy(l->tags + s->tag_size * n++, r + REC_HDR + s->row_size, s->tag_size);
    }
    const unsigned char *last = ts->recs + (ts->n - 1) * rs;
    if (st_writer_append(l->w, last + REC_HDR, l->tags, (uint32_t)n, err) < 0)
        return -1;
    l->stats.tagsets++;
    l->stats.tags += n;
    return 0;
}

/* Merges the old file (NULL: none) with this partition's records into path. */
static int write_partition(st_loader *l, const char *old, const char *path, st_err *err)
{
    old_src o = {.l = l};
    st_merge_spec m = {
        .rec_size = l->rec_size, .keycmp = key_cmp, .key_ctx = l,
        .old = {empty_next, NULL, "old"}, .add = {add_next, l, "new tags"},
        .out = {put_tagset, l},
    };
    if (old) {
        if (!(o.r = st_reader_open(old, &l->o.write.io, err)))
            return -1;
        m.old = (st_source){old_next, &o, old};
    }
    int rc = -1;
    if ((l->w = st_writer_create(path, l->s, &l->o.write, err))) {
        if (st_merge(&m, NULL, err) < 0)
            st_writer_abort(l->w);
        else
            rc = st_writer_commit(l->w, err);
        l->w = NULL;
    }
    st_reader_close(o.r);
    l->stats.partitions += rc == 0;
    return rc;
}

static int finish_store(st_loader *l, st_err *err)
{
    st_storeinfo info;
    st_store_info(l->store, &info);
    st_txn *t = st_store_begin(l->store, ST_ALL_VOLUMES, err);
    if (!t)
        return -1;
    while (l->have_ahead) {
        uint32_t vol, part;
        const char *path;
        st_file f;
        l->part = rec_part(l->ahead);
        st_partition_split(l->part, info.partitions, &vol, &part);
        int has = st_store_file(l->store, vol, part, ST_TAGS, &f, err);
        if (has < 0 || st_store_stage(t, vol, part, ST_TAGS, &path, err) < 0 ||
            write_partition(l, has ? f.path : NULL, path, err) < 0)
            goto fail;
    }
    if (l->o.write.label && st_store_set_label(t, l->o.write.label, err) < 0)
        goto fail;
    return st_store_commit(t, err) == -1 ? -1 : 0;
fail:
    st_store_abort(t);
    return -1;
}

int st_loader_finish(st_loader *l, st_loader_stats *stats, st_err *err)
{
    int rc = -1;
    if (st_sorter_finish(l->sorter, err) < 0 || advance(l, err) < 0)
        goto done;
    if (l->store) {
        rc = finish_store(l, err);
    } else {
        l->part = 0;
        rc = write_partition(l, NULL, l->path, err);
    }
done:
    if (stats)
        *stats = l->stats;
    return rc;
}

void st_loader_free(st_loader *l)
{
    if (!l)
        return;
    st_sorter_free(l->sorter);
    if (l->w)
        st_writer_abort(l->w);
    mem_free(l->rec, 4 * l->rec_size);
    mem_free(l->tags, l->tags_cap);
    if (l->path)
        mem_free(l->path, strlen(l->path) + 1);
    mem_free(l, sizeof *l);
}
