/* lock: byte-range locks on a datastore's LOCK and READERS files.
 *
 * Locks are open-file-description locks (Linux F_OFD_*): they belong to an
 * open file, not a process, so two handles in one process exclude each other
 * like two processes do, and the kernel drops them when the holder dies
 * (a writer killed mid-commit leaves no stale lock). Elsewhere the classic
 * per-process fcntl locks stand in, which do not exclude within a process.
 *
 * Each byte of a lock file is an independent lock; the datastore gives the
 * bytes their meaning (see datastore.c). */
#ifndef COMB_STORE_LOCK_H
#define COMB_STORE_LOCK_H

#include <stdint.h>

#include "store/err.h"

typedef struct st_lockfile {
    int fd;
    const char *path; /* for messages; the caller keeps it alive */
} st_lockfile;

/* Opens path (read-write, or read-only if rw is 0: enough for shared locks
 * and probes). */
int st_lock_open(st_lockfile *lf, const char *path, int rw, st_err *err);
void st_lock_close(st_lockfile *lf);

/* Takes byte `at`, exclusive or shared. try: 0 taken, 1 held by someone else
 * (a conflicting lock), -1 error. wait: blocks until taken; 0 or -1. */
int st_lock_try(st_lockfile *lf, uint64_t at, int exclusive, st_err *err);
int st_lock_wait(st_lockfile *lf, uint64_t at, int exclusive, st_err *err);
void st_lock_release(st_lockfile *lf, uint64_t at);

/* Does anyone but this open file hold a lock on a byte in [from, from + n)?
 * 1 yes, 0 no, -1 error. */
int st_lock_held(st_lockfile *lf, uint64_t from, uint64_t n, st_err *err);

#endif
