/* proj: a tagset file's projection: its tags in the order of one tag field.
 *
 * A tag field declared `projection` (an integer or a time: a tag's time
 * above all) makes every file of the schema carry, beside it at PATH.proj,
 * a copy of all its tags as a tagset file of their own: one row a tag, the
 * projection field as its key, the other tag fields as tagset fields, rows
 * in the key's order (ties in the file's order). Its blocks' footer entries
 * (first and last key, zone maps) are then a sparse index of the field: a
 * range of it, a few hours of a month, reads the few blocks that hold it,
 * where in the file itself, in key order, every block holds every hour.
 *
 * The projection is written by the file's writer (tagfile.c) at commit,
 * before the file itself (so a file never shows without it), and names its
 * file by its label: "projection of FOOTER-CHECKSUM: N tags" (the file's
 * footer checksum, st_file_info.id). A reader takes it only when the label,
 * the schema and the count agree with the file; verify checks its blocks as
 * a file's and that it holds exactly the file's tags. Byte layout:
 * docs/FORMAT.md, "Projections". */
#ifndef COMB_STORE_PROJ_H
#define COMB_STORE_PROJ_H

#include <stdint.h>

#include "store/err.h"
#include "store/schema.h"
#include "store/tagfile.h"

typedef struct st_proj st_proj;

/* The projection's schema of s (which declares one): key the projection
 * field, tagset fields the other tag fields in order; NULL with err set. */
st_schema *st_proj_schema(const st_schema *s, st_err *err);
/* The projection's column of s's tag field c. */
uint32_t st_proj_col(const st_schema *s, uint32_t c);
/* PATH.proj into buf; -1 with err set when it does not fit. */
int st_proj_path(const char *file, char *buf, size_t size, st_err *err);

/* A projection being collected for a file of schema s (which declares one). */
st_proj *st_proj_new(const st_schema *s, st_err *err);
/* Adds n tag rows (s's tag row layout). */
int st_proj_add(st_proj *p, const void *tags, uint32_t n, st_err *err);
/* Adds tags [a, e) of a batch of s's columns. */
int st_proj_add_batch(st_proj *p, const st_batch *b, uint32_t a, uint32_t e, st_err *err);
/* Sorts what was added and writes it, committed, beside file (id: the
 * file's footer checksum; o: the file's write options). */
int st_proj_write(st_proj *p, const char *file, uint64_t id, const st_write_opts *o, st_err *err);
void st_proj_free(st_proj *p);
/* Removes file's projection (its file was not committed, or is gone). */
void st_proj_remove(const char *file);

/* A reader of the projection of file (schema s, info from its reader), or
 * NULL with err set: missing, or not the file's (label, schema, count). */
st_reader *st_proj_open(const char *file, const st_schema *s, const st_file_info *info,
                        const st_nbuf_opts *io, st_err *err);

/* An order-free digest of tags [a, e) of a batch of s's columns, added to
 * *sum: what verify compares between a file and its projection. 0, or -1
 * with err set (out of memory). */
int st_proj_digest(const st_schema *s, const st_batch *b, uint32_t a, uint32_t e, uint64_t *sum,
                   st_err *err);
/* Verify of file's projection: that it is the file's (st_proj_open), then
 * its blocks as st_reader_verify checks them (bad names the projection's
 * path) and, when sum is given (st_proj_digest over all the file's tags),
 * that it holds its tags (bad with block UINT64_MAX when not), in one
 * reading. The number of bad blocks, or -1 with err set (out of memory). */
int64_t st_proj_verify(const char *file, const st_schema *s, const st_file_info *info,
                       const uint64_t *sum, st_verify_fn bad, void *ctx, st_err *err);

#endif
