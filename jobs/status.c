/* status: looking at the dispatcher: each job's derived state (blocked on
 * what, waiting on what), the status, dump and info texts, and whether
 * things are stalled or settled. */
#include "config.h"
#include "jobs/jobs.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "jobs/exec.h"
#include "jobs/model.h"

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
            if (jm_sat(x, j->in[k].any))
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
    job *j = jm_lookup(js, name);
    return j ? (long)j->seq : -1;
}

void job_get(jobs *js, size_t i, job_info *out)
{
    refresh(js);
    job *j = js->v[i];
    memset(out, 0, sizeof *out);
    out->spec = jm_spec_of(j);
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
    return rc ? jm_oom(js) : 0;
}

int job_line_text(jobs *js, size_t i, jw_buf *out)
{
    job_info in;
    job_get(js, i, &in);
    if (jw_printf(out, "job %s ", in.spec.name) < 0 || job_state_text(&in, out) < 0 ||
        jw_puts(out, "\n") < 0)
        return jm_oom(js);
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
    return rc ? jm_oom(js) : 0;
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
    return rc ? jm_oom(js) : 0;
}

size_t job_running(const jobs *js) { return js->nrun; }
unsigned long job_generation(const jobs *js) { return js->gen; }

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
        job *j = n ? jm_lookup(js, names[i]) : js->v[i];
        if (j && !settled(j))
            return 0;
    }
    return 1;
}

