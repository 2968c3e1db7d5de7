/* oindex: a block's order index of one tag field.
 *
 * A tag field declared `index` (an integer or a time: a tag's time above
 * all) gets, in every block of a file, the block's tag rows in the order of
 * that field's values, ties by row: a range of the field is then one run of
 * that order, found by two binary searches, so a query keeps the tags in
 * range without testing every tag of the block (the key order puts every
 * hour of a store in every block, so zone maps alone skip nothing). The
 * bytes (docs/FORMAT.md, "Order indexes"):
 *
 *   u32 n | u32 w | n x row (w bytes: 2 when n <= 65536, else 4)
 *   | ceil(n / 64) x u64 fence
 *
 * little-endian; fence k is the value at place 64 k of the order (as
 * st_field_order images it), so a search reads a few fences and a few
 * values of the column, not 2 log n scattered ones. */
#ifndef COMB_STORE_OINDEX_H
#define COMB_STORE_OINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/err.h"
#include "store/schema.h"

/* The order index of n values of field f (the column's bytes) into *out
 * (mem_alloc'd, *len bytes; mem_free(*out, *len)). */
int st_oidx_build(const st_field *f, const void *col, uint32_t n, unsigned char **out, size_t *len,
                  st_err *err);
/* Checks the structure of an index of a block of n tags: its size, and
 * unless only_size each row below n and in it once (what verify asks; a
 * query checks the size, and each row it takes from the index). */
int st_oidx_check(const unsigned char *idx, size_t len, uint32_t n, bool only_size, st_err *err);
/* The run [*from, *to) of the index's order whose values of column col
 * (field f) lie in [lo, hi] (as st_field_order images). */
void st_oidx_range(const st_field *f, const void *col, const unsigned char *idx, uint64_t lo,
                   uint64_t hi, uint32_t *from, uint32_t *to);
/* Row i of the index's order. */
static inline uint32_t st_oidx_row(const unsigned char *idx, uint32_t i)
{
    const unsigned char *p = idx + 8;
    return idx[4] == 2 ? (uint32_t)p[2 * (size_t)i] | (uint32_t)p[2 * (size_t)i + 1] << 8
                       : (uint32_t)p[4 * (size_t)i] | (uint32_t)p[4 * (size_t)i + 1] << 8 |
                             (uint32_t)p[4 * (size_t)i + 2] << 16 | (uint32_t)p[4 * (size_t)i + 3] << 24;
}

#endif
