/* test_lock: byte locks exclude other opens (in this process too), share,
 * probe ranges, and go away with the file or the process. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/lock.h"
#include "tests/unit/tmpdir.h"

static char tmp[PATH_MAX], path[PATH_MAX + 16];
static st_lockfile a, b;

static int setup(void **state)
{
    (void)state;
    tmp_make("lock", tmp);
    snprintf(path, sizeof path, "%s/LOCK", tmp);
    FILE *f = fopen(path, "w");
    fclose(f);
    st_err err;
    if (st_lock_open(&a, path, 1, &err) < 0 || st_lock_open(&b, path, 0, &err) < 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    st_lock_close(&a);
    st_lock_close(&b);
    tmp_reset(tmp);
    return 0;
}

static void exclusive_excludes_another_open(void **state)
{
    (void)state;
    st_err err;
    assert_int_equal(st_lock_try(&a, 5, 1, &err), 0);
    assert_int_equal(st_lock_try(&b, 5, 0, &err), 1);
    assert_int_equal(st_lock_held(&b, 5, 1, &err), 1);
    assert_int_equal(st_lock_held(&b, 6, 100, &err), 0); /* other bytes are free */
    assert_int_equal(st_lock_held(&a, 5, 1, &err), 0);   /* our own lock is not "held" */
    st_lock_release(&a, 5);
    assert_int_equal(st_lock_try(&b, 5, 0, &err), 0);
}

static void shared_locks_share_and_block_exclusive(void **state)
{
    (void)state;
    st_err err;
    assert_int_equal(st_lock_try(&a, 3, 0, &err), 0);
    assert_int_equal(st_lock_try(&b, 3, 0, &err), 0);
    st_lock_release(&b, 3);
    assert_int_equal(st_lock_held(&b, 0, 10, &err), 1);
    assert_int_equal(st_lock_held(&b, 4, 10, &err), 0);
    assert_int_equal(st_lock_held(&b, 0, 3, &err), 0);
    assert_int_equal(st_lock_held(&b, 0, 0, &err), 0);
    assert_int_equal(st_lock_try(&a, 3, 1, &err), 0); /* upgrade our own */
    st_lock_close(&a);                                 /* closing drops it */
    assert_int_equal(st_lock_held(&b, 0, 10, &err), 0);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void wait_outlasts_a_holder_that_dies(void **state)
{
    (void)state;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t child = fork();
    if (child == 0) {
        st_lockfile c;
        st_err err;
        if (st_lock_open(&c, path, 1, &err) < 0 || st_lock_try(&c, 1, 1, &err) != 0)
            _exit(1);
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        usleep(200000);
        _exit(0); /* dies holding the lock */
    }
    char ch;
    assert_int_equal(read(ready[0], &ch, 1), 1);
    st_err err;
    assert_int_equal(st_lock_try(&a, 1, 1, &err), 1);
    double t0 = now();
    assert_int_equal(st_lock_wait(&a, 1, 1, &err), 0);
    assert_true(now() - t0 > 0.05);
    int status;
    waitpid(child, &status, 0);
    assert_int_equal(WEXITSTATUS(status), 0);
    close(ready[0]);
    close(ready[1]);
}

static void opening_a_missing_file_names_it(void **state)
{
    (void)state;
    st_lockfile c;
    st_err err;
    assert_int_equal(st_lock_open(&c, "/nonexistent/LOCK", 0, &err), -1);
    assert_string_equal(err.msg, "open /nonexistent/LOCK: No such file or directory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(exclusive_excludes_another_open, setup, teardown),
        cmocka_unit_test_setup_teardown(shared_locks_share_and_block_exclusive, setup, teardown),
        cmocka_unit_test_setup_teardown(wait_outlasts_a_holder_that_dies, setup, teardown),
        cmocka_unit_test_setup_teardown(opening_a_missing_file_names_it, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
