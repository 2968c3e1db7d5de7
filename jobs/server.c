/* server: the event loop, the control socket and protocol, the monitor,
 * and the client. */
#include "config.h"
#include "jobs/server.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "store/mem.h"
#include "jobs/exec.h"

#define MAX_REQUEST (64u << 20) /* a request line longer than this is refused */

extern char **environ;

struct conn {
    int fd;
    jw_buf in, out;
    size_t sent;
    int closing;     /* close once out is sent */
    int waiting;     /* a wait request: reply when its jobs are settled */
    char **wnames;   /* its job names (owned), none meaning all */
    size_t nw;
};

struct srv {
    jobs *js;
    const jobsrv_monitor *mon;
    int daemon, lfd, sigfd, stop;
    int stopped; /* embedded, by mon->stop */
    struct conn *c;
    size_t nc, capc;
    pid_t mon_pid;
    int mon_pidfd;
    double mon_next;
    char sockpath[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int sock_path(const char *rundir, struct sockaddr_un *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if ((size_t)snprintf(a->sun_path, sizeof a->sun_path, "%s/sock", rundir) >=
        sizeof a->sun_path) {
        snprintf(err, errlen, "%s/sock: path too long for a socket (%zu bytes at most)", rundir,
                 sizeof a->sun_path - 1);
        return -1;
    }
    return 0;
}

/* ---- replies ------------------------------------------------------------ */

static void reply_ok(struct conn *c, const jw_buf *body)
{
    size_t n = body ? body->len : 0;
    if (jw_printf(&c->out, "ok %zu\n", n) < 0 || (n && jw_put(&c->out, body->p, n) < 0))
        c->closing = 1;
}

static void reply_err(struct conn *c, const char *msg)
{
    size_t start = c->out.len;
    if (jw_puts(&c->out, "err ") < 0 || jw_puts(&c->out, msg) < 0 || jw_puts(&c->out, "\n") < 0) {
        c->closing = 1;
        return;
    }
    for (size_t i = start; i + 1 < c->out.len; i++) /* one line, whatever msg held */
        if (c->out.p[i] == '\n')
            c->out.p[i] = ' ';
}

/* ---- requests ----------------------------------------------------------- */

static int do_submit(jobs *js, char **f, int n, jw_buf *body, char *err, size_t errlen)
{
    if (n == 0 || n % JOB_SPEC_FIELDS) {
        snprintf(err, errlen, "submit: %d fields, expected %d per job", n, JOB_SPEC_FIELDS);
        return -1;
    }
    size_t nj = (size_t)n / JOB_SPEC_FIELDS, done = 0;
    job_spec *specs = mem_calloc(nj, sizeof *specs);
    int rc = specs ? 0 : -1;
    if (!specs)
        snprintf(err, errlen, "out of memory");
    for (; rc == 0 && done < nj; done++)
        rc = job_spec_decode(f + done * JOB_SPEC_FIELDS, &specs[done], err, errlen);
    if (rc == 0 && job_submit_many(js, specs, nj) < 0) {
        snprintf(err, errlen, "%s", job_error(js));
        rc = -1;
    }
    for (size_t i = 0; specs && i < nj; i++)
        job_spec_free(&specs[i]); /* a zeroed spec frees nothing */
    mem_free(specs, nj * sizeof *specs);
    if (rc == 0 && jw_printf(body, "submitted %zu job%s\n", nj, nj == 1 ? "" : "s") < 0)
        rc = -1;
    return rc;
}

static int do_admin(jobs *js, const char *verb, char **f, int n, char *err, size_t errlen)
{
    static const struct {
        const char *verb;
        int (*fn)(jobs *, const char *);
    } ops[] = {{"delete", job_delete}, {"force", job_force}, {"retry", job_retry},
               {"hold", job_hold},     {"release", job_release}};
    int (*fn)(jobs *, const char *) = NULL;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(verb, ops[i].verb))
            fn = ops[i].fn;
    if (!fn)
        return 1;
    if (n == 0) {
        snprintf(err, errlen, "%s: no job named", verb);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (fn(js, f[i]) < 0) {
            snprintf(err, errlen, "%s%s", job_error(js),
                     i ? " (the jobs before it in the request were done)" : "");
            return -1;
        }
    return 0;
}

static int do_limit(jobs *js, char **f, int n, char *err, size_t errlen)
{
    if (n == 0 || n % 2) {
        snprintf(err, errlen, "limit: expected NAME VALUE pairs");
        return -1;
    }
    for (int i = 0; i < n; i += 2)
        if (job_set_limit_text(js, f[i], f[i + 1]) < 0) {
            snprintf(err, errlen, "%s", job_error(js));
            return -1;
        }
    return 0;
}

static int check_names(jobs *js, char **f, int n, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++)
        if (job_find(js, f[i]) < 0) {
            snprintf(err, errlen, "no job named '%s'", f[i]);
            return -1;
        }
    return 0;
}

static void end_wait(struct conn *c)
{
    for (size_t i = 0; i < c->nw; i++)
        mem_free(c->wnames[i], strlen(c->wnames[i]) + 1);
    mem_free(c->wnames, (c->nw + 1) * sizeof *c->wnames);
    c->wnames = NULL;
    c->nw = 0;
    c->waiting = 0;
}

static int start_wait(struct conn *c, char **names, int n)
{
    c->wnames = mem_calloc((size_t)n + 1, sizeof *c->wnames);
    if (!c->wnames)
        return -1;
    for (; c->nw < (size_t)n; c->nw++)
        if (!(c->wnames[c->nw] = mem_strdup(names[c->nw]))) {
            end_wait(c);
            return -1;
        }
    c->waiting = 1;
    return 0;
}

/* Counts the fields a line of len bytes may split into. */
static size_t max_fields(const char *line, size_t len)
{
    size_t max = 1;
    for (size_t i = 0; i < len; i++)
        max += line[i] == ' ';
    return max;
}

int jobsrv_do(jobs *js, char **f, int n, jw_buf *body, char *err, size_t errlen)
{
    const char *verb = f[0];
    char **a = f + 1;
    int na = n - 1, rc;
    err[0] = '\0';
    if (!strcmp(verb, "submit"))
        return do_submit(js, a, na, body, err, errlen);
    if (!strcmp(verb, "status") && na >= 1)
        rc = job_status_text(js, (const char *const *)a + 1, (size_t)na - 1, !strcmp(a[0], "1"),
                             body);
    else if (!strcmp(verb, "info"))
        rc = job_info_text(js, (const char *const *)a, (size_t)na, body);
    else if (!strcmp(verb, "dump") && na == 0)
        rc = job_dump_text(js, body);
    else if (!strcmp(verb, "limit"))
        return do_limit(js, a, na, err, errlen);
    else if ((rc = do_admin(js, verb, a, na, err, errlen)) == 1) {
        snprintf(err, errlen, "unknown request '%.40s' (or wrong number of fields)", verb);
        return -1;
    } else
        return rc;
    if (rc < 0)
        snprintf(err, errlen, "%s", job_error(js));
    return rc;
}

/* Handles one request line (modified in place). A wait is parked on the
 * connection instead of answered. */
static void handle(struct srv *s, struct conn *c, char *line, size_t len)
{
    char err[1200];
    size_t max = max_fields(line, len);
    char **f = mem_alloc(max * sizeof *f);
    jw_buf body = {0};
    if (!f) {
        reply_err(c, "out of memory");
        return;
    }
    int n = jw_split(line, f, (int)max);
    char ver[16];
    snprintf(ver, sizeof ver, "%d", JOBSRV_VERSION);
    int rc = 0;
    err[0] = '\0';
    if (n < 0)
        snprintf(err, sizeof err, "malformed request: bad escape");
    else if (n < 3 || strcmp(f[0], JOBSRV_MAGIC) != 0)
        snprintf(err, sizeof err, "malformed request: expected '%s %d VERB ...'", JOBSRV_MAGIC,
                 JOBSRV_VERSION);
    else if (strcmp(f[1], ver) != 0)
        snprintf(err, sizeof err, "protocol version %.20s not supported: this dispatcher speaks %d",
                 f[1], JOBSRV_VERSION);
    if (err[0]) {
        reply_err(c, err);
        goto out;
    }
    if (!strcmp(f[2], "wait")) {
        rc = check_names(s->js, f + 3, n - 3, err, sizeof err);
        if (rc == 0 && start_wait(c, f + 3, n - 3) == 0)
            goto out;
        rc = -1; /* with err empty: out of memory */
    } else {
        rc = jobsrv_do(s->js, f + 2, n - 2, &body, err, sizeof err);
    }
    if (rc < 0)
        reply_err(c, err[0] ? err : "out of memory");
    else
        reply_ok(c, &body);
out:
    jw_free(&body);
    mem_free(f, max * sizeof *f);
}

/* Answers the wait requests whose jobs are all settled now. */
static void check_waits(struct srv *s)
{
    for (size_t i = 0; i < s->nc; i++) {
        struct conn *c = &s->c[i];
        if (!c->waiting ||
            (!job_settled(s->js, (const char *const *)c->wnames, c->nw) && !s->stop))
            continue;
        jw_buf body = {0};
        if (job_status_text(s->js, (const char *const *)c->wnames, c->nw, c->nw == 0, &body) < 0)
            reply_err(c, job_error(s->js));
        else
            reply_ok(c, &body);
        jw_free(&body);
        end_wait(c);
    }
}

/* ---- connections -------------------------------------------------------- */

static void drop(struct srv *s, size_t i)
{
    struct conn *c = &s->c[i];
    close(c->fd);
    jw_free(&c->in);
    jw_free(&c->out);
    end_wait(c);
    s->c[i] = s->c[--s->nc];
}

static void accept_all(struct srv *s)
{
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        struct ucred cr;
        socklen_t len = sizeof cr;
        struct conn c = {.fd = fd};
        if (s->nc == s->capc) {
            size_t cap = s->capc ? 2 * s->capc : 8;
            struct conn *p = mem_realloc(s->c, s->capc * sizeof *p, cap * sizeof *p);
            if (!p) {
                close(fd);
                continue;
            }
            s->c = p;
            s->capc = cap;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.uid != geteuid()) {
            reply_err(&c, "permission denied: only the dispatcher's own user may use it");
            c.closing = 1;
        }
        s->c[s->nc++] = c;
    }
}

/* Reads what is there and handles each complete line. 0, or -1 to drop. */
static int read_conn(struct srv *s, struct conn *c)
{
    char buf[65536];
    for (;;) {
        ssize_t r = read(c->fd, buf, sizeof buf);
        if (r == 0)
            return c->out.len > c->sent ? (c->closing = 1, 0) : -1;
        if (r < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        if (jw_put(&c->in, buf, (size_t)r) < 0 || c->in.len > MAX_REQUEST) {
            reply_err(c, "request too long");
            c->closing = 1;
            jw_free(&c->in);
            return 0;
        }
        char *nl;
        while (!c->waiting && !c->closing && c->in.len &&
               (nl = memchr(c->in.p, '\n', c->in.len))) {
            size_t len = (size_t)(nl - c->in.p);
            *nl = '\0';
            handle(s, c, c->in.p, len);
            memmove(c->in.p, nl + 1, c->in.len - len - 1);
            c->in.len -= len + 1;
            c->in.p[c->in.len] = '\0';
        }
    }
}

/* Sends what is pending. 0, or -1 to drop. */
static int write_conn(struct conn *c)
{
    while (c->sent < c->out.len) {
        ssize_t w = send(c->fd, c->out.p + c->sent, c->out.len - c->sent, MSG_NOSIGNAL);
        if (w < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        c->sent += (size_t)w;
    }
    jw_clear(&c->out);
    c->sent = 0;
    return c->closing ? -1 : 0;
}

/* ---- the socket ---------------------------------------------------------- */

static int listen_sock(struct srv *s)
{
    struct sockaddr_un a;
    char err[256];
    if (sock_path(job_rundir(s->js), &a, err, sizeof err) < 0)
        return job_fail(s->js, "%s", err);
    snprintf(s->sockpath, sizeof s->sockpath, "%s", a.sun_path);
    unlink(a.sun_path); /* a stale one: the run directory's lock is ours */
    s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    mode_t old = umask(0177); /* born 0600: no moment when others may connect */
    int rc = s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof a) < 0 ||
             chmod(a.sun_path, 0600) < 0 || listen(s->lfd, 64) < 0;
    umask(old);
    if (rc)
        return job_fail(s->js, "%s: %s", a.sun_path, strerror(errno));
    return 0;
}

/* ---- the monitor --------------------------------------------------------- */

static int is_comb_script(const char *cmd)
{
    size_t n = strlen(cmd);
    struct stat st;
    return n > 5 && !strcmp(cmd + n - 5, ".comb") && stat(cmd, &st) == 0 && S_ISREG(st.st_mode);
}

static void monitor_reap(struct srv *s)
{
    int st;
    if (s->mon_pid <= 0 || jobexec_reap(s->mon_pid, &st) != 1)
        return;
    if (st != 0) {
        char d[32];
        jobexec_describe(st, d, sizeof d);
        job_note(s->js, "monitor ended with %s (see log/monitor.log)", d);
    }
    close(s->mon_pidfd);
    s->mon_pid = 0;
    s->mon_pidfd = -1;
}

/* Starts the monitor when it is due and not still running. */
static void monitor_start(struct srv *s)
{
    if (!s->mon || !s->mon->command || s->mon_pid > 0 || now() < s->mon_next)
        return;
    s->mon_next = now() + s->mon->every;
    const char *rundir = job_rundir(s->js), *cmd = s->mon->command;
    jw_buf line = {0}; /* the command, with RUNDIR as its last argument */
    const char *sh[] = {"/bin/sh", "-c", NULL, "monitor", rundir, NULL};
    const char *cb[] = {job_comb_path(s->js), cmd, rundir, NULL};
    char logp[PATH_MAX], err[PATH_MAX + 64] = "out of memory";
    snprintf(logp, sizeof logp, "%s/log/monitor.log", rundir);
    if (jw_printf(&line, "%s \"$@\"", cmd) < 0 ||
        jobexec_spawn(is_comb_script(cmd) ? cb : (sh[2] = line.p, sh), environ, logp,
                      &s->mon_pid, &s->mon_pidfd, err, sizeof err) < 0) {
        job_note(s->js, "monitor could not start: %s", err);
        s->mon_pid = 0;
    }
    jw_free(&line);
}

/* ---- the loop ------------------------------------------------------------ */

static int wait_events(struct srv *s)
{
    size_t max = 3 + s->nc + job_running(s->js);
    struct pollfd *fds = mem_alloc(max * sizeof *fds);
    if (!fds)
        return -1;
    size_t k = 0, lfd_at = 0;
    if (s->sigfd >= 0)
        fds[k++] = (struct pollfd){s->sigfd, POLLIN, 0};
    if (s->lfd >= 0) {
        lfd_at = k;
        fds[k++] = (struct pollfd){s->lfd, POLLIN, 0};
    }
    if (s->mon_pid > 0 && s->mon_pidfd >= 0)
        fds[k++] = (struct pollfd){s->mon_pidfd, POLLIN, 0};
    size_t first_conn = k;
    for (size_t i = 0; i < s->nc; i++)
        fds[k++] = (struct pollfd){s->c[i].fd, (short)(POLLIN | (s->c[i].out.len ? POLLOUT : 0)), 0};
    k += job_pollfds(s->js, fds + k, max - k);
    int ms = job_timeout_ms(s->js);
    /* A running monitor wakes us through its pidfd (polled without one);
       an idle one when it is next due. */
    if (s->mon && s->mon->command && !(s->mon_pid > 0 && s->mon_pidfd >= 0)) {
        double left = s->mon_pid > 0 ? 0.05 : s->mon_next - now();
        double t = left * 1000;
        int mms = left <= 0 ? 0 : (int)t + ((int)t < t);  /* rounded up (no libm) */
        ms = ms < 0 || mms < ms ? mms : ms;
    }
    int n = poll(fds, k, ms);
    if (n > 0 && s->sigfd >= 0 && fds[0].revents) {
        struct signalfd_siginfo si;
        if (read(s->sigfd, &si, sizeof si) > 0)
            s->stop = 1;
    }
    for (size_t i = s->nc; i-- > 0;) {
        struct conn *c = &s->c[i];
        short rev = fds[first_conn + i].revents;
        if (n > 0 && (rev & (POLLIN | POLLHUP | POLLERR)) && read_conn(s, c) < 0)
            drop(s, i);
    }
    if (n > 0 && s->lfd >= 0 && fds[lfd_at].revents)
        accept_all(s);
    mem_free(fds, max * sizeof *fds);
    return 0;
}

/* Syncs, then sends every pending reply. */
static int flush_replies(struct srv *s)
{
    int any = 0;
    for (size_t i = 0; i < s->nc; i++)
        any |= s->c[i].out.len > 0;
    if (!any)
        return 0;
    if (job_sync(s->js) < 0)
        return -1;
    for (size_t i = s->nc; i-- > 0;)
        if (s->c[i].out.len && write_conn(&s->c[i]) < 0)
            drop(s, i);
    return 0;
}

static int done_embedded(struct srv *s)
{
    if (!s->daemon && s->mon && s->mon->stop && s->mon->stop(s->mon->stop_ctx))
        return s->stopped = 1;
    if (s->daemon || job_running(s->js) || s->mon_pid > 0)
        return 0;
    return job_settled(s->js, NULL, 0) ||
           (job_stalled(s->js) && !(s->mon && s->mon->command));
}

static int loop(struct srv *s)
{
    int rc = 0;
    while (rc == 0) {
        rc = job_step(s->js);
        monitor_reap(s);
        check_waits(s);
        if (rc == 0)
            rc = flush_replies(s);
        /* The end is checked between the monitor's runs: a monitor slower
           than its period would otherwise always be running here. */
        if (rc < 0 || s->stop || done_embedded(s))
            break;
        monitor_start(s);
        if (wait_events(s) < 0)
            rc = -1;
    }
    s->stop = 1;
    check_waits(s); /* those waiting get the state as it is */
    flush_replies(s);
    while (s->nc)
        drop(s, s->nc - 1);
    mem_free(s->c, s->capc * sizeof *s->c);
    if (s->lfd >= 0) {
        close(s->lfd);
        unlink(s->sockpath);
    }
    if (s->mon_pid > 0)
        close(s->mon_pidfd);
    return rc;
}

int job_run(jobs *js, const jobsrv_monitor *mon)
{
    struct srv s = {.js = js, .mon = mon, .lfd = -1, .sigfd = -1, .mon_pidfd = -1};
    if (listen_sock(&s) < 0 && mon && mon->command)
        return -1; /* a monitor has no other way to talk to us */
    if (loop(&s) < 0)
        return -1;
    if (s.stopped)
        return 2;
    for (size_t i = 0; i < job_count(js); i++) {
        job_info in;
        job_get(js, i, &in);
        if (in.state != JOB_DONE && in.state != JOB_DELETED)
            return 1;
    }
    return 0;
}

int jobsrv_serve(jobs *js, const jobsrv_monitor *mon, int ready_fd)
{
    struct srv s = {.js = js, .mon = mon, .daemon = 1, .lfd = -1, .mon_pidfd = -1};
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
        (s.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
        return job_fail(js, "signalfd: %s", strerror(errno));
    if (listen_sock(&s) < 0) {
        close(s.sigfd);
        return -1;
    }
    if (ready_fd >= 0) {
        if (write(ready_fd, "ok\n", 3) < 0) { /* the parent is gone: serve anyway */
        }
        close(ready_fd);
    }
    job_note(js, "serving %s (pid %ld)", s.sockpath, (long)getpid());
    int rc = loop(&s);
    job_note(js, "stopped");
    close(s.sigfd);
    return rc;
}

/* ---- the client ----------------------------------------------------------- */

/* Reads until the reply is complete; 0 done, 2 timeout, -1 error. */
static int read_reply(int fd, int timeout_ms, jw_buf *in, size_t *body_at, size_t *body_len)
{
    double deadline = timeout_ms < 0 ? INFINITY : now() + timeout_ms / 1000.0;
    for (;;) {
        char *nl = in->len ? memchr(in->p, '\n', in->len) : NULL;
        if (nl && !strncmp(in->p, "err ", 4))
            return 0;
        if (nl && !strncmp(in->p, "ok ", 3)) {
            *body_at = (size_t)(nl - in->p) + 1;
            *body_len = strtoul(in->p + 3, NULL, 10);
            if (in->len >= *body_at + *body_len)
                return 0;
        } else if (nl) {
            return -1;
        }
        int ms = isinf(deadline) ? -1 : (int)((deadline - now()) * 1000);
        if (!isinf(deadline) && ms <= 0)
            return 2;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, ms) < 0 && errno != EINTR)
            return -1;
        if (!p.revents)
            continue;
        char buf[65536];
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || jw_put(in, buf, (size_t)r) < 0)
            return -1;
    }
}

int jobsrv_request(const char *rundir, const jw_buf *req, int timeout_ms, jw_buf *reply,
                   char *err, size_t errlen)
{
    struct sockaddr_un a;
    if (sock_path(rundir, &a, err, errlen) < 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        int none = fd >= 0 && (errno == ENOENT || errno == ECONNREFUSED);
        snprintf(err, errlen, "no dispatcher at %s: %s", a.sun_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return none ? 3 : -1;
    }
    jw_buf head = {0}, in = {0};
    size_t at = 0, len = 0;
    int rc = jw_printf(&head, "%s %d ", JOBSRV_MAGIC, JOBSRV_VERSION) < 0 ? -1 : 0;
    if (rc == 0 && (jw_send_all(fd, head.p, head.len) < 0 || jw_send_all(fd, req->p, req->len) < 0 ||
                    jw_send_all(fd, "\n", 1) < 0))
        rc = -1;
    if (rc == 0)
        rc = read_reply(fd, timeout_ms, &in, &at, &len);
    close(fd);
    if (rc == 0 && !strncmp(in.p, "err ", 4)) {
        in.p[strcspn(in.p, "\n")] = '\0';
        snprintf(err, errlen, "%s", in.p + 4);
        rc = 1;
    } else if (rc == 0 && jw_put(reply, in.p + at, len) < 0) {
        rc = -1;
    }
    if (rc < 0)
        snprintf(err, errlen, "dispatcher at %s: no reply (connection lost)", a.sun_path);
    else if (rc == 2)
        snprintf(err, errlen, "timed out");
    jw_free(&head);
    jw_free(&in);
    return rc;
}

/* ---- without a dispatcher ------------------------------------------------- */

int jobsrv_offline(const char *rundir, const jw_buf *req, jw_buf *reply, char *err,
                   size_t errlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/journal", rundir);
    if (access(path, F_OK) < 0)
        return 3; /* no run directory: err still says no dispatcher listens */
    job_options opt = {NULL, NULL, 1};
    jobs *js = job_open(rundir, &opt, err, errlen);
    if (!js)
        return 1;
    jw_buf line = {0};
    size_t max = max_fields(req->p, req->len);
    char **f = mem_alloc(max * sizeof *f);
    int n = f && jw_put(&line, req->p, req->len) == 0 ? jw_split(line.p, f, (int)max) : -1;
    int rc = n < 1 ? (snprintf(err, errlen, "out of memory or a malformed request"), 1)
                   : jobsrv_do(js, f, n, reply, err, errlen) < 0 ? 1 : 0;
    if (rc == 1 && !err[0])
        snprintf(err, errlen, "out of memory");
    if (rc == 0 && job_sync(js) < 0) {
        snprintf(err, errlen, "%s", job_error(js));
        rc = 1;
    }
    job_close(js);
    mem_free(f, max * sizeof *f);
    jw_free(&line);
    return rc;
}
