/* test_loader: tags in random order come out of a tagset file grouped into
 * tagsets in key order, tags in the order added, the last record's tagset
 * fields; bad values are refused and a failed write leaves the old file. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>

#include "store/loader.h"
#include "store/sysio.h"
#include "store/mem.h"
#include "store/sysio.h"
#include "tests/unit/tmpdir.h"

#define NKEYS 500
#define MAXTAGS 4096

static const char schema_text[] = "key k: u32; tagset s: u32; tagset ok: bool; tag v: u32";
static char tmp[PATH_MAX];

/* What a key's tagset should hold: its tags in order and its last s. */
typedef struct expect {
    uint32_t tags[MAXTAGS];
    uint32_t ntags, s;
    bool present;
} expect;

static expect *want;
static uint64_t rng = 88172645463325252ULL;

static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static int setup(void **state)
{
    (void)state;
    tmp_make("loader", tmp);
    want = mem_calloc(NKEYS, sizeof *want);
    return want ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    mem_free(want, NKEYS * sizeof *want);
    tmp_reset(tmp);
    return 0;
}

/* Adds n records with random keys; about one in ten has no tag. */
static void add_random(st_loader *l, uint32_t n, uint32_t base)
{
    st_err err;
    for (uint32_t i = 0; i < n; i++) {
        unsigned char row[9], tag[4];
        uint32_t k = next_rand() % NKEYS, s = base + i, v = base + i;
        bool has_tag = next_rand() % 10 != 0;
        memcpy(row, &k, 4);
        memcpy(row + 4, &s, 4);
        row[8] = 1;
        memcpy(tag, &v, 4);
        assert_int_equal(st_loader_add(l, row, has_tag ? tag : NULL, &err), 0);
        expect *e = &want[k];
        e->present = true;
        e->s = s;
        if (has_tag && e->ntags < MAXTAGS)
            e->tags[e->ntags++] = v;
    }
}

/* Reads a file's tagsets and checks those against want; returns how many. */
static uint32_t check_file(const char *path, uint32_t *last_key)
{
    st_err err;
    st_reader *r = st_reader_open(path, NULL, &err);
    assert_non_null(r);
    const st_batch *b;
    uint32_t n = 0;
    int rc;
    while ((rc = st_reader_next(r, &b, &err)) == 1) {
        for (uint32_t t = 0; t < b->ntagsets; t++, n++) {
            uint32_t k, s;
            memcpy(&k, (char *)b->cols[0] + 4 * t, 4);
            memcpy(&s, (char *)b->cols[1] + 4 * t, 4);
            assert_true(k < NKEYS && want[k].present);
            assert_true(*last_key == UINT32_MAX || k > *last_key);
            *last_key = k;
            assert_int_equal(s, want[k].s);
            uint32_t lo = b->tag_start[t], hi = b->tag_start[t + 1];
            assert_int_equal(hi - lo, want[k].ntags);
            for (uint32_t i = lo; i < hi; i++) {
                uint32_t v;
                memcpy(&v, (char *)b->cols[3] + 4 * i, 4);
                assert_int_equal(v, want[k].tags[i - lo]);
            }
        }
    }
    assert_int_equal(rc, 0);
    st_reader_close(r);
    return n;
}

static uint32_t npresent(void)
{
    uint32_t n = 0;
    for (int k = 0; k < NKEYS; k++)
        n += want[k].present;
    return n;
}

static void file_groups_tags_by_key(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    st_err err;
    st_schema *s = st_schema_parse(schema_text, sizeof schema_text - 1, 1, 1, &err);
    assert_non_null(s);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/out.ts", tmp);
    st_loader_opts o;
    st_loader_opts_default(&o);
    o.sort.parcel_bytes = 64 << 10; /* many runs */
    o.sort.tmpdir = tmp;
    o.write.block_size = 4096;      /* many blocks */
    st_loader *l = st_loader_file(path, s, &o, &err);
    assert_non_null(l);
    add_random(l, 20000, 0);
    st_loader_stats st;
    assert_int_equal(st_loader_finish(l, &st, &err), 0);
    st_loader_free(l);
    assert_int_equal(st.records, 20000);
    assert_int_equal(st.tagsets, npresent());
    uint32_t last = UINT32_MAX;
    assert_int_equal(check_file(path, &last), npresent());
    st_schema_free(s);
    assert_int_equal(mem_in_use(), base);
}

static void failures_keep_the_old_file(void **state)
{
    (void)state;
    st_err err;
    st_schema *s = st_schema_parse(schema_text, sizeof schema_text - 1, 1, 1, &err);
    assert_non_null(s);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/out.ts", tmp);
    st_loader *l = st_loader_file(path, s, NULL, &err);
    add_random(l, 3000, 0);
    assert_int_equal(st_loader_finish(l, NULL, &err), 0);
    st_loader_free(l);
    /* A bad bool is refused at add; a write error at finish keeps the file. */
    l = st_loader_file(path, s, NULL, &err);
    unsigned char row[9] = {0};
    row[8] = 2;
    assert_int_equal(st_loader_add(l, row, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "bool"));
    row[8] = 1;
    assert_int_equal(st_loader_add(l, row, NULL, &err), 0);
    st_sys_fail_after(ST_SYS_WRITE, 1, 5 /* EIO */);
    assert_int_equal(st_loader_finish(l, NULL, &err), -1);
    st_sys_fail_reset();
    st_loader_free(l);
    uint32_t last = UINT32_MAX;
    assert_int_equal(check_file(path, &last), npresent());
    st_schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(file_groups_tags_by_key, setup, teardown),
        cmocka_unit_test_setup_teardown(failures_keep_the_old_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
