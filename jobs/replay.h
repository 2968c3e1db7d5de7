/* replay: the journal's records applied to a dispatcher on open, and its
 * state written back as a snapshot (compaction). Internal to jobs/. */
#ifndef COMB_JOBS_REPLAY_H
#define COMB_JOBS_REPLAY_H

#include <stddef.h>

#include "jobs/jobs.h"

/* The journal's replay callback (jnl_open): ctx is the dispatcher. */
int jreplay_apply(void *ctx, char *line, char *err, size_t errlen);
/* Rewrites the journal as the current state: a submit record per job, a
 * state record where it moved on, the limits. */
int jreplay_compact(jobs *js);

#endif
