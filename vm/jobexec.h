/* jobexec: the processes of the dispatcher: a job's wrapper, which records the
 * job's exit atomically, and plain children (the monitor).
 *
 * The dispatcher creates RUNDIR/exit/NAME.RUN.tmp and takes an exclusive
 * flock on it before it forks the wrapper, which inherits that lock and holds
 * it for its whole life. The wrapper is the leader of a new process group; it
 * opens the job's log (if it cannot, the run ends with exit 126), runs the
 * job (vfork + exec) with stdout and stderr appended to the log, waits for
 * it, writes the raw wait status into the .tmp file, fsyncs it (if durable)
 * and renames it to RUNDIR/exit/NAME.RUN. So a restarted dispatcher reads a
 * run's end from that file, or finds the .tmp still locked (the run goes on),
 * or finds neither (the run was lost with the machine). The wrapper blocks
 * TERM, INT, HUP and QUIT so that killing the group ends the job but still
 * lets the wrapper record how.
 *
 * The wrapper runs only async-signal-safe calls between fork and exit, since
 * the embedding comb process may have other threads. */
#ifndef COMB_JOBEXEC_H
#define COMB_JOBEXEC_H

#include <stddef.h>
#include <sys/types.h>

typedef struct jobexec_run {
    const char *const *argv; /* argv[0] is an absolute path */
    char *const *envp;
    const char *dir;         /* working directory, or NULL */
    const char *logpath;     /* appended */
    const char *tmppath, *exitpath;
    const char *header;      /* written to the log before the run */
    const char *footer;      /* written after it, followed by "exit N" or "signal N" */
    int durable;             /* fsync the exit status before renaming it into place */
} jobexec_run;

/* Starts a wrapped run. Sets *pid (also the process group) and *pidfd, a
 * descriptor readable when the wrapper exits. 0, or -1 with err. */
int jobexec_start(const jobexec_run *r, pid_t *pid, int *pidfd, char *err, size_t errlen);

/* Starts argv in its own process group, stdin /dev/null, stdout and stderr
 * appended to logpath. 0, or -1 with err. */
int jobexec_spawn(const char *const *argv, char *const *envp, const char *logpath, pid_t *pid,
                  int *pidfd, char *err, size_t errlen);

/* 1 if child pid has exited (*status set), 0 if not yet, -1 on error. */
int jobexec_reap(pid_t pid, int *status);
/* 1 if the exit file exists (*status set from it), 0 if not, -1 if unreadable. */
int jobexec_read_exit(const char *exitpath, int *status);
/* 1 while a wrapper holds tmppath's lock, 0 when none does. */
int jobexec_alive(const char *tmppath);
/* "exit N" or "signal N". */
void jobexec_describe(int status, char *buf, size_t n);

#endif
