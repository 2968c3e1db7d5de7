/* bindex: a block's bitmap index of one column: building, checking and
 * reading it (the layout is in bindex.h and docs/FORMAT.md). */
#include "config.h"
#include "store/bindex.h"

#include <inttypes.h>
#include <roaring/roaring.h>
#include <stdlib.h>
#include <string.h>

#include "store/bytes.h"
#include "store/mem.h"

#define ENTRY 12u /* u64 value, u32 size */

uint64_t st_bidx_key(const st_field *f, const void *p)
{
    uint64_t v = 0;
    memcpy(&v, p, f->width);
    return v;
}

typedef struct pair {
    uint64_t v;
    uint32_t row;
} pair;

static int by_value(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

int st_bidx_build(const st_field *f, const void *col, uint32_t n, unsigned char **out, size_t *len,
                  st_err *err)
{
    pair *ps = mem_alloc((n ? n : 1) * sizeof *ps);
    uint32_t *rows = mem_alloc((n ? n : 1) * sizeof *rows);
    roaring_bitmap_t **bm = mem_alloc((n ? n : 1) * sizeof *bm);
    unsigned char *o = NULL;
    uint32_t k = 0;
    size_t total = 4;
    int rc = -1;
    if (!ps || !rows || !bm)
        goto done;
    for (uint32_t i = 0; i < n; i++)
        ps[i] = (pair){st_bidx_key(f, (const unsigned char *)col + (size_t)i * f->width), i};
    qsort(ps, n, sizeof *ps, by_value);
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j < n && ps[j].v == ps[i].v) {
            rows[j - i] = ps[j].row;
            j++;
        }
        if (!(bm[k] = roaring_bitmap_of_ptr(j - i, rows)))
            goto done;
        roaring_bitmap_run_optimize(bm[k]);
        ps[k].v = ps[i].v;  /* the k-th value, in place (k <= i) */
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
        st_put64(o + 4 + ENTRY * i, ps[i].v);
        st_put32(o + 4 + ENTRY * i + 8, (uint32_t)sz);
        at += sz;
    }
    *out = o;
    *len = total;
    rc = 0;
done:
    for (uint32_t i = 0; bm && i < k; i++)
        roaring_bitmap_free(bm[i]);
    mem_free(ps, (n ? n : 1) * sizeof *ps);
    mem_free(rows, (n ? n : 1) * sizeof *rows);
    mem_free(bm, (n ? n : 1) * sizeof *bm);
    if (rc < 0)
        st_err_nomem(err, "bitmap index");
    return rc;
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
    roaring_bitmap_t *all = roaring_bitmap_create();
    int rc = all ? 0 : st_err_nomem(err, "bitmap index");
    for (uint32_t i = 0; rc == 0 && i < k; i++) {
        const unsigned char *e = idx + 4 + ENTRY * i;
        uint32_t sz = st_get32(e + 8);
        if (i && st_get64(e) <= st_get64(e - ENTRY)) {
            rc = st_err_set(err, ST_ECORRUPT, "index values out of order at value %" PRIu32, i);
            break;
        }
        roaring_bitmap_t *b = at + sz <= len ? roaring_bitmap_portable_deserialize_safe((const char *)idx + at, sz)
                                             : NULL;
        if (!b || roaring_bitmap_portable_size_in_bytes(b) != sz || roaring_bitmap_is_empty(b) ||
            roaring_bitmap_maximum(b) >= n) {
            rc = st_err_set(err, ST_ECORRUPT, "index bitmap %" PRIu32 " is damaged", i);
        } else {
            rows += roaring_bitmap_get_cardinality(b);
            roaring_bitmap_or_inplace(all, b);
        }
        if (b)  /* this CRoaring's free takes no NULL */
            roaring_bitmap_free(b);
        at += sz;
    }
    if (rc == 0 && at != len)
        rc = st_err_set(err, ST_ECORRUPT, "index has %" PRIu64 " bytes after its bitmaps", len - at);
    if (rc == 0 && (rows != n || roaring_bitmap_get_cardinality(all) != n))
        rc = st_err_set(err, ST_ECORRUPT, "index covers %" PRIu64 " rows of %" PRIu32, rows, n);
    roaring_bitmap_free(all);
    return rc;
}

uint32_t st_bidx_nvalues(const unsigned char *idx) { return st_get32(idx); }

uint64_t st_bidx_value(const unsigned char *idx, uint32_t i) { return st_get64(idx + 4 + ENTRY * i); }

void *st_bidx_rows_at(const unsigned char *idx, size_t len, uint32_t i)
{
    uint32_t k = st_get32(idx);
    uint64_t at = 4 + (uint64_t)ENTRY * k;
    for (uint32_t j = 0; j < i; j++)
        at += st_get32(idx + 4 + ENTRY * j + 8);
    (void)len;  /* checked by st_bidx_check */
    return roaring_bitmap_portable_deserialize_safe((const char *)idx + at,
                                                    st_get32(idx + 4 + ENTRY * i + 8));
}

void *st_bidx_rows(const unsigned char *idx, size_t len, uint64_t v)
{
    uint32_t k = st_get32(idx), lo = 0, hi = k;
    while (lo < hi) {   /* the values ascend */
        uint32_t mid = lo + (hi - lo) / 2;
        if (st_bidx_value(idx, mid) < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == k || st_bidx_value(idx, lo) != v)
        return roaring_bitmap_create();
    return st_bidx_rows_at(idx, len, lo);
}
