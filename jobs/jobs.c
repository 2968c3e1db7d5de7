/* jobs: the dispatcher's model and scheduler: jobs, resources, the journal
 * records that change them, and the start/reap cycle. See jobs.h.
 *
 * Readiness is kept incrementally so a step costs what changed, not the
 * number of jobs: each job counts its unsatisfied prerequisite edges (unsat);
 * a job whose phase changes adjusts the counts of its dependents. Edges point
 * from earlier to later jobs, so derived states (blocked, waiting on what)
 * are computed in one forward pass when someone asks. Eligible jobs wait in a
 * heap ordered by priority then submission; one that finds a resource full is
 * parked on that resource until it has room again.
 *
 * Every change is a journal record; the live path and the replay share the
 * same check_ and do_ functions. A do_ function never fails: what it needs
 * was allocated when the job was submitted. */
#include "config.h"
#include "jobs/jobs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "store/mem.h"
#include "jobs/exitlog.h"
#include "jobs/exec.h"
#include "jobs/spawn.h"
#include "jobs/journal.h"

#define KILL_GRACE 5.0     /* seconds between TERM and KILL for delete */
#define ADOPT_POLL_MS 200  /* how often a run this process did not start is checked */
#define LOAD_POLL 1.0      /* seconds between load-average readings */
#define SYNC_LAG 1.0       /* seconds a record may wait for fsync when nothing needs it */
#define NAME_MAX_LEN 200
#define RES_MAX_LEN 64
#define MAX_FIELDS 16
#define EXITLOG_ROTATE (1u << 20) /* bytes of exit records before a new generation */

enum phase { P_PENDING, P_RUNNING, P_DONE, P_FAILED };

typedef struct job job;
typedef struct res res;

struct inedge {
    job *from;
    unsigned char any; /* satisfied when from finished at all (after a resource) */
};
struct outedge {
    job *to;
    unsigned char any;
};

struct job {
    char *name; /* first: the name tables read items through (char **) */
    char *text, *dir;
    char **after;
    size_t nafter;
    res **uses;
    const char **usen; /* the resources' names, for encoding the job */
    size_t nuses;
    struct inedge *in;
    size_t nin;
    struct outedge *out;
    size_t nout, capout;
    size_t seq;
    int prio;
    enum job_kind kind;
    enum phase phase;
    unsigned char rerun, held, forced, deleted, inheap, parked, adopted, crashheld;
    int unsat;
    int runs, status;
    pid_t pid;             /* its wrapper, once the spawner said; 0 before */
    int xgen;              /* the exit log generation its run holds; 0 none */
    unsigned char gone;    /* its wrapper has exited */
    unsigned char xhave;   /* the exit record of its run was read: xstatus */
    int xstatus, wst;      /* wst: the wrapper's own wait status */
    size_t runidx;
    double started, ended, kill_at;
    /* derived by refresh() */
    enum job_state dstate;
    job *dcause;
    unsigned char ddeleted, dstuck;
};

struct res {
    char *name;
    long limit, running;
    job **users;
    size_t nusers, capusers;
    job **parked;
    size_t nparked, capparked;
};

struct table {
    void **slot;
    size_t cap, n;
};

struct jobs {
    char *rundir;
    journal *jnl;
    exitlog *xl;
    jobspawn *sp; /* started at the first run, again if it dies */
    int lockfd;
    int ownlog; /* log is RUNDIR/dispatcher.log, opened here */
    char *runlock; /* RUNDIR/exit/lock: a byte per job, locked by its wrapper */
    int runlockfd; /* for looking at those locks; it holds none */
    FILE *log;
    char *comb;
    job **v;
    size_t n, cap;
    res **rv;
    size_t nres, capres;
    struct table jt, rt;
    /* These three hold each job at most once and are grown at submission to
     * the number of jobs, so that nothing after a submission allocates. */
    job **heap;
    size_t nheap, capheap;
    job **run;
    size_t nrun, caprun;
    long maxjobs;
    double maxload, load_next, adopt_next;
    double sync_by; /* when the journal must next be synced, 0 if clean */
    int load_blocked, replaying;
    unsigned long gen, dgen;
    jw_buf rec;
    char err[1024];
};

/* ---- small helpers ---------------------------------------------------- */

int job_fail(jobs *js, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(js->err, sizeof js->err, fmt, ap);
    va_end(ap);
    return -1;
}

static int oom(jobs *js) { return job_fail(js, "out of memory"); }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void job_note(jobs *js, const char *fmt, ...)
{
    if (!js->log)
        return;
    char when[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
    fprintf(js->log, "%s comb jobs: ", when);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(js->log, fmt, ap);
    va_end(ap);
    fputc('\n', js->log);
    fflush(js->log);
}

static void free_str(char *s)
{
    if (s)
        mem_free(s, strlen(s) + 1);
}

/* Grows *p (elements of size sz, capacity *cap) to hold at least need. */
static int grow(void *pp, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 8;
    while (nc < need)
        nc *= 2;
    void **p = pp;
    void *q = mem_realloc(*p, *cap * sz, nc * sz);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

/* ---- name tables (open addressing; items start with their char *name) -- */

static const char *item_name(const void *item) { return *(char *const *)item; }

static size_t slot_of(const struct table *t, const char *name)
{
    size_t mask = t->cap - 1, i = (size_t)XXH3_64bits(name, strlen(name)) & mask;
    while (t->slot[i] && strcmp(item_name(t->slot[i]), name) != 0)
        i = (i + 1) & mask;
    return i;
}

static void *tget(const struct table *t, const char *name)
{
    return t->cap ? t->slot[slot_of(t, name)] : NULL;
}

/* Makes room for n items at load <= 1/2, so tput cannot fail. */
static int treserve(struct table *t, size_t n)
{
    if (2 * n <= t->cap)
        return 0;
    size_t nc = t->cap ? t->cap : 64;
    while (2 * n > nc)
        nc *= 2;
    struct table nt = {mem_calloc(nc, sizeof(void *)), nc, 0};
    if (!nt.slot)
        return -1;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i])
            nt.slot[slot_of(&nt, item_name(t->slot[i]))] = t->slot[i];
    nt.n = t->n;
    mem_free(t->slot, t->cap * sizeof(void *));
    *t = nt;
    return 0;
}

static void tput(struct table *t, void *item)
{
    t->slot[slot_of(t, item_name(item))] = item;
    t->n++;
}

/* ---- names ------------------------------------------------------------- */

static int is_res_name(const char *s)
{
    if (!(*s >= 'A' && *s <= 'Z'))
        return 0;
    size_t n = 0;
    for (; *s; s++, n++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return n <= RES_MAX_LEN;
}

static int is_job_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > NAME_MAX_LEN || is_res_name(s) || !strcmp(s, "jobs") || !strcmp(s, "load"))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || (i > 0 && strchr(".:@+-", c));
        if (!ok)
            return 0;
    }
    return 1;
}

/* ---- readiness ---------------------------------------------------------- */

static int sat(const job *j, int any)
{
    if (j->phase == P_DONE)
        return 1;
    return any && (j->phase == P_FAILED || (j->deleted && j->phase != P_RUNNING));
}

static int eligible(const job *j)
{
    return j->phase == P_PENDING && !j->held && !j->deleted && (j->forced || j->unsat == 0);
}

static int before(const job *a, const job *b)
{
    return a->prio != b->prio ? a->prio > b->prio : a->seq < b->seq;
}

static void heap_push(jobs *js, job *j)
{
    size_t i = js->nheap++;
    while (i > 0 && before(j, js->heap[(i - 1) / 2])) {
        js->heap[i] = js->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    js->heap[i] = j;
    j->inheap = 1;
}

static job *heap_pop(jobs *js)
{
    job *top = js->heap[0], *last = js->heap[--js->nheap];
    size_t i = 0, n = js->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && before(js->heap[c + 1], js->heap[c]))
            c++;
        if (!before(js->heap[c], last))
            break;
        js->heap[i] = js->heap[c];
        i = c;
    }
    if (n)
        js->heap[i] = last;
    top->inheap = 0;
    return top;
}

static void make_ready(jobs *js, job *j)
{
    if (eligible(j) && !j->inheap && !j->parked)
        heap_push(js, j);
}

static void unpark(jobs *js, res *r)
{
    for (size_t i = 0; i < r->nparked; i++) {
        r->parked[i]->parked = 0;
        make_ready(js, r->parked[i]);
    }
    r->nparked = 0;
}

/* Call with the job's satisfaction as it was before a change (snap), after
 * the change: dependents' counts follow, and those now free are queued. */
static void snap(const job *j, int s[2])
{
    s[0] = sat(j, 0);
    s[1] = sat(j, 1);
}

static void propagate(jobs *js, job *j, const int s[2])
{
    js->gen++;
    int now_ok = sat(j, 0), now_any = sat(j, 1);
    if (now_ok == s[0] && now_any == s[1])
        return;
    for (size_t i = 0; i < j->nout; i++) {
        struct outedge *e = &j->out[i];
        int was = s[e->any], is = e->any ? now_any : now_ok;
        if (was == is)
            continue;
        e->to->unsat += was - is;
        make_ready(js, e->to);
    }
}

/* ---- records ------------------------------------------------------------ */

/* Builds js->rec from a NULL-terminated list of fields. */
static int rec(jobs *js, const char *type, ...)
{
    jw_clear(&js->rec);
    int rc = jw_field(&js->rec, type);
    va_list ap;
    va_start(ap, type);
    for (const char *f; rc == 0 && (f = va_arg(ap, const char *));)
        rc = jw_field(&js->rec, f);
    va_end(ap);
    return rc < 0 ? oom(js) : 0;
}

static int commit(jobs *js)
{
    if (js->replaying)
        return 0;
    return jnl_append(js->jnl, js->rec.p, js->rec.len) < 0 ? oom(js) : 0;
}

static const char *num(char *buf, long v)
{
    snprintf(buf, 24, "%ld", v);
    return buf;
}

static const char *tnum(char *buf, double t)
{
    snprintf(buf, 32, "%.6f", t);
    return buf;
}

static int join_names(jw_buf *b, char *const *names, size_t n)
{
    jw_clear(b);
    for (size_t i = 0; i < n; i++)
        if ((i && jw_puts(b, ",") < 0) || jw_puts(b, names[i]) < 0)
            return -1;
    return jw_puts(b, "");
}

/* The spec fields of a submit record or request: NAME PRIO FLAGS KIND DIR
 * AFTER USES TEXT (lists comma-separated, flags r=rerun h=held or "-"). */
int job_spec_encode(const job_spec *s, jw_buf *out)
{
    char p[24], flags[4];
    jw_buf after = {0}, uses = {0};
    snprintf(p, sizeof p, "%d", s->prio);
    snprintf(flags, sizeof flags, "%s%s", s->rerun ? "r" : "", s->held ? "h" : "");
    int rc = join_names(&after, (char *const *)s->after, s->nafter) < 0 ||
                     join_names(&uses, (char *const *)s->uses, s->nuses) < 0 ||
                     jw_field(out, s->name) < 0 || jw_field(out, p) < 0 ||
                     jw_field(out, flags[0] ? flags : "-") < 0 ||
                     jw_field(out, s->kind == JOB_COMB ? "comb" : "sh") < 0 ||
                     jw_field(out, s->dir ? s->dir : "") < 0 || jw_field(out, after.p) < 0 ||
                     jw_field(out, uses.p) < 0 || jw_field(out, s->text) < 0
                 ? -1
                 : 0;
    jw_free(&after);
    jw_free(&uses);
    return rc;
}

/* ---- checks and changes ------------------------------------------------- */

static job *find(jobs *js, const char *name)
{
    job *j = tget(&js->jt, name);
    if (!j)
        job_fail(js, "no job named '%s'", name);
    return j;
}

static res *res_get(jobs *js, const char *name)
{
    res *r = tget(&js->rt, name);
    if (r)
        return r;
    if (grow(&js->rv, &js->capres, js->nres + 1, sizeof *js->rv) < 0 ||
        treserve(&js->rt, js->rt.n + 1) < 0 || !(r = mem_calloc(1, sizeof *r)))
        return NULL;
    if (!(r->name = mem_strdup(name))) {
        mem_free(r, sizeof *r);
        return NULL;
    }
    r->limit = JOB_UNLIMITED;
    js->rv[js->nres++] = r;
    tput(&js->rt, r);
    return r;
}

/* Checks a spec against the jobs so far and the earlier specs of its batch. */
static int check_submit(jobs *js, const job_spec *s, const struct table *batch)
{
    if (!s->name || !is_job_name(s->name))
        return job_fail(js, "bad job name '%s': use letters, digits and _ . : @ + - (not "
                        "starting with a punctuation mark, at most %d), and not a "
                        "capitalised resource name",
                    s->name ? s->name : "", NAME_MAX_LEN);
    if (tget(&js->jt, s->name) || (batch && tget(batch, s->name)))
        return job_fail(js, "job '%s' already exists", s->name);
    if (!s->text || !*s->text)
        return job_fail(js, "job '%s': nothing to run", s->name);
    if (s->dir && s->dir[0] != '/')
        return job_fail(js, "job '%s': directory '%s' is not absolute", s->name, s->dir);
    if (s->prio < -1000000 || s->prio > 1000000)
        return job_fail(js, "job '%s': priority %d out of range", s->name, s->prio);
    for (size_t i = 0; i < s->nafter; i++) {
        const char *a = s->after[i];
        if (is_res_name(a) || tget(&js->jt, a) || (batch && tget(batch, a)))
            continue;
        return job_fail(js, "job '%s': after '%s': no such job (a prerequisite must be submitted "
                        "before the job that names it) and not a resource name",
                    s->name, a);
    }
    for (size_t i = 0; i < s->nuses; i++)
        if (!is_res_name(s->uses[i]))
            return job_fail(js, "job '%s': bad resource name '%s' (capitals, digits, _)", s->name,
                        s->uses[i]);
    return 0;
}

static void free_job(job *j)
{
    if (!j)
        return;
    free_str(j->name);
    free_str(j->text);
    free_str(j->dir);
    for (size_t i = 0; j->after && i < j->nafter; i++)
        free_str(j->after[i]);
    mem_free(j->after, (j->nafter + 1) * sizeof *j->after);
    mem_free(j->uses, (j->nuses + 1) * sizeof *j->uses);
    mem_free(j->usen, (j->nuses + 1) * sizeof *j->usen);
    mem_free(j->in, (j->nin + 1) * sizeof *j->in);
    mem_free(j->out, j->capout * sizeof *j->out);
    mem_free(j, sizeof *j);
}

/* Allocates everything a new job will need, touching nothing visible but
 * (possibly) new, unused resources. */
static job *prepare(jobs *js, const job_spec *s)
{
    job *j = mem_calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->nafter = s->nafter;
    j->nuses = s->nuses;
    if (!(j->name = mem_strdup(s->name)) || !(j->text = mem_strdup(s->text)) ||
        (s->dir && !(j->dir = mem_strdup(s->dir))) ||
        !(j->after = mem_calloc(s->nafter + 1, sizeof *j->after)) ||
        !(j->uses = mem_calloc(s->nuses + 1, sizeof *j->uses)) ||
        !(j->usen = mem_calloc(s->nuses + 1, sizeof *j->usen)))
        goto fail;
    size_t nin = 0;
    for (size_t i = 0; i < s->nafter; i++) {
        if (!(j->after[i] = mem_strdup(s->after[i])))
            goto fail;
        if (is_res_name(s->after[i])) {
            res *r = res_get(js, s->after[i]);
            if (!r)
                goto fail;
            nin += r->nusers;
            for (size_t u = 0; u < r->nusers; u++)
                if (grow(&r->users[u]->out, &r->users[u]->capout, r->users[u]->nout + s->nafter,
                         sizeof(struct outedge)) < 0)
                    goto fail;
        } else {
            job *x = tget(&js->jt, s->after[i]);
            nin++;
            if (grow(&x->out, &x->capout, x->nout + s->nafter, sizeof(struct outedge)) < 0)
                goto fail;
        }
    }
    if (!(j->in = mem_calloc(nin + 1, sizeof *j->in)))
        goto fail;
    j->nin = nin;
    for (size_t i = 0; i < s->nuses; i++) {
        res *r = res_get(js, s->uses[i]);
        if (!r || grow(&r->users, &r->capusers, r->nusers + 1, sizeof *r->users) < 0 ||
            grow(&r->parked, &r->capparked, r->nusers + 1, sizeof *r->parked) < 0)
            goto fail;
        j->uses[i] = r;
        j->usen[i] = r->name;
    }
    size_t need = js->n + 1;
    if (treserve(&js->jt, need) < 0 || grow(&js->v, &js->cap, need, sizeof *js->v) < 0 ||
        grow(&js->heap, &js->capheap, need, sizeof *js->heap) < 0 ||
        grow(&js->run, &js->caprun, need, sizeof *js->run) < 0)
        goto fail;
    return j;
fail:
    free_job(j);
    return NULL;
}

/* Puts a prepared job in place; cannot fail. */
static void link_job(jobs *js, job *j, const job_spec *s)
{
    j->seq = js->n;
    j->prio = s->prio;
    j->kind = s->kind;
    j->rerun = s->rerun != 0;
    j->held = s->held != 0;
    j->status = -1;
    size_t k = 0;
    for (size_t i = 0; i < s->nafter; i++) {
        res *r = is_res_name(s->after[i]) ? tget(&js->rt, s->after[i]) : NULL;
        size_t m = r ? r->nusers : 1;
        for (size_t u = 0; u < m; u++) {
            job *x = r ? r->users[u] : tget(&js->jt, s->after[i]);
            j->in[k++] = (struct inedge){x, r != NULL};
            x->out[x->nout++] = (struct outedge){j, r != NULL};
            j->unsat += !sat(x, r != NULL);
        }
    }
    for (size_t i = 0; i < j->nuses; i++)
        j->uses[i]->users[j->uses[i]->nusers++] = j;
    js->v[js->n++] = j;
    tput(&js->jt, j);
    js->gen++;
    make_ready(js, j);
}

static void take(jobs *js, job *j)
{
    for (size_t i = 0; i < j->nuses; i++)
        j->uses[i]->running++;
    j->runidx = js->nrun;
    js->run[js->nrun++] = j;
}

static void release(jobs *js, job *j)
{
    for (size_t i = 0; i < j->nuses; i++) {
        j->uses[i]->running--;
        unpark(js, j->uses[i]);
    }
    job *last = js->run[--js->nrun];
    js->run[j->runidx] = last;
    last->runidx = j->runidx;
    j->pid = 0;
    j->adopted = 0;
    j->kill_at = 0;
}

static void do_start(jobs *js, job *j, int run, double t)
{
    int s[2];
    snap(j, s);
    j->phase = P_RUNNING;
    j->runs = run;
    j->gone = j->xhave = 0;
    j->started = t;
    j->ended = 0;
    take(js, j);
    propagate(js, j, s);
}

static void do_end(jobs *js, job *j, int status, double t)
{
    int s[2];
    snap(j, s);
    release(js, j);
    j->phase = status == 0 ? P_DONE : P_FAILED;
    j->status = status;
    j->ended = t;
    propagate(js, j, s);
}

/* A run nobody recorded the end of: queued again, or held if not rerunnable. */
static void do_lost(jobs *js, job *j)
{
    int s[2];
    snap(j, s);
    release(js, j);
    j->phase = P_PENDING;
    if (!j->rerun)
        j->held = j->crashheld = 1;
    propagate(js, j, s);
    make_ready(js, j);
}

static int check_delete(jobs *js, job *j)
{
    return j->deleted ? job_fail(js, "job '%s' is already deleted", j->name) : 0;
}
static void do_delete(jobs *js, job *j)
{
    int s[2];
    snap(j, s);
    j->deleted = 1; /* a running one is killed by job_step, never by a replay */
    propagate(js, j, s);
}

static int check_pending(jobs *js, job *j, const char *verb)
{
    if (j->deleted)
        return job_fail(js, "cannot %s job '%s': it is deleted", verb, j->name);
    if (j->phase != P_PENDING)
        return job_fail(js, "cannot %s job '%s': it is %s", verb, j->name,
                    j->phase == P_RUNNING ? "running" : "finished (use retry)");
    return 0;
}

static int check_force(jobs *js, job *j) { return check_pending(js, j, "force"); }
static void do_force(jobs *js, job *j)
{
    j->forced = 1;
    j->held = j->crashheld = 0;
    js->gen++;
    make_ready(js, j);
}

static int check_retry(jobs *js, job *j)
{
    if (j->deleted)
        return job_fail(js, "cannot retry job '%s': it is deleted", j->name);
    if (j->phase == P_PENDING || j->phase == P_RUNNING)
        return job_fail(js, "cannot retry job '%s': it is %s", j->name,
                    j->phase == P_RUNNING ? "running" : "not finished");
    return 0;
}
static void do_retry(jobs *js, job *j)
{
    int s[2];
    snap(j, s);
    j->phase = P_PENDING;
    j->forced = 0;
    propagate(js, j, s);
    make_ready(js, j);
}

static int check_hold(jobs *js, job *j)
{
    if (check_pending(js, j, "hold") < 0)
        return -1;
    return j->held ? job_fail(js, "job '%s' is already held", j->name) : 0;
}
static void do_hold(jobs *js, job *j)
{
    j->held = 1;
    js->gen++;
}

static int check_release(jobs *js, job *j)
{
    return j->held && !j->deleted ? 0 : job_fail(js, "job '%s' is not held", j->name);
}
static void do_release(jobs *js, job *j)
{
    j->held = j->crashheld = 0;
    js->gen++;
    make_ready(js, j);
}

typedef int (*check_fn)(jobs *, job *);
typedef void (*do_fn)(jobs *, job *);
static const struct adminop {
    const char *verb;
    check_fn check;
    do_fn apply;
} adminops[] = {
    {"delete", check_delete, do_delete}, {"force", check_force, do_force},
    {"retry", check_retry, do_retry},    {"hold", check_hold, do_hold},
    {"release", check_release, do_release},
};

static const struct adminop *adminop(const char *verb)
{
    for (size_t i = 0; i < sizeof adminops / sizeof *adminops; i++)
        if (!strcmp(adminops[i].verb, verb))
            return &adminops[i];
    return NULL;
}

static int admin(jobs *js, const char *verb, const char *name)
{
    const struct adminop *op = adminop(verb);
    job *j = find(js, name);
    if (!j || op->check(js, j) < 0 || rec(js, verb, name, NULL) < 0 || commit(js) < 0)
        return -1;
    op->apply(js, j);
    return 0;
}

int job_delete(jobs *js, const char *name) { return admin(js, "delete", name); }
int job_force(jobs *js, const char *name) { return admin(js, "force", name); }
int job_retry(jobs *js, const char *name) { return admin(js, "retry", name); }
int job_hold(jobs *js, const char *name) { return admin(js, "hold", name); }
int job_release(jobs *js, const char *name) { return admin(js, "release", name); }

/* Limits. name is a resource, "jobs" or "load"; the value's text goes to
 * the journal as given so a replay sets exactly what was set. */
static int parse_limit(jobs *js, const char *name, const char *text, double *v)
{
    char *end;
    int isload = !strcmp(name, "load");
    if (!isload && strcmp(name, "jobs") && !is_res_name(name))
        return job_fail(js, "limit: '%s' is not a resource name, 'jobs' or 'load'", name);
    if (!strcmp(text, "none")) {
        *v = -1;
        return 0;
    }
    errno = 0;
    *v = isload ? strtod(text, &end) : (double)strtol(text, &end, 10);
    if (errno || end == text || *end || *v < 0 || *v > 1e9 || isnan(*v))
        return job_fail(js, "limit %s: bad value '%s' (%s, or none)", name, text,
                    isload ? "a load average" : "a count >= 0");
    return 0;
}

static int do_limit(jobs *js, const char *name, double v)
{
    js->gen++;
    if (!strcmp(name, "jobs")) {
        js->maxjobs = v < 0 ? LONG_MAX : (long)v;
        return 0;
    }
    if (!strcmp(name, "load")) {
        js->maxload = v < 0 ? 0 : v;
        js->load_next = 0;
        return 0;
    }
    res *r = res_get(js, name);
    if (!r)
        return oom(js);
    r->limit = v < 0 ? JOB_UNLIMITED : (long)v;
    unpark(js, r);
    return 0;
}

static int set_limit(jobs *js, const char *name, const char *text)
{
    double v = 0;
    if (parse_limit(js, name, text, &v) < 0)
        return -1;
    if (!strcmp(name, "load") || !strcmp(name, "jobs") || tget(&js->rt, name)) {
        if (rec(js, "limit", name, text, NULL) < 0 || commit(js) < 0)
            return -1;
        return do_limit(js, name, v);
    }
    /* a new resource: create it first so the record cannot be left unapplied */
    if (!res_get(js, name))
        return oom(js);
    return set_limit(js, name, text);
}

int job_limit(jobs *js, const char *resource, long limit)
{
    char b[24];
    if (!is_res_name(resource))
        return job_fail(js, "limit: bad resource name '%s' (capitals, digits, _)", resource);
    return set_limit(js, resource, limit < 0 ? "none" : num(b, limit));
}

int job_limit_jobs(jobs *js, long limit)
{
    char b[24];
    return set_limit(js, "jobs", limit < 0 ? "none" : num(b, limit));
}

int job_limit_load(jobs *js, double load)
{
    char b[32];
    snprintf(b, sizeof b, "%g", load);
    return set_limit(js, "load", load <= 0 ? "none" : b);
}

int job_set_limit_text(jobs *js, const char *name, const char *value)
{
    return set_limit(js, name, value);
}

/* ---- submission --------------------------------------------------------- */

static int submit_one(jobs *js, const job_spec *s)
{
    job *j = prepare(js, s);
    if (!j)
        return oom(js);
    jw_clear(&js->rec);
    if (jw_field(&js->rec, "submit") < 0 || job_spec_encode(s, &js->rec) < 0 || commit(js) < 0) {
        free_job(j);
        return oom(js);
    }
    link_job(js, j, s);
    return 0;
}

int job_submit_many(jobs *js, const job_spec *specs, size_t n)
{
    struct table batch = {0};
    int rc = 0;
    if (n > 1 && treserve(&batch, n) < 0)
        return oom(js);
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = check_submit(js, &specs[i], n > 1 ? &batch : NULL);
        if (rc == 0 && n > 1)
            tput(&batch, (void *)&specs[i]); /* a job_spec starts with its name too */
    }
    mem_free(batch.slot, batch.cap * sizeof(void *));
    for (size_t i = 0; i < n && rc == 0; i++)
        if (submit_one(js, &specs[i]) < 0)
            rc = i ? job_fail(js, "out of memory after %zu of %zu jobs", i, n) : -1;
    return rc;
}

int job_submit(jobs *js, const job_spec *spec) { return job_submit_many(js, spec, 1); }

/* Decodes the 8 spec fields of a submit record or request. The after and
 * uses arrays are allocated in one block: free it with job_spec_free. */
int job_spec_decode(char **f, job_spec *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    char *end;
    long prio = strtol(f[1], &end, 10);
    if (end == f[1] || *end || prio < INT_MIN || prio > INT_MAX) {
        snprintf(err, errlen, "bad priority '%s'", f[1]);
        return -1;
    }
    if (strcmp(f[3], "sh") && strcmp(f[3], "comb")) {
        snprintf(err, errlen, "bad job kind '%s' (sh or comb)", f[3]);
        return -1;
    }
    size_t na = *f[5] != '\0', nu = *f[6] != '\0';
    for (char *p = f[5]; *p; p++)
        na += *p == ',';
    for (char *p = f[6]; *p; p++)
        nu += *p == ',';
    const char **v = mem_calloc(na + nu + 1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t k = 0;
    for (int l = 5; l <= 6; l++)
        for (char *p = f[l]; *p;) {
            v[k++] = p;
            p += strcspn(p, ",");
            if (*p)
                *p++ = '\0';
        }
    s->name = f[0];
    s->prio = (int)prio;
    s->rerun = strchr(f[2], 'r') != NULL;
    s->held = strchr(f[2], 'h') != NULL;
    s->kind = f[3][0] == 'c' ? JOB_COMB : JOB_SHELL;
    s->dir = *f[4] ? f[4] : NULL;
    s->after = v;
    s->nafter = na;
    s->uses = v + na;
    s->nuses = nu;
    s->text = f[7];
    return 0;
}

void job_spec_free(job_spec *s)
{
    mem_free((void *)s->after, (s->nafter + s->nuses + 1) * sizeof *s->after);
    s->after = s->uses = NULL;
}

/* The spec of a job as submitted (for snapshots and job_get). */
static job_spec spec_of(const job *j)
{
    return (job_spec){j->name,  j->prio, (const char *const *)j->after, j->nafter, j->usen,
                      j->nuses, j->kind, j->text,   j->dir,        j->rerun,  0};
}

/* ---- replay ------------------------------------------------------------- */

static const char *phase_names[] = {"pending", "running", "done", "failed"};

/* A snapshot's state record: where a job stood when the journal was compacted. */
static int apply_state(jobs *js, job *j, char **f)
{
    int ph = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(f[0], phase_names[i]))
            ph = i;
    if (ph < 0 || j->phase != P_PENDING)
        return job_fail(js, "bad state record for job '%s'", j->name);
    int s[2];
    snap(j, s);
    j->phase = (enum phase)ph;
    j->runs = atoi(f[1]);
    j->status = atoi(f[2]);
    j->held = strchr(f[3], 'h') != NULL;
    j->forced = strchr(f[3], 'f') != NULL;
    j->deleted = strchr(f[3], 'd') != NULL;
    j->crashheld = strchr(f[3], 'c') != NULL;
    j->started = atof(f[5]);
    j->ended = atof(f[6]);
    if (j->phase == P_RUNNING) {
        take(js, j);
        j->pid = atoi(f[4]);
    }
    propagate(js, j, s);
    return 0;
}

static int apply_record(jobs *js, char **f, int n)
{
    const char *t = f[0];
    const struct adminop *op = adminop(t);
    if (!strcmp(t, "submit") && n == 9) {
        job_spec s;
        if (job_spec_decode(f + 1, &s, js->err, sizeof js->err) < 0)
            return -1;
        int rc = check_submit(js, &s, NULL) < 0 ? -1 : submit_one(js, &s);
        job_spec_free(&s);
        return rc;
    }
    if (!strcmp(t, "limit") && n == 3)
        return set_limit(js, f[1], f[2]);
    job *j = n >= 2 ? find(js, f[1]) : NULL;
    if (!j)
        return n >= 2 ? -1 : job_fail(js, "empty record");
    if (op && n == 2)
        return op->check(js, j) < 0 ? -1 : (op->apply(js, j), 0);
    if (!strcmp(t, "state") && n == 9)
        return apply_state(js, j, f + 2);
    if (!strcmp(t, "start") && n == 4 && j->phase == P_PENDING) {
        do_start(js, j, atoi(f[2]), atof(f[3]));
        return 0;
    }
    if (j->phase != P_RUNNING || atoi(f[2]) != j->runs)
        return job_fail(js, "record '%s' for job '%s' run %s, which is not running", t, f[1],
                    n > 2 ? f[2] : "?");
    if (!strcmp(t, "pid") && n == 4)
        j->pid = atoi(f[3]);
    else if (!strcmp(t, "end") && n == 5)
        do_end(js, j, atoi(f[3]), atof(f[4]));
    else if (!strcmp(t, "lost") && n == 3)
        do_lost(js, j);
    else
        return job_fail(js, "unknown record '%s' with %d fields", t, n);
    return 0;
}

static int apply(void *ctx, char *line, char *err, size_t errlen)
{
    jobs *js = ctx;
    char *f[MAX_FIELDS];
    int n = jw_split(line, f, MAX_FIELDS);
    if (n < 1 ? job_fail(js, "malformed record") : apply_record(js, f, n) < 0) {
        snprintf(err, errlen, "%s", js->err);
        return -1;
    }
    return 0;
}

/* ---- compaction --------------------------------------------------------- */

static int append_rec(jobs *js) { return jnl_append(js->jnl, js->rec.p, js->rec.len); }

static int snapshot_job(jobs *js, const job *j)
{
    job_spec s = spec_of(j);
    char flags[8], *w = flags, rb[24], sb[24], pb[24], t1[32], t2[32];
    if (j->held)
        *w++ = 'h';
    if (j->forced)
        *w++ = 'f';
    if (j->deleted)
        *w++ = 'd';
    if (j->crashheld)
        *w++ = 'c';
    if (w == flags)
        *w++ = '-';
    *w = '\0';
    jw_clear(&js->rec);
    if (jw_field(&js->rec, "submit") < 0 || job_spec_encode(&s, &js->rec) < 0 ||
        append_rec(js) < 0)
        return -1;
    if (j->phase == P_PENDING && j->runs == 0 && !j->held && !j->forced && !j->deleted)
        return 0; /* as submitted */
    return rec(js, "state", j->name, phase_names[j->phase], num(rb, j->runs), num(sb, j->status),
               flags, num(pb, j->pid), tnum(t1, j->started), tnum(t2, j->ended), NULL) < 0
               ? -1
               : append_rec(js);
}

static int snapshot_limits(jobs *js)
{
    char b[32];
    for (size_t i = 0; i < js->nres; i++)
        if (js->rv[i]->limit != JOB_UNLIMITED &&
            (rec(js, "limit", js->rv[i]->name, num(b, js->rv[i]->limit), NULL) < 0 ||
             append_rec(js) < 0))
            return -1;
    if (js->maxjobs != LONG_MAX &&
        (rec(js, "limit", "jobs", num(b, js->maxjobs), NULL) < 0 || append_rec(js) < 0))
        return -1;
    snprintf(b, sizeof b, "%g", js->maxload);
    if (js->maxload > 0 && (rec(js, "limit", "load", b, NULL) < 0 || append_rec(js) < 0))
        return -1;
    return 0;
}

static int compact(jobs *js)
{
    if (jnl_snapshot_begin(js->jnl) < 0)
        return job_fail(js, "%s", jnl_error(js->jnl));
    int rc = 0;
    for (size_t i = 0; i < js->n && rc == 0; i++)
        rc = snapshot_job(js, js->v[i]);
    if (rc == 0)
        rc = snapshot_limits(js);
    if (rc < 0) {
        jnl_snapshot_abort(js->jnl);
        return oom(js);
    }
    return jnl_snapshot_commit(js->jnl) < 0 ? job_fail(js, "%s", jnl_error(js->jnl)) : 0;
}

/* ---- running ------------------------------------------------------------ */

static int sync_journal(jobs *js)
{
    if (jnl_sync(js->jnl) < 0)
        return job_fail(js, "%s", jnl_error(js->jnl));
    js->sync_by = 0;
    /* the ends are durable now: the exit records of ended runs may go */
    if (xl_trim(js->xl) < 0)
        job_note(js, "%s", xl_error(js->xl));
    if (jnl_records(js->jnl) > 1024 + 4 * js->n)
        return compact(js);
    return 0;
}

int job_sync(jobs *js) { return sync_journal(js); }

/* Writes the journal; syncs it if something has waited SYNC_LAG for that. */
static int flush_journal(jobs *js)
{
    if (jnl_flush(js->jnl) < 0)
        return job_fail(js, "%s", jnl_error(js->jnl));
    double t = now();
    if (!jnl_dirty(js->jnl))
        js->sync_by = 0;
    else if (js->sync_by == 0)
        js->sync_by = t + SYNC_LAG;
    else if (t >= js->sync_by)
        return sync_journal(js);
    return 0;
}

/* Once the end of j's run is in the journal, its exit record may go with
 * its generation; if the journal could not take it, the record stays. */
static void unhold(jobs *js, job *j)
{
    if (j->xgen)
        xl_release(js->xl, j->xgen);
    j->xgen = 0;
}

static void finish(jobs *js, job *j, int status)
{
    char rb[24], sb[24], tb[32], d[32];
    double t = now();
    int run = j->runs;
    if (rec(js, "end", j->name, num(rb, run), num(sb, status), tnum(tb, t), NULL) == 0 &&
        commit(js) == 0)
        unhold(js, j);
    if (status != 0) {
        jobexec_describe(status, d, sizeof d);
        job_note(js, "job %s run %d failed: %s", j->name, run, d);
    }
    do_end(js, j, status, t);
}

static void lose(jobs *js, job *j)
{
    char rb[24];
    if (rec(js, "lost", j->name, num(rb, j->runs), NULL) == 0 && commit(js) == 0)
        unhold(js, j);
    job_note(js, "job %s run %d was lost (its wrapper left no exit status): %s", j->name, j->runs,
          j->rerun ? "queued again" : "held, not rerunnable");
    do_lost(js, j);
}

/* The spawner died or could not be reached: the runs it started, or may
 * have, are looked after through their locks from now on, as after a
 * restart. */
static void lose_spawner(jobs *js, const char *why)
{
    job_note(js, "%s: its runs are adopted", why);
    for (size_t i = 0; i < js->nrun; i++)
        js->run[i]->adopted |= !js->run[i]->gone;
    jsp_close(js->sp);
    js->sp = NULL;
}

/* Asks the spawner for j's run (starting a spawner if there is none). */
static int request_run(jobs *js, job *j, const jobexec_run *r, char *e, size_t elen)
{
    if (!js->sp && !(js->sp = jsp_open(js->comb, e, elen)))
        return -1;
    if (jsp_start(js->sp, (long)j->seq, r, e, elen) == 0)
        return 0;
    lose_spawner(js, e);
    return -1;
}

static void spawn(jobs *js, job *j)
{
    char logp[PATH_MAX], env[PATH_MAX + 512], xrec[NAME_MAX_LEN + 32];
    char hdr[NAME_MAX_LEN + 128], ftr[NAME_MAX_LEN + 64], when[32], e[PATH_MAX + 64];
    snprintf(logp, sizeof logp, "%s/log/%s.log", js->rundir, j->name);
    snprintf(xrec, sizeof xrec, "%s %d", j->name, j->runs);
    time_t t = (time_t)j->started;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
    snprintf(hdr, sizeof hdr, "--- comb jobs: %s run %d started %s\n", j->name, j->runs, when);
    snprintf(ftr, sizeof ftr, "--- comb jobs: %s run %d ", j->name, j->runs);
    const char *argv[] = {j->kind == JOB_COMB ? js->comb : "/bin/sh",
                          j->kind == JOB_COMB ? "-e" : "-c", j->text, NULL};
    /* the job's own variables; the rest of its environment is the spawner's */
    int a = snprintf(env, sizeof env, "COMB_JOB=%s", j->name) + 1;
    int b = snprintf(env + a, sizeof env - (size_t)a, "COMB_JOB_RUN=%d", j->runs) + 1;
    snprintf(env + a + b, sizeof env - (size_t)(a + b), "COMB_JOBS_RUNDIR=%s", js->rundir);
    char *envp[] = {env, env + a, env + a + b, NULL};
    jobexec_run r = {argv, envp, j->dir, logp, hdr,           ftr,
                     xrec, js->runlock, (off_t)j->seq, xl_path(js->xl), !j->rerun};
    /* a spawner that died is started again, once */
    if (request_run(js, j, &r, e, sizeof e) < 0 && request_run(js, j, &r, e, sizeof e) < 0) {
        job_note(js, "job %s run %d could not start: %s", j->name, j->runs, e);
        j->adopted = 0;
        finish(js, j, 127 << 8);
        return;
    }
    j->adopted = 0; /* lose_spawner may have taken it for one of the spawner's */
    j->xgen = xl_gen(js->xl);
    xl_hold(js->xl, j->xgen);
}

static int load_ok(jobs *js)
{
    if (js->maxload <= 0)
        return !(js->load_blocked = 0);
    double t = now(), l;
    if (t >= js->load_next) {
        js->load_blocked = getloadavg(&l, 1) == 1 && l > js->maxload;
        js->load_next = t + LOAD_POLL;
    }
    return !js->load_blocked;
}

static res *first_full(const job *j)
{
    for (size_t i = 0; i < j->nuses; i++)
        if (j->uses[i]->limit != JOB_UNLIMITED && j->uses[i]->running >= j->uses[i]->limit)
            return j->uses[i];
    return NULL;
}

/* Starts every job that can start now: journals them, syncs once, forks.
 * The sync is skipped when every one of them is rerunnable: if a crash loses
 * such a start record, the job runs again, which is what rerunnable allows
 * (so the record is synced within SYNC_LAG, with whatever comes next). */
static int dispatch(jobs *js)
{
    if (!load_ok(js))
        return 0;
    size_t first = js->nrun;
    int must_sync = 0;
    double t = now();
    char rb[24], tb[32];
    while (js->nrun < (size_t)js->maxjobs && js->nheap) {
        job *j = heap_pop(js);
        if (!eligible(j))
            continue;
        res *r = first_full(j);
        if (r) {
            j->parked = 1;
            r->parked[r->nparked++] = j;
            continue;
        }
        if (rec(js, "start", j->name, num(rb, j->runs + 1), tnum(tb, t), NULL) < 0 ||
            commit(js) < 0) {
            heap_push(js, j);
            return -1;
        }
        do_start(js, j, j->runs + 1, t);
        must_sync |= !j->rerun;
    }
    if (js->nrun == first)
        return 0;
    if ((must_sync ? sync_journal(js) : flush_journal(js)) < 0)
        return -1;
    /* backwards: a start that fails ends at once, moving the last run into its slot */
    for (size_t i = js->nrun; i-- > first;)
        spawn(js, js->run[i]);
    return 0;
}

static void on_record(void *ctx, const char *name, int run, int status)
{
    jobs *js = ctx;
    job *j = tget(&js->jt, name);
    if (j && j->phase == P_RUNNING && j->runs == run) {
        j->xhave = 1;
        j->xstatus = status;
    }
}

/* Takes in the new exit records. 0, or -1 if the log could not be read. */
static int read_exits(jobs *js)
{
    long bad = xl_read(js->xl, on_record, js);
    if (bad < 0)
        job_note(js, "%s", xl_error(js->xl));
    else if (bad > 0)
        job_note(js, "exit log: %ld damaged record%s skipped", bad, bad == 1 ? "" : "s");
    return bad < 0 ? -1 : 0;
}

static int alive(const jobs *js, const job *j)
{
    return jobexec_alive(js->runlockfd, (off_t)j->seq);
}

/* What the spawner says: a wrapper started (its pid is journaled), could not
 * start, or ended. */
static void on_event(void *ctx, enum jsp_event e, long a, long b, const char *text)
{
    jobs *js = ctx;
    job *j = NULL;
    if (e != JSP_ENDED && a >= 0 && (size_t)a < js->n)
        j = js->v[a];
    for (size_t i = 0; e == JSP_ENDED && i < js->nrun; i++)
        if (js->run[i]->pid == (pid_t)a)
            j = js->run[i];
    if (!j || j->phase != P_RUNNING || j->gone || j->adopted)
        return;
    char rb[24], pb[24];
    switch (e) {
    case JSP_STARTED:
        j->pid = (pid_t)b;
        if (rec(js, "pid", j->name, num(rb, j->runs), num(pb, b), NULL) == 0)
            commit(js);
        break;
    case JSP_FAILED:
        job_note(js, "job %s run %d could not start: %s", j->name, j->runs, text);
        j->gone = 1;
        j->wst = 127 << 8;
        break;
    case JSP_ENDED:
        j->gone = 1;
        j->wst = (int)b;
        break;
    }
}

static void read_spawner(jobs *js)
{
    char err[256];
    if (js->sp && jsp_read(js->sp, on_event, js, err, sizeof err) < 0)
        lose_spawner(js, err);
}

/* Ends the runs whose wrappers exited; checks adopted runs now and then. A
 * wrapper writes its record before it exits, so once it is gone the record
 * is there to read, or will never be. */
static void reap(jobs *js)
{
    double t = now();
    int check_adopted = t >= js->adopt_next, any = 0;
    if (check_adopted)
        js->adopt_next = t + ADOPT_POLL_MS / 1000.0;
    read_spawner(js);
    for (size_t i = 0; i < js->nrun; i++) {
        job *j = js->run[i];
        if (!j->gone && j->adopted)
            j->gone = check_adopted && !alive(js, j);
        any |= j->gone;
    }
    if (!any)
        return;
    int ok = read_exits(js) == 0;
    for (size_t i = js->nrun; i-- > 0;) {
        job *j = js->run[i];
        if (!j->gone)
            continue;
        if (j->xhave)
            finish(js, j, j->xstatus);
        else if (!j->adopted)
            finish(js, j, j->wst); /* the wrapper itself was killed */
        else if (ok)
            lose(js, j);
    }
}

/* Deleted jobs still running: TERM to the group, KILL after the grace. */
static void kill_deleted(jobs *js)
{
    double t = now();
    for (size_t i = 0; i < js->nrun; i++) {
        job *j = js->run[i];
        if (!j->deleted || j->pid <= 0 || isinf(j->kill_at) || j->gone)
            continue;
        if (!alive(js, j)) /* not our child: make sure the group is still its */
            continue;
        if (j->kill_at == 0) {
            kill(-j->pid, SIGTERM);
            j->kill_at = t + KILL_GRACE;
        } else if (t >= j->kill_at) {
            kill(-j->pid, SIGKILL);
            j->kill_at = INFINITY;
        }
    }
}

int job_step(jobs *js)
{
    reap(js);
    kill_deleted(js);
    if (dispatch(js) < 0)
        return -1;
    return flush_journal(js);
}

size_t job_pollfds(const jobs *js, struct pollfd *fds, size_t max)
{
    if (!js->sp || max == 0)
        return 0;
    fds[0] = (struct pollfd){jsp_fd(js->sp), POLLIN, 0};
    return 1;
}

static int min_ms(int a, int b) { return a < 0 ? b : b < 0 ? a : a < b ? a : b; }

int job_timeout_ms(jobs *js)
{
    int ms = js->load_blocked ? (int)(LOAD_POLL * 1000) : -1;
    double t = now();
    if (js->sync_by > 0)
        ms = min_ms(ms, js->sync_by <= t ? 0 : (int)((js->sync_by - t) * 1000) + 1);
    for (size_t i = 0; i < js->nrun; i++) {
        job *j = js->run[i];
        if (j->adopted)
            ms = min_ms(ms, ADOPT_POLL_MS);
        if (j->deleted && j->kill_at > 0 && !isinf(j->kill_at))
            ms = min_ms(ms, j->kill_at <= t ? 0 : (int)((j->kill_at - t) * 1000) + 1);
        else if (j->deleted && j->kill_at == 0 && j->pid > 0)
            ms = 0;
    }
    return ms;
}

/* After a replay: each run the journal says is going goes on (its wrapper
 * holds its lock: adopted), finished (its exit record is there) or was lost.
 * The locks are looked at before the records, which a wrapper writes before
 * it lets go of its lock. */
static int recover(jobs *js)
{
    for (size_t i = 0; i < js->nrun; i++)
        js->run[i]->adopted = (unsigned char)alive(js, js->run[i]);
    if (read_exits(js) < 0)
        return job_fail(js, "%s", xl_error(js->xl));
    for (size_t i = js->nrun; i-- > 0;) {
        job *j = js->run[i];
        if (j->adopted) {
            j->xgen = XL_UNKNOWN;
            xl_hold(js->xl, XL_UNKNOWN);
            job_note(js, "job %s run %d is still running (pid %ld): adopted", j->name, j->runs,
                     (long)j->pid);
        } else if (j->xhave) {
            job_note(js, "job %s run %d ended while no dispatcher ran", j->name, j->runs);
            finish(js, j, j->xstatus);
        } else {
            lose(js, j);
        }
    }
    return 0;
}

/* ---- looking ------------------------------------------------------------ */

/* Derives every pending job's state in one pass in submission order, which
 * is topological: a job's prerequisites are settled before it is. */
static void refresh(jobs *js)
{
    if (js->dgen == js->gen + 1)
        return;
    for (size_t i = 0; i < js->n; i++) {
        job *j = js->v[i];
        j->dcause = NULL;
        j->ddeleted = j->dstuck = 0;
        if (j->deleted || j->phase != P_PENDING) {
            static const enum job_state by_phase[] = {JOB_WAITING, JOB_RUNNING, JOB_DONE,
                                                      JOB_FAILED};
            j->dstate = j->deleted ? JOB_DELETED : by_phase[j->phase];
            continue;
        }
        if (j->held || j->forced || j->unsat == 0) {
            j->dstate = j->held ? JOB_HELD : JOB_RUNNABLE;
            j->dstuck = j->held;
            continue;
        }
        job *wait = NULL, *stuck = NULL;
        j->dstate = JOB_WAITING;
        for (size_t k = 0; k < j->nin && j->dstate == JOB_WAITING; k++) {
            job *x = j->in[k].from;
            if (sat(x, j->in[k].any))
                continue;
            if ((!j->in[k].any && (x->phase == P_FAILED || x->deleted)) ||
                x->dstate == JOB_BLOCKED) {
                int direct = x->dstate != JOB_BLOCKED;
                j->dstate = JOB_BLOCKED;
                j->dcause = direct ? x : x->dcause;
                j->ddeleted = direct ? x->deleted : x->ddeleted;
            } else if (x->dstuck) {
                stuck = stuck ? stuck : x;
            } else {
                wait = wait ? wait : x;
            }
        }
        if (j->dstate == JOB_WAITING) {
            j->dcause = wait ? wait : stuck;
            j->dstuck = wait == NULL;
        }
    }
    js->dgen = js->gen + 1; /* +1 so that a fresh dispatcher (gen 0) refreshes */
}

size_t job_count(const jobs *js) { return js->n; }

long job_find(const jobs *js, const char *name)
{
    job *j = tget(&js->jt, name);
    return j ? (long)j->seq : -1;
}

void job_get(jobs *js, size_t i, job_info *out)
{
    refresh(js);
    job *j = js->v[i];
    memset(out, 0, sizeof *out);
    out->spec = spec_of(j);
    out->spec.held = j->held;
    out->state = j->dstate;
    out->cause = j->dcause ? j->dcause->name : j->crashheld ? "crash" : NULL;
    out->cause_deleted = j->ddeleted;
    out->runs = j->runs;
    out->status = j->runs ? j->status : -1;
    out->pid = j->phase == P_RUNNING ? j->pid : 0;
    out->started = j->started;
    out->ended = j->ended;
}

const char *job_state_name(enum job_state s)
{
    static const char *const names[] = {"waiting", "runnable", "running", "done",
                                        "failed",  "blocked",  "held",    "deleted"};
    return names[s];
}

int job_state_text(const job_info *in, jw_buf *b)
{
    char d[32];
    int rc = jw_puts(b, job_state_name(in->state));
    switch (in->state) {
    case JOB_BLOCKED:
        return rc | jw_printf(b, ": %s %s", in->cause, in->cause_deleted ? "deleted" : "failed");
    case JOB_WAITING:
        return rc | jw_printf(b, ": %s", in->cause);
    case JOB_HELD:
        return rc | (in->cause ? jw_puts(b, " (its run was lost in a crash)") : 0);
    case JOB_RUNNING:
        return rc | jw_printf(b, " (run %d, pid %ld)", in->runs, in->pid);
    case JOB_DONE:
    case JOB_FAILED:
        jobexec_describe(in->status, d, sizeof d);
        return rc | jw_printf(b, " (run %d, %s)", in->runs, d);
    default:
        return rc;
    }
}

static int limit_text(jw_buf *b, long v)
{
    return v == JOB_UNLIMITED || v == LONG_MAX ? jw_puts(b, "none") : jw_printf(b, "%ld", v);
}

/* The limits line and a line per resource: with the status text's words
 * (words), or as bare fields for the info text. */
static int limits_text(jobs *js, jw_buf *out, int words)
{
    int rc = jw_puts(out, words ? "limits jobs " : "limits ");
    rc |= limit_text(out, js->maxjobs);
    rc |= jw_puts(out, words ? " load " : " ");
    rc |= js->maxload > 0 ? jw_printf(out, "%g\n", js->maxload) : jw_puts(out, "none\n");
    for (size_t i = 0; i < js->nres; i++) {
        res *r = js->rv[i];
        size_t done = 0, failed = 0;
        for (size_t u = 0; u < r->nusers; u++) {
            done += r->users[u]->phase == P_DONE;
            failed += r->users[u]->phase == P_FAILED;
        }
        rc |= jw_printf(out, words ? "resource %s limit " : "resource %s ", r->name);
        rc |= limit_text(out, r->limit);
        rc |= jw_printf(out, words ? " running %ld done %zu failed %zu total %zu\n"
                                   : " %ld %zu %zu %zu\n",
                        r->running, done, failed, r->nusers);
    }
    return rc;
}

int job_status_text(jobs *js, const char *const *names, size_t n, int brief, jw_buf *out)
{
    size_t count[JOB_DELETED + 1] = {0};
    refresh(js);
    for (size_t i = 0; i < js->n; i++)
        count[js->v[i]->dstate]++;
    int rc = jw_printf(out, "jobs total %zu", js->n);
    for (int s = 0; s <= JOB_DELETED; s++)
        rc |= jw_printf(out, " %s %zu", job_state_name((enum job_state)s), count[s]);
    rc |= jw_puts(out, "\n");
    rc |= limits_text(js, out, 1);
    for (size_t i = 0; i < (n ? n : brief ? 0 : js->n) && rc == 0; i++) {
        long k = n ? job_find(js, names[i]) : (long)i;
        if (k < 0)
            return job_fail(js, "no job named '%s'", names[i]);
        rc = job_line_text(js, (size_t)k, out);
    }
    return rc ? oom(js) : 0;
}

int job_line_text(jobs *js, size_t i, jw_buf *out)
{
    job_info in;
    job_get(js, i, &in);
    if (jw_printf(out, "job %s ", in.spec.name) < 0 || job_state_text(&in, out) < 0 ||
        jw_puts(out, "\n") < 0)
        return oom(js);
    return 0;
}

static int list_text(jw_buf *b, const char *key, const char *const *v, size_t n)
{
    int rc = jw_printf(b, " %s ", key);
    for (size_t i = 0; i < n; i++)
        rc |= jw_printf(b, "%s%s", i ? "," : "", v[i]);
    return rc | (n ? 0 : jw_puts(b, "-"));
}

int job_dump_text(jobs *js, jw_buf *out)
{
    if (job_status_text(js, NULL, 0, 1, out) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < js->n && rc == 0; i++) {
        job_info in;
        job_get(js, i, &in);
        const job_spec *s = &in.spec;
        rc |= jw_printf(out, "job %s prio %d kind %s rerun %s", s->name, s->prio,
                        s->kind == JOB_COMB ? "comb" : "sh", s->rerun ? "yes" : "no");
        rc |= list_text(out, "after", s->after, s->nafter);
        rc |= list_text(out, "uses", s->uses, s->nuses);
        rc |= jw_printf(out, " runs %d started %.3f ended %.3f dir", in.runs, in.started, in.ended);
        rc |= jw_field(out, s->dir ? s->dir : "-");
        rc |= jw_puts(out, " state ");
        rc |= job_state_text(&in, out);
        rc |= jw_printf(out, " -- %s\n", s->text);
    }
    return rc ? oom(js) : 0;
}

/* ---- the info text: the status in fields, for programs ------------------- */

static int info_job(jobs *js, size_t i, jw_buf *out)
{
    job_info in;
    char b[6][32];
    job_get(js, i, &in);
    snprintf(b[0], sizeof b[0], "%d", in.cause_deleted);
    snprintf(b[1], sizeof b[1], "%d", in.runs);
    snprintf(b[2], sizeof b[2], "%d", in.status);
    snprintf(b[3], sizeof b[3], "%ld", in.pid);
    snprintf(b[4], sizeof b[4], "%.6f", in.started);
    snprintf(b[5], sizeof b[5], "%.6f", in.ended);
    int rc = jw_field(out, "job");
    rc |= job_spec_encode(&in.spec, out);
    rc |= jw_field(out, job_state_name(in.state));
    rc |= jw_field(out, in.cause ? in.cause : "");
    for (int k = 0; k < 6; k++)
        rc |= jw_field(out, b[k]);
    return rc | jw_puts(out, "\n");
}

int job_info_text(jobs *js, const char *const *names, size_t n, jw_buf *out)
{
    int rc = limits_text(js, out, 0);
    for (size_t i = 0; i < (n ? n : js->n) && rc == 0; i++) {
        long k = n ? job_find(js, names[i]) : (long)i;
        if (k < 0)
            return job_fail(js, "no job named '%s'", names[i]);
        rc = info_job(js, (size_t)k, out);
    }
    return rc ? oom(js) : 0;
}

int job_info_decode(char **f, int n, job_info *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (n != JOB_INFO_FIELDS) {
        snprintf(err, errlen, "bad job line: %d fields, expected %d", n, JOB_INFO_FIELDS);
        return -1;
    }
    char **g = f + JOB_SPEC_FIELDS;
    int state = -1;
    for (int s = 0; s <= JOB_DELETED; s++)
        if (!strcmp(g[0], job_state_name((enum job_state)s)))
            state = s;
    if (state < 0) {
        snprintf(err, errlen, "bad job state '%s'", g[0]);
        return -1;
    }
    if (job_spec_decode(f, &out->spec, err, errlen) < 0)
        return -1;
    out->state = (enum job_state)state;
    out->cause = *g[1] ? g[1] : NULL;
    out->cause_deleted = atoi(g[2]);
    out->runs = atoi(g[3]);
    out->status = atoi(g[4]);
    out->pid = atol(g[5]);
    out->started = atof(g[6]);
    out->ended = atof(g[7]);
    return 0;
}

size_t job_running(const jobs *js) { return js->nrun; }
unsigned long job_generation(const jobs *js) { return js->gen; }
const char *job_error(const jobs *js) { return js->err; }
const char *job_rundir(const jobs *js) { return js->rundir; }
const char *job_comb_path(const jobs *js) { return js->comb; }

int job_stalled(jobs *js)
{
    return js->nrun == 0 && !js->load_blocked && (js->nheap == 0 || js->maxjobs == 0);
}

static int settled(const job *j)
{
    switch (j->dstate) {
    case JOB_DONE:
    case JOB_FAILED:
    case JOB_BLOCKED:
    case JOB_HELD:
        return 1;
    case JOB_DELETED:
        return j->phase != P_RUNNING;
    case JOB_WAITING:
        return j->dstuck;
    default:
        return 0;
    }
}

int job_settled(jobs *js, const char *const *names, size_t n)
{
    if (n == 0 && js->nrun > 0)
        return 0;
    refresh(js);
    for (size_t i = 0; i < (n ? n : js->n); i++) {
        job *j = n ? tget(&js->jt, names[i]) : js->v[i];
        if (j && !settled(j))
            return 0;
    }
    return 1;
}

/* ---- opening and closing ------------------------------------------------ */

static int mkdirs(char *path)
{
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        int rc = mkdir(path, 0700);
        *p = c;
        if (rc < 0 && errno != EEXIST)
            return -1;
        if (!c)
            return 0;
    }
}

/* The run directory's lock is an open-file-description lock on RUNDIR/pid,
 * which holds the owner's pid as text. Unlike a POSIX record lock it is
 * refused to a second job_open in the same process too (a comb program that
 * opens a run directory twice); unlike flock it is taken or refused at once
 * on every file system. Children do not keep it: the spawner and the jobs
 * are exec'd with it closed, the monitor closes it before it runs. */
static int take_lock(jobs *js)
{
    char path[PATH_MAX], buf[32];
    snprintf(path, sizeof path, "%s/pid", js->rundir);
    js->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (js->lockfd < 0)
        return job_fail(js, "%s: %s", path, strerror(errno));
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(js->lockfd, F_OFD_SETLK, &fl) < 0) {
        ssize_t n = pread(js->lockfd, buf, sizeof buf - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        return job_fail(js, "run directory %s is in use by another dispatcher (pid %ld%s)",
                        js->rundir, atol(buf),
                        atol(buf) == (long)getpid() ? ", this process" : "");
    }
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(js->lockfd, 0) < 0 || pwrite(js->lockfd, buf, (size_t)n, 0) != n)
        return job_fail(js, "%s: %s", path, strerror(errno));
    return 0;
}

static int setup_dir(jobs *js, const char *rundir)
{
    char path[PATH_MAX];
    if (strlen(rundir) >= 2048)
        return job_fail(js, "run directory name too long");
    snprintf(path, sizeof path, "%s", rundir);
    if (mkdirs(path) < 0 || !realpath(rundir, path))
        return job_fail(js, "run directory %s: %s", rundir, strerror(errno));
    if (!(js->rundir = mem_strdup(path)))
        return oom(js);
    snprintf(path, sizeof path, "%s/log", js->rundir);
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return job_fail(js, "%s: %s", path, strerror(errno));
    if (take_lock(js) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/exit", js->rundir);
    if (!(js->xl = xl_open(path, EXITLOG_ROTATE, js->err, sizeof js->err)))
        return -1;
    snprintf(path, sizeof path, "%s/exit/lock", js->rundir);
    if (!(js->runlock = mem_strdup(path)))
        return oom(js);
    js->runlockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (js->runlockfd < 0)
        return job_fail(js, "%s: %s", path, strerror(errno));
    return 0;
}

static char *self_exe(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n < 0)
        return NULL;
    buf[n] = '\0';
    return mem_strdup(buf);
}

jobs *job_open(const char *rundir, const job_options *opt, char *err, size_t errlen)
{
    jobs *js = mem_calloc(1, sizeof *js);
    if (!js) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    js->lockfd = js->runlockfd = -1;
    js->log = opt ? opt->log : NULL;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    js->maxjobs = cpus > 0 ? cpus : 1;
    char note[PATH_MAX + 128], path[PATH_MAX];
    if (setup_dir(js, rundir) < 0)
        goto fail;
    if (!js->log && opt && opt->logfile) {
        snprintf(path, sizeof path, "%s/dispatcher.log", js->rundir);
        if (!(js->log = fopen(path, "ae"))) {
            job_fail(js, "%s: %s", path, strerror(errno));
            goto fail;
        }
        js->ownlog = 1;
    }
    js->comb = opt && opt->comb ? mem_strdup(opt->comb) : self_exe();
    if (!js->comb) {
        job_fail(js, "cannot find the comb binary: %s", strerror(errno));
        goto fail;
    }
    snprintf(path, sizeof path, "%s/journal", js->rundir);
    js->replaying = 1;
    js->jnl = jnl_open(path, apply, js, note, sizeof note, js->err, sizeof js->err);
    js->replaying = 0;
    if (!js->jnl)
        goto fail;
    if (note[0])
        job_note(js, "%s", note);
    if (recover(js) < 0 || compact(js) < 0 || sync_journal(js) < 0)
        goto fail;
    return js;
fail:
    snprintf(err, errlen, "%s", js->err);
    job_close(js);
    return NULL;
}

void job_close(jobs *js)
{
    if (!js)
        return;
    if (js->jnl)
        sync_journal(js);
    jnl_close(js->jnl);
    xl_close(js->xl);
    if (js->lockfd >= 0)
        close(js->lockfd);
    if (js->runlockfd >= 0)
        close(js->runlockfd);
    if (js->ownlog)
        fclose(js->log);
    free_str(js->runlock);
    jsp_close(js->sp);
    for (size_t i = 0; i < js->n; i++)
        free_job(js->v[i]);
    for (size_t i = 0; i < js->nres; i++) {
        res *r = js->rv[i];
        free_str(r->name);
        mem_free(r->users, r->capusers * sizeof *r->users);
        mem_free(r->parked, r->capparked * sizeof *r->parked);
        mem_free(r, sizeof *r);
    }
    mem_free(js->v, js->cap * sizeof *js->v);
    mem_free(js->rv, js->capres * sizeof *js->rv);
    mem_free(js->jt.slot, js->jt.cap * sizeof(void *));
    mem_free(js->rt.slot, js->rt.cap * sizeof(void *));
    mem_free(js->heap, js->capheap * sizeof *js->heap);
    mem_free(js->run, js->caprun * sizeof *js->run);
    jw_free(&js->rec);
    free_str(js->comb);
    free_str(js->rundir);
    mem_free(js, sizeof *js);
}
