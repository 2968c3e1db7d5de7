/* watch: the store's commit counter, DIR/COMMITS, so that a session keeping
 * a snapshot can tell without a system call that no commit came since.
 *
 * A commit adds one to the counter before it replaces MANIFEST and again
 * after, under the commit lock. A reader reads the counter, then MANIFEST;
 * while the counter (mapped) reads the same, MANIFEST is the one it read:
 * a commit it raced saw the first add or makes the second. A store made
 * before the counter existed gets it at its next commit; until then its
 * readers check MANIFEST by stat. The file holds a u64, little-endian. */
#ifndef COMB_STORE_WATCH_H
#define COMB_STORE_WATCH_H

#include <stdint.h>

#include "store/err.h"

typedef struct st_watch {
    const uint64_t *map;    /* DIR/COMMITS, mapped; NULL: watching nothing */
} st_watch;

/* The counter of the store in dir, read from the file: 0, or -1 if the
 * store has none (yet) or it cannot be read. */
int st_watch_peek(const char *dir, uint64_t *out);
/* Maps it: 0, or -1 as for peek (w then watches nothing). */
int st_watch_open(st_watch *w, const char *dir);
/* The counter now, through the mapping (w must watch something). */
uint64_t st_watch_read(const st_watch *w);
void st_watch_close(st_watch *w);
/* Adds one (creating the file at 1 if the store has none): for a commit,
 * under its lock. */
int st_watch_bump(const char *dir, st_err *err);

#endif
