/* test_journal: records survive a reopen, a torn tail is cut, damage is
 * refused, compaction replaces the file atomically. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/mem.h"
#include "jobs/journal.h"

struct seen {
    char rec[16][64];
    int n;
    int fail_at; /* apply refuses this record (1-based), 0: none */
};

static int collect(void *ctx, char *rec, char *err, size_t errlen)
{
    struct seen *s = ctx;
    if (++s->n == s->fail_at) {
        snprintf(err, errlen, "refused '%s'", rec);
        return -1;
    }
    if (s->n <= 16)
        snprintf(s->rec[s->n - 1], sizeof s->rec[0], "%s", rec);
    return 0;
}

static char dir[64], path[96];
static char note[256], err[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_journal.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/journal", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

static journal *open_seen(struct seen *s)
{
    memset(s->rec, 0, sizeof s->rec);
    s->n = 0;
    return jnl_open(path, collect, s, note, sizeof note, err, sizeof err);
}

static void write3(void)
{
    struct seen s = {0};
    journal *j = open_seen(&s);
    assert_non_null(j);
    assert_int_equal(s.n, 0);
    assert_int_equal(jnl_append(j, "one 1", 5), 0);
    assert_int_equal(jnl_append(j, "two 2", 5), 0);
    assert_int_equal(jnl_sync(j), 0);
    assert_int_equal(jnl_append(j, "three 3", 7), 0);
    jnl_close(j); /* "three" is dropped, never flushed: as in a crash */
}

/* Appends rec, syncs and closes j; a reopen must find it as record n. */
static void append_survives(journal *j, const char *rec, int n)
{
    struct seen s = {0};
    assert_int_equal(jnl_append(j, rec, strlen(rec)), 0);
    assert_int_equal(jnl_sync(j), 0);
    jnl_close(j);
    j = open_seen(&s);
    assert_non_null(j);
    assert_int_equal(s.n, n);
    assert_string_equal(s.rec[n - 1], rec);
    assert_string_equal(note, "");
    jnl_close(j);
}

static off_t size_of(void)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

static void append_raw(const char *bytes, size_t n)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, n), (ssize_t)n);
    close(fd);
}

static void replays_what_was_synced(void **state)
{
    (void)state;
    write3();
    struct seen s = {0};
    journal *j = open_seen(&s);
    assert_non_null(j);
    assert_int_equal(s.n, 2); /* "three" was never flushed: as after a crash */
    assert_string_equal(s.rec[0], "one 1");
    assert_string_equal(s.rec[1], "two 2");
    assert_string_equal(note, "");
    assert_int_equal(jnl_records(j), 2);
    append_survives(j, "four", 3);
}

/* A flush to the journal file goes straight to write(2): nothing tries
 * send(2) first and fails with ENOTSOCK (which a success leaves in errno). */
static void flush_writes_without_a_failed_send(void **state)
{
    (void)state;
    struct seen s = {0};
    journal *j = open_seen(&s);
    assert_non_null(j);
    assert_int_equal(jnl_append(j, "one 1", 5), 0);
    errno = 0;
    assert_int_equal(jnl_flush(j), 0);
    assert_int_equal(errno, 0);
    jnl_close(j);
}

static void torn_tail_is_truncated_and_reported(void **state)
{
    (void)state;
    write3();
    off_t good = size_of();
    append_raw("start x 1 17", 12); /* a record cut short by a crash */
    struct seen s = {0};
    journal *j = open_seen(&s);
    assert_non_null(j);
    assert_int_equal(s.n, 2);
    assert_non_null(strstr(note, "torn last record"));
    assert_int_equal(size_of(), good);
    append_survives(j, "after", 3);
}

static void bad_checksum_on_last_line_is_torn(void **state)
{
    (void)state;
    write3();
    append_raw("end x 1 0 #0000000000000000\n", 28);
    struct seen s = {0};
    journal *j = open_seen(&s);
    assert_non_null(j);
    assert_int_equal(s.n, 2);
    assert_non_null(strstr(note, "torn"));
    jnl_close(j);
}

static void damage_before_the_end_is_refused(void **state)
{
    (void)state;
    write3();
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    off_t at = 0;
    char buf[256];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    assert_true(n > 0);
    at = (off_t)(strchr(buf, '\n') - buf) + 1; /* the first record after the header */
    assert_int_equal(pwrite(fd, "X", 1, at), 1);
    close(fd);
    struct seen s = {0};
    assert_null(open_seen(&s));
    assert_non_null(strstr(err, "damaged record at offset"));
    assert_non_null(strstr(err, path));
    assert_true(size_of() > at); /* nothing was cut */
}

static void not_a_journal_is_refused(void **state)
{
    (void)state;
    FILE *f = fopen(path, "w");
    fputs("hello #0000000000000000\n", f);
    fclose(f);
    struct seen s = {0};
    assert_null(open_seen(&s));
    assert_non_null(strstr(err, path));
}

static void torn_header_starts_afresh(void **state)
{
    (void)state;
    FILE *f = fopen(path, "w");
    fputs("comb-jobs-jou", f);
    fclose(f);
    struct seen s = {0};
    journal *j = open_seen(&s);
    assert_non_null(j);
    assert_int_equal(s.n, 0);
    append_survives(j, "x", 1);
}

static void apply_error_stops_with_offset(void **state)
{
    (void)state;
    write3();
    struct seen s = {.fail_at = 2};
    assert_null(jnl_open(path, collect, &s, note, sizeof note, err, sizeof err));
    assert_non_null(strstr(err, "refused 'two 2'"));
    assert_non_null(strstr(err, "offset"));
}

static void compaction_replaces_the_file(void **state)
{
    (void)state;
    struct seen s = {0};
    journal *j = open_seen(&s);
    char rec[32];
    for (int i = 0; i < 100; i++) {
        int n = snprintf(rec, sizeof rec, "rec %d", i);
        assert_int_equal(jnl_append(j, rec, (size_t)n), 0);
    }
    assert_int_equal(jnl_sync(j), 0);
    off_t before = size_of();
    assert_int_equal(jnl_snapshot_begin(j), 0);
    assert_int_equal(jnl_append(j, "snap a", 6), 0);
    assert_int_equal(jnl_append(j, "snap b", 6), 0);
    assert_int_equal(jnl_snapshot_commit(j), 0);
    assert_true(size_of() < before);
    assert_int_equal(jnl_records(j), 2);
    assert_int_equal(jnl_append(j, "later", 5), 0); /* appends go to the new file */
    assert_int_equal(jnl_sync(j), 0);
    jnl_close(j);
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_equal(access(tmp, F_OK), -1);
    j = open_seen(&s);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.rec[0], "snap a");
    assert_string_equal(s.rec[2], "later");
    jnl_close(j);
}

static void aborted_snapshot_keeps_the_old(void **state)
{
    (void)state;
    write3();
    struct seen s = {0};
    journal *j = open_seen(&s);
    assert_int_equal(jnl_snapshot_begin(j), 0);
    assert_int_equal(jnl_append(j, "never", 5), 0);
    jnl_snapshot_abort(j);
    append_survives(j, "kept", 3);
}

static void failed_allocation_appends_nothing(void **state)
{
    (void)state;
    struct seen s = {0};
    journal *j = open_seen(&s);
    size_t used = mem_in_use();
    mem_fail_after(1);
    assert_int_equal(jnl_append(j, "lost to memory", 14), -1);
    assert_int_equal(mem_in_use(), used);
    append_survives(j, "fine", 1);
}

static void every_open_failure_frees_all(void **state)
{
    (void)state;
    write3();
    size_t base = mem_in_use();
    struct seen s = {0};
    journal *j = NULL;
    for (unsigned long k = 1; !j; k++) {
        mem_fail_after(k);
        j = open_seen(&s);
        mem_fail_after(0);
        if (!j)
            assert_int_equal(mem_in_use(), base);
    }
    assert_int_equal(s.n, 2);
    jnl_close(j);
    assert_int_equal(mem_in_use(), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(replays_what_was_synced, setup, teardown),
        cmocka_unit_test_setup_teardown(flush_writes_without_a_failed_send, setup, teardown),
        cmocka_unit_test_setup_teardown(torn_tail_is_truncated_and_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_checksum_on_last_line_is_torn, setup, teardown),
        cmocka_unit_test_setup_teardown(damage_before_the_end_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(not_a_journal_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(torn_header_starts_afresh, setup, teardown),
        cmocka_unit_test_setup_teardown(apply_error_stops_with_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(compaction_replaces_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(aborted_snapshot_keeps_the_old, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_allocation_appends_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(every_open_failure_frees_all, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
