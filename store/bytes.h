/* bytes: little-endian integer encoding for the store's on-disk headers, and
 * the copy of one field value between rows and columns.
 *
 * Headers, footers and block directories are read and written through these,
 * byte by byte, so the format is little-endian on any host. Column data is
 * copied as host values; store/block.c refuses to build on big-endian hosts. */
#ifndef COMB_STORE_BYTES_H
#define COMB_STORE_BYTES_H

#include <stdint.h>
#include <string.h>

static inline void st_put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline void st_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void st_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint16_t st_get16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t st_get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t st_get64(const unsigned char *p)
{
    return (uint64_t)st_get32(p) | (uint64_t)st_get32(p + 4) << 32;
}

/* Copies one field value of w bytes. The usual widths are constant-size
 * copies (a load and a store) rather than a call to memcpy: rows and column
 * blocks are converted a field at a time, some 10 calls a tag. */
static inline void st_copy_value(void *dst, const void *src, uint32_t w)
{
    switch (w) {
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, w);
    }
}

#endif
