/* test_watch: the store's commit counter: what a commit adds, what a
 * mapping sees of adds made through the file, stores without one. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/datastore.h"
#include "store/sysio.h"
#include "store/watch.h"
#include "tests/unit/gen_store.h"

static char dir[256], store[300];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", gen_tmpdir("watch"));
    snprintf(store, sizeof store, "%s/s", dir);
    return 0;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    (void)state;
    st_sys_fail_reset();
    return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void commits_add_two_and_maps_see_them(void **state)
{
    (void)state;
    gen_store_tiny(store);
    uint64_t v = 99;
    assert_int_equal(st_watch_peek(store, &v), 0);
    assert_int_equal(v, 0);     /* a new store starts at 0 */
    st_watch w;
    assert_int_equal(st_watch_open(&w, store), 0);
    assert_int_equal(st_watch_read(&w), 0);
    gen_store_commit(store);
    assert_int_equal(st_watch_read(&w), 2);     /* before MANIFEST and after */
    gen_store_commit(store);
    assert_int_equal(st_watch_read(&w), 4);
    assert_int_equal(st_watch_peek(store, &v), 0);
    assert_int_equal(v, 4);
    st_watch_close(&w);
    assert_null(w.map);
}

static void stores_without_one_get_it_at_their_next_commit(void **state)
{
    (void)state;
    gen_store_tiny(store);
    char path[400];
    snprintf(path, sizeof path, "%s/COMMITS", store);
    assert_int_equal(unlink(path), 0);
    uint64_t v;
    st_watch w;
    assert_int_equal(st_watch_peek(store, &v), -1);
    assert_int_equal(st_watch_open(&w, store), -1);
    assert_null(w.map);
    st_watch_close(&w); /* harmless */
    gen_store_commit(store);
    assert_int_equal(st_watch_peek(store, &v), 0);
    assert_int_equal(v, 2);
    /* A file too short to hold the counter is not mapped (a read through
     * the map would fault). */
    int fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "abc", 3), 3);
    close(fd);
    assert_int_equal(st_watch_open(&w, store), -1);
    assert_int_equal(st_watch_peek(store, &v), -1);
}

/* Every open of the commit failing in turn. A commit that fails (also when
 * it cannot count) leaves the generation as it was; one that stands has
 * counted before MANIFEST, and after unless that last open failed. */
static void a_commit_that_cannot_count_does_not_happen(void **state)
{
    (void)state;
    gen_store_tiny(store);
    bool named = false, clean = false;
    for (unsigned long nth = 1; nth <= 12; nth++) {
        st_err err;
        st_store *s = st_store_open(store, &err);
        assert_non_null(s);
        st_txn *t = st_store_begin(s, ST_ALL_VOLUMES, &err);
        assert_non_null(t);
        st_storeinfo info;
        st_store_info(s, &info);
        uint64_t generation = info.generation, before, after;
        assert_int_equal(st_watch_peek(store, &before), 0);
        st_sys_fail_after(ST_SYS_OPEN, nth, EIO);
        int rc = st_store_commit(t, &err);
        st_sys_fail_reset();
        st_store *again = st_store_open(store, &err);
        assert_non_null(again);
        st_store_info(again, &info);
        st_store_close(again);
        st_store_close(s);
        assert_int_equal(st_watch_peek(store, &after), 0);
        if (rc == -1) {
            assert_int_equal(info.generation, generation);
            named |= strstr(err.msg, "COMMITS") != NULL;
        } else {
            /* -2: committed, only the directory's fsync failed */
            assert_true(rc == 0 || rc == -2);
            assert_int_equal(info.generation, generation + 1);
            assert_true(after == before + 2 || (rc == 0 && after == before + 1));
            clean |= rc == 0 && after == before + 2;
        }
    }
    assert_true(named);
    assert_true(clean);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(commits_add_two_and_maps_see_them, setup, teardown),
        cmocka_unit_test_setup_teardown(stores_without_one_get_it_at_their_next_commit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_commit_that_cannot_count_does_not_happen, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
