/* exitlog: where the spawner records how runs ended: append-only files
 * of checksummed records, shared by all runs, read by the dispatcher.
 *
 * The spawner appends one record, "NAME RUN STATUS" (STATUS the raw wait
 * status) framed as a journal record (jobs/journal.h), with a single write()
 * to the file opened O_APPEND, so records of concurrent writers never mix; the record of a run that is not rerunnable fdatasyncs it too. A run
 * that is not rerunnable also has "NAME RUN began", written and fdatasynced
 * by the job's own process just before it execs the job, so that a restart
 * can tell a run that was lost after it began from one that never did. This
 * replaces a file created and renamed per run, which cost more than the
 * trivial jobs of a cycle themselves.
 *
 * The records live in generations, RUNDIR/exit/N (N = 1, 2...). New runs
 * write to the current one; a dispatcher starts a new one when it opens and
 * when the current one grows past its rotation size. A generation is removed
 * (by xl_trim, called once the journal has made the ends durable) when no run
 * that may write to it is left: each run holds its generation from start to
 * end, and a run adopted after a restart, whose generation is unknown, holds
 * them all.
 *
 * Reading: xl_read hands over the complete records appended since the last
 * call, from every generation. A line that fails its checksum (a torn write
 * at a machine crash) is skipped and counted: its run then counts as lost
 * (rerun or held, as the journal's durability rules say). */
#ifndef COMB_JOBS_EXITLOG_H
#define COMB_JOBS_EXITLOG_H

#include <stddef.h>

typedef struct exitlog exitlog;

#define XL_UNKNOWN (-1) /* the generation of a run adopted after a restart */
#define XL_BEGAN (-1)   /* the status xl_read passes for a "began" record */

/* status: the raw wait status of the run's end, or XL_BEGAN. */
typedef void (*xl_record_fn)(void *ctx, const char *name, int run, int status);

/* Opens the exit log in dir (created if absent), starting a new current
 * generation after the existing ones; rotate is the size past which xl_trim
 * starts the next. NULL with err on failure. */
exitlog *xl_open(const char *dir, size_t rotate, char *err, size_t errlen);
void xl_close(exitlog *x);

/* The current generation, for new runs to append to: its path and number. */
const char *xl_path(const exitlog *x);
int xl_gen(const exitlog *x);

/* A run writing to generation gen (or XL_UNKNOWN) started, or ended with its
 * end journaled. */
void xl_hold(exitlog *x, int gen);
void xl_release(exitlog *x, int gen);

/* Passes each new complete record to fn; returns how many damaged lines were
 * skipped, or -1 on a read error (xl_error). */
long xl_read(exitlog *x, xl_record_fn fn, void *ctx);

/* Removes the generations no run holds, except the current one; starts a new
 * current one if it has grown past the rotation size. 0, or -1 (xl_error). */
int xl_trim(exitlog *x);

const char *xl_error(const exitlog *x);

#endif
