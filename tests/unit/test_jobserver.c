/* test_jobserver: the daemon's socket and protocol: mode 0600, peer
 * credentials, errors for malformed requests without dying, wait. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/mem.h"
#include "jobs/jobs.h"
#include "jobs/server.h"

static char dir[40], rundir[64], sock[80];
static pid_t server;

/* Starts a daemon loop in a child; returns once it listens. */
static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_jobserver.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(rundir, sizeof rundir, "%s/run", dir);
    snprintf(sock, sizeof sock, "%s/sock", rundir);
    int p[2];
    assert_int_equal(pipe(p), 0);
    server = fork();
    if (server == 0) {
        close(p[0]);
        char err[512];
        job_options opt = {NULL, COMB_BUILD_DIR "/comb", 0}; /* the spawner */
        jobs *js = job_open(rundir, &opt, err, sizeof err);
        int rc = js ? jobsrv_serve(js, NULL, p[1]) : -1;
        job_close(js);
        _exit(rc ? 1 : 0);
    }
    close(p[1]);
    char buf[8] = "";
    assert_int_equal(read(p[0], buf, sizeof buf), 3);
    assert_string_equal(buf, "ok\n");
    close(p[0]);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    int st;
    kill(server, SIGTERM);
    waitpid(server, &st, 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* it stopped cleanly */
    return system(cmd);
}

static int connect_raw(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends one raw line and returns the first line of the reply. */
static const char *raw(int fd, const char *line)
{
    static char buf[4096];
    assert_int_equal(write(fd, line, strlen(line)), (ssize_t)strlen(line));
    size_t n = 0;
    while (n < sizeof buf - 1 && (n == 0 || buf[n - 1] != '\n')) {
        ssize_t r = read(fd, buf + n, 1);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    return buf;
}

static int req(const char *text, jw_buf *reply, char *err)
{
    jw_buf r = {0};
    assert_int_equal(jw_puts(&r, text), 0);
    int rc = jobsrv_request(rundir, &r, 5000, reply, err, 1200);
    jw_free(&r);
    return rc;
}

static void socket_is_private(void **state)
{
    (void)state;
    struct stat st;
    assert_int_equal(stat(sock, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
}

static void malformed_requests_get_errors_and_the_daemon_lives(void **state)
{
    (void)state;
    int fd = connect_raw();
    assert_true(fd >= 0);
    assert_non_null(strstr(raw(fd, "hello\n"), "err malformed request"));
    assert_non_null(strstr(raw(fd, "comb-jobs 2 status 0\n"), "err protocol version 2"));
    assert_non_null(strstr(raw(fd, "comb-jobs 1 frobnicate\n"), "err unknown request"));
    assert_non_null(strstr(raw(fd, "comb-jobs 1 status %zz\n"), "err malformed request"));
    assert_non_null(strstr(raw(fd, "comb-jobs 1 submit a b c\n"), "err submit: 3 fields"));
    assert_non_null(strstr(raw(fd, "comb-jobs 1 submit x y - sh / % % true\n"),
                           "err bad priority"));
    assert_non_null(strstr(raw(fd, "comb-jobs 1 limit VOL_1 lots\n"), "err limit VOL_1"));
    assert_non_null(strstr(raw(fd, "comb-jobs 1 delete nosuch\n"), "err no job named"));
    assert_memory_equal(raw(fd, "comb-jobs 1 dump\n"), "ok ", 3); /* same connection, alive */
    close(fd);
    fd = connect_raw(); /* a client that hangs up mid-request */
    assert_int_equal(write(fd, "comb-jobs 1 sta", 15), 15);
    close(fd);
    jw_buf reply = {0};
    char err[1200];
    assert_int_equal(req("status 0", &reply, err), 0);
    assert_non_null(strstr(reply.p, "jobs total 0"));
    jw_free(&reply);
}

static void other_users_are_refused(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* needs root to act as another user */
    /* let the peer-credential check, not the file modes, do the refusing */
    assert_int_equal(chmod(dir, 0711), 0);
    assert_int_equal(chmod(rundir, 0711), 0);
    assert_int_equal(chmod(sock, 0666), 0);
    pid_t p = fork();
    if (p == 0) {
        signal(SIGPIPE, SIG_IGN); /* the server may hang up before we write */
        if (setuid(65534) < 0)
            _exit(3);
        int fd = connect_raw();
        char buf[256] = "";
        if (fd < 0)
            _exit(4);
        send(fd, "comb-jobs 1 dump\n", 17, 0); /* may fail: refused already; read why */
        ssize_t n = read(fd, buf, sizeof buf - 1);
        _exit(n > 0 && strstr(buf, "err permission denied") ? 0 : 1);
    }
    int st;
    waitpid(p, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void submit_then_wait(void **state)
{
    (void)state;
    char out[128], line[512];
    snprintf(out, sizeof out, "%s/out", dir);
    jw_buf r = {0}, reply = {0};
    job_spec s = {"w1", 0, NULL, 0, NULL, 0, JOB_SHELL, line, dir, 0, 0};
    snprintf(line, sizeof line, "sleep 0.2; echo w1 >> %s", out);
    assert_int_equal(jw_field(&r, "submit"), 0);
    assert_int_equal(job_spec_encode(&s, &r), 0);
    char err[1200];
    assert_int_equal(jobsrv_request(rundir, &r, 5000, &reply, err, sizeof err), 0);
    assert_string_equal(reply.p, "submitted 1 job\n");
    jw_clear(&reply);
    assert_int_equal(jobsrv_request(rundir, &r, 5000, &reply, err, sizeof err), 1);
    assert_non_null(strstr(err, "already exists"));
    assert_int_equal(req("wait w1", &reply, err), 0);
    assert_non_null(strstr(reply.p, "job w1 done (run 1, exit 0)"));
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    fclose(f);
    jw_free(&r);
    jw_clear(&reply);
    assert_int_equal(req("wait nosuch", &reply, err), 1);
    /* info: the same state in fields, which decode back */
    assert_int_equal(req("info w1", &reply, err), 0);
    assert_true(!strncmp(reply.p, "limits ", 7));
    char *jl = strstr(reply.p, "\njob w1 ");
    assert_non_null(jl);
    jl[strcspn(jl + 1, "\n") + 1] = '\0';
    char *fs[JOB_INFO_FIELDS + 2];
    assert_int_equal(jw_split(jl + 1, fs, JOB_INFO_FIELDS + 2), JOB_INFO_FIELDS + 1);
    job_info in;
    assert_int_equal(job_info_decode(fs + 1, JOB_INFO_FIELDS, &in, err, sizeof err), 0);
    assert_string_equal(in.spec.name, "w1");
    assert_string_equal(in.spec.dir, dir);
    assert_int_equal(in.state, JOB_DONE);
    assert_int_equal(in.runs, 1);
    assert_int_equal(in.status, 0);
    assert_true(in.started > 0 && in.ended >= in.started);
    job_spec_free(&in.spec);
    assert_int_equal(job_info_decode(fs + 1, JOB_INFO_FIELDS - 1, &in, err, sizeof err), -1);
    jw_clear(&reply);
    assert_int_equal(req("info nosuch", &reply, err), 1);
    assert_non_null(strstr(err, "no job named 'nosuch'"));
    jw_free(&reply);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(socket_is_private),
        T(malformed_requests_get_errors_and_the_daemon_lives),
        T(other_users_are_refused),
        T(submit_then_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
