/* lock: byte-range open-file-description locks for datastores. */
#include "config.h"
#include "store/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "store/sysio.h"

#ifdef F_OFD_SETLK
#define LK_SET F_OFD_SETLK
#define LK_SETW F_OFD_SETLKW
#define LK_GET F_OFD_GETLK
#else
#define LK_SET F_SETLK
#define LK_SETW F_SETLKW
#define LK_GET F_GETLK
#endif

int st_lock_open(st_lockfile *lf, const char *path, int rw, st_err *err)
{
    lf->path = path;
    lf->fd = st_sys_open(path, rw ? O_RDWR : O_RDONLY, 0, err);
    return lf->fd < 0 ? -1 : 0;
}

void st_lock_close(st_lockfile *lf)
{
    if (lf->fd >= 0)
        close(lf->fd); /* drops every lock held through it */
    lf->fd = -1;
}

/* A flock for bytes [from, from + n); n == 0 would mean "to the end". */
static struct flock range(short type, uint64_t from, uint64_t n)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl); /* OFD locks require l_pid == 0 */
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)from;
    fl.l_len = (off_t)n;
    return fl;
}

static int set(st_lockfile *lf, int cmd, short type, uint64_t at, st_err *err)
{
    struct flock fl = range(type, at, 1);
    int rc;
    do
        rc = fcntl(lf->fd, cmd, &fl);
    while (rc < 0 && errno == EINTR);
    if (rc == 0)
        return 0;
    if (cmd == LK_SET && (errno == EAGAIN || errno == EACCES))
        return 1;
    return st_sys_err(err, errno, "lock byte %llu of %s", (unsigned long long)at, lf->path);
}

int st_lock_try(st_lockfile *lf, uint64_t at, int exclusive, st_err *err)
{
    return set(lf, LK_SET, exclusive ? F_WRLCK : F_RDLCK, at, err);
}

int st_lock_wait(st_lockfile *lf, uint64_t at, int exclusive, st_err *err)
{
    return set(lf, LK_SETW, exclusive ? F_WRLCK : F_RDLCK, at, err);
}

void st_lock_release(st_lockfile *lf, uint64_t at)
{
    st_err ignored; /* unlocking a byte we hold cannot fail */
    set(lf, LK_SET, F_UNLCK, at, &ignored);
}

int st_lock_held(st_lockfile *lf, uint64_t from, uint64_t n, st_err *err)
{
    if (n == 0)
        return 0;
    /* An exclusive probe conflicts with any lock, shared or not. */
    struct flock fl = range(F_WRLCK, from, n);
    if (fcntl(lf->fd, LK_GET, &fl) < 0)
        return st_sys_err(err, errno, "probe locks of %s", lf->path);
    return fl.l_type != F_UNLCK;
}
