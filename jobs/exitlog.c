/* exitlog: the shared, append-only log of how runs ended, in generations. */
#include "config.h"
#include "jobs/exitlog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/mem.h"
#include "jobs/journal.h"

#define CHUNK 65536 /* bytes read at a time; records are a few hundred at most */

struct gen {
    int n, fd;
    off_t off;  /* read up to here: the start of the first incomplete line */
    long holds; /* runs that write to it and have not ended */
};

struct exitlog {
    char *dir;
    size_t rotate;
    struct gen *g; /* oldest first; the last is the current one */
    size_t ng, capg;
    long unknown; /* adopted runs, which may write to any generation */
    char *chunk;
    char cur[PATH_MAX]; /* the current generation's path */
    char err[PATH_MAX + 128];
};

static int fail(exitlog *x, const char *what, int n)
{
    snprintf(x->err, sizeof x->err, "exit log %s/%d: %s: %s", x->dir, n, what, strerror(errno));
    return -1;
}

static int add_gen(exitlog *x, int n, int fd)
{
    if (x->ng == x->capg) {
        size_t cap = x->capg ? 2 * x->capg : 4;
        struct gen *g = mem_realloc(x->g, x->capg * sizeof *g, cap * sizeof *g);
        if (!g) {
            snprintf(x->err, sizeof x->err, "exit log %s: out of memory", x->dir);
            return -1;
        }
        x->g = g;
        x->capg = cap;
    }
    x->g[x->ng++] = (struct gen){n, fd, 0, 0};
    return 0;
}

static int open_gen(exitlog *x, int n, int create)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%d", x->dir, n);
    int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), 0600);
    if (fd < 0)
        return fail(x, create ? "create" : "open", n);
    if (add_gen(x, n, fd) < 0) {
        close(fd);
        return -1;
    }
    return 0;
}

/* A new current generation, its name made durable: a run's fdatasync
 * covers the file's data, not the directory entry that finds it. */
static int new_gen(exitlog *x)
{
    int n = x->ng ? x->g[x->ng - 1].n + 1 : 1;
    if (open_gen(x, n, 1) < 0)
        return -1;
    snprintf(x->cur, sizeof x->cur, "%s/%d", x->dir, n);
    int dfd = open(x->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = dfd < 0 || fsync(dfd) < 0 ? fail(x, "fsync the directory", n) : 0;
    if (dfd >= 0)
        close(dfd);
    return rc;
}

static int gen_number(const char *name)
{
    char *end;
    errno = 0;
    long n = strtol(name, &end, 10);
    return name[0] >= '1' && name[0] <= '9' && !*end && !errno && n < INT_MAX ? (int)n : 0;
}

static int by_number(const void *a, const void *b)
{
    const struct gen *x = a, *y = b;
    return (x->n > y->n) - (x->n < y->n);
}

/* Opens the generations a previous dispatcher left, oldest first. */
static int scan(exitlog *x)
{
    DIR *d = opendir(x->dir);
    if (!d)
        return fail(x, "open the directory", 0);
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        int n = gen_number(e->d_name);
        if (n > 0)
            rc = open_gen(x, n, 0);
    }
    closedir(d);
    if (x->ng > 1)
        qsort(x->g, x->ng, sizeof *x->g, by_number);
    return rc;
}

exitlog *xl_open(const char *dir, size_t rotate, char *err, size_t errlen)
{
    exitlog *x = mem_calloc(1, sizeof *x);
    if (!x || !(x->dir = mem_strdup(dir)) || !(x->chunk = mem_alloc(CHUNK))) {
        snprintf(err, errlen, "exit log %s: out of memory", dir);
        xl_close(x);
        return NULL;
    }
    x->rotate = rotate;
    if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || scan(x) < 0 || new_gen(x) < 0) {
        if (!x->err[0])
            fail(x, "create the directory", 0);
        snprintf(err, errlen, "%s", x->err);
        xl_close(x);
        return NULL;
    }
    return x;
}

void xl_close(exitlog *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->ng; i++)
        close(x->g[i].fd);
    mem_free(x->g, x->capg * sizeof *x->g);
    mem_free(x->chunk, CHUNK);
    if (x->dir)
        mem_free(x->dir, strlen(x->dir) + 1);
    mem_free(x, sizeof *x);
}

const char *xl_path(const exitlog *x) { return x->cur; }
int xl_gen(const exitlog *x) { return x->g[x->ng - 1].n; }
const char *xl_error(const exitlog *x) { return x->err; }

static struct gen *find_gen(exitlog *x, int n)
{
    for (size_t i = 0; i < x->ng; i++)
        if (x->g[i].n == n)
            return &x->g[i];
    return NULL;
}

void xl_hold(exitlog *x, int gen)
{
    struct gen *g = gen == XL_UNKNOWN ? NULL : find_gen(x, gen);
    if (g)
        g->holds++;
    else
        x->unknown++;
}

void xl_release(exitlog *x, int gen)
{
    struct gen *g = gen == XL_UNKNOWN ? NULL : find_gen(x, gen);
    if (g)
        g->holds--;
    else
        x->unknown--;
}

/* One line (without its newline): a checked record handed to fn, or 0. */
static int parse(char *line, size_t len, xl_record_fn fn, void *ctx)
{
    if (!jnl_line_ok(line, len))
        return 0;
    char *sp = strchr(line, ' '), *end;
    if (!sp)
        return 0;
    *sp = '\0';
    long run = strtol(sp + 1, &end, 10);
    if (*end != ' ')
        return 0;
    int began = !strcmp(end + 1, "began");
    long status = began ? XL_BEGAN : strtol(end + 1, &end, 10);
    if ((!began && (*end || status < 0)) || run <= 0 || run > INT_MAX || status > INT_MAX)
        return 0;
    fn(ctx, line, (int)run, (int)status);
    return 1;
}

static long read_gen(exitlog *x, struct gen *g, xl_record_fn fn, void *ctx)
{
    long bad = 0;
    for (;;) {
        ssize_t r = pread(g->fd, x->chunk, CHUNK, g->off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return fail(x, "read", g->n);
        size_t used = 0;
        for (char *nl; (nl = memchr(x->chunk + used, '\n', (size_t)r - used));) {
            size_t len = (size_t)(nl - (x->chunk + used));
            bad += !parse(x->chunk + used, len, fn, ctx);
            used += len + 1;
        }
        if (used == 0 && r == CHUNK) { /* no line end in a whole chunk: garbage */
            used = CHUNK;
            bad++;
        }
        g->off += (off_t)used;
        if (r < CHUNK)
            return bad; /* the end, or an incomplete line the spawner is writing */
    }
}

long xl_read(exitlog *x, xl_record_fn fn, void *ctx)
{
    long bad = 0;
    for (size_t i = 0; i < x->ng; i++) {
        long b = read_gen(x, &x->g[i], fn, ctx);
        if (b < 0)
            return -1;
        bad += b;
    }
    return bad;
}

int xl_trim(exitlog *x)
{
    char path[PATH_MAX];
    size_t k = 0;
    int rc = 0;
    for (size_t i = 0; i < x->ng; i++) {
        struct gen *g = &x->g[i];
        if (i + 1 < x->ng && g->holds == 0 && x->unknown == 0) {
            snprintf(path, sizeof path, "%s/%d", x->dir, g->n);
            close(g->fd);
            if (unlink(path) < 0 && errno != ENOENT && rc == 0)
                rc = fail(x, "remove", g->n);
            continue;
        }
        x->g[k++] = *g;
    }
    x->ng = k;
    if (rc < 0)
        return -1;
    struct stat st;
    if (fstat(x->g[x->ng - 1].fd, &st) < 0)
        return fail(x, "stat", xl_gen(x));
    return (size_t)st.st_size > x->rotate ? new_gen(x) : 0;
}
