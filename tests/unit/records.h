/* records: the 16-byte test records of the sort and merge tests: a
 * big-endian 8-byte key (so memcmp order is numeric order) and an 8-byte
 * big-endian id (the add position or a tag number). */
#ifndef COMB_TESTS_RECORDS_H
#define COMB_TESTS_RECORDS_H

#include <stdint.h>
#include <string.h>

#define RS 16

static inline void put_be(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static inline uint64_t get_be(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static inline void make_rec(unsigned char *rec, uint64_t key, uint64_t id)
{
    put_be(rec, key);
    put_be(rec + 8, id);
}

/* Compares the keys of two records (the st_cmp_fn shape). */
static inline int key_cmp(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    return memcmp(a, b, 8);
}

#endif
