/* test_reading: a reading session's state at the store level: its last
 * snapshot (current while no commit came; a commit racing the open; a
 * store without a counter; a command run, and a store made again under
 * its name), its scans' use of the read cache, its idle-reader budget and
 * its references. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <unistd.h>

#include "store/mem.h"
#include "store/reading.h"
#include "tests/unit/gen_store.h"
#include "tests/unit/tmpdir.h"

static char dir[PATH_MAX], store[PATH_MAX + 8], other[PATH_MAX + 8];

static int setup(void **state)
{
    (void)state;
    tmp_make("reading", dir);
    snprintf(store, sizeof store, "%s/s", dir);
    snprintf(other, sizeof other, "%s/t", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tmp_remove(dir);
    return 0;
}

static st_reading *opened(const char *path)
{
    st_reading *r = st_reading_new();
    assert_non_null(r);
    st_reading_opening(r, path);
    assert_true(st_reading_opened(r, path));
    return r;
}

static void the_last_snapshot_is_current_until_a_commit(void **state)
{
    (void)state;
    gen_store_tiny(store);
    gen_store_tiny(other);
    st_reading *r = opened(store);
    assert_true(st_reading_current(r, store));
    assert_true(st_reading_current(r, store));  /* again: by the counter alone */
    assert_false(st_reading_current(r, other));
    gen_store_commit(store);
    assert_false(st_reading_current(r, store));
    st_reading_forget(r);
    assert_false(st_reading_current(r, store));
    st_reading_unref(r);
}

static void a_commit_racing_the_open_keeps_the_last_as_it_was(void **state)
{
    (void)state;
    gen_store_tiny(store);
    gen_store_tiny(other);
    st_reading *r = opened(other);
    st_reading_opening(r, store);
    gen_store_commit(store);
    assert_false(st_reading_opened(r, store));
    assert_false(st_reading_current(r, store));
    assert_true(st_reading_current(r, other));
    st_reading_opening(r, store);   /* opened anew: it is the last now */
    assert_true(st_reading_opened(r, store));
    assert_true(st_reading_current(r, store));
    assert_false(st_reading_current(r, other));
    st_reading_unref(r);
}

static void a_store_without_a_counter_is_checked_by_its_manifest(void **state)
{
    (void)state;
    gen_store_tiny(store);
    char path[sizeof store + 8];
    snprintf(path, sizeof path, "%s/COMMITS", store);
    assert_int_equal(unlink(path), 0);
    st_reading *r = opened(store);
    assert_true(st_reading_current(r, store));
    gen_store_commit(store);      /* makes the counter, replaces MANIFEST */
    assert_false(st_reading_current(r, store));
    st_reading_unref(r);
}

/* A store removed and made again under its name leaves the old counter
 * mapped, never to move: after a command ran, MANIFEST tells. */
static void a_command_run_makes_the_next_check_read_the_manifest(void **state)
{
    (void)state;
    gen_store_tiny(store);
    gen_store_commit(store);
    st_reading *r = opened(store);
    st_reading_recheck_all();
    assert_true(st_reading_current(r, store));  /* checked, and the same */
    tmp_remove(store);
    gen_store_tiny(store);
    gen_store_commit(store);
    st_reading_recheck_all();
    assert_false(st_reading_current(r, store));
    st_reading_unref(r);
}

static void scans_read_through_the_cache_from_the_second(void **state)
{
    (void)state;
    st_reading *r = st_reading_new();
    assert_non_null(r);
    assert_false(st_reading_caches(r, 0));
    assert_false(st_reading_caches(r, 1));     /* the first scan would not */
    st_reading_scan(r);
    assert_false(st_reading_caches(r, 0));
    assert_true(st_reading_caches(r, 1));
    st_reading_scan(r);
    assert_true(st_reading_caches(r, 0));
    st_reading_unref(r);
}

static void idle_readers_stay_within_the_budget(void **state)
{
    (void)state;
    st_reading *r = st_reading_new();
    assert_non_null(r);
    int n = 0;
    while (n < 1000 && st_reading_idle_add(r))
        n++;
    assert_true(n > 0 && n <= 256);
    assert_false(st_reading_idle_add(r));
    st_reading_idle_sub(r);
    assert_true(st_reading_idle_add(r));
    assert_false(st_reading_idle_add(r));
    st_reading_unref(r);
}

/* The file lists of a session's snapshots hold it too: it goes with the
 * last reference, its mapping with it. */
static void the_last_reference_frees_it(void **state)
{
    (void)state;
    gen_store_tiny(store);
    size_t before = mem_in_use();
    st_reading *r = opened(store);
    assert_ptr_equal(st_reading_ref(r), r);
    st_reading_unref(r);
    assert_true(st_reading_current(r, store));
    st_reading_unref(r);
    st_reading_unref(NULL);
    assert_int_equal(mem_in_use(), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_last_snapshot_is_current_until_a_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(a_commit_racing_the_open_keeps_the_last_as_it_was, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_store_without_a_counter_is_checked_by_its_manifest, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_command_run_makes_the_next_check_read_the_manifest, setup,
                                        teardown),
        cmocka_unit_test(scans_read_through_the_cache_from_the_second),
        cmocka_unit_test(idle_readers_stay_within_the_budget),
        cmocka_unit_test_setup_teardown(the_last_reference_frees_it, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
