/* test_jobs: the dispatcher's model and scheduler, run embedded: ordering,
 * blocking and retry, holds, limits, delete, restart recovery, allocation
 * failure. Jobs are real shell commands that write to files. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/mem.h"
#include "jobs/exec.h"
#include "jobs/jobs.h"
#include "jobs/server.h"
#include "jobs/journal.h"
#include "jobs/spawn.h"

static char dir[64], rundir[96], out[96];
static FILE *evlog;

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_jobs.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(rundir, sizeof rundir, "%s/run", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    evlog = tmpfile();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    fclose(evlog);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

static jobs *open_js(void)
{
    char err[512];
    job_options opt = {evlog, COMB_BUILD_DIR "/comb", 0}; /* comb jobs, and the spawner */
    jobs *js = job_open(rundir, &opt, err, sizeof err);
    if (!js)
        fail_msg("job_open: %s", err);
    return js;
}

/* Splits a comma list into v (pointing into buf). */
static size_t split(char *buf, const char **v)
{
    size_t n = 0;
    for (char *p = buf; p && *p;) {
        v[n++] = p;
        p = strchr(p, ',');
        if (p)
            *p++ = '\0';
    }
    return n;
}

static int add_full(jobs *js, const char *name, int prio, const char *after, const char *uses,
                    const char *text, int rerun, enum job_kind kind)
{
    char ab[256], ub[256];
    const char *av[16], *uv[16];
    snprintf(ab, sizeof ab, "%s", after);
    snprintf(ub, sizeof ub, "%s", uses);
    job_spec s = {name, prio, av, split(ab, av), uv, split(ub, uv), kind, text, dir, rerun, 0};
    return job_submit(js, &s);
}

static int add(jobs *js, const char *name, int prio, const char *after, const char *uses,
               const char *text)
{
    return add_full(js, name, prio, after, uses, text, 0, JOB_SHELL);
}

static job_info info(jobs *js, const char *name)
{
    job_info in;
    long i = job_find(js, name);
    assert_true(i >= 0);
    job_get(js, (size_t)i, &in);
    return in;
}

static enum job_state st_of(jobs *js, const char *name) { return info(js, name).state; }

static char *slurp(const char *path)
{
    static char buf[65536];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    return buf;
}

/* Steps js until cond(js) holds or seconds pass; returns whether it held. */
static int drive(jobs *js, int (*cond)(jobs *), double seconds)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        assert_int_equal(job_step(js), 0);
        if (cond(js))
            return 1;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > seconds)
            return 0;
        struct pollfd fds[64];
        size_t n = job_pollfds(js, fds, 64);
        int ms = job_timeout_ms(js);
        poll(fds, n, ms < 0 || ms > 20 ? 20 : ms);
    }
}

static int one_running(jobs *js) { return job_running(js) == 1; }
static int none_running(jobs *js) { return job_running(js) == 0; }

static char cmd[512];
static const char *append_cmd(const char *word)
{
    snprintf(cmd, sizeof cmd, "echo %s >> %s", word, out);
    return cmd;
}

/* ---- tests ---------------------------------------------------------------- */

static void rejects_bad_specs(void **state)
{
    (void)state;
    jobs *js = open_js();
    assert_int_equal(add(js, "ok", 0, "", "", "true"), 0);
    struct {
        const char *name, *after, *uses, *text, *want;
    } bad[] = {
        {"ok", "", "", "true", "already exists"},
        {"VOL_1", "", "", "true", "bad job name"},
        {"-x", "", "", "true", "bad job name"},
        {"a b", "", "", "true", "bad job name"},
        {"x", "nosuch", "", "true", "no such job"},
        {"x", "", "vol", "true", "bad resource name"},
        {"x", "", "", "", "nothing to run"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(add(js, bad[i].name, 0, bad[i].after, bad[i].uses, bad[i].text), -1);
        if (!strstr(job_error(js), bad[i].want))
            fail_msg("%s: got '%s', want '%s'", bad[i].name, job_error(js), bad[i].want);
    }
    job_spec rel = {"rel", 0, NULL, 0, NULL, 0, JOB_SHELL, "true", "relative", 0, 0};
    assert_int_equal(job_submit(js, &rel), -1);
    assert_non_null(strstr(job_error(js), "not absolute"));
    assert_int_equal(job_count(js), 1);
    assert_int_equal(job_limit(js, "lower", 1), -1);
    assert_int_equal(job_set_limit_text(js, "VOL_1", "-3"), -1);
    assert_int_equal(job_set_limit_text(js, "VOL_1", "x"), -1);
    job_close(js);
}

static void batch_is_all_or_nothing(void **state)
{
    (void)state;
    jobs *js = open_js();
    const char *after_a[] = {"a"};
    job_spec specs[3] = {
        {"a", 0, NULL, 0, NULL, 0, JOB_SHELL, "true", NULL, 0, 0},
        {"b", 0, after_a, 1, NULL, 0, JOB_SHELL, "true", NULL, 0, 0}, /* names a in the batch */
        {"a", 0, NULL, 0, NULL, 0, JOB_SHELL, "true", NULL, 0, 0},    /* a duplicate */
    };
    assert_int_equal(job_submit_many(js, specs, 3), -1);
    assert_non_null(strstr(job_error(js), "already exists"));
    assert_int_equal(job_count(js), 0);
    assert_int_equal(job_submit_many(js, specs, 2), 0);
    assert_int_equal(job_count(js), 2);
    job_close(js);
}

static void orders_by_prerequisites_then_priority(void **state)
{
    (void)state;
    jobs *js = open_js();
    assert_int_equal(job_limit_jobs(js, 1), 0);
    assert_int_equal(add(js, "a", 0, "", "", append_cmd("a")), 0);
    assert_int_equal(add(js, "b", 5, "", "", append_cmd("b")), 0);
    assert_int_equal(add(js, "c", 5, "", "", append_cmd("c")), 0);
    assert_int_equal(add(js, "d", 9, "a", "", append_cmd("d")), 0); /* first, once a is done */
    assert_int_equal(add(js, "e", -1, "", "", append_cmd("e")), 0);
    assert_int_equal(job_run(js, NULL), 0);
    assert_string_equal(slurp(out), "b\nc\na\nd\ne\n");
    job_close(js);
}

static void failure_blocks_dependents_until_retry(void **state)
{
    (void)state;
    jobs *js = open_js();
    char flag[128], text[256];
    snprintf(flag, sizeof flag, "%s/fixed", dir);
    snprintf(text, sizeof text, "test -f %s", flag);
    assert_int_equal(add(js, "x", 0, "", "", text), 0);
    assert_int_equal(add(js, "y", 0, "x", "", append_cmd("y")), 0);
    assert_int_equal(add(js, "z", 0, "y", "", append_cmd("z")), 0);
    assert_int_equal(job_run(js, NULL), 1);
    assert_int_equal(st_of(js, "x"), JOB_FAILED);
    job_info y = info(js, "y"), z = info(js, "z");
    assert_int_equal(y.state, JOB_BLOCKED);
    assert_string_equal(y.cause, "x");
    assert_int_equal(z.state, JOB_BLOCKED);
    assert_string_equal(z.cause, "x"); /* the root, not the blocked job between */
    jw_buf b = {0};
    assert_int_equal(job_status_text(js, NULL, 0, 0, &b), 0);
    assert_non_null(strstr(b.p, "job y blocked: x failed\n"));
    assert_non_null(strstr(b.p, "job x failed (run 1, exit 1)\n"));
    jw_free(&b);
    assert_int_equal(job_retry(js, "y"), -1); /* not finished */
    fclose(fopen(flag, "w"));
    assert_int_equal(job_retry(js, "x"), 0);
    assert_int_equal(job_run(js, NULL), 0);
    assert_int_equal(info(js, "x").runs, 2);
    assert_string_equal(slurp(out), "y\nz\n");
    job_close(js);
}

static void resource_prerequisite_waits_for_earlier_users(void **state)
{
    (void)state;
    jobs *js = open_js();
    char slow[256];
    snprintf(slow, sizeof slow, "sleep 0.2; echo r1 >> %s", out);
    assert_int_equal(add(js, "r1", 0, "", "VOL_A", slow), 0);
    assert_int_equal(add(js, "r2", 0, "", "VOL_A", "exit 4"), 0);
    assert_int_equal(add(js, "w", 0, "VOL_A", "", append_cmd("w")), 0); /* after both */
    assert_int_equal(add(js, "r3", 0, "", "VOL_A", append_cmd("r3")), 0); /* later: not waited */
    assert_int_equal(job_run(js, NULL), 1);
    assert_int_equal(st_of(js, "r2"), JOB_FAILED);
    assert_int_equal(st_of(js, "w"), JOB_DONE); /* a failed user still finished */
    char *o = slurp(out);
    assert_true(strstr(o, "r1\n") < strstr(o, "w\n"));
    job_close(js);
}

static void hold_release_and_force(void **state)
{
    (void)state;
    jobs *js = open_js();
    assert_int_equal(add(js, "h", 0, "", "", append_cmd("h")), 0);
    assert_int_equal(add(js, "after_h", 0, "h", "", append_cmd("after_h")), 0);
    assert_int_equal(add(js, "bad", 0, "", "", "false"), 0);
    assert_int_equal(add(js, "f", 0, "bad", "", append_cmd("f")), 0);
    assert_int_equal(job_hold(js, "h"), 0);
    assert_int_equal(job_hold(js, "h"), -1);
    assert_int_equal(job_run(js, NULL), 1); /* returns: nothing can move on its own */
    assert_int_equal(st_of(js, "h"), JOB_HELD);
    job_info ah = info(js, "after_h");
    assert_int_equal(ah.state, JOB_WAITING);
    assert_string_equal(ah.cause, "h");
    assert_int_equal(st_of(js, "f"), JOB_BLOCKED);
    assert_int_equal(job_release(js, "h"), 0);
    assert_int_equal(job_release(js, "h"), -1);
    assert_int_equal(job_force(js, "f"), 0);
    assert_int_equal(job_run(js, NULL), 1); /* bad stays failed */
    assert_int_equal(st_of(js, "f"), JOB_DONE);
    assert_int_equal(st_of(js, "after_h"), JOB_DONE);
    assert_int_equal(job_force(js, "f"), -1); /* finished: retry, not force */
    job_close(js);
}

static void limit_zero_pauses_until_raised(void **state)
{
    (void)state;
    jobs *js = open_js();
    assert_int_equal(job_limit(js, "PRS_LIMIT", 0), 0);
    assert_int_equal(add(js, "p1", 0, "", "PRS_LIMIT", append_cmd("p1")), 0);
    assert_int_equal(add(js, "p2", 0, "", "PRS_LIMIT", append_cmd("p2")), 0);
    assert_int_equal(add(js, "other", 0, "", "", append_cmd("other")), 0);
    assert_true(drive(js, none_running, 2));
    assert_int_equal(job_step(js), 0);
    assert_int_equal(st_of(js, "p1"), JOB_RUNNABLE);
    assert_int_equal(st_of(js, "other"), JOB_DONE);
    assert_true(job_stalled(js));
    assert_false(job_settled(js, NULL, 0));
    assert_int_equal(job_limit(js, "PRS_LIMIT", 1), 0);
    assert_int_equal(job_run(js, NULL), 0);
    assert_string_equal(slurp(out), "other\np1\np2\n");
    job_close(js);
}

/* Gone, or a zombie nobody reaped yet (the sleep's new parent may not). */
static int dead(long pid)
{
    char path[64], st = 'Z';
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f && fscanf(f, "%*d %*s %c", &st) != 1)
        st = '?';
    if (f)
        fclose(f);
    return st == 'Z' || st == 'X';
}

static int pids_dead(const char *text)
{
    long a, b;
    return sscanf(text, "%ld %ld", &a, &b) == 2 && dead(a) && dead(b);
}

static void delete_kills_the_process_group(void **state)
{
    (void)state;
    jobs *js = open_js();
    char text[512], pids[128];
    snprintf(pids, sizeof pids, "%s/pids", dir);
    snprintf(text, sizeof text, "sleep 30 & echo $$ $! > %s.tmp; mv %s.tmp %s; wait", pids, pids,
             pids);
    assert_int_equal(add(js, "long", 0, "", "", text), 0);
    assert_int_equal(add(js, "next", 0, "long", "", "true"), 0);
    assert_true(drive(js, one_running, 5));
    for (int i = 0; i < 200 && access(pids, F_OK) < 0; i++)
        usleep(10000);
    char got[64];
    snprintf(got, sizeof got, "%s", slurp(pids));
    assert_false(pids_dead(got));
    assert_int_equal(job_delete(js, "long"), 0);
    assert_true(drive(js, none_running, 5));
    assert_int_equal(st_of(js, "long"), JOB_DELETED);
    job_info n = info(js, "next");
    assert_int_equal(n.state, JOB_BLOCKED);
    assert_true(n.cause_deleted);
    for (int i = 0; i < 100 && !pids_dead(got); i++)
        usleep(10000);
    assert_true(pids_dead(got)); /* the shell and its background sleep */
    assert_int_equal(job_delete(js, "long"), -1);
    job_close(js);
}

static int slow_has_a_wrapper(jobs *js) { return info(js, "slow").pid > 0; }

/* Adds "slow", which writes its line to out after a while, and "then" after
 * it; returns once slow runs (the spawner said its wrapper started). */
static void start_slow(jobs *js, const char *line)
{
    char text[256];
    snprintf(text, sizeof text, "sleep 0.4; echo %s >> %s; echo said %s", line, out, line);
    assert_int_equal(add(js, "slow", 0, "", "", text), 0);
    assert_int_equal(add(js, "then", 0, "slow", "", append_cmd("then")), 0);
    assert_true(drive(js, slow_has_a_wrapper, 5));
}

static void restart_adopts_a_running_job(void **state)
{
    (void)state;
    jobs *js = open_js();
    start_slow(js, "once");
    job_close(js); /* the dispatcher goes away; the wrapper does not */
    js = open_js();
    job_info in = info(js, "slow");
    assert_int_equal(in.state, JOB_RUNNING);
    assert_int_equal(job_run(js, NULL), 0);
    assert_int_equal(info(js, "slow").runs, 1);
    assert_string_equal(slurp(out), "once\nthen\n");
    job_close(js);
    /* the old exit log went once the adopted run's end was journaled */
    char ls[256];
    snprintf(ls, sizeof ls, "ls %s/exit > %s/ls", rundir, dir);
    assert_int_equal(system(ls), 0);
    snprintf(ls, sizeof ls, "%s/ls", dir);
    assert_string_equal(slurp(ls), "2\nlock\n");
}

/* The pid of parent's child running `comb jobs __spawner`, or 0. */
static pid_t spawner_of(pid_t parent)
{
    DIR *d = opendir("/proc");
    pid_t found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        char path[300], buf[512];
        long pid = atol(e->d_name), ppid = 0;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = pid > 0 ? fopen(path, "r") : NULL;
        if (!f)
            continue;
        int ok = fscanf(f, "%*d %*s %*c %ld", &ppid) == 1 && ppid == (long)parent;
        fclose(f);
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        f = ok ? fopen(path, "r") : NULL;
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        for (size_t i = 0; i < n; i++) /* the arguments, NUL-separated */
            buf[i] = buf[i] ? buf[i] : ' ';
        buf[n] = '\0';
        if (strstr(buf, " jobs __spawner "))
            found = (pid_t)pid;
    }
    if (d)
        closedir(d);
    return found;
}

/* The spawner this process started: the keeper, whose child is its twin. */
static pid_t find_spawner(void) { return spawner_of(getpid()); }
static pid_t find_twin(void) { return spawner_of(find_spawner()); }

/* One of the spawner's two processes killed under a running job (the
 * keeper, or its twin that serves the dispatcher): the other goes on, the
 * job too, and its end is recorded; the dispatcher, its socket closed,
 * adopts the run, reads its end, and starts a new spawner for the next. */
static void spawner_half_killed(pid_t (*victim)(void))
{
    jobs *js = open_js();
    start_slow(js, "slow");
    pid_t sp = find_spawner(), v = victim();
    assert_true(sp > 0 && v > 0);
    assert_int_equal(kill(v, SIGKILL), 0);
    assert_int_equal(job_run(js, NULL), 0); /* slow goes on, adopted; then needs a new spawner */
    assert_string_equal(slurp(out), "slow\nthen\n");
    assert_int_equal(info(js, "slow").runs, 1);
    assert_true(find_spawner() > 0 && find_spawner() != sp);
    char notes[4096] = "";
    fflush(evlog);
    rewind(evlog);
    notes[fread(notes, 1, sizeof notes - 1, evlog)] = '\0';
    assert_non_null(strstr(notes, "the spawner exited: its runs are adopted"));
    assert_null(strstr(notes, "was lost"));
    char path[160]; /* its output, written after the kill, reached its log */
    snprintf(path, sizeof path, "%s/log/slow.log", rundir);
    assert_non_null(strstr(slurp(path), "\nsaid slow\n--- comb jobs: slow run 1 exit 0\n"));
    job_close(js);
    assert_int_equal(find_spawner(), 0); /* closing ends it */
}

static void a_dead_spawner_is_replaced(void **state)
{
    (void)state;
    spawner_half_killed(find_spawner);
}

static void a_dead_twin_is_taken_over(void **state)
{
    (void)state;
    spawner_half_killed(find_twin);
}

/* Makes the journal say a run started that no wrapper ever ran. */
static int ignore(void *ctx, char *rec, char *err, size_t errlen)
{
    (void)ctx, (void)rec, (void)err, (void)errlen;
    return 0;
}

static void journal_start(const char *name)
{
    char path[128], note[256], err[256], rec[128];
    snprintf(path, sizeof path, "%s/journal", rundir);
    journal *j = jnl_open(path, ignore, NULL, note, sizeof note, err, sizeof err);
    assert_non_null(j);
    int n = snprintf(rec, sizeof rec, "start %s 1 1.5", name);
    assert_int_equal(jnl_append(j, rec, (size_t)n), 0);
    assert_int_equal(jnl_sync(j), 0);
    jnl_close(j);
}

/* Makes the exit log say run 1 of name began (as its process does before
 * it execs the job), in a generation of its own. */
static void exitlog_began(const char *name)
{
    char path[128], rec[128 + JNL_SEAL_LEN];
    snprintf(path, sizeof path, "%s/exit/99", rundir);
    int n = snprintf(rec, sizeof rec, "%s 1 began", name);
    jnl_seal(rec, (size_t)n, rec + n);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    assert_int_equal(fwrite(rec, 1, (size_t)n + JNL_SEAL_LEN, f), (size_t)n + JNL_SEAL_LEN);
    fclose(f);
}

static void lost_runs_rerun_or_hold(void **state)
{
    (void)state;
    jobs *js = open_js();
    assert_int_equal(add_full(js, "again", 0, "", "", append_cmd("again"), 1, JOB_SHELL), 0);
    assert_int_equal(add_full(js, "careful", 0, "", "", append_cmd("careful"), 0, JOB_SHELL), 0);
    assert_int_equal(job_hold(js, "again"), 0); /* keep both from starting now */
    assert_int_equal(job_hold(js, "careful"), 0);
    job_close(js);
    journal_start("again");
    journal_start("careful");
    exitlog_began("careful");
    js = open_js();
    assert_int_equal(st_of(js, "careful"), JOB_HELD);
    assert_string_equal(info(js, "careful").cause, "crash");
    assert_int_equal(st_of(js, "again"), JOB_HELD); /* it was held before, and stays */
    assert_int_equal(job_release(js, "again"), 0);
    assert_int_equal(job_run(js, NULL), 1);
    assert_int_equal(info(js, "again").runs, 2);
    assert_string_equal(slurp(out), "again\n");
    job_close(js);
}

static void lost_rerunnable_run_is_queued(void **state)
{
    (void)state;
    jobs *js = open_js();
    assert_int_equal(job_limit_jobs(js, 0), 0); /* nothing starts */
    assert_int_equal(add_full(js, "again", 0, "", "", append_cmd("again"), 1, JOB_SHELL), 0);
    job_close(js);
    journal_start("again");
    js = open_js();
    assert_int_equal(st_of(js, "again"), JOB_RUNNABLE);
    assert_int_equal(job_limit_jobs(js, 2), 0);
    assert_int_equal(job_run(js, NULL), 0);
    assert_string_equal(slurp(out), "again\n");
    job_close(js);
}

/* A job "careful", not rerunnable, whose run 1 the journal says started
 * but no process ever ran (as after a crash before the spawner ran it). */
static void careful_started_no_process(void)
{
    jobs *js = open_js();
    assert_int_equal(job_limit_jobs(js, 0), 0); /* nothing starts */
    assert_int_equal(add_full(js, "careful", 0, "", "", append_cmd("careful"), 0, JOB_SHELL), 0);
    job_close(js);
    journal_start("careful");
}

/* A run that is not rerunnable and left no "began" record never ran (the
 * crash came between its start record and its process): it is queued
 * again, not held, and runs once. */
static void never_begun_run_is_queued_not_held(void **state)
{
    (void)state;
    careful_started_no_process();
    jobs *js = open_js();
    assert_int_equal(st_of(js, "careful"), JOB_RUNNABLE);
    assert_null(info(js, "careful").cause);
    assert_int_equal(job_limit_jobs(js, 2), 0);
    assert_int_equal(job_run(js, NULL), 0);
    assert_string_equal(slurp(out), "careful\n");
    job_close(js);
    js = open_js(); /* the journal says the same after a replay */
    assert_int_equal(st_of(js, "careful"), JOB_DONE);
    job_close(js);
}

/* A spawner that outlived its dispatcher may still start a run it was
 * asked for: a restart waits until no spawner holds its lock before it
 * takes a run without a record for one that never began. */
static void restart_waits_for_an_earlier_spawner(void **state)
{
    (void)state;
    careful_started_no_process();
    char lock[128];
    snprintf(lock, sizeof lock, "%s/exit/lock", rundir);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t p = fork();
    if (p == 0) { /* the lingering spawner: its lock for 0.3 s */
        struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = JSP_LOCK_BYTE,
                           .l_len = 1};
        int fd = open(lock, O_RDWR);
        int ok = fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) == 0;
        if (write(pfd[1], ok ? "y" : "n", 1) != 1 || !ok)
            _exit(1);
        usleep(300000);
        _exit(0);
    }
    char c = 0;
    assert_int_equal(read(pfd[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    jobs *js = open_js();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9 > 0.25);
    assert_int_equal(st_of(js, "careful"), JOB_RUNNABLE);
    job_close(js);
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    close(pfd[0]);
    close(pfd[1]);
}

/* A run that is not rerunnable writes its "began" record before its
 * command runs: a finished run's exit log holds both. */
static void began_is_recorded_before_the_run(void **state)
{
    (void)state;
    jobs *js = open_js();
    char text[256];
    snprintf(text, sizeof text, "cat %s/exit/[0-9]* > %s", rundir, out);
    assert_int_equal(add_full(js, "careful", 0, "", "", text, 0, JOB_SHELL), 0);
    assert_int_equal(job_run(js, NULL), 0);
    assert_non_null(strstr(slurp(out), "careful 1 began #"));
    job_close(js);
}

static void comb_jobs_run_comb_code(void **state)
{
    (void)state;
    jobs *js = open_js();
    char code[256];
    snprintf(code, sizeof code,
             "let f = open(\"%s\", \"a\"); write(f, args(), \"|\", env(\"COMB_JOB\"), "
             "\"|\", env(\"COMB_JOB_RUN\"), \"\\n\"); close(f)",
             out);
    assert_int_equal(add_full(js, "call", 0, "", "", code, 0, JOB_COMB), 0);
    assert_int_equal(add_full(js, "bad", 0, "", "", "error(\"no\")", 0, JOB_COMB), 0);
    assert_int_equal(job_run(js, NULL), 1);
    assert_string_equal(slurp(out), "[]|call|1\n");
    assert_int_equal(info(js, "bad").status, 1 << 8); /* an uncaught error: exit 1 */
    char path[160];
    snprintf(path, sizeof path, "%s/log/bad.log", rundir);
    assert_non_null(strstr(slurp(path), "<-e>:1:1: no\n"));
    job_close(js);
}

static void unwritable_log_fails_the_run_with_126(void **state)
{
    (void)state;
    jobs *js = open_js();
    char path[160], text[600];
    snprintf(path, sizeof path, "%s/log/nolog.log", rundir);
    assert_int_equal(mkdir(path, 0700), 0); /* a directory: cannot be opened for writing */
    snprintf(text, sizeof text, "echo said; %s", append_cmd("ran"));
    assert_int_equal(add(js, "nolog", 0, "", "", text), 0);
    assert_int_equal(add(js, "quiet", 0, "", "", "true"), 0); /* no output, no log needed */
    assert_int_equal(job_run(js, NULL), 1);
    job_info in = info(js, "nolog");
    assert_int_equal(in.state, JOB_FAILED);
    assert_int_equal(in.status, 126 << 8);
    assert_string_equal(slurp(out), "ran\n"); /* the job itself ran to its end */
    assert_int_equal(st_of(js, "quiet"), JOB_DONE);
    job_close(js);
}

/* Logs are made only for runs that wrote something or failed. */
static void logs_hold_output_and_failures(void **state)
{
    (void)state;
    jobs *js = open_js();
    assert_int_equal(add(js, "quiet", 0, "", "", "true"), 0);
    assert_int_equal(add(js, "talks", 0, "", "", "echo out; echo err >&2"), 0);
    assert_int_equal(add(js, "fails", 0, "", "", "exit 4"), 0);
    assert_int_equal(job_run(js, NULL), 1);
    char path[160];
    snprintf(path, sizeof path, "%s/log/quiet.log", rundir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/log/talks.log", rundir);
    const char *t = slurp(path);
    assert_true(!strncmp(t, "--- comb jobs: talks run 1 started ", 35));
    assert_non_null(strstr(t, "\nout\nerr\n--- comb jobs: talks run 1 exit 0\n"));
    snprintf(path, sizeof path, "%s/log/fails.log", rundir);
    assert_non_null(strstr(slurp(path), "\n--- comb jobs: fails run 1 exit 4\n"));
    job_close(js);
}

/* Plain words are exec'd directly (as make does); anything the shell would
 * read otherwise goes to the shell. */
static void plain_commands_need_no_shell(void **state)
{
    (void)state;
    char w[256];
    const char *av[8];
    assert_int_equal(jobexec_words("true", w, sizeof w, av, 8), 1);
    assert_string_equal(av[0], "true");
    assert_null(av[1]);
    assert_int_equal(jobexec_words("  cp -p a/b.txt c:d  ", w, sizeof w, av, 8), 1);
    assert_string_equal(av[0], "cp");
    assert_string_equal(av[3], "c:d");
    assert_null(av[4]);
    const char *shell[] = {"echo $HOME", "a; b",   "a | b",   "a > f",   "echo 'x'",  "echo \"x\"",
                           "ls *.c",     "a && b", "X=1 cmd", "cd /tmp", "exit 3",    "echo a\nb",
                           "",           "   ",    "test -f x", "a b c d e f g h i"};
    for (size_t i = 0; i < sizeof shell / sizeof *shell; i++)
        assert_int_equal(jobexec_words(shell[i], w, sizeof w, av, 8), 0);
    assert_int_equal(jobexec_words("true", w, 4, av, 8), 0); /* no room: the shell's */
}

/* A command run directly that is not there fails 127 and says so in its
 * log; the same through the shell is the shell's 127. */
static void a_missing_program_fails_127(void **state)
{
    (void)state;
    static const char *const spec[][2] = {{"missing", "no-such-program-xyz arg"},
                                          {"shmissing", "no-such-program-xyz arg; true"},
                                          {"quoted", "sh -c 'echo quoted' ignored"}};
    jobs *js = open_js();
    for (size_t i = 0; i < sizeof spec / sizeof *spec; i++)
        assert_int_equal(add(js, spec[i][0], 0, "", "", spec[i][1]), 0);
    assert_int_equal(job_run(js, NULL), 1);
    assert_int_equal(info(js, "missing").status, 127 << 8);
    assert_int_equal(info(js, "shmissing").status, 0);
    char path[160];
    snprintf(path, sizeof path, "%s/log/missing.log", rundir);
    assert_non_null(strstr(slurp(path), "comb jobs: cannot run no-such-program-xyz: not found\n"
                                        "--- comb jobs: missing run 1 exit 127\n"));
    snprintf(path, sizeof path, "%s/log/quoted.log", rundir);
    assert_non_null(strstr(slurp(path), "\nquoted\n"));
    job_close(js);
}

static void replay_restores_states(void **state)
{
    (void)state;
    jobs *js = open_js();
    assert_int_equal(job_limit(js, "VOL_B", 2), 0);
    assert_int_equal(add(js, "ok", 3, "", "VOL_B", "true"), 0);
    assert_int_equal(add(js, "bad", 0, "ok", "VOL_B", "exit 7"), 0);
    assert_int_equal(add(js, "dep", 0, "bad", "", "true"), 0);
    assert_int_equal(add(js, "held", 0, "", "", "true"), 0);
    assert_int_equal(job_hold(js, "held"), 0);
    assert_int_equal(job_run(js, NULL), 1);
    jw_buf before = {0}, after = {0};
    assert_int_equal(job_dump_text(js, &before), 0);
    job_close(js);
    js = open_js();
    assert_int_equal(job_dump_text(js, &after), 0);
    assert_string_equal(before.p, after.p);
    assert_non_null(strstr(after.p, "resource VOL_B limit 2"));
    assert_non_null(strstr(after.p, "state failed (run 1, exit 7)"));
    jw_free(&before);
    jw_free(&after);
    job_close(js);
}

static void compaction_keeps_a_retried_jobs_runs(void **state)
{
    (void)state;
    jobs *js = open_js();
    assert_int_equal(add(js, "x", 0, "", "", "exit 2"), 0);
    assert_int_equal(job_run(js, NULL), 1);
    assert_int_equal(job_retry(js, "x"), 0); /* pending again, not yet started */
    job_close(js);
    js = open_js(); /* every open compacts the journal */
    job_info in = info(js, "x");
    assert_int_equal(in.runs, 1);
    assert_int_equal(in.state, JOB_RUNNABLE);
    assert_int_equal(job_run(js, NULL), 1);
    assert_int_equal(info(js, "x").runs, 2);
    job_close(js);
}

static void second_dispatcher_is_refused(void **state)
{
    (void)state;
    jobs *js = open_js();
    char want[64];
    snprintf(want, sizeof want, "another dispatcher (pid %ld)", (long)getpid());
    pid_t p = fork();
    if (p == 0) { /* another process: the case the lock is for */
        char err[512];
        jobs *other = job_open(rundir, NULL, err, sizeof err);
        _exit(!other && strstr(err, want) ? 0 : 1);
    }
    int st;
    waitpid(p, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    job_close(js);
}

static void failed_allocations_leave_no_trace(void **state)
{
    (void)state;
    jobs *js = open_js();
    assert_int_equal(add(js, "base", 0, "", "VOL_C", "true"), 0);
    int ok = -1;
    for (unsigned long k = 1; ok != 0; k++) {
        mem_fail_after(k);
        ok = add(js, "next", 0, "base,VOL_C", "VOL_C,VOL_D", "true");
        mem_fail_after(0);
        assert_int_equal(job_count(js), ok == 0 ? 2 : 1);
    }
    job_close(js);
    js = open_js(); /* the journal agrees with what was added */
    assert_int_equal(job_count(js), 2);
    assert_int_equal(job_run(js, NULL), 0);
    job_close(js);
}

static void nothing_leaks(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    jobs *js = open_js();
    assert_int_equal(add(js, "a", 0, "", "VOL_E", "true"), 0);
    assert_int_equal(add(js, "b", 0, "a,VOL_E", "VOL_E", "true"), 0);
    assert_int_equal(job_run(js, NULL), 0);
    job_close(js);
    assert_int_equal(mem_in_use(), base);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(rejects_bad_specs),
        T(batch_is_all_or_nothing),
        T(orders_by_prerequisites_then_priority),
        T(failure_blocks_dependents_until_retry),
        T(resource_prerequisite_waits_for_earlier_users),
        T(hold_release_and_force),
        T(limit_zero_pauses_until_raised),
        T(delete_kills_the_process_group),
        T(restart_adopts_a_running_job),
        T(a_dead_spawner_is_replaced),
        T(a_dead_twin_is_taken_over),
        T(lost_runs_rerun_or_hold),
        T(lost_rerunnable_run_is_queued),
        T(never_begun_run_is_queued_not_held),
        T(began_is_recorded_before_the_run),
        T(restart_waits_for_an_earlier_spawner),
        T(comb_jobs_run_comb_code),
        T(unwritable_log_fails_the_run_with_126),
        T(logs_hold_output_and_failures),
        T(plain_commands_need_no_shell),
        T(a_missing_program_fails_127),
        T(replay_restores_states),
        T(compaction_keeps_a_retried_jobs_runs),
        T(second_dispatcher_is_refused),
        T(failed_allocations_leave_no_trace),
        T(nothing_leaks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
