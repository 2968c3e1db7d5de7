/* lib_search: what the module search's loops share with their tests: the
 * vectorised search for a pair of bytes behind search.pair, at each level
 * of the processor's vector instructions, so that a test can hold each
 * against the portable loop. */
#ifndef COMB_LIB_SEARCH_H
#define COMB_LIB_SEARCH_H

#include <stddef.h>

enum { PAIR_PORTABLE, PAIR_SSE2, PAIR_AVX2, PAIR_BEST };

/* The first j in [i, end - d) with p[j] == b1 and p[j + d] == b2, or end if
 * none, by the loop of the given level (PAIR_BEST: the best this processor
 * has; a level it lacks runs the best it has below it). */
size_t search_pair_find(const unsigned char *p, size_t i, size_t end, unsigned char b1, size_t d,
                        unsigned char b2, int level);

/* The best level this processor has. */
int search_pair_level(void);

#endif
