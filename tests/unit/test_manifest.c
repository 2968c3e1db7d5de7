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
#include <xxhash.h>

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

/* The sample with key ranges of a key of sign: extremes of the key's type
 * and a partition whose tags file holds no rows. */
static void sample_keys(st_manifest *m, char sign)
{
    st_err err;
    sample(m);
    assert_int_equal(st_manifest_keys(m, sign, &err), 0);
    uint64_t top = UINT64_C(1) << 63;
    *st_manifest_keys_at(m, 0, 0) = sign == 'i' ? (st_mkeys){0, top + 5, ST_KEYS_RANGE}
                                                : (st_mkeys){0, UINT64_MAX, ST_KEYS_RANGE};
    *st_manifest_keys_at(m, 6, 4) = (st_mkeys){0, 0, ST_KEYS_NONE};
    *st_manifest_at(m, 2, 1, ST_TAGS) = (st_mfile){41, 5};
    *st_manifest_keys_at(m, 2, 1) = (st_mkeys){top - 3, top - 3, ST_KEYS_RANGE};
    *st_manifest_at(m, 5, 0, ST_TAGS) = (st_mfile){39, 6};  /* unknown: from before ranges */
}

/* Version 2: a keys line and each tags file's range of the partition key
 * (signed or unsigned, to the ends of their types; none for an empty
 * file; left out when unknown) read back as written, and a range that is
 * damaged refused, even with its checksum made good. */
static void key_ranges_round_trip(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    static const char *const lines[2][3] = {
        {"\nkeys i\np 0 0 42:123456789012 0:0 0:0 keys -9223372036854775808 5\n",
         "\np 2 1 41:5 0:0 0:0 keys -3 -3\n", "\np 5 0 39:6 0:0 0:0\n"},
        {"\nkeys u\np 0 0 42:123456789012 0:0 0:0 keys 0 18446744073709551615\n",
         "\np 2 1 41:5 0:0 0:0 keys 9223372036854775805 9223372036854775805\n",
         "\np 5 0 39:6 0:0 0:0\n"}};
    for (int u = 0; u < 2; u++) {
        st_manifest m, back, copy;
        sample_keys(&m, u ? 'u' : 'i');
        char *text;
        size_t n;
        st_err err;
        assert_int_equal(st_manifest_format(&m, &text, &n, &err), 0);
        assert_true(!strncmp(text, "comb-manifest 2\n", 16));
        for (int i = 0; i < 3; i++)
            if (!strstr(text, lines[u][i]))
                fail_msg("no \"%s\" in\n%s", lines[u][i], text);
        assert_non_null(strstr(text, "\np 6 4 40:77 0:0 1:9 keys none\n"));
        put_file(text, n);
        assert_int_equal(st_manifest_load(&back, -1, path, &err), 0);
        assert_int_equal(back.keysign, u ? 'u' : 'i');
        assert_int_equal(st_manifest_copy(&copy, &back, &err), 0);
        for (uint32_t v = 0; v < 7; v++)
            for (uint32_t p = 0; p < 5; p++) {
                const st_mkeys *a = st_manifest_keys_at(&m, v, p), *b = st_manifest_keys_at(&copy, v, p);
                assert_int_equal(a->state, b->state);
                if (a->state == ST_KEYS_RANGE)
                    assert_true(a->lo == b->lo && a->hi == b->hi);
            }
        if (u)
            assert_every_damage_refused(text, n, 1);
        st_manifest_free(&copy);
        st_manifest_free(&back);
        st_manifest_free(&m);
        mem_free(text, n + 1);
    }
    assert_int_equal(mem_in_use(), base);
}

/* Writes good with find replaced by replace and the checksum made good. */
static void put_edited(const char *good, const char *find, const char *replace)
{
    char text[4096];
    const char *at = strstr(good, find);
    assert_non_null(at);
    int len = snprintf(text, sizeof text, "%.*s%s%s", (int)(at - good), good, replace,
                       at + strlen(find));
    len -= 22;
    len += snprintf(text + len, sizeof text - (size_t)len, "xxh3 %016llx\n",
                    (unsigned long long)XXH3_64bits(text, (size_t)len));
    put_file(text, (size_t)len);
}

/* A key range the checksum covers but the parser refuses: with the
 * checksum made good, each is an error naming the file and line. */
static void bad_key_ranges_are_refused(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    st_manifest m;
    sample_keys(&m, 'u');
    char *good;
    size_t n;
    st_err err;
    assert_int_equal(st_manifest_format(&m, &good, &n, &err), 0);
    static const struct {
        const char *find, *replace, *msg;
    } cases[] = {
        {"keys 9223372036854775805 9223372036854775805", "keys 9 8", "low end is above its high end"},
        {"keys 9223372036854775805 9223372036854775805", "keys -1 8", "expected a number"},
        {"keys 9223372036854775805 9223372036854775805", "keys 7", "expected ' '"},
        {"keys 9223372036854775805 9223372036854775805", "keys 7 8 9", "junk after the key range"},
        {"keys 9223372036854775805 9223372036854775805", "keys 18446744073709551616 1", "too large"},
        {"keys 9223372036854775805 9223372036854775805", "key 1 2", "junk after the last file"},
        {"\nkeys u\n", "\nkeys x\n", "keys must be u or i"},
        {"\nkeys u\n", "\n", "expected \"keys\""},
        {"p 6 4 40:77 0:0 1:9 keys none", "p 6 4 0:0 0:0 1:9 keys none", "without a tags file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        put_edited(good, cases[i].find, cases[i].replace);
        st_manifest back;
        assert_int_equal(st_manifest_load(&back, -1, path, &err), -1);
        assert_int_equal(err.code, ST_ECORRUPT);
        assert_non_null(strstr(err.msg, path));
        if (!strstr(err.msg, cases[i].msg) || !strstr(err.msg, "line "))
            fail_msg("case %zu: %s", i, err.msg);
    }
    st_manifest_free(&m);
    mem_free(good, n + 1);
    /* a signed key: no -0, nothing beyond the i64s */
    sample_keys(&m, 'i');
    assert_int_equal(st_manifest_format(&m, &good, &n, &err), 0);
    static const char *const bad_signed[][2] = {
        {"keys -0 -0", "expected a number"},
        {"keys -9223372036854775809 0", "out of range"},
        {"keys 0 9223372036854775808", "out of range"},
    };
    for (size_t i = 0; i < 3; i++) {
        put_edited(good, "keys -3 -3", bad_signed[i][0]);
        st_manifest back;
        assert_int_equal(st_manifest_load(&back, -1, path, &err), -1);
        if (err.code != ST_ECORRUPT || !strstr(err.msg, bad_signed[i][1]))
            fail_msg("signed case %zu: %s", i, err.msg);
    }
    st_manifest_free(&m);
    mem_free(good, n + 1);
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
        cmocka_unit_test_setup_teardown(key_ranges_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_key_ranges_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(store_files_round_trip_and_refuse_damage, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(text_fields_are_checked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
