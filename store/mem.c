/* mem: the one allocation hook, with failure injection for tests. */
#include "config.h"
#include "store/mem.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#ifdef __GLIBC__
/* Big blocks (a query's group tables and sorts, tens of MB) from the heap,
 * not each a new mapping: every page of a new mapping faults when first
 * touched, again in each query (a sixth of a million-group group by's
 * CPU). Free memory past 256 MB at the heap's top still goes back. */
__attribute__((constructor)) static void heap_policy(void)
{
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}
#endif

/* Atomic because partition scans allocate from several threads. */
static atomic_size_t in_use;
static atomic_ulong fail_countdown;
static size_t limit;

static int should_fail(size_t osize, size_t nsize)
{
    unsigned long n = atomic_load(&fail_countdown);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&fail_countdown, &n, n - 1))
            return n == 1;
    }
    return limit && nsize > osize && atomic_load(&in_use) + (nsize - osize) > limit;
}

void *mem_realloc(void *old, size_t osize, size_t nsize)
{
    if (nsize == 0) {
        free(old);
        atomic_fetch_sub(&in_use, osize);
        return NULL;
    }
    if (should_fail(osize, nsize))
        return NULL;
    void *p = realloc(old, nsize);
    if (!p)
        return NULL;
    atomic_fetch_add(&in_use, nsize - osize);   /* one locked add: wraps right when smaller */
    return p;
}

void *mem_alloc(size_t size)
{
    return mem_realloc(NULL, 0, size ? size : 1);
}

void *mem_calloc(size_t n, size_t size)
{
    if (size && n > (size_t)-1 / size)
        return NULL;
    void *p = mem_alloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void mem_free(void *p, size_t size)
{
    if (p)
        mem_realloc(p, size, 0);
}

char *mem_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = mem_alloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

size_t mem_in_use(void) { return atomic_load(&in_use); }
void mem_fail_after(unsigned long n) { atomic_store(&fail_countdown, n); }
void mem_set_limit(size_t l) { limit = l; }
