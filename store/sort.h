/* sort: external sort of fixed-width records in bounded memory.
 *
 * Records arrive in any order through st_sorter_add. They fill a parcel in
 * memory; a full parcel is sorted (stably) and spilled as a run file into a
 * private temporary directory; st_sorter_finish then k-way merges the runs
 * (a loser tree), and st_sorter_next streams the records in order. Input that
 * fits in one parcel never touches the disk.
 *
 * Memory bound: parcel_bytes, plus about 100 bytes of bookkeeping per run.
 * While filling, the parcel is split in as many slots as threads (2 by
 * default: one slot fills while a worker sorts and spills the other); each
 * record costs rec_size + 32 bytes of a slot (the record and two 16-byte sort
 * entries; the spare entry array doubles as the spill write buffer). While
 * merging, the slots are freed and at most parcel_bytes go to run buffers
 * (64 KiB to 8 MiB each); if there are more runs than parcel_bytes / 64 KiB
 * (or than 500, to stay within file descriptor limits), groups of runs are
 * first merged into longer runs (each pass reads and writes the data once
 * more).
 *
 * Order: cmp decides; records that compare equal come out in the order they
 * were added (the sort is stable). An optional prefix function returns a
 * normalised 64-bit key prefix: prefix(a) < prefix(b) must imply
 * cmp(a, b) < 0. Parcels are then radix-sorted on the prefix and only ties
 * go to cmp, and the merge compares prefixes first: most callback calls
 * disappear.
 *
 * A sorter is used by one thread (its worker is internal).
 *
 * Temporary files live in TMPDIR/comb-sort-PID@HOST-XXXXXX/run-N, removed as
 * the merge consumes them, on error and by st_sorter_free. A process killed
 * mid-sort leaves that directory behind, which the next sort on the host
 * removes once PID is gone. */
#ifndef COMB_STORE_SORT_H
#define COMB_STORE_SORT_H

#include <stddef.h>
#include <stdint.h>

#include "store/err.h"

/* Three-way comparison of two records (or keys): <0, 0, >0. */
typedef int (*st_cmp_fn)(const void *a, const void *b, void *ctx);
typedef uint64_t (*st_prefix_fn)(const void *rec, void *ctx);

#define ST_SORT_PARCEL_DEFAULT ((size_t)1 << 30)

typedef struct st_sort_opts {
    size_t parcel_bytes;  /* memory bound (see above); 0: ST_SORT_PARCEL_DEFAULT */
    const char *tmpdir;   /* where runs spill; NULL: $TMPDIR, else /tmp */
    st_prefix_fn prefix;  /* optional normalised key prefix, called with cmp's ctx */
    int threads;          /* 1: sort on the caller's thread; 2 (or 0): sort while filling */
} st_sort_opts;

typedef struct st_sort_stats {
    uint64_t records;      /* records added */
    uint64_t runs;         /* runs spilled by parcels (0: sorted in memory) */
    uint64_t merge_passes; /* extra passes over the data before the final merge */
} st_sort_stats;

/* A 64-bit key and the index of what it keys (a record, a row). */
typedef struct st_keyed {
    uint64_t key;
    uint32_t idx;
} st_keyed;

/* Sorts a[0 .. n) by key, stable (equal keys keep their order): LSD radix,
 * a byte a pass, passes where every key has the same byte skipped. spare:
 * room for n; returns whichever of a and spare holds the result. */
st_keyed *st_sort_keyed(st_keyed *a, st_keyed *spare, size_t n);

typedef struct st_sorter st_sorter;

/* opts may be NULL for the defaults. Returns NULL and fills err on failure
 * (bad arguments, parcel too small for rec_size, out of memory). */
st_sorter *st_sorter_new(size_t rec_size, st_cmp_fn cmp, void *ctx,
                         const st_sort_opts *opts, st_err *err);

/* Copies rec (rec_size bytes) in. 0, or -1 with err filled; after an error the
 * sorter only repeats it and must be freed. */
int st_sorter_add(st_sorter *s, const void *rec, st_err *err);

/* Ends the input: spills what remains and prepares the merge. 0 or -1. */
int st_sorter_finish(st_sorter *s, st_err *err);

/* The next record in order: 1 with *rec pointing at it (valid until the next
 * call), 0 at the end, -1 on error. */
int st_sorter_next(st_sorter *s, const void **rec, st_err *err);

/* After st_sorter_finish (while adding, the worker may be updating them). */
void st_sorter_stats(const st_sorter *s, st_sort_stats *stats);

/* Frees everything and removes any temporary files; NULL is allowed. */
void st_sorter_free(st_sorter *s);

#endif
