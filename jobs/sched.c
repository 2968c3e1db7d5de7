/* sched: the start/reap cycle: starting what can start (journaled, then
 * handed to the spawner), reaping the runs the spawner says ended, killing
 * deleted jobs, pacing the journal's syncs, and, after a replay, settling
 * the runs the journal says were going. */
#include "config.h"
#include "jobs/sched.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "jobs/exec.h"
#include "jobs/model.h"
#include "jobs/replay.h"

#define KILL_GRACE 5.0     /* seconds between TERM and KILL for delete */
#define ADOPT_POLL_MS 200  /* how often a run this process did not start is checked */
#define LOAD_POLL 1.0      /* seconds between load-average readings */
#define SYNC_LAG 1.0       /* seconds a record may wait for fsync when nothing needs it */
#define SPAWNER_WAIT 10    /* seconds a restart waits for an earlier spawner to exit */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- running ------------------------------------------------------------ */

int job_sync(jobs *js)
{
    if (jnl_sync(js->jnl) < 0)
        return job_fail(js, "%s", jnl_error(js->jnl));
    js->sync_by = 0;
    /* the ends are durable now: the exit records of ended runs may go */
    if (xl_trim(js->xl) < 0)
        job_note(js, "%s", xl_error(js->xl));
    if (jnl_records(js->jnl) > 1024 + 4 * js->n)
        return jreplay_compact(js);
    return 0;
}

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
        return job_sync(js);
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
    if (jm_rec(js, "end", j->name, jm_num(rb, run), jm_num(sb, status), jm_tnum(tb, t), NULL) == 0 &&
        jm_commit(js) == 0)
        unhold(js, j);
    if (status != 0) {
        jobexec_describe(status, d, sizeof d);
        job_note(js, "job %s run %d failed: %s", j->name, run, d);
    }
    jm_do_end(js, j, status, t);
}

/* A run that is gone without an exit record. One that is not
 * rerunnable is held only if it may have begun: its process wrote "began"
 * before exec, so without that record (and with no spawner left that could
 * still start it) it never ran and is queued again. */
static void lose(jobs *js, job *j)
{
    char rb[24];
    int began = j->rerun || j->xbegan || js->spawner_doubt;
    if (jm_rec(js, began ? "lost" : "unbegun", j->name, jm_num(rb, j->runs), NULL) == 0 &&
        jm_commit(js) == 0)
        unhold(js, j);
    if (began)
        job_note(js, "job %s run %d was lost (no exit status was recorded): %s", j->name,
                 j->runs, j->rerun ? "queued again" : "held, not rerunnable");
    else
        job_note(js, "job %s run %d never began (lost before its process started): queued again",
                 j->name, j->runs);
    jm_do_lost(js, j, began);
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
    if (!js->sp && !(js->sp = jsp_open(js->comb, js->runlock, e, elen)))
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
    const char *sh[] = {j->kind == JOB_COMB ? js->comb : "/bin/sh",
                        j->kind == JOB_COMB ? "-e" : "-c", j->text, NULL};
    const char *direct[64]; /* a plain command is exec'd directly, as make does */
    char words[1024];
    const char *const *argv =
        j->kind != JOB_COMB && jobexec_words(j->text, words, sizeof words, direct, 64) ? direct : sh;
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
        job *j = jm_heap_pop(js);
        if (!jm_eligible(j))
            continue;
        res *r = first_full(j);
        if (r) {
            j->parked = 1;
            r->parked[r->nparked++] = j;
            continue;
        }
        if (jm_rec(js, "start", j->name, jm_num(rb, j->runs + 1), jm_tnum(tb, t), NULL) < 0 ||
            jm_commit(js) < 0) {
            jm_heap_push(js, j);
            return -1;
        }
        jm_do_start(js, j, j->runs + 1, t);
        must_sync |= !j->rerun;
    }
    if (js->nrun == first)
        return 0;
    if ((must_sync ? job_sync(js) : flush_journal(js)) < 0)
        return -1;
    if (js->test_gap_ms > 0) /* tests: a crash between the start record and the run */
        nanosleep(&(struct timespec){js->test_gap_ms / 1000, js->test_gap_ms % 1000 * 1000000L},
                  NULL);
    /* backwards: a start that fails ends at once, moving the last run into its slot */
    for (size_t i = js->nrun; i-- > first;)
        spawn(js, js->run[i]);
    return 0;
}

static void on_record(void *ctx, const char *name, int run, int status)
{
    jobs *js = ctx;
    job *j = jm_lookup(js, name);
    if (!j || j->phase != P_RUNNING || j->runs != run)
        return;
    if (status == XL_BEGAN) {
        j->xbegan = 1;
    } else {
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

/* What the spawner says: a run started (its pid is journaled), could not
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
        if (jm_rec(js, "pid", j->name, jm_num(rb, j->runs), jm_num(pb, b), NULL) == 0)
            jm_commit(js);
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

/* Ends the runs the spawner says ended; checks adopted runs now and then.
 * The spawner writes a run's record before it lets go of the run's lock and
 * reports its end, so once it is gone the record is there to read, or will
 * never be. */
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
            finish(js, j, j->wst); /* no record could be written */
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

/* After a replay: each run the journal says is going goes on (its lock is
 * held: adopted), finished (its exit record is there) or was lost. The
 * locks are looked at before the records, which a spawner writes before it
 * lets go of a run's lock. */
/* Waits until no spawner of an earlier dispatcher is left (each holds a
 * read lock on JSP_LOCK_BYTE of the run-lock file while it lives): one that
 * outlived its dispatcher may still start a run it was asked for, so a run
 * without a lock or a record is known never to have begun only once they are
 * gone. 0, or -1 if one is still there after SPAWNER_WAIT seconds. */
static int spawners_gone(jobs *js)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = JSP_LOCK_BYTE,
                       .l_len = 1};
    for (int i = 0; i < SPAWNER_WAIT * 100; i++) {
        if (fcntl(js->runlockfd, F_OFD_SETLK, &fl) == 0) {
            fl.l_type = F_UNLCK;
            fcntl(js->runlockfd, F_OFD_SETLK, &fl);
            return 0;
        }
        nanosleep(&(struct timespec){0, 10000000L}, NULL);
    }
    return -1;
}

int jsched_recover(jobs *js)
{
    if (js->nrun && spawners_gone(js) < 0) {
        js->spawner_doubt = 1;
        job_note(js, "a spawner of an earlier dispatcher still runs: runs without an exit "
                     "status count as begun");
    }
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

