/* nbuf: n-buffered file I/O with reader and writer threads, temp + rename. */
#include "config.h"
#include "store/nbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "store/mem.h"
#include "store/sysio.h"

/* ---- system calls, with sysio's fault hook and EINTR handled --------------- */

/* Reads until n bytes or end of file; returns the count or -1 with errno. */
static ssize_t read_full(int fd, void *p, size_t n, uint64_t off)
{
    int e = st_sys_injected(ST_SYS_READ);
    if (e) {
        errno = e;
        return -1;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)p + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

static int write_full(int fd, const void *p, size_t n, uint64_t off)
{
    int e = st_sys_injected(ST_SYS_WRITE);
    if (e) {
        errno = e;
        return -1;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t k = pwrite(fd, (const char *)p + done, n - done, (off_t)(off + done));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        done += (size_t)k;
    }
    return 0;
}

static int sync_fd(int fd)
{
    int e = st_sys_injected(ST_SYS_FSYNC);
    if (e) {
        errno = e;
        return -1;
    }
    return fsync(fd);
}

static void drop_direct(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_DIRECT);
}

static uint64_t align_down(uint64_t x) { return x & ~(uint64_t)(ST_NBUF_ALIGN - 1); }
static uint64_t align_up(uint64_t x) { return align_down(x + ST_NBUF_ALIGN - 1); }

/* ---- the ring of buffers and its thread, shared by reader and writer ------ */

enum slot_state { S_FREE, S_BUSY, S_READY };

typedef struct slot {
    unsigned char *data;
    uint64_t off;
    size_t len;
    int err; /* errno of the read that filled it */
    enum slot_state state;
} slot;

typedef struct ring {
    pthread_mutex_t mu;
    pthread_cond_t work; /* the thread waits here */
    pthread_cond_t done; /* the caller waits here */
    pthread_t thread;
    bool inited, running, stop;
    uint32_t n, head, count; /* slots[head .. head+count) are in flight, in order */
    size_t size;             /* bytes per slot */
    void *mem;               /* one aligned allocation for all slots */
    size_t memsize;
    slot *slots;
} ring;

static void ring_opts(const st_nbuf_opts *o, uint32_t *n, size_t *size)
{
    st_nbuf_opts d;
    st_nbuf_opts_default(&d);
    *n = o && o->nbufs >= 2 ? o->nbufs : d.nbufs;
    *size = (size_t)align_up(o && o->bufsize ? o->bufsize : d.bufsize);
}

static void ring_free(ring *g);

/* Allocates g->n slots of g->size bytes (set by ring_opts) and starts fn. */
static int ring_start(ring *g, void *(*fn)(void *), void *arg, st_err *err)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->work, NULL);
    pthread_cond_init(&g->done, NULL);
    g->inited = true;
    g->memsize = g->n * g->size + ST_NBUF_ALIGN;
    g->mem = mem_alloc(g->memsize);
    g->slots = mem_calloc(g->n, sizeof *g->slots);
    if (!g->mem || !g->slots) {
        ring_free(g);
        return st_err_nomem(err, "I/O buffers");
    }
    unsigned char *base = (unsigned char *)align_up((uintptr_t)g->mem);
    for (uint32_t i = 0; i < g->n; i++)
        g->slots[i].data = base + i * g->size;
    int e = pthread_create(&g->thread, NULL, fn, arg);
    if (e) {
        ring_free(g);
        return st_err_set(err, ST_ENOMEM, "cannot start an I/O thread: %s", strerror(e));
    }
    g->running = true;
    return 0;
}

static void ring_stop(ring *g)
{
    if (!g->running)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_broadcast(&g->work);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    g->running = false;
}

/* Stops the thread and frees the slots; the ring may be started again. */
static void ring_free(ring *g)
{
    ring_stop(g);
    if (g->inited) {
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->work);
        pthread_cond_destroy(&g->done);
    }
    mem_free(g->mem, g->memsize);
    mem_free(g->slots, g->n * sizeof *g->slots);
    *g = (ring){.n = g->n, .size = g->size};
}

static slot *ring_head(ring *g) { return &g->slots[g->head]; }
static slot *ring_tail(ring *g) { return &g->slots[(g->head + g->count) % g->n]; }

static void ring_pop(ring *g)
{
    g->slots[g->head].state = S_FREE;
    g->head = (g->head + 1) % g->n;
    g->count--;
    pthread_cond_signal(&g->work);
}

void st_nbuf_opts_default(st_nbuf_opts *o)
{
    o->nbufs = 3;
    o->bufsize = 1u << 20;
    o->direct = false;
    o->cache = false;
}

/* ---- reader ---------------------------------------------------------------- */

struct st_nbuf_reader {
    char *path;
    int fd;
    uint64_t size;
    st_file_id id;
    bool direct;
    ring g;
    uint64_t next_off; /* file offset the next slot will be filled from */
    bool loading;      /* the thread is reading into a slot */
    st_nbuf_stats stats;
};

static int open_direct(const char *path, int flags, mode_t mode, bool want, bool *direct)
{
    *direct = false;
    if (want) {
        int fd = open(path, flags | O_DIRECT, mode);
        if (fd >= 0) {
            *direct = true;
            return fd;
        }
        if (errno != EINVAL)
            return -1;
    }
    return open(path, flags, mode);
}

/* Some filesystems accept O_DIRECT at open and refuse the reads; probe once
 * (through read_full, so a test can play such a filesystem with EINVAL). */
static void probe_direct(st_nbuf_reader *r)
{
    void *raw = mem_alloc(2 * ST_NBUF_ALIGN);
    if (!raw || read_full(r->fd, (void *)align_up((uintptr_t)raw), ST_NBUF_ALIGN, 0) < 0) {
        drop_direct(r->fd);
        r->direct = false;
    }
    mem_free(raw, 2 * ST_NBUF_ALIGN);
}

st_nbuf_reader *st_nbuf_open(const char *path, const st_nbuf_opts *o, st_err *err)
{
    st_nbuf_reader *r = mem_calloc(1, sizeof *r);
    if (!r || !(r->path = mem_strdup(path))) {
        mem_free(r, sizeof *r);
        st_err_nomem(err, path);
        return NULL;
    }
    ring_opts(o, &r->g.n, &r->g.size);
    struct stat st;
    r->fd = open_direct(path, O_RDONLY | O_CLOEXEC, 0, o && o->direct, &r->direct);
    if (r->fd < 0 || fstat(r->fd, &st) < 0) {
        st_err_set(err, ST_EIO, "%s: cannot open: %s", path, strerror(errno));
        st_nbuf_close(r);
        return NULL;
    }
    r->size = (uint64_t)st.st_size;
    st_file_id_of(&st, &r->id);
    if (r->direct)
        probe_direct(r);
    else
        posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return r;
}

void st_file_id_of(const struct stat *st, st_file_id *out)
{
    *out = (st_file_id){(uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
                        (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec,
                        (uint64_t)st->st_ctim.tv_sec * 1000000000u + (uint64_t)st->st_ctim.tv_nsec};
}

bool st_file_id_eq(const st_file_id *a, const st_file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

uint64_t st_nbuf_size(const st_nbuf_reader *r) { return r->size; }
void st_nbuf_id(const st_nbuf_reader *r, st_file_id *out) { *out = r->id; }

/* The thread updates the stats under the ring's lock once it runs. */
static void lock_stats(st_nbuf_reader *r, bool lock)
{
    if (r->g.running && lock)
        pthread_mutex_lock(&r->g.mu);
    else if (r->g.running)
        pthread_mutex_unlock(&r->g.mu);
}

void st_nbuf_stats_get(st_nbuf_reader *r, st_nbuf_stats *out)
{
    lock_stats(r, true);
    *out = r->stats;
    lock_stats(r, false);
    out->direct = r->direct;
}

static void *reader_main(void *arg)
{
    st_nbuf_reader *r = arg;
    ring *g = &r->g;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->stop && !(g->count < g->n && r->next_off < r->size))
            pthread_cond_wait(&g->work, &g->mu);
        if (g->stop)
            break;
        slot *s = ring_tail(g);
        s->off = r->next_off;
        s->state = S_BUSY;
        g->count++;
        r->next_off += g->size;
        r->loading = true;
        pthread_mutex_unlock(&g->mu);
        /* Whole aligned slots, so O_DIRECT holds; the last one comes back short. */
        ssize_t k = read_full(r->fd, s->data, g->size, s->off);
        int e = k < 0 ? errno : 0;
        pthread_mutex_lock(&g->mu);
        s->len = k > 0 ? (size_t)k : 0;
        s->err = e;
        s->state = S_READY;
        r->loading = false;
        r->stats.reads++;
        r->stats.bytes_read += s->len;
        pthread_cond_broadcast(&g->done);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Points the stream at pos (lock held): waits out the read in flight, drops
 * every slot, and lets the thread start again from pos's aligned offset. */
static void restart(st_nbuf_reader *r, uint64_t pos)
{
    ring *g = &r->g;
    while (r->loading)
        pthread_cond_wait(&g->done, &g->mu);
    while (g->count > 0)
        ring_pop(g);
    g->head = 0;
    r->next_off = align_down(pos);
    r->stats.seeks++;
    if (!r->direct)
        posix_fadvise(r->fd, (off_t)r->next_off, (off_t)(g->n * g->size), POSIX_FADV_WILLNEED);
    pthread_cond_broadcast(&g->work);
}

/* True if pos is buffered or is where the thread reads next. */
static bool covered(st_nbuf_reader *r, uint64_t pos)
{
    ring *g = &r->g;
    if (g->count > 0)
        return pos >= ring_head(g)->off && pos < r->next_off;
    return pos >= r->next_off && pos < r->next_off + g->size;
}

static int start_reader(st_nbuf_reader *r, st_err *err)
{
    r->next_off = r->size; /* idle until the first restart */
    return ring_start(&r->g, reader_main, r, err);
}

const void *st_nbuf_get(st_nbuf_reader *r, uint64_t off, size_t n, void *scratch, st_err *err)
{
    if (off > r->size || n > r->size - off) {
        st_err_set(err, ST_ECORRUPT, "%s: unexpected end of file: bytes %" PRIu64 "..%" PRIu64
                   " of a %" PRIu64 "-byte file", r->path, off, off + n, r->size);
        return NULL;
    }
    if (n == 0)
        return "";
    if (!r->g.running && start_reader(r, err) < 0) {
        st_err_prefix(err, "%s: ", r->path);
        return NULL;
    }
    ring *g = &r->g;
    const unsigned char *out = NULL;
    size_t copied = 0;
    int e = 0;
    pthread_mutex_lock(&g->mu);
    while (!out && !e) {
        uint64_t pos = off + copied;
        if (!covered(r, pos))
            restart(r, pos);
        while (g->count == 0 || ring_head(g)->state == S_BUSY)
            pthread_cond_wait(&g->done, &g->mu);
        slot *s = ring_head(g);
        uint64_t end = s->off + s->len;
        if (s->err) {
            e = s->err;
        } else if (pos >= end) {
            if (s->len < g->size)
                e = -1; /* short before the size fstat gave: the file shrank */
            else
                ring_pop(g);
        } else if (copied == 0 && end - pos >= n) {
            out = s->data + (pos - s->off);
        } else {
            size_t take = end - pos < n - copied ? (size_t)(end - pos) : n - copied;
            memcpy((unsigned char *)scratch + copied, s->data + (pos - s->off), take);
            copied += take;
            if (copied == n)
                out = scratch;
            else
                ring_pop(g);
        }
    }
    pthread_mutex_unlock(&g->mu);
    if (e > 0)
        st_err_set(err, ST_EIO, "%s: read at offset %" PRIu64 ": %s", r->path, off + copied, strerror(e));
    else if (e < 0)
        st_err_set(err, ST_ECORRUPT, "%s: file shrank while being read (at offset %" PRIu64 ")",
                   r->path, off + copied);
    return out;
}

void st_nbuf_willneed(st_nbuf_reader *r, uint64_t off, uint64_t n)
{
    if (!r->direct && n > 0)
        posix_fadvise(r->fd, (off_t)off, (off_t)n, POSIX_FADV_WILLNEED);
}

bool st_nbuf_resident(st_nbuf_reader *r, uint64_t off)
{
#ifdef RWF_NOWAIT
    char c;
    struct iovec v = {&c, 1};
    return !r->direct && off < r->size && preadv2(r->fd, &v, 1, (off_t)off, RWF_NOWAIT) == 1;
#else
    (void)r, (void)off;
    return false;
#endif
}

int st_nbuf_pread(st_nbuf_reader *r, uint64_t off, size_t n, void *dst, st_err *err)
{
    if (off > r->size || n > r->size - off)
        return st_err_set(err, ST_ECORRUPT, "%s: unexpected end of file: bytes %" PRIu64 "..%" PRIu64
                          " of a %" PRIu64 "-byte file", r->path, off, off + n, r->size);
    /* O_DIRECT wants aligned offsets and lengths: read a covering range. */
    uint64_t lo = r->direct ? align_down(off) : off, hi = r->direct ? align_up(off + n) : off + n;
    void *raw = NULL;
    unsigned char *buf = dst;
    size_t rawsize = (size_t)(hi - lo) + ST_NBUF_ALIGN;
    if (r->direct) {
        if (!(raw = mem_alloc(rawsize)))
            return st_err_nomem(err, r->path);
        buf = (unsigned char *)align_up((uintptr_t)raw);
    }
    ssize_t k = read_full(r->fd, buf, (size_t)(hi - lo), lo);
    int e = errno;
    lock_stats(r, true);
    r->stats.reads++;
    r->stats.bytes_read += k > 0 ? (uint64_t)k : 0;
    lock_stats(r, false);
    int rc = 0;
    if (k < 0)
        rc = st_err_set(err, ST_EIO, "%s: read at offset %" PRIu64 ": %s", r->path, off, strerror(e));
    else if ((uint64_t)k < off + n - lo)
        rc = st_err_set(err, ST_ECORRUPT, "%s: file shrank while being read (at offset %" PRIu64 ")",
                        r->path, off);
    else if (r->direct)
        memcpy(dst, buf + (off - lo), n);
    mem_free(raw, rawsize);
    return rc;
}

void st_nbuf_idle(st_nbuf_reader *r)
{
    ring_free(&r->g);
    r->stats = (st_nbuf_stats){0};
}

void st_nbuf_close(st_nbuf_reader *r)
{
    if (!r)
        return;
    ring_free(&r->g);
    if (r->fd >= 0)
        close(r->fd);
    mem_free(r->path, strlen(r->path) + 1);
    mem_free(r, sizeof *r);
}

/* ---- writer ---------------------------------------------------------------- */

struct st_nbuf_writer {
    char *path, *tmp;
    int fd;
    bool direct;
    ring g;
    uint32_t fill;    /* the slot the caller fills: only the caller moves it */
    uint64_t pos;     /* bytes accepted */
    int err;          /* errno of the first failed write (sticky) */
    uint64_t err_off; /* and where it was */
};

static atomic_uint temp_seq;

static void *writer_main(void *arg)
{
    st_nbuf_writer *w = arg;
    ring *g = &w->g;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->stop && g->count == 0)
            pthread_cond_wait(&g->work, &g->mu);
        if (g->count == 0)
            break; /* stopped and drained */
        slot *s = ring_head(g);
        bool failed = w->err != 0;
        pthread_mutex_unlock(&g->mu);
        int e = 0;
        if (!failed) {
            /* An unaligned tail cannot go through O_DIRECT: drop it for the last write. */
            if (w->direct && s->len % ST_NBUF_ALIGN)
                drop_direct(w->fd);
            int rc = write_full(w->fd, s->data, s->len, s->off);
            if (rc < 0 && errno == EINVAL && w->direct) {
                drop_direct(w->fd); /* the filesystem refuses O_DIRECT writes */
                w->direct = false;
                rc = write_full(w->fd, s->data, s->len, s->off);
            }
            e = rc < 0 ? errno : 0;
        }
        pthread_mutex_lock(&g->mu);
        if (e && !w->err) {
            w->err = e;
            w->err_off = s->off;
        }
        s->len = 0;
        ring_pop(g);
        pthread_cond_broadcast(&g->done);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

st_nbuf_writer *st_nbuf_create(const char *path, const st_nbuf_opts *o, st_err *err)
{
    st_nbuf_writer *w = mem_calloc(1, sizeof *w);
    size_t tmplen = strlen(path) + 48;
    if (!w || !(w->path = mem_strdup(path)) || !(w->tmp = mem_alloc(tmplen))) {
        if (w)
            mem_free(w->path, strlen(path) + 1);
        mem_free(w, sizeof *w);
        st_err_nomem(err, path);
        return NULL;
    }
    /* O_EXCL: never write into another writer's file; a stale temp left by
     * a crashed process that had our pid just moves us to the next name. */
    for (int tries = 0; tries < 100; tries++) {
        snprintf(w->tmp, tmplen, "%s.tmp-%ld-%u", path, (long)getpid(), atomic_fetch_add(&temp_seq, 1));
        w->fd = open_direct(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644, o && o->direct,
                            &w->direct);
        if (w->fd >= 0 || errno != EEXIST)
            break;
    }
    if (w->fd < 0) {
        st_err_set(err, ST_EIO, "%s: cannot create %s: %s", path, w->tmp, strerror(errno));
        w->tmp[0] = '\0';
        st_nbuf_abort(w);
        return NULL;
    }
    ring_opts(o, &w->g.n, &w->g.size);
    if (ring_start(&w->g, writer_main, w, err) < 0) {
        st_err_prefix(err, "%s: ", path);
        st_nbuf_abort(w);
        return NULL;
    }
    return w;
}

uint64_t st_nbuf_tell(const st_nbuf_writer *w) { return w->pos; }

static int write_error(st_nbuf_writer *w, st_err *err)
{
    return st_err_set(err, ST_EIO, "%s: write at offset %" PRIu64 ": %s", w->path, w->err_off,
                      strerror(w->err));
}

/* Hands the slot being filled to the thread and waits for a free one. */
static void queue_fill(st_nbuf_writer *w, bool wait)
{
    ring *g = &w->g;
    w->fill = (w->fill + 1) % g->n;
    pthread_mutex_lock(&g->mu);
    g->count++;
    pthread_cond_signal(&g->work);
    while (wait && g->count == g->n)
        pthread_cond_wait(&g->done, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

int st_nbuf_write(st_nbuf_writer *w, const void *p, size_t n, st_err *err)
{
    ring *g = &w->g;
    const unsigned char *src = p;
    while (n > 0) {
        /* Only the caller touches the fill slot, so no lock is needed here. */
        slot *s = &g->slots[w->fill];
        if (s->len == 0)
            s->off = w->pos;
        size_t take = g->size - s->len < n ? g->size - s->len : n;
        memcpy(s->data + s->len, src, take);
        s->len += take;
        w->pos += take;
        src += take;
        n -= take;
        if (s->len == g->size)
            queue_fill(w, true);
    }
    pthread_mutex_lock(&g->mu);
    int failed = w->err;
    pthread_mutex_unlock(&g->mu);
    return failed ? write_error(w, err) : 0;
}

static int sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = sync_fd(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int st_nbuf_commit(st_nbuf_writer *w, st_err *err)
{
    if (w->g.slots[w->fill].len > 0)
        queue_fill(w, false);
    ring_stop(&w->g); /* the thread drains the queue, then exits */
    int rc = 0, fd = w->fd;
    if (w->err) {
        rc = write_error(w, err);
        goto out;
    }
    if (sync_fd(fd) < 0) {
        rc = st_err_set(err, ST_EIO, "%s: fsync: %s", w->path, strerror(errno));
        goto out;
    }
    w->fd = -1;
    if (close(fd) < 0) {
        rc = st_err_set(err, ST_EIO, "%s: close: %s", w->path, strerror(errno));
        goto out;
    }
    if (rename(w->tmp, w->path) < 0) {
        rc = st_err_set(err, ST_EIO, "%s: rename from %s: %s", w->path, w->tmp, strerror(errno));
        goto out;
    }
    w->tmp[0] = '\0'; /* renamed: nothing left to unlink */
    if (sync_dir(w->path) < 0)
        rc = st_err_set(err, ST_EIO, "%s: fsync of its directory: %s (the file is complete)",
                        w->path, strerror(errno));
out:
    st_nbuf_abort(w);
    return rc;
}

void st_nbuf_abort(st_nbuf_writer *w)
{
    if (!w)
        return;
    if (w->g.running) {
        pthread_mutex_lock(&w->g.mu);
        if (!w->err)
            w->err = ECANCELED; /* the thread drops what is queued */
        pthread_mutex_unlock(&w->g.mu);
    }
    ring_free(&w->g);
    if (w->fd >= 0)
        close(w->fd);
    size_t tmplen = strlen(w->path) + 48;
    if (w->tmp[0])
        unlink(w->tmp);
    mem_free(w->tmp, tmplen);
    mem_free(w->path, strlen(w->path) + 1);
    mem_free(w, sizeof *w);
}
