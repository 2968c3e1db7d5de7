/* test_sysio: checked I/O names the file, injected faults hit the n-th call,
 * and an atomic replace either happens whole or not at all. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/mem.h"
#include "store/sysio.h"
#include "tests/unit/tmpdir.h"

static char tmp[PATH_MAX];
static char path[PATH_MAX + 32];

static int setup(void **state)
{
    (void)state;
    tmp_make("sysio", tmp);
    snprintf(path, sizeof path, "%s/file", tmp);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tmp_reset(tmp);
    return 0;
}

static void slurp_equals(const char *want)
{
    char *buf;
    size_t n;
    st_err err;
    assert_int_equal(st_sys_slurp(path, 1 << 20, &buf, &n, &err), 0);
    assert_int_equal(n, strlen(want));
    assert_string_equal(buf, want);
    mem_free(buf, n + 1);
}

static void errors_name_the_file(void **state)
{
    (void)state;
    st_err err;
    assert_int_equal(st_sys_open("/nonexistent/x", O_RDONLY, 0, &err), -1);
    assert_int_equal(err.code, ST_EIO);
    assert_string_equal(err.msg, "open /nonexistent/x: No such file or directory");
    char *buf;
    size_t n;
    assert_int_equal(st_sys_slurp(tmp, 100, &buf, &n, &err), -1);
    assert_non_null(strstr(err.msg, "not a regular file"));
    assert_int_equal(st_sys_rename("/nonexistent/a", "/nonexistent/b", &err), -1);
    assert_non_null(strstr(err.msg, "rename /nonexistent/a to /nonexistent/b"));
}

static void faults_hit_the_nth_call_only(void **state)
{
    (void)state;
    st_err err;
    int fd = st_sys_open(path, O_WRONLY | O_CREAT, 0644, &err);
    assert_true(fd >= 0);
    st_sys_fail_after(ST_SYS_WRITE, 3, ENOSPC);
    assert_int_equal(st_sys_write(fd, "a", 1, path, &err), 0);
    assert_int_equal(st_sys_write(fd, "b", 1, path, &err), 0);
    assert_int_equal(st_sys_write(fd, "c", 1, path, &err), -1);
    assert_int_equal(err.code, ST_EIO);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "No space left on device"));
    assert_int_equal(st_sys_write(fd, "d", 1, path, &err), 0);
    st_sys_fail_after(ST_SYS_FSYNC, 1, EIO);
    assert_int_equal(st_sys_fsync(fd, path, &err), -1);
    assert_non_null(strstr(err.msg, "Input/output error"));
    assert_int_equal(st_sys_fsync(fd, path, &err), 0);
    assert_int_equal(st_sys_close(fd, path, &err), 0);
    slurp_equals("abd");
    fd = st_sys_open(path, O_RDONLY, 0, &err);
    char b[8];
    st_sys_fail_after(ST_SYS_READ, 1, EIO);
    assert_int_equal(st_sys_read(fd, b, sizeof b, path, &err), -1);
    assert_int_equal(st_sys_read(fd, b, sizeof b, path, &err), 3); /* short only at EOF */
    close(fd);
}

static void replace_is_all_or_nothing(void **state)
{
    (void)state;
    st_err err;
    assert_int_equal(st_sys_replace(path, "old", 3, &err), 0);
    slurp_equals("old");
    const st_sys_op ops[] = {ST_SYS_OPEN, ST_SYS_WRITE, ST_SYS_FSYNC, ST_SYS_RENAME};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        st_sys_fail_after(ops[i], 1, EIO);
        assert_int_equal(st_sys_replace(path, "new!", 4, &err), -1);
        assert_int_equal(err.code, ST_EIO);
        slurp_equals("old");
        assert_int_equal(tmp_count(tmp, NULL), 1); /* no .tmp left behind */
    }
    /* The directory fsync comes after the rename: the new content stands. */
    st_sys_fail_after(ST_SYS_FSYNC, 2, EIO);
    assert_int_equal(st_sys_replace(path, "new!", 4, &err), -2);
    assert_non_null(strstr(err.msg, "fsync"));
    slurp_equals("new!");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(errors_name_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(faults_hit_the_nth_call_only, setup, teardown),
        cmocka_unit_test_setup_teardown(replace_is_all_or_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
