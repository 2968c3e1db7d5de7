/* loader: tags in any order into a new tagset file, through the external
 * sort; the merge (store/merge.h) groups the tags sharing a key. */
#include "config.h"
#include "store/loader.h"

#include <string.h>

#include "store/merge.h"
#include "store/mem.h"

/* A sort record: a flag saying a tag follows the row, the tagset row, the
 * tag row (zeros when there is no tag). */
#define REC_HDR 1u

struct st_loader {
    const st_schema *s;
    char *path;
    st_loader_opts o;
    size_t rec_size;
    st_sorter *sorter;
    unsigned char *rec, *ahead, *cur; /* rec_size each */
    bool have_ahead;
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

/* The first key field's order image: a smaller prefix, a smaller record. */
static uint64_t rec_prefix(const void *rec, void *ctx)
{
    const st_loader *l = ctx;
    const st_field *f = &l->s->fields[0];
    return st_field_order(f, (const unsigned char *)rec + REC_HDR + f->offset);
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
    l->rec = mem_calloc(3, l->rec_size);
    if (!l->rec) {
        st_err_nomem(err, "loader");
        st_loader_free(l);
        return NULL;
    }
    l->ahead = l->rec + l->rec_size;
    l->cur = l->ahead + l->rec_size;
    l->sorter = st_sorter_new(l->rec_size, key_cmp, l, &l->o.sort, err);
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

int st_loader_add(st_loader *l, const void *row, const void *tag, st_err *err)
{
    const st_schema *s = l->s;
    if (tag && !s->tag_size)
        return st_err_set(err, ST_EINPUT, "the schema has no tag fields");
    if (st_schema_check_row(s, row, false, err) < 0 || (tag && st_schema_check_row(s, tag, true, err) < 0))
        return -1;
    l->rec[0] = tag != NULL;
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

/* ---- the sorted records ---------------------------------------------------- */

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
    if (!l->have_ahead)
        return 0;
    memcpy(l->cur, l->ahead, l->rec_size);
    *rec = l->cur;
    return advance(l, err) < 0 ? -1 : 1;
}

/* ---- gathering a batch's rows ------------------------------------------------ */

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
        if (r[0])
            memcpy(l->tags + s->tag_size * n++, r + REC_HDR + s->row_size, s->tag_size);
    }
    const unsigned char *last = ts->recs + (ts->n - 1) * rs;
    if (st_writer_append(l->w, last + REC_HDR, l->tags, (uint32_t)n, err) < 0)
        return -1;
    l->stats.tagsets++;
    l->stats.tags += n;
    return 0;
}

int st_loader_finish(st_loader *l, st_loader_stats *stats, st_err *err)
{
    st_merge_spec m = {
        .rec_size = l->rec_size, .keycmp = key_cmp, .key_ctx = l,
        .old = {empty_next, NULL, "old"}, .add = {add_next, l, "new tags"},
        .out = {put_tagset, l},
    };
    int rc = -1;
    if (st_sorter_finish(l->sorter, err) == 0 && advance(l, err) == 0 &&
        (l->w = st_writer_create(l->path, l->s, &l->o.write, err))) {
        if (st_merge(&m, NULL, err) < 0)
            st_writer_abort(l->w);
        else
            rc = st_writer_commit(l->w, err);
        l->w = NULL;
    }
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
    mem_free(l->rec, 3 * l->rec_size);
    mem_free(l->tags, l->tags_cap);
    if (l->path)
        mem_free(l->path, strlen(l->path) + 1);
    mem_free(l, sizeof *l);
}
