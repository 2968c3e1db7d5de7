/* bindex: a block's bitmap index of one column (CRoaring).
 *
 * A field declared `index` in the schema (a key or tagset field of few
 * values: bool, enum, small ints, short chars) gets, in every block of a
 * file, the rows holding each of its values as a roaring bitmap, so a
 * query can find the rows of `f == v`, `f in [...]` and their &&, ||, !
 * without decoding the column, and count them without decoding any. The
 * bytes (docs/FORMAT.md, "Bitmap indexes"):
 *
 *   u32 k | k x (u64 value, u32 size) | k bitmaps, roaring's portable form
 *
 * values ascending, each a stored value zero-extended to 64 bits. The
 * bitmaps are written by CRoaring (roaring_bitmap_t, which allocates with
 * malloc: the one allocation outside store/mem.c) and read here, in place,
 * into bitsets of a block's rows (st_bidx_or_rows): a query combines and
 * counts them a word at a time, making no roaring_bitmap_t. */
#ifndef COMB_STORE_BINDEX_H
#define COMB_STORE_BINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/err.h"
#include "store/schema.h"

/* The index of n values of field f (the column's bytes) into *out
 * (mem_alloc'd, *len bytes; mem_free(*out, *len)). */
int st_bidx_build(const st_field *f, const void *col, uint32_t n, unsigned char **out, size_t *len,
                  st_err *err);
/* Checks the structure of an index of a block of n rows: sizes, values
 * ascending, and unless only_dir, each bitmap well formed with rows below
 * n and every row in exactly one (what verify asks; a query, which reads
 * an index whose checksum held, checks the directory and each bitmap it
 * deserializes, and never reads rows past the block). */
int st_bidx_check(const unsigned char *idx, size_t len, uint32_t n, bool only_dir, st_err *err);
/* The index's values (ascending), the i-th of them, the size of its rows'
 * bitmap and that bitmap's offset in idx (the directory's sizes added up:
 * a loop over the values adds them itself), and the i of value v (a stored
 * value zero-extended; the count of values when no row holds it). The
 * directory was checked (st_bidx_check, only_dir). */
uint32_t st_bidx_nvalues(const unsigned char *idx);
uint64_t st_bidx_value(const unsigned char *idx, uint32_t i);
uint32_t st_bidx_size(const unsigned char *idx, uint32_t i);
size_t st_bidx_at(const unsigned char *idx, uint32_t i);
uint32_t st_bidx_find(const unsigned char *idx, uint64_t v);
/* ORs the rows of one value's bitmap (its sz bytes at p) into w, a bitset
 * of a block's n rows (a bit a row, (n + 63) / 64 words): read in place, a
 * word at a time, no roaring_bitmap_t made; -1 when the bitmap is
 * malformed or holds a row at or past n (w then partly written). */
int st_bidx_or_rows(const unsigned char *p, size_t sz, uint32_t n, uint64_t *w);
/* The rows set in bitset w from row lo up to (not including) hi. */
uint64_t st_bidx_count(const uint64_t *w, uint32_t lo, uint32_t hi);
/* The stored value of field f at p, zero-extended: an index's key. */
uint64_t st_bidx_key(const st_field *f, const void *p);

#endif
