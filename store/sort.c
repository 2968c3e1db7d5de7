/* sort: external sort of fixed-width records: parcels, runs, loser-tree merge. */
#include "config.h"
#include "store/sort.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/mem.h"
#include "store/sysio.h"

#define MERGE_BUF (64 * 1024)    /* the smallest run buffer worth a read */
#define MERGE_BUF_MAX (8u << 20) /* larger reads gain nothing */
#define MAX_FAN_IN 500           /* open runs at once: well under the usual fd limit */
#define INSERT_RUN 16            /* merge sort starts from sorted runs this long */
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* A sort entry: the record's key prefix (0 without a prefix function) and its
 * index in the slot; sorting entries instead of records moves 16 bytes, not
 * rec_size, and the prefix settles most comparisons without a callback. */

/* A slot is one block: ent[cap], spare[cap] (merge sort's other half, then
 * the spill write buffer), recs[cap * rec_size]. */
struct slot {
    st_keyed *ent;
    unsigned char *recs;
    size_t n;
};

struct run {
    unsigned id; /* file TMP/run-<id> */
    uint64_t n;  /* records */
};

/* Buffered sequential writer of one run file. */
struct runw {
    int fd;
    char path[PATH_MAX];
    unsigned char *buf;
    size_t cap, len; /* bytes */
    uint64_t n;
};

/* Buffered reader of one run during a merge (kept small: there may be
 * hundreds; the path is rebuilt from id when needed). */
struct reader {
    int fd;
    unsigned id;
    unsigned char *buf;
    size_t len, pos; /* bytes */
    uint64_t left;   /* records not yet read into buf */
    uint64_t key;    /* prefix of the current record */
    int done;
};

/* k-way merge: tree[0] is the winner, tree[1..k-1] the losers of each match;
 * leaf i sits at node k + i. */
struct merger {
    struct reader *rd;
    size_t k, *tree, bufsize;
    int started;
};

enum state { ADDING, IN_MEMORY, MERGING, ENDED, FAILED };

struct st_sorter {
    size_t rs;
    st_cmp_fn cmp;
    void *ctx;
    st_prefix_fn prefix;
    size_t parcel, cap; /* cap: records per slot */
    int threads;
    char tmpdir[PATH_MAX];
    char *dir; /* our private directory under tmpdir, made at the first spill */

    struct slot slot[2];
    int cur; /* the slot being filled */
    struct run *runs;
    size_t nruns, runs_cap;
    unsigned next_id;

    /* The worker sorts and spills *job while the caller fills the other slot. */
    pthread_t worker;
    int worker_on, quit, wfail;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct slot *job;
    st_err werr;

    enum state state;
    st_err saved;
    const st_keyed *sorted; /* IN_MEMORY: slot 0 in order */
    size_t pos;
    struct merger m;
    uint64_t added, emitted, spilled, passes;
};

static size_t slot_bytes(const st_sorter *s)
{
    return s->cap * (2 * sizeof(st_keyed) + s->rs);
}

/* ---- in-memory stable merge sort of entries ---------------------------- */

static int cmp_ent(const st_sorter *s, const unsigned char *recs, const st_keyed *a,
                   const st_keyed *b)
{
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return s->cmp(recs + (size_t)a->idx * s->rs, recs + (size_t)b->idx * s->rs, s->ctx);
}

static void insertion_sort(const st_sorter *s, const unsigned char *recs, st_keyed *a,
                           size_t n)
{
    for (size_t i = 1; i < n; i++) {
        st_keyed x = a[i];
        size_t j = i;
        for (; j > 0 && cmp_ent(s, recs, &a[j - 1], &x) > 0; j--)
            a[j] = a[j - 1];
        a[j] = x;
    }
}

/* Merges l[nl] and r[nr] into out; ties take l first, which keeps it stable. */
static void merge_ents(const st_sorter *s, const unsigned char *recs, const st_keyed *l,
                       size_t nl, const st_keyed *r, size_t nr, st_keyed *out)
{
    size_t i = 0, j = 0;
    if (nr > 0 && cmp_ent(s, recs, &l[nl - 1], &r[0]) > 0) {
        while (i < nl && j < nr)
            *out++ = cmp_ent(s, recs, &r[j], &l[i]) < 0 ? r[j++] : l[i++];
    }
    memcpy(out, l + i, (nl - i) * sizeof *l);
    memcpy(out + (nl - i), r + j, (nr - j) * sizeof *r);
}

/* Stable merge sort of a[n] using spare[n]; returns whichever holds the result. */
static st_keyed *merge_sort(const st_sorter *s, const unsigned char *recs, st_keyed *a,
                              st_keyed *spare, size_t n)
{
    for (size_t lo = 0; lo < n; lo += INSERT_RUN)
        insertion_sort(s, recs, a + lo, MIN(INSERT_RUN, n - lo));
    st_keyed *src = a, *dst = spare;
    for (size_t w = INSERT_RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t nl = MIN(w, n - lo);
            size_t nr = MIN(w, n - lo - nl);
            merge_ents(s, recs, src + lo, nl, src + lo + nl, nr, dst + lo);
        }
        st_keyed *t = src;
        src = dst;
        dst = t;
    }
    return src;
}

st_keyed *st_sort_keyed(st_keyed *a, st_keyed *spare, size_t n)
{
    size_t count[8][256] = {{0}}; /* per byte of the key: one pass counts all */
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++)
            count[d][(a[i].key >> (8 * d)) & 0xff]++;
    st_keyed *src = a, *dst = spare;
    for (int d = 0; d < 8; d++) {
        size_t *c = count[d], sum = 0;
        if (n == 0 || c[(src[0].key >> (8 * d)) & 0xff] == n)
            continue;
        for (int b = 0; b < 256; b++) {
            size_t t = c[b];
            c[b] = sum;
            sum += t;
        }
        for (size_t i = 0; i < n; i++)
            dst[c[(src[i].key >> (8 * d)) & 0xff]++] = src[i];
        st_keyed *t = src;
        src = dst;
        dst = t;
    }
    return src;
}

/* With a prefix: the radix sort on the 64-bit keys, then a merge sort of
 * each run of equal keys by cmp. */
static st_keyed *radix_sort(const st_sorter *s, const unsigned char *recs, st_keyed *a,
                            st_keyed *spare, size_t n)
{
    st_keyed *src = st_sort_keyed(a, spare, n), *dst = src == a ? spare : a;
    for (size_t lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo + 1; hi < n && src[hi].key == src[lo].key; hi++)
            ;
        if (hi - lo < 2)
            continue;
        const st_keyed *r = merge_sort(s, recs, src + lo, dst + lo, hi - lo);
        if (r != src + lo)
            memcpy(src + lo, r, (hi - lo) * sizeof *r);
    }
    return src;
}

/* Sorts a[n] using spare[n]; returns whichever of the two holds the result. */
static st_keyed *sort_ents(const st_sorter *s, const unsigned char *recs, st_keyed *a,
                             st_keyed *spare, size_t n)
{
    return s->prefix ? radix_sort(s, recs, a, spare, n) : merge_sort(s, recs, a, spare, n);
}

/* ---- run files ---------------------------------------------------------- */

/* Removes the files of directory path (runs: no subdirectories), then it. */
static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
    }
    rmdir(path);
}

/* A process killed mid-sort (SIGKILL, SIGTERM, a SIGPIPE of `comb ... |
 * head`) leaves its directory behind: a sort sweeps those of this host's
 * processes that are gone. The name says whose: comb-sort-PID@HOST-XXXXXX. */
static void sweep_dead(const char *tmpdir, const char *host)
{
    DIR *d = opendir(tmpdir);
    if (!d)
        return;
    struct dirent *e;
    size_t hl = strlen(host);
    while ((e = readdir(d)) != NULL) {
        int pid, at = 0;
        const char *n = e->d_name;
        if (sscanf(n, "comb-sort-%d@%n", &pid, &at) != 1 || !at || pid <= 0 ||
            strlen(n) != (size_t)at + hl + 7 || strncmp(n + at, host, hl) || n[at + hl] != '-' ||
            kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", tmpdir, n) < (int)sizeof path)
            remove_tree(path);
    }
    closedir(d);
}

static int make_dir(st_sorter *s, st_err *err)
{
    char tmpl[PATH_MAX], host[64] = "";
    if (gethostname(host, sizeof host - 1) < 0 || strchr(host, '/'))
        strcpy(host, "localhost");
    sweep_dead(s->tmpdir, host);
    if (snprintf(tmpl, sizeof tmpl, "%s/comb-sort-%d@%s-XXXXXX", s->tmpdir, (int)getpid(), host) >=
        (int)sizeof tmpl)
        return st_sys_err(err, ENAMETOOLONG, "sort: temporary directory %s", s->tmpdir);
    if (!mkdtemp(tmpl))
        return st_sys_err(err, errno, "sort: cannot make a temporary directory in %s",
                         s->tmpdir);
    s->dir = mem_strdup(tmpl);
    if (!s->dir) {
        rmdir(tmpl);
        return st_err_nomem(err, "sort: temporary directory name");
    }
    return 0;
}

static void run_path(const st_sorter *s, unsigned id, char *path)
{
    snprintf(path, PATH_MAX, "%s/run-%06u", s->dir, id);
}

/* Reserves room for one more run, so a written run is never left unlisted. */
static int reserve_run(st_sorter *s, st_err *err)
{
    if (s->nruns < s->runs_cap)
        return 0;
    size_t ncap = s->runs_cap ? 2 * s->runs_cap : 16;
    struct run *r = mem_realloc(s->runs, s->runs_cap * sizeof *r, ncap * sizeof *r);
    if (!r)
        return st_err_nomem(err, "sort: run list");
    s->runs = r;
    s->runs_cap = ncap;
    return 0;
}

static int runw_open(st_sorter *s, struct runw *w, unsigned char *buf, size_t cap, st_err *err)
{
    if (!s->dir && make_dir(s, err) < 0)
        return -1;
    if (reserve_run(s, err) < 0)
        return -1;
    run_path(s, s->next_id, w->path);
    w->fd = st_sys_open(w->path, O_WRONLY | O_CREAT | O_EXCL, 0600, err);
    if (w->fd < 0)
        return -1;
    w->buf = buf;
    w->cap = cap / s->rs * s->rs;
    w->len = 0;
    w->n = 0;
    return 0;
}

static int runw_put(const st_sorter *s, struct runw *w, const void *rec, st_err *err)
{
    if (w->len == w->cap) {
        if (st_sys_write(w->fd, w->buf, w->len, w->path, err) < 0)
            return -1;
        w->len = 0;
    }
    memcpy(w->buf + w->len, rec, s->rs);
    w->len += s->rs;
    w->n++;
    return 0;
}

/* Flushes and closes; on success lists the run. rc < 0 means the caller
 * failed already: the file is closed and removed either way on failure. */
static int runw_close(st_sorter *s, struct runw *w, int rc, st_err *err)
{
    if (rc == 0)
        rc = st_sys_write(w->fd, w->buf, w->len, w->path, err);
    if (rc == 0)
        rc = st_sys_close(w->fd, w->path, err);
    else
        close(w->fd);
    if (rc < 0) {
        unlink(w->path);
        return -1;
    }
    s->runs[s->nruns++] = (struct run){s->next_id++, w->n};
    return 0;
}

/* Sorts a full slot and writes it as the next run. */
static int spill(st_sorter *s, struct slot *sl, st_err *err)
{
    st_keyed *spare = sl->ent + s->cap;
    const st_keyed *sorted = sort_ents(s, sl->recs, sl->ent, spare, sl->n);
    unsigned char *wbuf = (unsigned char *)(sorted == sl->ent ? spare : sl->ent);
    struct runw w;
    if (runw_open(s, &w, wbuf, s->cap * sizeof(st_keyed), err) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < sl->n && rc == 0; i++)
        rc = runw_put(s, &w, sl->recs + (size_t)sorted[i].idx * s->rs, err);
    if (runw_close(s, &w, rc, err) < 0)
        return -1;
    sl->n = 0;
    s->spilled++;
    return 0;
}

/* Removes our private directory and its runs. */
static void remove_dir(st_sorter *s)
{
    if (!s->dir)
        return;
    remove_tree(s->dir);
    mem_free(s->dir, strlen(s->dir) + 1);
    s->dir = NULL;
}

/* ---- the worker thread -------------------------------------------------- */

static void *work(void *arg)
{
    st_sorter *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->job && !s->quit)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->job)
            break;
        struct slot *sl = s->job;
        pthread_mutex_unlock(&s->mu);
        st_err e;
        int rc = spill(s, sl, &e);
        pthread_mutex_lock(&s->mu);
        if (rc < 0 && !s->wfail) {
            s->wfail = 1;
            s->werr = e;
        }
        s->job = NULL;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Waits until the worker has no job; reports its failure if it had one. */
static int wait_idle(st_sorter *s, st_err *err)
{
    pthread_mutex_lock(&s->mu);
    while (s->job)
        pthread_cond_wait(&s->cv, &s->mu);
    int failed = s->wfail;
    pthread_mutex_unlock(&s->mu);
    if (failed) {
        *err = s->werr;
        return -1;
    }
    return 0;
}

static int stop_worker(st_sorter *s, st_err *err)
{
    if (!s->worker_on)
        return 0;
    int rc = wait_idle(s, err);
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->worker, NULL);
    s->worker_on = 0;
    return rc;
}

static int alloc_slot(st_sorter *s, struct slot *sl, st_err *err)
{
    if (sl->ent)
        return 0;
    sl->ent = mem_alloc(slot_bytes(s));
    if (!sl->ent)
        return st_err_nomem(err, "sort: parcel slot");
    sl->recs = (unsigned char *)(sl->ent + 2 * s->cap);
    sl->n = 0;
    return 0;
}

static void free_slots(st_sorter *s)
{
    for (int i = 0; i < 2; i++) {
        mem_free(s->slot[i].ent, slot_bytes(s));
        s->slot[i].ent = NULL;
    }
}

/* The current slot is full: spill it here, or hand it to the worker and
 * continue in the other slot. */
static int flush_slot(st_sorter *s, st_err *err)
{
    struct slot *sl = &s->slot[s->cur];
    if (s->threads == 1)
        return spill(s, sl, err);
    if (wait_idle(s, err) < 0)
        return -1;
    if (!s->worker_on) {
        if (pthread_create(&s->worker, NULL, work, s) != 0)
            return spill(s, sl, err); /* no thread: sort here instead */
        s->worker_on = 1;
    }
    pthread_mutex_lock(&s->mu);
    s->job = sl;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    s->cur ^= 1;
    return alloc_slot(s, &s->slot[s->cur], err);
}

/* ---- merging runs ------------------------------------------------------- */

static int compare(const st_sorter *s, uint64_t ka, const void *a, uint64_t kb, const void *b)
{
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return s->cmp(a, b, s->ctx);
}

static uint64_t prefix_of(const st_sorter *s, const void *rec)
{
    return s->prefix ? s->prefix(rec, s->ctx) : 0;
}

/* Loads the next buffer of a run; at its end closes and removes the file
 * (freeing disk space as early as possible). */
static int reader_fill(const st_sorter *s, struct reader *r, size_t bufsize, st_err *err)
{
    char path[PATH_MAX];
    run_path(s, r->id, path);
    if (r->left == 0) {
        close(r->fd);
        r->fd = -1;
        unlink(path);
        r->done = 1;
        return 0;
    }
    uint64_t nrec = MIN(r->left, (uint64_t)(bufsize / s->rs));
    size_t want = (size_t)nrec * s->rs;
    ssize_t got = st_sys_read(r->fd, r->buf, want, path, err);
    if (got < 0)
        return -1;
    if ((size_t)got != want)
        return st_err_set(err, ST_ECORRUPT,
                          "sort: run file %s is truncated (%llu records missing)", path,
                          (unsigned long long)(r->left - (uint64_t)got / s->rs));
    r->left -= nrec;
    r->len = want;
    r->pos = 0;
    r->key = prefix_of(s, r->buf);
    return 0;
}

static int reader_advance(const st_sorter *s, struct reader *r, size_t bufsize, st_err *err)
{
    if (r->done)
        return 0;
    r->pos += s->rs;
    if (r->pos < r->len) {
        r->key = prefix_of(s, r->buf + r->pos);
        return 0;
    }
    return reader_fill(s, r, bufsize, err);
}

/* Does reader a's record go before reader b's? Ties go to the earlier run,
 * which keeps the sort stable. */
static int beats(const st_sorter *s, const struct merger *m, size_t a, size_t b)
{
    const struct reader *ra = &m->rd[a], *rb = &m->rd[b];
    if (ra->done || rb->done)
        return !ra->done;
    int c = compare(s, ra->key, ra->buf + ra->pos, rb->key, rb->buf + rb->pos);
    return c < 0 || (c == 0 && a < b);
}

static size_t build(const st_sorter *s, struct merger *m, size_t node)
{
    if (node >= m->k)
        return node - m->k;
    size_t a = build(s, m, 2 * node), b = build(s, m, 2 * node + 1);
    if (beats(s, m, b, a)) {
        m->tree[node] = a;
        return b;
    }
    m->tree[node] = b;
    return a;
}

static void merger_close(struct merger *m)
{
    for (size_t i = 0; m->rd && i < m->k; i++) {
        if (m->rd[i].fd >= 0)
            close(m->rd[i].fd);
        mem_free(m->rd[i].buf, m->bufsize);
    }
    mem_free(m->rd, m->k * sizeof *m->rd);
    mem_free(m->tree, m->k * sizeof *m->tree);
    memset(m, 0, sizeof *m);
}

/* Opens runs[k] for merging; nbufs buffers (k, plus one if the caller writes)
 * share the parcel's memory. */
static int merger_open(const st_sorter *s, struct merger *m, const struct run *runs, size_t k,
                       size_t nbufs, st_err *err)
{
    memset(m, 0, sizeof *m);
    size_t bufsize = MIN(s->parcel / nbufs, MERGE_BUF_MAX) / s->rs * s->rs;
    m->bufsize = bufsize > s->rs ? bufsize : s->rs;
    m->rd = mem_calloc(k, sizeof *m->rd);
    m->tree = mem_calloc(k, sizeof *m->tree);
    if (!m->rd || !m->tree) {
        mem_free(m->rd, k * sizeof *m->rd);
        mem_free(m->tree, k * sizeof *m->tree);
        m->rd = NULL;
        m->tree = NULL;
        return st_err_nomem(err, "sort: merge of runs");
    }
    m->k = k;
    for (size_t i = 0; i < k; i++)
        m->rd[i].fd = -1;
    for (size_t i = 0; i < k; i++) {
        struct reader *r = &m->rd[i];
        char path[PATH_MAX];
        run_path(s, runs[i].id, path);
        r->id = runs[i].id;
        r->left = runs[i].n;
        r->buf = mem_alloc(m->bufsize);
        if (!r->buf) {
            st_err_nomem(err, "sort: run buffers");
            goto fail;
        }
        r->fd = st_sys_open(path, O_RDONLY, 0, err);
        if (r->fd < 0 || reader_fill(s, r, m->bufsize, err) < 0)
            goto fail;
    }
    m->tree[0] = build(s, m, 1);
    return 0;
fail:
    merger_close(m);
    return -1;
}

static int merger_next(const st_sorter *s, struct merger *m, const void **rec, st_err *err)
{
    size_t w = m->tree[0];
    if (m->started) {
        if (reader_advance(s, &m->rd[w], m->bufsize, err) < 0)
            return -1;
        for (size_t t = (w + m->k) / 2; t >= 1; t /= 2) {
            if (beats(s, m, m->tree[t], w)) {
                size_t x = m->tree[t];
                m->tree[t] = w;
                w = x;
            }
        }
        m->tree[0] = w;
    }
    m->started = 1;
    const struct reader *r = &m->rd[w];
    if (r->done)
        return 0;
    *rec = r->buf + r->pos;
    return 1;
}

/* Merges runs[k] into one new run (listed at the end of s->runs). */
static int merge_group(st_sorter *s, const struct run *runs, size_t k, st_err *err)
{
    struct merger m;
    if (merger_open(s, &m, runs, k, k + 1, err) < 0)
        return -1;
    unsigned char *buf = mem_alloc(m.bufsize);
    struct runw w;
    int rc = -1;
    if (!buf)
        st_err_nomem(err, "sort: run buffer");
    else if (runw_open(s, &w, buf, m.bufsize, err) == 0) {
        const void *rec;
        while ((rc = merger_next(s, &m, &rec, err)) == 1)
            rc = runw_put(s, &w, rec, err);
        rc = runw_close(s, &w, rc, err);
    }
    mem_free(buf, m.bufsize);
    merger_close(&m);
    return rc;
}

/* While there are more runs than one merge can take, merges consecutive
 * groups (consecutive, so ties keep their input order). The list is rebuilt
 * in place: group i's result lands at an index <= i, after merger_open has
 * read the group's entries. */
static int merge_down(st_sorter *s, st_err *err)
{
    size_t fan = MIN(s->parcel / MERGE_BUF, MAX_FAN_IN);
    fan = fan > 2 ? fan : 2;
    while (s->nruns > fan) {
        size_t n = s->nruns;
        s->nruns = 0;
        for (size_t i = 0; i < n; i += fan) {
            size_t k = MIN(fan, n - i);
            if (k == 1)
                s->runs[s->nruns++] = s->runs[i];
            else if (merge_group(s, s->runs + i, k, err) < 0)
                return -1;
        }
        s->passes++;
    }
    return 0;
}

/* ---- the public interface ------------------------------------------------ */

st_sorter *st_sorter_new(size_t rec_size, st_cmp_fn cmp, void *ctx, const st_sort_opts *opts,
                         st_err *err)
{
    st_sort_opts o = opts ? *opts : (st_sort_opts){0};
    if (!o.parcel_bytes)
        o.parcel_bytes = ST_SORT_PARCEL_DEFAULT;
    const char *env = getenv("TMPDIR");
    if (!o.tmpdir)
        o.tmpdir = env && *env ? env : "/tmp";
    if (!o.threads)
        o.threads = 2;
    if (rec_size == 0 || !cmp || o.threads < 1 || o.threads > 2) {
        st_err_set(err, ST_EINPUT, "sort: bad arguments (record size %zu, %d threads)",
                   rec_size, o.threads);
        return NULL;
    }
    size_t per = rec_size + 2 * sizeof(st_keyed);
    size_t cap = o.parcel_bytes / (size_t)o.threads / per;
    size_t need = rec_size / sizeof(st_keyed) + INSERT_RUN; /* spare must hold a record */
    if (cap < need) {
        st_err_set(err, ST_EINPUT,
                   "sort: a parcel of %zu bytes is too small for %zu-byte records (needs %zu)",
                   o.parcel_bytes, rec_size, need * per * (size_t)o.threads);
        return NULL;
    }
    if (strlen(o.tmpdir) >= PATH_MAX - 32) {
        st_sys_err(err, ENAMETOOLONG, "sort: temporary directory %s", o.tmpdir);
        return NULL;
    }
    st_sorter *s = mem_calloc(1, sizeof *s);
    if (!s) {
        st_err_nomem(err, "sort");
        return NULL;
    }
    s->rs = rec_size;
    s->cmp = cmp;
    s->ctx = ctx;
    s->prefix = o.prefix;
    s->parcel = o.parcel_bytes;
    s->cap = MIN(cap, (size_t)UINT32_MAX);
    s->threads = o.threads;
    strcpy(s->tmpdir, o.tmpdir);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->state = ADDING;
    return s;
}

/* Records the first failure, stops the worker and removes temporary files:
 * after an error nothing is left on disk even before st_sorter_free. */
static int fail(st_sorter *s, st_err *err)
{
    if (s->state != FAILED) {
        s->saved = *err;
        s->state = FAILED;
        st_err ignored; /* the first error is the one to report */
        stop_worker(s, &ignored);
        merger_close(&s->m);
        free_slots(s);
        remove_dir(s);
    }
    return -1;
}

/* Refuses a call in the wrong state, or repeats the saved error. */
static int refuse(st_sorter *s, const char *what, st_err *err)
{
    if (s->state == FAILED) {
        *err = s->saved;
        return -1;
    }
    st_err_set(err, ST_EINPUT, "sort: %s called out of turn", what);
    return fail(s, err);
}

int st_sorter_add(st_sorter *s, const void *rec, st_err *err)
{
    if (s->state != ADDING)
        return refuse(s, "st_sorter_add", err);
    struct slot *sl = &s->slot[s->cur];
    if (!sl->ent && alloc_slot(s, sl, err) < 0)
        return fail(s, err);
    if (sl->n == s->cap) {
        if (flush_slot(s, err) < 0)
            return fail(s, err);
        sl = &s->slot[s->cur];
    }
    memcpy(sl->recs + sl->n * s->rs, rec, s->rs);
    sl->ent[sl->n] = (st_keyed){prefix_of(s, rec), (uint32_t)sl->n};
    sl->n++;
    s->added++;
    return 0;
}

int st_sorter_finish(st_sorter *s, st_err *err)
{
    if (s->state != ADDING)
        return refuse(s, "st_sorter_finish", err);
    struct slot *sl = &s->slot[s->cur];
    if (!s->worker_on && s->nruns == 0) { /* (nruns is the worker's while it runs) */
        if (sl->ent)
            s->sorted = sort_ents(s, sl->recs, sl->ent, sl->ent + s->cap, sl->n);
        s->state = IN_MEMORY;
        return 0;
    }
    if (stop_worker(s, err) < 0 || (sl->n > 0 && spill(s, sl, err) < 0))
        return fail(s, err);
    free_slots(s);
    if (merge_down(s, err) < 0 || merger_open(s, &s->m, s->runs, s->nruns, s->nruns, err) < 0)
        return fail(s, err);
    s->state = MERGING;
    return 0;
}

int st_sorter_next(st_sorter *s, const void **rec, st_err *err)
{
    int rc;
    if (s->state == IN_MEMORY) {
        rc = s->pos < s->slot[0].n;
        if (rc)
            *rec = s->slot[0].recs + (size_t)s->sorted[s->pos++].idx * s->rs;
    } else if (s->state == MERGING) {
        rc = merger_next(s, &s->m, rec, err);
        if (rc < 0)
            return fail(s, err);
    } else if (s->state == ENDED) {
        return 0;
    } else {
        return refuse(s, "st_sorter_next", err);
    }
    if (rc == 1) {
        s->emitted++;
        return 1;
    }
    /* Trust but verify: as many records out as went in. */
    if (s->emitted != s->added) {
        st_err_set(err, ST_ECORRUPT, "sort: %llu records went in but %llu came out",
                   (unsigned long long)s->added, (unsigned long long)s->emitted);
        return fail(s, err);
    }
    merger_close(&s->m);
    remove_dir(s);
    s->state = ENDED;
    return 0;
}

void st_sorter_stats(const st_sorter *s, st_sort_stats *stats)
{
    stats->records = s->added;
    stats->runs = s->spilled;
    stats->merge_passes = s->passes;
}

void st_sorter_free(st_sorter *s)
{
    if (!s)
        return;
    st_err ignored; /* free reports nothing: the caller has its result */
    stop_worker(s, &ignored);
    merger_close(&s->m);
    free_slots(s);
    remove_dir(s);
    mem_free(s->runs, s->runs_cap * sizeof *s->runs);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    mem_free(s, sizeof *s);
}
