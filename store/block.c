/* block: encodes tagsets into checksummed PAX blocks and decodes chosen columns. */
#include "config.h"
#include "store/block.h"

#include <inttypes.h>
#include <lz4.h>
#include <lz4hc.h>
#include <string.h>
#include <xxhash.h>

#include "store/bindex.h"
#include "store/lwcodec.h"
#include "store/oindex.h"
#include "store/bytes.h"
#include "store/mem.h"

/* Column data is copied as host values; the format says little-endian. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "comb's store writes column data in host order and needs a little-endian host"
#endif

static const unsigned char block_magic[4] = {'C', 'B', 'L', 'K'};

enum { CODEC_RAW = 0, CODEC_LZ4 = 1 }; /* on disk, per column; HC output is LZ4 */

/* A growable byte vector. */
typedef struct vec {
    unsigned char *p;
    size_t n, cap;
} bytevec;

static int reserve(unsigned char **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 4096;
    while (ncap < need)
        ncap *= 2;
    unsigned char *q = mem_realloc(*p, *cap, ncap);
    if (!q)
        return -1;
    *p = q;
    *cap = ncap;
    return 0;
}

struct st_block_enc {
    const st_schema *s;
    st_codec codec;
    int level;
    bool light;     /* may store columns by RLE or FOR (format version 6) */
    uint32_t ncols;
    bytevec *cols;
    uint32_t ntagsets, ntags;
    uint64_t raw;
    unsigned char *out;
    size_t out_cap;
    st_zone *zones;
    void *state; /* LZ4 or LZ4 HC compression state */
    size_t state_size;
    unsigned char **idx; /* [nindex]: the last block's bitmap indexes */
    size_t *idx_len;
};

void st_block_enc_free(st_block_enc *e)
{
    if (!e)
        return;
    for (uint32_t c = 0; c < e->ncols && e->cols; c++)
        mem_free(e->cols[c].p, e->cols[c].cap);
    mem_free(e->cols, e->ncols * sizeof *e->cols);
    mem_free(e->zones, e->ncols * sizeof *e->zones);
    mem_free(e->out, e->out_cap);
    mem_free(e->state, e->state_size);
    for (uint32_t j = 0; e->idx && e->idx_len && j < e->s->nindex; j++)
        mem_free(e->idx[j], e->idx_len[j]);
    mem_free(e->idx, (e->s->nindex + 1) * sizeof *e->idx);
    mem_free(e->idx_len, (e->s->nindex + 1) * sizeof *e->idx_len);
    mem_free(e, sizeof *e);
}

st_block_enc *st_block_enc_new(const st_schema *s, st_codec codec, int level, bool light,
                               st_err *err)
{
    st_block_enc *e = mem_calloc(1, sizeof *e);
    if (!e) {
        st_err_nomem(err, "block encoder");
        return NULL;
    }
    e->s = s;
    e->codec = codec;
    e->light = light && codec != ST_CODEC_NONE;
    e->ncols = st_schema_ncols(s);
    if (codec == ST_CODEC_LZ4) {
        e->level = level > 0 ? level : 1;
        e->state_size = (size_t)LZ4_sizeofState();
    } else if (codec == ST_CODEC_LZ4HC) {
        e->level = level > 0 && level <= LZ4HC_CLEVEL_MAX ? level : LZ4HC_CLEVEL_DEFAULT;
        e->state_size = (size_t)LZ4_sizeofStateHC();
    }
    e->cols = mem_calloc(e->ncols, sizeof *e->cols);
    e->zones = mem_calloc(e->ncols, sizeof *e->zones);
    e->idx = mem_calloc(s->nindex + 1, sizeof *e->idx);
    e->idx_len = mem_calloc(s->nindex + 1, sizeof *e->idx_len);
    if (!e->cols || !e->zones || !e->idx || !e->idx_len ||
        (e->state_size && !(e->state = mem_alloc(e->state_size)))) {
        st_block_enc_free(e);
        st_err_nomem(err, "block encoder");
        return NULL;
    }
    return e;
}

uint64_t st_block_tagset_size(const st_schema *s, uint32_t ntags)
{
    return s->row_size + (s->nfields > s->nrow ? 4 : 0) + (uint64_t)ntags * s->tag_size;
}

uint32_t st_block_enc_count(const st_block_enc *e) { return e->ntagsets; }
bool st_block_enc_light(const st_block_enc *e) { return e->light; }
uint64_t st_block_enc_raw(const st_block_enc *e) { return e->raw; }

/* Appends to a vector that has room (st_block_enc_add reserves first). */
static void push(bytevec *v, const void *p, uint32_t n)
{
    st_copy_value(v->p + v->n, p, n);
    v->n += n;
}

int st_block_enc_add(st_block_enc *e, const void *row, const void *tags, uint32_t ntags, st_err *err)
{
    const st_schema *s = e->s;
    const unsigned char *r = row, *t = tags;
    /* Reserve first so a failure leaves the columns as they were. */
    for (uint32_t c = 0; c < e->ncols; c++) {
        bytevec *v = &e->cols[c];
        size_t add = c < s->nrow ? s->fields[c].width
                   : c < s->nfields ? (size_t)ntags * s->fields[c].width : 4;
        if (reserve(&v->p, &v->cap, v->n + add) < 0)
            return st_err_nomem(err, "block columns");
    }
    for (uint32_t c = 0; c < s->nrow; c++)
        push(&e->cols[c], r + s->fields[c].offset, s->fields[c].width);
    if (s->nfields > s->nrow) {
        push(&e->cols[s->nfields], &ntags, 4);
        for (uint32_t j = 0; j < ntags; j++, t += s->tag_size)
            for (uint32_t c = s->nrow; c < s->nfields; c++)
                push(&e->cols[c], t + s->fields[c].offset, s->fields[c].width);
    }
    e->ntagsets++;
    e->ntags += ntags;
    e->raw += st_block_tagset_size(s, ntags);
    return 0;
}

/* Appends n bytes from src to a vector that has room, zeros when the column
 * was not decoded (as st_batch_row gives it). */
static void push_run(bytevec *v, const void *src, size_t n)
{
    if (!n)         /* (an empty vector has no buffer yet) */
        return;
    if (src)
        memcpy(v->p + v->n, src, n);
    else
        memset(v->p + v->n, 0, n);
    v->n += n;
}

int st_block_enc_add_batch(st_block_enc *e, const st_batch *b, uint32_t t0, uint32_t t1,
                           st_err *err)
{
    const st_schema *s = e->s;
    uint32_t n = t1 - t0, g0 = 0, ntags = 0;
    bool tagged = s->nfields > s->nrow;
    if (tagged) {
        g0 = b->tag_start[t0];
        ntags = b->tag_start[t1] - g0;
    }
    for (uint32_t c = 0; c < e->ncols; c++) {
        bytevec *v = &e->cols[c];
        size_t add = c < s->nrow ? (size_t)n * s->fields[c].width
                   : c < s->nfields ? (size_t)ntags * s->fields[c].width : (size_t)n * 4;
        if (reserve(&v->p, &v->cap, v->n + add) < 0)
            return st_err_nomem(err, "block columns");
    }
    for (uint32_t c = 0; c < s->nfields; c++) {
        size_t w = s->fields[c].width, at = c < s->nrow ? t0 : g0;
        const unsigned char *col = b->cols[c];
        push_run(&e->cols[c], col ? col + at * w : NULL, (c < s->nrow ? n : ntags) * w);
    }
    if (tagged)
        push_run(&e->cols[s->nfields], b->counts + t0, (size_t)n * 4);
    e->ntagsets += n;
    e->ntags += ntags;
    e->raw += (uint64_t)n * st_block_tagset_size(s, 0) + (uint64_t)ntags * s->tag_size;
    return 0;
}

/* Min and max of n native integers, then their order images: one compare
 * per value instead of a conversion per value. */
#define INT_ZONE(T)                                        \
    do {                                                   \
        T lo, hi;                                          \
        memcpy(&lo, p, sizeof lo);                         \
        hi = lo;                                           \
        for (uint32_t i = 1; i < n; i++) {                 \
            T x;                                           \
            memcpy(&x, p + (size_t)i * sizeof x, sizeof x); \
            lo = x < lo ? x : lo;                          \
            hi = x > hi ? x : hi;                          \
        }                                                  \
        z->min = st_field_order(f, &lo);                   \
        z->max = st_field_order(f, &hi);                   \
    } while (0)

void st_block_zone(const st_schema *s, uint32_t c, const void *vec, uint32_t n, st_zone *z)
{
    const st_field *f = st_schema_col(s, c);
    const unsigned char *p = vec;
    z->min = UINT64_MAX;
    z->max = 0;
    if (n == 0)
        return;
    switch (f->type) {
    case ST_U8: case ST_BOOL: case ST_ENUM: INT_ZONE(uint8_t); break;
    case ST_U16: INT_ZONE(uint16_t); break;
    case ST_U32: INT_ZONE(uint32_t); break;
    case ST_U64: INT_ZONE(uint64_t); break;
    case ST_I8: INT_ZONE(int8_t); break;
    case ST_I16: INT_ZONE(int16_t); break;
    case ST_I32: INT_ZONE(int32_t); break;
    case ST_I64: case ST_TIME: INT_ZONE(int64_t); break;
    default: /* floats and strings: compare the order images */
        for (uint32_t i = 0; i < n; i++) {
            uint64_t o = st_field_order(f, p + (size_t)i * f->width);
            z->min = o < z->min ? o : z->min;
            z->max = o > z->max ? o : z->max;
        }
    }
}

/* Whether FOR orders the field's values as signed integers. */
static bool signed_int(const st_field *f)
{
    return f->type == ST_I8 || f->type == ST_I16 || f->type == ST_I32 || f->type == ST_I64;
}

/* The smaller of RLE and FOR for column c's n bytes (codec 0: neither
 * applies), its size in *size. */
static unsigned light_codec(const st_block_enc *e, uint32_t c, const unsigned char *src, size_t n,
                            size_t *size)
{
    const st_field *f = st_schema_col(e->s, c);
    uint32_t w = f->width, nv = w ? (uint32_t)(n / w) : 0;
    if (!e->light || nv == 0)
        return 0;
    size_t rle, fr;
    st_lw_sizes(src, nv, w, signed_int(f), &rle, &fr);
    bool by_for = fr && fr < rle;
    *size = by_for ? fr : rle;
    return by_for ? ST_LW_FOR : ST_LW_RLE;
}

/* LZ4 spends at least one output byte per 256 input bytes (a sequence's
 * token and offset, 3 bytes, carry a match of at most 19 bytes, and each
 * further length byte at most 255 more), so best >= n / 256 in the rule
 * below and a light codec of at most this many bytes wins whatever LZ4
 * gives: the writer then skips compressing the column by LZ4. */
size_t st_block_light_sure(size_t n)
{
    return n / 256 + n / 32;
}

/* Compresses column c's n bytes at src into dst (room for
 * LZ4_compressBound(n)); returns the codec and sets *stored. The rule
 * (docs/STORE.md): RLE or FOR, whichever is smaller, where it is smaller
 * than raw and within a quarter of the smaller of LZ4 and raw, or within
 * 1/32 of the raw size of it (both tiny: a few runs), as it reads a few
 * rows without decoding the column; else LZ4 where that is smaller than
 * raw; else raw. */
static int compress_col(st_block_enc *e, uint32_t c, const unsigned char *src, size_t n,
                        unsigned char *dst, size_t *stored)
{
    int k = 0, bound = LZ4_compressBound((int)n);
    size_t lsize = 0;
    unsigned light = light_codec(e, c, src, n, &lsize);
    bool sure = light && lsize < n && lsize <= st_block_light_sure(n);
    if (n > 0 && !sure && e->codec == ST_CODEC_LZ4)
        k = LZ4_compress_fast_extState(e->state, (const char *)src, (char *)dst, (int)n, bound, e->level);
    else if (n > 0 && !sure && e->codec == ST_CODEC_LZ4HC)
        k = LZ4_compress_HC_extStateHC(e->state, (const char *)src, (char *)dst, (int)n, bound, e->level);
    size_t best = k > 0 && (size_t)k < n ? (size_t)k : n;
    size_t slack = best / 4 > n / 32 ? best / 4 : n / 32;
    if (sure || (light && lsize < n && lsize <= best + slack)) {
        const st_field *f = st_schema_col(e->s, c);
        uint32_t w = f->width, nv = (uint32_t)(n / w);
        if (light == ST_LW_RLE)
            st_lw_rle_encode(src, nv, w, dst);
        else
            st_lw_for_encode(src, nv, w, signed_int(f), dst);
        *stored = lsize;
        return (int)light;
    }
    if (k > 0 && (size_t)k < n) {
        *stored = (size_t)k;
        return CODEC_LZ4;
    }
    if (n) /* an empty column may never have been allocated */
        memcpy(dst, src, n);
    *stored = n;
    return CODEC_RAW;
}

/* The indexes of the block's indexed fields (bitmap indexes of key and
 * tagset fields, order indexes of tag fields), built from their columns
 * (e->idx[j], e->idx_len[j]), before the columns are compressed. */
static int build_indexes(st_block_enc *e, size_t *bound, st_err *err)
{
    for (uint32_t c = 0, j = 0; c < e->s->nfields; c++) {
        if (!e->s->fields[c].index)
            continue;
        mem_free(e->idx[j], e->idx_len[j]);
        e->idx[j] = NULL;
        e->idx_len[j] = 0;
        if ((c < e->s->nrow ? st_bidx_build(&e->s->fields[c], e->cols[c].p, e->ntagsets, &e->idx[j],
                                            &e->idx_len[j], err)
                            : st_oidx_build(&e->s->fields[c], e->cols[c].p, e->ntags, &e->idx[j],
                                            &e->idx_len[j], err)) < 0)
            return -1;
        *bound += e->idx_len[j++];
    }
    return 0;
}

int st_block_enc_finish(st_block_enc *e, const unsigned char **out, size_t *n, const st_zone **zones,
                        st_err *err)
{
    size_t dir = st_block_head_size(e->s), bound = dir;
    for (uint32_t c = 0; c < e->ncols; c++)
        bound += (size_t)LZ4_compressBound((int)e->cols[c].n);
    if (build_indexes(e, &bound, err) < 0)
        return -1;
    if (reserve(&e->out, &e->out_cap, bound) < 0)
        return st_err_nomem(err, "block buffer");
    unsigned char *o = e->out;
    memcpy(o + 8, block_magic, 4);
    st_put32(o + 12, e->ntagsets);
    st_put32(o + 16, e->ntags);
    st_put32(o + 20, e->ncols);
    size_t at = dir;
    for (uint32_t c = 0; c < e->ncols; c++) {
        bytevec *v = &e->cols[c];
        size_t stored;
        unsigned char *d = o + ST_BLOCK_HEADER + (size_t)ST_BLOCK_DIRENT * c;
        d[0] = (unsigned char)compress_col(e, c, v->p, v->n, o + at, &stored);
        d[1] = d[2] = d[3] = 0;
        st_put32(d + 4, (uint32_t)v->n);
        st_put32(d + 8, (uint32_t)stored);
        st_put64(d + 12, XXH3_64bits(o + at, stored));
        st_block_zone(e->s, c, v->p, c < e->s->nrow || c == e->s->nfields ? e->ntagsets : e->ntags,
                      &e->zones[c]);
        at += stored;
        v->n = 0;
    }
    for (uint32_t j = 0; j < e->s->nindex; j++) {   /* stored raw, after the columns */
        unsigned char *d = o + ST_BLOCK_HEADER + (size_t)ST_BLOCK_DIRENT * (e->ncols + j);
        memcpy(o + at, e->idx[j], e->idx_len[j]);
        memset(d, 0, 4);
        st_put32(d + 4, (uint32_t)e->idx_len[j]);
        st_put32(d + 8, (uint32_t)e->idx_len[j]);
        st_put64(d + 12, XXH3_64bits(o + at, e->idx_len[j]));
        at += e->idx_len[j];
    }
    st_put64(o, XXH3_64bits(o + 8, dir - 8)); /* the head; the columns carry their own */
    *out = o;
    *n = at;
    *zones = e->zones;
    e->ntagsets = e->ntags = 0;
    e->raw = 0;
    return 0;
}

/* ---- batches and decoding -------------------------------------------------- */

void st_batch_init(st_batch *b)
{
    memset(b, 0, sizeof *b);
}

void st_batch_free(st_batch *b)
{
    for (uint32_t c = 0; c < b->ncols; c++)
        mem_free(b->vec[c], b->cap[c]);
    mem_free(b->cols, b->ncols * sizeof *b->cols);
    mem_free(b->enc, b->ncols * sizeof *b->enc);
    mem_free(b->vec, b->ncols * sizeof *b->vec);
    mem_free(b->cap, b->ncols * sizeof *b->cap);
    mem_free(b->starts, b->starts_cap);
    st_batch_init(b);
}

static int batch_shape(st_batch *b, uint32_t ncols, st_err *err)
{
    if (b->ncols == ncols)
        return 0;
    st_batch_free(b);
    b->cols = mem_calloc(ncols, sizeof *b->cols);
    b->enc = mem_calloc(ncols, sizeof *b->enc);
    b->vec = mem_calloc(ncols, sizeof *b->vec);
    b->cap = mem_calloc(ncols, sizeof *b->cap);
    b->ncols = ncols;
    if (!b->cols || !b->enc || !b->vec || !b->cap) {
        /* st_batch_free must see consistent sizes: free what exists by hand. */
        mem_free(b->cols, ncols * sizeof *b->cols);
        mem_free(b->enc, ncols * sizeof *b->enc);
        mem_free(b->vec, ncols * sizeof *b->vec);
        mem_free(b->cap, ncols * sizeof *b->cap);
        st_batch_init(b);
        return st_err_nomem(err, "column vectors");
    }
    return 0;
}

typedef struct colent {
    unsigned codec;
    uint32_t raw, stored;
    uint64_t sum; /* version 2: the checksum of the stored bytes */
    uint64_t off; /* of the stored bytes, from the block's start */
} colent;

static size_t dirent_size(uint32_t version)
{
    return version == 1 ? ST_BLOCK_DIRENT_V1 : ST_BLOCK_DIRENT;
}

size_t st_block_head_size(const st_schema *s)
{
    return ST_BLOCK_HEADER + (size_t)ST_BLOCK_DIRENT * (st_schema_ncols(s) + s->nindex);
}

/* Checks the directory against the counts and the block's length n. */
static int read_dir(const st_schema *s, uint32_t version, const unsigned char *p, size_t n,
                    uint32_t ntagsets, uint32_t ntags, uint32_t ncols, colent *d, st_err *err)
{
    size_t es = dirent_size(version);
    uint32_t nidx = version >= 3 ? s->nindex : 0;   /* the bitmap indexes' entries follow the columns' */
    uint64_t at = ST_BLOCK_HEADER + (uint64_t)es * (ncols + nidx), total = 0;
    if (at > n)
        return st_err_set(err, ST_ECORRUPT, "block of %zu bytes cannot hold its column directory", n);
    for (uint32_t c = 0; c < ncols; c++) {
        const unsigned char *e = p + ST_BLOCK_HEADER + es * c;
        const st_field *f = st_schema_col(s, c);
        d[c].codec = e[0];
        d[c].raw = st_get32(e + 4);
        d[c].stored = st_get32(e + 8);
        d[c].sum = version == 1 ? 0 : st_get64(e + 12);
        uint64_t want = (uint64_t)(st_schema_col_is_tag(s, c) ? ntags : ntagsets) * f->width;
        total += want;
        if (d[c].codec > (version >= 6 ? ST_LW_FOR : CODEC_LZ4) || e[1] || e[2] || e[3])
            return st_err_set(err, ST_ECORRUPT, "column '%s' has unknown codec bytes %02x %02x %02x %02x", f->name,
                           e[0], e[1], e[2], e[3]);
        if (d[c].raw != want || total > ST_BLOCK_MAX_RAW)
            return st_err_set(err, ST_ECORRUPT, "column '%s' holds %" PRIu32 " bytes, expected %" PRIu64, f->name,
                           d[c].raw, want);
        /* LZ4 expands at most 255 times; this bounds what a hostile block
         * can make us allocate by its own size. RLE and FOR are smaller
         * than raw (else the writer stores raw); what they expand to, the
         * checked head's counts say. */
        if (d[c].codec == CODEC_RAW   ? d[c].stored != d[c].raw
            : d[c].codec == CODEC_LZ4 ? d[c].raw == 0 || d[c].raw > 255 * (uint64_t)d[c].stored + 16
                                      : d[c].raw == 0 || d[c].stored >= d[c].raw)
            return st_err_set(err, ST_ECORRUPT, "column '%s' stores %" PRIu32 " bytes for %" PRIu32, f->name,
                           d[c].stored, d[c].raw);
        d[c].off = at;
        at += d[c].stored;
        if (at > n)
            return st_err_set(err, ST_ECORRUPT, "column '%s' runs past the end of the block", f->name);
    }
    for (uint32_t j = 0; j < nidx; j++) {  /* then the bitmap indexes, raw */
        const unsigned char *e = p + ST_BLOCK_HEADER + es * (ncols + j);
        colent *x = &d[ncols + j];
        x->codec = e[0];
        x->raw = st_get32(e + 4);
        x->stored = st_get32(e + 8);
        x->sum = st_get64(e + 12);
        x->off = at;
        if (e[0] || e[1] || e[2] || e[3] || x->raw != x->stored || x->stored < 4)
            return st_err_set(err, ST_ECORRUPT, "index %" PRIu32 " has a bad directory entry", j);
        at += x->stored;
        if (at > n)
            return st_err_set(err, ST_ECORRUPT, "index %" PRIu32 " runs past the end of the block", j);
    }
    if (at != n)
        return st_err_set(err, ST_ECORRUPT, "block has %" PRIu64 " bytes after its last column", (uint64_t)n - at);
    return 0;
}

/* Column c's stored bytes at data into the batch, checked: decoded, or
 * by RLE or FOR and deferred, left encoded (b->enc[c]). */
static int decode_col(st_batch *b, uint32_t c, const colent *d, const unsigned char *data, uint32_t version,
                      const st_field *f, bool defer, st_err *err)
{
    size_t need = d->raw ? d->raw : 1;
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION /* let the fuzzer past the checksum */
    uint64_t sum = version == 1 ? 0 : XXH3_64bits(data, d->stored);
    if (sum != d->sum)
        return st_err_set(err, ST_ECORRUPT, "column '%s': checksum mismatch (stored %016" PRIx64
                          ", computed %016" PRIx64 ")", f->name, d->sum, sum);
#else
    (void)version;
#endif
    bool light = d->codec == ST_LW_RLE || d->codec == ST_LW_FOR;
    if (light && st_lw_check(d->codec, data, d->stored, d->raw / f->width, f->width, err) < 0) {
        st_err_prefix(err, "column '%s': ", f->name);
        return -1;
    }
    if (light && defer) {
        b->enc[c] = (st_colenc){d->codec, d->stored, data};
        return 0;
    }
    if (need > b->cap[c]) {
        void *q = mem_realloc(b->vec[c], b->cap[c], need);
        if (!q)
            return st_err_nomem(err, "column vector");
        b->vec[c] = q;
        b->cap[c] = need;
    }
    if (d->codec == CODEC_RAW) {
        memcpy(b->vec[c], data, d->raw);
    } else if (light) {
        st_lw_decode(d->codec, data, d->raw / f->width, f->width, b->vec[c]);
    } else {
        int k = LZ4_decompress_safe((const char *)data, b->vec[c], (int)d->stored, (int)d->raw);
        if (k != (int)d->raw)
            return st_err_set(err, ST_ECORRUPT, "column '%s' does not decompress", f->name);
    }
    b->cols[c] = b->vec[c];
    return 0;
}

void st_batch_gather(const st_schema *s, const st_batch *b, uint32_t c, const uint32_t *rows,
                     uint32_t k, void *out)
{
    uint32_t w = st_schema_col(s, c)->width;
    const st_colenc *e = b->enc ? &b->enc[c] : NULL;
    if (b->cols[c]) {
        for (uint32_t j = 0; j < k; j++)
            memcpy((char *)out + (size_t)j * w, (const char *)b->cols[c] + (size_t)rows[j] * w, w);
    } else if (e && e->codec) {
        uint32_t n = st_schema_col_is_tag(s, c) ? b->ntags : b->ntagsets;
        st_lw_gather(e->codec, e->p, n, w, rows, k, out);
    } else {
        memset(out, 0, (size_t)k * w);
    }
}

/* Builds tag_start from the counts, which must add up to ntags. */
static int count_tags(st_batch *b, const uint32_t *counts, st_err *err)
{
    size_t need = ((size_t)b->ntagsets + 1) * sizeof *b->starts;
    if (reserve((unsigned char **)&b->starts, &b->starts_cap, need) < 0)
        return st_err_nomem(err, "tag offsets");
    uint64_t sum = 0;
    for (uint32_t t = 0; t < b->ntagsets; t++) {
        b->starts[t] = (uint32_t)sum;
        uint32_t k;
        memcpy(&k, counts + t, 4);
        sum += k;
        if (sum > b->ntags)
            break;
    }
    if (sum != b->ntags)
        return st_err_set(err, ST_ECORRUPT, "tag counts add up to %" PRIu64 "%s, the block holds %" PRIu32 " tags",
                       sum, sum > b->ntags ? " or more" : "", b->ntags);
    b->starts[b->ntagsets] = b->ntags;
    b->counts = counts;
    b->tag_start = b->starts;
    return 0;
}

int st_batch_attach(const st_schema *s, st_batch *b, uint32_t ntagsets, uint32_t ntags,
                    const void *const *cols, const st_colenc *enc, const uint32_t *starts,
                    st_err *err)
{
    uint32_t ncols = st_schema_ncols(s);
    if (batch_shape(b, ncols, err) < 0)
        return -1;
    b->ntagsets = ntagsets;
    b->ntags = ntags;
    b->first = 0;
    b->counts = b->tag_start = NULL;
    for (uint32_t c = 0; c < ncols; c++) {
        b->cols[c] = (void *)cols[c];
        b->enc[c] = enc ? enc[c] : (st_colenc){0};
    }
    if (s->nfields > s->nrow && cols[s->nfields] && starts) {
        b->counts = cols[s->nfields];
        b->tag_start = starts;
        return 0;
    }
    return s->nfields > s->nrow && cols[s->nfields] ? count_tags(b, cols[s->nfields], err) : 0;
}

/* The head's checksum (version 1: the whole block's), magic and counts. */
static int check_head(const st_schema *s, uint32_t version, const unsigned char *p, size_t hn, size_t n,
                      uint32_t *ntagsets, uint32_t *ntags, st_err *err)
{
    if (hn < ST_BLOCK_HEADER)
        return st_err_set(err, ST_ECORRUPT, "block of %zu bytes is smaller than a block header", n);
    uint32_t ncols = st_get32(p + 20);
    /* Version 2 checksums the header and directory; the columns have their own. */
    size_t covered = version == 1 ? n : version == 2 ? ST_BLOCK_HEADER + (size_t)ST_BLOCK_DIRENT * st_schema_ncols(s)
                                                  : st_block_head_size(s);
    if (covered > hn)
        return st_err_set(err, ST_ECORRUPT, "block of %zu bytes cannot hold its column directory", n);
    uint64_t stored = st_get64(p), actual = XXH3_64bits(p + 8, covered - 8);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION /* let the fuzzer past the checksum */
    if (stored != actual)
        return st_err_set(err, ST_ECORRUPT, "checksum mismatch (stored %016" PRIx64 ", computed %016" PRIx64 ")",
                       stored, actual);
#endif
    if (memcmp(p + 8, block_magic, 4) != 0)
        return st_err_set(err, ST_ECORRUPT, "no block magic");
    *ntagsets = st_get32(p + 12);
    *ntags = st_get32(p + 16);
    if (ncols != st_schema_ncols(s))
        return st_err_set(err, ST_ECORRUPT, "block has %" PRIu32 " columns, the schema %" PRIu32, ncols,
                       st_schema_ncols(s));
    if (*ntagsets == 0 || (*ntags && s->nfields == s->nrow))
        return st_err_set(err, ST_ECORRUPT, "block claims %" PRIu32 " tagsets and %" PRIu32 " tags", *ntagsets,
                          *ntags);
    return 0;
}

bool st_block_needs(const st_schema *s, const bool *want, uint32_t c)
{
    /* (called per column each time a reader's selection changes: kept cheap) */
    if (c < s->nfields)
        return !want || want[c];
    if (c != s->nfields || s->nfields == s->nrow)
        return false;   /* past the columns, or no tag count column */
    if (!want || want[c])
        return true;
    for (uint32_t k = s->nrow; k < s->nfields; k++)
        if (want[k])
            return true;
    return false;
}

/* Decodes from a block whose head (hn bytes at p) is in memory and whose
 * needed columns' bytes are at data[c] (NULL: at p + their offset). */
static int decode(const st_schema *s, uint32_t version, const unsigned char *p, size_t hn, size_t n,
                  const void *const *data, const bool *want, const bool *defer, st_batch *b,
                  st_err *err)
{
    uint32_t ntagsets, ntags, ncols = st_schema_ncols(s);
    if (check_head(s, version, p, hn, n, &ntagsets, &ntags, err) < 0)
        return -1;
    uint32_t nd = ncols + s->nindex;
    colent dir_small[64], *dir = dir_small;
    if (nd > 64 && !(dir = mem_alloc(nd * sizeof *dir)))
        return st_err_nomem(err, "block directory");
    int rc = read_dir(s, version, p, n, ntagsets, ntags, ncols, dir, err);
    if (rc == 0)
        rc = batch_shape(b, ncols, err);
    if (rc == 0) {
        b->ntagsets = ntagsets;
        b->ntags = ntags;
        b->first = 0;
        b->counts = b->tag_start = NULL;
        for (uint32_t c = 0; c < ncols && rc == 0; c++) {
            b->cols[c] = NULL;
            b->enc[c] = (st_colenc){0};
            if (!st_block_needs(s, want, c))
                continue;
            if (data && !data[c])
                rc = st_err_set(err, ST_EINPUT, "column '%s' was not read", st_schema_col(s, c)->name);
            else
                rc = decode_col(b, c, &dir[c], data ? data[c] : p + dir[c].off, version,
                                st_schema_col(s, c), defer && defer[c] && c < s->nrow, err);
        }
        if (rc == 0 && s->nfields > s->nrow && st_block_needs(s, want, s->nfields))
            rc = count_tags(b, b->cols[s->nfields], err);
    }
    if (dir != dir_small)
        mem_free(dir, nd * sizeof *dir);
    return rc;
}

int st_block_decode(const st_schema *s, uint32_t version, const void *block, size_t n, const bool *want,
                    const bool *defer, st_batch *b, st_err *err)
{
    return decode(s, version, block, n, n, NULL, want, defer, b, err);
}

int st_block_locate(const st_schema *s, uint32_t version, const void *head, size_t n, uint64_t *off,
                    uint32_t *len, st_err *err)
{
    uint32_t ntagsets, ntags, ncols = st_schema_ncols(s), nd = ncols + s->nindex;
    size_t hn = st_block_head_size(s);
    if (check_head(s, version, head, hn, n, &ntagsets, &ntags, err) < 0)
        return -1;
    colent dir_small[64], *dir = dir_small;
    if (nd > 64 && !(dir = mem_alloc(nd * sizeof *dir)))
        return st_err_nomem(err, "block directory");
    int rc = read_dir(s, version, head, n, ntagsets, ntags, ncols, dir, err);
    for (uint32_t c = 0; c < nd && rc == 0; c++) {
        off[c] = dir[c].off;
        len[c] = dir[c].stored;
    }
    if (dir != dir_small)
        mem_free(dir, nd * sizeof *dir);
    return rc;
}

int st_block_check_index(const st_schema *s, const void *head, uint32_t j, const void *data,
                         uint32_t ntagsets, uint32_t ntags, bool full, st_err *err)
{
    const unsigned char *e = (const unsigned char *)head + ST_BLOCK_HEADER +
                             (size_t)ST_BLOCK_DIRENT * (st_schema_ncols(s) + j);
    uint32_t len = st_get32(e + 8);
    uint64_t sum = XXH3_64bits(data, len), stored = st_get64(e + 12);
    const char *name = "?";
    bool tag = false;
    for (uint32_t c = 0, k = 0; c < s->nfields; c++)
        if (s->fields[c].index && k++ == j) {
            name = s->fields[c].name;
            tag = c >= s->nrow;
        }
    int rc = sum != stored
                 ? st_err_set(err, ST_ECORRUPT, "checksum mismatch (stored %016" PRIx64
                              ", computed %016" PRIx64 ")", stored, sum)
                 : tag ? st_oidx_check(data, len, ntags, !full, err)
                       : st_bidx_check(data, len, ntagsets, !full, err);
    if (rc < 0)
        st_err_prefix(err, "index of '%s': ", name);
    return rc;
}

int st_block_decode_cols(const st_schema *s, uint32_t version, const void *head, size_t n,
                         const void *const *data, const bool *want, const bool *defer, st_batch *b,
                         st_err *err)
{
    return decode(s, version, head, st_block_head_size(s), n, data, want, defer, b, err);
}
