/* exec: a job's process, started from the spawner, and the record of its
 * end; plain children. */
#include "config.h"
#include "jobs/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static void child_signals(void)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, NULL); /* the dispatcher ignores it; jobs must not */
}

/* The job's descriptor for its lock (the one it may inherit). */
#define LOCK_FD 3

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

/* execve, or each PATH entry in turn for a bare name, as execvp does (but
 * with the run's envp). Returns only on failure. */
static void exec_path(const char *const *argv, char *const *envp)
{
    const char *name = argv[0], *path = getenv("PATH");
    if (strchr(name, '/') || !path) {
        execve(name, (char *const *)argv, envp);
        return;
    }
    char buf[4096];
    size_t ln = strlen(name);
    int denied = 0;
    for (const char *d = path;; d++) {
        const char *e = strchr(d, ':');
        size_t ld = e ? (size_t)(e - d) : strlen(d);
        if (ld + ln + 2 <= sizeof buf) {
            memcpy(buf, ld ? d : ".", ld ? ld : 1);
            size_t at = ld ? ld : 1;
            buf[at] = '/';
            memcpy(buf + at + 1, name, ln + 1);
            execve(buf, (char *const *)argv, envp);
            denied |= errno == EACCES;
        }
        if (!e)
            break;
        d = e;
    }
    if (denied)
        errno = EACCES;
}

/* Execs argv with every signal unblocked; says why not and exits (127 if
 * there is no such program, 126 if it cannot be run) when it cannot. */
static void exec_or_die(const char *const *argv, char *const *envp)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    exec_path(argv, envp);
    int missing = errno == ENOENT;
    put(2, "comb jobs: cannot run ");
    put(2, argv[0]);
    put(2, missing ? ": not found\n" : ": not a program it may run\n");
    _exit(missing ? 127 : 126);
}

/* The job's process, between vfork and exec: never returns. */
static void job_child(const jobexec_run *r, jobexec_proc *p, int out)
{
    p->pid = getpid(); /* for the keeper, should the spawner die in the vfork */
    char began[512]; /* a record: a name of at most 200 bytes, a number, a word */
    size_t nb = r->durable ? format_record(began, sizeof began, r->record, "began") : 0;
    setpgid(0, 0);
    child_signals();
    int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (nul < 0 || dup2(nul, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(127);
    if (p->lockfd == LOCK_FD ? fcntl(LOCK_FD, F_SETFD, 0) < 0 : dup2(p->lockfd, LOCK_FD) < 0)
        _exit(127);
    /* The job's own process says it began, durably, before it becomes the
       job: a restart that finds no record knows the job never ran. */
    if (r->durable && (!nb || write(p->xfd, began, nb) != (ssize_t)nb || fdatasync(p->xfd) < 0)) {
        put(2, "comb jobs: cannot record the run's start in the exit log\n");
        _exit(127);
    }
    if (r->dir && chdir(r->dir) < 0) {
        put(2, "comb jobs: cannot change to directory ");
        put(2, r->dir);
        put(2, "\n");
        _exit(127);
    }
    exec_or_die(r->argv, r->envp);
}

/* vfork: the spawner waits, its memory lent, until the job execs. */
static pid_t fork_job(const jobexec_run *r, jobexec_proc *p, int out)
{
    pid_t c = vfork();
    if (c == 0)
        job_child(r, p, out);
    return c;
}

/* The strings kept from the run's start to its end. */
enum { K_LOG, K_HEADER, K_FOOTER, K_RECORD, K_N };

static const char *kept(const jobexec_proc *p, int which)
{
    const char *s = p->keep;
    for (int i = 0; i < which; i++)
        s += strlen(s) + 1;
    return s;
}

/* Keeps what p needs of r until the run's end. 0, or -1 if too long. */
static int keep(const jobexec_run *r, jobexec_proc *p)
{
    const char *s[K_N] = {r->logpath, r->header, r->footer, r->record};
    size_t l[K_N], n = 0;
    for (int i = 0; i < K_N; i++)
        n += (l[i] = strlen(s[i]) + 1);
    if (n > sizeof p->keep)
        return -1;
    for (size_t i = 0, at = 0; i < K_N; at += l[i++])
        memcpy(p->keep + at, s[i], l[i]);
    return 0;
}

int jobexec_start(const jobexec_run *r, int xfd, jobexec_proc *p, char *err, size_t errlen)
{
    p->used = JOBEXEC_FREE;
    p->pid = 0;
    p->status = p->exited = p->bad = 0;
    p->lockfd = p->logfd = p->xfd = p->outfd = p->outw = -1;
    p->durable = r->durable;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = r->slot, .l_len = 1};
    int out[2] = {-1, -1};
    if ((p->lockfd = open(r->lockpath, O_RDWR | O_CLOEXEC)) < 0 ||
        fcntl(p->lockfd, F_OFD_SETLK, &fl) < 0) {
        snprintf(err, errlen, "%s (byte %lld): %s", r->lockpath, (long long)r->slot,
                 strerror(errno));
        goto fail;
    }
    if (keep(r, p) < 0) {
        snprintf(err, errlen, "%s: too long", r->logpath);
        goto fail;
    }
    if ((p->xfd = fcntl(xfd, F_DUPFD_CLOEXEC, 0)) < 0 || pipe2(out, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        goto fail;
    }
    p->outfd = out[0];
    p->outw = out[1];
    fcntl(p->outfd, F_SETFL, O_NONBLOCK);
    p->used = JOBEXEC_STARTING;
    pid_t c = fork_job(r, p, out[1]);
    int e = errno;
    p->outw = -1;
    close(out[1]);
    if (c < 0) {
        snprintf(err, errlen, "vfork: %s", strerror(e));
        goto fail;
    }
    p->pid = c; /* its own group already: vfork returns once it has exec'd */
    p->used = JOBEXEC_RUNNING;
    return 0;
fail:
    jobexec_release(p);
    p->used = JOBEXEC_FREE;
    return -1;
}

/* Opens the run's log (created if absent) and writes the header. */
static int open_log(jobexec_proc *p)
{
    int fd = open(kept(p, K_LOG), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0)
        put(fd, kept(p, K_HEADER));
    return fd;
}

int jobexec_output(jobexec_proc *p)
{
    char buf[16384];
    while (p->outfd >= 0) {
        ssize_t n = read(p->outfd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0) {
            close(p->outfd);
            p->outfd = -1;
            break;
        }
        if (!p->bad && p->logfd < 0 && (p->logfd = open_log(p)) < 0)
            p->bad = 1;
        for (char *q = buf; !p->bad && n > 0;) {
            ssize_t w = write(p->logfd, q, (size_t)n);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                p->bad = 1;
            } else {
                q += w;
                n -= w;
            }
        }
    }
    return 1;
}

size_t jobexec_end(jobexec_proc *p, int *status, char *rec, size_t cap)
{
    if (p->bad && *status == 0)
        *status = 126 << 8;
    if (p->logfd < 0 && !p->bad && *status != 0) /* a failure leaves its mark in the log */
        p->logfd = open_log(p);
    if (p->logfd >= 0) {
        char d[32];
        describe_safe(*status, d, sizeof d);
        put(p->logfd, kept(p, K_FOOTER));
        put(p->logfd, d);
        put(p->logfd, "\n");
        close(p->logfd);
        p->logfd = -1;
    }
    char num[24];
    return format_record(rec, cap, kept(p, K_RECORD), itoa_safe(*status, num, sizeof num));
}

void jobexec_release(jobexec_proc *p)
{
    int *fds[] = {&p->lockfd, &p->xfd, &p->outfd, &p->logfd};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
}

/* Words that make the shell do something a plain exec would not. */
static int shell_word(const char *w)
{
    static const char *const words[] = {
        ".",     ":",      "alias", "bg",     "break", "case",   "cd",     "command", "continue",
        "do",    "done",   "elif",  "else",   "esac",  "eval",   "exec",   "exit",    "export",
        "fc",    "fg",     "fi",    "for",    "function", "getopts", "hash", "if",    "jobs",
        "kill",  "local",  "read",  "readonly", "return", "select", "set",  "shift",   "source",
        "test",  "then",   "time",  "times",  "trap",  "type",   "ulimit", "umask",   "unalias",
        "unset", "until",  "wait",  "while",  "[",     "!",      "{",      "}",       "pwd"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (!strcmp(w, words[i]))
            return 1;
    return 0;
}

int jobexec_words(const char *text, char *words, size_t cap, const char **argv, size_t max)
{
    size_t n = strlen(text), k = 0;
    if (n + 1 > cap)
        return 0;
    for (size_t i = 0; i < n; i++) /* only what the shell leaves alone */
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./,:+@%=- \t",
                     text[i]))
            return 0;
    memcpy(words, text, n + 1);
    for (char *w = strtok(words, " \t"); w; w = strtok(NULL, " \t")) {
        if (k + 1 >= max)
            return 0;
        argv[k++] = w;
    }
    argv[k] = NULL;
    /* nothing, an assignment, or a builtin or keyword: the shell's */
    return k > 0 && !strchr(argv[0], '=') && !shell_word(argv[0]);
}

static int open_pidfd(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
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
        exec_or_die(argv, envp);
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
