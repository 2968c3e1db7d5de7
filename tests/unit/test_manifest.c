/* test_manifest: STORE and MANIFEST round-trip, and every damaged byte or
 * truncation of them is refused with a clear error, never a crash. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "store/manifest.h"
#include "store/mem.h"
#include "tests/unit/tmpdir.h"

static char tmp[PATH_MAX], path[PATH_MAX + 16];

static int setup(void **state)
{
    (void)state;
    tmp_make("manifest", tmp);
    snprintf(path, sizeof path, "%s/FILE", tmp);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tmp_reset(tmp);
    return 0;
}

static void put_file(const char *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* A manifest with a few files in odd places and a label. */
static void sample(st_manifest *m)
{
    st_err err;
    assert_int_equal(st_manifest_init(m, 7, 5, &err), 0);
    m->generation = 42;
    snprintf(m->label, sizeof m->label, "cycle 2024-05-01 (rerun)");
    *st_manifest_at(m, 0, 0, ST_TAGS) = (st_mfile){42, 123456789012ULL};
    *st_manifest_at(m, 3, 4, ST_ADDS) = (st_mfile){17, 0};
    *st_manifest_at(m, 6, 4, ST_DELS) = (st_mfile){1, 9};
    *st_manifest_at(m, 6, 4, ST_TAGS) = (st_mfile){40, 77};
}

static void manifests_round_trip(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    st_manifest m, back;
    sample(&m);
    char *text;
    size_t n;
    st_err err;
    assert_int_equal(st_manifest_format(&m, &text, &n, &err), 0);
    assert_non_null(strstr(text, "\np 6 4 40:77 0:0 1:9\n"));
    assert_null(strstr(text, "p 1 ")); /* partitions without files are left out */
    put_file(text, n);
    assert_int_equal(st_manifest_load(&back, -1, path, &err), 0);
    assert_int_equal(back.generation, 42);
    assert_int_equal(back.volumes, 7);
    assert_int_equal(back.partitions, 5);
    assert_string_equal(back.label, m.label);
    assert_memory_equal(back.files, m.files, 7 * 5 * ST_NKINDS * sizeof *m.files);
    st_manifest copy;
    assert_int_equal(st_manifest_copy(&copy, &back, &err), 0);
    assert_memory_equal(copy.files, m.files, 7 * 5 * ST_NKINDS * sizeof *m.files);
    st_manifest_free(&copy);
    st_manifest_free(&back);
    st_manifest_free(&m);
    mem_free(text, n + 1);
    assert_int_equal(mem_in_use(), base);
}

/* Flips every bit of the file, and cuts it at every length: each version
 * must be refused, as damaged or as a newer format. */
static void assert_every_damage_refused(const char *text, size_t n, int manifest)
{
    static char buf[1 << 14];
    assert_true(n < sizeof buf);
    for (size_t i = 0; i <= n; i++) {
        for (int bit = 0; bit < (i < n ? 8 : 1); bit++) {
            memcpy(buf, text, n);
            size_t len = n;
            if (i < n)
                buf[i] = (char)(buf[i] ^ (1 << bit));
            else
                len = 0;
            put_file(buf, len);
            st_err err = {0};
            st_manifest m;
            st_meta meta;
            int rc = manifest ? st_manifest_load(&m, -1, path, &err)
                              : st_meta_load(&meta, path, &err);
            assert_int_equal(rc, -1);
            assert_true(err.code == ST_ECORRUPT || err.code == ST_EVERSION);
            assert_non_null(strstr(err.msg, path));
        }
    }
    for (size_t cut = 0; cut < n; cut++) {
        put_file(text, cut);
        st_err err;
        st_manifest m;
        st_meta meta;
        assert_int_equal(manifest ? st_manifest_load(&m, -1, path, &err)
                                  : st_meta_load(&meta, path, &err),
                         -1);
    }
}

static void damaged_manifests_are_refused(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    st_manifest m;
    sample(&m);
    char *text;
    size_t n;
    st_err err;
    assert_int_equal(st_manifest_format(&m, &text, &n, &err), 0);
    assert_every_damage_refused(text, n, 1);
    mem_free(text, n + 1);
    st_manifest_free(&m);
    assert_int_equal(mem_in_use(), base);
}

static void store_files_round_trip_and_refuse_damage(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    /* The schema is opaque: newlines, a NUL, even a fake checksum line. */
    static const char schema[] = "schema x {\n key a: u8\n}\nxxh3 0000000000000000\n\0tail";
    st_meta m = {.volumes = 93, .partitions = 52, .schema = (char *)schema,
                 .schema_len = sizeof schema - 1};
    snprintf(m.name, sizeof m.name, "gecko calls");
    snprintf(m.partkey, sizeof m.partkey, "onum");
    char *text;
    size_t n;
    st_err err;
    assert_int_equal(st_meta_format(&m, &text, &n, &err), 0);
    put_file(text, n);
    st_meta back;
    assert_int_equal(st_meta_load(&back, path, &err), 0);
    assert_string_equal(back.name, "gecko calls");
    assert_string_equal(back.partkey, "onum");
    assert_int_equal(back.volumes, 93);
    assert_int_equal(back.partitions, 52);
    assert_int_equal(back.schema_len, sizeof schema - 1);
    assert_memory_equal(back.schema, schema, sizeof schema - 1);
    st_meta_free(&back);
    assert_every_damage_refused(text, n, 0);
    mem_free(text, n + 1);
    assert_int_equal(mem_in_use(), base);
}

static void text_fields_are_checked(void **state)
{
    (void)state;
    st_err err;
    assert_int_equal(st_meta_check_text("name", "calls 2024", 0, 1, &err), 0);
    assert_int_equal(st_meta_check_text("partkey", "on um", 0, 0, &err), -1);
    assert_non_null(strstr(err.msg, "space at byte 2"));
    assert_int_equal(st_meta_check_text("name", "", 0, 1, &err), -1);
    assert_int_equal(st_meta_check_text("label", "", 1, 1, &err), 0);
    assert_int_equal(st_meta_check_text("label", "a\tb", 1, 1, &err), -1);
    char big[ST_TEXT_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(st_meta_check_text("name", big, 0, 1, &err), -1);
    assert_int_equal(err.code, ST_EINPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(manifests_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(damaged_manifests_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(store_files_round_trip_and_refuse_damage, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(text_fields_are_checked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
