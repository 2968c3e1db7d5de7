/* lib_search: the built-in module search, gre's engine room: the inner
 * loops of the searches in stdlib/gre.comb (search.skip, search.sieve,
 * search.anyat, search.pair, search.packed, search.grams, search.gram),
 * reached by `import "search"`.
 *
 * Boyer-Moore-family searches (Horspool, Commentz-Walter, Wu-Manber) spend
 * most of their time in one loop: read the bytes that end the current
 * window, look up how far the window may move, move it. Interpreted, that
 * loop costs a dozen instructions a step; here it is one call. What the
 * table holds, and what to do where it says 0, stays in the comb program:
 * gre chooses the algorithm, builds the tables and reports the matches.
 *
 * A gram is the q bytes (1 to 7) of a string that end at an index, read as
 * a big-endian int. A table of 2^k entries is indexed by the gram itself when
 * it fits (8q <= k: exact), else by the top k bits of the bytes (read as a
 * little-endian int, one load on most machines) times an odd constant
 * (Fibonacci hashing: a multiply and a shift, no division).
 *
 * A filter is a bit set of 8 * len(filter) bits (bit h is bit h % 8 of byte
 * h / 8), indexed by a gram the same way: where the table says 0, skip stops
 * only if the filter also has the bit of the (usually longer) gram there,
 * else it steps by one. A filter of the grams that end the keywords turns
 * most false stops into one more step in C. Each step waits for the load
 * before it, so a long span runs as two chains at once (from its start and
 * its middle), and where a table could move only a few bytes a step, sieve
 * tests the filter at every index instead: no load waits for another, so
 * the processor overlaps them.
 *
 * grams counts a sample's grams, to choose rare ones.
 *
 * anyat checks a stop's candidates, strings expected at distances before
 * it, in one call: the comparisons run in place, with no copy of the text.
 *
 * pair is the prefilter of a single keyword: where two of its bytes (rare
 * ones, gre picks them) stand at their distance, compared 32 or 16
 * positions at a time with AVX2 or SSE2 (chosen at run time), else by a
 * portable loop around memchr.
 *
 * linestart and newlines find where a matching line starts and count the
 * lines before it, so that printing a line does not walk every line
 * before it in comb.
 *
 * packed is the prefilter of a few dozen keywords (Teddy's): where the
 * bytes ending at j may end one of the fingerprints in one of 8 buckets,
 * 64, 32 or 16 positions at a time by nibble lookups (AVX-512BW, AVX2 or
 * SSSE3), else a portable loop. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "vm/cpu.h"
#include "vm/lib.h"
#include "vm/lib_search.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86_VECTORS 1
#endif

#define MAX_GRAM 7
#define FIB 0x9E3779B97F4A7C15u

/* The gram of q bytes of p ending at p[j] (j >= q - 1). */
static inline uint64_t gram_at(const unsigned char *p, size_t j, int q)
{
    uint64_t g;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (j >= 7) {
        memcpy(&g, p + j - 7, sizeof g);
        return __builtin_bswap64(g) & (((uint64_t)1 << (8 * q)) - 1);
    }
#endif
    g = 0;
    for (const unsigned char *b = p + j + 1 - q; b <= p + j; b++)
        g = g << 8 | *b;
    return g;
}

/* The q bytes of p ending at p[j] as a little-endian int. */
static inline uint64_t gram_le(const unsigned char *p, size_t j, int q)
{
    uint64_t g;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (j >= 7) {
        memcpy(&g, p + j - 7, sizeof g);
        return g >> (64 - 8 * q);
    }
#endif
    g = 0;
    for (const unsigned char *b = p + j; b > p + j - q; b--)
        g = g << 8 | *b;
    return g;
}

/* The index of the q-gram of p ending at p[j] in a table of 2^bits entries. */
static inline uint64_t gram_index(const unsigned char *p, size_t j, int q, int bits)
{
    if (8 * q <= bits)
        return gram_at(p, j, q);
    return (gram_le(p, j, q) * FIB) >> (64 - bits);
}

/* log2 of a power of two n from 2 to 2^56, or -1. */
static int pow2_bits(int64_t n)
{
    if (n < 2 || n > ((int64_t)1 << 56) || (n & (n - 1)))
        return -1;
    return __builtin_ctzll((unsigned long long)n);
}

static int gram_arg(VM *vm, Value *argv, int i)
{
    int64_t q = vm_arg_int(vm, argv, i);
    if (q < 1 || q > MAX_GRAM)
        vm_error(vm, "the gram length must be 1 to %d, got %lld", MAX_GRAM, (long long)q);
    return (int)q;
}

static int size_arg(VM *vm, int64_t size)
{
    int bits = pow2_bits(size);
    if (bits < 0)
        vm_error(vm, "the table size must be a power of two from 2 to 2^56, got %lld",
                 (long long)size);
    return bits;
}

/* A scan of s from i to end over q-byte grams: end within s, and i where
 * the first gram ends or later. */
static void check_span(VM *vm, const VStr *s, int64_t i, int64_t end, int q)
{
    if (end < 0 || (uint64_t)end > s->len)
        vm_error(vm, "end %lld out of range (length %zu)", (long long)end, s->len);
    if (i < q - 1)
        vm_error(vm, "start %lld is before the end of the first %d-byte gram", (long long)i, q);
}

/* Horspool's loop: one byte, 256 entries. */
static size_t skip1(const unsigned char *p, size_t j, size_t end, const unsigned char *t)
{
    while (j < end) {
        unsigned d = t[p[j]];
        if (!d)
            return j;
        j += d;
    }
    return j;
}

static size_t skipq(const unsigned char *p, size_t j, size_t end, int q, const unsigned char *t,
                    int bits)
{
    while (j < end) {
        unsigned d = t[gram_index(p, j, q, bits)];
        if (!d)
            return j;
        j += d;
    }
    return j;
}

typedef struct Filter {
    const unsigned char *bits;
    int q, nbits;
} Filter;

static bool passes(const Filter *f, const unsigned char *p, size_t j)
{
    uint64_t h = gram_index(p, j, f->q, f->nbits);
    return f->bits[h >> 3] >> (h & 7) & 1;
}

/* skipq, stepping on by one where the filter fails. */
static size_t skip_filtered(const unsigned char *p, size_t j, size_t end, int q,
                            const unsigned char *t, int bits, const Filter *f)
{
    while (j < end) {
        j = q == 1 && bits == 8 ? skip1(p, j, end, t) : skipq(p, j, end, q, t, bits);
        if (j >= end || (j >= (size_t)f->q - 1 && passes(f, p, j)))
            return j;
        j++;
    }
    return j;
}

/* How far a chain moves from j: the table's shift, else 1 where a filter
 * fails, else 0 (a stop). */
static inline size_t step(const unsigned char *p, size_t j, int q, const unsigned char *t, int bits,
                          const Filter *f)
{
    size_t d = t[gram_index(p, j, q, bits)];
    if (d || !f)
        return d;
    return j >= (size_t)f->q - 1 && passes(f, p, j) ? 0 : 1;
}

/* A long span as two chains, one from j and one from the middle, a step of
 * each in turn: a step waits for the load before it, so one chain leaves
 * the processor idle, two keep it busy. The first chain ends at a stop
 * (returned) or past the middle. The second's result counts only once the
 * first reaches an index the second visited: from there the two are one
 * chain (a table need not be a safe shift table, so a chain from the
 * middle may step over where the single chain stops). To check, the
 * second chain is walked again from the middle beside the first, the one
 * behind stepping, until they meet; if they never do, the first goes on
 * alone. So the result is always the single chain's. */
static size_t skip_two(const unsigned char *p, size_t j, size_t end, int q,
                       const unsigned char *t, int bits, const Filter *f)
{
    size_t mid = j + (end - j) / 2, b = mid;
    bool held = false;      /* the second chain stopped at b */
    while (j < mid) {
        size_t d = step(p, j, q, t, bits, f);
        if (!d)
            return j;
        j += d;
        if (!held && b < end) {
            size_t e = step(p, b, q, t, bits, f);
            if (e)
                b += e;
            else
                held = true;
        }
    }
    while (!held && b < end) {
        size_t e = step(p, b, q, t, bits, f);
        if (!e)
            break;
        b += e;
    }
    size_t x = mid;     /* the second chain again; before b it is below end and no stop */
    while (x != j && j < end) {
        if (x < j && x >= b)
            break;
        size_t *behind = x < j ? &x : &j, d = step(p, *behind, q, t, bits, f);
        if (!d)
            return j;   /* only the first chain can stop here: x < b moves on */
        *behind += d;
    }
    if (x == j)
        return b;
    while (j < end) {
        size_t d = step(p, j, q, t, bits, f);
        if (!d)
            return j;
        j += d;
    }
    return j;
}

#define TWO_CHAINS 1024     /* spans shorter than this run as one chain */

Value nat_search_skip(VM *vm, int argc, Value *argv)
{
    VStr *s = vm_arg_str(vm, argv, 0);
    int64_t i = vm_arg_int(vm, argv, 1);
    VStr *table = vm_arg_str(vm, argv, 2);
    int q = argc > 3 ? gram_arg(vm, argv, 3) : 1;
    int64_t end = argc > 4 ? vm_arg_int(vm, argv, 4) : (int64_t)s->len;
    int bits = size_arg(vm, (int64_t)table->len);
    Filter f = {NULL, 1, 0};
    if (argc > 5) {
        VStr *fs = vm_arg_str(vm, argv, 5);
        f.bits = (const unsigned char *)fs->data;
        f.q = argc > 6 ? gram_arg(vm, argv, 6) : q;
        f.nbits = size_arg(vm, 8 * (int64_t)fs->len);
    }
    check_span(vm, s, i, end, q);
    if (i >= end)
        return v_nil();
    const unsigned char *p = (const unsigned char *)s->data;
    const unsigned char *t = (const unsigned char *)table->data;
    size_t j;
    if (end - i >= TWO_CHAINS)
        j = skip_two(p, (size_t)i, (size_t)end, q, t, bits, f.bits ? &f : NULL);
    else if (f.bits)
        j = skip_filtered(p, (size_t)i, (size_t)end, q, t, bits, &f);
    else if (q == 1 && bits == 8)
        j = skip1(p, (size_t)i, (size_t)end, t);
    else
        j = skipq(p, (size_t)i, (size_t)end, q, t, bits);
    return j < (size_t)end ? v_int((int64_t)j) : v_nil();
}

Value nat_search_gram(VM *vm, int argc, Value *argv)
{
    VStr *s = vm_arg_str(vm, argv, 0);
    int64_t j = vm_arg_int(vm, argv, 1);
    int q = gram_arg(vm, argv, 2);
    int bits = argc > 3 ? size_arg(vm, vm_arg_int(vm, argv, 3)) : 8 * q;
    if (j < q - 1 || (uint64_t)j >= s->len)
        vm_error(vm, "a %d-byte gram cannot end at %lld (length %zu)", q, (long long)j,
                 s->len);
    return v_int((int64_t)gram_index((const unsigned char *)s->data, (size_t)j, q, bits));
}

#define GRAMS_MAX ((int64_t)1 << 20)

/* grams(s, q, size, want): how many of the q-grams of s have each index of
 * a table of size entries, as an array of size ints: a histogram of a
 * sample of text, for choosing the grams a search should stop at least;
 * with want (an array of indexes), only theirs, in its order (no array of
 * size values for the collector to walk: for a few keywords it cost more
 * than their search). Counted in 32 bits first: a quarter of the memory the
 * array's values take, so that more of it stays in cache. */
Value nat_search_grams(VM *vm, int argc, Value *argv)
{
    VStr *s = vm_arg_str(vm, argv, 0);
    int q = gram_arg(vm, argv, 1);
    int64_t size = vm_arg_int(vm, argv, 2);
    int bits = size_arg(vm, size);
    if (size > GRAMS_MAX)
        vm_error(vm, "the table size must be at most %lld, got %lld", (long long)GRAMS_MAX,
                 (long long)size);
    if (s->len >= UINT32_MAX)
        vm_error(vm, "the string must be shorter than 4 GiB, got %zu bytes", s->len);
    VArray *want = argc > 3 ? vm_arg_array(vm, argv, 3) : NULL;
    for (size_t i = 0; want && i < want->len; i++)
        if (want->items[i].type != VT_INT || want->items[i].as.i < 0 || want->items[i].as.i >= size)
            vm_error(vm, "want[%zu] is not an index of the table (0 to %lld)", i,
                     (long long)size - 1);
    VArray *a = vm_array_new(vm, want ? want->len : (size_t)size);
    uint32_t *c = vm_alloc(vm, (size_t)size * sizeof *c);
    memset(c, 0, (size_t)size * sizeof *c);
    const unsigned char *p = (const unsigned char *)s->data;
    for (size_t j = (size_t)q - 1; j < s->len; j++)
        c[gram_index(p, j, q, bits)]++;
    if (want) {
        for (size_t i = 0; i < want->len; i++)
            a->items[i] = v_int(c[want->items[i].as.i]);
        a->len = want->len;
    } else {
        for (int64_t h = 0; h < size; h++)
            a->items[h] = v_int(c[h]);
        a->len = (size_t)size;
    }
    vm_free_mem(vm, c, (size_t)size * sizeof *c);
    return v_obj(a);
}

/* anyat(s, j, pairs, at, q, lo, hi): a stop's candidates checked in one
 * call. pairs is a flat array of runs, each of pairs d (an int), w (a
 * string) and ended by nil (or the array's end): w is expected in s at
 * j - d. The run starts at index at, or, when at is an array (a directory
 * of a power-of-two size), at its entry for the q-gram of s ending at j (nil:
 * no run). Returns the index k of the first pair whose w occurs where
 * expected and inside s[lo..hi), or nil. */
/* Where the run of pairs a from index k (an int, or nil: none) has its
 * first pair whose string occurs in s where expected, inside s[lo..hi)
 * (lo >= 0, hi <= len(s)); -1 if none. */
static int64_t run_at(VM *vm, const VStr *s, int64_t j, const VArray *a, Value from, int64_t lo,
                      int64_t hi)
{
    if (IS_NIL(from))
        return -1;
    if (from.type != VT_INT)
        vm_error(vm, "a run must start at an index of pairs (an int), got %s", v_type_name(from));
    if (from.as.i < 0)
        vm_error(vm, "a run cannot start at %lld", (long long)from.as.i);
    for (size_t k = (size_t)from.as.i; k < a->len && !IS_NIL(a->items[k]); k += 2) {
        Value d = a->items[k], w = k + 1 < a->len ? a->items[k + 1] : v_nil();
        if (d.type != VT_INT || !IS_STR(w))
            vm_error(vm, "pair %zu is not an int and a string", k);
        int64_t at;
        VStr *ws = AS_STR(w);
        if (!__builtin_sub_overflow(j, d.as.i, &at) && at >= lo && at <= hi &&
            (int64_t)ws->len <= hi - at && memcmp(s->data + at, ws->data, ws->len) == 0)
            return (int64_t)k;
    }
    return -1;
}

/* A directory of runs (an array of power-of-two size) for q-grams. */
typedef struct Directory {
    const VArray *dir;
    int q, bits;
} Directory;

static Directory directory_arg(VM *vm, Value *argv, int i, int qi)
{
    VArray *dir = vm_arg_array(vm, argv, i);
    Directory d = {dir, gram_arg(vm, argv, qi), 0};
    d.bits = size_arg(vm, (int64_t)dir->len);
    return d;
}

/* The run of the directory for the gram of s ending at j (j >= q - 1). */
static inline Value run_of(const Directory *d, const VStr *s, size_t j)
{
    return d->dir->items[gram_index((const unsigned char *)s->data, j, d->q, d->bits)];
}

/* The keywords a filter's stop is checked for in C, as search.anyat(s, j,
 * pairs, dir, q, lo, hi) would: from the arguments first .. first + 3
 * (pairs, dir, q, lo), if given. */
typedef struct Check {
    const VArray *pairs;
    Directory d;
    int64_t lo;
} Check;

static bool check_args(VM *vm, int argc, Value *argv, int first, Check *c)
{
    if (argc <= first)
        return false;
    if (argc < first + 4)
        vm_error(vm, "the keywords are checked with pairs, a directory, q and lo together");
    c->pairs = vm_arg_array(vm, argv, first);
    c->d = directory_arg(vm, argv, first + 1, first + 2);
    c->lo = vm_arg_int(vm, argv, first + 3);
    if (c->lo < 0)
        c->lo = 0;
    return true;
}

/* Whether some keyword of c occurs where a stop at j puts it, below hi. */
static bool checked(VM *vm, const VStr *s, size_t j, const Check *c, int64_t hi)
{
    return j >= (size_t)c->d.q - 1 &&
           run_at(vm, s, (int64_t)j, c->pairs, run_of(&c->d, s, j), c->lo, hi) >= 0;
}

Value nat_search_anyat(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VStr *s = vm_arg_str(vm, argv, 0);
    int64_t j = vm_arg_int(vm, argv, 1);
    VArray *a = vm_arg_array(vm, argv, 2);
    int64_t lo = vm_arg_int(vm, argv, 5);
    int64_t hi = vm_arg_int(vm, argv, 6);
    Value from = argv[3];
    if (IS_ARRAY(from)) {
        Directory d = directory_arg(vm, argv, 3, 4);
        if (j < d.q - 1 || (uint64_t)j >= s->len)
            vm_error(vm, "a %d-byte gram cannot end at %lld (length %zu)", d.q, (long long)j, s->len);
        from = run_of(&d, s, (size_t)j);
    } else if (IS_NIL(from)) {
        vm_error(vm, "a run must start at an index of pairs (an int), got nil");
    }
    if (lo < 0)
        lo = 0;
    if (hi > (int64_t)s->len)
        hi = (int64_t)s->len;
    int64_t k = run_at(vm, s, j, a, from, lo, hi);
    return k < 0 ? v_nil() : v_int(k);
}

/* The bit of a hashed filter (set, of at least 64 bits) for the gram of p
 * ending at j (j >= 7; down and bits as in gram_index), in the low bit of
 * a word: one load of the gram, one of the set. */
static inline uint64_t sieve_bit(const unsigned char *p, size_t j, int down, int bits,
                                 const unsigned char *set)
{
    uint64_t g, w;
    memcpy(&g, p + j - 7, sizeof g);
    uint64_t h = ((g >> down) * FIB) >> bits;
    memcpy(&w, set + (h >> 6) * 8, sizeof w);
    return w >> (h & 63);
}

/* The sieve's loop for a hashed filter (8q > its bits) on a little-endian
 * machine, eight indexes a step with one branch: from j, the first index
 * whose gram passes f, or where the plain loop must go on (near the end of
 * the text, or for a filter indexed exactly or of fewer than 64 bits). */
static size_t sieve_hashed(const unsigned char *p, size_t j, size_t end, const Filter *f)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (8 * f->q <= f->nbits)
        return j;
    for (; j < 7 && j < end; j++)
        if (passes(f, p, j))
            return j;
    const int down = 64 - 8 * f->q, bits = 64 - f->nbits;
    const unsigned char *set = f->bits;
    if (f->nbits < 6)
        return j;
    for (; j + 8 <= end; j += 8) {
        uint64_t w0 = sieve_bit(p, j, down, bits, set), w1 = sieve_bit(p, j + 1, down, bits, set);
        uint64_t w2 = sieve_bit(p, j + 2, down, bits, set), w3 = sieve_bit(p, j + 3, down, bits, set);
        uint64_t w4 = sieve_bit(p, j + 4, down, bits, set), w5 = sieve_bit(p, j + 5, down, bits, set);
        uint64_t w6 = sieve_bit(p, j + 6, down, bits, set), w7 = sieve_bit(p, j + 7, down, bits, set);
        if ((w0 | w1 | w2 | w3 | w4 | w5 | w6 | w7) & 1) {
            unsigned hit = (unsigned)(w0 & 1) | (unsigned)(w1 & 1) << 1 | (unsigned)(w2 & 1) << 2 |
                           (unsigned)(w3 & 1) << 3 | (unsigned)(w4 & 1) << 4 |
                           (unsigned)(w5 & 1) << 5 | (unsigned)(w6 & 1) << 6 | (unsigned)(w7 & 1) << 7;
            return j + (size_t)__builtin_ctz(hit);
        }
    }
#else
    (void)p, (void)end, (void)f;
#endif
    return j;
}

/* sieve(s, i, filter, q, end, pairs, dir, r, lo): the first j >= i (and
 * below end) at which the filter has the bit of the q-gram ending at j
 * (and, with pairs, dir, r and lo, search.anyat(s, j, pairs, dir, r, lo,
 * end) finds a keyword: a stop that finds none stays in C). No shifts: where a
 * shift table would move only a few bytes a step, testing every index is
 * faster, as no lookup waits for the one before it. */
Value nat_search_sieve(VM *vm, int argc, Value *argv)
{
    VStr *s = vm_arg_str(vm, argv, 0);
    int64_t i = vm_arg_int(vm, argv, 1);
    VStr *fs = vm_arg_str(vm, argv, 2);
    int q = gram_arg(vm, argv, 3);
    int64_t end = argc > 4 && !IS_NIL(argv[4]) ? vm_arg_int(vm, argv, 4) : (int64_t)s->len;
    Filter f = {(const unsigned char *)fs->data, q, size_arg(vm, 8 * (int64_t)fs->len)};
    check_span(vm, s, i, end, q);
    Check c;
    bool check = check_args(vm, argc, argv, 5, &c);
    const unsigned char *p = (const unsigned char *)s->data;
    for (size_t j = (size_t)i; j < (size_t)end; j++) {
        for (j = sieve_hashed(p, j, (size_t)end, &f); j < (size_t)end && !passes(&f, p, j); j++)
            ;
        if (j >= (size_t)end)
            break;
        if (!check || checked(vm, s, j, &c, end))
            return v_int((int64_t)j);
    }
    return v_nil();
}

/* ---- pair: two bytes at a distance, vectorised -------------------------- */

static size_t pair_portable(const unsigned char *p, size_t i, size_t end, unsigned char b1,
                            size_t d, unsigned char b2)
{
    while (i + d < end) {
        const unsigned char *at = memchr(p + i, b1, end - d - i);
        if (!at)
            break;
        i = (size_t)(at - p);
        if (p[i + d] == b2)
            return i;
        i++;
    }
    return end;
}

#ifdef HAVE_X86_VECTORS
static size_t pair_sse2(const unsigned char *p, size_t i, size_t end, unsigned char b1, size_t d,
                        unsigned char b2)
{
    const __m128i v1 = _mm_set1_epi8((char)b1), v2 = _mm_set1_epi8((char)b2);
    for (; i + d + 16 <= end; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + i + d));
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_and_si128(_mm_cmpeq_epi8(a, v1), _mm_cmpeq_epi8(b, v2)));
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
    return pair_portable(p, i, end, b1, d, b2);
}

__attribute__((target("avx2")))
static size_t pair_avx2(const unsigned char *p, size_t i, size_t end, unsigned char b1, size_t d,
                        unsigned char b2)
{
    const __m256i v1 = _mm256_set1_epi8((char)b1), v2 = _mm256_set1_epi8((char)b2);
    for (; i + d + 32 <= end; i += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + i + d));
        unsigned m = (unsigned)_mm256_movemask_epi8(
            _mm256_and_si256(_mm256_cmpeq_epi8(a, v1), _mm256_cmpeq_epi8(b, v2)));
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
    return pair_sse2(p, i, end, b1, d, b2);
}
#endif

int search_vec_level(void)
{
#ifdef HAVE_X86_VECTORS
    static int level = -1;
    if (level < 0)
        level = vm_cpu_has(VM_CPU_AVX512BW) && vm_cpu_has(VM_CPU_AVX512VBMI) ? VEC_AVX512
                : vm_cpu_has(VM_CPU_AVX2)                                        ? VEC_AVX2
                                                                                 : VEC_SSE;
    return level;
#else
    return VEC_PORTABLE;
#endif
}

size_t search_pair_find(const unsigned char *p, size_t i, size_t end, unsigned char b1, size_t d,
                        unsigned char b2, int level)
{
    if (level > search_vec_level())
        level = search_vec_level();
#ifdef HAVE_X86_VECTORS
    if (level >= VEC_AVX2)
        return pair_avx2(p, i, end, b1, d, b2);
    if (level == VEC_SSE)
        return pair_sse2(p, i, end, b1, d, b2);
#endif
    return pair_portable(p, i, end, b1, d, b2);
}

/* ---- packed: up to 8 buckets of short fingerprints, vectorised ----------
 *
 * Teddy's idea (Langdale's, in Hyperscan, then ripgrep): a byte's low and
 * high nibbles index two 16-byte tables whose entries are sets of buckets;
 * ANDing them for each of the k bytes ending at j leaves the buckets whose
 * fingerprints may end there. A pshufb looks up 16 (32 with AVX2) nibbles
 * at once, so the filter costs a few instructions for 16 or 32 positions,
 * whatever the number of keywords; the caller checks each position that
 * passes (gre by search.anyat). Each byte of the tables sets which buckets
 * allow one nibble value, so a bucket allows the product of its nibble
 * sets: gre puts similar fingerprints in a bucket to keep that small. */

static size_t packed_portable(const unsigned char *p, size_t j, size_t end,
                              const unsigned char *masks, int k, int stop)
{
    for (; j < end; j++) {
        if (p[j] == stop)
            return j;
        unsigned acc = 0xff;
        for (int b = 0; b < k && acc; b++) {
            unsigned c = p[j - (size_t)k + 1 + (size_t)b];
            acc &= (unsigned)masks[32 * b + (c & 15)] & masks[32 * b + 16 + (c >> 4)];
        }
        if (acc)
            return j;
    }
    return end;
}

#ifdef HAVE_X86_VECTORS
__attribute__((target("ssse3")))
static size_t packed_ssse3(const unsigned char *p, size_t j, size_t end,
                           const unsigned char *masks, int k, int stop)
{
    const __m128i low = _mm_set1_epi8(0x0f), zero = _mm_setzero_si128();
    const __m128i sv = _mm_set1_epi8((char)stop);
    __m128i lo[PACKED_MAX], hi[PACKED_MAX];
    for (int b = 0; b < k; b++) {
        lo[b] = _mm_loadu_si128((const __m128i *)(const void *)(masks + 32 * b));
        hi[b] = _mm_loadu_si128((const __m128i *)(const void *)(masks + 32 * b + 16));
    }
    for (; j + 16 <= end; j += 16) {
        __m128i acc = _mm_set1_epi8(-1);
        for (int b = 0; b < k; b++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + j - k + 1 + b));
            __m128i l = _mm_shuffle_epi8(lo[b], _mm_and_si128(v, low));
            __m128i h = _mm_shuffle_epi8(hi[b], _mm_and_si128(_mm_srli_epi16(v, 4), low));
            acc = _mm_and_si128(acc, _mm_and_si128(l, h));
        }
        unsigned m = ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(acc, zero)) & 0xffffu;
        if (stop >= 0)
            m |= (unsigned)_mm_movemask_epi8(
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + j)), sv));
        if (m)
            return j + (size_t)__builtin_ctz(m);
    }
    return packed_portable(p, j, end, masks, k, stop);
}

__attribute__((target("avx2")))
static size_t packed_avx2(const unsigned char *p, size_t j, size_t end,
                          const unsigned char *masks, int k, int stop)
{
    const __m256i low = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
    const __m256i sv = _mm256_set1_epi8((char)stop);
    __m256i lo[PACKED_MAX], hi[PACKED_MAX];
    for (int b = 0; b < k; b++) {
        lo[b] = _mm256_broadcastsi128_si256(
            _mm_loadu_si128((const __m128i *)(const void *)(masks + 32 * b)));
        hi[b] = _mm256_broadcastsi128_si256(
            _mm_loadu_si128((const __m128i *)(const void *)(masks + 32 * b + 16)));
    }
    for (; j + 32 <= end; j += 32) {
        __m256i acc = _mm256_set1_epi8(-1);
        for (int b = 0; b < k; b++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + j - k + 1 + b));
            __m256i l = _mm256_shuffle_epi8(lo[b], _mm256_and_si256(v, low));
            __m256i h = _mm256_shuffle_epi8(hi[b], _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
            acc = _mm256_and_si256(acc, _mm256_and_si256(l, h));
        }
        unsigned m = ~(unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(acc, zero));
        if (stop >= 0)
            m |= (unsigned)_mm256_movemask_epi8(
                _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(p + j)), sv));
        if (m)
            return j + (size_t)__builtin_ctz(m);
    }
    return packed_ssse3(p, j, end, masks, k, stop);
}

/* 64 positions a step, k a constant in each copy (the tables stay in
 * registers): at 10 keywords the filter's scan is most of gre's time
 * (source code: two thirds). One load a step, as ripgrep's Teddy: each
 * byte's nibbles are looked up once for every b, and the results for
 * b < k - 1 are moved k - 1 - b positions on (vpermt2b, joining the last
 * step's), not the text loaded again at each distance; a third less time
 * in the loop than AVX2's. */
__attribute__((target("avx512bw,avx512vbmi"), always_inline)) static inline size_t
packed_avx512_k(const unsigned char *p, size_t j, size_t end, const unsigned char *masks,
                const int k, int stop)
{
    const __m512i sv = _mm512_set1_epi8((char)stop);
    const __m512i low = _mm512_set1_epi8(0x0f);
    __m512i lo[PACKED_MAX], hi[PACKED_MAX], prev[PACKED_MAX], shift[PACKED_MAX];
#define R8(n) n, n + 1, n + 2, n + 3, n + 4, n + 5, n + 6, n + 7
    static const unsigned char next[64] = {R8(64), R8(72), R8(80), R8(88),
                                           R8(96), R8(104), R8(112), R8(120)};
#undef R8
    const __m512i here = _mm512_loadu_si512((const void *)next);
    for (int b = 0; b < k; b++) {
        lo[b] = _mm512_broadcast_i32x4(
            _mm_loadu_si128((const __m128i *)(const void *)(masks + 32 * b)));
        hi[b] = _mm512_broadcast_i32x4(
            _mm_loadu_si128((const __m128i *)(const void *)(masks + 32 * b + 16)));
        /* position x takes the result s = k - 1 - b before it: from this
         * step's (indices 64 on) or, for x < s, the last step's */
        shift[b] = _mm512_sub_epi8(here, _mm512_set1_epi8((char)(k - 1 - b)));
    }
    /* the last step's results: of the k - 1 bytes before j (j >= k - 1),
     * loaded alone, as a masked load touches no other byte */
    __m512i v = _mm512_maskz_loadu_epi8(k > 1 ? ~0ULL << (65 - k) : 0,
                                        (const void *)((uintptr_t)p + j - 64));
    __m512i nl = _mm512_and_si512(v, low), nh = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
    for (int b = 0; b < k - 1; b++)
        prev[b] = _mm512_and_si512(_mm512_shuffle_epi8(lo[b], nl), _mm512_shuffle_epi8(hi[b], nh));
    for (; j + 64 <= end; j += 64) {
        v = _mm512_loadu_si512((const void *)(p + j));
        nl = _mm512_and_si512(v, low);
        nh = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        __m512i acc = _mm512_and_si512(_mm512_shuffle_epi8(lo[k - 1], nl),
                                       _mm512_shuffle_epi8(hi[k - 1], nh));
        for (int b = 0; b < k - 1; b++) {
            __m512i r = _mm512_and_si512(_mm512_shuffle_epi8(lo[b], nl), _mm512_shuffle_epi8(hi[b], nh));
            acc = _mm512_and_si512(acc, _mm512_permutex2var_epi8(prev[b], shift[b], r));
            prev[b] = r;
        }
        uint64_t m = _mm512_test_epi8_mask(acc, acc);
        if (stop >= 0)
            m |= _mm512_cmpeq_epi8_mask(v, sv);
        if (m)
            return j + (size_t)__builtin_ctzll(m);
    }
    return packed_avx2(p, j, end, masks, k, stop);
}

__attribute__((target("avx512bw,avx512vbmi"))) static size_t
packed_avx512(const unsigned char *p, size_t j, size_t end, const unsigned char *masks, int k,
              int stop)
{
    /* a copy for each k, and for a stop byte or none */
    if (stop >= 0)
        return k == 1   ? packed_avx512_k(p, j, end, masks, 1, stop)
               : k == 2 ? packed_avx512_k(p, j, end, masks, 2, stop)
                        : packed_avx512_k(p, j, end, masks, 3, stop);
    if (k == 1)
        return packed_avx512_k(p, j, end, masks, 1, -1);
    if (k == 2)
        return packed_avx512_k(p, j, end, masks, 2, -1);
    return packed_avx512_k(p, j, end, masks, 3, -1);
}
#endif

size_t search_packed_find(const unsigned char *p, size_t i, size_t end,
                          const unsigned char *masks, int k, int level, int stop)
{
    size_t j = i < (size_t)k - 1 ? (size_t)k - 1 : i;
    if (j >= end)
        return end;
    if (level > search_vec_level())
        level = search_vec_level();
#ifdef HAVE_X86_VECTORS
    static int ssse3 = -1;
    if (ssse3 < 0)
        ssse3 = vm_cpu_has(VM_CPU_SSSE3) ? 1 : 0;
    if (level == VEC_AVX512)
        return packed_avx512(p, j, end, masks, k, stop);
    if (level == VEC_AVX2)
        return packed_avx2(p, j, end, masks, k, stop);
    if (level == VEC_SSE && ssse3)
        return packed_ssse3(p, j, end, masks, k, stop);
#endif
    return packed_portable(p, j, end, masks, k, stop);
}

static unsigned char byte_arg(VM *vm, Value *argv, int i)
{
    int64_t b = vm_arg_int(vm, argv, i);
    if (b < 0 || b > 255)
        vm_error(vm, "a byte must be 0 to 255, got %lld", (long long)b);
    return (unsigned char)b;
}

/* pair(s, i, b1, d, b2, end, pairs, at, lo, hi, q, off): the first j >= i,
 * with j + d below end (default len(s)), at which s[j] is b1 and s[j + d]
 * is b2; or nil. With pairs, at, lo and hi, only a j at which
 * search.anyat(s, j, pairs, at, nil, lo, hi) also finds a keyword: where the
 * pair is common (two digits of ids), the checks stay in C. With q and off,
 * at is a directory of q-grams (as anyat takes it) for the gram ending off
 * bytes after j: the prefilter of many keywords that share the two bytes
 * (a common prefix), told apart by bytes further on. */
Value nat_search_pair(VM *vm, int argc, Value *argv)
{
    VStr *s = vm_arg_str(vm, argv, 0);
    int64_t i = vm_arg_int(vm, argv, 1);
    unsigned char b1 = byte_arg(vm, argv, 2), b2 = byte_arg(vm, argv, 4);
    int64_t d = vm_arg_int(vm, argv, 3);
    int64_t end = argc > 5 && !IS_NIL(argv[5]) ? vm_arg_int(vm, argv, 5) : (int64_t)s->len;
    if (d < 0)
        vm_error(vm, "the distance must be 0 or more, got %lld", (long long)d);
    check_span(vm, s, i, end, 1);
    if (d >= end || i >= end - d)
        return v_nil();
    const unsigned char *p = (const unsigned char *)s->data;
    if (argc <= 6) {
        size_t j = search_pair_find(p, (size_t)i, (size_t)end, b1, (size_t)d, b2, VEC_BEST);
        return j < (size_t)end ? v_int((int64_t)j) : v_nil();
    }
    if (argc < 10 || argc == 11)
        vm_error(vm, "the keywords are checked with pairs, at, lo and hi (and q and off) together");
    VArray *a = vm_arg_array(vm, argv, 6);
    int64_t lo = vm_arg_int(vm, argv, 8), hi = vm_arg_int(vm, argv, 9), off = 0;
    Directory dir = {NULL, 0, 0};
    if (argc > 10) {
        dir = directory_arg(vm, argv, 7, 10);
        off = vm_arg_int(vm, argv, 11);
        if (off < 0 || off > (int64_t)s->len)
            vm_error(vm, "the directory's gram cannot end %lld bytes on", (long long)off);
    }
    if (lo < 0)
        lo = 0;
    if (hi > (int64_t)s->len)
        hi = (int64_t)s->len;
    for (size_t j = (size_t)i;; j++) {
        j = search_pair_find(p, j, (size_t)end, b1, (size_t)d, b2, VEC_BEST);
        if (j >= (size_t)end)
            return v_nil();
        if (!dir.dir) {
            if (run_at(vm, s, (int64_t)j, a, argv[7], lo, hi) >= 0)
                return v_int((int64_t)j);
            continue;
        }
        /* the keyword's gram ends off bytes on, inside s */
        size_t g = j + (size_t)off;
        if (g >= (size_t)dir.q - 1 && g < s->len &&
            run_at(vm, s, (int64_t)g, a, run_of(&dir, s, g), lo, hi) >= 0)
            return v_int((int64_t)j);
    }
}

/* packed(s, i, masks, end, pairs, dir, q, lo, stop): the first j from i
 * (below end, default len(s)) at which the k bytes of s ending at j pass
 * the packed filter masks (32k bytes, k from 1 to 3: see
 * search_packed_find), or nil. With pairs, a directory and q, only where
 * search.anyat(s, j, pairs, dir, q, lo, end) also finds a keyword: the
 * checks stay in C, which matters where the filter passes often (pairs
 * nil: none). With stop (a byte), also the first j (from k - 1) where s[j]
 * is stop: gre learns of a NUL in the same pass over the text, not in one
 * more. */
Value nat_search_packed(VM *vm, int argc, Value *argv)
{
    VStr *s = vm_arg_str(vm, argv, 0);
    int64_t i = vm_arg_int(vm, argv, 1);
    VStr *ms = vm_arg_str(vm, argv, 2);
    int64_t end = argc > 3 && !IS_NIL(argv[3]) ? vm_arg_int(vm, argv, 3) : (int64_t)s->len;
    if (ms->len == 0 || ms->len % 32 || ms->len > 32 * PACKED_MAX)
        vm_error(vm, "the masks must be 32, 64 or 96 bytes, got %zu", ms->len);
    int k = (int)(ms->len / 32);
    check_span(vm, s, i, end, k);
    const unsigned char *p = (const unsigned char *)s->data;
    const unsigned char *m = (const unsigned char *)ms->data;
    Check c;
    bool check = !(argc > 4 && IS_NIL(argv[4])) && check_args(vm, argc, argv, 4, &c);
    int stop = argc > 8 && !IS_NIL(argv[8]) ? byte_arg(vm, argv, 8) : -1;
    for (size_t j = (size_t)i; j < (size_t)end; j++) {
        j = search_packed_find(p, j, (size_t)end, m, k, VEC_BEST, stop);
        if (j >= (size_t)end)
            break;
        if (p[j] == stop || !check || checked(vm, s, j, &c, end))
            return v_int((int64_t)j);
    }
    return v_nil();
}

/* ---- lines: where a line starts, how many end in a span ----------------- */

static void line_span(VM *vm, const VStr *s, int64_t lo, int64_t hi)
{
    if (lo < 0 || hi < lo || (uint64_t)hi > s->len)
        vm_error(vm, "the span %lld..%lld is not inside the string (length %zu)", (long long)lo,
                 (long long)hi, s->len);
}

/* linestart(s, j, lo, nul): where the line holding s[j] starts: after the
 * last "\n" (or NUL, if nul is true) in s[lo..j), else lo. For printing a
 * matching line without walking every line before it. */
Value nat_search_linestart(VM *vm, int argc, Value *argv)
{
    VStr *s = vm_arg_str(vm, argv, 0);
    int64_t j = vm_arg_int(vm, argv, 1), lo = vm_arg_int(vm, argv, 2);
    bool nul = argc > 3 && v_truthy(argv[3]);
    line_span(vm, s, lo, j);
    const char *p = s->data + lo;
    size_t n = (size_t)(j - lo);
    const char *nl = memrchr(p, '\n', n);
    int64_t at = nl ? nl - s->data + 1 : lo;
    if (nul) {
        const char *z = memrchr(s->data + at, '\0', (size_t)(j - at));
        if (z)
            at = z - s->data + 1;
    }
    return v_int(at);
}

/* newlines(s, lo, hi, nul): how many "\n" (and NUL, if nul is true) are in
 * s[lo..hi): the lines that end there, for line numbers. */
Value nat_search_newlines(VM *vm, int argc, Value *argv)
{
    VStr *s = vm_arg_str(vm, argv, 0);
    int64_t lo = vm_arg_int(vm, argv, 1), hi = vm_arg_int(vm, argv, 2);
    bool nul = argc > 3 && v_truthy(argv[3]);
    line_span(vm, s, lo, hi);
    const unsigned char *p = (const unsigned char *)s->data;
    int64_t n = 0;
    if (nul)
        for (int64_t k = lo; k < hi; k++)
            n += p[k] == '\n' || p[k] == 0;
    else
        for (int64_t k = lo; k < hi; k++)
            n += p[k] == '\n';
    return v_int(n);
}
