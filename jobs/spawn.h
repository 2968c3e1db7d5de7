/* spawn: the spawner, a small process that starts the jobs' processes for
 * the dispatcher and records how they end.
 *
 * Why a process apart: fork() costs in proportion to the memory of the
 * process that forks, and a dispatcher holding 10,000 jobs, or a comb
 * program with a large heap that dispatches embedded, would pay it per job;
 * and a run's exit status goes only to its parent, which must outlive the
 * dispatcher. The spawner is the comb binary run afresh (`comb jobs
 * __spawner`, posix_spawn: no copy of the dispatcher); it vforks each job
 * (jobs/exec.h), one process creation per run.
 *
 * The two talk over a stream socket in lines of escaped fields (jobwire):
 *   dispatcher -> spawner   start ID SLOT DURABLE LOCKPATH EXITPATH DIR LOGPATH
 *                                 HEADER FOOTER RECORD NENV ENV... ARGV...
 *   spawner -> dispatcher   started ID PID | failed ID MESSAGE | ended PID STATUS
 * (the spawner is started as `comb jobs __spawner SOCKFD LOCKFD`).
 * A start request becomes a run with the spawner's own environment plus the
 * NENV variables given. The spawner copies each run's output to its log,
 * reaps it, appends its exit record (synced if durable) and lets go of its
 * lock, then reports the end with the wait status. It runs in its own
 * process group (a ^C at the terminal is for the dispatcher, not for it).
 * When the dispatcher's end of the socket closes (it exited or died), the
 * spawner lets go of its own lock (it will start nothing more) and goes on
 * until the runs it started have ended and been recorded, then exits.
 *
 * A run's exit status goes only to its parent, so the spawner is two
 * processes, that a kill of one loses nothing: the keeper (the process
 * started, a child subreaper) clones the twin, which does the work, with
 * the descriptor table shared and the runs' state in shared memory. If the
 * twin dies, the runs become the keeper's children and the keeper takes
 * them over; if the keeper dies, the twin is told (a parent-death signal).
 * Either way the survivor closes the socket, so that the dispatcher adopts
 * the runs and starts a new spawner, and records their ends. */
#ifndef COMB_JOBS_SPAWN_H
#define COMB_JOBS_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

#include "jobs/exec.h"

typedef struct jobspawn jobspawn;

/* A spawner holds a read lock on this byte of the run-lock file for its
 * whole life (taken by the dispatcher before it starts the spawner, on a
 * description only the spawner keeps), so that a restarted dispatcher can
 * wait until no spawner that may still start a run is left. */
#define JSP_LOCK_BYTE ((off_t)1 << 40)

/* Starts `exe jobs __spawner` for the run-lock file lockpath. NULL with err
 * on failure. */
jobspawn *jsp_open(const char *exe, const char *lockpath, char *err, size_t errlen);
/* Closes the socket; the spawner exits once its runs have ended (waited
 * for here only if none is left). */
void jsp_close(jobspawn *p);
/* The socket, to poll for input. */
int jsp_fd(const jobspawn *p);

/* Asks for run r (its envp: only the variables to add) under the caller's
 * id. 0, or -1 with err when the spawner is gone. */
int jsp_start(jobspawn *p, long id, const jobexec_run *r, char *err, size_t errlen);

enum jsp_event { JSP_STARTED, JSP_FAILED, JSP_ENDED };
/* STARTED: a = id, b = pid; FAILED: a = id, text the reason; ENDED: a =
 * pid, b = wait status. */
typedef void (*jsp_event_fn)(void *ctx, enum jsp_event e, long a, long b, const char *text);
/* Hands over the events that have arrived, without waiting. 0, or -1 when
 * the spawner is gone (EOF or an error; err says which). */
int jsp_read(jobspawn *p, jsp_event_fn fn, void *ctx, char *err, size_t errlen);

/* The spawner's side: serves the socket at fd until it closes, keeping
 * lockfd (its lock on JSP_LOCK_BYTE) open. Returns the exit status. */
int jsp_serve(int fd, int lockfd);

#endif
