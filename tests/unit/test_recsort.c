/* test_recsort: the loaders' front end gives back every record it took, by
 * partition then key, ties in the order added; it refuses bad records and
 * goes on, and its I/O and memory failures are clean. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "store/mem.h"
#include "store/record.h"
#include "store/recsort.h"
#include "store/sysio.h"
#include "tests/unit/tmpdir.h"
#include "tests/unit/xorshift.h"

#define N 20000

/* Tagset row: k (4 bytes), s (4), ok (1); tag row: v (4). s and v carry the
 * record's add position, which shows where it went and whether ties kept
 * their order. */
static const char schema_text[] = "key k: u32; tagset s: u32; tagset ok: bool; tag v: u32";
static const char notags_text[] = "key k: u32; tagset s: u32";
static char tmp[PATH_MAX];
static st_schema *S;

/* What record i was added with. */
static uint32_t part_of[N], key_of[N];
static bool tagged[N], seen[N];

static uint64_t rng = 88172645463325252ULL;

static int setup(void **state)
{
    (void)state;
    tmp_make("recsort", tmp);
    st_err err;
    S = st_schema_parse(schema_text, sizeof schema_text - 1, 1, 1, &err);
    return S ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    st_schema_free(S);
    tmp_reset(tmp);
    return 0;
}

static void make_row(unsigned char *row, uint32_t k, uint32_t s, unsigned char ok)
{
    memcpy(row, &k, 4);
    memcpy(row + 4, &s, 4);
    row[8] = ok;
}

/* Adds n records: random partitions except skip (no partition when skip >=
 * nparts), keys spread over the whole u32 range with many ties, one in ten
 * without a tag. */
static int add_records(st_recsort *r, uint32_t n, uint32_t nparts, uint32_t skip, st_err *err)
{
    for (uint32_t i = 0; i < n; i++) {
        unsigned char row[9], tag[4];
        uint32_t p;
        do
            p = (uint32_t)(xorshift(&rng) % nparts);
        while (p == skip);
        part_of[i] = p;
        key_of[i] = (uint32_t)(xorshift(&rng) % 500) * 8000011u;
        tagged[i] = xorshift(&rng) % 10 != 0;
        make_row(row, key_of[i], i, 1);
        memcpy(tag, &i, 4);
        if (st_recsort_add(r, p, row, tagged[i] ? tag : NULL, err) < 0)
            return -1;
    }
    return 0;
}

/* Reads partition p's records, checking each against what was added;
 * returns how many there were. */
static uint32_t check_part(st_recsort *r, uint32_t p)
{
    st_source src = st_recsort_source(r, p);
    const void *rec;
    st_err err;
    uint32_t n = 0, last = UINT32_MAX;
    int rc;
    while ((rc = src.next(src.self, &rec, &err)) == 1) {
        const unsigned char *b = rec;
        uint32_t i;
        memcpy(&i, b + 4, 4);
        assert_true(i < N && !seen[i]);
        seen[i] = true;
        assert_int_equal(part_of[i], p);
        uint32_t k;
        memcpy(&k, b, 4);
        assert_int_equal(k, key_of[i]);
        if (last != UINT32_MAX) /* by key, ties in the order added */
            assert_true(key_of[last] < k || (key_of[last] == k && last < i));
        last = i;
        const unsigned char *tag = st_rec_tag(S, rec);
        assert_int_equal(tag != NULL, tagged[i]);
        if (tag) {
            uint32_t v;
            memcpy(&v, tag, 4);
            assert_int_equal(v, i);
        }
        n++;
    }
    assert_int_equal(rc, 0);
    return n;
}

static st_recsort *new_spilling(uint32_t nparts, int threads)
{
    st_err err;
    st_sort_opts o = {.parcel_bytes = 64 << 10, .tmpdir = tmp, .threads = threads};
    st_recsort *r = st_recsort_new(S, nparts, "test", &o, &err);
    assert_non_null(r);
    return r;
}

/* One partition (the file loader's case), a few, and more than a sort
 * prefix can hold whole keys for: every record comes back once, in order. */
static void records_come_back_by_partition_then_key(void **state)
{
    (void)state;
    const uint32_t nparts[] = {1, 5, 3000};
    size_t base = mem_in_use();
    for (size_t c = 0; c < sizeof nparts / sizeof *nparts; c++) {
        st_err err;
        uint32_t np = nparts[c], skip = np > 1 ? 2 : UINT32_MAX;
        st_recsort *r = new_spilling(np, 2);
        assert_int_equal(add_records(r, N, np, skip, &err), 0);
        assert_int_equal(st_recsort_count(r), N);
        assert_int_equal(st_recsort_finish(r, &err), 0);
        memset(seen, 0, sizeof seen);
        uint32_t total = 0, p, prev = 0;
        bool first = true;
        while (st_recsort_next_part(r, &p, &err) == 1) {
            assert_true(p < np && p != skip && (first || p > prev));
            first = false;
            prev = p;
            total += check_part(r, p);
        }
        assert_int_equal(total, N);
        st_recsort_free(r);
        assert_int_equal(mem_in_use(), base);
        assert_int_equal(tmp_count(tmp, NULL), 0);
    }
}

/* The datastore loader's sweep: every partition in turn, those without
 * records giving empty sources. */
static void every_partition_can_be_visited(void **state)
{
    (void)state;
    st_err err;
    st_recsort *r = new_spilling(5, 1);
    assert_int_equal(add_records(r, N, 5, 2, &err), 0);
    assert_int_equal(st_recsort_finish(r, &err), 0);
    memset(seen, 0, sizeof seen);
    uint32_t total = 0;
    for (uint32_t p = 0; p < 5; p++) {
        uint32_t n = check_part(r, p);
        assert_true(p == 2 ? n == 0 : n > 0);
        total += n;
    }
    assert_int_equal(total, N);
    uint32_t p;
    assert_int_equal(st_recsort_next_part(r, &p, &err), 0);
    st_recsort_free(r);
}

static void bad_records_are_refused_and_it_goes_on(void **state)
{
    (void)state;
    st_err err;
    unsigned char row[9], tag[4] = {0};
    st_recsort *r = st_recsort_new(S, 2, "into x", NULL, &err);
    assert_non_null(r);
    make_row(row, 7, 0, 1);
    assert_int_equal(st_recsort_add(r, 1, row, tag, &err), 0);
    row[8] = 2; /* a bool of 2 */
    assert_int_equal(st_recsort_add(r, 1, row, tag, &err), -1);
    assert_int_equal(err.code, ST_EINPUT);
    assert_non_null(strstr(err.msg, "into x: record 2: "));
    assert_non_null(strstr(err.msg, "bool"));
    row[8] = 0;
    assert_int_equal(st_recsort_add(r, 2, row, tag, &err), -1);
    assert_non_null(strstr(err.msg, "no partition 2 (there are 2)"));
    make_row(row, 3, 1, 0);
    assert_int_equal(st_recsort_add(r, 1, row, NULL, &err), 0);
    assert_int_equal(st_recsort_count(r), 2);
    assert_int_equal(st_recsort_finish(r, &err), 0);
    uint32_t p;
    assert_int_equal(st_recsort_next_part(r, &p, &err), 1);
    assert_int_equal(p, 1);
    st_source src = st_recsort_source(r, 1);
    const void *rec;
    uint32_t keys[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(src.next(src.self, &rec, &err), 1);
        memcpy(&keys[i], rec, 4);
    }
    assert_int_equal(src.next(src.self, &rec, &err), 0);
    assert_int_equal(keys[0], 3);
    assert_int_equal(keys[1], 7);
    st_recsort_free(r);

    /* Without tag fields a tag is refused; no partitions at all is refused. */
    st_schema *nt = st_schema_parse(notags_text, sizeof notags_text - 1, 1, 1, &err);
    assert_non_null(nt);
    assert_null(st_recsort_new(nt, 0, "none", NULL, &err));
    assert_non_null(strstr(err.msg, "no partitions"));
    r = st_recsort_new(nt, 1, "plain", NULL, &err);
    assert_non_null(r);
    assert_int_equal(st_recsort_add(r, 0, row, tag, &err), -1);
    assert_non_null(strstr(err.msg, "plain: record 1: a tag, but the schema has no tag fields"));
    assert_int_equal(st_recsort_add(r, 0, row, NULL, &err), 0);
    st_recsort_free(r);
    st_schema_free(nt);
}

/* A failed spill: the error names its cause, nothing is left on disk, and
 * the recsort refuses more records and its finish. */
static void io_failure_leaves_it_only_to_free(void **state)
{
    (void)state;
    const st_sys_op ops[] = {ST_SYS_WRITE, ST_SYS_READ};
    for (size_t f = 0; f < sizeof ops / sizeof *ops; f++) {
        st_err err = {0};
        st_recsort *r = new_spilling(5, 1);
        st_sys_fail_after(ops[f], 1, EIO);
        int rc = add_records(r, N, 5, 5, &err);
        if (rc == 0)
            rc = st_recsort_finish(r, &err);
        st_sys_fail_reset();
        assert_int_equal(rc, -1);
        assert_int_equal(err.code, ST_EIO);
        assert_non_null(strstr(err.msg, strerror(EIO)));
        unsigned char row[9];
        make_row(row, 1, 1, 1);
        if (ops[f] == ST_SYS_WRITE) { /* failed while adding */
            assert_int_equal(st_recsort_add(r, 0, row, NULL, &err), -1);
            assert_non_null(strstr(err.msg, "test: the loader failed earlier"));
        }
        assert_int_equal(st_recsort_finish(r, &err), -1);
        assert_non_null(strstr(err.msg, "failed earlier"));
        st_recsort_free(r);
        assert_int_equal(tmp_count(tmp, NULL), 0);
    }
}

static void allocation_failures_are_clean(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    int rc = -1;
    for (unsigned long nth = 1; rc < 0; nth++) {
        st_err err = {0};
        st_sort_opts o = {.parcel_bytes = 64 << 10, .tmpdir = tmp, .threads = 1};
        mem_fail_after(nth);
        st_recsort *r = st_recsort_new(S, 3, "test", &o, &err);
        rc = r ? add_records(r, 3000, 3, 3, &err) : -1;
        if (rc == 0)
            rc = st_recsort_finish(r, &err);
        uint32_t p;
        while (rc == 0 && (rc = st_recsort_next_part(r, &p, &err)) == 1) {
            st_source src = st_recsort_source(r, p);
            const void *rec;
            while ((rc = src.next(src.self, &rec, &err)) == 1)
                ;
        }
        mem_fail_after(0);
        if (rc < 0)
            assert_int_equal(err.code, ST_ENOMEM);
        st_recsort_free(r);
        assert_int_equal(mem_in_use(), base);
        assert_int_equal(tmp_count(tmp, NULL), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(records_come_back_by_partition_then_key, setup, teardown),
        cmocka_unit_test_setup_teardown(every_partition_can_be_visited, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_records_are_refused_and_it_goes_on, setup, teardown),
        cmocka_unit_test_setup_teardown(io_failure_leaves_it_only_to_free, setup, teardown),
        cmocka_unit_test_setup_teardown(allocation_failures_are_clean, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
