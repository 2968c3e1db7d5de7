/* suggest: "did you mean" for misspelt names (fields, verbs, symbols). */
#ifndef COMB_SUGGEST_H
#define COMB_SUGGEST_H

#include <stddef.h>

/* The candidate closest to word[0 .. n) by edit distance (insertions,
 * deletions, substitutions and swaps of neighbours), if it is close enough
 * to be a likely typo (at most 1 edit for short words, a third of the
 * length for longer ones); else NULL. Of equally close ones, the first.
 * Candidates are NUL-terminated. */
const char *vm_suggest(const char *word, size_t n, const char *const *cands, size_t ncands);

#endif
