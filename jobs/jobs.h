/* jobs: the job dispatcher's model and scheduler (Gecko's woomera).
 *
 * A job has a unique name, a priority, prerequisites, the resources it uses,
 * and what it runs: a shell command (/bin/sh -c TEXT) or a comb call (the comb
 * binary run as `comb -e TEXT`), in a child process of the spawner, its
 * stdout and stderr appended to RUNDIR/log/NAME.log.
 *
 * Prerequisites ("after") name jobs or resources:
 *  - a job X, which must have been submitted before: satisfied when the latest
 *    run of X exited 0 (Slurm: afterok);
 *  - a resource R (a capitalised name, [A-Z][A-Z0-9_]*): satisfied when no
 *    job using R that was submitted earlier is waiting or running, i.e. each
 *    has finished, well or badly (Slurm: afterany on those jobs).
 * Because a prerequisite can only name what came before, submission order is
 * a topological order and a cycle cannot be written.
 *
 * A resource has a limit (how many jobs using it may run at once; unlimited
 * until set; 0 pauses every job using it, Gecko's PRS_LIMIT). There is also a
 * limit on all running jobs (default: the number of CPUs) and an optional
 * 1-minute load-average limit. A job starts only when its prerequisites hold
 * and every resource it uses has room, and takes them all at once. Among
 * runnable jobs, higher priority first, then submission order.
 *
 * States: waiting, runnable, running, done, failed, blocked (a prerequisite
 * failed or was deleted, named in the state: "blocked: X failed"), held,
 * deleted. A successful retry of X releases what it blocked.
 *
 * The model maps unchanged onto Slurm: names -> job names, after job ->
 * --dependency=afterok, after resource -> afterany on the earlier users,
 * resources and limits -> licenses (-L R), priority -> --nice, rerunnable ->
 * --requeue. Keep it so: a feature that Slurm cannot express does not belong.
 *
 * Durability: every change is a record in RUNDIR/journal (jobs/journal.h),
 * synced before a job starts and before a client is answered. Each job runs
 * as a child of the spawner, which records its exit status in RUNDIR/exit, so a
 * dispatcher that restarts learns what finished while it was down; a job that
 * was running when the machine died is rerun if rerunnable, held otherwise
 * (unless its process never began: it records that before it runs the job).
 * Only one dispatcher may open a run directory at a time (RUNDIR/pid is locked).
 *
 * Errors: functions return 0 or -1 and leave the reason in job_error(); a
 * refused change leaves both the journal and the state as they were. (Not the
 * VM's longjmp: the dispatcher also runs without a VM, in the daemon; the comb
 * bindings turn -1 into a VM error.) */
#ifndef COMB_JOBS_H
#define COMB_JOBS_H

#include <poll.h>
#include <stddef.h>
#include <stdio.h>

#include "jobs/wire.h"

typedef struct jobs jobs;

enum job_kind { JOB_SHELL, JOB_COMB };

#define JOB_UNLIMITED (-1L)

typedef struct job_spec {
    const char *name;             /* [A-Za-z0-9_][A-Za-z0-9_.:@+-]*, not a resource name */
    int prio;                     /* higher first; default 0 */
    const char *const *after;     /* job or resource names */
    size_t nafter;
    const char *const *uses;      /* resource names */
    size_t nuses;
    enum job_kind kind;
    const char *text;             /* the shell command, or the comb code */
    const char *dir;              /* working directory; NULL: the dispatcher's */
    int rerun;                    /* rerun after a crash (else held) */
    int held;                     /* submitted held */
} job_spec;

enum job_state {
    JOB_WAITING, JOB_RUNNABLE, JOB_RUNNING, JOB_DONE, JOB_FAILED, JOB_BLOCKED, JOB_HELD,
    JOB_DELETED
};

typedef struct job_info {
    job_spec spec;       /* as submitted (after/uses point into the dispatcher) */
    enum job_state state;
    const char *cause;   /* BLOCKED: the failed or deleted job; WAITING: the first
                          * unmet prerequisite; HELD after a crash: "crash"; else NULL */
    int cause_deleted;   /* BLOCKED because cause was deleted, not failed */
    int runs;            /* how many times it started */
    int status;          /* raw wait status of the latest run, -1 if none */
    long pid;            /* its process (= its process group) while running */
    double started, ended; /* Unix times of the latest run, 0 if none */
} job_info;

typedef struct job_options {
    FILE *log;           /* dispatcher events (recovery, failures); NULL: none */
    const char *comb;    /* binary for comb jobs and monitors; NULL: this executable */
    int logfile;         /* with log NULL: the events go to RUNDIR/dispatcher.log */
} job_options;

/* Opens RUNDIR (created if absent), replays its journal and recovers: runs
 * with an exit record are completed, live ones (their locks held) adopted,
 * lost runs are queued again (rerunnable, or known never to have begun) or
 * held. NULL with err on failure. */
jobs *job_open(const char *rundir, const job_options *opt, char *err, size_t errlen);
/* Syncs and closes; running jobs go on under their spawner. */
void job_close(jobs *js);
const char *job_error(const jobs *js);
/* Sets the error job_error reports; returns -1. */
int job_fail(jobs *js, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *job_rundir(const jobs *js);

/* Building. job_submit_many checks the whole batch first (a later job may
 * name an earlier one of the batch), then adds it all or nothing. */
int job_submit(jobs *js, const job_spec *spec);
int job_submit_many(jobs *js, const job_spec *specs, size_t n);
int job_limit(jobs *js, const char *resource, long limit); /* JOB_UNLIMITED to lift */
int job_limit_jobs(jobs *js, long limit);
int job_limit_load(jobs *js, double load); /* 0 lifts it */
/* name is a resource, "jobs" or "load"; value a number or "none". */
int job_set_limit_text(jobs *js, const char *name, const char *value);

/* A spec as the 8 fields of a submit record or request: NAME PRIO FLAGS KIND
 * DIR AFTER USES TEXT (flags: r rerunnable, h held, or -; kind sh or comb;
 * lists comma-separated). decode splits f's lists in place and allocates the
 * after/uses arrays, which job_spec_free releases. 0, or -1 with err. */
#define JOB_SPEC_FIELDS 8
int job_spec_encode(const job_spec *s, jw_buf *out);
int job_spec_decode(char **f, job_spec *s, char *err, size_t errlen);
void job_spec_free(job_spec *s);

/* Administration. delete kills a running job's process group (TERM, then
 * KILL after 5 s); force makes a waiting or held job runnable now, ignoring
 * its prerequisites (not its resources); retry queues a finished job again;
 * hold keeps a pending job from starting until release. */
int job_delete(jobs *js, const char *name);
int job_force(jobs *js, const char *name);
int job_retry(jobs *js, const char *name);
int job_hold(jobs *js, const char *name);
int job_release(jobs *js, const char *name);

/* Looking. Indexes are submission order. */
size_t job_count(const jobs *js);
long job_find(const jobs *js, const char *name); /* index, or -1 */
void job_get(jobs *js, size_t i, job_info *out);
const char *job_state_name(enum job_state s);
/* status: a summary, the limits, one line per resource and one per job (only
 * the named ones if n > 0; none if brief). dump: everything, one job a line. */
int job_status_text(jobs *js, const char *const *names, size_t n, int brief, jw_buf *out);
int job_dump_text(jobs *js, jw_buf *out);
/* One job's status line: "job NAME STATE[: CAUSE...]". */
int job_line_text(jobs *js, size_t i, jw_buf *out);
/* A job's state as the status line shows it: "failed (run 1, exit 3)". */
int job_state_text(const job_info *in, jw_buf *out);

/* The status in escaped fields, a line each, for programs (the comb
 * bindings; the control protocol's info verb):
 *   limits JOBS LOAD                                (a number or none)
 *   resource NAME LIMIT RUNNING DONE FAILED TOTAL
 *   job SPEC... STATE CAUSE CAUSE_DELETED RUNS STATUS PID STARTED ENDED
 * (SPEC: the 8 fields of job_spec_encode), every job or only the named.
 * job_info_decode reads the fields after "job" (split in place) back, spec
 * included: release it with job_spec_free; cause points into f. */
#define JOB_INFO_FIELDS (JOB_SPEC_FIELDS + 8)
int job_info_text(jobs *js, const char *const *names, size_t n, jw_buf *out);
int job_info_decode(char **f, int n, job_info *out, char *err, size_t errlen);

/* Driving (an event loop calls these; jobs/server.c has one). job_step reaps
 * finished runs, checks adopted ones, kills what delete asked to, then starts
 * what can start, syncing the journal before the first start. */
int job_step(jobs *js);
int job_sync(jobs *js);
size_t job_pollfds(const jobs *js, struct pollfd *fds, size_t max);
int job_timeout_ms(jobs *js); /* until the next timed check, -1 if none */
size_t job_running(const jobs *js);
/* True when nothing runs and nothing can start now: only a raised limit or
 * an operator can move things on (or a falling load, which says 0 here). */
int job_stalled(jobs *js);
/* True when each named job (all if n == 0) is done, failed, deleted, blocked,
 * held, or waits only on such: it cannot move without an operator. */
int job_settled(jobs *js, const char *const *names, size_t n);
/* Changes that callers wait on bump this counter. */
unsigned long job_generation(const jobs *js);

/* Writes a dated line to the dispatcher's log (job_options.log). */
void job_note(jobs *js, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The binary comb jobs and comb monitors run. */
const char *job_comb_path(const jobs *js);

#endif
