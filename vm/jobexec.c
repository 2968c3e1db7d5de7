/* jobexec: the wrapper that runs a job and records its exit; plain children. */
#include "config.h"
#include "vm/jobexec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Gives the child stdin /dev/null, stdout and stderr logfd, keepfd (if >= 0)
 * as descriptor 3, and closes the rest: nothing of the dispatcher (its
 * journal, socket, clients) may outlive it in a child. */
static int setup_fds(int logfd, int keepfd)
{
    int nul = open("/dev/null", O_RDONLY);
    int l = fcntl(logfd, F_DUPFD, 10);
    int k = keepfd >= 0 ? fcntl(keepfd, F_DUPFD, 10) : -1;
    if (nul < 0 || l < 0 || (keepfd >= 0 && k < 0))
        return -1;
    if (dup2(nul, 0) < 0 || dup2(l, 1) < 0 || dup2(l, 2) < 0 || (k >= 0 && dup2(k, 3) < 0))
        return -1;
    close_range(k >= 0 ? 4 : 3, ~0U, 0);
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

/* The wrapper: runs in the forked child and never returns. It opens the
 * log itself, off the dispatcher's path (exit 126 if it cannot). */
static void wrapper(const jobexec_run *r, int tmpfd)
{
    setpgid(0, 0);
    int logfd = open(r->logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int nolog = logfd < 0;
    if (nolog)
        logfd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int status = (nolog ? 126 : 127) << 8; /* unless the job runs */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, NULL); /* the dispatcher ignores it; jobs must not */
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    sigprocmask(SIG_SETMASK, &block, NULL);
    if (setup_fds(logfd, tmpfd) < 0)
        _exit(127);
    fcntl(3, F_SETFD, FD_CLOEXEC); /* the lock stays with the wrapper, not the job */
    put(1, r->header);
    pid_t c = nolog ? -1 : vfork();
    if (c == 0)
        exec_child(r->argv, r->envp, r->dir);
    if (c > 0)
        while (waitpid(c, &status, 0) < 0 && errno == EINTR)
            ;
    char num[24], line[48];
    char *d = itoa_safe(status, num, sizeof num);
    size_t ld = strlen(d);
    memcpy(line, d, ld);
    line[ld] = '\n';
    if (pwrite(3, line, ld + 1, 0) == (ssize_t)(ld + 1) && (!r->durable || fsync(3) == 0))
        rename(r->tmppath, r->exitpath);
    describe_safe(status, line, sizeof line);
    put(1, r->footer);
    put(1, line);
    put(1, "\n");
    _exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
}

static int open_pidfd(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int jobexec_start(const jobexec_run *r, pid_t *pid, int *pidfd, char *err, size_t errlen)
{
    int tmpfd = open(r->tmppath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (tmpfd < 0 || flock(tmpfd, LOCK_EX | LOCK_NB) < 0) {
        snprintf(err, errlen, "%s: %s", r->tmppath, strerror(errno));
        if (tmpfd >= 0)
            close(tmpfd);
        return -1;
    }
    pid_t p = fork();
    if (p == 0)
        wrapper(r, tmpfd);
    int e = errno;
    close(tmpfd);
    if (p < 0) {
        snprintf(err, errlen, "fork: %s", strerror(e));
        unlink(r->tmppath);
        return -1;
    }
    setpgid(p, p); /* also here, so a kill of the group right away finds it */
    *pid = p;
    *pidfd = open_pidfd(p);
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
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGPIPE, &dfl, NULL);
        if (setup_fds(logfd, -1) < 0)
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

int jobexec_read_exit(const char *exitpath, int *status)
{
    int fd = open(exitpath, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *end;
    long v = strtol(buf, &end, 10);
    if (end == buf || *end != '\n')
        return -1;
    *status = (int)v;
    return 1;
}

int jobexec_alive(const char *tmppath)
{
    int fd = open(tmppath, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}
