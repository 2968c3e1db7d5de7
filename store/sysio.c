/* sysio: checked system calls for store files, with fault injection. */
#include "config.h"
#include "store/sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/mem.h"

static atomic_ulong countdown[ST_SYS_NOPS];
static atomic_int fail_errno[ST_SYS_NOPS];

void st_sys_fail_after(st_sys_op op, unsigned long n, int errnum)
{
    atomic_store(&fail_errno[op], errnum);
    atomic_store(&countdown[op], n);
}

void st_sys_fail_reset(void)
{
    for (int op = 0; op < ST_SYS_NOPS; op++)
        atomic_store(&countdown[op], 0);
}

int st_sys_err(st_err *err, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = errnum == ENOMEM ? ST_ENOMEM : ST_EIO;
    st_err_suffix(err, ": %s", strerror(errnum));
    return -1;
}

int st_sys_injected(st_sys_op op)
{
    unsigned long n = atomic_load(&countdown[op]);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&countdown[op], &n, n - 1))
            return n == 1 ? atomic_load(&fail_errno[op]) : 0;
    }
    return 0;
}

int st_sys_open(const char *path, int flags, mode_t mode, st_err *err)
{
    int e = st_sys_injected(ST_SYS_OPEN);
    if (e)
        return st_sys_err(err, e, "open %s", path);
    int fd;
    do
        fd = open(path, flags | O_CLOEXEC, mode);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return st_sys_err(err, errno, "open %s", path);
    return fd;
}

int st_sys_write(int fd, const void *buf, size_t n, const char *path, st_err *err)
{
    const char *p = buf;
    while (n > 0) {
        int e = st_sys_injected(ST_SYS_WRITE);
        if (e)
            return st_sys_err(err, e, "write %s", path);
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return st_sys_err(err, errno, "write %s", path);
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

ssize_t st_sys_read(int fd, void *buf, size_t n, const char *path, st_err *err)
{
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        int e = st_sys_injected(ST_SYS_READ);
        if (e)
            return st_sys_err(err, e, "read %s", path);
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return st_sys_err(err, errno, "read %s", path);
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int st_sys_fsync(int fd, const char *path, st_err *err)
{
    int e = st_sys_injected(ST_SYS_FSYNC);
    if (e)
        return st_sys_err(err, e, "fsync %s", path);
    if (fsync(fd) < 0)
        return st_sys_err(err, errno, "fsync %s", path);
    return 0;
}

int st_sys_fsync_dir(const char *dir, st_err *err)
{
    int fd = st_sys_open(dir, O_RDONLY | O_DIRECTORY, 0, err);
    if (fd < 0)
        return -1;
    int rc = st_sys_fsync(fd, dir, err);
    close(fd); /* read-only: nothing to report at close */
    return rc;
}

int st_sys_rename(const char *from, const char *to, st_err *err)
{
    int e = st_sys_injected(ST_SYS_RENAME);
    if (e)
        return st_sys_err(err, e, "rename %s to %s", from, to);
    if (rename(from, to) < 0)
        return st_sys_err(err, errno, "rename %s to %s", from, to);
    return 0;
}

int st_sys_close(int fd, const char *path, st_err *err)
{
    if (close(fd) < 0 && errno != EINTR)
        return st_sys_err(err, errno, "close %s", path);
    return 0;
}

/* The directory holding path ("." for a bare name), into dir[PATH_MAX]. */
static int dir_of(const char *path, char *dir, st_err *err)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        strcpy(dir, ".");
        return 0;
    }
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= PATH_MAX)
        return st_sys_err(err, ENAMETOOLONG, "%s", path);
    memcpy(dir, path, n);
    dir[n] = '\0';
    return 0;
}

int st_sys_fsync_parent(const char *path, st_err *err)
{
    char dir[PATH_MAX];
    if (dir_of(path, dir, err) < 0)
        return -1;
    return st_sys_fsync_dir(dir, err);
}

int st_sys_replace(const char *path, const void *buf, size_t n, st_err *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return st_sys_err(err, ENAMETOOLONG, "%s", path);
    int fd = st_sys_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644, err);
    if (fd < 0)
        return -1;
    if (st_sys_write(fd, buf, n, tmp, err) < 0 || st_sys_fsync(fd, tmp, err) < 0) {
        close(fd);
        goto fail;
    }
    if (st_sys_close(fd, tmp, err) < 0 || st_sys_rename(tmp, path, err) < 0)
        goto fail;
    return st_sys_fsync_parent(path, err) < 0 ? -2 : 0;
fail:
    unlink(tmp);
    return -1;
}

int st_sys_read_all(int fd, const char *path, size_t max, char **buf, size_t *n, st_err *err)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0)
        return st_sys_err(err, errno, "stat %s", path);
    if (!S_ISREG(sb.st_mode) || (unsigned long long)sb.st_size > max)
        return st_err_set(err, ST_EINPUT, "%s: not a regular file of at most %zu bytes", path,
                          max);
    size_t size = (size_t)sb.st_size;
    char *p = mem_alloc(size + 1);
    if (!p)
        return st_err_nomem(err, path);
    ssize_t got = lseek(fd, 0, SEEK_SET) < 0 ? st_sys_err(err, errno, "seek %s", path)
                                             : st_sys_read(fd, p, size, path, err);
    if (got >= 0 && (size_t)got != size)
        got = st_err_set(err, ST_EIO, "%s: file changed size while being read", path);
    if (got < 0) {
        mem_free(p, size + 1);
        return -1;
    }
    p[size] = '\0';
    *buf = p;
    *n = size;
    return 0;
}

int st_sys_slurp(const char *path, size_t max, char **buf, size_t *n, st_err *err)
{
    int fd = st_sys_open(path, O_RDONLY, 0, err);
    if (fd < 0)
        return -1;
    int rc = st_sys_read_all(fd, path, max, buf, n, err);
    close(fd);
    return rc;
}
