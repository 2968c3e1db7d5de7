/* oindex: a block's order index of a tag field: its rows sorted by the
 * field's value (store/oindex.h). */
#include "config.h"
#include "store/oindex.h"

#include <inttypes.h>
#include <string.h>

#include "store/bytes.h"
#include "store/mem.h"

#define OIDX_FENCE 64   /* places of the order between fences */

/* (key, row) pairs sorted by key then row: a radix sort, 8 bits a pass,
 * passes over bytes all rows share skipped. */
static void sort_pairs(uint64_t *k, uint32_t *r, uint64_t *k2, uint32_t *r2, uint32_t n)
{
    uint64_t same = ~UINT64_C(0), first = n ? k[0] : 0;
    for (uint32_t i = 0; i < n; i++)
        same &= ~(k[i] ^ first);
    for (int shift = 0; shift < 64; shift += 8) {
        if ((same >> shift & 0xff) == 0xff)
            continue;
        uint32_t count[257] = {0};
        for (uint32_t i = 0; i < n; i++)
            count[(k[i] >> shift & 0xff) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (uint32_t i = 0; i < n; i++) {
            uint32_t at = count[k[i] >> shift & 0xff]++;
            k2[at] = k[i];
            r2[at] = r[i];
        }
        memcpy(k, k2, (size_t)n * 8);
        memcpy(r, r2, (size_t)n * 4);
    }
}

int st_oidx_build(const st_field *f, const void *col, uint32_t n, unsigned char **out, size_t *len,
                  st_err *err)
{
    uint32_t w = n <= 65536 ? 2 : 4, nf = (n + OIDX_FENCE - 1) / OIDX_FENCE;
    size_t size = 8 + (size_t)n * w + (size_t)nf * 8, scratch = (size_t)n * 24;
    unsigned char *o = mem_alloc(size), *t = n ? mem_alloc(scratch) : NULL;
    if (!o || (n && !t)) {
        mem_free(o, size);
        mem_free(t, scratch);
        return st_err_nomem(err, "order index");
    }
    uint64_t *k = (uint64_t *)t, *k2 = k + n;
    uint32_t *r = (uint32_t *)(k2 + n), *r2 = r + n;
    for (uint32_t i = 0; i < n; i++) {
        k[i] = st_field_order(f, (const unsigned char *)col + (size_t)i * f->width);
        r[i] = i;
    }
    sort_pairs(k, r, k2, r2, n);    /* stable: ties stay in row order */
    st_put32(o, n);
    st_put32(o + 4, w);
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = o + 8 + (size_t)i * w;
        p[0] = (unsigned char)r[i];
        p[1] = (unsigned char)(r[i] >> 8);
        if (w == 4) {
            p[2] = (unsigned char)(r[i] >> 16);
            p[3] = (unsigned char)(r[i] >> 24);
        }
    }
    for (uint32_t i = 0; i < nf; i++)
        st_put64(o + 8 + (size_t)n * w + (size_t)i * 8, k[(size_t)i * OIDX_FENCE]);
    mem_free(t, scratch);
    *out = o;
    *len = size;
    return 0;
}

int st_oidx_check(const unsigned char *idx, size_t len, uint32_t n, bool only_size, st_err *err)
{
    if (len < 8 || st_get32(idx) != n)
        return st_err_set(err, ST_ECORRUPT, "order index is not of the block's %" PRIu32 " tags", n);
    uint32_t w = st_get32(idx + 4), nf = (n + OIDX_FENCE - 1) / OIDX_FENCE;
    if (w != (n <= 65536 ? 2u : 4u) || len != 8 + (size_t)n * w + (size_t)nf * 8)
        return st_err_set(err, ST_ECORRUPT, "order index has a bad size");
    if (only_size)
        return 0;
    size_t bits = ((size_t)n + 63) / 64 * 8;
    uint64_t *seen = mem_calloc(bits ? bits : 1, 1);
    if (!seen)
        return st_err_nomem(err, "order index");
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        uint32_t row = st_oidx_row(idx, i);
        if (row >= n || (seen[row / 64] >> (row % 64) & 1))
            rc = st_err_set(err, ST_ECORRUPT, "order index holds row %" PRIu32 " %s", row,
                            row >= n ? "past the block's tags" : "twice");
        else
            seen[row / 64] |= UINT64_C(1) << (row % 64);
    }
    mem_free(seen, bits ? bits : 1);
    return rc;
}

/* The first place of the order whose value is at least key (above: past
 * it): the fences narrow it to one span of OIDX_FENCE places, searched
 * through the column. */
static uint32_t first_at(const st_field *f, const unsigned char *c, const unsigned char *idx,
                         uint64_t key, bool above)
{
    uint32_t n = st_get32(idx), nf = (n + OIDX_FENCE - 1) / OIDX_FENCE, flo = 0, fhi = nf;
    const unsigned char *fence = idx + 8 + (size_t)n * idx[4];
    while (flo < fhi) {
        uint32_t mid = flo + (fhi - flo) / 2;
        uint64_t v = st_get64(fence + (size_t)mid * 8);
        if (above ? v <= key : v < key)
            flo = mid + 1;
        else
            fhi = mid;
    }
    uint32_t lo = flo ? (flo - 1) * OIDX_FENCE + 1 : 0;
    uint32_t hi = (uint64_t)flo * OIDX_FENCE < n ? flo * OIDX_FENCE : n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2, row = st_oidx_row(idx, mid);
        uint64_t v = row < n ? st_field_order(f, c + (size_t)row * f->width) : ~UINT64_C(0);
        if (above ? v <= key : v < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void st_oidx_range(const st_field *f, const void *col, const unsigned char *idx, uint64_t lo,
                   uint64_t hi, uint32_t *from, uint32_t *to)
{
    *from = first_at(f, col, idx, lo, false);
    *to = lo > hi ? *from : first_at(f, col, idx, hi, true);
    if (*to < *from)
        *to = *from;
}
