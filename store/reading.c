/* reading: a reading session's state at the store level; see reading.h. */
#include "config.h"
#include "store/reading.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "store/mem.h"
#include "store/nbuf.h"
#include "store/watch.h"

/* What identifies a store's current snapshot, read before opening it. */
typedef struct Mark {
    bool counted;       /* the counter was read (the store has one) */
    uint64_t seen;      /* its value */
    bool known;         /* MANIFEST's identity was read */
    st_file_id manifest;
} Mark;

struct st_reading {
    uint32_t refs;
    char *dir;              /* the last snapshot's store, or NULL */
    st_file_id manifest;    /* its MANIFEST's identity when opened */
    st_watch watch;         /* its counter, mapped (watching nothing if none) */
    uint64_t seen;          /* the counter's value that goes with manifest */
    uint64_t checked;       /* when MANIFEST was last found the same, 0: never */
    unsigned recheck;       /* the recheck epoch of that check */
    Mark next;              /* st_reading_opening's */
    unsigned long scans;    /* touched by the VM's thread only */
    atomic_int idle;        /* idle readers */
    int idle_bound;
};

/* Commands run (st_reading_recheck_all), process-wide. */
static atomic_uint recheck_epoch;

static uint64_t now_ns(void)
{
    struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);   /* no system call */
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool manifest_id(const char *dir, st_file_id *id)
{
    char path[PATH_MAX];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/MANIFEST", dir) >= (int)sizeof path || stat(path, &st) < 0)
        return false;
    st_file_id_of(&st, id);
    return true;
}

/* Idle readers hold descriptors: at most a quarter of the process's limit
 * (a session may open many stores), and no more than a key query needs to
 * find its file open. */
static int idle_bound(void)
{
    struct rlimit rl;
    rlim_t n = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur / 4 : 16;
    return n > 256 ? 256 : (int)n;
}

st_reading *st_reading_new(void)
{
    st_reading *s = mem_calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->refs = 1;
    s->idle_bound = idle_bound();
    return s;
}

st_reading *st_reading_ref(st_reading *s)
{
    s->refs++;
    return s;
}

void st_reading_unref(st_reading *s)
{
    if (!s || --s->refs)
        return;
    st_reading_forget(s);
    mem_free(s, sizeof *s);
}

/* ---- the last snapshot ------------------------------------------------- */

void st_reading_forget(st_reading *s)
{
    if (s->dir)
        mem_free(s->dir, strlen(s->dir) + 1);
    s->dir = NULL;
    st_watch_close(&s->watch);
}

void st_reading_opening(st_reading *s, const char *dir)
{
    Mark *m = &s->next;
    m->counted = st_watch_peek(dir, &m->seen) == 0;   /* before MANIFEST */
    m->known = manifest_id(dir, &m->manifest);
}

bool st_reading_opened(st_reading *s, const char *dir)
{
    st_file_id now;   /* the snapshot is current only if no commit came between */
    char *copy;
    if (!s->next.known || !manifest_id(dir, &now) || !st_file_id_eq(&now, &s->next.manifest) ||
        !(copy = mem_strdup(dir)))
        return false;
    st_reading_forget(s);
    s->dir = copy;
    s->manifest = s->next.manifest;
    s->checked = now_ns();
    s->recheck = atomic_load(&recheck_epoch);
    /* A counter that moved since it was read makes the next reopen stat. */
    if (s->next.counted && st_watch_open(&s->watch, dir) == 0)
        s->seen = s->next.seen;
    return true;
}

bool st_reading_current(st_reading *s, const char *dir)
{
    if (!s->dir || strcmp(s->dir, dir))
        return false;
    uint64_t count = s->watch.map ? st_watch_read(&s->watch) : 0, t = now_ns();
    unsigned epoch = atomic_load(&recheck_epoch);
    if (!s->watch.map || count != s->seen || (count & 1) || epoch != s->recheck ||
        t - s->checked >= ST_READING_RECHECK_NS) {
        st_file_id manifest;
        if (!manifest_id(dir, &manifest) || !st_file_id_eq(&manifest, &s->manifest))
            return false;
        s->seen = count;  /* a commit began but has not replaced MANIFEST */
        s->checked = t;
        s->recheck = epoch;
    }
    return true;
}

void st_reading_recheck_all(void)
{
    atomic_fetch_add(&recheck_epoch, 1);
}

/* ---- scans ------------------------------------------------------------- */

void st_reading_scan(st_reading *s)
{
    s->scans++;
}

bool st_reading_caches(const st_reading *s, unsigned ahead)
{
    return s->scans + ahead > 1;
}

/* ---- idle readers ------------------------------------------------------ */

bool st_reading_idle_add(st_reading *s)
{
    if (atomic_fetch_add(&s->idle, 1) < s->idle_bound)
        return true;
    atomic_fetch_sub(&s->idle, 1);
    return false;
}

void st_reading_idle_sub(st_reading *s)
{
    atomic_fetch_sub(&s->idle, 1);
}
