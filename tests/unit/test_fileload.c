/* test_fileload: tags in random order come out of a tagset file grouped into
 * tagsets in key order, tags in the order added, the last record's tagset
 * fields; bad values are refused and a failed write leaves the old file;
 * without tag fields every record is a tagset. */
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

#include "store/fileload.h"
#include "store/sysio.h"
#include "store/mem.h"
#include "store/sysio.h"
#include "tests/unit/tmpdir.h"
#include "tests/unit/xorshift.h"

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
static void add_random(st_fileload *l, uint32_t n, uint32_t base)
{
    st_err err;
    for (uint32_t i = 0; i < n; i++) {
        unsigned char row[9], tag[4];
        uint32_t k = (uint32_t)(xorshift(&rng) % NKEYS), s = base + i, v = base + i;
        bool has_tag = xorshift(&rng) % 10 != 0;
        memcpy(row, &k, 4);
        memcpy(row + 4, &s, 4);
        row[8] = 1;
        memcpy(tag, &v, 4);
        assert_int_equal(st_fileload_add(l, row, has_tag ? tag : NULL, &err), 0);
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

/* The schema of text, and a file name in the test's directory. */
static st_schema *prepare(const char *text, const char *name, char path[PATH_MAX + 16])
{
    st_err err;
    st_schema *s = st_schema_parse(text, strlen(text), 1, 1, &err);
    assert_non_null(s);
    snprintf(path, PATH_MAX + 16, "%s/%s", tmp, name);
    return s;
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
    char path[PATH_MAX + 16];
    st_schema *s = prepare(schema_text, "out.ts", path);
    st_fileload_opts o;
    st_fileload_opts_default(&o);
    o.sort.parcel_bytes = 64 << 10; /* many runs */
    o.sort.tmpdir = tmp;
    o.write.block_size = 4096;      /* many blocks */
    st_fileload *l = st_fileload_file(path, s, &o, &err);
    assert_non_null(l);
    add_random(l, 20000, 0);
    st_fileload_stats st;
    assert_int_equal(st_fileload_finish(l, &st, &err), 0);
    st_fileload_free(l);
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
    char path[PATH_MAX + 16];
    st_schema *s = prepare(schema_text, "out.ts", path);
    st_fileload *l = st_fileload_file(path, s, NULL, &err);
    add_random(l, 3000, 0);
    assert_int_equal(st_fileload_finish(l, NULL, &err), 0);
    st_fileload_free(l);
    /* A bad bool is refused at add; a write error at finish keeps the file. */
    l = st_fileload_file(path, s, NULL, &err);
    unsigned char row[9] = {0};
    row[8] = 2;
    assert_int_equal(st_fileload_add(l, row, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "out.ts: record 1: "));
    assert_non_null(strstr(err.msg, "bool"));
    row[8] = 1;
    assert_int_equal(st_fileload_add(l, row, NULL, &err), 0);
    st_sys_fail_after(ST_SYS_WRITE, 1, 5 /* EIO */);
    assert_int_equal(st_fileload_finish(l, NULL, &err), -1);
    st_sys_fail_reset();
    st_fileload_free(l);
    uint32_t last = UINT32_MAX;
    assert_int_equal(check_file(path, &last), npresent());
    st_schema_free(s);
}

/* As in a datastore, records of a schema without tag fields are tagsets of
 * their own, equal keys in the order added; a tag for one is refused. */
static void without_tag_fields_each_record_is_a_tagset(void **state)
{
    (void)state;
    static const char text[] = "key k: u32; tagset s: u32";
    st_err err;
    char path[PATH_MAX + 16];
    st_schema *s = prepare(text, "plain.ts", path);
    st_fileload *l = st_fileload_file(path, s, NULL, &err);
    assert_non_null(l);
    const uint32_t rows[][2] = {{9, 0}, {4, 1}, {9, 2}, {4, 3}, {1, 4}};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(st_fileload_add(l, rows[i], NULL, &err), 0);
    uint32_t tag = 0;
    assert_int_equal(st_fileload_add(l, rows[0], &tag, &err), -1);
    assert_non_null(strstr(err.msg, "plain.ts: record 6: a tag, but the schema has no tag fields"));
    st_fileload_stats st;
    assert_int_equal(st_fileload_finish(l, &st, &err), 0);
    st_fileload_free(l);
    assert_int_equal(st.records, 5);
    assert_int_equal(st.tagsets, 5);
    assert_int_equal(st.tags, 0);
    const uint32_t expected[][2] = {{1, 4}, {4, 1}, {4, 3}, {9, 0}, {9, 2}};
    st_reader *r = st_reader_open(path, NULL, &err);
    assert_non_null(r);
    const st_batch *b;
    uint32_t n = 0;
    while (st_reader_next(r, &b, &err) == 1)
        for (uint32_t t = 0; t < b->ntagsets; t++, n++) {
            assert_true(n < 5);
            assert_memory_equal((char *)b->cols[0] + 4 * t, &expected[n][0], 4);
            assert_memory_equal((char *)b->cols[1] + 4 * t, &expected[n][1], 4);
        }
    assert_int_equal(n, 5);
    st_reader_close(r);
    st_schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(file_groups_tags_by_key, setup, teardown),
        cmocka_unit_test_setup_teardown(failures_keep_the_old_file, setup, teardown),
        cmocka_unit_test_setup_teardown(without_tag_fields_each_record_is_a_tagset, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
