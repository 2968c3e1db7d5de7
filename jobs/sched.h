/* sched: the start/reap cycle (job_step and its timing in jobs.h). Internal
 * to jobs/. */
#ifndef COMB_JOBS_SCHED_H
#define COMB_JOBS_SCHED_H

#include "jobs/jobs.h"

/* After a replay: each run the journal says is going goes on (its lock
 * held: adopted), finished (its exit record is there) or was lost. */
int jsched_recover(jobs *js);

#endif
