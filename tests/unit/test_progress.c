/* test_progress: the progress bar appears late, redraws seldom, shows
 * counts, rate and ETA, clears itself, and counts right from threads. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "vm/progress.h"

static double now;
static FILE *out;
static char text[4096];

static double fake_clock(void)
{
    return now;
}

static int setup(void **state)
{
    (void)state;
    out = tmpfile();
    now = 100;
    vm_progress_setup(out, fake_clock, 100);
    vm_progress_enable(true);
    return out ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    vm_progress_clear();
    vm_progress_setup(NULL, NULL, 0);
    vm_progress_enable(false);
    fclose(out);
    return 0;
}

/* What was written since the last call. */
static const char *written(void)
{
    static long from;
    fflush(out);
    long end = ftell(out);
    fseek(out, from, SEEK_SET);
    size_t n = fread(text, 1, (size_t)(end - from), out);
    text[n] = '\0';
    from = end;
    fseek(out, end, SEEK_SET);
    return text;
}

static void nothing_before_the_delay(void **state)
{
    (void)state;
    vm_progress_begin("scan", 10, 100, 100000000);
    now += 0.2;
    vm_progress_add(1, 10, 10000000);
    assert_string_equal(written(), "");
    vm_progress_clear();
    assert_string_equal(written(), "");     /* never drawn: nothing to erase */
}

static void counts_rate_and_eta(void **state)
{
    (void)state;
    vm_progress_begin("scan", 10, 100, 100000000);
    now += 1;
    vm_progress_add(2, 25, 25000000);
    const char *t = written();
    assert_non_null(strstr(t, "\rscan ["));
    assert_non_null(strstr(t, "2/10 parts"));
    assert_non_null(strstr(t, "25/100 blocks"));
    assert_non_null(strstr(t, "25.0 MB/s"));
    assert_non_null(strstr(t, "ETA 0:03"));     /* a quarter in 1 s: 3 s to go */
    assert_non_null(strstr(t, "#####"));
    /* the width, short of 3 columns: a full line would wrap at the echoed ^C */
    assert_int_equal(strlen(t) - strlen("\r") - strlen("\033[K"), 97);
    vm_progress_clear();
    assert_string_equal(written(), "\r\033[K");
}

/* More done than planned (a partition's files read twice) shows as all
 * done, never "14/8 parts". */
static void never_more_done_than_total(void **state)
{
    (void)state;
    vm_progress_begin("scan", 8, 0, 0);
    now += 1;
    vm_progress_add(14, 0, 0);
    const char *t = written();
    assert_non_null(strstr(t, "8/8 parts"));
    assert_null(strstr(t, "14/8"));
    vm_progress_clear();
    written();
}

static void redraws_at_most_every_tenth_of_a_second(void **state)
{
    (void)state;
    vm_progress_begin("scan", 0, 0, 0);
    now += 1;
    vm_progress_add(0, 1, 1000);
    assert_string_not_equal(written(), "");
    now += 0.05;
    vm_progress_add(0, 1, 1000);
    assert_string_equal(written(), "");
    now += 0.06;
    vm_progress_add(0, 1, 1000);
    const char *t = written();
    assert_non_null(strstr(t, " 3 blocks"));     /* no total: a count */
    assert_null(strstr(t, "ETA"));
    vm_progress_clear();
    written();
}

static void disabled_draws_nothing(void **state)
{
    (void)state;
    vm_progress_enable(false);
    vm_progress_begin("scan", 1, 1, 1);
    now += 5;
    vm_progress_add(1, 1, 1);
    vm_progress_clear();
    assert_string_equal(written(), "");
    vm_progress_enable(true);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10000; i++)
        vm_progress_add(0, 1, 100);
    return NULL;
}

static void threads_add_up(void **state)
{
    (void)state;
    pthread_t t[4];
    vm_progress_begin("scan", 0, 40000, 0);
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    now += 1;
    written();
    vm_progress_add(0, 0, 0);
    assert_non_null(strstr(written(), "40000/40000 blocks"));
    vm_progress_clear();
    written();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nothing_before_the_delay),
        cmocka_unit_test(counts_rate_and_eta),
        cmocka_unit_test(never_more_done_than_total),
        cmocka_unit_test(redraws_at_most_every_tenth_of_a_second),
        cmocka_unit_test(disabled_draws_nothing),
        cmocka_unit_test(threads_add_up),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
