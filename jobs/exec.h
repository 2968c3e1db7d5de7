/* exec: how a job's process is started and how its end is recorded, and
 * plain children (the monitor).
 *
 * One process creation per run, as make does: the spawner (jobs/spawn.h)
 * vforks the job's own process, which execs the command; no wrapper.
 * Before it vforks, the spawner opens the run-lock file anew and takes an
 * open-file-description lock on the job's byte of it (the job's submission
 * index); the spawner and the job (on fd 3) both hold that description, so
 * the lock lives while either does. The job's process leads a new process
 * group, has stdin /dev/null and stdout and stderr on a pipe that the
 * spawner copies to the job's log, creating the log only when the first
 * output arrives (or at the end of a failed run, to record the failure
 * there): creating and removing a file per run cost more than a trivial
 * job (ext4's inode allocation). The run ends when its process has exited
 * and the pipe is at its end of file, so a background process that keeps
 * the output open keeps the run going.
 *
 * For a durable run (not rerunnable) the job's own process, between vfork
 * and exec, appends "NAME RUN began" to the exit log and fdatasyncs it (or
 * does not run the job). The spawner is suspended meanwhile (vfork), and a
 * kill of the spawner at any moment leaves either no child (no record, no
 * lock: never began) or a child that writes the record before it execs. So
 * a restart that finds neither the lock nor any record knows the job never
 * ran. The spawner, reaping the run, writes the log's footer (if there is a
 * log) and appends "NAME RUN STATUS" to the exit log (jobs/exitlog.h) in one
 * write(), fdatasynced if the run is durable, before it lets go of the lock.
 * So a restarted dispatcher reads a run's end from the exit log, or finds
 * the lock still held (the run goes on), or finds neither (the run was
 * lost: with the machine, or with both processes of the spawner, whose
 * shared memory and descriptors hold what a run's end needs). If the output cannot be written to the log, a run that would
 * have succeeded ends with exit 126.
 *
 * A command of plain words (no character the shell would treat specially,
 * no assignment, not a shell builtin or keyword) is exec'd directly, looked
 * up in PATH, as make does: no shell between. */
#ifndef COMB_JOBS_EXEC_H
#define COMB_JOBS_EXEC_H

#include <stddef.h>
#include <sys/types.h>

typedef struct jobexec_run {
    const char *const *argv; /* argv[0]: a path, or a name looked up in PATH */
    char *const *envp;
    const char *dir;         /* working directory, or NULL */
    const char *logpath;     /* appended; created on the first output */
    const char *header;      /* written to the log before the run's output */
    const char *footer;      /* written after it, followed by "exit N" or "signal N" */
    const char *record;      /* "NAME RUN": the exit record's start */
    const char *lockpath;    /* the run-lock file */
    off_t slot;              /* the byte of it held for the run's life */
    const char *exitpath;    /* the exit log's current generation, appended */
    int durable;             /* fdatasync the exit record */
} jobexec_run;

/* What a run keeps from its start to its end, in place (jobexec_proc lives
 * in memory shared with the spawner's keeper: jobs/spawn.h): logpath,
 * header, footer, record. */
#define JOBEXEC_KEEP 5120

enum { JOBEXEC_FREE, JOBEXEC_STARTING, JOBEXEC_RUNNING };

/* A run the spawner started, until it is reaped and recorded. */
typedef struct jobexec_proc {
    int used;           /* JOBEXEC_*: STARTING from before the vfork until it returns */
    pid_t pid;          /* also the process group; written by the child itself too */
    int status;         /* the wait status, once reaped */
    int lockfd;         /* the description holding the run's lock (the job has it too) */
    int outfd;          /* the read end of the job's output, -1 at its end of file */
    int outw;           /* its write end while the vfork lasts, else -1 */
    int logfd;          /* the log, once output came */
    int xfd;            /* the exit log generation the run's records go to */
    int durable, exited;
    int bad;            /* the log could not be written */
    char keep[JOBEXEC_KEEP]; /* logpath, header, footer, record, each NUL-ended */
} jobexec_proc;

/* Starts run r (its envp complete) with its records going to xfd (the exit
 * log at r->exitpath, kept open by the caller). 0 with *p filled (RUNNING),
 * or -1 with err (*p FREE). */
int jobexec_start(const jobexec_run *r, int xfd, jobexec_proc *p, char *err, size_t errlen);
/* Copies the output that has come to the log, without waiting; 1 once every
 * writer has closed it (p->outfd is then -1), else 0. */
int jobexec_output(jobexec_proc *p);
/* Once the run's process has exited and its output ended: finishes its log
 * (a failure to write it turns a success into 126, in *status) and formats
 * its exit record into rec. Returns the record's length (0 if too long). */
size_t jobexec_end(jobexec_proc *p, int *status, char *rec, size_t cap);
/* Lets go of the run's lock, exit log and descriptors, once its record is
 * written. */
void jobexec_release(jobexec_proc *p);

/* The argv of a command text run directly, without a shell, in words (one
 * buffer of cap bytes, the text split in place) and argv (max entries, NULL
 * ended); 0 if it needs a shell. */
int jobexec_words(const char *text, char *words, size_t cap, const char **argv, size_t max);

/* Starts argv in its own process group, stdin /dev/null, stdout and stderr
 * appended to logpath. 0, or -1 with err. */
int jobexec_spawn(const char *const *argv, char *const *envp, const char *logpath, pid_t *pid,
                  int *pidfd, char *err, size_t errlen);

/* 1 if child pid has exited (*status set), 0 if not yet, -1 on error. */
int jobexec_reap(pid_t pid, int *status);
/* 0 when no run holds byte slot of the run-lock file open at fd, else 1
 * (also when it cannot tell: a run is never taken for lost on a doubt). */
int jobexec_alive(int fd, off_t slot);
/* "exit N" or "signal N". */
void jobexec_describe(int status, char *buf, size_t n);

#endif
