/* test_group: a group by whose states go by its key's range
 * (vm/query/group.c, range_codes) trusts the files' zone maps for the
 * range: a value outside them fails the query, naming the file as damaged,
 * whichever side and however near, rather than landing in another group
 * (the nil key's, one below the least). The files here are damaged in
 * their footer's zone maps alone, the footer's checksum made again. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "lang/load.h"
#include "store/bytes.h"
#include "tests/unit/tmpdir.h"

/* One VM and one scratch directory for all the tests (each its own files). */
static VM *vm;
static char dir[PATH_MAX];

static int begin_all(void **state)
{
    (void)state;
    tmp_make("group", dir);
    return (vm = vm_new(NULL)) ? 0 : -1;
}

static int end_all(void **state)
{
    (void)state;
    vm_free(vm);
    tmp_reset(dir);
    return 0;
}

/* v's zone map in the files below: order images of 100 and 109 (signed) */
#define V_LO (UINT64_C(100) ^ UINT64_C(1) << 63)
#define V_HI (UINT64_C(109) ^ UINT64_C(1) << 63)

/* Writes NAME.ts in dir: keys id 0..49 (u32, one block), tagset fields v
 * (i64, 100..109) and w (u64, 5..11). */
static void make_file(const char *name)
{
    char src[PATH_MAX + 512];
    snprintf(src, sizeof src,
             "let rows = []\nfor i in 0..50 { push(rows, {id: i, v: 100 + i %% 10, w: 5 + i %% 7}) }\n"
             "load(\"%s/%s.ts\", rows, {schema: schema(\"key id: u32; tagset v: i64; tagset w: u64\")})\n",
             dir, name);
    VModule *m = lc_load_source(vm, src, strlen(src), "<make>", stderr);
    assert_non_null(m);
    assert_int_equal(vm_run_module(vm, m), 0);
}

/* Adds delta to the least value of the zone map [lo, hi] (order images)
 * in NAME.ts's footer, found by its bytes (it must be there once), and
 * makes the footer's checksum again. */
static void shift_zone_min(const char *name, uint64_t lo, uint64_t hi, uint64_t delta)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s.ts", dir, name);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    assert_true(n > 32 && n < sizeof buf);
    /* the trailer (32 bytes) begins with the footer's offset and size */
    uint64_t off = st_get64(buf + n - 32), size = st_get64(buf + n - 24);
    assert_true(off + size + 32 == n && size > 24);
    unsigned char *foot = buf + off, want[16], *zone = NULL;
    st_put64(want, lo);
    st_put64(want + 8, hi);
    for (unsigned char *p = foot; p + 16 <= foot + size - 8; p++)
        if (!memcmp(p, want, 16)) {
            assert_null(zone);
            zone = p;
        }
    assert_non_null(zone);
    st_put64(zone, lo + delta);
    st_put64(foot + size - 8, XXH3_64bits(foot, size - 8));
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Runs `let r = rows(FILE | group by FIELD { n: count() })` over NAME.ts, then
 * check (comb, which raises what it finds wrong): "" when that ran, else
 * the error as vm_print_error puts it (in a static buffer). */
static const char *group_by(const char *name, const char *field, const char *check)
{
    static char text[4096];
    char src[PATH_MAX + 512];
    snprintf(src, sizeof src, "let r = rows(open(\"%s/%s.ts\") | group by %s { n: count() })\n%s\n", dir,
             name, field, check);
    VModule *m = lc_load_source(vm, src, strlen(src), "<query>", stderr);
    assert_non_null(m);
    text[0] = '\0';
    if (vm_run_module(vm, m) == 0)
        return text;
    FILE *f = fmemopen(text, sizeof text - 1, "w");
    assert_non_null(f);
    vm_print_error(vm, f);
    fclose(f);
    return text;
}

static void check_damaged(const char *name, const char *field)
{
    const char *got = group_by(name, field, "");
    if (!strstr(got, "outside the file's zone maps: the file is damaged"))
        fail_msg("group by %s over %s: %s", field, name, got[0] ? got : "no error");
}

/* Sound zone maps: the range path answers (the hash table's answer is the
 * golden tests' business). */
static void sound_file_groups(void **state)
{
    (void)state;
    make_file("ok");
    const char *got = group_by("ok", "v", "if len(r) != 10 || r[0].v != 100 || r[0].n != 5 "
                                          "{ error(\"wrong groups: \" + str(r)) }");
    assert_string_equal(got, "");
}

/* The least value one below the zone map's: code 0 by wrapping, which is
 * the nil key's, unless refused. */
static void value_just_below_the_zone_fails(void **state)
{
    (void)state;
    make_file("v1");
    shift_zone_min("v1", V_LO, V_HI, 1);
    check_damaged("v1", "v");
    make_file("w1");
    shift_zone_min("w1", 5, 11, 1);
    check_damaged("w1", "w");
}

static void value_further_below_the_zone_fails(void **state)
{
    (void)state;
    make_file("v2");
    shift_zone_min("v2", V_LO, V_HI, 2);
    check_damaged("v2", "v");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sound_file_groups),
        cmocka_unit_test(value_just_below_the_zone_fails),
        cmocka_unit_test(value_further_below_the_zone_fails),
    };
    return cmocka_run_group_tests(tests, begin_all, end_all);
}
