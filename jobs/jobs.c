/* jobs: a dispatcher's life: opening its run directory (the lock, the
 * journal's replay, the recovery of the runs that were going), closing it,
 * its errors and its log. The model is in model.c, replay and compaction in
 * replay.c, the start/reap cycle in sched.c, looking in status.c. */
#include "config.h"
#include "jobs/model.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/mem.h"
#include "jobs/replay.h"
#include "jobs/sched.h"

#define EXITLOG_ROTATE (1u << 20) /* bytes of exit records before a new generation */

/* ---- errors and the log ----------------------------------------------- */

int job_fail(jobs *js, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(js->err, sizeof js->err, fmt, ap);
    va_end(ap);
    return -1;
}

const char *job_error(const jobs *js) { return js->err; }

void job_note(jobs *js, const char *fmt, ...)
{
    if (!js->log)
        return;
    char when[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
    fprintf(js->log, "%s comb jobs: ", when);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(js->log, fmt, ap);
    va_end(ap);
    fputc('\n', js->log);
    fflush(js->log);
}

const char *job_rundir(const jobs *js) { return js->rundir; }
const char *job_comb_path(const jobs *js) { return js->comb; }

/* ---- opening and closing ------------------------------------------------ */

static int mkdirs(char *path)
{
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        int rc = mkdir(path, 0700);
        *p = c;
        if (rc < 0 && errno != EEXIST)
            return -1;
        if (!c)
            return 0;
    }
}

/* The run directory's lock is an open-file-description lock on RUNDIR/pid,
 * which holds the owner's pid as text. Unlike a POSIX record lock it is
 * refused to a second job_open in the same process too (a comb program that
 * opens a run directory twice); unlike flock it is taken or refused at once
 * on every file system. Children do not keep it: the spawner and the jobs
 * are exec'd with it closed, the monitor closes it before it runs. */
static int take_lock(jobs *js)
{
    char path[PATH_MAX], buf[32];
    snprintf(path, sizeof path, "%s/pid", js->rundir);
    js->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (js->lockfd < 0)
        return job_fail(js, "%s: %s", path, strerror(errno));
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(js->lockfd, F_OFD_SETLK, &fl) < 0) {
        ssize_t n = pread(js->lockfd, buf, sizeof buf - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        return job_fail(js, "run directory %s is in use by another dispatcher (pid %ld%s)",
                        js->rundir, atol(buf),
                        atol(buf) == (long)getpid() ? ", this process" : "");
    }
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(js->lockfd, 0) < 0 || pwrite(js->lockfd, buf, (size_t)n, 0) != n)
        return job_fail(js, "%s: %s", path, strerror(errno));
    return 0;
}

static int setup_dir(jobs *js, const char *rundir)
{
    char path[PATH_MAX];
    if (strlen(rundir) >= 2048)
        return job_fail(js, "run directory name too long");
    snprintf(path, sizeof path, "%s", rundir);
    if (mkdirs(path) < 0 || !realpath(rundir, path))
        return job_fail(js, "run directory %s: %s", rundir, strerror(errno));
    if (!(js->rundir = mem_strdup(path)))
        return jm_oom(js);
    snprintf(path, sizeof path, "%s/log", js->rundir);
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return job_fail(js, "%s: %s", path, strerror(errno));
    if (take_lock(js) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/exit", js->rundir);
    if (!(js->xl = xl_open(path, EXITLOG_ROTATE, js->err, sizeof js->err)))
        return -1;
    snprintf(path, sizeof path, "%s/exit/lock", js->rundir);
    if (!(js->runlock = mem_strdup(path)))
        return jm_oom(js);
    js->runlockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (js->runlockfd < 0)
        return job_fail(js, "%s: %s", path, strerror(errno));
    return 0;
}

static char *self_exe(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n < 0)
        return NULL;
    buf[n] = '\0';
    return mem_strdup(buf);
}

jobs *job_open(const char *rundir, const job_options *opt, char *err, size_t errlen)
{
    jobs *js = mem_calloc(1, sizeof *js);
    if (!js) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    js->lockfd = js->runlockfd = -1;
    js->log = opt ? opt->log : NULL;
    const char *gap = getenv("COMB_JOBS_TEST_GAP_MS"); /* for tests of the crash gap */
    js->test_gap_ms = gap ? atol(gap) : 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    js->maxjobs = cpus > 0 ? cpus : 1;
    char note[PATH_MAX + 128], path[PATH_MAX];
    if (setup_dir(js, rundir) < 0)
        goto fail;
    if (!js->log && opt && opt->logfile) {
        snprintf(path, sizeof path, "%s/dispatcher.log", js->rundir);
        if (!(js->log = fopen(path, "ae"))) {
            job_fail(js, "%s: %s", path, strerror(errno));
            goto fail;
        }
        js->ownlog = 1;
    }
    js->comb = opt && opt->comb ? mem_strdup(opt->comb) : self_exe();
    if (!js->comb) {
        job_fail(js, "cannot find the comb binary: %s", strerror(errno));
        goto fail;
    }
    snprintf(path, sizeof path, "%s/journal", js->rundir);
    js->replaying = 1;
    js->jnl = jnl_open(path, jreplay_apply, js, note, sizeof note, js->err, sizeof js->err);
    js->replaying = 0;
    if (!js->jnl)
        goto fail;
    if (note[0])
        job_note(js, "%s", note);
    if (jsched_recover(js) < 0 || jreplay_compact(js) < 0 || job_sync(js) < 0)
        goto fail;
    return js;
fail:
    snprintf(err, errlen, "%s", js->err);
    job_close(js);
    return NULL;
}

void job_close(jobs *js)
{
    if (!js)
        return;
    if (js->jnl)
        job_sync(js);
    jnl_close(js->jnl);
    xl_close(js->xl);
    if (js->lockfd >= 0)
        close(js->lockfd);
    if (js->runlockfd >= 0)
        close(js->runlockfd);
    if (js->ownlog)
        fclose(js->log);
    jm_free_str(js->runlock);
    jsp_close(js->sp);
    jm_free_all(js);
    jw_free(&js->rec);
    jm_free_str(js->comb);
    jm_free_str(js->rundir);
    mem_free(js, sizeof *js);
}
