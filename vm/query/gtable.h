/* gtable: a hash table of fixed-width keys (a scan's group keys, or a
 * distinct count's (group, value) pairs): the keys in one array in order
 * of insertion, their index in the slots beside 32 bits of their hash, so
 * that a probe rarely reads a key, and keys compared as machine words.
 * A key's slot comes from those same 32 bits (the hash's top half), so
 * that growing the table moves slots without reading a key.
 * Internal to vm/query/; workers use it. */
#ifndef COMB_QUERY_GTABLE_H
#define COMB_QUERY_GTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct GTable {
    uint64_t *slots;        /* 0: empty; else the hash's top 32 bits, then index + 1 */
    size_t mask;
    uint32_t n;             /* keys */
    uint32_t keyw;          /* bytes of a key */
    unsigned char *keys;    /* [kcap * keyw] */
    size_t kcap;
} GTable;

void gt_init(GTable *t, uint32_t keyw);
void gt_free(GTable *t);
/* The hash of an n-byte key. */
uint64_t gt_hash(const unsigned char *k, size_t n);
/* A 64-bit mix (for keys that are one word). */
static inline uint64_t gt_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    return x ^ x >> 33;
}
/* The n <= 8 bytes at p as a little-endian word, by whole loads that may
 * overlap: bytes stored one by one into a word and then loaded whole stall
 * the load (no store forwarding), once per row. */
static inline uint64_t gt_load_small(const unsigned char *p, size_t n)
{
    uint32_t lo, hi;
    if (n >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        return x;
    }
    if (n >= 4) {
        memcpy(&lo, p, 4);
        memcpy(&hi, p + n - 4, 4);
        return lo | (uint64_t)hi << (8 * (n - 4));
    }
    if (n == 0)
        return 0;
    return p[0] | (uint64_t)p[n / 2] << (8 * (n / 2)) | (uint64_t)p[n - 1] << (8 * (n - 1));
}

/* Whether the n-byte keys a and b are equal (short ones as words). */
static inline bool gt_eq(const unsigned char *a, const unsigned char *b, size_t n)
{
    if (n > 16)
        return !memcmp(a, b, n);
    size_t n0 = n < 8 ? n : 8;
    return gt_load_small(a, n0) == gt_load_small(b, n0) &&
           (n <= 8 || gt_load_small(a + 8, n - 8) == gt_load_small(b + 8, n - 8));
}

/* The order of the n-byte keys a and b as memcmp's (short ones as words). */
static inline int gt_cmp(const unsigned char *a, const unsigned char *b, size_t n)
{
    if (n > 16)
        return memcmp(a, b, n);
    for (size_t at = 0; at < n; at += 8) {
        size_t w = n - at < 8 ? n - at : 8;
        uint64_t x = __builtin_bswap64(gt_load_small(a + at, w)),
                 y = __builtin_bswap64(gt_load_small(b + at, w));
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

/* The index of key (h: its gt_hash, which a rehash computes again),
 * inserted after the others if new; -1: out
 * of memory, or more keys than an index holds. */
long gt_find(GTable *t, const unsigned char *key, uint64_t h);
/* Adds key, which the caller knows is not there, after the others without
 * a probe (a merge of groups in key order); the slots are let go and made
 * again by the next gt_find. Its index, or -1: out of memory. */
long gt_append(GTable *t, const unsigned char *key);
/* The slot where a probe of hash h begins. */
static inline size_t gt_home(const GTable *t, uint64_t h)
{
    return (size_t)(h >> 32) & t->mask;
}
/* Asks the cache for the slot where a probe of hash h begins. */
static inline void gt_prefetch(const GTable *t, uint64_t h)
{
    if (t->slots)
        __builtin_prefetch(&t->slots[gt_home(t, h)]);
}
/* The bytes the table holds. */
static inline size_t gt_bytes(const GTable *t)
{
    return (t->slots ? (t->mask + 1) * 8 : 0) + t->kcap * t->keyw;
}
static inline const unsigned char *gt_key(const GTable *t, uint32_t i)
{
    return t->keys + (size_t)i * t->keyw;
}

#endif
