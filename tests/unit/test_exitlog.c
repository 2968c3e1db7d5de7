/* test_exitlog: the wrappers' exit log: records read once and whole, damage
 * skipped and counted, generations rotated and removed only when no run may
 * still write to them, old generations read after a reopen. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/mem.h"
#include "jobs/exitlog.h"
#include "jobs/journal.h"
#include "tests/unit/tmpdir.h"

static char dir[PATH_MAX], xdir[PATH_MAX + 8], seen[4096];
static int nseen;

static int setup(void **state)
{
    (void)state;
    tmp_make("exitlog", dir);
    snprintf(xdir, sizeof xdir, "%s/exit", dir);
    seen[0] = '\0';
    nseen = 0;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tmp_reset(dir);
    return 0;
}

static void collect(void *ctx, const char *name, int run, int status)
{
    (void)ctx;
    size_t n = strlen(seen);
    snprintf(seen + n, sizeof seen - n, "%s/%d/%d ", name, run, status);
    nseen++;
}

/* Appends n bytes to the current generation, as a wrapper does. */
static void append(exitlog *x, const char *p, size_t n)
{
    int fd = open(xl_path(x), O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, n), (ssize_t)n);
    close(fd);
}

/* Appends text as it is, or framed as a record when frame is set. */
static void put(exitlog *x, const char *text, int frame)
{
    char buf[512];
    size_t n = strlen(text);
    memcpy(buf, text, n);
    if (frame) {
        jnl_seal(buf, n, buf + n);
        n += JNL_SEAL_LEN;
    }
    append(x, buf, n);
}

static exitlog *open_x(size_t rotate)
{
    char err[256];
    exitlog *x = xl_open(xdir, rotate, err, sizeof err);
    if (!x)
        fail_msg("xl_open: %s", err);
    return x;
}

static int gen_exists(int n)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%d", xdir, n);
    return access(path, F_OK) == 0;
}

static void records_are_read_once_and_whole(void **state)
{
    (void)state;
    exitlog *x = open_x(1 << 20);
    assert_int_equal(xl_gen(x), 1);
    put(x, "a 1 0", 1);
    put(x, "b.x 2 768", 1);
    assert_int_equal(xl_read(x, collect, NULL), 0);
    assert_string_equal(seen, "a/1/0 b.x/2/768 ");
    put(x, "c 1 9", 0); /* half a write: not yet a record */
    assert_int_equal(xl_read(x, collect, NULL), 0);
    assert_int_equal(nseen, 2);
    char seal[JNL_SEAL_LEN];
    jnl_seal("c 1 9", 5, seal);
    append(x, seal, sizeof seal);
    assert_int_equal(xl_read(x, collect, NULL), 0);
    assert_string_equal(seen, "a/1/0 b.x/2/768 c/1/9 ");
    xl_close(x);
}

static void damage_is_skipped_and_counted(void **state)
{
    (void)state;
    exitlog *x = open_x(1 << 20);
    put(x, "a 1 0 #0000000000000000\n", 0); /* a bad checksum */
    put(x, "b 1", 1);                          /* no status */
    put(x, "c 0 0", 1);                        /* no such run */
    put(x, "d 1 5", 1);
    assert_int_equal(xl_read(x, collect, NULL), 3);
    assert_string_equal(seen, "d/1/5 ");
    char junk[70000];
    memset(junk, 'z', sizeof junk); /* a chunk without a line end */
    append(x, junk, sizeof junk);
    put(x, "\n", 0);
    put(x, "e 1 0", 1);
    assert_int_equal(xl_read(x, collect, NULL), 2);
    assert_string_equal(seen, "d/1/5 e/1/0 ");
    xl_close(x);
}

static void generations_go_once_released(void **state)
{
    (void)state;
    exitlog *x = open_x(64);
    xl_hold(x, 1);
    for (int i = 0; i < 4; i++)
        put(x, "run 1 0", 1);
    assert_int_equal(xl_trim(x), 0); /* past 64 bytes: a new generation */
    assert_int_equal(xl_gen(x), 2);
    assert_true(gen_exists(1)); /* a run still holds it */
    xl_hold(x, 2);
    put(x, "late 1 0", 1);
    assert_int_equal(xl_read(x, collect, NULL), 0);
    assert_int_equal(nseen, 5);
    xl_release(x, 1);
    assert_int_equal(xl_trim(x), 0);
    assert_false(gen_exists(1));
    assert_true(gen_exists(2)); /* held, and the current one */
    xl_release(x, 2);
    assert_int_equal(xl_trim(x), 0);
    assert_true(gen_exists(2)); /* the current one stays */
    xl_close(x);
}

static void reopen_reads_what_was_left(void **state)
{
    (void)state;
    exitlog *x = open_x(1 << 20);
    put(x, "old 3 0", 1);
    xl_close(x);
    x = open_x(1 << 20);
    assert_int_equal(xl_gen(x), 2);
    put(x, "new 1 256", 1);
    assert_int_equal(xl_read(x, collect, NULL), 0);
    assert_string_equal(seen, "old/3/0 new/1/256 ");
    xl_hold(x, XL_UNKNOWN); /* an adopted run: it may write to any of them */
    assert_int_equal(xl_trim(x), 0);
    assert_true(gen_exists(1));
    xl_release(x, XL_UNKNOWN);
    assert_int_equal(xl_trim(x), 0);
    assert_false(gen_exists(1));
    xl_close(x);
}

static void failed_opens_free_everything(void **state)
{
    (void)state;
    exitlog *x = open_x(1 << 20);
    xl_close(x);
    size_t base = mem_in_use();
    for (unsigned long k = 1;; k++) {
        mem_fail_after(k);
        char err[256];
        x = xl_open(xdir, 1 << 20, err, sizeof err);
        mem_fail_after(0);
        assert_int_equal(x != NULL || strstr(err, "out of memory") != NULL, 1);
        if (x) {
            xl_close(x);
            break;
        }
        assert_int_equal(mem_in_use(), base);
    }
    assert_int_equal(mem_in_use(), base);
    char err[256];
    assert_null(xl_open("/proc/nonexistent/exit", 1 << 20, err, sizeof err));
    assert_non_null(strstr(err, "/proc/nonexistent/exit"));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(records_are_read_once_and_whole),
        T(damage_is_skipped_and_counted),
        T(generations_go_once_released),
        T(reopen_reads_what_was_left),
        T(failed_opens_free_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
