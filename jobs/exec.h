/* exec: the processes of the dispatcher: a job's wrapper, which records the
 * job's exit, and plain children (the monitor).
 *
 * Wrappers are forked by the spawner (jobs/spawn.h). Before it forks one, it
 * opens the run-lock file anew and takes an open-file-description lock on
 * the job's byte of it (the job's submission index); the wrapper inherits
 * that description and holds the lock for its whole life. The wrapper is the leader of a new process
 * group; it runs the job (vfork + exec) with stdout and stderr on a pipe that
 * it copies to the job's log, creating the log only when the first output
 * arrives (or at the end of a failed run, to record the failure there), since
 * creating a file per run cost more than a trivial job. It reads until the
 * pipe's end of file, so a background process that keeps the job's output
 * open keeps the run going. For a durable run (not rerunnable) the job's own
 * process, between vfork and exec, first appends "NAME RUN began" to the exit
 * log and fdatasyncs it (or does not run the job): a restart that finds
 * neither the lock nor any record then knows the job never ran. Then it appends "NAME RUN STATUS" to the exit log
 * (jobs/exitlog.h) in one write() and fdatasyncs it if the run is durable. So
 * a restarted dispatcher reads a run's end from the exit log, or finds the
 * lock still held (the run goes on), or finds neither (the run was lost with
 * the machine). If the output cannot be written to the log, a run that would
 * have succeeded ends with exit 126. The wrapper blocks TERM, INT, HUP and
 * QUIT so that killing the group ends the job but still lets the wrapper
 * record how.
 *
 * The wrapper runs only async-signal-safe calls between fork and exit, since
 * the embedding comb process may have other threads. */
#ifndef COMB_JOBS_EXEC_H
#define COMB_JOBS_EXEC_H

#include <stddef.h>
#include <sys/types.h>

typedef struct jobexec_run {
    const char *const *argv; /* argv[0] is an absolute path */
    char *const *envp;
    const char *dir;         /* working directory, or NULL */
    const char *logpath;     /* appended; created on the first output */
    const char *header;      /* written to the log before the run's output */
    const char *footer;      /* written after it, followed by "exit N" or "signal N" */
    const char *record;      /* "NAME RUN": the exit record's start */
    const char *lockpath;    /* the run-lock file */
    off_t slot;              /* the byte of it held for the wrapper's life */
    const char *exitpath;    /* the exit log's current generation, appended */
    int durable;             /* fdatasync the exit record */
} jobexec_run;

/* Starts a wrapped run. Sets *pid (also the process group). 0, or -1 with err. */
int jobexec_start(const jobexec_run *r, pid_t *pid, char *err, size_t errlen);

/* Starts argv in its own process group, stdin /dev/null, stdout and stderr
 * appended to logpath. 0, or -1 with err. */
int jobexec_spawn(const char *const *argv, char *const *envp, const char *logpath, pid_t *pid,
                  int *pidfd, char *err, size_t errlen);

/* 1 if child pid has exited (*status set), 0 if not yet, -1 on error. */
int jobexec_reap(pid_t pid, int *status);
/* 0 when no wrapper holds byte slot of the run-lock file open at fd, else 1
 * (also when it cannot tell: a run is never taken for lost on a doubt). */
int jobexec_alive(int fd, off_t slot);
/* "exit N" or "signal N". */
void jobexec_describe(int status, char *buf, size_t n);

#endif
