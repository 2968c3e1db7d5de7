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
#include "store/oindex.h"

struct st_proj {
    const st_schema *s;
    uint32_t f;            /* the projection field */
    uint32_t rs;           /* bytes of a projection row */
    unsigned char *rows;   /* the projection's rows as added */
    size_t n, cap;
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
    return p;
}

static unsigned char *room(st_proj *p, size_t n, st_err *err)
{
    size_t rs = p->rs;
    if (p->n + n > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < p->n + n)
            cap *= 2;
        unsigned char *rows = mem_realloc(p->rows, p->cap * rs, cap * rs);
        if (!rows) {
            st_err_nomem(err, "projection");
            return NULL;
        }
        p->rows = rows;
        p->cap = cap;
    }
    unsigned char *at = p->rows + p->n * rs;
    p->n += n;
    return at;
}

int st_proj_add(st_proj *p, const void *tags, uint32_t n, st_err *err)
{
    const st_schema *s = p->s;
    unsigned char *o = n ? room(p, n, err) : NULL;
    if (n && !o)
        return -1;
    for (uint32_t c = s->nrow; c < s->nfields; c++) {
        uint32_t w = s->fields[c].width, at;
        if (place(s, c, &at) == UINT32_MAX)
            continue;
        const unsigned char *t = (const unsigned char *)tags + s->fields[c].offset;
        for (uint32_t i = 0; i < n; i++, t += s->tag_size)
            memcpy(o + (size_t)i * p->rs + at, t, w);
    }
    return 0;
}

/* Tags [a, e) of b's columns as projection rows (rs bytes) at o, column
 * by column. */
static void gather(const st_schema *s, const st_batch *b, uint32_t a, uint32_t e, unsigned char *o,
                   uint32_t rs)
{
    for (uint32_t c = s->nrow; c < s->nfields; c++) {
        uint32_t w = s->fields[c].width, at;
        if (place(s, c, &at) == UINT32_MAX)
            continue;
        const unsigned char *col = (const unsigned char *)b->cols[c] + (size_t)a * w;
        for (uint32_t i = a; i < e; i++, col += w)
            memcpy(o + (size_t)(i - a) * rs + at, col, w);
    }
}

int st_proj_add_batch(st_proj *p, const st_batch *b, uint32_t a, uint32_t e, st_err *err)
{
    unsigned char *o = a < e ? room(p, e - a, err) : NULL;
    if (a < e && !o)
        return -1;
    if (o)
        gather(p->s, b, a, e, o, p->rs);
    return 0;
}

void st_proj_free(st_proj *p)
{
    if (!p)
        return;
    mem_free(p->rows, p->cap * p->rs);
    mem_free(p, sizeof *p);
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

/* The rows' order: their projection field's images sorted, ties in the
 * order added (*order: n rows' numbers, mem_alloc'd). */
static int sort_rows(const st_proj *p, uint32_t **order, st_err *err)
{
    size_t n = p->n, rs = p->rs;
    uint64_t *k = mem_alloc(n * 16 + 1);
    uint32_t *r = mem_alloc(n * 8 + 1);
    if (!k || !r) {
        mem_free(k, n * 16 + 1);
        mem_free(r, n * 8 + 1);
        return st_err_nomem(err, "projection");
    }
    const st_field *f = &p->s->fields[p->f];
    for (size_t i = 0; i < n; i++) {
        k[i] = st_field_order(f, p->rows + i * rs);
        r[i] = (uint32_t)i;
    }
    st_oidx_sort(k, r, k + n, r + n, (uint32_t)n);
    mem_free(k, n * 16 + 1);
    *order = r;
    return 0;
}

int st_proj_write(st_proj *p, const char *file, uint64_t id, const st_write_opts *o, st_err *err)
{
    char path[PATH_MAX], label[96];
    if (st_proj_path(file, path, sizeof path, err) < 0)
        return -1;
    if (p->n > UINT32_MAX)
        return st_err_set(err, ST_EINPUT, "%s: more than %" PRIu32 " tags for a projection", file,
                          UINT32_MAX);
    st_schema *ps = st_proj_schema(p->s, err);
    uint32_t *order = NULL;
    if (!ps || sort_rows(p, &order, err) < 0) {
        st_schema_free(ps);
        return -1;
    }
    st_write_opts wo = *o;
    label_of(id, p->n, label, sizeof label);
    wo.label = label;
    wo.checked = true; /* the file's tags, checked as they came */
    st_writer *w = st_writer_create(path, ps, &wo, err);
    int rc = w ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < p->n; i++)
        rc = st_writer_append(w, p->rows + (size_t)order[i] * p->rs, NULL, 0, err);
    if (w)
        rc = rc == 0 ? st_writer_commit(w, err) : (st_writer_abort(w), -1);
    mem_free(order, p->n * 8 + 1);
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

void st_proj_digest(const st_schema *s, const st_batch *b, uint32_t a, uint32_t e, uint64_t *sum)
{
    /* a projection's own batch is rows of every field; a file's, its tags
     * (gathered 256 at a time) */
    bool file = st_schema_proj(s) >= 0;
    uint32_t rs = s->row_size;
    if (file)
        place(s, s->nfields, &rs);
    unsigned char *o = mem_alloc((size_t)rs * 256);
    if (!o)
        return;   /* verify then reports a digest that differs */
    for (uint32_t i = a; i < e; i += 256) {
        uint32_t n = e - i < 256 ? e - i : 256;
        if (file)
            gather(s, b, i, i + n, o, rs);
        for (uint32_t c = 0; !file && c < s->nfields; c++) {
            uint32_t w = s->fields[c].width;
            for (uint32_t j = 0; j < n; j++)
                memcpy(o + (size_t)j * rs + s->fields[c].offset,
                       (const unsigned char *)b->cols[c] + (size_t)(i + j) * w, w);
        }
        for (uint32_t j = 0; j < n; j++)
            *sum += XXH3_64bits(o + (size_t)j * rs, rs);
    }
    mem_free(o, (size_t)rs * 256);
}

int64_t st_proj_verify(const char *file, const st_schema *s, const st_file_info *info,
                       const uint64_t *sum, st_verify_fn bad, void *ctx, st_err *err)
{
    char path[PATH_MAX];
    if (st_proj_path(file, path, sizeof path, err) < 0)
        return -1;
    st_err e = {0};
    char msg[sizeof path + sizeof e.msg + 8];
    int64_t nbad = st_reader_verify(path, NULL, bad, ctx, &e);
    if (nbad != 0) {
        if (nbad > 0 || e.code != ST_ENOMEM) {
            if (nbad < 0)
                bad(ctx, path, UINT64_MAX, e.msg);
            return nbad < 0 ? 1 : nbad;
        }
        *err = e;
        return -1;
    }
    st_nbuf_opts io;
    st_nbuf_opts_default(&io);
    io.cache = false;
    st_reader *r = st_proj_open(file, s, info, &io, &e);
    if (!r) {
        bad(ctx, path, UINT64_MAX, e.msg);
        return 1;
    }
    uint64_t got = 0;
    const st_batch *b;
    int rc;
    while ((rc = st_reader_next(r, &b, &e)) == 1)
        st_proj_digest(st_reader_schema(r), b, 0, b->ntagsets, &got);
    st_reader_close(r);
    if (rc < 0 || (sum && got != *sum)) {
        snprintf(msg, sizeof msg, "%s: %s", path, rc < 0 ? e.msg : "holds other tags than its file's");
        bad(ctx, path, UINT64_MAX, msg);
        return 1;
    }
    return 0;
}
