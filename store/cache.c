/* cache: the process's LRU cache of decoded columns, headers and footers. */
#include "config.h"
#include "store/cache.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "store/mem.h"

struct st_cache_ent {
    st_file_id file;
    uint64_t block;
    uint32_t col;
    uint32_t refs;      /* the cache's own (while cached) plus its users' */
    bool cached;
    uint64_t hash;
    size_t size;
    uint64_t pass;      /* the pass that last used it */
    st_cache_ent *hnext;         /* hash chain */
    st_cache_ent *newer, *older; /* the LRU list */
    _Alignas(16) unsigned char data[];
};

static struct {
    pthread_mutex_t mu;
    st_cache_ent **buckets;
    size_t nbuckets; /* a power of two, or 0 */
    st_cache_ent *newest, *oldest;
    size_t limit;
    uint64_t pass;      /* the pass running (0: none begun) */
    size_t pass_bytes;  /* the bytes of the entries it used */
    st_cache_stats st;
} C = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t key_hash(const st_file_id *f, uint64_t block, uint32_t col)
{
    uint64_t h = f->ino * UINT64_C(0x9E3779B97F4A7C15) ^ f->dev ^ f->size ^ f->mtime_ns ^ f->ctime_ns;
    h ^= (block * UINT64_C(0xff51afd7ed558ccd)) ^ ((uint64_t)col * UINT64_C(0x94d049bb133111eb));
    h ^= h >> 29;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    return h ^ h >> 32;
}

static bool key_eq(const st_cache_ent *e, const st_file_id *f, uint64_t block, uint32_t col)
{
    return e->block == block && e->col == col && st_file_id_eq(&e->file, f);
}

static void ent_free(st_cache_ent *e)
{
    mem_free(e, sizeof *e + e->size);
}

static void lru_unlink(st_cache_ent *e)
{
    if (e->newer)
        e->newer->older = e->older;
    else
        C.newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        C.oldest = e->newer;
    e->newer = e->older = NULL;
}

static void lru_push(st_cache_ent *e)
{
    e->older = C.newest;
    e->newer = NULL;
    if (C.newest)
        C.newest->newer = e;
    C.newest = e;
    if (!C.oldest)
        C.oldest = e;
}

/* Takes e out of the cache (lock held); frees it unless someone uses it. */
static void evict(st_cache_ent *e)
{
    st_cache_ent **pp = &C.buckets[e->hash & (C.nbuckets - 1)];
    while (*pp != e)
        pp = &(*pp)->hnext;
    *pp = e->hnext;
    lru_unlink(e);
    e->cached = false;
    if (C.pass && e->pass == C.pass)
        C.pass_bytes -= e->size;
    C.st.entries--;
    C.st.bytes -= e->size;
    C.st.evictions++;
    if (--e->refs == 0)
        ent_free(e);
}

static void shrink_to(size_t limit)
{
    while (C.oldest && C.st.bytes > limit)
        evict(C.oldest);
}

void st_cache_set_limit(size_t bytes)
{
    pthread_mutex_lock(&C.mu);
    C.limit = bytes;
    C.st.limit = bytes;
    shrink_to(bytes);
    if (!bytes) {
        C.pass = 0;
        C.pass_bytes = 0;
        mem_free(C.buckets, C.nbuckets * sizeof *C.buckets);
        C.buckets = NULL;
        C.nbuckets = 0;
    }
    pthread_mutex_unlock(&C.mu);
}

void st_cache_stats_get(st_cache_stats *out)
{
    pthread_mutex_lock(&C.mu);
    *out = C.st;
    pthread_mutex_unlock(&C.mu);
}

static st_cache_ent *find(const st_file_id *f, uint64_t block, uint32_t col, uint64_t h)
{
    if (!C.nbuckets)
        return NULL;
    st_cache_ent *e = C.buckets[h & (C.nbuckets - 1)];
    while (e && !(e->hash == h && key_eq(e, f, block, col)))
        e = e->hnext;
    return e;
}

/* Marks e used by the pass running (lock held). */
static void use(st_cache_ent *e)
{
    if (C.pass && e->pass != C.pass)
        C.pass_bytes += e->size;
    e->pass = C.pass;
}

void st_cache_begin_pass(void)
{
    pthread_mutex_lock(&C.mu);
    C.pass++;
    C.pass_bytes = 0;
    pthread_mutex_unlock(&C.mu);
}

st_cache_ent *st_cache_get(const st_file_id *f, uint64_t block, uint32_t col)
{
    uint64_t h = key_hash(f, block, col);
    pthread_mutex_lock(&C.mu);
    st_cache_ent *e = C.limit ? find(f, block, col, h) : NULL;
    if (e) {
        e->refs++;
        use(e);
        lru_unlink(e);
        lru_push(e);
        C.st.hits++;
    } else {
        C.st.misses++;
    }
    pthread_mutex_unlock(&C.mu);
    return e;
}

bool st_cache_has(const st_file_id *f, uint64_t block, uint32_t col)
{
    uint64_t h = key_hash(f, block, col);
    pthread_mutex_lock(&C.mu);
    bool has = C.limit && find(f, block, col, h);
    pthread_mutex_unlock(&C.mu);
    return has;
}

/* Doubles the buckets once they are fewer than the entries (lock held). */
static void grow(void)
{
    if (C.nbuckets > C.st.entries)
        return;
    size_t n = C.nbuckets ? 2 * C.nbuckets : 256;
    st_cache_ent **b = mem_calloc(n, sizeof *b);
    if (!b)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < C.nbuckets; i++)
        for (st_cache_ent *e = C.buckets[i], *next; e; e = next) {
            next = e->hnext;
            e->hnext = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    mem_free(C.buckets, C.nbuckets * sizeof *C.buckets);
    C.buckets = b;
    C.nbuckets = n;
}

void st_cache_put(const st_file_id *f, uint64_t block, uint32_t col, const void *data, size_t n)
{
    uint64_t h = key_hash(f, block, col);
    pthread_mutex_lock(&C.mu);
    /* a pass makes room only of what it has not used itself */
    bool skip = !C.limit || n > C.limit || find(f, block, col, h) || (C.pass && C.pass_bytes + n > C.limit);
    pthread_mutex_unlock(&C.mu);
    if (skip)
        return;
    /* Copy outside the lock: the other threads' lookups go on meanwhile. */
    st_cache_ent *e = mem_alloc(sizeof *e + n);
    if (!e)
        return;
    *e = (st_cache_ent){.file = *f, .block = block, .col = col, .refs = 1, .cached = true,
                        .hash = h, .size = n};
    if (n)
        memcpy(e->data, data, n);
    pthread_mutex_lock(&C.mu);
    if (C.limit)
        grow();
    if (C.limit && C.nbuckets && !find(f, block, col, h) && !(C.pass && C.pass_bytes + n > C.limit)) {
        e->pass = C.pass - 1;   /* not yet its: use() counts it */
        use(e);
        e->hnext = C.buckets[h & (C.nbuckets - 1)];
        C.buckets[h & (C.nbuckets - 1)] = e;
        lru_push(e);
        C.st.entries++;
        C.st.bytes += n;
        C.st.inserts++;
        shrink_to(C.limit);
        e = NULL;
    }
    pthread_mutex_unlock(&C.mu);
    if (e) /* another thread was first, or the cache went off */
        ent_free(e);
}

const void *st_cache_data(const st_cache_ent *e) { return e->data; }
size_t st_cache_size(const st_cache_ent *e) { return e->size; }

void st_cache_release(st_cache_ent *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&C.mu);
    bool last = --e->refs == 0;
    pthread_mutex_unlock(&C.mu);
    if (last)
        ent_free(e);
}
