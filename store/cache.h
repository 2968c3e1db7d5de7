/* cache: the process's cache of what tagset file readers decoded: columns
 * of blocks, and files' checked headers and footers. LRU, bounded in bytes.
 *
 * A query session runs many queries over the same files; DuckDB keeps their
 * columns in its buffer pool, and so do we: a hot query then reads no bytes,
 * verifies no checksum and decompresses nothing. Passes (st_cache_begin_pass)
 * keep a scan bigger than the cache from cycling it all out.
 *
 * Keys: a file's identity (st_file_id: device, inode, size, modification
 * time; comb never changes a tagset file in place, a rewrite is a new inode
 * renamed over the name), a block number and a column (ST_CACHE_META for
 * the file's header and footer). What is cached was checked (checksums,
 * structure) when it was first read, so a hit is as good as a read.
 *
 * Entries are reference counted: st_cache_get hands out a reference, the
 * caller gives it back with st_cache_release. Eviction drops only the
 * cache's own reference, so data in use stays valid; the bound counts what
 * the cache holds (entries evicted while in use belong to their readers
 * until released, like their block buffers).
 *
 * Off by default (limit 0): a program turns it on with st_cache_set_limit
 * (the comb binary does, see vm/lib_store.c), and only readers opened with
 * st_nbuf_opts.cache use it. st_cache_set_limit(0) empties it.
 * Thread-safe: one mutex, taken per lookup and per insert. */
#ifndef COMB_STORE_CACHE_H
#define COMB_STORE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "store/nbuf.h"

#define ST_CACHE_META UINT32_MAX /* the column number of a file's header and footer */
#define ST_CACHE_STARTS (UINT32_MAX - 1) /* of a block's tag starts, made from its counts */
/* | a column: that column left encoded (RLE or FOR, store/lwcodec.h), as
 * [u32 codec][u32 0][its stored bytes] */
#define ST_CACHE_ENCODED 0x80000000u

typedef struct st_cache_ent st_cache_ent;

typedef struct st_cache_stats {
    uint64_t hits, misses, inserts, evictions;
    uint64_t entries, bytes, limit; /* held now, and the bound */
} st_cache_stats;

/* Sets the bound in bytes (0: off, and empty the cache), evicting down to it. */
void st_cache_set_limit(size_t bytes);
void st_cache_stats_get(st_cache_stats *out);

/* Begins a pass (a query's scan): from now on, making room for a new
 * entry evicts only entries this pass has not used (got or put), least
 * recently used first, and an entry that needs more is not kept. A pass
 * bigger than the cache keeps what it cached, so the next pass over the
 * same blocks finds it, where plain LRU evicts each block just before the
 * next pass asks for it. Without a pass begun (or after
 * st_cache_set_limit(0)), plain LRU. */
void st_cache_begin_pass(void);
/* A reference to the entry for the key, or NULL (a miss, or the cache is off). */
st_cache_ent *st_cache_get(const st_file_id *f, uint64_t block, uint32_t col);
/* Whether the key has an entry, without using it (no reference, no LRU
 * move, no hit or miss counted): what explain predicts with. */
bool st_cache_has(const st_file_id *f, uint64_t block, uint32_t col);
/* Copies n bytes into a new entry under the key (unless the key is there
 * already or the cache is off or out of memory: caching is best effort) and
 * evicts the least recently used entries down to the bound. */
void st_cache_put(const st_file_id *f, uint64_t block, uint32_t col, const void *data, size_t n);
const void *st_cache_data(const st_cache_ent *e);
size_t st_cache_size(const st_cache_ent *e);
/* Gives a reference back; NULL is allowed. */
void st_cache_release(st_cache_ent *e);

#endif
