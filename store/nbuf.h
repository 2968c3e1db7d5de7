/* nbuf: n-buffered file I/O, the one path for all tagset file bytes.
 *
 * Gecko's lesson: every tool reads and writes tags through one module, with
 * large aligned buffers and a request always outstanding, so an I/O change
 * (O_DIRECT, buffer sizes, fault checks) reaches every tool at once.
 *
 * Reader: a thread fills N buffers (default 3 x 1 MiB) ahead of the caller,
 * sequentially from where the caller last asked; st_nbuf_get hands out byte
 * ranges, pointing into a buffer when the range lies in one and copying into
 * the caller's scratch when it spans two. Asking for a range outside the
 * buffered window restarts the stream there (a seek). st_nbuf_pread is a
 * single positioned read past the buffers, for headers and footers.
 *
 * Writer: st_nbuf_create opens "<path>.tmp-<pid>-<n>"; st_nbuf_write copies
 * into a buffer and hands full buffers to a thread that writes them while the
 * caller fills the next. st_nbuf_commit writes the rest, fsyncs the file,
 * renames it over path and fsyncs the directory, so the real name only ever
 * holds a complete file. On any error before the rename, and on
 * st_nbuf_abort, the temp file is unlinked and a previous file under path is
 * untouched. (If only the final directory fsync fails, the new file is in
 * place and complete but the rename may not survive a crash; commit reports
 * the error.)
 *
 * Faults: reads, writes and fsyncs here answer sysio's test hook
 * (st_sys_fail_after with ST_SYS_READ, _WRITE, _FSYNC), so one switch fails
 * the n-th call of a kind on every I/O path, counting all files and threads.
 *
 * Memory per open file: N x bufsize (plus 4 KiB of alignment slack).
 * O_DIRECT (opts.direct) is tried and dropped silently where the filesystem
 * refuses it (tmpfs), so callers need not know.
 *
 * Ownership: readers and writers belong to the caller, who ends them with
 * st_nbuf_close, st_nbuf_commit or st_nbuf_abort (each frees the object).
 * Pointers from st_nbuf_get stay valid until the next call on that reader.
 * One thread per reader or writer object; different objects are independent. */
#ifndef COMB_STORE_NBUF_H
#define COMB_STORE_NBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/err.h"

#define ST_NBUF_ALIGN 4096u /* O_DIRECT alignment of buffers, offsets, lengths */

typedef struct st_nbuf_opts {
    uint32_t nbufs;   /* buffers per open file, >= 2 (default 3) */
    uint32_t bufsize; /* bytes per buffer (default 1 MiB), rounded up to ST_NBUF_ALIGN */
    bool direct;      /* try O_DIRECT (default off) */
    bool cache;       /* readers: use the process's cache (store/cache.h; default off) */
} st_nbuf_opts;

void st_nbuf_opts_default(st_nbuf_opts *o);

typedef struct st_nbuf_stats {
    uint64_t reads;      /* read requests issued (buffer fills and preads) */
    uint64_t bytes_read; /* bytes they returned */
    uint64_t seeks;      /* times the stream restarted away from its position */
    bool direct;         /* O_DIRECT is in effect */
} st_nbuf_stats;

/* What identifies a file's contents: comb replaces files, never rewrites them.
 * The change time too, because a freed inode is reused at once and copying
 * tools (cp -p, rsync -a, tar) set size and mtime, but nothing sets ctime. */
typedef struct st_file_id {
    uint64_t dev, ino, size, mtime_ns, ctime_ns;
} st_file_id;

struct stat;
/* The identity of the file st describes (from stat or fstat). */
void st_file_id_of(const struct stat *st, st_file_id *out);
bool st_file_id_eq(const st_file_id *a, const st_file_id *b);

typedef struct st_nbuf_reader st_nbuf_reader;
typedef struct st_nbuf_writer st_nbuf_writer;

st_nbuf_reader *st_nbuf_open(const char *path, const st_nbuf_opts *o, st_err *err);
uint64_t st_nbuf_size(const st_nbuf_reader *r);
/* The open file's identity, from the fstat of the open. */
void st_nbuf_id(const st_nbuf_reader *r, st_file_id *out);
/* Bytes [off, off + n) of the file, or NULL with err set (a range past the
 * end is ST_ECORRUPT). scratch must hold n bytes; it is used only when the
 * range spans buffers. */
const void *st_nbuf_get(st_nbuf_reader *r, uint64_t off, size_t n, void *scratch, st_err *err);
/* Asks the kernel to start reading [off, off + n) into the page cache and
 * returns at once: a cold reader names the ranges it will read next so the
 * device serves them together, not one wait each. Advice only (nothing with
 * O_DIRECT, which bypasses that cache); no error. */
void st_nbuf_willneed(st_nbuf_reader *r, uint64_t off, uint64_t n);
/* Whether the byte at off is in the page cache now (a read that would not
 * wait; false where that cannot be asked): a reader whose next bytes are
 * there spares the advice's system calls. Reads nothing the caller sees. */
bool st_nbuf_resident(st_nbuf_reader *r, uint64_t off);
/* Reads [off, off + n) into dst with one positioned read, outside the buffers. */
int st_nbuf_pread(st_nbuf_reader *r, uint64_t off, size_t n, void *dst, st_err *err);
void st_nbuf_stats_get(st_nbuf_reader *r, st_nbuf_stats *out);
/* Stops the read-ahead thread and frees its buffers, keeping the file open:
 * an idle reader kept for later costs a descriptor, not a thread. Reading
 * again starts them anew. */
void st_nbuf_idle(st_nbuf_reader *r);
void st_nbuf_close(st_nbuf_reader *r);

st_nbuf_writer *st_nbuf_create(const char *path, const st_nbuf_opts *o, st_err *err);
int st_nbuf_write(st_nbuf_writer *w, const void *p, size_t n, st_err *err);
/* Bytes accepted so far: the file offset of the next byte written. */
uint64_t st_nbuf_tell(const st_nbuf_writer *w);
int st_nbuf_commit(st_nbuf_writer *w, st_err *err);
void st_nbuf_abort(st_nbuf_writer *w);

#endif
