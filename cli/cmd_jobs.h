/* cmd_jobs: `comb jobs ...`, the dispatcher's command line: the daemon, the
 * embedded run, and the client (Gecko's wreq). See docs/JOBS.md. */
#ifndef COMB_CLI_CMD_JOBS_H
#define COMB_CLI_CMD_JOBS_H

/* argv[0] is "jobs". Returns the process exit status. */
int cmd_jobs(int argc, char **argv);

#endif
