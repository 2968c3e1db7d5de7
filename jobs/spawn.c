/* spawn: the spawner process that starts and records the runs, and its
 * client. */
#include "config.h"
#include "jobs/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/mem.h"
#include "jobs/wire.h"

#define START_FIELDS 12 /* "start" to NENV; then the variables, then argv */
#define STARTED_HOLD_MS 20 /* how long a "started" may wait for company */

extern char **environ;

struct jobspawn {
    int fd;
    pid_t pid;
    long live; /* runs asked for and not yet reported ended or failed */
    jw_buf in, line;
};

/* ---- the dispatcher's side -------------------------------------------- */

/* A new description of the run-lock file with the spawner's read lock. */
static int spawner_lock(const char *lockpath, char *err, size_t errlen)
{
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = JSP_LOCK_BYTE,
                       .l_len = 1};
    int fd = open(lockpath, O_RDWR | O_CLOEXEC);
    if (fd < 0 || fcntl(fd, F_OFD_SETLK, &fl) < 0) {
        snprintf(err, errlen, "%s (the spawner's lock): %s", lockpath, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

jobspawn *jsp_open(const char *exe, const char *lockpath, char *err, size_t errlen)
{
    jobspawn *p = mem_calloc(1, sizeof *p);
    int sv[2] = {-1, -1}, lockfd = -1;
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->fd = -1;
    if ((lockfd = spawner_lock(lockpath, err, errlen)) < 0)
        goto fail;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(err, errlen, "socketpair: %s", strerror(errno));
        close(lockfd);
        goto fail;
    }
    char num[16], lnum[16];
    snprintf(num, sizeof num, "%d", sv[1]);
    snprintf(lnum, sizeof lnum, "%d", lockfd);
    char *argv[] = {(char *)exe, "jobs", "__spawner", num, lnum, NULL};
    posix_spawnattr_t attr;
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    /* its end of the socket and its lock, and only those, must survive the exec */
    int rc = fcntl(sv[1], F_SETFD, 0) < 0 || fcntl(lockfd, F_SETFD, 0) < 0
                 ? errno
                 : posix_spawn(&p->pid, exe, NULL, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    close(sv[1]);
    close(lockfd); /* the lock lives on in the spawner, or dies here */
    if (rc) {
        snprintf(err, errlen, "cannot start the spawner %s: %s", exe, strerror(rc));
        close(sv[0]);
        goto fail;
    }
    p->fd = sv[0];
    return p;
fail:
    mem_free(p, sizeof *p);
    return NULL;
}

void jsp_close(jobspawn *p)
{
    if (!p)
        return;
    if (p->fd >= 0)
        close(p->fd);
    /* it exits on the end of file once its runs have ended: waited for
       only when none is left (else the zombie goes with this process) */
    while (waitpid(p->pid, NULL, p->live > 0 ? WNOHANG : 0) < 0 && errno == EINTR)
        ;
    jw_free(&p->in);
    jw_free(&p->line);
    mem_free(p, sizeof *p);
}

int jsp_fd(const jobspawn *p) { return p->fd; }

static int put_num(jw_buf *b, long v)
{
    char num[24];
    snprintf(num, sizeof num, "%ld", v);
    return jw_field(b, num);
}

int jsp_start(jobspawn *p, long id, const jobexec_run *r, char *err, size_t errlen)
{
    jw_buf *b = &p->line;
    size_t nenv = 0;
    while (r->envp[nenv])
        nenv++;
    jw_clear(b);
    int rc = jw_field(b, "start");
    rc |= put_num(b, id);
    rc |= put_num(b, (long)r->slot);
    rc |= put_num(b, r->durable);
    const char *strs[] = {r->lockpath, r->exitpath, r->dir ? r->dir : "", r->logpath,
                          r->header,   r->footer,   r->record};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        rc |= jw_field(b, strs[i]);
    rc |= put_num(b, (long)nenv);
    for (size_t i = 0; i < nenv; i++)
        rc |= jw_field(b, r->envp[i]);
    for (size_t i = 0; r->argv[i]; i++)
        rc |= jw_field(b, r->argv[i]);
    rc |= jw_puts(b, "\n");
    if (rc) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (jw_send_all(p->fd, b->p, b->len) < 0) {
        snprintf(err, errlen, "the spawner is gone: %s", strerror(errno));
        return -1;
    }
    p->live++;
    return 0;
}

/* One event line (split in place). 0, or -1 if it is not one. */
static int event(jobspawn *p, char *line, jsp_event_fn fn, void *ctx)
{
    char *f[4];
    int n = jw_split(line, f, 4);
    if (n == 3 && !strcmp(f[0], "started"))
        fn(ctx, JSP_STARTED, atol(f[1]), atol(f[2]), NULL);
    else if (n == 3 && !strcmp(f[0], "failed"))
        fn(ctx, JSP_FAILED, atol(f[1]), 0, f[2]);
    else if (n == 3 && !strcmp(f[0], "ended"))
        fn(ctx, JSP_ENDED, atol(f[1]), atol(f[2]), NULL);
    else
        return -1;
    p->live -= f[0][0] != 's';
    return 0;
}

/* Calls line_fn for each complete line of b (NUL-terminated in place) and
 * keeps the incomplete rest. Stops at the first line line_fn refuses. */
static int each_line(jw_buf *b, int (*line_fn)(void *ctx, char *line), void *ctx)
{
    size_t used = 0;
    int rc = 0;
    for (char *nl; rc == 0 && (nl = memchr(b->p + used, '\n', b->len - used));) {
        *nl = '\0';
        rc = line_fn(ctx, b->p + used);
        used = (size_t)(nl - b->p) + 1;
    }
    memmove(b->p, b->p + used, b->len - used);
    b->len -= used;
    b->p[b->len] = '\0';
    return rc;
}

/* Reads what the socket has into b, without waiting: 1 at its end, -1 on
 * an error, else 0. */
static int take_input(int fd, jw_buf *b)
{
    char buf[16384];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0 && jw_put(b, buf, (size_t)n) == 0)
            continue;
        if (n == 0)
            return 1;
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
}

struct reading {
    jobspawn *p;
    jsp_event_fn fn;
    void *ctx;
};

static int event_line(void *ctx, char *line)
{
    struct reading *rd = ctx;
    return event(rd->p, line, rd->fn, rd->ctx);
}

int jsp_read(jobspawn *p, jsp_event_fn fn, void *ctx, char *err, size_t errlen)
{
    int end = take_input(p->fd, &p->in);
    struct reading rd = {p, fn, ctx};
    if (p->in.len && each_line(&p->in, event_line, &rd) < 0) {
        snprintf(err, errlen, "the spawner said something unexpected");
        return -1;
    }
    if (end) {
        snprintf(err, errlen, end > 0 ? "the spawner exited" : "the spawner: %s",
                 strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- the spawner's side ------------------------------------------------- */

#define MAX_RUNS 4096 /* at once, per spawner */

/* The memory the spawner shares with its keeper. */
struct shared {
    int deaf;    /* the dispatcher's socket and the spawner's lock are closed */
    size_t top;  /* procs[top...] are all free */
    jobexec_proc procs[MAX_RUNS];
};

struct server {
    int fd, lockfd;  /* lockfd: the spawner's lock; both closed once sh->deaf */
    jw_buf in, out;
    char **env; /* the spawner's environment less the job variables, then room */
    size_t nenv, capenv;
    struct shared *sh; /* the runs going on, shared with the keeper */
    int xfd;     /* the exit log generation last asked for */
    char *xpath;
    size_t xcap;
    int urgent;       /* out holds more than "started" replies */
    long hold_until;  /* else they are sent then (ms, monotonic) */
};

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int is_job_var(const char *v)
{
    static const char *const ours[] = {"COMB_JOB=", "COMB_JOB_RUN=", "COMB_JOBS_RUNDIR="};
    for (size_t i = 0; i < sizeof ours / sizeof *ours; i++)
        if (!strncmp(v, ours[i], strlen(ours[i])))
            return 1;
    return 0;
}

/* The environment of a run: the base, then the run's own variables. */
static char **run_env(struct server *s, char **extra, size_t n)
{
    size_t need = s->nenv + n + 1;
    if (need > s->capenv) {
        char **e = mem_realloc(s->env, s->capenv * sizeof *e, need * sizeof *e);
        if (!e)
            return NULL;
        s->env = e;
        s->capenv = need;
    }
    memcpy(s->env + s->nenv, extra, n * sizeof *extra);
    s->env[s->nenv + n] = NULL;
    return s->env;
}

static void reply(struct server *s, const char *what, long a, const char *b)
{
    if (s->sh->deaf)
        return; /* no dispatcher to tell */
    /* A "started" waits a little for an end to go with, so that the
       dispatcher wakes once a run rather than twice: it needs the pid only
       to journal it and to kill the run, if it is deleted. */
    if (strcmp(what, "started"))
        s->urgent = 1;
    else if (!s->out.len)
        s->hold_until = now_ms() + STARTED_HOLD_MS;
    char num[24];
    snprintf(num, sizeof num, "%ld", a);
    if (jw_field(&s->out, what) < 0 || jw_field(&s->out, num) < 0 || jw_field(&s->out, b) < 0 ||
        jw_puts(&s->out, "\n") < 0)
        jw_clear(&s->out); /* out of memory: the dispatcher learns it from the locks */
}

/* The exit log at path, opened once for all the runs that go to it. */
static int exit_fd(struct server *s, const char *path)
{
    size_t n = strlen(path) + 1;
    if (s->xfd >= 0 && !strcmp(s->xpath, path))
        return s->xfd;
    if (s->xfd >= 0)
        close(s->xfd);
    if (n > s->xcap) {
        char *p = mem_realloc(s->xpath, s->xcap, n);
        if (!p)
            return s->xfd = -1;
        s->xpath = p;
        s->xcap = n;
    }
    memcpy(s->xpath, path, n);
    return s->xfd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
}

/* A free entry for a run, or NULL when MAX_RUNS are going. */
static jobexec_proc *new_proc(struct server *s)
{
    struct shared *sh = s->sh;
    for (size_t i = 0; i < sh->top; i++)
        if (sh->procs[i].used == JOBEXEC_FREE)
            return &sh->procs[i];
    return sh->top < MAX_RUNS ? &sh->procs[sh->top++] : NULL;
}

static int start_line(void *ctx, char *line)
{
    struct server *s = ctx;
    size_t max = 1;
    for (char *q = line; *q; q++)
        max += *q == ' ';
    char **f = mem_alloc((max + 1) * sizeof *f); /* + 1: NULL after argv */
    int n = f ? jw_split(line, f, (int)max) : -1;
    long id = n > 1 ? atol(f[1]) : -1;
    long nenv = n >= START_FIELDS ? atol(f[START_FIELDS - 1]) : -1;
    if (n < 0 || nenv < 0 || n < START_FIELDS + nenv + 1 || strcmp(f[0], "start")) {
        reply(s, "failed", id, f ? "malformed request" : "out of memory");
        mem_free(f, (max + 1) * sizeof *f);
        return 0;
    }
    char **envp = run_env(s, f + START_FIELDS, (size_t)nenv);
    jobexec_run r = {(const char *const *)f + START_FIELDS + nenv, envp, *f[6] ? f[6] : NULL,
                     f[7], f[8], f[9], f[10], f[4], (off_t)atoll(f[2]), f[5], atoi(f[3])};
    char err[512];
    f[n] = NULL; /* argv ends the line */
    int xfd = exit_fd(s, r.exitpath);
    jobexec_proc *p = new_proc(s);
    if (!envp || !p)
        reply(s, "failed", id, envp ? "too many runs at once" : "out of memory");
    else if (xfd < 0)
        reply(s, "failed", id, strerror(errno));
    else if (jobexec_start(&r, xfd, p, err, sizeof err) < 0)
        reply(s, "failed", id, err);
    else {
        snprintf(err, sizeof err, "%ld", (long)p->pid);
        reply(s, "started", id, err);
    }
    mem_free(f, (max + 1) * sizeof *f);
    return 0;
}

/* Reaps the runs whose processes exited, taking in what output is left
 * (and any other child: the keeper's orphans). */
static void reap_all(struct server *s)
{
    int st;
    pid_t pid;
    struct shared *sh = s->sh;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
        for (size_t i = 0; i < sh->top; i++)
            if (sh->procs[i].used == JOBEXEC_RUNNING && sh->procs[i].pid == pid &&
                !sh->procs[i].exited) {
                sh->procs[i].exited = 1;
                sh->procs[i].status = st;
                jobexec_output(&sh->procs[i]);
                break;
            }
}

/* Ends the runs whose processes exited and whose output ended: their logs
 * finished, their records written (and synced together, those durable)
 * before their locks are let go, then reported. */
static void end_runs(struct server *s)
{
    struct shared *sh = s->sh;
    for (size_t i = 0; i < sh->top; i++) {
        jobexec_proc *p = &sh->procs[i];
        if (p->used != JOBEXEC_RUNNING || p->exited != 1 || p->outfd >= 0)
            continue;
        char rec[512];
        size_t n = jobexec_end(p, &p->status, rec, sizeof rec);
        if (!n || write(p->xfd, rec, n) != (ssize_t)n)
            p->durable = 0; /* no record to make durable: the run counts as lost */
        p->exited = 2; /* recorded */
    }
    for (size_t i = 0; i < sh->top; i++) /* also those a killed twin left */
        if (sh->procs[i].used == JOBEXEC_RUNNING && sh->procs[i].exited == 2 &&
            sh->procs[i].durable)
            fdatasync(sh->procs[i].xfd);
    for (size_t i = 0; i < sh->top; i++) {
        jobexec_proc *p = &sh->procs[i];
        if (p->used != JOBEXEC_RUNNING || p->exited != 2)
            continue;
        char num[24];
        snprintf(num, sizeof num, "%d", p->status);
        jobexec_release(p);
        reply(s, "ended", (long)p->pid, num);
        p->used = JOBEXEC_FREE;
    }
    while (sh->top > 0 && sh->procs[sh->top - 1].used == JOBEXEC_FREE)
        sh->top--;
}

/* Sends what it can of the replies. -1 once the dispatcher is gone. */
static int send_out(struct server *s)
{
    while (s->out.len) {
        ssize_t w = send(s->fd, s->out.p, s->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        memmove(s->out.p, s->out.p + w, s->out.len - (size_t)w);
        s->out.len -= (size_t)w;
    }
    return 0;
}

static int base_env(struct server *s)
{
    size_t n = 0;
    while (environ[n])
        n++;
    s->capenv = n + 8;
    s->env = mem_alloc(s->capenv * sizeof *s->env);
    if (!s->env)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!is_job_var(environ[i]))
            s->env[s->nenv++] = environ[i];
    return 0;
}

/* The dispatcher is gone (or cannot be told any more: the keeper died):
 * no run will be asked for, so the spawner closes the socket and lets go of
 * its lock (a restarted dispatcher waits for that), and goes on only to
 * record the ends of the runs still going. */
static void deaf(struct server *s)
{
    if (s->sh->deaf)
        return;
    s->sh->deaf = 1; /* first: the keeper must never close these numbers again */
    close(s->lockfd);
    close(s->fd);
    jw_clear(&s->out);
}

/* The loop: the dispatcher's requests, the runs' output and ends, until the
 * dispatcher is gone and no run is left. */
static int serve(struct server *s, int sfd)
{
    struct shared *sh = s->sh;
    struct pollfd *pf = NULL;
    size_t *at = NULL, cap = 0; /* at: the run of each pollfd from the third on */
    while (!sh->deaf || sh->top) {
        if (cap < sh->top + 2) { /* the signals, the dispatcher, each run's output */
            size_t n = sh->top + 16;
            struct pollfd *q = mem_realloc(pf, cap * sizeof *q, n * sizeof *q);
            size_t *a = q ? mem_realloc(at, cap * sizeof *a, n * sizeof *a) : NULL;
            if (q)
                pf = q;
            if (!a)
                break;
            at = a;
            cap = n;
        }
        long wait = !s->out.len || s->urgent ? 0 : s->hold_until - now_ms();
        int due = s->out.len && wait <= 0;
        pf[0] = (struct pollfd){sfd, POLLIN, 0};
        pf[1] = (struct pollfd){sh->deaf ? -1 : s->fd, (short)(POLLIN | (due ? POLLOUT : 0)), 0};
        size_t npf = 2;
        for (size_t i = 0; i < sh->top; i++)
            if (sh->procs[i].used == JOBEXEC_RUNNING && sh->procs[i].outfd >= 0) {
                at[npf] = i;
                pf[npf++] = (struct pollfd){sh->procs[i].outfd, POLLIN, 0};
            }
        if (poll(pf, npf, s->out.len && !due ? (int)wait : -1) < 0 && errno != EINTR)
            break;
        for (size_t i = 2; i < npf; i++)
            if (pf[i].revents)
                jobexec_output(&sh->procs[at[i]]);
        if (pf[0].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) > 0)
                if (si.ssi_signo == SIGUSR1)
                    deaf(s); /* the keeper died: a dispatcher must not count on us */
            reap_all(s);
        }
        end_runs(s);
        if (!sh->deaf && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            int end = take_input(s->fd, &s->in);
            if (s->in.len)
                each_line(&s->in, start_line, s);
            if (end)
                deaf(s); /* the runs started go on; their ends are still recorded */
        }
        if (!sh->deaf && s->out.len && (s->urgent || now_ms() >= s->hold_until) &&
            send_out(s) < 0)
            jw_clear(&s->out); /* its end of file is read next */
        s->urgent &= s->out.len > 0;
    }
    mem_free(pf, cap * sizeof *pf);
    mem_free(at, cap * sizeof *at);
    return 0;
}

/* The keeper's watch: until the twin ends, reaps the other children it
 * gets (orphans of the runs, a subreaper's), but leaves a run's own end, a
 * run the twin's death handed over, to be read with its record. 0 with
 * *st the twin's wait status, or -1 on an error. */
static int keep_watch(struct server *s, pid_t twin, int *st)
{
    for (;;) {
        siginfo_t si = {0};
        if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        int run = 0;
        for (size_t i = 0; i < s->sh->top && !run; i++)
            run = s->sh->procs[i].used != JOBEXEC_FREE && s->sh->procs[i].pid == si.si_pid;
        if (si.si_pid == twin || run) /* a run of ours: the twin is dead */
            return waitpid(twin, st, 0) == twin ? 0 : -1;
        waitpid(si.si_pid, NULL, 0);
    }
}

/* The keeper, after the spawner was killed: its runs are the keeper's
 * children now (a subreaper), their descriptors in the table the two
 * share, their state in the memory they share. A run caught in its vfork
 * is taken if its process said its pid (it does so first), dropped if not
 * (there was no such process) after a while. */
static void take_over(struct server *s)
{
    struct shared *sh = s->sh;
    deaf(s);
    for (int tries = 0; tries < 20; tries++) {
        int waiting = 0;
        for (size_t i = 0; i < sh->top; i++)
            waiting |= sh->procs[i].used == JOBEXEC_STARTING && sh->procs[i].pid == 0;
        if (!waiting)
            break;
        nanosleep(&(struct timespec){0, 5000000L}, NULL);
    }
    for (size_t i = 0; i < sh->top; i++) {
        jobexec_proc *p = &sh->procs[i];
        if (p->used != JOBEXEC_STARTING)
            continue;
        if (p->outw >= 0) /* the spawner died before it closed its end */
            close(p->outw);
        p->outw = -1;
        if (p->pid > 0) {
            p->used = JOBEXEC_RUNNING;
        } else {
            jobexec_release(p);
            p->used = JOBEXEC_FREE;
        }
    }
}

int jsp_serve(int fd, int lockfd)
{
    struct server s = {.fd = fd, .lockfd = lockfd, .xfd = -1};
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGCHLD);
    sigaddset(&sigs, SIGUSR1);
    int sfd = -1;
    /* nothing of the spawner's may reach a job, whatever it inherited */
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0 || sigprocmask(SIG_BLOCK, &sigs, NULL) < 0 ||
        (sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK)) < 0 || base_env(&s) < 0 ||
        (s.sh = mmap(NULL, sizeof *s.sh, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)) == MAP_FAILED) {
        perror("comb jobs __spawner");
        return 1;
    }
    /* This process is the keeper; the spawner proper is its twin, forked
       with the descriptor table shared (clone CLONE_FILES) and the runs'
       state in shared memory, so that if either is killed the other goes
       on recording the runs' ends. */
    pid_t keeper = getpid();
    pid_t twin = prctl(PR_SET_CHILD_SUBREAPER, 1) < 0
                     ? -1
                     : (pid_t)syscall(SYS_clone, CLONE_FILES | SIGCHLD, NULL, NULL, NULL, NULL);
    int st = 0, rc;
    if (twin > 0 && keep_watch(&s, twin, &st) == 0 && !WIFSIGNALED(st)) {
        rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;   /* the twin served to the end */
    } else {
        if (twin == 0) {
            prctl(PR_SET_PDEATHSIG, SIGUSR1);
            if (getppid() != keeper)
                deaf(&s); /* the keeper is already gone */
        } else if (twin > 0) {
            take_over(&s);
        }
        rc = serve(&s, sfd);
    }
    close(sfd);
    if (s.xfd >= 0)
        close(s.xfd);
    jw_free(&s.in);
    jw_free(&s.out);
    mem_free(s.env, s.capenv * sizeof *s.env);
    mem_free(s.xpath, s.xcap);
    munmap(s.sh, sizeof *s.sh);
    return rc;
}
