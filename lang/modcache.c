/* modcache: compiled modules kept on disk, looked up beside the source and in
 * the user's cache directory; see lang/modcache.h. */
#include "config.h"
#include "lang/modcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "vm/chunkio.h"

#define MAX_MAP (1u << 30)     /* no module, nor its cache, is bigger */

static const char *mode(void)
{
    const char *m = getenv("COMB_MODCACHE");
    return m ? m : "";
}

/* The user's cache directory into buf; false if there is none. */
static bool user_dir(char *buf, size_t size)
{
    const char *d = getenv("COMB_MODCACHE_DIR"), *x = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    int n;
    if (d && *d)
        n = snprintf(buf, size, "%s", d);
    else if (x && *x == '/')
        n = snprintf(buf, size, "%s/comb", x);
    else if (home && *home)
        n = snprintf(buf, size, "%s/.cache/comb", home);
    else
        return false;
    return n > 0 && (size_t)n < size;
}

/* The cache of path in the user's directory: DIR/NAME-HASH.combc. */
static bool user_file(const char *path, char *buf, size_t size)
{
    char dir[PATH_MAX], real[PATH_MAX];
    if (!user_dir(dir, sizeof dir))
        return false;
    const char *key = realpath(path, real) ? real : path;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && !strcmp(base + len - 5, ".comb"))
        len -= 5;
    int n = snprintf(buf, size, "%s/%.*s-%016llx.combc", dir, (int)len, base,
                     (unsigned long long)XXH3_64bits(key, strlen(key)));
    return n > 0 && (size_t)n < size;
}

/* DIR/NAME.combc for DIR/NAME.comb. */
static bool beside_file(const char *path, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%sc", path);
    return n > 5 && (size_t)n < size && !strcmp(buf + n - 6, ".combc");
}

/* The bytes of a regular file, mapped (pages are read as touched, a
 * hit of a big module costs few page faults); NULL if it cannot be. With
 * keep, *keep is the file left open (else closed). */
static const unsigned char *map_file(const char *path, size_t *len, int *keep)
{
    static const unsigned char empty[1];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    void *p = NULL;
    if (!fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= MAX_MAP) {
        *len = (size_t)st.st_size;
        p = !*len ? (void *)empty : mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
    }
    if (p && p != MAP_FAILED && keep)
        *keep = fd;
    else
        close(fd);
    return p == MAP_FAILED ? NULL : p;
}

static void unmap_file(const unsigned char *p, size_t len)
{
    if (len)
        munmap((void *)(uintptr_t)p, len);
}

typedef struct LoadJob {
    VModule *m;
    const unsigned char *p;
    size_t n;
    uint64_t key;
    int fd;
    VProto *main;
} LoadJob;

static void load_job(VM *vm, void *ud)
{
    LoadJob *j = ud;
    j->main = vm_chunk_load(vm, j->m, j->p, j->n, j->key, j->fd);
}

/* main from the cache file at file, or NULL. m keeps the file open: its
 * functions' source positions are read from it when an error wants one. */
static VProto *load(VM *vm, VModule *m, const char *file, uint64_t key)
{
    LoadJob j = {.m = m, .key = key, .fd = -1};
    if (!(j.p = map_file(file, &j.n, &j.fd)))
        return NULL;
    int rc = vm_protect(vm, load_job, &j);
    unmap_file(j.p, j.n);
    if (!j.main && j.fd >= 0)
        close(j.fd);
    if (rc)
        vm_rethrow(vm);
    return j.main;
}

VProto *lc_cache_get(VM *vm, VModule *m, const char *path)
{
    char file[PATH_MAX];
    size_t len;
    const unsigned char *src;
    if (!strcmp(mode(), "off") || !strcmp(mode(), "refresh") || !(src = map_file(path, &len, NULL)))
        return NULL;
    uint64_t key = XXH3_64bits(src, len);
    unmap_file(src, len);
    VProto *main = NULL;
    if (beside_file(path, file, sizeof file))
        main = load(vm, m, file, key);
    /* a failed load may have left names in m: only a fresh one is tried */
    if (!main && !m->nvars && user_file(path, file, sizeof file))
        main = load(vm, m, file, key);
    return main;
}

/* mkdir -p of dir (its last component too). */
static void make_dirs(char *dir)
{
    for (char *s = strchr(dir + 1, '/');; s = strchr(s + 1, '/')) {
        if (s)
            *s = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return;
        if (!s)
            return;
        *s = '/';
    }
}

/* bytes into file, whole or not at all: written aside, then renamed. */
static void write_file(const char *file, const char *bytes, size_t n)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", file, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", file);
        *strrchr(dir, '/') = '\0';
        make_dirs(dir);
        if (!(f = fopen(tmp, "wb")))
            return;
    }
    bool ok = fwrite(bytes, 1, n, f) == n;
    if (fclose(f) || !ok || rename(tmp, file))
        unlink(tmp);
}

void lc_cache_put(VM *vm, VModule *m, const char *path, const char *src, size_t len)
{
    char file[PATH_MAX];
    if (!strcmp(mode(), "off") || !user_file(path, file, sizeof file))
        return;
    VStr *s = vm_chunk_save(vm, m, XXH3_64bits(src, len));
    if (s)
        write_file(file, s->data, s->len);
}
