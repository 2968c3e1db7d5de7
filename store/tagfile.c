/* tagfile: writes and reads tagset files (header, blocks, footer, trailer). */
#include "config.h"
#include "store/tagfile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "store/bindex.h"
#include "store/oindex.h"
#include "store/proj.h"
#include "store/bytes.h"
#include "store/cache.h"
#include "store/mem.h"

/* Layout constants; docs/FORMAT.md draws them. */
static const unsigned char head_magic[8] = {0x89, 'C', 'O', 'M', 'B', 'T', 'S', '\n'};
static const unsigned char tail_magic[8] = {0x89, 'C', 'O', 'M', 'B', 'T', 'E', '\n'};
static const unsigned char foot_magic[4] = {'C', 'F', 'T', 'R'};

bool st_file_is_tagset(const char *path)
{
    unsigned char m[8];
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    bool yes = fread(m, 1, 8, f) == 8 && !memcmp(m, head_magic, 8);
    fclose(f);
    return yes;
}
#define HEAD_FIXED 32u    /* header bytes before the schema text */
#define FOOT_FIXED 40u    /* footer bytes before the block entries */
#define ENTRY_FIXED 24u   /* entry bytes before the keys */
#define TRAILER 32u
#define SCHEMA_MAX (32u << 20) /* above the longest text the schema limits allow */

static size_t entry_size(const st_schema *s)
{
    return ENTRY_FIXED + 2 * (size_t)s->key_size + 16 * (size_t)st_schema_ncols(s);
}

/* COMB_CODEC, NULL when unset or empty (RLE and FOR where smaller). "lz4":
 * LZ4 only, as before format version 6 (tests and comparisons write both
 * ways); st_writer_create refuses any other value (a typo, or a codec it
 * does not name), which would otherwise write version 6 unasked. */
static const char *codec_env(void)
{
    const char *v = getenv("COMB_CODEC");
    return v && *v ? v : NULL;
}

void st_write_opts_default(st_write_opts *o)
{
    o->block_size = ST_BLOCK_DEFAULT;
    o->codec = ST_CODEC_LZ4;
    o->level = 0;
    o->label = NULL;
    o->checked = false;
    o->no_projection = false;
    const char *codec = codec_env();
    o->light = !codec || strcmp(codec, "lz4") != 0;
    st_nbuf_opts_default(&o->io);
}

void st_batch_key(const st_schema *s, const st_batch *b, uint32_t t, unsigned char *key)
{
    for (uint32_t c = 0; c < s->nkeys; c++) {
        const st_field *f = &s->fields[c];
        memcpy(key + f->offset, (const unsigned char *)b->cols[c] + (size_t)t * f->width, f->width);
    }
}

/* ---- writer ---------------------------------------------------------------- */

struct st_writer {
    char *path;
    const st_schema *s;
    uint32_t block_size;
    st_nbuf_writer *io;
    st_block_enc *enc;
    unsigned char *last_key;  /* key of the last tagset appended */
    unsigned char *first_key; /* key of the current block's first tagset */
    unsigned char *run_key;   /* a batch run's first key, to check */
    uint32_t blk_ntags;       /* tags in the current block */
    unsigned char *index;     /* footer entries so far */
    size_t index_n, index_cap;
    uint64_t nblocks, ntagsets, ntags;
    uint64_t foot_sum;        /* the footer's checksum, which a projection names it by */
    st_proj *proj;            /* the projection's tags, when the schema declares one */
    st_write_opts opts;       /* for the projection */
    bool checked; /* values checked by the caller (st_write_opts) */
    bool failed;
};

static void writer_free(st_writer *w)
{
    st_block_enc_free(w->enc);
    st_proj_free(w->proj);
    mem_free(w->last_key, w->s->key_size);
    mem_free(w->first_key, w->s->key_size);
    mem_free(w->run_key, w->s->key_size);
    mem_free(w->index, w->index_cap);
    mem_free(w->path, strlen(w->path) + 1);
    mem_free(w, sizeof *w);
}

static int write_header(st_writer *w, const st_write_opts *o, st_err *err)
{
    size_t slen, llen = o->label ? strlen(o->label) : 0;
    char *text = st_schema_format(w->s, &slen);
    size_t n = HEAD_FIXED + slen + llen + 8;
    unsigned char *h = text ? mem_alloc(n) : NULL;
    if (!h) {
        if (text)
            mem_free(text, slen + 1);
        return st_err_nomem(err, w->path);
    }
    memcpy(h, head_magic, 8);
    /* a file that may hold RLE or FOR columns is version 6; else one
     * without indexes stays version 2, which older combs read; one without
     * an order index of a tag field 3, without a projection 4 */
    st_put32(h + 8, st_block_enc_light(w->enc) ? ST_FORMAT_VERSION
                    : st_schema_proj(w->s) >= 0  ? 5
                    : st_schema_tag_index(w->s) ? 4
                    : w->s->nindex              ? 3
                                                : ST_FORMAT_VERSION_PLAIN);
    st_put32(h + 12, w->proj ? ST_FLAG_PROJECTED : 0); /* flags */
    st_put32(h + 16, w->block_size);
    st_put32(h + 20, (uint32_t)slen);
    st_put32(h + 24, (uint32_t)llen);
    st_put16(h + 28, (uint16_t)o->codec);
    st_put16(h + 30, (uint16_t)(o->level < 0 ? 0 : o->level > 0xffff ? 0xffff : o->level));
    memcpy(h + HEAD_FIXED, text, slen);
    if (llen)
        memcpy(h + HEAD_FIXED + slen, o->label, llen);
    st_put64(h + n - 8, XXH3_64bits(h, n - 8));
    int rc = st_nbuf_write(w->io, h, n, err);
    mem_free(h, n);
    mem_free(text, slen + 1);
    return rc;
}

st_writer *st_writer_create(const char *path, const st_schema *s, const st_write_opts *o, st_err *err)
{
    st_write_opts d;
    if (!o) {
        st_write_opts_default(&d);
        o = &d;
    }
    if (o->block_size < ST_BLOCK_SIZE_MIN || o->block_size > ST_BLOCK_SIZE_MAX) {
        st_err_set(err, ST_EINPUT, "%s: block size %" PRIu32 " is outside %u .. %u", path,
                   o->block_size, ST_BLOCK_SIZE_MIN, ST_BLOCK_SIZE_MAX);
        return NULL;
    }
    if ((unsigned)o->codec > ST_CODEC_LZ4HC) {
        st_err_set(err, ST_EINPUT, "%s: unknown codec %d", path, (int)o->codec);
        return NULL;
    }
    const char *env = codec_env();
    if (env && strcmp(env, "lz4") != 0) {
        st_err_set(err, ST_EINPUT, "%s: COMB_CODEC=%s: the one value known is lz4 (LZ4 only); unset, "
                   "columns are stored by RLE or FOR where smaller", path, env);
        return NULL;
    }
    if (o->label && strlen(o->label) > ST_LABEL_MAX) {
        st_err_set(err, ST_EINPUT, "%s: label of %zu bytes is longer than %u", path, strlen(o->label),
                   ST_LABEL_MAX);
        return NULL;
    }
    st_writer *w = mem_calloc(1, sizeof *w);
    if (!w || !(w->path = mem_strdup(path))) {
        mem_free(w, sizeof *w);
        st_err_nomem(err, path);
        return NULL;
    }
    w->s = s;
    w->opts = *o;
    w->opts.label = NULL;
    w->block_size = o->block_size;
    w->checked = o->checked;
    w->last_key = mem_alloc(s->key_size);
    w->first_key = mem_alloc(s->key_size);
    w->run_key = mem_alloc(s->key_size);
    if (!w->last_key || !w->first_key || !w->run_key) {
        st_err_nomem(err, path);
        goto fail;
    }
    if (st_schema_proj(s) >= 0 && !o->no_projection && !(w->proj = st_proj_new(s, err)))
        goto fail;
    if (!(w->enc = st_block_enc_new(s, o->codec, o->level, o->light, err))) {
        st_err_prefix(err, "%s: ", path);
        goto fail;
    }
    if (!(w->io = st_nbuf_create(path, &o->io, err)))
        goto fail;
    if (write_header(w, o, err) == 0)
        return w;
    st_nbuf_abort(w->io);
fail:
    writer_free(w);
    return NULL;
}

uint64_t st_writer_count(const st_writer *w) { return w->ntagsets; }

static int flush_block(st_writer *w, st_err *err)
{
    const st_schema *s = w->s;
    uint64_t off = st_nbuf_tell(w->io), raw = st_block_enc_raw(w->enc);
    uint32_t ntagsets = st_block_enc_count(w->enc);
    size_t es = entry_size(s);
    const unsigned char *p;
    size_t n;
    const st_zone *z;
    if (w->index_n + es > w->index_cap) {
        size_t ncap = w->index_cap ? w->index_cap * 2 : es * 64;
        unsigned char *q = mem_realloc(w->index, w->index_cap, ncap);
        if (!q)
            return st_err_nomem(err, "block index");
        w->index = q;
        w->index_cap = ncap;
    }
    if (st_block_enc_finish(w->enc, &p, &n, &z, err) < 0)
        return -1;
    unsigned char *e = w->index + w->index_n;
    st_put64(e, off);
    st_put32(e + 8, (uint32_t)n);
    st_put32(e + 12, (uint32_t)raw);
    st_put32(e + 16, ntagsets);
    st_put32(e + 20, w->blk_ntags);
    memcpy(e + ENTRY_FIXED, w->first_key, s->key_size);
    memcpy(e + ENTRY_FIXED + s->key_size, w->last_key, s->key_size);
    unsigned char *zp = e + ENTRY_FIXED + 2 * s->key_size;
    for (uint32_t c = 0; c < st_schema_ncols(s); c++) {
        st_put64(zp + 16 * c, z[c].min);
        st_put64(zp + 16 * c + 8, z[c].max);
    }
    w->index_n += es;
    w->nblocks++;
    w->blk_ntags = 0;
    return st_nbuf_write(w->io, p, n, err);
}

/* Refuses a key (a tagset row's prefix) that sorts before the last appended. */
static int check_order(st_writer *w, const void *key, st_err *err)
{
    if (!w->ntagsets || st_schema_key_cmp(w->s, key, w->last_key) >= 0)
        return 0;
    char now[256], before[256];
    st_schema_format_key(w->s, key, now, sizeof now);
    st_schema_format_key(w->s, w->last_key, before, sizeof before);
    return st_err_set(err, ST_EINPUT, "key %s is out of order: it comes before the previous key %s",
                      now, before);
}

/* The values of a tagset's row and tags, against the schema's types. */
static int check_values(const st_schema *s, const void *row, const void *tags, uint32_t ntags,
                        st_err *err)
{
    if (st_schema_check_row(s, row, false, err) < 0)
        return -1;
    for (uint32_t j = 0; j < ntags; j++)
        if (st_schema_check_row(s, (const unsigned char *)tags + (size_t)j * s->tag_size, true, err) < 0) {
            st_err_suffix(err, " in tag %" PRIu32, j);
            return -1;
        }
    return 0;
}

/* Refuses a tagset of ntags tags too large for any block. */
static int check_size(const st_schema *s, uint32_t ntags, st_err *err)
{
    uint64_t size = st_block_tagset_size(s, ntags);
    if (size <= ST_BLOCK_MAX_RAW)
        return 0;
    return st_err_set(err, ST_EINPUT, "a tagset of %" PRIu32 " tags takes %" PRIu64
                      " bytes, more than the limit of %u", ntags, size, ST_BLOCK_MAX_RAW);
}

static int check_tagset(st_writer *w, const void *row, const void *tags, uint32_t ntags, st_err *err)
{
    const st_schema *s = w->s;
    if (ntags && !s->tag_size)
        return st_err_set(err, ST_EINPUT, "the schema has no tag fields, but the tagset has %" PRIu32
                          " tags", ntags);
    if (check_size(s, ntags, err) < 0)
        return -1;
    if (!w->checked && check_values(s, row, tags, ntags, err) < 0)
        return -1;
    return check_order(w, row, err);
}

/* Writes the block being built; a writer that cannot has failed. */
static int cut_block(st_writer *w, st_err *err)
{
    if (flush_block(w, err) == 0)
        return 0;
    w->failed = true;
    if (err->code != ST_EIO)
        st_err_prefix(err, "%s: block %" PRIu64 ": ", w->path, w->nblocks);
    return -1;
}

int st_writer_append(st_writer *w, const void *row, const void *tags, uint32_t ntags, st_err *err)
{
    if (w->failed)
        return st_err_set(err, ST_EIO, "%s: the writer failed earlier; abort it", w->path);
    if (check_tagset(w, row, tags, ntags, err) < 0) {
        st_err_prefix(err, "%s: tagset %" PRIu64 ": ", w->path, w->ntagsets);
        return -1;
    }
    uint64_t size = st_block_tagset_size(w->s, ntags);
    if (st_block_enc_count(w->enc) && st_block_enc_raw(w->enc) + size > w->block_size &&
        cut_block(w, err) < 0)
        return -1;
    if (st_block_enc_add(w->enc, row, tags, ntags, err) < 0) {
        st_err_prefix(err, "%s: ", w->path); /* nothing was added: the writer stays usable */
        return -1;
    }
    if (w->proj && st_proj_add(w->proj, tags, ntags, err) < 0) {
        w->failed = true;
        return -1;
    }
    if (st_block_enc_count(w->enc) == 1)
        memcpy(w->first_key, row, w->s->key_size);
    memcpy(w->last_key, row, w->s->key_size);
    w->blk_ntags += ntags;
    w->ntagsets++;
    w->ntags += ntags;
    return 0;
}

int st_writer_append_batch(st_writer *w, const st_batch *b, uint32_t t0, uint32_t t1, st_err *err)
{
    const st_schema *s = w->s;
    bool tagged = s->nfields > s->nrow;
    if (w->failed)
        return st_err_set(err, ST_EIO, "%s: the writer failed earlier; abort it", w->path);
    if (!w->checked)
        return st_err_set(err, ST_EINPUT, "%s: tagsets copied from a batch need values checked "
                          "by the caller", w->path);
    if (t0 >= t1)
        return 0;
    st_batch_key(s, b, t0, w->run_key);
    if (check_order(w, w->run_key, err) < 0)
        goto refused;
    while (t0 < t1) {
        /* The tagsets that fit in the current block, as st_writer_append cuts them. */
        uint64_t raw = st_block_enc_raw(w->enc);
        uint32_t count = st_block_enc_count(w->enc), t = t0;
        for (; t < t1; t++, count++) {
            uint32_t ntags = tagged ? b->counts[t] : 0;
            uint64_t size = st_block_tagset_size(s, ntags);
            if (t == t0 && check_size(s, ntags, err) < 0) /* those before it went in first */
                goto refused;
            if (size > ST_BLOCK_MAX_RAW || (count && raw + size > w->block_size))
                break;
            raw += size;
        }
        if (t == t0) { /* the block is full */
            if (cut_block(w, err) < 0)
                return -1;
            continue;
        }
        bool starts = st_block_enc_count(w->enc) == 0;
        if (st_block_enc_add_batch(w->enc, b, t0, t, err) < 0) {
            st_err_prefix(err, "%s: ", w->path);
            return -1;
        }
        if (w->proj && tagged &&
            st_proj_add_batch(w->proj, b, b->tag_start[t0], b->tag_start[t], err) < 0) {
            w->failed = true;
            return -1;
        }
        if (starts)
            st_batch_key(s, b, t0, w->first_key);
        st_batch_key(s, b, t - 1, w->last_key);
        uint32_t ntags = tagged ? b->tag_start[t] - b->tag_start[t0] : 0;
        w->blk_ntags += ntags;
        w->ntagsets += t - t0;
        w->ntags += ntags;
        t0 = t;
    }
    return 0;
refused:
    st_err_prefix(err, "%s: tagset %" PRIu64 ": ", w->path, w->ntagsets);
    return -1;
}

static int write_footer(st_writer *w, st_err *err)
{
    size_t n = FOOT_FIXED + w->index_n + 8;
    unsigned char *f = mem_alloc(n + TRAILER);
    if (!f)
        return st_err_nomem(err, w->path);
    uint64_t off = st_nbuf_tell(w->io);
    memcpy(f, foot_magic, 4);
    st_put32(f + 4, st_schema_ncols(w->s));
    st_put32(f + 8, w->s->key_size);
    st_put32(f + 12, 0);
    st_put64(f + 16, w->nblocks);
    st_put64(f + 24, w->ntagsets);
    st_put64(f + 32, w->ntags);
    if (w->index_n)
        memcpy(f + FOOT_FIXED, w->index, w->index_n);
    st_put64(f + n - 8, w->foot_sum = XXH3_64bits(f, n - 8));
    unsigned char *t = f + n;
    st_put64(t, off);
    st_put64(t + 8, n);
    st_put64(t + 16, XXH3_64bits(t, 16));
    memcpy(t + 24, tail_magic, 8);
    int rc = st_nbuf_write(w->io, f, n + TRAILER, err);
    mem_free(f, n + TRAILER);
    return rc;
}

/* The zone of column c over n footer entries of es bytes at index: its
 * blocks' zone maps joined (min > max when none holds a value). */
static st_zone index_zone(const st_schema *s, const unsigned char *index, size_t es, uint64_t n,
                          uint32_t c)
{
    st_zone out = {UINT64_MAX, 0};
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *p =
            index + i * es + ENTRY_FIXED + 2 * (size_t)s->key_size + 16 * (size_t)c;
        uint64_t min = st_get64(p), max = st_get64(p + 8);
        if (min > max)
            continue;
        out.min = min < out.min ? min : out.min;
        out.max = max > out.max ? max : out.max;
    }
    return out;
}

int st_writer_commit(st_writer *w, st_err *err)
{
    return st_writer_commit_zone(w, 0, NULL, err);
}

int st_writer_commit_zone(st_writer *w, uint32_t c, st_zone *z, st_err *err)
{
    int rc = -1;
    if (w->failed) {
        st_err_set(err, ST_EIO, "%s: the writer failed earlier; nothing was written", w->path);
        goto fail;
    }
    if (z && c >= st_schema_ncols(w->s)) {
        st_err_set(err, ST_EINPUT, "%s: no column %" PRIu32 " (the schema has %" PRIu32 ")",
                   w->path, c, st_schema_ncols(w->s));
        goto fail;
    }
    if (st_block_enc_count(w->enc) && flush_block(w, err) < 0) {
        if (err->code != ST_EIO)
            st_err_prefix(err, "%s: block %" PRIu64 ": ", w->path, w->nblocks);
        goto fail;
    }
    if (write_footer(w, err) < 0)
        goto fail;
    /* the projection first: the file never shows without it */
    if (w->proj && st_proj_write(w->proj, w->path, w->foot_sum, &w->opts, err) < 0)
        goto fail;
    if ((rc = st_nbuf_commit(w->io, err)) < 0 && w->proj)
        st_proj_remove(w->path);
    if (z && rc == 0)
        *z = index_zone(w->s, w->index, entry_size(w->s), w->nblocks, c);
    writer_free(w);
    return rc;
fail:
    st_writer_abort(w);
    return rc;
}

void st_writer_abort(st_writer *w)
{
    if (!w)
        return;
    st_nbuf_abort(w->io);
    writer_free(w);
}

/* ---- reader ---------------------------------------------------------------- */

typedef struct range_ord {
    uint32_t col;
    bool has_lo, has_hi;
    uint64_t lo, hi; /* st_field_order images of the bounds */
} range_ord;

#define AHEAD 16 /* blocks a cold scan asks the device for at once (plan_ahead) */
#define AHEAD_BYTES (8u << 20) /* and at most about this many of their column bytes */
#define TAIL_AHEAD 65536u /* asked for at open: a file's last bytes, its footer */

struct st_reader {
    char *path;
    st_nbuf_reader *io;
    st_schema *s;
    const st_known_schema *known; /* the caller's schema, if the header's matches */
    bool borrowed;      /* s is known->s: not ours to free */
    uint32_t ncols;
    char *label;
    size_t label_len;
    st_file_info info;
    unsigned char *footer;
    size_t footer_size, esize;
    bool *want;     /* columns chosen by st_reader_select */
    bool *want_key; /* the same plus the key columns, for the block a seek lands in */
    bool *defer;    /* of want, those st_reader_defer leaves encoded where it can */
    st_colenc *enc; /* [ncols]: scratch for st_batch_attach */
    unsigned char *encbuf; /* a column left encoded, as the cache keeps it */
    size_t encbuf_cap;
    range_ord *ranges;
    uint32_t nranges;
    uint64_t next; /* next block to consider */
    uint64_t seek_block;
    bool seek_pending;
    unsigned char *seek_key; /* 2 x key_size: the key, then room to gather one */
    unsigned char *scratch; /* a block that spans two I/O buffers */
    size_t scratch_cap;
    st_batch batch;
    st_read_stats stats;
    bool cache;          /* use the process's cache (store/cache.h) */
    st_file_id id;
    st_cache_ent **held; /* [ncols]: the cached columns the batch shows */
    uint32_t *hcol;      /* [ncols]: which those are (nheld of them) */
    uint32_t nheld;
    /* [ncols]: the columns want and want_key need (st_block_needs), so that
     * a cached block of a wide schema costs its wanted columns, not all */
    uint32_t *need, *need_key;
    uint32_t nneed, nneed_key;
    const void **colp;   /* [ncols]: scratch for st_batch_attach and read_cols */
    st_cache_ent *starts_held; /* the cache's tag starts of the batch's block */
    uint64_t *coff;      /* [ncols]: read_cols: where a block's columns lie */
    uint32_t *clen;
    unsigned char *head; /* read_cols: a block's head */
    uint64_t head_block; /* the block whose head it is (UINT64_MAX: none) */
    uint32_t nidx;       /* the schema's indexed fields */
    unsigned char **ibuf; /* [nidx]: st_reader_index's bytes */
    size_t *icap;
    st_cache_ent **iheld; /* [nidx]: or the cache's entries it shows */
    uint64_t streamed;   /* the block after the last one read through the stream */
    /* plan_ahead: the blocks [pfrom, pto) whose reads were asked for, the
     * place of each one's indexes ([AHEAD][nidx], length 0: unknown), and
     * which indexes were asked for in them */
    uint64_t pfrom, pto;
    uint64_t *ploc;
    uint32_t *plen;
    bool *padvised;
    bool *pexpect; /* [nidx]: indexes st_reader_expect_index says the scan reads */
    size_t head_size, key_size; /* of the schema, for close: a borrowed one may be gone */
};

static const unsigned char *entry(const st_reader *r, uint64_t i)
{
    return r->footer + FOOT_FIXED + i * r->esize;
}

static const unsigned char *entry_key(const st_reader *r, uint64_t i, bool last)
{
    return entry(r, i) + ENTRY_FIXED + (last ? r->s->key_size : 0);
}

static void entry_zone(const st_reader *r, uint64_t i, uint32_t c, st_zone *z)
{
    const unsigned char *p = entry(r, i) + ENTRY_FIXED + 2 * (size_t)r->s->key_size + 16 * (size_t)c;
    z->min = st_get64(p);
    z->max = st_get64(p + 8);
}

static int corrupt(st_reader *r, st_err *err, const char *what)
{
    return st_err_set(err, ST_ECORRUPT, "%s: %s", r->path, what);
}

static int check_sum(st_reader *r, const unsigned char *p, size_t n, const char *what, st_err *err)
{
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION /* let the fuzzer past the checksums */
    if (st_get64(p + n - 8) != XXH3_64bits(p, n - 8))
        return st_err_set(err, ST_ECORRUPT, "%s: %s checksum mismatch", r->path, what);
#else
    (void)r, (void)p, (void)n, (void)what, (void)err;
#endif
    return 0;
}

/* Flags, block size, schema and label of a header whose sizes and checksum
 * were checked. */
static int parse_header(st_reader *r, const unsigned char *h, uint64_t size, st_err *err)
{
    uint32_t slen = st_get32(h + 20), llen = st_get32(h + 24);
    uint32_t flags = st_get32(h + 12), bsize = st_get32(h + 16);
    bool projected = flags & ST_FLAG_PROJECTED;
    if (projected && st_get32(h + 8) >= 5)
        flags &= ~ST_FLAG_PROJECTED;
    if (flags)
        return st_err_set(err, ST_EVERSION, "%s: the file uses features this comb does not know "
                          "(flags %08" PRIx32 "); upgrade comb", r->path, flags);
    if (bsize < ST_BLOCK_SIZE_MIN || bsize > ST_BLOCK_SIZE_MAX)
        return corrupt(r, err, "block size in the header is out of range");
    if (r->known && r->known->len == slen && !memcmp(r->known->text, h + HEAD_FIXED, slen)) {
        r->s = (st_schema *)r->known->s;    /* read only, like a parsed one */
        r->borrowed = true;
    } else if (!(r->s = st_schema_parse((const char *)h + HEAD_FIXED, slen, 1, 1, err))) {
        st_err_prefix(err, "%s: schema in the header: ", r->path);
        return -1;
    }
    if (!(r->label = mem_alloc(llen + 1)))
        return st_err_nomem(err, r->path);
    memcpy(r->label, h + HEAD_FIXED + slen, llen);
    r->label[llen] = '\0';
    r->label_len = llen;
    r->info = (st_file_info){.version = st_get32(h + 8), .block_size = bsize, .size = size,
                             .codec = (st_codec)st_get16(h + 28), .level = st_get16(h + 30),
                             .projected = projected};
    return 0;
}

/* Magic, version, sizes and checksum, then the rest (parse_header). Returns
 * the header's size, its bytes in *out. */
static int64_t read_header(st_reader *r, uint64_t size, unsigned char **out, st_err *err)
{
    unsigned char fixed[HEAD_FIXED];
    if (size < HEAD_FIXED + 8 + FOOT_FIXED + 8 + TRAILER)
        return st_err_set(err, ST_ECORRUPT, "%s: not a tagset file (only %" PRIu64 " bytes)", r->path, size);
    if (st_nbuf_pread(r->io, 0, HEAD_FIXED, fixed, err) < 0)
        return -1;
    if (memcmp(fixed, head_magic, 8) != 0)
        return corrupt(r, err, "not a tagset file (bad magic)");
    uint32_t version = st_get32(fixed + 8);
    if (version > ST_FORMAT_VERSION)
        return st_err_set(err, ST_EVERSION, "%s: format version %" PRIu32 " is newer than this comb "
                          "reads (%d); upgrade comb", r->path, version, ST_FORMAT_VERSION);
    if (version == 0)
        return corrupt(r, err, "format version 0 in the header");
    uint32_t slen = st_get32(fixed + 20), llen = st_get32(fixed + 24);
    if (slen > SCHEMA_MAX || llen > ST_LABEL_MAX || HEAD_FIXED + 8 + (uint64_t)slen + llen > size)
        return corrupt(r, err, "header sizes are out of range");
    size_t hsize = HEAD_FIXED + slen + llen + 8;
    unsigned char *h = mem_alloc(hsize);
    if (!h)
        return st_err_nomem(err, r->path);
    int rc = st_nbuf_pread(r->io, 0, hsize, h, err);
    if (rc == 0)
        rc = check_sum(r, h, hsize, "header", err);
    if (rc == 0)
        rc = parse_header(r, h, size, err);
    if (rc < 0) {
        mem_free(h, hsize);
        return -1;
    }
    *out = h;
    return (int64_t)hsize;
}

static int parse_footer(st_reader *r, st_err *err);

/* The trailer, then the footer it points at. */
static int read_footer(st_reader *r, uint64_t size, uint64_t hsize, st_err *err)
{
    unsigned char t[TRAILER];
    if (st_nbuf_pread(r->io, size - TRAILER, TRAILER, t, err) < 0)
        return -1;
    if (memcmp(t + 24, tail_magic, 8) != 0)
        return corrupt(r, err, "no trailer: the file is truncated or was never finished");
    if (check_sum(r, t, 24, "trailer", err) < 0)
        return -1;
    uint64_t off = st_get64(t), n = st_get64(t + 8);
    if (off != size - TRAILER - n || n > size || off < hsize || n < FOOT_FIXED + 8)
        return corrupt(r, err, "the trailer points outside the file");
    if (!(r->footer = mem_alloc(n)))
        return st_err_nomem(err, r->path);
    r->footer_size = n;
    if (st_nbuf_pread(r->io, off, n, r->footer, err) < 0 || check_sum(r, r->footer, n, "footer", err) < 0)
        return -1;
    return parse_footer(r, err);
}

/* The fixed part of a footer whose checksum was checked. */
static int parse_footer(st_reader *r, st_err *err)
{
    const unsigned char *f = r->footer;
    size_t n = r->footer_size;
    r->esize = entry_size(r->s);
    uint64_t nblocks = st_get64(f + 16);
    if (memcmp(f, foot_magic, 4) != 0 || st_get32(f + 4) != r->ncols || st_get32(f + 8) != r->s->key_size ||
        st_get32(f + 12) != 0)
        return corrupt(r, err, "the footer does not match the schema");
    if (nblocks > n / r->esize || FOOT_FIXED + nblocks * r->esize + 8 != n)
        return corrupt(r, err, "the footer's block count does not match its size");
    r->info.nblocks = nblocks;
    r->info.ntagsets = st_get64(f + 24);
    r->info.ntags = st_get64(f + 32);
    r->info.id = st_get64(f + n - 8);
    return 0;
}

/* Blocks tile the file between header and footer; counts and keys agree. */
static int check_index(st_reader *r, uint64_t hsize, st_err *err)
{
    uint64_t at = hsize, ntagsets = 0, ntags = 0;
    for (uint64_t i = 0; i < r->info.nblocks; i++) {
        const unsigned char *e = entry(r, i);
        uint32_t stored = st_get32(e + 8), raw = st_get32(e + 12), nts = st_get32(e + 16);
        if (st_get64(e) != at || stored < ST_BLOCK_HEADER || raw > ST_BLOCK_MAX_RAW || nts == 0)
            return st_err_set(err, ST_ECORRUPT, "%s: block %" PRIu64 ": bad footer entry", r->path, i);
        if (st_schema_key_cmp(r->s, entry_key(r, i, false), entry_key(r, i, true)) > 0 ||
            (i && st_schema_key_cmp(r->s, entry_key(r, i - 1, true), entry_key(r, i, false)) > 0))
            return st_err_set(err, ST_ECORRUPT, "%s: block %" PRIu64 ": keys out of order in the footer",
                              r->path, i);
        at += stored;
        ntagsets += nts;
        ntags += st_get32(e + 20);
    }
    if (at != st_nbuf_size(r->io) - TRAILER - r->footer_size)
        return corrupt(r, err, "the blocks do not end where the footer starts");
    if (ntagsets != r->info.ntagsets || ntags != r->info.ntags)
        return corrupt(r, err, "the footer's totals do not match its blocks");
    return 0;
}

/* The lists of the columns want and want_key need. */
static void list_needs(st_reader *r)
{
    uint32_t nf = r->s->nfields;
    r->nneed = r->nneed_key = 0;
    for (uint32_t c = 0; c < nf; c++) {     /* a field's column: as chosen */
        if (r->want[c])
            r->need[r->nneed++] = c;
        if (r->want_key[c])
            r->need_key[r->nneed_key++] = c;
    }
    if (st_block_needs(r->s, r->want, nf))  /* the tag counts, if any */
        r->need[r->nneed++] = nf;
    if (st_block_needs(r->s, r->want_key, nf))
        r->need_key[r->nneed_key++] = nf;
}

static int reader_arrays(st_reader *r, st_err *err)
{
    r->head_size = st_block_head_size(r->s);
    r->key_size = r->s->key_size;
    r->want = mem_alloc(r->ncols * sizeof *r->want);
    r->want_key = mem_alloc(r->ncols * sizeof *r->want_key);
    r->defer = mem_calloc(r->ncols, sizeof *r->defer);
    r->enc = mem_calloc(r->ncols, sizeof *r->enc);
    r->seek_key = mem_alloc(2 * (size_t)r->s->key_size);
    r->held = mem_calloc(r->ncols, sizeof *r->held);
    r->hcol = mem_alloc(r->ncols * sizeof *r->hcol);
    r->need = mem_alloc(r->ncols * sizeof *r->need);
    r->need_key = mem_alloc(r->ncols * sizeof *r->need_key);
    r->colp = mem_calloc(r->ncols, sizeof *r->colp);
    r->nidx = r->s->nindex;
    r->head_block = UINT64_MAX;
    if (r->nidx && r->info.version < 3)
        return corrupt(r, err, "indexed fields in a file of format version 2 or older");
    if (st_schema_tag_index(r->s) && r->info.version < 4)
        return corrupt(r, err, "an indexed tag field in a file of format version 3 or older");
    if (st_schema_proj(r->s) >= 0 && r->info.version < 5)
        return corrupt(r, err, "a projection in a file of format version 4 or older");
    /* (verify, taking the flag's word, would digest the file's blocks as a
     * projection's own: its tagset columns read at tag rows, past their end) */
    if (r->info.projected && st_schema_proj(r->s) < 0)
        return corrupt(r, err, "the header flags a projection its schema does not declare");
    r->coff = mem_alloc((r->ncols + r->nidx) * sizeof *r->coff);
    r->clen = mem_alloc((r->ncols + r->nidx) * sizeof *r->clen);
    r->ibuf = mem_calloc(r->nidx + 1, sizeof *r->ibuf);
    r->icap = mem_calloc(r->nidx + 1, sizeof *r->icap);
    r->iheld = mem_calloc(r->nidx + 1, sizeof *r->iheld);
    r->head = mem_alloc(st_block_head_size(r->s));
    r->ploc = mem_alloc(AHEAD * (r->nidx + 1) * sizeof *r->ploc);
    r->plen = mem_alloc(AHEAD * (r->nidx + 1) * sizeof *r->plen);
    r->padvised = mem_alloc((r->nidx + 1) * sizeof *r->padvised);
    r->pexpect = mem_calloc(r->nidx + 1, sizeof *r->pexpect);
    if (!r->want || !r->want_key || !r->defer || !r->enc || !r->seek_key || !r->held || !r->hcol ||
        !r->need || !r->need_key || !r->colp || !r->coff || !r->clen || !r->head || !r->ibuf ||
        !r->icap || !r->iheld || !r->ploc || !r->plen || !r->padvised ||
        !r->pexpect)
        return st_err_nomem(err, r->path);
    for (uint32_t c = 0; c < r->ncols; c++)
        r->want[c] = r->want_key[c] = true;
    list_needs(r);
    return 0;
}

/* A file's header and footer from the cache, checked when they were put
 * there: 1 if found, 0 if not, -1 on error. */
static int open_cached(st_reader *r, st_err *err)
{
    st_cache_ent *e = st_cache_get(&r->id, 0, ST_CACHE_META);
    if (!e)
        return 0;
    const unsigned char *p = st_cache_data(e);
    size_t hsize = (size_t)st_get64(p);
    r->footer_size = st_cache_size(e) - 8 - hsize;
    int rc = parse_header(r, p + 8, st_nbuf_size(r->io), err);
    if (rc == 0 && !(r->footer = mem_alloc(r->footer_size)))
        rc = st_err_nomem(err, r->path);
    if (rc == 0) {
        memcpy(r->footer, p + 8 + hsize, r->footer_size);
        r->ncols = st_schema_ncols(r->s);
        rc = parse_footer(r, err);
    }
    st_cache_release(e);
    return rc < 0 ? -1 : 1;
}

/* Header and footer, checked, into the cache: [u64 header size][header][footer]. */
static void cache_meta(st_reader *r, const unsigned char *h, size_t hsize)
{
    size_t n = 8 + hsize + r->footer_size;
    unsigned char *p = mem_alloc(n);
    if (!p)
        return; /* caching is best effort */
    st_put64(p, hsize);
    memcpy(p + 8, h, hsize);
    memcpy(p + 8 + hsize, r->footer, r->footer_size);
    st_cache_put(&r->id, 0, ST_CACHE_META, p, n);
    mem_free(p, n);
}

st_reader *st_reader_open(const char *path, const st_nbuf_opts *io, st_err *err)
{
    return st_reader_open_known(path, io, NULL, err);
}

st_reader *st_reader_open_known(const char *path, const st_nbuf_opts *io,
                                const st_known_schema *known, st_err *err)
{
    st_reader *r = mem_calloc(1, sizeof *r);
    unsigned char *h = NULL;
    int64_t hsize = 0;
    if (!r || !(r->path = mem_strdup(path))) {
        mem_free(r, sizeof *r);
        st_err_nomem(err, path);
        return NULL;
    }
    st_batch_init(&r->batch);
    r->streamed = UINT64_MAX;
    r->known = known;
    if (!(r->io = st_nbuf_open(path, io, err)))
        goto fail;
    r->cache = io && io->cache;
    st_nbuf_id(r->io, &r->id);
    int hit = r->cache ? open_cached(r, err) : 0;
    if (hit < 0)
        goto fail;
    if (!hit) {
        uint64_t size = st_nbuf_size(r->io);
        /* the footer's end too, while the header is read: one wait, not two */
        st_nbuf_willneed(r->io, size - (size < TAIL_AHEAD ? size : TAIL_AHEAD), TAIL_AHEAD);
        if ((hsize = read_header(r, size, &h, err)) < 0)
            goto fail;
        r->ncols = st_schema_ncols(r->s);
        if (read_footer(r, size, (uint64_t)hsize, err) < 0 || check_index(r, (uint64_t)hsize, err) < 0)
            goto fail;
        if (r->cache)
            cache_meta(r, h, (size_t)hsize);
    }
    if (reader_arrays(r, err) < 0)
        goto fail;
    mem_free(h, (size_t)hsize);
    return r;
fail:
    mem_free(h, (size_t)hsize);
    st_reader_close(r);
    return NULL;
}

const st_schema *st_reader_schema(const st_reader *r) { return r->s; }
const char *st_reader_label(const st_reader *r) { return r->label; }
void st_reader_info(const st_reader *r, st_file_info *out) { *out = r->info; }
void st_reader_stats(const st_reader *r, st_read_stats *out) { *out = r->stats; }

static int check_col(st_reader *r, uint32_t c, st_err *err)
{
    if (c >= r->ncols)
        return st_err_set(err, ST_EINPUT, "%s: no column %" PRIu32 " (the schema has %" PRIu32 ")",
                          r->path, c, r->ncols);
    return 0;
}

int st_reader_zone(st_reader *r, uint32_t c, st_zone *out, st_err *err)
{
    if (check_col(r, c, err) < 0)
        return -1;
    *out = index_zone(r->s, r->footer + FOOT_FIXED, r->esize, r->info.nblocks, c);
    return 0;
}

int st_reader_select(st_reader *r, const uint32_t *cols, uint32_t n, st_err *err)
{
    for (uint32_t i = 0; i < n; i++)
        if (check_col(r, cols[i], err) < 0)
            return -1;
    for (uint32_t c = 0; c < r->ncols; c++) {
        r->want[c] = false;
        r->want_key[c] = c < r->s->nkeys;
    }
    for (uint32_t i = 0; i < n; i++)
        r->want[cols[i]] = r->want_key[cols[i]] = true;
    list_needs(r);
    memset(r->pexpect, 0, (r->nidx + 1) * sizeof *r->pexpect);
    return 0;
}

void st_reader_expect_index(st_reader *r, uint32_t f)
{
    int j = f < r->s->nfields ? st_schema_index_of(r->s, f) : -1;
    if (j >= 0)
        r->pexpect[j] = true;
}

int st_reader_defer(st_reader *r, const uint32_t *cols, uint32_t n, st_err *err)
{
    for (uint32_t i = 0; i < n; i++)
        if (check_col(r, cols[i], err) < 0)
            return -1;
    memset(r->defer, 0, r->ncols * sizeof *r->defer);
    for (uint32_t i = 0; i < n; i++)
        r->defer[cols[i]] = cols[i] < r->s->nrow;
    return 0;
}

int st_reader_where(st_reader *r, const st_range *ranges, uint32_t n, st_err *err)
{
    for (uint32_t i = 0; i < n; i++)
        if (check_col(r, ranges[i].col, err) < 0)
            return -1;
    range_ord *q = n ? mem_alloc(n * sizeof *q) : NULL;
    if (n && !q)
        return st_err_nomem(err, r->path);
    for (uint32_t i = 0; i < n; i++) {
        const st_field *f = st_schema_col(r->s, ranges[i].col);
        q[i] = (range_ord){.col = ranges[i].col, .has_lo = ranges[i].lo != NULL,
                           .has_hi = ranges[i].hi != NULL};
        if (q[i].has_lo)
            q[i].lo = st_field_order(f, ranges[i].lo);
        if (q[i].has_hi)
            q[i].hi = st_field_order(f, ranges[i].hi);
    }
    mem_free(r->ranges, r->nranges * sizeof *r->ranges);
    r->ranges = q;
    r->nranges = n;
    return 0;
}

void st_reader_seek(st_reader *r, const void *key)
{
    r->seek_pending = false;
    r->next = 0;
    if (!key)
        return;
    /* The first block whose last key is >= key holds the first such tagset. */
    uint64_t lo = 0, hi = r->info.nblocks;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (st_schema_key_cmp(r->s, entry_key(r, mid, true), key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    r->next = r->seek_block = lo;
    r->seek_pending = true;
    memcpy(r->seek_key, key, r->s->key_size);
}

/* True if a range rules out every value of block i. */
static bool excluded(const st_reader *r, uint64_t i)
{
    for (uint32_t k = 0; k < r->nranges; k++) {
        const range_ord *q = &r->ranges[k];
        st_zone z;
        entry_zone(r, i, q->col, &z);
        if (z.min > z.max || (q->has_lo && z.max < q->lo) || (q->has_hi && z.min > q->hi))
            return true;
    }
    return false;
}

uint64_t st_reader_blocks_kept(const st_reader *r)
{
    uint64_t n = 0;
    for (uint64_t i = r->next; i < r->info.nblocks; i++)
        n += !excluded(r, i);
    return n;
}

uint64_t st_reader_blocks_cached(const st_reader *r)
{
    uint64_t n = 0;
    for (uint64_t i = r->next; i < r->info.nblocks; i++) {
        bool all = !excluded(r, i);
        for (uint32_t c = 0; all && c < r->ncols; c++)
            all = !st_block_needs(r->s, r->want, c) || st_cache_has(&r->id, i, c) ||
                  (r->defer[c] && st_cache_has(&r->id, i, ST_CACHE_ENCODED | c));
        n += all;
    }
    return n;
}

/* The first tagset of the batch whose key is >= the seek key. */
static uint32_t lower_bound(st_reader *r)
{
    unsigned char *key = r->seek_key + r->s->key_size;
    uint32_t lo = 0, hi = r->batch.ntagsets;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        st_batch_key(r->s, &r->batch, mid, key);
        if (st_schema_key_cmp(r->s, key, r->seek_key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int grow_scratch(st_reader *r, size_t n, st_err *err)
{
    if (n <= r->scratch_cap)
        return 0;
    unsigned char *q = mem_realloc(r->scratch, r->scratch_cap, n);
    if (!q)
        return st_err_nomem(err, r->path);
    r->scratch = q;
    r->scratch_cap = n;
    return 0;
}

/* Whether to read only the columns want needs of block i: a file whose
 * columns carry their own checksums (version 2), and they hold less than
 * half of the block's values. */
static bool sparse(const st_reader *r, uint64_t i, const bool *want)
{
    if (r->info.version < 2)
        return false;
    const unsigned char *e = entry(r, i);
    uint64_t need = 0;
    for (uint32_t c = 0; c < r->ncols; c++)
        if (st_block_needs(r->s, want, c))
            need += (uint64_t)st_get32(e + (st_schema_col_is_tag(r->s, c) ? 20 : 16)) *
                    st_schema_col(r->s, c)->width;
    return 2 * need < st_get32(e + 12);
}

#define RUN_GAP 4096 /* columns closer than this are read with one pread */

/* Reads and locates block i's head (r->coff, r->clen): 0, 1 on an I/O
 * error (its message names the file), -1 on a bad head. */
static int read_head(st_reader *r, uint64_t i, st_err *err)
{
    const unsigned char *e = entry(r, i);
    uint32_t stored = st_get32(e + 8);
    size_t hn = st_block_head_size(r->s);
    if (hn > stored)
        return st_err_set(err, ST_ECORRUPT, "block of %" PRIu32 " bytes cannot hold its column directory",
                          stored);
    r->head_block = UINT64_MAX;
    if (st_nbuf_pread(r->io, st_get64(e), hn, r->head, err) < 0)
        return 1;
    if (st_block_locate(r->s, r->info.version, r->head, stored, r->coff, r->clen, err) < 0)
        return -1;
    r->head_block = i;
    return 0;
}

int st_reader_block_sizes(st_reader *r, uint64_t i, uint32_t f, uint32_t *col, uint32_t *idx,
                          st_err *err)
{
    int j = st_schema_index_of(r->s, f);
    int rc = i >= r->info.nblocks || f >= r->s->nfields ? st_err_set(err, ST_EINPUT, "%s: no block %" PRIu64, r->path, i)
           : r->head_block == i ? 0 : read_head(r, i, err);
    if (rc > 0)
        st_err_suffix(err, " (block %" PRIu64 ")", i);
    else if (rc < 0)
        st_err_prefix(err, "%s: block %" PRIu64 ": ", r->path, i);
    if (rc != 0)
        return -1;
    *col = r->clen[f];
    *idx = j < 0 ? 0 : r->clen[r->ncols + j];
    return 0;
}

static void advise_index(st_reader *r, uint64_t i, uint32_t j);

static int read_index(st_reader *r, uint32_t f, bool full, const unsigned char **idx, size_t *len,
                      st_err *err)
{
    int j = st_schema_index_of(r->s, f);
    uint64_t i = r->batch.block;
    if (j < 0)
        return st_err_set(err, ST_EINPUT, "%s: field '%s' has no index", r->path,
                          f < r->s->nfields ? r->s->fields[f].name : "?");
    uint32_t c = r->ncols + (uint32_t)j;
    st_cache_release(r->iheld[j]);
    r->iheld[j] = r->cache && !full ? st_cache_get(&r->id, i, c) : NULL;
    if (r->iheld[j]) {     /* checked when it was put there */
        *idx = st_cache_data(r->iheld[j]);
        *len = st_cache_size(r->iheld[j]);
        return 0;
    }
    int rc = r->head_block == i ? 0 : read_head(r, i, err);
    uint32_t n = rc == 0 ? r->clen[c] : 0;
    if (rc == 0 && n > r->icap[j]) {
        unsigned char *q = mem_realloc(r->ibuf[j], r->icap[j], n);
        if (!q)
            return st_err_nomem(err, r->path);
        r->ibuf[j] = q;
        r->icap[j] = n;
    }
    if (rc == 0)
        advise_index(r, i, (uint32_t)j);
    if (rc == 0 && st_nbuf_pread(r->io, st_get64(entry(r, i)) + r->coff[c], n, r->ibuf[j], err) < 0)
        rc = 1;
    if (rc == 0)
        rc = st_block_check_index(r->s, r->head, (uint32_t)j, r->ibuf[j], r->batch.ntagsets,
                                  r->batch.ntags, full, err);
    if (rc > 0) {   /* the I/O layer's message names the file */
        st_err_suffix(err, " (block %" PRIu64 ")", i);
        return -1;
    }
    if (rc < 0) {
        st_err_prefix(err, "%s: block %" PRIu64 ": ", r->path, i);
        return -1;
    }
    r->stats.bytes_read += n;
    if (r->cache)
        st_cache_put(&r->id, i, c, r->ibuf[j], n);
    *idx = r->ibuf[j];
    *len = n;
    return 0;
}

const char *st_reader_path(const st_reader *r)
{
    return r->path;
}

int st_reader_index(st_reader *r, uint32_t f, const unsigned char **idx, size_t *len, st_err *err)
{
    return read_index(r, f, false, idx, len, err);
}

int st_reader_index_full(st_reader *r, uint32_t f, const unsigned char **idx, size_t *len,
                         st_err *err)
{
    return read_index(r, f, true, idx, len, err);
}

/* The last column of the run of wanted columns that starts at column c
 * (one located by read_head). */
static uint32_t run_last(const st_reader *r, const bool *want, uint32_t c)
{
    uint32_t last = c;
    for (uint32_t k = c + 1; k < r->ncols && r->coff[k] - r->coff[last] - r->clen[last] <= RUN_GAP; k++)
        if (st_block_needs(r->s, want, k))
            last = k;
    return last;
}

/* Cold scans: a block costs three waits on the device (its head, its
 * columns, an index), one after another. So before reading a block of a
 * scan, ask the kernel (st_nbuf_willneed) for the heads of the next AHEAD
 * kept blocks at once, then, reading those heads, for their wanted columns
 * and the indexes the scan said it reads (st_reader_expect_index); the
 * first read of another index in the window asks for it in the window's
 * later blocks. Advice only: the reads themselves,
 * their checks and their errors are as before, and a bad head here is
 * left for the real read to report. */
static void plan_ahead(st_reader *r, uint64_t i)
{
    if (i >= r->pfrom && i < r->pto)
        return;
    size_t hn = st_block_head_size(r->s);
    uint64_t to = i, bytes = 0, tail = i;
    for (; to < r->info.nblocks && to - i < AHEAD; to++)
        if (!excluded(r, to) && sparse(r, to, r->want))
            tail = to;
    r->pfrom = i;
    r->pto = to;
    memset(r->plen, 0, AHEAD * (r->nidx + 1) * sizeof *r->plen);
    /* the window's last head in memory: so is the rest, most likely (a
     * file read before); the advice would cost its calls for nothing */
    bool warm = st_nbuf_resident(r->io, st_get64(entry(r, tail)));
    memset(r->padvised, warm, (r->nidx + 1) * sizeof *r->padvised);
    if (warm)
        return;
    memcpy(r->padvised, r->pexpect, (r->nidx + 1) * sizeof *r->padvised);
    for (uint64_t k = i; k < to; k++)
        if (!excluded(r, k) && sparse(r, k, r->want))
            st_nbuf_willneed(r->io, st_get64(entry(r, k)), hn);
    for (uint64_t k = i; k < to && bytes < AHEAD_BYTES; k++) {
        st_err e;
        if (excluded(r, k) || !sparse(r, k, r->want) || read_head(r, k, &e) != 0)
            continue;
        uint64_t off = st_get64(entry(r, k));
        for (uint32_t c = 0; c < r->ncols; c++)
            if (st_block_needs(r->s, r->want, c)) {
                uint32_t last = run_last(r, r->want, c);
                uint64_t n = r->coff[last] + r->clen[last] - r->coff[c];
                st_nbuf_willneed(r->io, off + r->coff[c], n);
                bytes += n;
                c = last;
            }
        for (uint32_t j = 0; j < r->nidx; j++) {
            r->ploc[(k - i) * r->nidx + j] = off + r->coff[r->ncols + j];
            r->plen[(k - i) * r->nidx + j] = r->clen[r->ncols + j];
            if (r->pexpect[j])
                st_nbuf_willneed(r->io, off + r->coff[r->ncols + j], r->clen[r->ncols + j]);
        }
    }
}

/* Index j is read from block i: ask for it in the window's later blocks. */
static void advise_index(st_reader *r, uint64_t i, uint32_t j)
{
    if (i < r->pfrom || i >= r->pto || r->padvised[j])
        return;
    r->padvised[j] = true;
    for (uint64_t k = i + 1; k < r->pto; k++)
        st_nbuf_willneed(r->io, r->ploc[(k - r->pfrom) * r->nidx + j],
                         r->plen[(k - r->pfrom) * r->nidx + j]);
}

/* Block i's head, then the runs of columns want needs, each with one
 * positioned read, and decodes them. *nbytes: the bytes read. */
static int read_cols(st_reader *r, uint64_t i, const bool *want, const bool *defer, uint64_t *nbytes,
                     st_err *err)
{
    const unsigned char *e = entry(r, i);
    uint64_t off = st_get64(e);
    uint32_t stored = st_get32(e + 8);
    size_t hn = st_block_head_size(r->s), total = 0;
    int rc = read_head(r, i, err);
    if (rc != 0)
        return rc;
    /* Two passes over the runs: their total size, then the reads. */
    for (int pass = 0; pass < 2; pass++) {
        size_t at = 0;
        for (uint32_t c = 0; c < r->ncols; c++) {
            r->colp[c] = NULL;
            if (!st_block_needs(r->s, want, c))
                continue;
            uint32_t last = run_last(r, want, c);
            uint64_t lo = r->coff[c], hi = r->coff[last] + r->clen[last];
            if (pass == 1 && st_nbuf_pread(r->io, off + lo, (size_t)(hi - lo), r->scratch + at, err) < 0)
                return 1;
            for (uint32_t k = c; pass == 1 && k <= last; k++)
                r->colp[k] = r->scratch + at + (r->coff[k] - lo);
            at += (size_t)(hi - lo);
            c = last;
        }
        total = at;
        if (pass == 0 && grow_scratch(r, total, err) < 0)
            return -1;
    }
    *nbytes = hn + total;
    return st_block_decode_cols(r->s, r->info.version, r->head, stored, r->colp, want, defer,
                                &r->batch, err);
}

int st_reader_bytes_kept(st_reader *r, uint64_t *bytes, st_err *err)
{
    *bytes = 0;
    for (uint64_t i = r->next; i < r->info.nblocks; i++) {
        if (excluded(r, i))
            continue;
        if (!sparse(r, i, r->want)) {
            *bytes += st_get32(entry(r, i) + 8);
            continue;
        }
        int rc = read_head(r, i, err);
        if (rc < 0)
            st_err_prefix(err, "%s: block %" PRIu64 ": ", r->path, i);
        if (rc != 0)
            return -1;
        *bytes += st_block_head_size(r->s);
        for (uint32_t c = 0; c < r->ncols; c++)
            if (st_block_needs(r->s, r->want, c)) {
                uint32_t last = run_last(r, r->want, c);
                *bytes += r->coff[last] + r->clen[last] - r->coff[c];
                c = last;
            }
    }
    return 0;
}

/* Reads and decodes block i into the batch: only the columns want needs
 * (read_cols) where that reads much less, else the whole block. A block
 * read on its own (positioned: a seek, or an isolated block) takes one
 * positioned read of its bytes: a point lookup then costs one block, not a
 * stream restart with its read-ahead. */
static int read_block(st_reader *r, uint64_t i, const bool *want, const bool *defer, bool positioned,
                      st_err *err)
{
    const unsigned char *e = entry(r, i);
    uint32_t stored = st_get32(e + 8);
    uint64_t nbytes = stored;
    int rc;
    if (sparse(r, i, want)) {
        if (!positioned) /* a scan's, not a lookup's */
            plan_ahead(r, i);
        rc = read_cols(r, i, want, defer, &nbytes, err);
    } else {
        if (grow_scratch(r, stored, err) < 0)
            return -1;
        const void *p = positioned ? (st_nbuf_pread(r->io, st_get64(e), stored, r->scratch, err) < 0
                                          ? NULL : r->scratch)
                                   : st_nbuf_get(r->io, st_get64(e), stored, r->scratch, err);
        rc = p ? st_block_decode(r->s, r->info.version, p, stored, want, defer, &r->batch, err) : 1;
    }
    if (rc > 0) { /* the I/O layer's message names the file */
        st_err_suffix(err, " (block %" PRIu64 ")", i);
        return -1;
    }
    if (rc == 0 && (r->batch.ntagsets != st_get32(e + 16) || r->batch.ntags != st_get32(e + 20)))
        rc = st_err_set(err, ST_ECORRUPT, "the block's counts differ from its footer entry");
    if (rc < 0) {
        st_err_prefix(err, "%s: block %" PRIu64 ": ", r->path, i);
        return -1;
    }
    r->batch.block = i;
    r->stats.blocks_read++;
    r->stats.bytes_read += nbytes;
    return 0;
}

static void release_held(st_reader *r)
{
    st_cache_release(r->starts_held);
    r->starts_held = NULL;
    for (uint32_t j = 0; j < r->nheld; j++) {
        st_cache_release(r->held[r->hcol[j]]);
        r->held[r->hcol[j]] = NULL;
    }
    r->nheld = 0;
    for (uint32_t j = 0; r->iheld && j < r->nidx; j++) {
        st_cache_release(r->iheld[j]);
        r->iheld[j] = NULL;
    }
}

/* Block i's wanted columns (of want_key when seeking, else of want) from
 * the cache: 1 if all were there (the batch shows them), 0 if not, -1 on
 * error. */
static int cached_block(st_reader *r, uint64_t i, bool seeking, st_err *err)
{
    const st_schema *s = r->s;
    const uint32_t *need = seeking ? r->need_key : r->need;
    uint32_t n = seeking ? r->nneed_key : r->nneed;
    memset(r->colp, 0, r->ncols * sizeof *r->colp);
    memset(r->enc, 0, r->ncols * sizeof *r->enc);
    for (uint32_t j = 0; j < n; j++) {
        uint32_t c = need[j];
        bool enc = !seeking && r->defer[c] &&
                   (r->held[c] = st_cache_get(&r->id, i, ST_CACHE_ENCODED | c));
        if (!enc && !(r->held[c] = st_cache_get(&r->id, i, c))) {
            release_held(r);
            return 0;
        }
        r->hcol[r->nheld++] = c;
        const unsigned char *d = st_cache_data(r->held[c]);
        if (enc)    /* [u32 codec][u32 0][its bytes]: cache_block */
            r->enc[c] = (st_colenc){st_get32(d), (uint32_t)(st_cache_size(r->held[c]) - 8), d + 8};
        else
            r->colp[c] = d;
    }
    /* the tag starts made when the counts were put there (else made anew) */
    st_cache_release(r->starts_held);
    r->starts_held = s->nfields < r->ncols && r->colp[s->nfields]
                         ? st_cache_get(&r->id, i, ST_CACHE_STARTS) : NULL;
    const unsigned char *e = entry(r, i);
    if (st_batch_attach(s, &r->batch, st_get32(e + 16), st_get32(e + 20), r->colp, r->enc,
                        r->starts_held ? st_cache_data(r->starts_held) : NULL, err) < 0) {
        st_err_prefix(err, "%s: block %" PRIu64 ": ", r->path, i);
        return -1;
    }
    r->batch.block = i;
    r->stats.blocks_cached++;
    return 1;
}

/* The columns of the batch (block i) into the cache: as decoded, or as
 * left encoded (a few rows of them gathered at a time cost their runs or
 * packed bits in the cache, not the whole column decoded). */
static void cache_block(st_reader *r, uint64_t i)
{
    const st_batch *b = &r->batch;
    for (uint32_t c = 0; c < r->ncols; c++)
        if (b->cols[c]) {
            size_t n = st_schema_col_is_tag(r->s, c) ? b->ntags : b->ntagsets;
            st_cache_put(&r->id, i, c, b->cols[c], n * st_schema_col(r->s, c)->width);
        } else if (b->enc[c].codec) {
            size_t n = 8 + (size_t)b->enc[c].len;
            if (n > r->encbuf_cap) {
                unsigned char *q = mem_realloc(r->encbuf, r->encbuf_cap, n);
                if (!q)
                    continue;   /* caching is best effort */
                r->encbuf = q;
                r->encbuf_cap = n;
            }
            st_put32(r->encbuf, b->enc[c].codec);
            st_put32(r->encbuf + 4, 0);
            memcpy(r->encbuf + 8, b->enc[c].p, b->enc[c].len);
            st_cache_put(&r->id, i, ST_CACHE_ENCODED | c, r->encbuf, n);
        }
    if (b->tag_start && r->s->nfields < r->ncols && b->cols[r->s->nfields])
        st_cache_put(&r->id, i, ST_CACHE_STARTS, b->tag_start, ((size_t)b->ntagsets + 1) * 4);
}

/* A block on its own (the stream is elsewhere and the next block will not
 * be read) is read with one positioned read: a point lookup then starts no
 * read-ahead. */
static bool isolated(const st_reader *r, uint64_t i)
{
    return r->streamed != i && (i + 1 >= r->info.nblocks || excluded(r, i + 1));
}

int st_reader_next(st_reader *r, const st_batch **out, st_err *err)
{
    release_held(r);
    while (r->next < r->info.nblocks) {
        uint64_t i = r->next++;
        if (excluded(r, i)) {
            r->stats.blocks_skipped++;
            continue;
        }
        bool seeking = r->seek_pending && i == r->seek_block;
        const bool *want = seeking ? r->want_key : r->want;
        int hit = r->cache ? cached_block(r, i, seeking, err) : 0;
        if (hit < 0)
            return -1;
        if (!hit) {
            bool positioned = seeking || isolated(r, i);
            if (read_block(r, i, want, seeking ? NULL : r->defer, positioned, err) < 0)
                return -1;
            r->streamed = positioned ? UINT64_MAX : i + 1;
            if (r->cache)
                cache_block(r, i);
        }
        if (seeking)
            r->batch.first = lower_bound(r);
        r->seek_pending = false;
        *out = &r->batch;
        return 1;
    }
    return 0;
}

void st_reader_rewind(st_reader *r)
{
    release_held(r);
    st_nbuf_idle(r->io);
    r->next = 0;
    r->seek_pending = false;
    r->streamed = UINT64_MAX;
    r->pfrom = r->pto = 0;
    r->stats = (st_read_stats){0};
    r->known = NULL;
}

void st_reader_set_cache(st_reader *r, bool on) { r->cache = on; }

void st_reader_close(st_reader *r)
{
    if (!r)
        return;
    release_held(r);
    mem_free(r->held, r->ncols * sizeof *r->held);
    mem_free(r->hcol, r->ncols * sizeof *r->hcol);
    mem_free(r->need, r->ncols * sizeof *r->need);
    mem_free(r->need_key, r->ncols * sizeof *r->need_key);
    mem_free(r->colp, r->ncols * sizeof *r->colp);
    mem_free(r->coff, (r->ncols + r->nidx) * sizeof *r->coff);
    mem_free(r->ploc, AHEAD * (r->nidx + 1) * sizeof *r->ploc);
    mem_free(r->plen, AHEAD * (r->nidx + 1) * sizeof *r->plen);
    mem_free(r->padvised, (r->nidx + 1) * sizeof *r->padvised);
    mem_free(r->pexpect, (r->nidx + 1) * sizeof *r->pexpect);
    mem_free(r->clen, (r->ncols + r->nidx) * sizeof *r->clen);
    for (uint32_t j = 0; r->ibuf && r->icap && j < r->nidx; j++)
        mem_free(r->ibuf[j], r->icap[j]);
    mem_free(r->ibuf, (r->nidx + 1) * sizeof *r->ibuf);
    mem_free(r->iheld, (r->nidx + 1) * sizeof *r->iheld);
    mem_free(r->icap, (r->nidx + 1) * sizeof *r->icap);
    mem_free(r->head, r->head_size);
    st_nbuf_close(r->io);
    mem_free(r->want, r->ncols * sizeof *r->want);
    mem_free(r->want_key, r->ncols * sizeof *r->want_key);
    mem_free(r->defer, r->ncols * sizeof *r->defer);
    mem_free(r->enc, r->ncols * sizeof *r->enc);
    mem_free(r->encbuf, r->encbuf_cap);
    mem_free(r->seek_key, 2 * r->key_size);
    if (!r->borrowed)
        st_schema_free(r->s);
    if (r->label)
        mem_free(r->label, r->label_len + 1);
    mem_free(r->footer, r->footer_size);
    mem_free(r->ranges, r->nranges * sizeof *r->ranges);
    mem_free(r->scratch, r->scratch_cap);
    st_batch_free(&r->batch);
    mem_free(r->path, strlen(r->path) + 1);
    mem_free(r, sizeof *r);
}

/* ---- verify ------------------------------------------------------------------ */

/* The batch's bitmap indexes, each checked and equal to the one its
 * column makes (so an index that passes its checksum but says otherwise
 * than the column is found too). */
static int verify_indexes(st_reader *r, st_err *err)
{
    const st_batch *b = &r->batch;
    for (uint32_t c = 0; c < r->s->nfields; c++) {
        const unsigned char *idx;
        unsigned char *want;
        size_t len, wlen;
        if (!r->s->fields[c].index)
            continue;
        if (st_reader_index_full(r, c, &idx, &len, err) < 0) {
            /* the caller names the file and block */
            const char *m = strstr(err->msg, "index of '");
            if (m)
                memmove(err->msg, m, strlen(m) + 1);
            return -1;
        }
        if ((c < r->s->nrow ? st_bidx_build(&r->s->fields[c], b->cols[c], b->ntagsets, &want, &wlen, err)
                            : st_oidx_build(&r->s->fields[c], b->cols[c], b->ntags, &want, &wlen, err)) < 0)
            return -1;
        bool same = wlen == len && !memcmp(want, idx, len);
        mem_free(want, wlen);
        if (!same)
            return st_err_set(err, ST_ECORRUPT, "index of '%s' differs from its column",
                              r->s->fields[c].name);
    }
    return 0;
}

/* Everything the footer says about block i, checked against its decoded batch. */
static int verify_block(st_reader *r, uint64_t i, unsigned char *prev, unsigned char *key, st_err *err)
{
    const st_schema *s = r->s;
    const st_batch *b = &r->batch;
    for (uint32_t t = 0; t < b->ntagsets; t++) {
        st_batch_key(s, b, t, key);
        if ((t || i) && st_schema_key_cmp(s, prev, key) > 0)
            return st_err_set(err, ST_ECORRUPT, "tagset %" PRIu32 " is out of key order", t);
        memcpy(prev, key, s->key_size);
        if (t == 0 && memcmp(key, entry_key(r, i, false), s->key_size) != 0)
            return st_err_set(err, ST_ECORRUPT, "first key differs from the footer's");
    }
    if (memcmp(prev, entry_key(r, i, true), s->key_size) != 0)
        return st_err_set(err, ST_ECORRUPT, "last key differs from the footer's");
    for (uint32_t c = 0; c < r->ncols; c++) {
        const st_field *f = st_schema_col(s, c);
        st_zone z, fz;
        st_block_zone(s, c, b->cols[c], st_schema_col_is_tag(s, c) ? b->ntags : b->ntagsets, &z);
        entry_zone(r, i, c, &fz);
        if (z.min != fz.min || z.max != fz.max)
            return st_err_set(err, ST_ECORRUPT, "column '%s' differs from its zone map", f->name);
        if (z.min <= z.max && ((f->type == ST_BOOL && z.max > 1) || (f->type == ST_ENUM && z.max >= f->nsyms)))
            return st_err_set(err, ST_ECORRUPT, "column '%s' holds values out of range", f->name);
    }
    return verify_indexes(r, err);
}

int64_t st_reader_verify(const char *path, const st_nbuf_opts *io, st_verify_fn bad, void *ctx,
                         st_err *err)
{
    st_nbuf_opts o;
    if (io)
        o = *io;
    else
        st_nbuf_opts_default(&o);
    o.cache = false; /* verify reads what is on disk */
    st_reader *r = st_reader_open(path, &o, err);
    if (!r)
        return -1;
    int64_t nbad = st_reader_verify_open(r, bad, ctx, NULL, err);
    st_reader_close(r);
    return nbad;
}

int64_t st_reader_verify_open(st_reader *r, st_verify_fn bad, void *ctx, uint64_t *rows,
                              st_err *err)
{
    const char *path = r->path;
    int64_t nbad = 0;
    size_t ks = r->s->key_size;
    unsigned char *keys = mem_alloc(2 * ks + 1);
    if (!keys)
        return st_err_nomem(err, path);
    bool proj = r->info.projected;
    uint64_t sum = 0;   /* of the tags, which the projection must hold */
    for (uint64_t i = 0; i < r->info.nblocks; i++) {
        st_err e = {0};
        if (read_block(r, i, r->want, NULL, false, &e) == 0 &&
            verify_block(r, i, keys, keys + ks, &e) < 0)
            st_err_prefix(&e, "%s: block %" PRIu64 ": ", path, i);
        else if (proj && !e.code)
            st_proj_digest(r->s, &r->batch, 0, r->batch.ntags, &sum, &e);
        else if (rows && !e.code)
            st_proj_digest(r->s, &r->batch, 0, r->batch.ntagsets, rows, &e);
        if (e.code == ST_ENOMEM) {
            *err = e;
            nbad = -1;
            break;
        }
        if (e.code) {
            bad(ctx, path, i, e.msg);
            nbad++;
            /* The next block's first key is checked against the footer instead. */
            memcpy(keys, entry_key(r, i, true), ks);
        }
    }
    mem_free(keys, 2 * ks + 1);
    int64_t pbad = proj && nbad >= 0
                       ? st_proj_verify(path, r->s, &r->info, nbad ? NULL : &sum, bad, ctx, err)
                       : 0;
    return pbad < 0 ? -1 : nbad + pbad;
}
