/* model: the dispatcher's jobs and resources in memory, and every change
 * to them (submit, start, end, lost, the operator's changes, limits), each
 * checked, journaled, then applied. See model.h for how readiness is kept.
 * The public changes of jobs.h (job_submit, job_delete, job_limit...) are
 * here. */
#include "config.h"
#include "jobs/model.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "store/mem.h"

#define RES_MAX_LEN 64

/* ---- small helpers ---------------------------------------------------- */

int jm_oom(jobs *js) { return job_fail(js, "out of memory"); }

void jm_free_str(char *s)
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

job *jm_lookup(const jobs *js, const char *name) { return tget(&js->jt, name); }

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

int jm_sat(const job *j, int any)
{
    if (j->phase == P_DONE)
        return 1;
    return any && (j->phase == P_FAILED || (j->deleted && j->phase != P_RUNNING));
}

int jm_eligible(const job *j)
{
    return j->phase == P_PENDING && !j->held && !j->deleted && (j->forced || j->unsat == 0);
}

static int before(const job *a, const job *b)
{
    return a->prio != b->prio ? a->prio > b->prio : a->seq < b->seq;
}

void jm_heap_push(jobs *js, job *j)
{
    size_t i = js->nheap++;
    while (i > 0 && before(j, js->heap[(i - 1) / 2])) {
        js->heap[i] = js->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    js->heap[i] = j;
    j->inheap = 1;
}

job *jm_heap_pop(jobs *js)
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
    if (jm_eligible(j) && !j->inheap && !j->parked)
        jm_heap_push(js, j);
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
    s[0] = jm_sat(j, 0);
    s[1] = jm_sat(j, 1);
}

static void propagate(jobs *js, job *j, const int s[2])
{
    js->gen++;
    int now_ok = jm_sat(j, 0), now_any = jm_sat(j, 1);
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
int jm_rec(jobs *js, const char *type, ...)
{
    jw_clear(&js->rec);
    int rc = jw_field(&js->rec, type);
    va_list ap;
    va_start(ap, type);
    for (const char *f; rc == 0 && (f = va_arg(ap, const char *));)
        rc = jw_field(&js->rec, f);
    va_end(ap);
    return rc < 0 ? jm_oom(js) : 0;
}

int jm_commit(jobs *js)
{
    if (js->replaying)
        return 0;
    return jnl_append(js->jnl, js->rec.p, js->rec.len) < 0 ? jm_oom(js) : 0;
}

const char *jm_num(char *buf, long v)
{
    snprintf(buf, 24, "%ld", v);
    return buf;
}

const char *jm_tnum(char *buf, double t)
{
    snprintf(buf, 32, "%.6f", t);
    return buf;
}
/* ---- checks and changes ------------------------------------------------- */

job *jm_find(jobs *js, const char *name)
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
int jm_check_submit(jobs *js, const job_spec *s, const struct table *batch)
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
    jm_free_str(j->name);
    jm_free_str(j->text);
    jm_free_str(j->dir);
    for (size_t i = 0; j->after && i < j->nafter; i++)
        jm_free_str(j->after[i]);
    mem_free(j->after, (j->nafter + 1) * sizeof *j->after);
    mem_free(j->uses, (j->nuses + 1) * sizeof *j->uses);
    mem_free(j->usen, (j->nuses + 1) * sizeof *j->usen);
    mem_free(j->in, (j->nin + 1) * sizeof *j->in);
    mem_free(j->out, j->capout * sizeof *j->out);
    mem_free(j, sizeof *j);
}

void jm_free_all(jobs *js)
{
    for (size_t i = 0; i < js->n; i++)
        free_job(js->v[i]);
    for (size_t i = 0; i < js->nres; i++) {
        res *r = js->rv[i];
        jm_free_str(r->name);
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
            j->unsat += !jm_sat(x, r != NULL);
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

void jm_do_start(jobs *js, job *j, int run, double t)
{
    int s[2];
    snap(j, s);
    j->phase = P_RUNNING;
    j->runs = run;
    j->gone = j->xhave = j->xbegan = 0;
    j->started = t;
    j->ended = 0;
    take(js, j);
    propagate(js, j, s);
}

void jm_do_end(jobs *js, job *j, int status, double t)
{
    int s[2];
    snap(j, s);
    release(js, j);
    j->phase = status == 0 ? P_DONE : P_FAILED;
    j->status = status;
    j->ended = t;
    propagate(js, j, s);
}

/* A run nobody recorded the end of: queued again, or held if it began and
 * is not rerunnable. */
void jm_do_lost(jobs *js, job *j, int began)
{
    int s[2];
    snap(j, s);
    release(js, j);
    j->phase = P_PENDING;
    if (began && !j->rerun)
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

static const struct jm_adminop adminops[] = {
    {"delete", check_delete, do_delete}, {"force", check_force, do_force},
    {"retry", check_retry, do_retry},    {"hold", check_hold, do_hold},
    {"release", check_release, do_release},
};

const struct jm_adminop *jm_adminop(const char *verb)
{
    for (size_t i = 0; i < sizeof adminops / sizeof *adminops; i++)
        if (!strcmp(adminops[i].verb, verb))
            return &adminops[i];
    return NULL;
}

static int admin(jobs *js, const char *verb, const char *name)
{
    const struct jm_adminop *op = jm_adminop(verb);
    job *j = jm_find(js, name);
    if (!j || op->check(js, j) < 0 || jm_rec(js, verb, name, NULL) < 0 || jm_commit(js) < 0)
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
        return jm_oom(js);
    r->limit = v < 0 ? JOB_UNLIMITED : (long)v;
    unpark(js, r);
    return 0;
}

int jm_set_limit(jobs *js, const char *name, const char *text)
{
    double v = 0;
    if (parse_limit(js, name, text, &v) < 0)
        return -1;
    if (!strcmp(name, "load") || !strcmp(name, "jobs") || tget(&js->rt, name)) {
        if (jm_rec(js, "limit", name, text, NULL) < 0 || jm_commit(js) < 0)
            return -1;
        return do_limit(js, name, v);
    }
    /* a new resource: create it first so the record cannot be left unapplied */
    if (!res_get(js, name))
        return jm_oom(js);
    return jm_set_limit(js, name, text);
}

int job_limit(jobs *js, const char *resource, long limit)
{
    char b[24];
    if (!is_res_name(resource))
        return job_fail(js, "limit: bad resource name '%s' (capitals, digits, _)", resource);
    return jm_set_limit(js, resource, limit < 0 ? "none" : jm_num(b, limit));
}

int job_limit_jobs(jobs *js, long limit)
{
    char b[24];
    return jm_set_limit(js, "jobs", limit < 0 ? "none" : jm_num(b, limit));
}

int job_limit_load(jobs *js, double load)
{
    char b[32];
    snprintf(b, sizeof b, "%g", load);
    return jm_set_limit(js, "load", load <= 0 ? "none" : b);
}

int job_set_limit_text(jobs *js, const char *name, const char *value)
{
    return jm_set_limit(js, name, value);
}

/* ---- submission --------------------------------------------------------- */

int jm_submit_one(jobs *js, const job_spec *s)
{
    job *j = prepare(js, s);
    if (!j)
        return jm_oom(js);
    jw_clear(&js->rec);
    if (jw_field(&js->rec, "submit") < 0 || job_spec_encode(s, &js->rec) < 0 || jm_commit(js) < 0) {
        free_job(j);
        return jm_oom(js);
    }
    link_job(js, j, s);
    return 0;
}

int job_submit_many(jobs *js, const job_spec *specs, size_t n)
{
    struct table batch = {0};
    int rc = 0;
    if (n > 1 && treserve(&batch, n) < 0)
        return jm_oom(js);
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = jm_check_submit(js, &specs[i], n > 1 ? &batch : NULL);
        if (rc == 0 && n > 1)
            tput(&batch, (void *)&specs[i]); /* a job_spec starts with its name too */
    }
    mem_free(batch.slot, batch.cap * sizeof(void *));
    for (size_t i = 0; i < n && rc == 0; i++)
        if (jm_submit_one(js, &specs[i]) < 0)
            rc = i ? job_fail(js, "out of memory after %zu of %zu jobs", i, n) : -1;
    return rc;
}

int job_submit(jobs *js, const job_spec *spec) { return job_submit_many(js, spec, 1); }

/* The spec of a job as submitted (for snapshots and job_get). */
job_spec jm_spec_of(const job *j)
{
    return (job_spec){j->name,  j->prio, (const char *const *)j->after, j->nafter, j->usen,
                      j->nuses, j->kind, j->text,   j->dir,        j->rerun,  0};
}

/* ---- a snapshot's state record ------------------------------------------ */

const char *const jm_phase_names[4] = {"pending", "running", "done", "failed"};

int jm_do_state(jobs *js, job *j, char **f)
{
    int ph = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(f[0], jm_phase_names[i]))
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
