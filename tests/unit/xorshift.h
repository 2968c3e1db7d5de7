/* xorshift: the unit tests' reproducible random numbers (Marsaglia's
 * xorshift64: a seed gives the same sequence on every machine). */
#ifndef COMB_TESTS_XORSHIFT_H
#define COMB_TESTS_XORSHIFT_H

#include <stdint.h>

/* The next number of the sequence in *state (which must not be 0). */
static inline uint64_t xorshift(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

#endif
