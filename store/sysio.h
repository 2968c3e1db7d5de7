/* sysio: checked system calls for store files, with fault injection for tests.
 *
 * Every failure fills the st_err (code ST_EIO) with the call, the file's path
 * and strerror, so a message always says which file failed. Tests can make the n-th call of
 * one kind fail with a chosen errno (EIO, ENOSPC) to prove that an error at any
 * step loses nothing; the counters are atomic because sorts spill from a
 * worker thread. */
#ifndef COMB_STORE_SYSIO_H
#define COMB_STORE_SYSIO_H

#include <stddef.h>
#include <sys/types.h>

#include "store/err.h"

typedef enum st_sys_op {
    ST_SYS_OPEN, ST_SYS_READ, ST_SYS_WRITE, ST_SYS_FSYNC, ST_SYS_RENAME, ST_SYS_NOPS
} st_sys_op;

/* Test hook: the n-th call of op from now fails with errnum (n == 0 turns the
 * hook for op off); st_sys_fail_reset turns every hook off. */
void st_sys_fail_after(st_sys_op op, unsigned long n, int errnum);
void st_sys_fail_reset(void);
/* The errno the hook fakes for this call of op, or 0 for the real call; for
 * I/O paths that make their own system calls (store/nbuf), so one hook
 * reaches them all. Each call counts as one call of op. */
int st_sys_injected(st_sys_op op);

/* Fills err for a failed system call: ST_ENOMEM for ENOMEM, else ST_EIO, with
 * ": strerror(errnum)" after the formatted text. Returns -1. */
int st_sys_err(st_err *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* open(2); returns the fd or -1. */
int st_sys_open(const char *path, int flags, mode_t mode, st_err *err);
/* Writes all n bytes (retrying short writes and EINTR); 0 or -1. */
int st_sys_write(int fd, const void *buf, size_t n, const char *path, st_err *err);
/* Reads up to n bytes, fewer only at end of file; returns the count or -1. */
ssize_t st_sys_read(int fd, void *buf, size_t n, const char *path, st_err *err);
int st_sys_fsync(int fd, const char *path, st_err *err);
/* Makes a directory's entries (creates, renames, unlinks) durable; _parent
 * does it for the directory holding path. */
int st_sys_fsync_dir(const char *dir, st_err *err);
int st_sys_fsync_parent(const char *path, st_err *err);
int st_sys_rename(const char *from, const char *to, st_err *err);
/* close(2), reporting the error some file systems only give at close. */
int st_sys_close(int fd, const char *path, st_err *err);

/* Replaces path atomically with buf: writes path.tmp, fsyncs, renames over
 * path, fsyncs the directory. Returns 0; -1 if it failed before the rename
 * (path is untouched, the .tmp removed); -2 if only the directory fsync
 * failed (path holds the new bytes, but the rename may not survive a crash). */
int st_sys_replace(const char *path, const void *buf, size_t n, st_err *err);

/* Reads a whole file of at most max bytes into a mem_alloc'd buffer (with a
 * NUL after the data, not counted in *n). The caller frees *buf with size
 * *n + 1. read_all reads from an open fd (from its start), slurp by name. */
int st_sys_read_all(int fd, const char *path, size_t max, char **buf, size_t *n, st_err *err);
int st_sys_slurp(const char *path, size_t max, char **buf, size_t *n, st_err *err);

#endif
