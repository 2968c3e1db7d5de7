/* lwcodec: lightweight column codecs, read at chosen rows without decoding
 * the rest: run-length (RLE) and frame of reference, bit-packed (FOR).
 *
 * A block column (store/block.h) of n values of w bytes may be stored, in
 * format version 6, by one of these instead of LZ4 when that is smaller
 * (the writer's rule is in block.c and docs/STORE.md). LZ4 must inflate a
 * whole column to read any of it; these give value i from the encoded
 * bytes, so a scan that needs a column at a few selected rows gathers just
 * those (st_lw_gather) and never makes the column.
 *
 * RLE, any width: u32 nruns, then nruns u32 run ends (each run's last row
 * + 1, strictly increasing, the last = n), then the nruns values, w bytes
 * each: 4 + nruns * (4 + w) bytes.
 *
 * FOR, widths 1, 2, 4 and 8 (integers, and any other value of those widths
 * as its bytes read as an unsigned little-endian integer): u8 bits (0..56,
 * or 64), 7 zero bytes, u64 ref, then value i's (value - ref) mod 2^64 in
 * bits [i * bits, (i + 1) * bits) of the packed bytes (LSB first), then 8
 * bytes of padding so a value is read with one 8-byte load:
 * 16 + ceil(n * bits / 8) + 8 bytes. The writer takes ref the minimum in
 * the field's own order (signed for signed integers), so a block of
 * negative and positive numbers packs by its range too.
 *
 * Check the structure (st_lw_check) before decoding or gathering: those
 * trust it, and read nothing outside len bytes of a checked column. */
#ifndef COMB_STORE_LWCODEC_H
#define COMB_STORE_LWCODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/err.h"

/* The codec numbers of a block's column directory (store/block.c has 0,
 * stored, and 1, LZ4). */
enum { ST_LW_RLE = 2, ST_LW_FOR = 3 };

/* Bytes RLE (*rle) and FOR (*fr, 0 for a width it does not take) would
 * take for n values of w bytes (n > 0), in one pass; sign: the values are
 * signed integers. */
void st_lw_sizes(const void *col, uint32_t n, uint32_t w, bool sign, size_t *rle, size_t *fr);
/* Encode into out, which has the size above. */
void st_lw_rle_encode(const void *col, uint32_t n, uint32_t w, unsigned char *out);
void st_lw_for_encode(const void *col, uint32_t n, uint32_t w, bool sign, unsigned char *out);

/* Checks len encoded bytes of codec for n values of w bytes: -1 with err
 * saying what is wrong (the caller names the column, file and block). */
int st_lw_check(unsigned codec, const unsigned char *p, size_t len, uint32_t n, uint32_t w,
                st_err *err);
/* All n values into out (n * w bytes), of a checked column. */
void st_lw_decode(unsigned codec, const unsigned char *p, uint32_t n, uint32_t w, void *out);
/* The values at rows[0 .. k) (each below n, in nondecreasing order) into
 * out (k * w bytes), of a checked column. */
void st_lw_gather(unsigned codec, const unsigned char *p, uint32_t n, uint32_t w,
                  const uint32_t *rows, uint32_t k, void *out);

#endif
