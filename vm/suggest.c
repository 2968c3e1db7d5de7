/* suggest: "did you mean" for misspelt names, by optimal string alignment
 * distance (Levenshtein plus swaps of neighbours). */
#include "config.h"
#include "vm/suggest.h"

#include <string.h>

#define MAX_WORD 64 /* longer names are not typos worth guessing */

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

/* Three rows of the dynamic programme suffice for the swap rule. */
static size_t distance(const char *a, size_t n, const char *b, size_t m)
{
    size_t rows[3][MAX_WORD + 1];
    size_t *pp = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                pp[j - 2] + 1 < cur[j])
                cur[j] = pp[j - 2] + 1;
        }
        size_t *t = pp;
        pp = prev;
        prev = cur;
        cur = t;
    }
    return prev[m];
}

const char *vm_suggest(const char *word, size_t n, const char *const *cands, size_t ncands)
{
    if (n == 0 || n > MAX_WORD)
        return NULL;
    size_t limit = n <= 4 ? 1 : n / 3 + 1, best = limit + 1;
    const char *hit = NULL;
    for (size_t i = 0; i < ncands; i++) {
        size_t m = strlen(cands[i]);
        if (m > MAX_WORD || (m > n ? m - n : n - m) > limit)
            continue;
        size_t d = distance(word, n, cands[i], m);
        if (d < best) {
            best = d;
            hit = cands[i];
        }
    }
    return hit;
}
