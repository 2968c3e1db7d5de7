/* record: the tag records that partition updates and loads move, a tagset
 * file read back as a stream of them, and merged records written to one.
 *
 * A record is one tag of a tagset, with its tagset's row in front:
 *
 *     [tagset row: row_size bytes][tag row: tag_size bytes][flag: 1 byte]
 *
 * flag 1: the tag row is a tag. flag 0: the record carries no tag (its tag
 * bytes are zero): the marker for a tagset without tags, which a schema with
 * tag fields cannot otherwise express. Other flag values are refused. A
 * schema without tag fields has neither tag row nor flag: a record is a
 * tagset row, and each record is a tagset of its own.
 *
 * In a stream sorted by key, consecutive records with equal keys make one
 * tagset (as store/merge groups them): its tags are the tag rows of its
 * flag-1 records in stream order, and its tagset fields are those of its
 * LAST record, so an add can carry a tagset's new state (a marker can carry
 * only that). Sorts are stable, so tags keep the order they were added in.
 * docs/FORMAT.md ("Tag records") has the layout.
 *
 * Ownership: a record reader belongs to its caller (st_rec_close); the
 * records it returns are valid until its next call. */
#ifndef COMB_STORE_RECORD_H
#define COMB_STORE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "store/err.h"
#include "store/merge.h"
#include "store/nbuf.h"
#include "store/schema.h"
#include "store/tagfile.h"

/* Bytes in a record of s: row_size + tag_size + 1, or row_size without tag fields. */
size_t st_rec_size(const st_schema *s);
/* Builds a record from a tagset row and a tag row; tag NULL makes the
 * no-tag marker (ignored without tag fields). */
void st_rec_make(const st_schema *s, void *rec, const void *row, const void *tag);
/* The record's tag row, or NULL for a marker or a schema without tag fields. */
const void *st_rec_tag(const st_schema *s, const void *rec);
/* Checks the flag and the bool and enum values of a record. */
int st_rec_check(const st_schema *s, const void *rec, st_err *err);
/* Key order of two records (or tagset rows): an st_cmp_fn whose ctx is the schema. */
int st_rec_cmp(const void *a, const void *b, void *schema);
/* The first key field's order image: an st_prefix_fn for st_sorter (ctx: the schema). */
uint64_t st_rec_prefix(const void *rec, void *schema);

/* Gathers tagset t of a decoded batch into a tagset row, and tag i into a
 * tag row; fields whose columns were not decoded are zero. */
void st_batch_row(const st_schema *s, const st_batch *b, uint32_t t, unsigned char *row);
void st_batch_tag(const st_schema *s, const st_batch *b, uint32_t i, unsigned char *tag);

/* A tagset file's tagsets as records, in file order. The file's schema
 * must equal expect (when not NULL); a tagset with no tags gives a marker. */
typedef struct st_rec_reader st_rec_reader;

st_rec_reader *st_rec_open(const char *path, const st_schema *expect, const st_nbuf_opts *io,
                           st_err *err);
/* The reader as a source for st_merge (named by the file's path). */
st_source st_rec_source(st_rec_reader *r);
void st_rec_close(st_rec_reader *r); /* NULL is allowed */
/* For a caller that moves whole tagsets: when the reader is at a tagset's
 * start, 1 with the batch that holds it and its index (reading the next
 * block when the current one is done), 0 at the end. st_rec_skip moves past
 * n tagsets of that batch; st_rec_count is tagset t's records in the stream. */
int st_rec_at(st_rec_reader *r, const st_batch **b, uint32_t *t, st_err *err);
void st_rec_skip(st_rec_reader *r, uint32_t n);
uint32_t st_rec_count(const st_schema *s, const st_batch *b, uint32_t t);

/* Records into a tagset file: the sink for st_merge's output. A tagset
 * (records sharing a key) is written as its last record's tagset row and
 * the tag rows of its records that carry one; without tag fields each
 * record is a tagset of its own. The caller creates w and commits or
 * aborts it; st_rec_out_free frees only the tag buffer. */
typedef struct st_rec_out {
    const st_schema *s;
    st_writer *w;
    unsigned char *tags; /* one tagset's tag rows, packed */
    size_t cap;
    uint64_t ntagsets, ntags; /* written */
} st_rec_out;

/* An st_sink's put; self is an st_rec_out whose w is open. */
int st_rec_put(void *self, const st_tagset *ts, st_err *err);
void st_rec_out_free(st_rec_out *o);

#endif
