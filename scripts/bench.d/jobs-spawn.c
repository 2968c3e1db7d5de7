/* jobs-spawn: what a job's process creations cost, for scripts/bench.d/jobs.
 * Starts N jobs of `/bin/sh -c true` one after another in two shapes and
 * prints the CPU (user + sys, children included), minor page faults and
 * context switches per job of each, interleaved in blocks of 100:
 *   spawn    posix_spawn of the job, then waitpid: one process creation,
 *            as make and comb's spawner do;
 *   wrapper  fork of a wrapper that vforks the job and waits for it, as
 *            comb's spawner did, so that the wrapper survived the spawner
 *            and recorded the exit: the price of keeping that.
 * Usage: jobs-spawn [N]   (default 2000) */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char *const job[] = {"/bin/sh", "-c", "true", NULL};

static void spawn_one(void)
{
    pid_t p;
    int st;
    if (posix_spawn(&p, job[0], NULL, NULL, job, environ) == 0)
        waitpid(p, &st, 0);
}

static void wrapper_one(void)
{
    int st;
    pid_t p = fork();
    if (p == 0) {
        pid_t c = vfork();
        if (c == 0) {
            execve(job[0], job, environ);
            _exit(127);
        }
        waitpid(c, &st, 0);
        _exit(0);
    }
    waitpid(p, &st, 0);
}

struct cost {
    double cpu;
    long faults, switches;
};

static struct cost now(void)
{
    struct rusage s, c;
    getrusage(RUSAGE_SELF, &s);
    getrusage(RUSAGE_CHILDREN, &c);
    return (struct cost){(double)(s.ru_utime.tv_sec + s.ru_stime.tv_sec + c.ru_utime.tv_sec +
                                  c.ru_stime.tv_sec) +
                             (double)(s.ru_utime.tv_usec + s.ru_stime.tv_usec + c.ru_utime.tv_usec +
                                      c.ru_stime.tv_usec) / 1e6,
                         s.ru_minflt + c.ru_minflt,
                         s.ru_nvcsw + s.ru_nivcsw + c.ru_nvcsw + c.ru_nivcsw};
}

static void add(struct cost *sum, struct cost a, struct cost b)
{
    sum->cpu += b.cpu - a.cpu;
    sum->faults += b.faults - a.faults;
    sum->switches += b.switches - a.switches;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    struct cost sum[2] = {{0, 0, 0}, {0, 0, 0}};
    for (int done = 0; done < n; done += 100)
        for (int shape = 0; shape < 2; shape++) {
            struct cost a = now();
            for (int i = 0; i < 100; i++)
                (shape ? wrapper_one : spawn_one)();
            add(&sum[shape], a, now());
        }
    int runs = (n + 99) / 100 * 100;
    const char *name[] = {"spawn", "wrapper"};
    for (int s = 0; s < 2; s++)
        printf("%s %.3f %.1f %.1f\n", name[s], sum[s].cpu / runs * 1000,
               (double)sum[s].faults / runs, (double)sum[s].switches / runs);
    return 0;
}
