/* bindex: a block's bitmap index of one column: building, checking and
 * reading it (the layout is in bindex.h and docs/FORMAT.md). */
#include "config.h"
#include "store/bindex.h"

#include <inttypes.h>
#include <roaring/roaring.h>
#include <string.h>

#include "store/bytes.h"
#include "store/mem.h"
#include "store/sort.h"

#define ENTRY 12u /* u64 value, u32 size */

uint64_t st_bidx_key(const st_field *f, const void *p)
{
    uint64_t v = 0;
    memcpy(&v, p, f->width);
    return v;
}

int st_bidx_build(const st_field *f, const void *col, uint32_t n, unsigned char **out, size_t *len,
                  st_err *err)
{
    /* (value, row) in row order, sorted by value with each value's rows in order */
    st_keyed *pairs = mem_alloc((n ? n : 1) * 2 * sizeof *pairs), *ps = pairs;
    uint32_t *rows = mem_alloc((n ? n : 1) * sizeof *rows);
    roaring_bitmap_t **bm = mem_alloc((n ? n : 1) * sizeof *bm);
    unsigned char *o = NULL;
    uint32_t k = 0;
    size_t total = 4;
    int rc = -1;
    if (!pairs || !rows || !bm)
        goto done;
    for (uint32_t i = 0; i < n; i++)
        ps[i] = (st_keyed){st_bidx_key(f, (const unsigned char *)col + (size_t)i * f->width), i};
    ps = st_sort_keyed(ps, pairs + (n ? n : 1), n);
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j < n && ps[j].key == ps[i].key) {
            rows[j - i] = ps[j].idx;
            j++;
        }
        if (!(bm[k] = roaring_bitmap_of_ptr(j - i, rows)))
            goto done;
        roaring_bitmap_run_optimize(bm[k]);
        ps[k].key = ps[i].key;  /* the k-th value, in place (k <= i) */
        total += ENTRY + roaring_bitmap_portable_size_in_bytes(bm[k]);
        k++;
        i = j;
    }
    if (!(o = mem_alloc(total)))
        goto done;
    st_put32(o, k);
    size_t at = 4 + (size_t)ENTRY * k;
    for (uint32_t i = 0; i < k; i++) {
        size_t sz = roaring_bitmap_portable_serialize(bm[i], (char *)o + at);
        st_put64(o + 4 + ENTRY * i, ps[i].key);
        st_put32(o + 4 + ENTRY * i + 8, (uint32_t)sz);
        at += sz;
    }
    *out = o;
    *len = total;
    rc = 0;
done:
    for (uint32_t i = 0; bm && i < k; i++)
        roaring_bitmap_free(bm[i]);
    mem_free(pairs, (n ? n : 1) * 2 * sizeof *pairs);
    mem_free(rows, (n ? n : 1) * sizeof *rows);
    mem_free(bm, (n ? n : 1) * sizeof *bm);
    if (rc < 0)
        st_err_nomem(err, "bitmap index");
    return rc;
}

uint32_t st_bidx_nvalues(const unsigned char *idx) { return st_get32(idx); }

uint64_t st_bidx_value(const unsigned char *idx, uint32_t i) { return st_get64(idx + 4 + ENTRY * i); }

uint32_t st_bidx_size(const unsigned char *idx, uint32_t i) { return st_get32(idx + 4 + ENTRY * i + 8); }

size_t st_bidx_at(const unsigned char *idx, uint32_t i)
{
    size_t at = 4 + (size_t)ENTRY * st_get32(idx);
    for (uint32_t j = 0; j < i; j++)
        at += st_bidx_size(idx, j);
    return at;
}

uint32_t st_bidx_find(const unsigned char *idx, uint64_t v)
{
    uint32_t k = st_get32(idx), lo = 0, hi = k;
    while (lo < hi) {   /* the values ascend */
        uint32_t mid = lo + (hi - lo) / 2;
        if (st_bidx_value(idx, mid) < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < k && st_bidx_value(idx, lo) == v ? lo : k;
}

/* What reading a bitmap notes besides ORing its rows into a bitset (the
 * query's reading notes nothing): the bits of its rows, and of those
 * already set. */
typedef struct tally {
    uint64_t any, twice;
} tally;

/* ORs word i of a bitset with x, noting into t (NULL: nothing). */
static inline __attribute__((always_inline)) void put_word(uint64_t *w, size_t i, uint64_t x,
                                                            tally *t)
{
    if (t) {
        t->any |= x;
        t->twice |= w[i] & x;
    }
    w[i] |= x;
}

/* Sets rows [a, e) of bitset w, a word at a time. */
static inline __attribute__((always_inline)) void set_rows(uint64_t *w, uint32_t a, uint32_t e,
                                                           tally *t)
{
    while (a < e) {
        uint32_t end = e - (a & ~63u) < 64 ? e - (a & ~63u) : 64; /* in a's word */
        uint64_t m = (end == 64 ? ~UINT64_C(0) : (UINT64_C(1) << end) - 1) & (~UINT64_C(0) << (a & 63));
        put_word(w, a >> 6, m, t);
        a = (a & ~63u) + end;
    }
}

/* CRoaring's portable form (its RoaringFormatSpec): a cookie saying whether
 * any container is of runs (then the count of containers is in it, and a
 * bit a container says which), the containers' 16-bit keys and
 * cardinalities less one, their offsets (absent when there are runs and
 * fewer than 4 containers), then each container: runs (u16 count, then u16
 * start and length less one), an array of u16 (up to 4096 values) or a
 * bitset of 65536 bits. All little-endian, as st_get16 reads. */
#define COOKIE_RUNS 12347u
#define COOKIE_NO_RUNS 12346u

/* st_bidx_or_rows, noting into t unless it is NULL (inlined into both,
 * the query's reading pays nothing for the notes). */
static inline __attribute__((always_inline)) int read_rows(const unsigned char *p, size_t sz,
                                                           uint32_t n, uint64_t *w, tally *t)
{
    if (sz < 8)
        return -1;
    uint32_t cookie = st_get32(p), k;
    const unsigned char *runs = NULL;
    size_t at;
    if ((cookie & 0xFFFF) == COOKIE_RUNS) {
        k = (cookie >> 16) + 1;
        runs = p + 4;
        at = 4 + ((size_t)k + 7) / 8;
    } else if (cookie == COOKIE_NO_RUNS) {
        k = st_get32(p + 4);
        at = 8;
    } else {
        return -1;
    }
    size_t head = at, nw = ((size_t)n + 63) / 64;
    if (k > 65536 || (at += 4 * (size_t)k + (!runs || k >= 4 ? 4 * (size_t)k : 0)) > sz)
        return -1;
    for (uint32_t c = 0; c < k; c++) {
        uint32_t base = (uint32_t)st_get16(p + head + 4 * c) << 16;
        uint32_t card = st_get16(p + head + 4 * c + 2) + 1u;
        if (runs && (runs[c / 8] >> (c % 8)) & 1) {
            if (at + 2 > sz)
                return -1;
            uint32_t nr = st_get16(p + at);
            if ((at += 2) + 4 * (size_t)nr > sz)
                return -1;
            for (uint32_t i = 0; i < nr; i++, at += 4) {
                uint64_t a = base + (uint64_t)st_get16(p + at), e = a + st_get16(p + at + 2) + 1;
                if (e > n)
                    return -1;
                set_rows(w, (uint32_t)a, (uint32_t)e, t);
            }
        } else if (card <= 4096) {
            if (at + 2 * (size_t)card > sz)
                return -1;
            for (uint32_t i = 0; i < card; i++, at += 2) {
                uint32_t v = base + st_get16(p + at);
                if (v >= n)
                    return -1;
                put_word(w, v >> 6, UINT64_C(1) << (v & 63), t);
            }
        } else {
            if (at + 8192 > sz)
                return -1;
            for (size_t j = 0, o = base >> 6; j < 1024; j++, at += 8) {
                uint64_t x = st_get64(p + at);
                if (!x)
                    continue;
                /* no row at or past n */
                if (o + j >= nw || (o + j == nw - 1 && n % 64 && x >> (n % 64)))
                    return -1;
                put_word(w, o + j, x, t);
            }
        }
    }
    return at == sz ? 0 : -1;
}

int st_bidx_or_rows(const unsigned char *p, size_t sz, uint32_t n, uint64_t *w)
{
    return read_rows(p, sz, n, w, NULL);
}

int st_bidx_check(const unsigned char *idx, size_t len, uint32_t n, bool only_dir, st_err *err)
{
    if (len < 4)
        return st_err_set(err, ST_ECORRUPT, "index of %zu bytes has no count", len);
    uint32_t k = st_get32(idx);
    if (k > n || 4 + (uint64_t)ENTRY * k > len)
        return st_err_set(err, ST_ECORRUPT, "index claims %" PRIu32 " values", k);
    uint64_t at = 4 + (uint64_t)ENTRY * k, rows = 0;
    if (only_dir) {
        for (uint32_t i = 0; i < k; i++) {
            if (i && st_bidx_value(idx, i) <= st_bidx_value(idx, i - 1))
                return st_err_set(err, ST_ECORRUPT, "index values out of order at value %" PRIu32, i);
            at += st_get32(idx + 4 + ENTRY * i + 8);
        }
        return at == len ? 0 : st_err_set(err, ST_ECORRUPT, "index bitmaps fill %" PRIu64
                                          " bytes of %zu", at, len);
    }
    /* each bitmap read as a query reads it (st_bidx_or_rows) into one
     * bitset of all their rows, noting whether it holds any and any that
     * another (or itself) set already; the rows counted once at the end:
     * rows + bitmaps' bytes, whatever the values */
    size_t nw = ((size_t)n + 63) / 64 + 1;
    uint64_t *all = mem_calloc(nw, 8);
    int rc = all ? 0 : st_err_nomem(err, "bitmap index");
    for (uint32_t i = 0; rc == 0 && i < k; i++) {
        const unsigned char *e = idx + 4 + ENTRY * i;
        uint32_t sz = st_get32(e + 8);
        tally t = {0, 0};
        if (i && st_get64(e) <= st_get64(e - ENTRY)) {
            rc = st_err_set(err, ST_ECORRUPT, "index values out of order at value %" PRIu32, i);
            break;
        }
        if (at + sz > len || read_rows(idx + at, sz, n, all, &t) < 0)
            rc = st_err_set(err, ST_ECORRUPT, "index bitmap %" PRIu32 " is damaged", i);
        if (rc == 0 && (!t.any || t.twice))
            rc = st_err_set(err, ST_ECORRUPT, "index bitmap %" PRIu32 " is %s", i,
                            t.any ? "of rows another value's bitmap holds" : "empty");
        at += sz;
    }
    rows = rc == 0 ? st_bidx_count(all, 0, n) : 0;
    if (rc == 0 && at != len)
        rc = st_err_set(err, ST_ECORRUPT, "index has %" PRIu64 " bytes after its bitmaps", len - at);
    if (rc == 0 && rows != n)
        rc = st_err_set(err, ST_ECORRUPT, "index covers %" PRIu64 " rows of %" PRIu32, rows, n);
    mem_free(all, nw * 8);
    return rc;
}

/* A portable x86-64 build has no popcnt instruction, and its
 * __builtin_popcountll is a call into libgcc (5% of a hot count of bitmap
 * rows): a clone for CPUs with popcnt is chosen when the program loads. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
__attribute__((target_clones("popcnt", "default")))
#endif
#endif
uint64_t st_bidx_count(const uint64_t *w, uint32_t lo, uint32_t hi)
{
    if (lo >= hi)
        return 0;
    uint32_t a = lo >> 6, z = (hi - 1) >> 6;
    uint64_t first = ~UINT64_C(0) << (lo & 63), last = ~UINT64_C(0) >> (63 - ((hi - 1) & 63));
    if (a == z)
        return (uint64_t)__builtin_popcountll(w[a] & first & last);
    uint64_t c = (uint64_t)__builtin_popcountll(w[a] & first) +
                 (uint64_t)__builtin_popcountll(w[z] & last);
    for (uint32_t i = a + 1; i < z; i++)
        c += (uint64_t)__builtin_popcountll(w[i]);
    return c;
}
