/* record: tag records (tagset row + tag row + flag), a tagset file as a record stream, and back. */
#include "config.h"
#include "store/record.h"

#include <stdbool.h>
#include <string.h>

#include "store/bytes.h"
#include "store/mem.h"
#include "store/tagfile.h"

size_t st_rec_size(const st_schema *s)
{
    return (size_t)s->row_size + (s->tag_size ? s->tag_size + 1u : 0u);
}

void st_rec_make(const st_schema *s, void *rec, const void *row, const void *tag)
{
    unsigned char *p = rec;
    memcpy(p, row, s->row_size);
    if (!s->tag_size)
        return;
    if (tag)
        memcpy(p + s->row_size, tag, s->tag_size);
    else
        memset(p + s->row_size, 0, s->tag_size);
    p[s->row_size + s->tag_size] = tag != NULL;
}

const void *st_rec_tag(const st_schema *s, const void *rec)
{
    const unsigned char *p = rec;
    return s->tag_size && p[s->row_size + s->tag_size] ? p + s->row_size : NULL;
}

int st_rec_check(const st_schema *s, const void *rec, st_err *err)
{
    const unsigned char *p = rec;
    if (st_schema_check_row(s, p, false, err) < 0)
        return -1;
    if (!s->tag_size)
        return 0;
    unsigned flag = p[s->row_size + s->tag_size];
    if (flag > 1)
        return st_err_set(err, ST_EINPUT, "record flag %u (must be 1: a tag, or 0: no tag)", flag);
    return flag ? st_schema_check_row(s, p + s->row_size, true, err) : 0;
}

int st_rec_cmp(const void *a, const void *b, void *schema)
{
    return st_schema_key_cmp(schema, a, b);
}

uint64_t st_rec_prefix(const void *rec, void *schema)
{
    const st_schema *s = schema;
    return st_field_order(&s->fields[0], (const unsigned char *)rec + s->fields[0].offset);
}

/* ---- rows from a decoded batch ----------------------------------------------- */

/* Copies fields [from, to) of value i from a batch's columns into the row at
 * dst (a tagset row for fields below nrow, a tag row above). */
static void copy_fields(const st_schema *s, uint32_t from, uint32_t to, void *const *cols,
                        size_t i, unsigned char *dst)
{
    for (uint32_t f = from; f < to; f++) {
        const st_field *fd = &s->fields[f];
        if (cols[f])
            st_copy_value(dst + fd->offset, (const char *)cols[f] + i * fd->width, fd->width);
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

/* ---- a tagset file as records ---------------------------------------------- */

struct st_rec_reader {
    char *path; /* the source's name in messages */
    st_reader *r;
    const st_schema *s; /* the file's */
    const st_batch *b;  /* the current block; NULL before the first */
    uint32_t t, j;      /* the next record is tag j of tagset t of b */
    bool row_done;      /* rec holds tagset t's row */
    unsigned char *rec;
};

st_rec_reader *st_rec_open(const char *path, const st_schema *expect, const st_nbuf_opts *io,
                           st_err *err)
{
    st_rec_reader *rr = mem_calloc(1, sizeof *rr);
    if (!rr || !(rr->path = mem_strdup(path))) {
        mem_free(rr, sizeof *rr);
        st_err_nomem(err, path);
        return NULL;
    }
    if (!(rr->r = st_reader_open(path, io, err)))
        goto fail;
    rr->s = st_reader_schema(rr->r);
    if (expect && !st_schema_equal(expect, rr->s)) {
        st_err_set(err, ST_EINPUT, "%s: its schema differs from the one expected (the store's)",
                   path);
        goto fail;
    }
    if (!(rr->rec = mem_alloc(st_rec_size(rr->s)))) {
        st_err_nomem(err, path);
        goto fail;
    }
    return rr;
fail:
    st_rec_close(rr);
    return NULL;
}

int st_rec_at(st_rec_reader *rr, const st_batch **b, uint32_t *t, st_err *err)
{
    while (!rr->b || rr->t == rr->b->ntagsets) {
        int rc = st_reader_next(rr->r, &rr->b, err);
        if (rc <= 0)
            return rc;
        rr->t = rr->j = 0;
        rr->row_done = false;
    }
    *b = rr->b;
    *t = rr->t;
    return 1;
}

void st_rec_skip(st_rec_reader *rr, uint32_t n)
{
    rr->t += n;
}

uint32_t st_rec_count(const st_schema *s, const st_batch *b, uint32_t t)
{
    return s->tag_size && b->counts[t] ? b->counts[t] : 1;
}

static int rec_next(void *self, const void **out, st_err *err)
{
    st_rec_reader *rr = self;
    const st_schema *s = rr->s;
    const st_batch *b;
    uint32_t t;
    int rc = st_rec_at(rr, &b, &t, err);
    if (rc <= 0)
        return rc;
    if (!rr->row_done) {
        st_batch_row(s, b, t, rr->rec);
        rr->row_done = true;
    }
    *out = rr->rec;
    uint32_t ntags = s->tag_size ? b->counts[t] : 0;
    unsigned char *tag = rr->rec + s->row_size;
    if (s->tag_size && ntags == 0) { /* the marker */
        memset(tag, 0, s->tag_size + 1u);
    } else if (ntags) {
        st_batch_tag(s, b, b->tag_start[t] + rr->j, tag);
        tag[s->tag_size] = 1;
        if (++rr->j < ntags)
            return 1;
    }
    rr->t++;
    rr->j = 0;
    rr->row_done = false;
    return 1;
}

st_source st_rec_source(st_rec_reader *r)
{
    return (st_source){rec_next, r, r->path};
}

void st_rec_close(st_rec_reader *rr)
{
    if (!rr)
        return;
    if (rr->rec)
        mem_free(rr->rec, st_rec_size(rr->s));
    st_reader_close(rr->r);
    mem_free(rr->path, strlen(rr->path) + 1);
    mem_free(rr, sizeof *rr);
}

/* ---- records into a tagset file ------------------------------------------------ */

int st_rec_put(void *self, const st_tagset *ts, st_err *err)
{
    st_rec_out *o = self;
    const st_schema *s = o->s;
    size_t rs = st_rec_size(s);
    uint32_t n = 0;
    if (!s->tag_size) { /* every record is a tagset of its own */
        for (size_t i = 0; i < ts->n; i++) {
            if (st_writer_append(o->w, ts->recs + i * rs, NULL, 0, err) < 0)
                return -1;
            o->ntagsets++;
        }
        return 0;
    }
    if (ts->n > UINT32_MAX)
        return st_err_set(err, ST_EINPUT, "a tagset of %zu records is too large", ts->n);
    size_t need = ts->n * s->tag_size;
    if (need > o->cap) {
        unsigned char *p = mem_realloc(o->tags, o->cap, need);
        if (!p)
            return st_err_nomem(err, "a tagset's tags");
        o->tags = p;
        o->cap = need;
    }
    for (size_t i = 0; i < ts->n; i++) {
        const void *tag = st_rec_tag(s, ts->recs + i * rs);
        if (tag)
            memcpy(o->tags + (size_t)n++ * s->tag_size, tag, s->tag_size);
    }
    if (st_writer_append(o->w, ts->recs + (ts->n - 1) * rs, o->tags, n, err) < 0)
        return -1;
    o->ntagsets++;
    o->ntags += n;
    return 0;
}

void st_rec_out_free(st_rec_out *o)
{
    mem_free(o->tags, o->cap);
    o->tags = NULL;
    o->cap = 0;
}
