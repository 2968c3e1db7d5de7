/* server: the dispatcher's event loop (embedded or as a daemon), its
 * control socket and protocol, the monitor it runs; and the protocol's
 * client side (Gecko's wreq).
 *
 * The socket is RUNDIR/sock, mode 0600; the server also checks each peer's
 * uid (SO_PEERCRED) is its own. A request is one line:
 *     comb-jobs 1 VERB FIELD...
 * with fields escaped as in jobs/wire.h. The reply is "ok LEN\n" and LEN
 * bytes of text, or "err MESSAGE\n". A request with another protocol version,
 * an unknown verb or bad fields gets an err reply; the daemon goes on. The
 * journal is synced before any reply is sent. Verbs:
 *     submit SPEC...            8 fields per job (see job_spec_encode)
 *     status BRIEF NAME...      BRIEF 1: no job lines
 *     dump
 *     info NAME...              the status in fields (job_info_text)
 *     delete|force|retry|hold|release NAME...
 *     limit NAME VALUE...       NAME a resource, jobs or load; VALUE n or none
 *     wait NAME...              replies once they are settled (all if none)
 *
 * The monitor (Gecko's bludge) is run every `every` seconds while the loop
 * runs, one at a time: a comb script (a path ending in .comb, run as
 * `comb FILE RUNDIR`) or a shell command (run by /bin/sh with RUNDIR appended
 * as its last argument). It is
 * meant to work out the state afresh each time through the client
 * (`comb jobs status`) and set limits through it; its output goes to
 * RUNDIR/log/monitor.log. */
#ifndef COMB_JOBS_SERVER_H
#define COMB_JOBS_SERVER_H

#include <stddef.h>

#include "jobs/jobs.h"

#define JOBSRV_MAGIC "comb-jobs"
#define JOBSRV_VERSION 1

/* How the loop runs: the monitor, and (embedded) when to give up early. */
typedef struct jobsrv_monitor {
    const char *command; /* NULL: no monitor */
    double every;        /* seconds */
    int (*stop)(void *ctx); /* embedded: nonzero stops the loop (a ^C); may be NULL */
    void *stop_ctx;
} jobsrv_monitor;

/* Embedded dispatch: runs the jobs of js, serving the control socket
 * meanwhile, until every job is settled (done, failed, blocked, held) or,
 * with no monitor to raise a limit, nothing can start. Returns 0 if every
 * job is done (or deleted), 1 if not, 2 if stop said so (running jobs go on
 * under their spawner), -1 on error (job_error). */
int job_run(jobs *js, const jobsrv_monitor *mon);

/* The daemon's loop: serves until SIGTERM, SIGINT or SIGHUP, then returns 0
 * (jobs go on under their spawner). Once the socket listens it writes "ok\n"
 * to ready_fd (if >= 0) and closes it. -1 on error (job_error). */
int jobsrv_serve(jobs *js, const jobsrv_monitor *mon, int ready_fd);

/* Client: sends the request req (VERB and its fields, escaped: build it with
 * jw_field and job_spec_encode) to the dispatcher of rundir and reads the
 * reply's text into *reply. timeout_ms < 0 waits for ever. Returns 0 for an
 * ok reply, 1 for an err reply (its message in err), 2 on timeout, 3 when no
 * dispatcher listens there, -1 if the exchange failed otherwise (reason in
 * err). */
int jobsrv_request(const char *rundir, const jw_buf *req, int timeout_ms, jw_buf *reply,
                   char *err, size_t errlen);

/* The request's verb applied to fields f[1..n) of dispatcher js, as a
 * dispatcher does (every verb but wait, which only a running dispatcher can
 * answer). 0 with the reply's text in body, or -1 with err (empty: out of
 * memory). */
int jobsrv_do(jobs *js, char **f, int n, jw_buf *body, char *err, size_t errlen);

/* The same without a dispatcher: the run directory (a finished run, or a
 * crashed one) is opened, recovered, changed and closed by the caller, as a
 * dispatcher would, and nothing is run. Returns as jobsrv_request; 3 (err
 * untouched) when rundir holds no journal; 1 with err when it cannot be
 * opened (a dispatcher holds it) or the request is refused. */
int jobsrv_offline(const char *rundir, const jw_buf *req, jw_buf *reply, char *err,
                   size_t errlen);

#endif
