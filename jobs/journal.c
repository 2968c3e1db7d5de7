/* journal: append-only checksummed records, replay, snapshot compaction. */
#include "config.h"
#include "jobs/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "store/mem.h"
#include "jobs/wire.h"

#define HEADER "comb-jobs-journal 1"
#define SUMLEN (JNL_SEAL_LEN - 1) /* " #" + 16 hex digits */

struct journal {
    char *path, *tmp, *dir;
    int fd;
    jw_buf pend; /* framed records not yet written */
    jw_buf snap; /* the new journal while a snapshot is being built */
    int in_snap;
    int unsynced; /* written but not yet fdatasynced */
    size_t records;
    char err[512];
};

static void seterr(journal *j, const char *what, const char *file)
{
    snprintf(j->err, sizeof j->err, "journal %s: %s: %s", file, what, strerror(errno));
}

void jnl_seal(const char *rec, size_t len, char *out)
{
    uint64_t sum = (uint64_t)XXH3_64bits(rec, len);
    *out++ = ' ';
    *out++ = '#';
    for (int shift = 60; shift >= 0; shift -= 4)
        *out++ = "0123456789abcdef"[(sum >> shift) & 15];
    *out = '\n';
}

static int frame(jw_buf *b, const char *rec, size_t len)
{
    char seal[JNL_SEAL_LEN];
    size_t old = b->len;
    jnl_seal(rec, len, seal);
    if (jw_put(b, rec, len) < 0 || jw_put(b, seal, sizeof seal) < 0) {
        b->len = old;
        return -1;
    }
    return 0;
}

int jnl_append(journal *j, const char *rec, size_t len)
{
    if (frame(j->in_snap ? &j->snap : &j->pend, rec, len) < 0)
        return -1;
    j->records++;
    return 0;
}

int jnl_flush(journal *j)
{
    if (!j->pend.len)
        return 0;
    if (jw_write_all(j->fd, j->pend.p, j->pend.len) < 0) {
        seterr(j, "write", j->path);
        return -1;
    }
    jw_clear(&j->pend);
    j->unsynced = 1;
    return 0;
}

int jnl_sync(journal *j)
{
    if (jnl_flush(j) < 0)
        return -1;
    if (!j->unsynced)
        return 0;
    if (fdatasync(j->fd) < 0) {
        seterr(j, "fdatasync", j->path);
        return -1;
    }
    j->unsynced = 0;
    return 0;
}

static int sync_dir(journal *j)
{
    int fd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) < 0) {
        seterr(j, "fsync", j->dir);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* Writes the framed records in b as the whole new file at j->tmp, durably,
 * then renames it over j->path. */
static int replace_file(journal *j, const jw_buf *b)
{
    int fd = open(j->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        seterr(j, "create", j->tmp);
        return -1;
    }
    if (jw_write_all(fd, b->p, b->len) < 0 || fdatasync(fd) < 0) {
        seterr(j, "write", j->tmp);
        close(fd);
        unlink(j->tmp);
        return -1;
    }
    close(fd);
    if (rename(j->tmp, j->path) < 0) {
        seterr(j, "rename", j->tmp);
        unlink(j->tmp);
        return -1;
    }
    return sync_dir(j);
}

static int reopen(journal *j)
{
    int fd = open(j->path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) {
        seterr(j, "open", j->path);
        return -1;
    }
    if (j->fd >= 0)
        close(j->fd);
    j->fd = fd;
    return 0;
}

int jnl_snapshot_begin(journal *j)
{
    if (jnl_sync(j) < 0)
        return -1;
    jw_clear(&j->snap);
    if (frame(&j->snap, HEADER, strlen(HEADER)) < 0) {
        snprintf(j->err, sizeof j->err, "journal %s: out of memory", j->path);
        return -1;
    }
    j->in_snap = 1;
    j->records = 0;
    return 0;
}

int jnl_snapshot_commit(journal *j)
{
    j->in_snap = 0;
    int rc = replace_file(j, &j->snap) < 0 || reopen(j) < 0 ? -1 : 0;
    jw_free(&j->snap);
    return rc;
}

void jnl_snapshot_abort(journal *j)
{
    j->in_snap = 0;
    jw_free(&j->snap);
}

size_t jnl_records(const journal *j) { return j->records; }
int jnl_dirty(const journal *j) { return j->unsynced || j->pend.len > 0; }
const char *jnl_error(const journal *j) { return j->err; }

int jnl_line_ok(char *line, size_t len)
{
    char seal[JNL_SEAL_LEN];
    if (len < SUMLEN)
        return 0;
    jnl_seal(line, len - SUMLEN, seal);
    if (memcmp(seal, line + len - SUMLEN, SUMLEN) != 0)
        return 0;
    line[len - SUMLEN] = '\0';
    return 1;
}

/* True when buf is a strict prefix of the header record: its write was torn. */
static int is_torn_header(const char *buf, size_t size)
{
    jw_buf h = {0};
    int torn = frame(&h, HEADER, strlen(HEADER)) == 0 && size < h.len && !memcmp(buf, h.p, size);
    jw_free(&h);
    return torn;
}

/* Replays buf[0..size). Sets *good to the length of the intact prefix; a
 * damaged last record is left out of it, a damaged earlier one is an error. */
static int replay(journal *j, char *buf, size_t size, size_t *good, jnl_apply_fn apply,
                  void *ctx, char *err, size_t errlen)
{
    size_t off = 0, n = 0;
    while (off < size) {
        char *line = buf + off;
        char *nl = memchr(line, '\n', size - off);
        size_t len = nl ? (size_t)(nl - line) : size - off;
        int ok = nl && jnl_line_ok(line, len);
        if (n == 0 && !(ok ? !strcmp(line, HEADER) : is_torn_header(buf, size))) {
            snprintf(err, errlen, "journal %s: not a comb jobs journal", j->path);
            return -1;
        }
        if (!ok) {
            if (!nl || off + len + 1 == size)
                break; /* the torn last record */
            snprintf(err, errlen, "journal %s: damaged record at offset %zu (record %zu)",
                     j->path, off, n + 1);
            return -1;
        }
        if (n > 0 && apply(ctx, line, err, errlen) < 0) {
            size_t l = strlen(err);
            snprintf(err + l, errlen - l, " (journal %s, offset %zu)", j->path, off);
            return -1;
        }
        n++;
        off += len + 1;
    }
    *good = off;
    j->records = n ? n - 1 : 0;
    return 0;
}

/* Replays the existing file; *good is the length kept (0: only a torn header). */
static int load(journal *j, jnl_apply_fn apply, void *ctx, size_t *goodp, char *note, size_t notelen,
                char *err, size_t errlen)
{
    int fd = open(j->path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "journal %s: open: %s", j->path, strerror(errno));
        return -1;
    }
    struct stat st;
    char *buf = NULL;
    size_t size = 0, good = 0;
    int rc = -1;
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "journal %s: stat: %s", j->path, strerror(errno));
        goto out;
    }
    size = (size_t)st.st_size;
    buf = mem_alloc(size + 1);
    if (!buf) {
        snprintf(err, errlen, "journal %s: out of memory reading %zu bytes", j->path, size);
        goto out;
    }
    for (size_t got = 0; got < size;) {
        ssize_t r = pread(fd, buf + got, size - got, (off_t)got);
        if (r <= 0) {
            snprintf(err, errlen, "journal %s: read: %s", j->path, r ? strerror(errno) : "short");
            goto out;
        }
        got += (size_t)r;
    }
    buf[size] = '\0';
    if (replay(j, buf, size, &good, apply, ctx, err, errlen) < 0)
        goto out;
    if (good < size) {
        snprintf(note, notelen,
                 "journal %s: torn last record at offset %zu (%zu bytes) truncated", j->path,
                 good, size - good);
        if (ftruncate(fd, (off_t)good) < 0 || fdatasync(fd) < 0) {
            snprintf(err, errlen, "journal %s: truncate: %s", j->path, strerror(errno));
            goto out;
        }
    }
    *goodp = good;
    rc = 0;
out:
    mem_free(buf, size + 1);
    close(fd);
    return rc;
}

/* A new string of the first n bytes of a, then b. */
static char *dup_with(const char *a, size_t n, const char *b)
{
    size_t lb = strlen(b);
    char *s = mem_alloc(n + lb + 1);
    if (s) {
        memcpy(s, a, n);
        memcpy(s + n, b, lb + 1);
    }
    return s;
}

void jnl_close(journal *j)
{
    if (!j)
        return;
    if (j->fd >= 0)
        close(j->fd);
    jw_free(&j->pend);
    jw_free(&j->snap);
    if (j->path)
        mem_free(j->path, strlen(j->path) + 1);
    if (j->tmp)
        mem_free(j->tmp, strlen(j->tmp) + 1);
    if (j->dir)
        mem_free(j->dir, strlen(j->dir) + 1);
    mem_free(j, sizeof *j);
}

journal *jnl_open(const char *path, jnl_apply_fn apply, void *ctx, char *note, size_t notelen,
              char *err, size_t errlen)
{
    note[0] = '\0';
    journal *j = mem_calloc(1, sizeof *j);
    const char *slash = strrchr(path, '/');
    if (!j || !(j->path = mem_strdup(path)) || !(j->tmp = dup_with(path, strlen(path), ".tmp")) ||
        !(j->dir = slash ? dup_with(path, (size_t)(slash - path) + (slash == path), "")
                         : mem_strdup("."))) {
        snprintf(err, errlen, "journal %s: out of memory", path);
        goto fail;
    }
    j->fd = -1;
    size_t good = 0;
    if (access(path, F_OK) == 0 &&
        load(j, apply, ctx, &good, note, notelen, err, errlen) < 0)
        goto fail;
    if (good == 0) { /* a new journal, or one whose header never reached the disk */
        jw_buf b = {0};
        int rc = frame(&b, HEADER, strlen(HEADER));
        rc = rc < 0 ? -1 : replace_file(j, &b);
        jw_free(&b);
        if (rc < 0) {
            snprintf(err, errlen, "%s", j->err[0] ? j->err : "journal: out of memory");
            goto fail;
        }
    }
    if (reopen(j) < 0) {
        snprintf(err, errlen, "%s", j->err);
        goto fail;
    }
    return j;
fail:
    jnl_close(j);
    return NULL;
}
