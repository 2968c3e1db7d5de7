/* test_schema: schema text parses, prints back, lays out rows, orders keys. */
#include "config.h"
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "store/fieldtext.h"
#include "store/mem.h"
#include "store/schema.h"
#include "tests/unit/gen_store.h"

static const char calls[] =
    "key onum: u64\n"
    "key ts: time\n"
    "tagset state: enum(open, billed, closed)\n"
    "tag sys: enum(RICS, BILL, SWITCH)\n"
    "tag bsid: u16\n"
    "tag dnum: char[16]\n";

static st_schema *parse(const char *text)
{
    st_err err = {0};
    st_schema *s = st_schema_parse(text, strlen(text), 1, 1, &err);
    if (!s)
        fail_msg("parse failed: %s", err.msg);
    return s;
}

static void parses_the_calls_schema(void **state)
{
    (void)state;
    st_schema *s = parse(calls);
    assert_int_equal(s->nfields, 6);
    assert_int_equal(s->nkeys, 2);
    assert_int_equal(s->nrow, 3);
    assert_int_equal(s->key_size, 16);
    assert_int_equal(s->row_size, 17);
    assert_int_equal(s->tag_size, 19);
    assert_string_equal(s->fields[2].name, "state");
    assert_int_equal(s->fields[2].offset, 16);
    assert_int_equal(s->fields[2].nsyms, 3);
    assert_string_equal(s->fields[2].syms[1], "billed");
    assert_int_equal(s->fields[5].type, ST_CHAR);
    assert_int_equal(s->fields[5].width, 16);
    assert_int_equal(s->fields[5].offset, 3);
    assert_int_equal(st_schema_ncols(s), 7);
    assert_int_equal(st_schema_col(s, 6)->width, 4);
    assert_int_equal(st_schema_col(s, 6)->type, ST_U32);
    assert_ptr_equal(st_schema_col(s, 5), &s->fields[5]);
    assert_true(st_schema_col_is_tag(s, 3));
    assert_false(st_schema_col_is_tag(s, 2));
    assert_false(st_schema_col_is_tag(s, 6));
    assert_int_equal(st_schema_find(s, "bsid", 4), 4);
    assert_int_equal(st_schema_find(s, "nope", 4), -1);
    assert_int_equal(st_field_enum_find(&s->fields[3], "SWITCH", 6), 2);
    size_t len;
    char *text = st_schema_format(s, &len);
    assert_string_equal(text, calls);
    mem_free(text, len + 1);
    st_schema_free(s);
}

static void canonical_order_and_separators(void **state)
{
    (void)state;
    st_schema *s = parse("  tag a: u8; key b: i32 # the key\n\n tagset c: bool;key d: f64;");
    assert_int_equal(s->nkeys, 2);
    assert_string_equal(s->fields[0].name, "b");
    assert_string_equal(s->fields[1].name, "d");
    assert_string_equal(s->fields[2].name, "c");
    assert_string_equal(s->fields[3].name, "a");
    size_t len;
    char *text = st_schema_format(s, &len);
    assert_string_equal(text, "key b: i32\nkey d: f64\ntagset c: bool\ntag a: u8\n");
    mem_free(text, len + 1);
    st_schema_free(s);
}

static void enum_may_wrap_lines(void **state)
{
    (void)state;
    st_schema *s = parse("key k: u8\ntag e: enum(\n  a,   # first\n  b,\n  c,\n)\ntag x: u8\n");
    assert_int_equal(s->fields[1].nsyms, 3);
    assert_int_equal(s->fields[2].offset, 1);
    st_schema_free(s);
}

static void random_schemas_round_trip(void **state)
{
    (void)state;
    gen g = {42};
    for (int i = 0; i < 300; i++) {
        st_schema *s = gen_schema(&g, 40, i % 3);
        size_t len;
        char *text = st_schema_format(s, &len);
        assert_non_null(text);
        st_schema *t = parse(text);
        assert_true(st_schema_equal(s, t));
        size_t len2;
        char *text2 = st_schema_format(t, &len2);
        assert_string_equal(text, text2);
        /* Layout: rows are packed in canonical order. */
        uint32_t row = 0, tag = 0;
        for (uint32_t f = 0; f < s->nfields; f++) {
            uint32_t *off = f < s->nrow ? &row : &tag;
            assert_int_equal(s->fields[f].offset, *off);
            *off += s->fields[f].width;
        }
        assert_int_equal(row, s->row_size);
        assert_int_equal(tag, s->tag_size);
        mem_free(text, len + 1);
        mem_free(text2, len2 + 1);
        st_schema_free(s);
        st_schema_free(t);
    }
}

/* The ATLAS TAG shape: a run/event key and ~200 tagset fields, no tags. */
static void wide_schema_without_tags(void **state)
{
    (void)state;
    char text[16384];
    size_t n = (size_t)snprintf(text, sizeof text, "key run: u32\nkey event: u64\n");
    for (int i = 0; i < 200; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "tagset attr%d: %s\n", i,
                              i % 3 == 0 ? "f32" : i % 3 == 1 ? "i16" : "bool");
    st_schema *s = parse(text);
    assert_int_equal(s->nfields, 202);
    assert_int_equal(s->nrow, 202);
    assert_int_equal(s->tag_size, 0);
    assert_int_equal(st_schema_ncols(s), 202); /* no tag count column */
    assert_int_equal(s->row_size, 12 + 67 * 4 + 67 * 2 + 66 * 1);
    assert_int_equal(s->fields[201].offset, s->row_size - 2); /* attr199: i16 */
    st_schema_free(s);
}

typedef struct bad_case {
    const char *text;
    const char *msg;
} bad_case;

static void errors_name_line_and_column(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        {"key a u8", "1:7: expected ':' after the field name, got 'u8'"},
        {"key a: u8\nkey b: u12", "2:8: expected a type (u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 "
                                  "bool time char[N] enum(...)), got 'u12'"},
        {"key a: u8\nfield b: u8", "2:1: expected 'key', 'tagset' or 'tag' to start a field, got 'field'"},
        {"key a: u8 key b: u8", "1:11: expected end of line or ';' after the field, got 'key'"},
        {"key a: u8\ntag a: u16", "2:5: duplicate field 'a' (first at 1:5)"},
        {"key a: char[0]", "1:13: N in char[N] must be 1 to 4096"},
        {"key a: char[4097]", "1:13: N in char[N] must be 1 to 4096"},
        {"key a: char[99999999999999999999]", "1:13: N in char[N] must be 1 to 4096"},
        {"key a: char[8", "1:14: expected ']' after char[N, got end of schema"},
        {"key a: enum()", "1:13: expected at least one enum symbol, got ')'"},
        {"key a: enum(x, y, x)", "1:19: duplicate enum symbol 'x'"},
        {"key a: enum(x y)", "1:15: expected ',' or ')' in enum, got 'y'"},
        {"key a: enum(x,\n", "2:1: expected an enum symbol, got end of schema"},
        {"key a: enum x", "1:13: expected '(' after 'enum', got 'x'"},
        {"tagset a: u8\ntag b: u8\n", "3:1: schema has no key field (add e.g. 'key id: u64')"},
        {"", "1:1: schema has no key field (add e.g. 'key id: u64')"},
        {"key 9: u8", "1:5: expected a field name, got '9'"},
        {"key a: u8 @", "1:11: expected end of line or ';' after the field, got '@'"},
        {"key a:\x01", "1:7: expected a type (u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 bool time "
                       "char[N] enum(...)), got byte 0x01"},
        {"key aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: u8",
         "1:5: a field name is longer than 64 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        st_err err = {0};
        st_schema *s = st_schema_parse(cases[i].text, strlen(cases[i].text), 1, 1, &err);
        assert_null(s);
        assert_int_equal(err.code, ST_EINPUT);
        assert_string_equal(err.msg, cases[i].msg);
    }
}

static void limits_are_enforced(void **state)
{
    (void)state;
    static char text[64 * 1024];
    size_t n = (size_t)snprintf(text, sizeof text, "key k: enum(");
    for (int i = 0; i < 256; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "s%d,", i);
    snprintf(text + n, sizeof text - n, ")");
    st_err err = {0};
    assert_null(st_schema_parse(text, strlen(text), 1, 1, &err));
    char want[64];
    snprintf(want, sizeof want, "1:%d: enum has more than 255 symbols", (int)(strstr(text, "s255") - text) + 1);
    assert_string_equal(err.msg, want);
    text[n - 6] = ')'; /* cut to 255 symbols: s0 .. s254 */
    text[n - 5] = '\0';
    st_schema *s = parse(text);
    assert_int_equal(s->fields[0].nsyms, 255);
    st_schema_free(s);

    n = 0;
    for (int i = 0; i < ST_MAX_FIELDS + 1; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "key k%d: u8\n", i);
    assert_null(st_schema_parse(text, n, 1, 1, &err));
    assert_string_equal(err.msg, "1025:1: schema has more than 1024 fields");
}

/* The comb language hands over the text between `schema calls {` and `}`. */
static void positions_count_from_the_base(void **state)
{
    (void)state;
    const char *src = "schema calls { key a: u8; key b: q }";
    const char *body = strchr(src, '{') + 1;
    size_t len = (size_t)(strrchr(src, '}') - body);
    st_err err = {0};
    assert_null(st_schema_parse(body, len, 7, (int)(body - src) + 1, &err));
    char want[128];
    snprintf(want, sizeof want, "7:%d: expected a type (u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 "
             "bool time char[N] enum(...)), got 'q'", (int)(strchr(src, 'q') - src) + 1);
    assert_string_equal(err.msg, want);
    const char *two = "key a: u8\n  tag b: x";
    assert_null(st_schema_parse(two, strlen(two), 10, 20, &err));
    assert_string_equal(err.msg, "11:10: expected a type (u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 "
                                 "bool time char[N] enum(...)), got 'x'");
}

static void allocation_failures_are_reported(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    int failures = 0;
    for (unsigned long n = 1;; n++) {
        st_err err = {0};
        mem_fail_after(n);
        st_schema *s = st_schema_parse(calls, strlen(calls), 1, 1, &err);
        mem_fail_after(0);
        if (s) {
            st_schema_free(s);
            break;
        }
        assert_int_equal(err.code, ST_ENOMEM);
        assert_int_equal(mem_in_use(), base);
        failures++;
    }
    assert_true(failures > 5);
    st_schema *s = parse(calls);
    for (unsigned long n = 1; n < 4; n++) {
        size_t len;
        mem_fail_after(n);
        char *text = st_schema_format(s, &len);
        mem_fail_after(0);
        if (text)
            mem_free(text, len + 1);
    }
    st_schema_free(s);
    assert_int_equal(mem_in_use(), base);
}

static void put_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

static void keys_compare_in_field_order(void **state)
{
    (void)state;
    st_schema *s = parse("key a: i32\nkey b: char[4]\nkey c: f64\ntagset x: u8\n");
    unsigned char r1[17] = {0}, r2[17] = {0};
    int32_t a1 = -5, a2 = 3;
    memcpy(r1, &a1, 4);
    memcpy(r2, &a2, 4);
    assert_true(st_schema_key_cmp(s, r1, r2) < 0);
    memcpy(r2, &a1, 4);
    memcpy(r1 + 4, "ab", 2);
    memcpy(r2 + 4, "abc", 3);
    assert_true(st_schema_key_cmp(s, r1, r2) < 0); /* NUL padding sorts first */
    memcpy(r1 + 4, "abc", 3);
    double c1 = -0.0, c2 = 0.0;
    memcpy(r1 + 8, &c1, 8);
    memcpy(r2 + 8, &c2, 8);
    r1[16] = 1; /* not a key field */
    assert_int_equal(st_schema_key_cmp(s, r1, r2), 0);
    c1 = NAN;
    c2 = INFINITY;
    memcpy(r1 + 8, &c1, 8);
    memcpy(r2 + 8, &c2, 8);
    assert_true(st_schema_key_cmp(s, r1, r2) > 0);
    assert_true(st_schema_key_cmp(s, r2, r1) < 0);
    char buf[128];
    st_schema_format_key(s, r1, buf, sizeof buf);
    assert_string_equal(buf, "(a=-5, b=abc, c=nan)");
    st_schema_format_key(s, r1, buf, 9);
    assert_string_equal(buf, "(a=-5, b");
    st_schema_free(s);
}

/* The order image of random values agrees with their typed comparison. */
static int typed_cmp(const st_field *f, const unsigned char *a, const unsigned char *b)
{
    switch (f->type) {
    case ST_I8: case ST_I16: case ST_I32: case ST_I64: case ST_TIME: {
        int64_t x = 0, y = 0;
        memcpy(&x, a, f->width);
        memcpy(&y, b, f->width);
        unsigned sh = 64 - 8 * f->width;
        x = (int64_t)((uint64_t)x << sh) >> sh;
        y = (int64_t)((uint64_t)y << sh) >> sh;
        return (x > y) - (x < y);
    }
    case ST_F32: case ST_F64: {
        double x, y;
        if (f->type == ST_F32) {
            float fx, fy;
            memcpy(&fx, a, 4);
            memcpy(&fy, b, 4);
            x = fx;
            y = fy;
        } else {
            memcpy(&x, a, 8);
            memcpy(&y, b, 8);
        }
        if (isnan(x) || isnan(y))
            return isnan(x) - isnan(y);
        return (x > y) - (x < y);
    }
    case ST_CHAR:
        return memcmp(a, b, f->width);
    default: {
        uint64_t x = 0, y = 0;
        memcpy(&x, a, f->width);
        memcpy(&y, b, f->width);
        return (x > y) - (x < y);
    }
    }
}

static void order_agrees_with_values(void **state)
{
    (void)state;
    gen g = {7};
    for (int round = 0; round < 50; round++) {
        st_schema *s = gen_schema(&g, 30, 1);
        unsigned char *a = mem_alloc(s->row_size + s->tag_size), *b = mem_alloc(s->row_size + s->tag_size);
        for (int i = 0; i < 200; i++) {
            gen_fields(&g, s, 0, s->nrow, a);
            gen_fields(&g, s, 0, s->nrow, b);
            for (uint32_t f = 0; f < s->nrow; f++) {
                const st_field *fd = &s->fields[f];
                int c = typed_cmp(fd, a + fd->offset, b + fd->offset);
                uint64_t x = st_field_order(fd, a + fd->offset), y = st_field_order(fd, b + fd->offset);
                if (c < 0)
                    assert_true(x <= y);
                else if (c > 0)
                    assert_true(x >= y);
                else
                    assert_true(x == y);
                if (fd->type != ST_CHAR || fd->width <= 8)
                    assert_true((c < 0) == (x < y)); /* exact below 8 bytes */
            }
        }
        mem_free(a, s->row_size + s->tag_size);
        mem_free(b, s->row_size + s->tag_size);
        st_schema_free(s);
    }
}

static void time_prints_iso_8601(void **state)
{
    (void)state;
    static const struct {
        int64_t t;
        const char *s;
    } cases[] = {
        {0, "1970-01-01T00:00:00Z"},
        {1796216700, "2026-12-02T13:05:00Z"},
        {-1, "1969-12-31T23:59:59Z"},
        {951782400, "2000-02-29T00:00:00Z"},
        {-62167219200, "0000-01-01T00:00:00Z"},
        {-62167219201, "-0001-12-31T23:59:59Z"},
        {253402300800, "+10000-01-01T00:00:00Z"},
        {INT64_MAX, "+292277026596-12-04T15:30:07Z"},
        {INT64_MIN, "-292277022657-01-27T08:29:52Z"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        st_time_format(cases[i].t, buf, sizeof buf);
        assert_string_equal(buf, cases[i].s);
        int64_t back = 1;
        assert_int_equal(st_fieldtext_time(buf, strlen(buf), &back), 0);
        assert_true(back == cases[i].t);
    }
    gen g = {9};
    for (int i = 0; i < 100000; i++) {
        int64_t t = (int64_t)(gen_u64(&g) >> gen_below(&g, 64)) * (gen_below(&g, 2) ? 1 : -1), back;
        st_time_format(t, buf, sizeof buf);
        assert_int_equal(st_fieldtext_time(buf, strlen(buf), &back), 0);
        assert_true(back == t);
    }
    static const char *const bad[] = {
        "2026-13-02T13:05:00Z", "2026-02-29T00:00:00Z",
        "1900-02-29T00:00:00Z", "2026-12-02T24:00:00Z", "26-12-02T13:05:00Z", "12026-12-02T00:00:00Z",
        "+292277026596-12-04T15:30:08Z", "-292277022657-01-27T08:29:51Z", "2026-12-02T13:05:00Zx",
        "+9999999999999-01-01T00:00:00Z", "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t t;
        if (st_fieldtext_time(bad[i], strlen(bad[i]), &t) != -1)
            fail_msg("accepted '%s'", bad[i]);
    }
}

static void values_print(void **state)
{
    (void)state;
    st_schema *s = parse("key a: i8; key b: u16; key c: time; key d: f32; key e: bool; "
                         "key f: enum(x, y); key g: char[3]; key h: u64; key i: f64");
    unsigned char row[64] = {0};
    row[0] = 0xff;                 /* i8 -1 */
    row[1] = 0x34, row[2] = 0x12;  /* u16 0x1234 */
    int64_t t = 1796216700;
    memcpy(row + 3, &t, 8);
    float d = 0.1f;
    memcpy(row + 11, &d, 4);
    row[15] = 1;
    row[16] = 5; /* out of the enum's range */
    memcpy(row + 17, "abc", 3);
    put_u64(row + 20, UINT64_MAX);
    double i = -2.5;
    memcpy(row + 28, &i, 8);
    static const char *const want[] = {"-1", "4660", "2026-12-02T13:05:00Z", "0.100000001",
                                       "true", "?5", "abc", "18446744073709551615", "-2.5"};
    char buf[64];
    for (uint32_t f = 0; f < s->nfields; f++) {
        int n = st_field_format(&s->fields[f], row + s->fields[f].offset, buf, sizeof buf);
        assert_string_equal(buf, want[f]);
        assert_int_equal(n, (int)strlen(want[f]));
    }
    st_err err = {0};
    assert_int_equal(st_schema_check_row(s, row, false, &err), -1);
    assert_string_equal(err.msg, "enum field 'f' holds 5 (it has 2 symbols)");
    row[16] = 1;
    assert_int_equal(st_schema_check_row(s, row, false, &err), 0);
    row[15] = 2;
    assert_int_equal(st_schema_check_row(s, row, false, &err), -1);
    assert_string_equal(err.msg, "bool field 'e' holds 2 (must be 0 or 1)");
    st_schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_the_calls_schema),
        cmocka_unit_test(canonical_order_and_separators),
        cmocka_unit_test(enum_may_wrap_lines),
        cmocka_unit_test(random_schemas_round_trip),
        cmocka_unit_test(wide_schema_without_tags),
        cmocka_unit_test(errors_name_line_and_column),
        cmocka_unit_test(limits_are_enforced),
        cmocka_unit_test(positions_count_from_the_base),
        cmocka_unit_test(allocation_failures_are_reported),
        cmocka_unit_test(keys_compare_in_field_order),
        cmocka_unit_test(order_agrees_with_values),
        cmocka_unit_test(time_prints_iso_8601),
        cmocka_unit_test(values_print),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
