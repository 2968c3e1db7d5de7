/* gtable: a hash table of fixed-width keys, keys in one array (see gtable.h). */
#include "config.h"
#include "vm/query/gtable.h"

#include <string.h>
#include <xxhash.h>

#include "store/mem.h"

void gt_init(GTable *t, uint32_t keyw)
{
    memset(t, 0, sizeof *t);
    t->keyw = keyw;
}

void gt_free(GTable *t)
{
    mem_free(t->slots, t->slots ? (t->mask + 1) * 8 : 0);
    mem_free(t->keys, t->kcap * t->keyw);
    gt_init(t, t->keyw);
}

uint64_t gt_hash(const unsigned char *k, size_t n)
{
    if (n <= 16) {  /* short keys, the usual: two words mixed */
        uint64_t a = gt_load_small(k, n < 8 ? n : 8), b = n > 8 ? gt_load_small(k + 8, n - 8) : 0;
        return gt_mix(a ^ (b * UINT64_C(0x9E3779B97F4A7C15) + n));
    }
    return XXH3_64bits(k, n);
}

/* The slots made or grown to ns (a power of two, at least 64). The slot
 * holds the hash's top bits, which also say where it goes: no key is read. */
static bool rehash(GTable *t, size_t ns)
{
    uint64_t *s = mem_calloc(ns, 8);
    if (!s)
        return false;
    for (size_t i = 0; t->slots && i <= t->mask; i++) {
        uint64_t x = t->slots[i];
        if (!x)
            continue;
        size_t j = (size_t)(x >> 32) & (ns - 1);
        while (s[j])
            j = (j + 1) & (ns - 1);
        s[j] = x;
    }
    mem_free(t->slots, t->slots ? (t->mask + 1) * 8 : 0);
    t->slots = s;
    t->mask = ns - 1;
    return true;
}

/* Room in keys[] for cap keys. */
static bool keys_room(GTable *t, size_t cap)
{
    if (cap <= t->kcap)
        return true;
    unsigned char *k = mem_realloc(t->keys, t->kcap * t->keyw, cap * t->keyw);
    if (!k && t->keyw)
        return false;
    t->keys = k;
    t->kcap = cap;
    return true;
}

long gt_append(GTable *t, const unsigned char *key)
{
    if (t->n == UINT32_MAX - 1 || (t->n == t->kcap && !keys_room(t, t->kcap ? 2 * t->kcap : 64)))
        return -1;
    mem_free(t->slots, t->slots ? (t->mask + 1) * 8 : 0);
    t->slots = NULL;
    t->mask = 0;
    if (t->keyw)
        memcpy(t->keys + (size_t)t->n * t->keyw, key, t->keyw);
    return (long)t->n++;
}

/* The slots made again for the keys there (after gt_append). */
static bool reindex(GTable *t)
{
    size_t ns = 64;
    while (ns < 2 * ((size_t)t->n + 1))
        ns *= 2;
    uint64_t *s = mem_calloc(ns, 8);
    if (!s)
        return false;
    for (uint32_t g = 0; g < t->n; g++) {
        uint64_t h = gt_hash(gt_key(t, g), t->keyw);
        size_t j = (size_t)(h >> 32) & (ns - 1);
        while (s[j])
            j = (j + 1) & (ns - 1);
        s[j] = (h & UINT64_C(0xffffffff00000000)) | (g + 1);
    }
    t->slots = s;
    t->mask = ns - 1;
    return true;
}

long gt_find(GTable *t, const unsigned char *key, uint64_t h)
{
    uint64_t tag = h & UINT64_C(0xffffffff00000000);
    size_t i = 0;
    if (!t->slots && t->n && !reindex(t))
        return -1;
    if (t->slots) {
        for (i = gt_home(t, h); t->slots[i]; i = (i + 1) & t->mask) {
            uint64_t x = t->slots[i];
            if ((x & UINT64_C(0xffffffff00000000)) == tag &&
                gt_eq(gt_key(t, (uint32_t)x - 1), key, t->keyw))
                return (long)(uint32_t)x - 1;
        }
    }
    if (t->n == UINT32_MAX - 1)
        return -1;
    if (2 * ((size_t)t->n + 1) > (t->slots ? t->mask + 1 : 0)) {
        if (!rehash(t, t->slots ? (t->mask + 1) * 2 : 64))
            return -1;
        for (i = gt_home(t, h); t->slots[i]; i = (i + 1) & t->mask)
            ;
    }
    if (t->n == t->kcap && !keys_room(t, t->kcap ? 2 * t->kcap : 64))
        return -1;
    if (t->keyw)
        memcpy(t->keys + (size_t)t->n * t->keyw, key, t->keyw);
    t->slots[i] = tag | (t->n + 1);
    return (long)t->n++;
}
