/* model: the dispatcher's state in memory (jobs, resources, the prerequisite
 * edges between them, the ready heap) and the changes made to it. Internal
 * to the dispatcher: the files that implement jobs.h share it (model.c owns
 * the state and its changes; replay.c, sched.c, status.c, spec.c and jobs.c
 * use it); nothing outside jobs/ includes it.
 *
 * Readiness is kept incrementally so a step costs what changed, not the
 * number of jobs: each job counts its unsatisfied prerequisite edges (unsat);
 * a job whose phase changes adjusts the counts of its dependents. Edges point
 * from earlier to later jobs, so derived states (blocked, waiting on what)
 * are computed in one forward pass when someone asks (status.c). Eligible
 * jobs wait in a heap ordered by priority then submission; one that finds a
 * resource full is parked on that resource until it has room again.
 *
 * Every change is a journal record; the live path and the replay share the
 * same check_ and do_ functions. A do_ function never fails: what it needs
 * was allocated when the job was submitted. */
#ifndef COMB_JOBS_MODEL_H
#define COMB_JOBS_MODEL_H

#include <stddef.h>
#include <sys/types.h>

#include "jobs/jobs.h"
#include "jobs/exitlog.h"
#include "jobs/journal.h"
#include "jobs/spawn.h"

#define NAME_MAX_LEN 200

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
    pid_t pid;             /* its process, once the spawner said; 0 before */
    int xgen;              /* the exit log generation its run holds; 0 none */
    unsigned char gone;    /* the spawner said it ended (or its lock went) */
    unsigned char xhave;   /* the exit record of its run was read: xstatus */
    unsigned char xbegan;  /* the "began" record of its run was read */
    int xstatus, wst;      /* wst: the status the spawner said */
    size_t runidx;
    double started, ended, kill_at;
    /* derived by refresh() in status.c */
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
    char *runlock; /* RUNDIR/exit/lock: a byte per job, locked while its run goes on */
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
    int spawner_doubt; /* an earlier spawner outlived the wait: no run is known unbegun */
    long test_gap_ms;  /* COMB_JOBS_TEST_GAP_MS: a pause after start records are synced */
    unsigned long gen, dgen;
    jw_buf rec;
    char err[1024];
};

/* Sets "out of memory" as the error; returns -1. */
int jm_oom(jobs *js);
void jm_free_str(char *s);
/* Frees the jobs, the resources and their tables and queues. */
void jm_free_all(jobs *js);

/* The job named name, or NULL; jm_find also sets the error. */
job *jm_lookup(const jobs *js, const char *name);
job *jm_find(jobs *js, const char *name);
/* The spec of a job as submitted (for snapshots and job_get). */
job_spec jm_spec_of(const job *j);

/* Readiness. sat: j's edges of that kind (any: after a resource) hold. */
int jm_sat(const job *j, int any);
int jm_eligible(const job *j);
void jm_heap_push(jobs *js, job *j);
job *jm_heap_pop(jobs *js);

/* Records. jm_rec builds js->rec from a type and a NULL-terminated list of
 * fields; jm_commit appends it to the journal (not while replaying). num and
 * tnum format into buf (24 and 32 bytes). */
int jm_rec(jobs *js, const char *type, ...);
int jm_commit(jobs *js);
const char *jm_num(char *buf, long v);
const char *jm_tnum(char *buf, double t);

/* Changes. check_submit checks a spec against the jobs so far and the
 * earlier specs of its batch (a table of job_specs, or NULL); submit_one
 * journals and links a checked spec. set_limit: name is a resource, "jobs"
 * or "load", text a number or "none", journaled as given. */
int jm_check_submit(jobs *js, const job_spec *s, const struct table *batch);
int jm_submit_one(jobs *js, const job_spec *s);
int jm_set_limit(jobs *js, const char *name, const char *text);
void jm_do_start(jobs *js, job *j, int run, double t);
void jm_do_end(jobs *js, job *j, int status, double t);
/* began: the run may have begun (else it is known it never did: its
 * process left no "began" record and no spawner is left to start it). */
void jm_do_lost(jobs *js, job *j, int began);
/* A snapshot's state record (fields PHASE RUNS STATUS FLAGS PID STARTED
 * ENDED): where a job stood when the journal was compacted. */
int jm_do_state(jobs *js, job *j, char **f);
extern const char *const jm_phase_names[4];

/* The operator's changes by their record's verb (delete force retry hold
 * release), or NULL. */
struct jm_adminop {
    const char *verb;
    int (*check)(jobs *, job *);
    void (*apply)(jobs *, job *);
};
const struct jm_adminop *jm_adminop(const char *verb);

#endif
