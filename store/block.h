/* block: the block format: PAX columns, LZ4 per column, XXH3 checksum, zone maps.
 *
 * A block holds whole tagsets, column by column: one column per key and
 * tagset field (a value per tagset), the tag count column (a u32 per tagset,
 * present when the schema has tag fields) and one column per tag field (a
 * value per tag, tags of consecutive tagsets one after another). Each column
 * is compressed on its own (LZ4, LZ4 HC, or stored; from format version 6
 * also run-length or frame of reference, store/lwcodec.h, where smaller),
 * so a reader decodes only the columns a query uses, and of a column by RLE
 * or FOR only the rows it uses (st_batch_gather). An XXH3-64 checksum covers the block's head
 * (header and column directory) and each column's stored bytes carry their
 * own (format version 2; in version 1 one checksum covered the whole
 * block), so a reader can read and check just the columns it decodes; each
 * is checked before anything in it is trusted. The exact layout is in
 * docs/FORMAT.md.
 *
 * A block is as large as the writer's block size allows (256 KiB by default,
 * uncompressed), but always holds at least one tagset: a tagset larger than
 * the block size gets a block of its own, up to ST_BLOCK_MAX_RAW.
 *
 * Ownership: an encoder belongs to its caller (st_block_enc_free); it keeps a
 * pointer to the schema, which must outlive it; the block bytes and zones it
 * returns stay valid until its next call. A batch belongs to its caller, who
 * zeroes it with st_batch_init, lets st_block_decode fill it (reusing its
 * vectors from block to block) and ends it with st_batch_free. */
#ifndef COMB_STORE_BLOCK_H
#define COMB_STORE_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/err.h"
#include "store/schema.h"

#define ST_BLOCK_DEFAULT (256u << 10) /* uncompressed bytes per block */
#define ST_BLOCK_MAX_RAW (1u << 30)   /* no block (nor tagset) is larger */
#define ST_BLOCK_HEADER 24u           /* checksum, magic, counts */
#define ST_BLOCK_DIRENT 20u           /* per column: codec, raw and stored sizes, checksum */
#define ST_BLOCK_DIRENT_V1 12u        /* the same in format version 1, without the checksum */

typedef enum st_codec {
    ST_CODEC_NONE,  /* stored as is */
    ST_CODEC_LZ4,   /* level = acceleration, 1 (default) and up: faster, larger */
    ST_CODEC_LZ4HC, /* level = 1 .. 12 (default 9): slower, smaller */
} st_codec;

/* A column's range of values in a block, as st_field_order images. A column
 * with no values (a tag column in a block without tags) has min > max. */
typedef struct st_zone {
    uint64_t min, max;
} st_zone;

/* A column left encoded by RLE or FOR (codec ST_LW_RLE or ST_LW_FOR, 0:
 * none), its len stored bytes at p, checked (checksum, structure). */
typedef struct st_colenc {
    unsigned codec;
    uint32_t len;
    const unsigned char *p;
} st_colenc;

/* One decoded block. Value i of column c is at
 * (const char *)cols[c] + i * st_schema_col(s, c)->width, for i below
 * ntagsets (key, tagset and count columns) or ntags (tag columns). The tags
 * of tagset t are tag_start[t] .. tag_start[t + 1] - 1. */
typedef struct st_batch {
    uint32_t ntagsets, ntags;
    uint32_t first;       /* after a seek: the first tagset at or after the key */
    uint64_t block;       /* block number in its file */
    uint32_t ncols;
    void **cols;          /* [ncols]; NULL where the column was not decoded */
    st_colenc *enc;       /* [ncols]: key and tagset columns asked for deferred and
                           * stored by RLE or FOR, left encoded (their cols NULL) */
    const uint32_t *counts;  /* tags per tagset, when tag columns were decoded */
    const uint32_t *tag_start; /* [ntagsets + 1], likewise */
    /* Private: the vectors behind cols, kept from block to block. */
    void **vec;
    size_t *cap;
    uint32_t *starts;
    size_t starts_cap;
} st_batch;

void st_batch_init(st_batch *b);
void st_batch_free(st_batch *b);

typedef struct st_block_enc st_block_enc;

/* Bytes of a light codec (RLE or FOR) for a column of n raw bytes at or
 * under which the writer's rule (docs/STORE.md) takes it whatever LZ4
 * would give, so it does not compress the column by LZ4. */
size_t st_block_light_sure(size_t n);

/* light: columns may be stored by RLE or FOR (format version 6). */
st_block_enc *st_block_enc_new(const st_schema *s, st_codec codec, int level, bool light,
                               st_err *err);
void st_block_enc_free(st_block_enc *e);
/* Whether e may store columns by RLE or FOR: its blocks need format version 6. */
bool st_block_enc_light(const st_block_enc *e);
/* Uncompressed bytes a tagset with ntags tags adds to a block. */
uint64_t st_block_tagset_size(const st_schema *s, uint32_t ntags);
/* Adds a tagset row and its ntags tag rows (ntags * tag_size bytes). The
 * caller keeps blocks within size and checks order and values. */
int st_block_enc_add(st_block_enc *e, const void *row, const void *tags, uint32_t ntags, st_err *err);
/* Adds tagsets [t0, t1) of a batch decoded from a block of the same
 * schema, column by column: as st_block_enc_add of each would. */
int st_block_enc_add_batch(st_block_enc *e, const st_batch *b, uint32_t t0, uint32_t t1,
                           st_err *err);
uint32_t st_block_enc_count(const st_block_enc *e);
uint64_t st_block_enc_raw(const st_block_enc *e);
/* Encodes the tagsets added since the last finish into one block. */
int st_block_enc_finish(st_block_enc *e, const unsigned char **out, size_t *n, const st_zone **zones,
                        st_err *err);

/* Checks a block of a file of format version (1 .. 6) and decodes the
 * columns with want[c] set (want NULL: all); asking for any tag column also
 * decodes the counts. A key or tagset column with defer[c] set (defer may
 * be NULL) stored by RLE or FOR is checked but left encoded (b->enc[c]). Checksums come first: version 2 checks the head's
 * (header and directory) and then each decoded column's, version 1 the
 * whole block's. Errors say what is wrong but not where: the caller adds
 * the file and block number. */
int st_block_decode(const st_schema *s, uint32_t version, const void *p, size_t n, const bool *want,
                    const bool *defer, st_batch *b, st_err *err);
/* Column c's values at rows[0 .. k) (nondecreasing, each below its count)
 * into out (k values): from the decoded column, or gathered from the
 * encoded one without decoding the rest; zeros where it is neither. */
void st_batch_gather(const st_schema *s, const st_batch *b, uint32_t c, const uint32_t *rows,
                     uint32_t k, void *out);
/* Whether decoding want needs column c (want itself, or the counts for tags). */
bool st_block_needs(const st_schema *s, const bool *want, uint32_t c);

/* Reading some columns of a version 2 block without the rest: its head is
 * its first st_block_head_size bytes; st_block_locate checks the head of a
 * block of n bytes and gives where each column's stored bytes lie (offset
 * from the block's start, length); st_block_decode_cols then decodes want
 * from the head and data[c], the stored bytes of each column needed
 * (st_block_needs), NULL for the others. */
size_t st_block_head_size(const st_schema *s);
int st_block_locate(const st_schema *s, uint32_t version, const void *head, size_t n, uint64_t *off,
                    uint32_t *len, st_err *err);
int st_block_decode_cols(const st_schema *s, uint32_t version, const void *head, size_t n,
                         const void *const *data, const bool *want, const bool *defer, st_batch *b,
                         st_err *err);
/* A block of a schema with indexed fields (format version 3; 4 with a tag
 * field's) carries, after its columns, the index of each: a bitmap index
 * of a key or tagset field (store/bindex.h), an order index of a tag field
 * (store/oindex.h): s->nindex more directory entries, codec 0, located by
 * st_block_locate as entries ncols .. ncols + nindex - 1 (off and len need
 * room for all). This checks index j's bytes, read apart, against its
 * checksum in the (checked) head, and its structure against the block's
 * ntagsets rows or ntags tags (every bitmap, every row when full:
 * st_bidx_check, st_oidx_check); errors name the field. */
int st_block_check_index(const st_schema *s, const void *head, uint32_t j, const void *data,
                         uint32_t ntagsets, uint32_t ntags, bool full, st_err *err);
/* Makes b show columns that live elsewhere (the cache): cols[c], NULL for
 * a column not there, and enc[c] (enc NULL: none) of those left encoded,
 * for a block of ntagsets tagsets and ntags tags; the
 * tag starts (ntagsets + 1) are starts, made from those counts before, or
 * when NULL come from the count column when it is there. */
int st_batch_attach(const st_schema *s, st_batch *b, uint32_t ntagsets, uint32_t ntags,
                    const void *const *cols, const st_colenc *enc, const uint32_t *starts,
                    st_err *err);
/* The zone of n values of column c. */
void st_block_zone(const st_schema *s, uint32_t c, const void *vec, uint32_t n, st_zone *z);

#endif
