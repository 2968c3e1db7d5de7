/* lib_search: what the module search's loops share with their tests: the
 * vectorised loops behind search.pair and search.packed, at each level of
 * the processor's vector instructions, so that a test can hold each
 * against the portable loop. */
#ifndef COMB_LIB_SEARCH_H
#define COMB_LIB_SEARCH_H

#include <stddef.h>

/* Levels of vector instructions: VEC_SSE is SSE2 for pair, SSSE3 for
 * packed (which runs the portable loop on a processor without it);
 * VEC_AVX512 is AVX-512BW with VBMI for packed, AVX2 for pair. */
enum { VEC_PORTABLE, VEC_SSE, VEC_AVX2, VEC_AVX512, VEC_BEST };

/* The first j in [i, end - d) with p[j] == b1 and p[j + d] == b2, or end if
 * none, by the loop of the given level (VEC_BEST: the best this processor
 * has; a level it lacks runs the best it has below it). */
size_t search_pair_find(const unsigned char *p, size_t i, size_t end, unsigned char b1, size_t d,
                        unsigned char b2, int level);

/* The best level this processor has. */
int search_vec_level(void);

/* The packed filter's tables for k = 1 to 3 bytes: for each byte
 * 0 <= b < k, 16 bytes indexed by the low nibble, then 16 by the high one;
 * each entry the set of buckets (bits 0 to 7) that allow that nibble there. */
#define PACKED_MAX 3

/* The first j in [i, end) (j >= k - 1) at which some bucket allows each of
 * the k bytes p[j - k + 1 .. j], or p[j] is the byte stop (-1: none), or
 * end if none, by the loop of the given level (as search_pair_find). */
size_t search_packed_find(const unsigned char *p, size_t i, size_t end,
                          const unsigned char *masks, int k, int level, int stop);

#endif
