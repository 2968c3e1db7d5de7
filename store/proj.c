/* proj: a tagset file's projection, its tags in one tag field's order,
 * written and read beside it (store/proj.h). */
#include "config.h"
#include "store/proj.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "store/mem.h"
#include "store/sort.h"

/* The rows wait in an external sort: a writer's memory stays within
 * PARCEL whatever the file's size. */
#define PARCEL ((size_t)64 << 20)
#define CHUNK 256   /* rows gathered from columns at a time */

struct st_proj {
    const st_schema *s;
    uint32_t f;            /* the projection field */
    uint32_t rs;           /* bytes of a projection row */
    st_sorter *sort;       /* the rows, by the projection field */
    unsigned char *chunk;  /* CHUNK rows being gathered */
    uint64_t n;
};

st_schema *st_proj_schema(const st_schema *s, st_err *err)
{
    int f = st_schema_proj(s);
    uint32_t n = s->nfields - s->nrow;
    st_field *fs = f >= 0 ? mem_alloc(n * sizeof *fs) : NULL;
    uint32_t k = 1;
    if (f < 0) {
        st_err_set(err, ST_EINPUT, "the schema declares no projection");
        return NULL;
    }
    if (!fs) {
        st_err_nomem(err, "projection schema");
        return NULL;
    }
    fs[0] = s->fields[f];
    fs[0].role = ST_KEY;
    for (uint32_t c = s->nrow; c < s->nfields; c++)
        if (c != (uint32_t)f && s->fields[c].carried) {
            fs[k] = s->fields[c];
            fs[k++].role = ST_TAGSET;
        }
    for (uint32_t i = 0; i < k; i++)
        fs[i].index = fs[i].proj = fs[i].carried = false;
    st_schema tmp = {.fields = fs, .nfields = k};
    size_t len;
    char *text = st_schema_format(&tmp, &len);
    mem_free(fs, n * sizeof *fs);
    if (!text) {
        st_err_nomem(err, "projection schema");
        return NULL;
    }
    st_schema *ps = st_schema_parse(text, len, 1, 1, err);
    mem_free(text, len + 1);
    return ps;
}

/* Where tag field c lies in a projection row: the projection field first,
 * the other fields it carries in order (*at; the row's size when c is
 * nfields); its column, or UINT32_MAX when not carried. */
static uint32_t place(const st_schema *s, uint32_t c, uint32_t *at)
{
    uint32_t f = (uint32_t)st_schema_proj(s), col = 1;
    *at = c == f ? 0 : s->fields[f].width;
    if (c == f)
        return 0;
    for (uint32_t i = s->nrow; i < c; i++)
        if (i != f && s->fields[i].carried) {
            *at += s->fields[i].width;
            col++;
        }
    return c < s->nfields && s->fields[c].carried ? col : UINT32_MAX;
}

uint32_t st_proj_col(const st_schema *s, uint32_t c)
{
    uint32_t at;
    return place(s, c, &at);
}

int st_proj_path(const char *file, char *buf, size_t size, st_err *err)
{
    if ((size_t)snprintf(buf, size, "%s.proj", file) >= size)
        return st_err_set(err, ST_EINPUT, "%s: path too long for its projection", file);
    return 0;
}

/* Rows by the projection field's order image, ties as added. */
static uint64_t row_order(const void *row, void *ctx)
{
    const st_proj *p = ctx;
    return st_field_order(&p->s->fields[p->f], row);
}

static int row_cmp(const void *a, const void *b, void *ctx)
{
    uint64_t x = row_order(a, ctx), y = row_order(b, ctx);
    return x < y ? -1 : x > y;
}

void st_proj_free(st_proj *p)
{
    if (!p)
        return;
    st_sorter_free(p->sort);
    mem_free(p->chunk, (size_t)p->rs * CHUNK);
    mem_free(p, sizeof *p);
}

st_proj *st_proj_new(const st_schema *s, st_err *err)
{
    st_proj *p = mem_calloc(1, sizeof *p);
    if (!p) {
        st_err_nomem(err, "projection");
        return NULL;
    }
    p->s = s;
    p->f = (uint32_t)st_schema_proj(s);
    place(s, s->nfields, &p->rs);
    st_sort_opts o = {.parcel_bytes = PARCEL, .prefix = row_order, .threads = 1};
    if (!(p->chunk = mem_alloc((size_t)p->rs * CHUNK))) {
        st_err_nomem(err, "projection");
        st_proj_free(p);
        return NULL;
    }
    if (!(p->sort = st_sorter_new(p->rs, row_cmp, p, &o, err))) {
        st_proj_free(p);
        return NULL;
    }
    return p;
}

/* Tags [a, e) of b's columns, or of n tag rows (b NULL, tags), as
 * projection rows (rs bytes) at o, column by column. */
static void gather(const st_schema *s, const st_batch *b, const unsigned char *tags, uint32_t a,
                   uint32_t e, unsigned char *o, uint32_t rs)
{
    for (uint32_t c = s->nrow; c < s->nfields; c++) {
        uint32_t w = s->fields[c].width, at;
        if (place(s, c, &at) == UINT32_MAX)
            continue;
        size_t step = b ? w : s->tag_size;
        const unsigned char *col = b ? (const unsigned char *)b->cols[c] + (size_t)a * w
                                     : tags + (size_t)a * s->tag_size + s->fields[c].offset;
        for (uint32_t i = a; i < e; i++, col += step)
            memcpy(o + (size_t)(i - a) * rs + at, col, w);
    }
}

/* Tags [a, e) of a batch or of tag rows into the sort, CHUNK at a time. */
static int add(st_proj *p, const st_batch *b, const unsigned char *tags, uint32_t a, uint32_t e,
               st_err *err)
{
    for (uint32_t i = a; i < e; i += CHUNK) {
        uint32_t n = e - i < CHUNK ? e - i : CHUNK;
        gather(p->s, b, tags, i, i + n, p->chunk, p->rs);
        for (uint32_t j = 0; j < n; j++)
            if (st_sorter_add(p->sort, p->chunk + (size_t)j * p->rs, err) < 0)
                return -1;
        p->n += n;
    }
    return 0;
}

int st_proj_add(st_proj *p, const void *tags, uint32_t n, st_err *err)
{
    return add(p, NULL, tags, 0, n, err);
}

int st_proj_add_batch(st_proj *p, const st_batch *b, uint32_t a, uint32_t e, st_err *err)
{
    return add(p, b, NULL, a, e, err);
}

void st_proj_remove(const char *file)
{
    char path[PATH_MAX];
    st_err ignored;
    if (st_proj_path(file, path, sizeof path, &ignored) == 0)
        unlink(path);
}

static void label_of(uint64_t id, uint64_t ntags, char *buf, size_t size)
{
    snprintf(buf, size, "projection of %016" PRIx64 ": %" PRIu64 " tags", id, ntags);
}

int st_proj_write(st_proj *p, const char *file, uint64_t id, const st_write_opts *o, st_err *err)
{
    char path[PATH_MAX], label[96];
    if (st_proj_path(file, path, sizeof path, err) < 0)
        return -1;
    st_schema *ps = st_proj_schema(p->s, err);
    if (!ps || st_sorter_finish(p->sort, err) < 0) {
        st_schema_free(ps);
        return -1;
    }
    st_write_opts wo = *o;
    label_of(id, p->n, label, sizeof label);
    wo.label = label;
    wo.checked = true; /* the file's tags, checked as they came */
    st_writer *w = st_writer_create(path, ps, &wo, err);
    int rc = w ? 1 : -1;
    const void *row;
    while (rc == 1 && (rc = st_sorter_next(p->sort, &row, err)) == 1)
        if (st_writer_append(w, row, NULL, 0, err) < 0)
            rc = -1;
    if (w)
        rc = rc == 0 ? st_writer_commit(w, err) : (st_writer_abort(w), -1);
    st_schema_free(ps);
    return rc;
}

st_reader *st_proj_open(const char *file, const st_schema *s, const st_file_info *info,
                        const st_nbuf_opts *io, st_err *err)
{
    char path[PATH_MAX], label[96];
    if (st_proj_path(file, path, sizeof path, err) < 0)
        return NULL;
    if (!info->projected) {
        st_err_set(err, ST_EINPUT, "%s was written without its projection", file);
        return NULL;
    }
    st_schema *ps = st_proj_schema(s, err);
    st_reader *r = ps ? st_reader_open(path, io, err) : NULL;
    if (r) {
        st_file_info pi;
        st_reader_info(r, &pi);
        label_of(info->id, info->ntags, label, sizeof label);
        const char *l = st_reader_label(r);
        if (!st_schema_equal(st_reader_schema(r), ps) || !l || strcmp(l, label) != 0 ||
            pi.ntagsets != info->ntags) {
            st_err_set(err, ST_ECORRUPT, "%s: not the projection of %s (its label, schema or count "
                       "differs)", path, file);
            st_reader_close(r);
            r = NULL;
        }
    }
    st_schema_free(ps);
    return r;
}

int st_proj_digest(const st_schema *s, const st_batch *b, uint32_t a, uint32_t e, uint64_t *sum,
                   st_err *err)
{
    /* a projection's own batch is rows of every field; a file's, its tags
     * (gathered CHUNK at a time) */
    bool file = st_schema_proj(s) >= 0;
    uint32_t rs = s->row_size;
    if (file)
        place(s, s->nfields, &rs);
    unsigned char *o = mem_alloc((size_t)rs * CHUNK);
    if (!o)
        return st_err_nomem(err, "a projection's digest");
    for (uint32_t i = a; i < e; i += CHUNK) {
        uint32_t n = e - i < CHUNK ? e - i : CHUNK;
        if (file)
            gather(s, b, NULL, i, i + n, o, rs);
        for (uint32_t c = 0; !file && c < s->nfields; c++) {
            uint32_t w = s->fields[c].width;
            for (uint32_t j = 0; j < n; j++)
                memcpy(o + (size_t)j * rs + s->fields[c].offset,
                       (const unsigned char *)b->cols[c] + (size_t)(i + j) * w, w);
        }
        for (uint32_t j = 0; j < n; j++)
            *sum += XXH3_64bits(o + (size_t)j * rs, rs);
    }
    mem_free(o, (size_t)rs * CHUNK);
    return 0;
}

int64_t st_proj_verify(const char *file, const st_schema *s, const st_file_info *info,
                       const uint64_t *sum, st_verify_fn bad, void *ctx, st_err *err)
{
    char path[PATH_MAX];
    if (st_proj_path(file, path, sizeof path, err) < 0)
        return -1;
    st_err e = {0};
    char msg[sizeof path + 40];
    st_nbuf_opts io;
    st_nbuf_opts_default(&io);
    io.cache = false; /* verify reads what is on disk */
    st_reader *r = st_proj_open(file, s, info, &io, &e);
    if (!r && e.code == ST_ENOMEM) {
        *err = e;
        return -1;
    }
    if (!r) {
        bad(ctx, path, UINT64_MAX, e.msg);
        return 1;
    }
    /* its blocks checked and its rows digested in one reading */
    uint64_t got = 0;
    int64_t nbad = st_reader_verify_open(r, bad, ctx, &got, err);
    st_reader_close(r);
    if (nbad != 0)
        return nbad;
    if (sum && got != *sum) {
        snprintf(msg, sizeof msg, "%s: holds other tags than its file's", path);
        bad(ctx, path, UINT64_MAX, msg);
        return 1;
    }
    return 0;
}
