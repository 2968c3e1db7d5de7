/* watch: the store's commit counter (DIR/COMMITS); see watch.h. */
#include "config.h"
#include "store/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/bytes.h"
#include "store/sysio.h"

static int counter_path(const char *dir, char *path)
{
    return snprintf(path, PATH_MAX, "%s/COMMITS", dir) < PATH_MAX ? 0 : -1;
}

int st_watch_peek(const char *dir, uint64_t *out)
{
    char path[PATH_MAX];
    unsigned char b[8];
    int fd = counter_path(dir, path) == 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return -1;
    ssize_t n = pread(fd, b, sizeof b, 0);
    close(fd);
    if (n != (ssize_t)sizeof b)
        return -1;
    *out = st_get64(b);
    return 0;
}

int st_watch_open(st_watch *w, const char *dir)
{
    char path[PATH_MAX];
    struct stat sb;
    w->map = NULL;
    int fd = counter_path(dir, path) == 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return -1;
    /* A shorter file would fault on the read through the map. */
    void *p = fstat(fd, &sb) == 0 && sb.st_size >= 8
                  ? mmap(NULL, 8, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    w->map = p;
    return 0;
}

uint64_t st_watch_read(const st_watch *w)
{
    unsigned char b[8];
    uint64_t v = __atomic_load_n(w->map, __ATOMIC_ACQUIRE);
    memcpy(b, &v, 8);
    return st_get64(b);
}

void st_watch_close(st_watch *w)
{
    if (w->map)
        munmap((void *)w->map, 8);
    w->map = NULL;
}

int st_watch_bump(const char *dir, st_err *err)
{
    char path[PATH_MAX];
    unsigned char b[8] = {0};
    if (counter_path(dir, path) < 0)
        return st_err_set(err, ST_EINPUT, "%s: path too long", dir);
    int fd = st_sys_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644, err);
    if (fd < 0)
        return -1;
    ssize_t n = st_sys_read(fd, b, sizeof b, path, err);
    int rc = n < 0 ? -1 : 0;
    if (rc == 0) {
        st_put64(b, (n == (ssize_t)sizeof b ? st_get64(b) : 0) + 1);
        rc = lseek(fd, 0, SEEK_SET) < 0 ? st_sys_err(err, errno, "seek %s", path)
                                        : st_sys_write(fd, b, sizeof b, path, err);
    }
    if (st_sys_close(fd, path, rc == 0 ? err : &(st_err){0}) < 0)
        rc = -1;
    return rc;
}
