/* exec: the wrapper that runs a job, keeps its output and records its
 * exit; plain children. */
#include "config.h"
#include "jobs/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobs/journal.h"

static void put(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* Decimal of v into buf (async-signal-safe); returns buf. */
static char *itoa_safe(long v, char *buf, size_t n)
{
    char *p = buf + n - 1;
    unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
    *p = '\0';
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u && p > buf + 1);
    if (v < 0)
        *--p = '-';
    return p;
}

static void describe_safe(int status, char *buf, size_t n)
{
    char num[24];
    const char *word = WIFSIGNALED(status) ? "signal " : "exit ";
    const char *d = itoa_safe(WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), num,
                              sizeof num);
    size_t lw = strlen(word), ld = strlen(d);
    if (lw + ld + 1 > n)
        return;
    memcpy(buf, word, lw);
    memcpy(buf + lw, d, ld + 1);
}

void jobexec_describe(int status, char *buf, size_t n) { describe_safe(status, buf, n); }

/* Moves the descriptors want[0..n) to 0..n-1, in that order, and closes the
 * rest: nothing of the dispatcher (its journal, socket, clients) may outlive
 * it in a child. Those from 3 on are close-on-exec. */
static int place_fds(const int *want, int n)
{
    int high[8];
    for (int i = 0; i < n; i++) /* out of the way first: a want may sit on a target */
        if ((high[i] = fcntl(want[i], F_DUPFD_CLOEXEC, 16)) < 0)
            return -1;
    for (int i = 0; i < n; i++)
        if (dup3(high[i], i, i >= 3 ? O_CLOEXEC : 0) < 0)
            return -1;
    close_range((unsigned)n, ~0U, 0);
    return 0;
}

static void exec_child(const char *const *argv, char *const *envp, const char *dir)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dir && chdir(dir) < 0) {
        put(2, "comb jobs: cannot change to directory ");
        put(2, dir);
        put(2, "\n");
        _exit(127);
    }
    execve(argv[0], (char *const *)argv, envp);
    put(2, "comb jobs: cannot run ");
    put(2, argv[0]);
    put(2, "\n");
    _exit(127);
}

static void child_signals(void)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, NULL); /* the dispatcher ignores it; jobs must not */
}

/* The wrapper's descriptors. */
enum { W_LOCK = 3, W_EXIT, W_OUT, W_OUTW, W_NFDS };

static int open_log(const jobexec_run *r)
{
    int fd = open(r->logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0)
        put(fd, r->header);
    return fd;
}

/* Copies the job's output to its log until every writer has closed the
 * pipe. Returns the log (or -1 if nothing came); *bad when it could not be
 * written, after which the output is read and dropped so the job goes on. */
static int copy_output(const jobexec_run *r, int *bad)
{
    char buf[16384];
    int logfd = -1;
    *bad = 0;
    for (;;) {
        ssize_t n = read(W_OUT, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return logfd;
        if (!*bad && logfd < 0 && (logfd = open_log(r)) < 0)
            *bad = 1;
        for (char *p = buf; !*bad && n > 0;) {
            ssize_t w = write(logfd, p, (size_t)n);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                *bad = 1;
            } else {
                p += w;
                n -= w;
            }
        }
    }
}

/* The exit log record "NAME RUN WHAT" (WHAT: the wait status, or "began"),
 * framed; its length, 0 if too long. */
static size_t format_record(char *buf, size_t cap, const char *prefix, const char *d)
{
    size_t lp = strlen(prefix), ld = strlen(d);
    if (lp + 1 + ld + JNL_SEAL_LEN > cap)
        return 0;
    memcpy(buf, prefix, lp);
    buf[lp] = ' ';
    memcpy(buf + lp + 1, d, ld);
    jnl_seal(buf, lp + 1 + ld, buf + lp + 1 + ld);
    return lp + 1 + ld + JNL_SEAL_LEN;
}

/* The wrapper: runs in the forked child and never returns. */
static void wrapper(const jobexec_run *r, int lockfd)
{
    setpgid(0, 0);
    child_signals();
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    sigprocmask(SIG_SETMASK, &block, NULL);
    int p[2], nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    int xfd = open(r->exitpath, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (nul < 0 || xfd < 0 || pipe2(p, O_CLOEXEC) < 0)
        _exit(127);
    int fds[W_NFDS] = {nul, nul, nul, lockfd, xfd, p[0], p[1]};
    if (place_fds(fds, W_NFDS) < 0)
        _exit(127);
    int status = 127 << 8; /* unless the job runs */
    char began[512];       /* a record: a name of at most 200 bytes, a number, a word */
    size_t nb = r->durable ? format_record(began, sizeof began, r->record, "began") : 0;
    pid_t c = vfork();
    if (c == 0) {
        dup2(W_OUTW, 1);
        dup2(W_OUTW, 2);
        /* The job's own process says it began, durably, before it becomes the
           job: a restart that finds no record knows the job never ran. */
        if (r->durable && (!nb || write(W_EXIT, began, nb) != (ssize_t)nb || fdatasync(W_EXIT) < 0)) {
            put(2, "comb jobs: cannot record the run's start in the exit log\n");
            _exit(127);
        }
        exec_child(r->argv, r->envp, r->dir);
    }
    close(W_OUTW);
    int bad, logfd = copy_output(r, &bad);
    if (c > 0)
        while (waitpid(c, &status, 0) < 0 && errno == EINTR)
            ;
    if (bad && status == 0)
        status = 126 << 8;
    if (logfd < 0 && !bad && status != 0) /* a failure leaves its mark in the log */
        logfd = open_log(r);
    char line[512]; /* a record: a name of at most 200 bytes, two numbers */
    if (logfd >= 0) {
        describe_safe(status, line, sizeof line);
        put(logfd, r->footer);
        put(logfd, line);
        put(logfd, "\n");
    }
    char num[24];
    size_t n = format_record(line, sizeof line, r->record, itoa_safe(status, num, sizeof num));
    if (n && write(W_EXIT, line, n) == (ssize_t)n && r->durable)
        fdatasync(W_EXIT);
    _exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
}

static int open_pidfd(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int jobexec_start(const jobexec_run *r, pid_t *pid, char *err, size_t errlen)
{
    int lockfd = open(r->lockpath, O_RDWR | O_CLOEXEC);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = r->slot, .l_len = 1};
    if (lockfd < 0 || fcntl(lockfd, F_OFD_SETLK, &fl) < 0) {
        snprintf(err, errlen, "%s (byte %lld): %s", r->lockpath, (long long)r->slot,
                 strerror(errno));
        if (lockfd >= 0)
            close(lockfd);
        return -1;
    }
    pid_t p = fork();
    if (p == 0)
        wrapper(r, lockfd);
    int e = errno;
    close(lockfd); /* the lock lives on in the wrapper, or dies here with the fork */
    if (p < 0) {
        snprintf(err, errlen, "fork: %s", strerror(e));
        return -1;
    }
    setpgid(p, p); /* also here, so a kill of the group right away finds it */
    *pid = p;
    return 0;
}

int jobexec_spawn(const char *const *argv, char *const *envp, const char *logpath, pid_t *pid,
                  int *pidfd, char *err, size_t errlen)
{
    int logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logfd < 0) {
        snprintf(err, errlen, "%s: %s", logpath, strerror(errno));
        return -1;
    }
    pid_t p = fork();
    if (p == 0) {
        setpgid(0, 0);
        child_signals();
        int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int fds[3] = {nul, logfd, logfd};
        if (nul < 0 || place_fds(fds, 3) < 0)
            _exit(127);
        exec_child(argv, envp, NULL);
    }
    int e = errno;
    close(logfd);
    if (p < 0) {
        snprintf(err, errlen, "fork: %s", strerror(e));
        return -1;
    }
    setpgid(p, p);
    *pid = p;
    *pidfd = open_pidfd(p);
    return 0;
}

int jobexec_reap(pid_t pid, int *status)
{
    pid_t r;
    while ((r = waitpid(pid, status, WNOHANG)) < 0 && errno == EINTR)
        ;
    return r > 0 ? 1 : r == 0 ? 0 : -1;
}

int jobexec_alive(int fd, off_t slot)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = slot, .l_len = 1};
    return fcntl(fd, F_OFD_GETLK, &fl) < 0 || fl.l_type != F_UNLCK;
}
