/* test_sort: the external sort equals GNU sort, keeps ties in input order,
 * stays within its files and reports I/O and memory failures cleanly. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/mem.h"
#include "store/sort.h"
#include "store/sysio.h"
#include "tests/unit/records.h"
#include "tests/unit/tmpdir.h"
#include "tests/unit/xorshift.h"

static uint64_t key_prefix(const void *rec, void *ctx)
{
    (void)ctx;
    return get_be(rec);
}

/* A prefix that settles only some comparisons: cmp must order the ties. */
static uint64_t coarse_prefix(const void *rec, void *ctx)
{
    return key_prefix(rec, ctx) >> 12;
}

static uint64_t rng = 88172645463325252ULL;

enum shape { RANDOM, SORTED, REVERSE, EQUAL };

/* The i-th of n records of a shape; the id is the add position, which shows
 * whether ties kept their order. */
static void shaped_rec(unsigned char *rec, enum shape shape, uint64_t i, uint64_t n)
{
    uint64_t key = shape == RANDOM    ? xorshift(&rng) % (n / 3 + 1)
                   : shape == SORTED  ? i
                   : shape == REVERSE ? n - i
                                      : 42;
    make_rec(rec, key, i);
}

/* A stable sort by key equals a sort by (key, position): the whole record. */
static int whole_cmp(const void *a, const void *b)
{
    return memcmp(a, b, RS);
}

static char tmp[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    tmp_make("sort", tmp);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tmp_reset(tmp);
    return 0;
}

/* Sorts n records of a shape and checks them against qsort of the whole
 * record; returns the sorter's stats. */
static st_sort_stats check_shape(enum shape shape, size_t n, size_t parcel, int threads,
                                 st_prefix_fn prefix)
{
    size_t base = mem_in_use();
    unsigned char *want = mem_alloc(n * RS + 1);
    assert_non_null(want);
    st_err err = {0};
    st_sort_opts o = {.parcel_bytes = parcel, .tmpdir = tmp, .prefix = prefix,
                      .threads = threads};
    st_sorter *s = st_sorter_new(RS, key_cmp, NULL, &o, &err);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++) {
        shaped_rec(want + i * RS, shape, i, n);
        assert_int_equal(st_sorter_add(s, want + i * RS, &err), 0);
    }
    qsort(want, n, RS, whole_cmp);
    assert_int_equal(st_sorter_finish(s, &err), 0);
    const void *rec;
    size_t got = 0;
    int rc;
    while ((rc = st_sorter_next(s, &rec, &err)) == 1) {
        assert_true(got < n);
        assert_memory_equal(rec, want + got * RS, RS);
        got++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(got, n);
    assert_int_equal(st_sorter_next(s, &rec, &err), 0);
    st_sort_stats st;
    st_sorter_stats(s, &st);
    assert_int_equal(st.records, n);
    st_sorter_free(s);
    assert_int_equal(tmp_count(tmp, NULL), 0);
    mem_free(want, n * RS + 1);
    assert_int_equal(mem_in_use(), base);
    return st;
}

static void edge_cases_in_memory(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++) {
        check_shape(RANDOM, 0, 0, threads, NULL);
        check_shape(RANDOM, 1, 0, threads, NULL);
        check_shape(EQUAL, 1000, 0, threads, NULL);
        check_shape(SORTED, 1000, 0, threads, NULL);
        check_shape(REVERSE, 1000, 0, threads, NULL);
        st_sort_stats st = check_shape(RANDOM, 5000, 0, threads, key_prefix);
        assert_int_equal(st.runs, 0);
    }
}

static void edge_cases_spilled(void **state)
{
    (void)state;
    const enum shape shapes[] = {RANDOM, EQUAL, SORTED, REVERSE};
    const st_prefix_fn prefixes[] = {NULL, key_prefix, coarse_prefix};
    for (int threads = 1; threads <= 2; threads++) {
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            for (int p = 0; p < 3; p++) {
                /* 64 KiB parcels hold ~680 records a slot: many runs. */
                st_sort_stats st = check_shape(shapes[i], 20000, 64 << 10, threads, prefixes[p]);
                assert_true(st.runs >= 20000 / 1400);
            }
        }
        /* One record more than a slot: the smallest spill. */
        size_t slot = (64 << 10) / (size_t)threads / (RS + 32);
        assert_true(check_shape(RANDOM, slot + 1, 64 << 10, threads, NULL).runs >= 1);
    }
}

static void many_runs_need_merge_passes(void **state)
{
    (void)state;
    /* 128 KiB parcels: a fan-in of 2 runs, so 200 runs take several passes. */
    st_sort_stats st = check_shape(RANDOM, 200 * 2730, 128 << 10, 1, key_prefix);
    assert_true(st.runs >= 199);
    assert_true(st.merge_passes >= 6);
    st = check_shape(REVERSE, 100000, 128 << 10, 2, NULL);
    assert_true(st.merge_passes >= 1);
}

/* Streams two text files and compares them. */
static void assert_same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
    assert_non_null(fa);
    assert_non_null(fb);
    static char ba[1 << 16], bb[1 << 16];
    size_t na, nb;
    do {
        na = fread(ba, 1, sizeof ba, fa);
        nb = fread(bb, 1, sizeof bb, fb);
        assert_int_equal(na, nb);
        assert_memory_equal(ba, bb, na);
    } while (na > 0);
    fclose(fa);
    fclose(fb);
}

static void write_rec(FILE *f, const unsigned char *rec)
{
    fprintf(f, "%016llx %016llx\n", (unsigned long long)get_be(rec),
            (unsigned long long)get_be(rec + 8));
}

/* Three million 16-byte records (48 MB) through 1 MiB parcels equal GNU
 * sort's stable sort of the same records written as text. */
static void equals_gnu_sort(void **state)
{
    (void)state;
    const size_t n = 3000000;
    char in[PATH_MAX + 16], want[PATH_MAX + 16], got[PATH_MAX + 16], cmd[4 * PATH_MAX];
    snprintf(in, sizeof in, "%s/in.txt", tmp);
    snprintf(want, sizeof want, "%s/want.txt", tmp);
    snprintf(got, sizeof got, "%s/got.txt", tmp);
    const st_prefix_fn prefixes[] = {NULL, key_prefix};
    for (int v = 0; v < 2; v++) {
        rng = 2463534242ULL;
        st_err err = {0};
        st_sort_opts o = {.parcel_bytes = 1 << 20, .tmpdir = tmp, .prefix = prefixes[v],
                          .threads = 2 - v};
        st_sorter *s = st_sorter_new(RS, key_cmp, NULL, &o, &err);
        assert_non_null(s);
        FILE *f = v == 0 ? fopen(in, "w") : NULL;
        for (size_t i = 0; i < n; i++) {
            unsigned char rec[RS];
            shaped_rec(rec, RANDOM, i, n);
            if (f)
                write_rec(f, rec);
            assert_int_equal(st_sorter_add(s, rec, &err), 0);
        }
        if (f) {
            assert_int_equal(fclose(f), 0);
            snprintf(cmd, sizeof cmd, "LC_ALL=C sort -s -k1,1 -S 64M -T %s %s > %s", tmp, in,
                     want);
            assert_int_equal(system(cmd), 0);
        }
        assert_int_equal(st_sorter_finish(s, &err), 0);
        f = fopen(got, "w");
        const void *rec;
        int rc;
        while ((rc = st_sorter_next(s, &rec, &err)) == 1)
            write_rec(f, rec);
        assert_int_equal(rc, 0);
        assert_int_equal(fclose(f), 0);
        st_sort_stats st;
        st_sorter_stats(s, &st);
        assert_true(st.runs > 40);
        st_sorter_free(s);
        assert_same_file(want, got);
        assert_int_equal(tmp_count(tmp, NULL), 3); /* in, want, got: no runs left */
    }
}

/* Adds n random records then finishes; returns the first failure's rc. */
static int run_until_error(st_sorter *s, size_t n, st_err *err)
{
    unsigned char rec[RS];
    for (size_t i = 0; i < n; i++) {
        shaped_rec(rec, RANDOM, i, n);
        if (st_sorter_add(s, rec, err) < 0)
            return -1;
    }
    if (st_sorter_finish(s, err) < 0)
        return -1;
    const void *p;
    int rc;
    while ((rc = st_sorter_next(s, &p, err)) == 1)
        ;
    return rc;
}

static void io_errors_name_the_file_and_leave_nothing(void **state)
{
    (void)state;
    const struct {
        st_sys_op op;
        unsigned long nth;
        int errnum;
    } faults[] = {
        {ST_SYS_WRITE, 1, ENOSPC}, {ST_SYS_WRITE, 7, EIO}, {ST_SYS_OPEN, 3, EMFILE},
        {ST_SYS_READ, 1, EIO},     {ST_SYS_READ, 40, EIO},
    };
    for (size_t f = 0; f < sizeof faults / sizeof *faults; f++) {
        for (int threads = 1; threads <= 2; threads++) {
            st_err err = {0};
            st_sort_opts o = {.parcel_bytes = 64 << 10, .tmpdir = tmp, .threads = threads};
            st_sorter *s = st_sorter_new(RS, key_cmp, NULL, &o, &err);
            assert_non_null(s);
            st_sys_fail_after(faults[f].op, faults[f].nth, faults[f].errnum);
            assert_int_equal(run_until_error(s, 50000, &err), -1);
            assert_int_equal(err.code, ST_EIO);
            assert_non_null(strstr(err.msg, tmp));
            assert_non_null(strstr(err.msg, "/run-"));
            assert_non_null(strstr(err.msg, strerror(faults[f].errnum)));
            /* Cleaned up at the error, before free; the error repeats. */
            assert_int_equal(tmp_count(tmp, NULL), 0);
            st_err again = {0};
            assert_int_equal(st_sorter_finish(s, &again), -1);
            assert_string_equal(again.msg, err.msg);
            st_sorter_free(s);
            st_sys_fail_reset();
            int ndirs;
            assert_int_equal(tmp_count(tmp, &ndirs), 0);
            assert_int_equal(ndirs, 0);
        }
    }
}

static void truncated_run_is_detected(void **state)
{
    (void)state;
    st_err err = {0};
    /* Four runs, each longer than its quarter-parcel merge buffer. */
    size_t parcel = 256 << 10, cap = parcel / (RS + 32);
    st_sort_opts o = {.parcel_bytes = parcel, .tmpdir = tmp, .threads = 1};
    st_sorter *s = st_sorter_new(RS, key_cmp, NULL, &o, &err);
    assert_non_null(s);
    unsigned char rec[RS];
    for (size_t i = 0; i < 4 * cap; i++) {
        shaped_rec(rec, RANDOM, i, 4 * cap);
        assert_int_equal(st_sorter_add(s, rec, &err), 0);
    }
    assert_int_equal(st_sorter_finish(s, &err), 0);
    char cmd[2 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "for f in %s/comb-sort-*/run-*; do truncate -s 40000 $f; done",
             tmp);
    assert_int_equal(system(cmd), 0);
    const void *p;
    int rc;
    while ((rc = st_sorter_next(s, &p, &err)) == 1)
        ;
    assert_int_equal(rc, -1);
    assert_int_equal(err.code, ST_ECORRUPT);
    assert_non_null(strstr(err.msg, "is truncated"));
    assert_non_null(strstr(err.msg, "/run-"));
    st_sorter_free(s);
    assert_int_equal(tmp_count(tmp, NULL), 0);
}

/* Makes TMP/name holding one run file. */
static void leftover(const char *name)
{
    char path[sizeof tmp + 256];
    assert_true(snprintf(path, sizeof path - 16, "%s/%s", tmp, name) < (int)sizeof path - 16);
    assert_int_equal(mkdir(path, 0700), 0);
    strcat(path, "/run-000000");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
}

static void a_dead_process_leftovers_are_swept(void **state)
{
    (void)state;
    char host[64] = "", name[3][100];
    assert_int_equal(gethostname(host, sizeof host - 1), 0);
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    assert_true(dead > 0);
    waitpid(dead, NULL, 0);
    snprintf(name[0], sizeof name[0], "comb-sort-%d@%s-abc123", (int)dead, host);      /* gone */
    snprintf(name[1], sizeof name[1], "comb-sort-%d@%s-abc123", (int)getppid(), host); /* alive */
    snprintf(name[2], sizeof name[2], "comb-sort-%d@other.host-abc123", (int)dead);    /* elsewhere */
    for (int i = 0; i < 3; i++)
        leftover(name[i]);
    st_err err = {0};
    st_sort_opts o = {.parcel_bytes = 64 << 10, .tmpdir = tmp, .threads = 1};
    st_sorter *s = st_sorter_new(RS, key_cmp, NULL, &o, &err);
    assert_non_null(s);
    assert_int_equal(run_until_error(s, 20000, &err), 0);
    st_sorter_free(s);
    char path[sizeof tmp + sizeof name];
    struct stat sb;
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp, name[i]);
        assert_int_equal(stat(path, &sb) == 0, i != 0);
    }
    snprintf(path, sizeof path, "rm -rf %s/comb-sort-*", tmp);
    assert_int_equal(system(path), 0);
}

static void allocation_failures_are_clean(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    int succeeded = 0;
    for (unsigned long nth = 1; !succeeded; nth++) {
        for (int threads = 1; threads <= 2; threads++) {
            st_err err = {0};
            st_sort_opts o = {.parcel_bytes = 128 << 10, .tmpdir = tmp, .threads = threads};
            mem_fail_after(nth);
            st_sorter *s = st_sorter_new(RS, key_cmp, NULL, &o, &err);
            int rc = s ? run_until_error(s, 20000, &err) : -1;
            mem_fail_after(0);
            if (rc == 0)
                succeeded = threads == 2;
            else {
                assert_int_equal(err.code, ST_ENOMEM);
                assert_non_null(strstr(err.msg, "out of memory"));
            }
            st_sorter_free(s);
            assert_int_equal(mem_in_use(), base);
            assert_int_equal(tmp_count(tmp, NULL), 0);
        }
    }
}

static void bad_arguments_and_misuse(void **state)
{
    (void)state;
    st_err err = {0};
    assert_null(st_sorter_new(0, key_cmp, NULL, NULL, &err));
    assert_int_equal(err.code, ST_EINPUT);
    st_sort_opts o = {.parcel_bytes = 4096, .tmpdir = tmp};
    assert_null(st_sorter_new(1000, key_cmp, NULL, &o, &err));
    assert_non_null(strstr(err.msg, "too small"));
    o.tmpdir = "/nonexistent/dir";
    o.parcel_bytes = 64 << 10;
    st_sorter *s = st_sorter_new(RS, key_cmp, NULL, &o, &err);
    assert_non_null(s);
    assert_int_equal(run_until_error(s, 5000, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/dir"));
    st_sorter_free(s);

    o.tmpdir = tmp;
    s = st_sorter_new(RS, key_cmp, NULL, &o, &err);
    const void *p;
    assert_int_equal(st_sorter_next(s, &p, &err), -1);
    assert_non_null(strstr(err.msg, "out of turn"));
    st_sorter_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(edge_cases_in_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(edge_cases_spilled, setup, teardown),
        cmocka_unit_test_setup_teardown(many_runs_need_merge_passes, setup, teardown),
        cmocka_unit_test_setup_teardown(equals_gnu_sort, setup, teardown),
        cmocka_unit_test_setup_teardown(io_errors_name_the_file_and_leave_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(truncated_run_is_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(allocation_failures_are_clean, setup, teardown),
        cmocka_unit_test_setup_teardown(a_dead_process_leftovers_are_swept, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_arguments_and_misuse, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
