/* test_fieldtext: every text form a field value may take, and every error,
 * with its wording. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "store/fieldtext.h"
#include "store/mem.h"

static st_schema *schema;

static int setup(void **state)
{
    (void)state;
    static const char text[] =
        "key k: i64\n"
        "tagset u8: u8; tagset u16: u16; tagset u32: u32; tagset u64: u64\n"
        "tagset i8: i8; tagset i16: i16; tagset i32: i32; tagset i64: i64\n"
        "tagset f32: f32; tagset f64: f64; tagset b: bool; tagset t: time\n"
        "tagset e: enum(open, billed, closed); tagset c: char[4]\n";
    st_err err;
    schema = st_schema_parse(text, sizeof text - 1, 1, 1, &err);
    return schema ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    st_schema_free(schema);
    return 0;
}

static const st_field *field(const char *name)
{
    int i = st_schema_find(schema, name, strlen(name));
    assert_true(i >= 0);
    return &schema->fields[i];
}

/* text (len: -1 for strlen) parses as field name's value printed as want. */
static void ok_n(const char *name, const char *text, int len, const char *want)
{
    const st_field *f = field(name);
    unsigned char out[8];
    char got[64];
    st_err err = {0};
    size_t n = len < 0 ? strlen(text) : (size_t)len;
    if (st_fieldtext_parse(f, text, n, out, NULL, &err) != 0)
        fail_msg("%s '%s': %s", name, text, err.msg);
    st_field_format(f, out, got, sizeof got);
    if (strcmp(got, want))
        fail_msg("%s '%s': got %s, want %s", name, text, got, want);
}

static void ok(const char *name, const char *text, const char *want) { ok_n(name, text, -1, want); }

/* text is refused for field name with the message "field 'NAME': " + want. */
static void bad_n(const char *name, const char *text, int len, const char *want)
{
    const st_field *f = field(name);
    unsigned char out[8];
    char full[600];
    st_err err = {0};
    size_t n = len < 0 ? strlen(text) : (size_t)len;
    if (st_fieldtext_parse(f, text, n, out, NULL, &err) == 0)
        fail_msg("%s '%s' was accepted", name, text);
    assert_int_equal(err.code, ST_EINPUT);
    snprintf(full, sizeof full, "field '%s': %s", name, want);
    if (strcmp(err.msg, full))
        fail_msg("%s '%s': got \"%s\", want \"%s\"", name, text, err.msg, full);
}

static void bad(const char *name, const char *text, const char *want) { bad_n(name, text, -1, want); }

static void integers_in_their_whole_range(void **state)
{
    (void)state;
    ok("u8", "0", "0");
    ok("u8", "255", "255");
    ok("u8", "+7", "7");
    ok("i32", " -3\t", "-3");      /* blanks around a number are not part of it */
    ok("u8", "007", "7");
    ok("u8", "-0", "0");
    ok("u16", "65535", "65535");
    ok("u32", "4294967295", "4294967295");
    ok("u64", "9223372036854775808", "9223372036854775808");   /* above the comb ints */
    ok("u64", "18446744073709551615", "18446744073709551615");
    ok("i8", "-128", "-128");
    ok("i8", "127", "127");
    ok("i16", "-32768", "-32768");
    ok("i32", "2147483647", "2147483647");
    ok("i64", "-9223372036854775808", "-9223372036854775808");
    ok("i64", "9223372036854775807", "9223372036854775807");
    ok("k", "-5", "-5");
    ok_n("u32", "12345", 3, "123");   /* the span, not the string */
}

static void integers_refused(void **state)
{
    (void)state;
    bad("u8", "256", "'256' is beyond the range of u8");
    bad("u8", "-1", "'-1' is beyond the range of u8");
    bad("u16", "65536", "'65536' is beyond the range of u16");
    bad("u32", "4294967296", "'4294967296' is beyond the range of u32");
    bad("u64", "18446744073709551616", "'18446744073709551616' is beyond the range of u64");
    bad("u64", "-1", "'-1' is beyond the range of u64");
    bad("i8", "-129", "'-129' is beyond the range of i8");
    bad("i8", "128", "'128' is beyond the range of i8");
    bad("i64", "9223372036854775808", "'9223372036854775808' is beyond the range of i64");
    bad("i64", "-9223372036854775809", "'-9223372036854775809' is beyond the range of i64");
    bad("i64", "123456789012345678901234567890",
        "'123456789012345678901234567890' is beyond the range of i64");
    static const char *const not_ints[] = {"5 5", "0x10", "1.0", "1e3", "+", "-", "--1", "+-1",
                                           "1_000", "five", "5\t5"};
    char want[64];
    for (size_t i = 0; i < sizeof not_ints / sizeof not_ints[0]; i++) {
        snprintf(want, sizeof want, "'%s' is not an integer", not_ints[i][1] == '\t' ? "5\\t5" : not_ints[i]);
        bad("i32", not_ints[i], want);
    }
    bad_n("u8", "1\0002", 3, "'1\\x002' is not an integer");
}

static void floats_and_their_range(void **state)
{
    (void)state;
    ok("f32", "0.25", "0.25");
    ok("f32", "-2.5e3", "-2500");
    ok("f32", "+1", "1");
    ok("f32", "0x1p-4", "0.0625");
    ok("f32", ".5", "0.5");
    ok("f32", "inf", "inf");
    ok("f32", "-inf", "-inf");
    ok("f32", "nan", "nan");
    ok("f32", "3.4028235e38", "3.40282347e+38");   /* rounds down to the largest f32 */
    ok("f32", "1e-40", "9.9999461e-41");          /* a subnormal */
    ok("f32", "1e-50", "0");                       /* below the subnormals: 0, not an error */
    ok("f32", "0.1", "0.100000001");               /* rounded once, as an f32 */
    ok("f64", "1e308", "1e+308");
    ok("f64", "1e-400", "0");
    ok("f64", "-nan", "-nan");
    ok("f64", "Infinity", "inf");
    ok("f64", "0.1", "0.10000000000000001");
    /* text longer than the parser's stack copy */
    char longer[300] = "0.";
    memset(longer + 2, '0', 250);
    strcpy(longer + 252, "1");
    ok("f64", longer, "1e-251");
}

static void floats_refused(void **state)
{
    (void)state;
    bad("f32", "1e39", "'1e39' is beyond the range of f32");
    bad("f32", "3.5e38", "'3.5e38' is beyond the range of f32");
    bad("f32", "-1e39", "'-1e39' is beyond the range of f32");
    bad("f64", "1e309", "'1e309' is beyond the range of f64");
    bad("f64", "-1e999", "'-1e999' is beyond the range of f64");
    ok("f64", " 1", "1");
    ok("f64", "1.5\t ", "1.5");
    static const char *const not_numbers[] = {"1 5", "1,5", "abc", "1.5.", "e5", "--1", "0x"};
    char want[64];
    for (size_t i = 0; i < sizeof not_numbers / sizeof not_numbers[0]; i++) {
        snprintf(want, sizeof want, "'%s' is not a number", not_numbers[i]);
        bad("f64", not_numbers[i], want);
    }
    bad_n("f32", "1.5\0", 4, "'1.5\\x00' is not a number");
    char longer[300];
    memset(longer, '1', 299);
    longer[299] = 0;
    longer[150] = 'x';
    const st_field *f = field("f64");
    unsigned char out[8];
    st_err err;
    assert_int_equal(st_fieldtext_parse(f, longer, 299, out, NULL, &err), -1);
    assert_int_equal(err.code, ST_EINPUT);
    assert_non_null(strstr(err.msg, "...' is not a number"));
    mem_fail_after(1);
    assert_int_equal(st_fieldtext_parse(f, longer, 299, out, NULL, &err), -1);
    mem_fail_after(0);
    assert_int_equal(err.code, ST_ENOMEM);
}

static void bools(void **state)
{
    (void)state;
    ok("b", "true", "true");
    ok("b", "1", "true");
    ok("b", "false", "false");
    ok("b", "0", "false");
    ok("b", " true ", "true");
    static const char *const no[] = {"TRUE", "True", "yes", "2", "tr ue", "t", "01"};
    char want[64];
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        snprintf(want, sizeof want, "'%s' is not true, false, 1 or 0", no[i]);
        bad("b", no[i], want);
    }
}

static void times_in_every_form(void **state)
{
    (void)state;
    ok("t", "2026-12-02", "2026-12-02T00:00:00Z");
    ok("t", "2026-12-02Z", "2026-12-02T00:00:00Z");
    ok("t", "2026-12-02T13:05", "2026-12-02T13:05:00Z");
    ok("t", "2026-12-02T13:05Z", "2026-12-02T13:05:00Z");
    ok("t", "2026-12-02T13:05:07", "2026-12-02T13:05:07Z");
    ok("t", "2026-12-02T13:05:07Z", "2026-12-02T13:05:07Z");
    ok("t", "2026-12-02 13:05", "2026-12-02T13:05:00Z");
    ok("t", "2026-12-02 13:05:07Z", "2026-12-02T13:05:07Z");
    ok("t", "2000-02-29", "2000-02-29T00:00:00Z");
    ok("t", "+10000-01-01T00:00:00Z", "+10000-01-01T00:00:00Z");   /* as st_time_format writes */
    ok("t", "-0001-12-31T23:59:59Z", "-0001-12-31T23:59:59Z");
    ok("t", "-0001-12-31", "-0001-12-31T00:00:00Z");
    ok("t", "+292277026596-12-04T15:30:07Z", "+292277026596-12-04T15:30:07Z");
    /* integer seconds, and 8 or 14 digits are seconds too, not a date */
    ok("t", "1796216700", "2026-12-02T13:05:00Z");
    ok("t", "-1", "1969-12-31T23:59:59Z");
    ok("t", "20261202", "1970-08-23T12:06:42Z");
    ok("t", "-9223372036854775808", "-292277022657-01-27T08:29:52Z");
}

static void times_refused(void **state)
{
    (void)state;
    static const char *const no[] = {
        "2026-13-02", "2026-00-02", "2026-12-00", "2026-12-32", "2026-02-29", "1900-02-29",
        "2026-12-02T24:00", "2026-12-02T13:60", "2026-12-02T13:05:60",
        "2026-12-02T13:05:00.5",       /* fractional seconds: a time holds whole ones */
        "2026-12-02T13:05:00+01:00",   /* zones: UTC only */
        "2026-12-02T13:05:00ZZ", "2026-12-02t13:05", "2026-12-02T13:05z", "26-12-02", "12026-12-02",
        "2026-12-2", "2026-12-02T", "2026-12-02T13", "2026-12-02T13:5", "2026-12-02 T13:05",
        "2026- 12-02", "2026-12-02  13:05", "2026/12/02", "+292277026596-12-04T15:30:08Z",
        "-292277022657-01-27T08:29:51Z", "1.5", "noon", "0x10",
    };
    char want[128];
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        snprintf(want, sizeof want, "'%s' is not a time like 2026-12-02T13:05:00Z or seconds since 1970",
                 no[i]);
        bad("t", no[i], want);
    }
    bad("t", "9223372036854775808", "'9223372036854775808' is beyond the range of time");
    int64_t t = 7;
    assert_int_equal(st_fieldtext_time("2026-12-02", 10, &t), 0);
    assert_true(t == 1796169600);
    assert_int_equal(st_fieldtext_time("1796216700", 10, &t), -1);   /* seconds are a field's form */
    assert_int_equal(st_fieldtext_time("", 0, &t), -1);
    assert_int_equal(st_fieldtext_time("2026-12-02T13:05:00Z", 10, &t), 0);   /* the span */
    assert_true(t == 1796169600);
}

/* The compact form is checked as strictly as the ISO one; it is no field's form. */
static void compact_times(void **state)
{
    (void)state;
    int64_t t = 7;
    assert_int_equal(st_fieldtext_compact_time("20261202130500", 14, &t), 0);
    assert_true(t == 1796216700);
    assert_int_equal(st_fieldtext_compact_time("20261202", 8, &t), 0);
    assert_true(t == 1796169600);
    assert_int_equal(st_fieldtext_compact_time("20240229235959", 14, &t), 0);
    assert_true(t == 1709251199);
    assert_int_equal(st_fieldtext_compact_time("19691231235959", 14, &t), 0);
    assert_true(t == -1);
    static const char *const no[] = {
        "20230229000000", "20261301000000", "20261200000000", "20261131000000",
        "20261202240000", "20261202126000", "20261202120060", "2026120213050",
        "202612021305000", "2026120", "2026-12-02", "+2026120213050", " 20261202130500",
        "2026120213050x", "",
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        assert_int_equal(st_fieldtext_compact_time(no[i], strlen(no[i]), &t), -1);
    assert_true(t == -1);
    assert_int_equal(st_fieldtext_time("20261202130500", 14, &t), -1);   /* not a field's */
}

static const char *hint_open(const char *w, size_t n, const char *const *cands, size_t ncands)
{
    (void)w, (void)n;
    assert_int_equal(ncands, 3);
    return cands[0];
}

static void enums_and_chars(void **state)
{
    (void)state;
    ok("e", "open", "open");
    ok("e", "closed", "closed");
    bad("e", "Open", "'Open' is not one of its symbols");
    bad("e", "1", "'1' is not one of its symbols");
    bad("e", "open ", "'open ' is not one of its symbols");
    const st_field *f = field("e");
    unsigned char out[1];
    st_err err;
    assert_int_equal(st_fieldtext_parse(f, "opne", 4, out, hint_open, &err), -1);
    assert_string_equal(err.msg, "field 'e': 'opne' is not one of its symbols (did you mean 'open'?)");
    ok("c", "abcd", "abcd");
    ok("c", "a b", "a b");
    ok("c", " ", " ");
    ok("c", "a\tb", "a\tb");
    bad("c", "abcde", "'abcde' is longer than char[4]");
    bad_n("c", "a\0b", 3, "'a\\x00b' holds a NUL byte, which char[4] cannot");
}

static void empty_is_zero_but_not_for_a_key_or_enum(void **state)
{
    (void)state;
    static const struct {
        const char *name, *zero;
    } zeros[] = {
        {"u8", "0"}, {"u64", "0"}, {"i8", "0"}, {"i64", "0"}, {"f32", "0"}, {"f64", "0"},
        {"b", "false"}, {"t", "1970-01-01T00:00:00Z"}, {"c", ""},
    };
    for (size_t i = 0; i < sizeof zeros / sizeof zeros[0]; i++)
        ok(zeros[i].name, "", zeros[i].zero);
    const st_field *f = field("k");
    unsigned char out[8];
    st_err err;
    assert_int_equal(st_fieldtext_parse(f, "", 0, out, NULL, &err), -1);
    assert_int_equal(err.code, ST_EINPUT);
    assert_string_equal(err.msg, "field 'k': a key field cannot be empty");
    /* an empty enum was its first symbol: data that looked right */
    assert_int_equal(st_fieldtext_parse(field("e"), "", 0, out, NULL, &err), -1);
    assert_int_equal(err.code, ST_EINPUT);
    assert_string_equal(err.msg, "field 'e': empty, not one of its symbols");
}

static void messages_escape_and_cut_the_text(void **state)
{
    (void)state;
    bad("u8", "two\nlines", "'two\\nlines' is not an integer");
    bad("u8", "\x7f", "'\\x7f' is not an integer");
    char longer[200];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    char want[128];
    snprintf(want, sizeof want, "'%.56s...' is not an integer", longer);
    bad("u8", longer, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(integers_in_their_whole_range),
        cmocka_unit_test(integers_refused),
        cmocka_unit_test(floats_and_their_range),
        cmocka_unit_test(floats_refused),
        cmocka_unit_test(bools),
        cmocka_unit_test(times_in_every_form),
        cmocka_unit_test(times_refused),
        cmocka_unit_test(compact_times),
        cmocka_unit_test(enums_and_chars),
        cmocka_unit_test(empty_is_zero_but_not_for_a_key_or_enum),
        cmocka_unit_test(messages_escape_and_cut_the_text),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
