/* tagfile: tagset files: header, blocks, footer index, trailer; writer and reader.
 *
 * A tagset file holds tagsets sorted by key (equal keys allowed, in the
 * order written): a header (magic, format version, block size, the schema
 * text, a label), checksummed blocks (store/block.h), a footer indexing the
 * blocks (offset, sizes, counts, first and last key, a zone map per column)
 * and a trailer pointing at the footer, so a truncated file is recognised.
 * The byte layout is in docs/FORMAT.md. All bytes move through store/nbuf.
 *
 * Writer: st_writer_create, then st_writer_append per tagset in key order,
 * then st_writer_commit (or st_writer_abort). Input errors (a key out of
 * order, an enum value out of range, tags for a schema without tag fields)
 * refuse that tagset and leave the writer usable; I/O and memory errors fail
 * the writer, and commit then reports them. Nothing appears under path until
 * commit succeeds; after any failure path holds what it held before.
 *
 * Reader: st_reader_open checks header, trailer and footer; st_reader_next
 * then returns one decoded block (a batch) at a time, in key order, with the
 * columns chosen by st_reader_select, skipping blocks whose zone maps rule
 * out the ranges given to st_reader_where, starting from st_reader_seek's
 * key. Every block's head and every decoded column is checked (checksums,
 * structure) when it is read; of a version 2 file a reader reads only the
 * columns it decodes where they hold less than half of a block. A reader
 * opened with st_nbuf_opts.cache takes header, footer and decoded columns
 * from the process's cache (store/cache.h) when they are there, and puts
 * what it reads into it.
 *
 * Ownership: writers and readers belong to the caller and are freed by
 * commit/abort and close. A writer keeps a pointer to its schema, which must
 * outlive it. A reader owns its schema (st_reader_schema) and its batch: the
 * batch from st_reader_next is valid until the next call on that reader.
 * Objects are not shared between threads; open one reader per thread. */
#ifndef COMB_STORE_TAGFILE_H
#define COMB_STORE_TAGFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "store/block.h"
#include "store/err.h"
#include "store/nbuf.h"
#include "store/schema.h"

#define ST_FORMAT_VERSION 6       /* the newest this comb reads and writes */
#define ST_FORMAT_VERSION_PLAIN 2 /* what it writes for a schema without indexes */
#define ST_FLAG_PROJECTED 1u      /* header flag (version 5): a projection beside the file */
#define ST_BLOCK_SIZE_MIN (4u << 10)
#define ST_BLOCK_SIZE_MAX (256u << 20)
#define ST_LABEL_MAX (64u << 10)

typedef struct st_write_opts {
    uint32_t block_size; /* uncompressed bytes per block, default 256 KiB */
    st_codec codec;      /* default ST_CODEC_LZ4 */
    int level;           /* the codec's level (see st_codec); 0: its default */
    const char *label;   /* stored in the header, e.g. the cycle's label; may be NULL */
    /* The caller checked every value already (st_rec_check, or read from a
     * checksummed store file): the writer checks sizes and key order only. */
    bool checked;
    /* Without the projection the schema may declare (store/proj.h): a
     * file no query reads, such as a store's delete and adds files. */
    bool no_projection;
    /* Columns may be stored by RLE or FOR where smaller (format version 6;
     * store/lwcodec.h); default on, off when COMB_CODEC=lz4 (any other
     * value of it st_writer_create refuses). */
    bool light;
    st_nbuf_opts io;
} st_write_opts;

void st_write_opts_default(st_write_opts *o);

typedef struct st_writer st_writer;

st_writer *st_writer_create(const char *path, const st_schema *s, const st_write_opts *o, st_err *err);
/* Appends a tagset: a tagset row and ntags tag rows (ntags * tag_size
 * bytes; tags may be NULL when ntags is 0). */
int st_writer_append(st_writer *w, const void *row, const void *tags, uint32_t ntags, st_err *err);
/* Gathers tagset t's key (key_size bytes) from the key columns of a batch. */
void st_batch_key(const st_schema *s, const st_batch *b, uint32_t t, unsigned char *key);
/* Appends tagsets [t0, t1) of a batch decoded from a file of the same
 * schema, whole columns at a time, cutting blocks where st_writer_append
 * would. The caller has checked the run's keys (each after the one before)
 * and its values (the writer's st_write_opts.checked must be set); the first
 * key is checked against the last appended. */
int st_writer_append_batch(st_writer *w, const st_batch *b, uint32_t t0, uint32_t t1, st_err *err);
/* Tagsets appended so far. */
uint64_t st_writer_count(const st_writer *w);
int st_writer_commit(st_writer *w, st_err *err);
/* st_writer_commit, giving the zone of column c over the file written (as
 * st_reader_zone reads it: what a store records of a tags file's partition
 * key, store/datastore.h, without opening the file again). */
int st_writer_commit_zone(st_writer *w, uint32_t c, st_zone *z, st_err *err);
void st_writer_abort(st_writer *w);

typedef struct st_file_info {
    uint32_t version, block_size;
    st_codec codec;
    int level;
    uint64_t size, nblocks, ntagsets, ntags;
    uint64_t id; /* the footer's checksum: what a projection (store/proj.h) names the file by */
    bool projected; /* written with its projection beside it (header flag ST_FLAG_PROJECTED) */
} st_file_info;

/* A range predicate for zone-map skipping: values of column col within
 * [lo, hi], each a value in the column's storage format (field width bytes;
 * a u32 for the tag count), NULL for no bound. For a tag column a block is
 * kept if any of its tags may fall in the range. */
typedef struct st_range {
    uint32_t col;
    const void *lo, *hi;
} st_range;

typedef struct st_read_stats {
    uint64_t blocks_read, blocks_skipped, bytes_read;
    uint64_t blocks_cached; /* served from the process's cache (st_nbuf_opts.cache) */
} st_read_stats;

typedef struct st_reader st_reader;

/* The path a reader was opened on (what its errors name). */
const char *st_reader_path(const st_reader *r);

/* Whether path starts with a tagset file's magic (cheap: no checks beyond). */
bool st_file_is_tagset(const char *path);

st_reader *st_reader_open(const char *path, const st_nbuf_opts *io, st_err *err);
/* A schema the caller holds, with its text (st_schema_format's, as writers
 * put it in headers): a file whose header holds that text reads with it
 * rather than parsing its own, which a session opening a store's files
 * query after query would do every time. It must outlive the reader. */
typedef struct st_known_schema {
    const st_schema *s;
    const char *text;
    size_t len;
} st_known_schema;
st_reader *st_reader_open_known(const char *path, const st_nbuf_opts *io,
                                const st_known_schema *known, st_err *err);
const st_schema *st_reader_schema(const st_reader *r);
const char *st_reader_label(const st_reader *r);
void st_reader_info(const st_reader *r, st_file_info *out);
/* Column c's range over the whole file, from the footer's zone maps (min >
 * max when it holds no values): what a store's manifest records of its
 * partition key. */
int st_reader_zone(st_reader *r, uint32_t c, st_zone *out, st_err *err);
/* Decode only these columns (default: all); n = 0 decodes none, which
 * still gives each block's ntagsets and ntags. */
int st_reader_select(st_reader *r, const uint32_t *cols, uint32_t n, st_err *err);
/* Advice: the scan will read field f's index (st_reader_index) in every
 * block it reads, so a cold scan asks the device for it ahead with the
 * blocks' other bytes. Ignored for a field without one; cleared by
 * st_reader_select. Changes no result. */
void st_reader_expect_index(st_reader *r, uint32_t f);
/* The index of field f, declared `index` (a bitmap index, store/bindex.h;
 * of a tag field, an order index, store/oindex.h), of the
 * block of the batch st_reader_next returned last: its bytes, read and
 * checked (checksum, directory), valid until the next call on r; from the
 * process's cache, and put there, when r uses it. 0, or -1 with err naming
 * the file, block and field. */
int st_reader_index(st_reader *r, uint32_t f, const unsigned char **idx, size_t *len, st_err *err);
/* The same, checking every bitmap or row of it (verify): st_bidx_check's
 * or st_oidx_check's full check. */
int st_reader_index_full(st_reader *r, uint32_t f, const unsigned char **idx, size_t *len,
                         st_err *err);
/* The stored bytes of field f's column and of its bitmap index (0: none)
 * in block i, from the block's (checked) head: what a planner weighs
 * before choosing the index or the column. */
int st_reader_block_sizes(st_reader *r, uint64_t i, uint32_t f, uint32_t *col, uint32_t *idx,
                          st_err *err);
/* Of the selected key and tagset columns, leave these encoded in the
 * batch where a block stores them by RLE or FOR (st_batch.enc; read them
 * with st_batch_gather at the rows wanted); n = 0 clears. Not in the block
 * a seek lands in, which decodes its keys. */
int st_reader_defer(st_reader *r, const uint32_t *cols, uint32_t n, st_err *err);
/* Skip blocks where any of these ranges matches no value; n = 0 clears. */
int st_reader_where(st_reader *r, const st_range *ranges, uint32_t n, st_err *err);
/* Continue from the first tagset whose key is >= key (a bare key or a
 * tagset row); NULL goes back to the start. The first batch after a seek
 * has `first` set past the tagsets before the key. */
void st_reader_seek(st_reader *r, const void *key);
/* 1 with *out set to the next block's batch, 0 at the end, -1 on error
 * (the message names the file and block). */
int st_reader_next(st_reader *r, const st_batch **out, st_err *err);
void st_reader_stats(const st_reader *r, st_read_stats *out);
/* Blocks from the current position on that the ranges of st_reader_where
 * do not rule out: what a scan would read (explain), without reading. */
uint64_t st_reader_blocks_kept(const st_reader *r);
/* The bytes a scan of those blocks would read from the file for the
 * selected columns, the cache aside (explain): a block's head and the runs
 * of its columns where st_reader_next reads only those, else all of it.
 * Reads each such block's head (checked); -1 with err set on damage. */
int st_reader_bytes_kept(st_reader *r, uint64_t *bytes, st_err *err);
/* Of those, the blocks whose selected columns are all in the process's
 * cache (store/cache.h): what a reader opened with st_nbuf_opts.cache
 * would take from it rather than read, now. */
uint64_t st_reader_blocks_cached(const st_reader *r);
/* Back to as just opened (the start, no seek, statistics zero, cached
 * columns let go) with its read-ahead thread stopped: a reader kept idle
 * for a later scan of the same unchanged file, which then need not open,
 * check or parse it again. Selection and ranges stay until set anew. */
void st_reader_rewind(st_reader *r);
/* Whether r uses the process's cache from now on (st_nbuf_opts.cache at open). */
void st_reader_set_cache(st_reader *r, bool on);
/* Closes r. A reader whose schema is borrowed (st_reader_open_known) may be
 * closed after that schema is gone. */
void st_reader_close(st_reader *r);

/* Reads every block of a file and checks it against the footer: checksum,
 * structure, counts, keys in order, first/last keys, zone maps, enum and
 * bool values. Calls bad(ctx, path, block, message) for each bad block and
 * returns how many there were, or -1 with err set if the file cannot be
 * read at all (bad header, trailer or footer). */
typedef void (*st_verify_fn)(void *ctx, const char *path, uint64_t block, const char *msg);
int64_t st_reader_verify(const char *path, const st_nbuf_opts *io, st_verify_fn bad, void *ctx,
                         st_err *err);
/* The same of a reader just opened with the cache off, which it leaves
 * open (-1: out of memory); rows (NULL: none) gets every good block's
 * rows' digest added, as st_proj_digest sums a projection's (whose verify
 * thus reads it once). */
int64_t st_reader_verify_open(st_reader *r, st_verify_fn bad, void *ctx, uint64_t *rows,
                              st_err *err);

#endif
