/* test_table: results as an aligned table, TSV, CSV and JSON. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "lang/table.h"
#include "tests/unit/eval.h"
#include "vm/natives.h"

static int setup(void **state)
{
    *state = vm_new(NULL);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    vm_free(*state);
    return 0;
}

/* The text of `return SRC` in format f; NULL if rendering raised. */
static const char *render(VM *vm, const char *src, TableFormat f, bool bold)
{
    char prog[512];
    snprintf(prog, sizeof prog, "return %s", src);
    VStr *text = table_text(vm, test_eval(vm, prog), f, bold);
    return text ? text->data : NULL;
}

static void rows_are_arrays_of_maps(void **state)
{
    VM *vm = *state;
    assert_true(table_is_rows(test_eval(vm, "return [{}, {\"a\": 1}]")));
    assert_false(table_is_rows(test_eval(vm, "return []")));
    assert_false(table_is_rows(test_eval(vm, "return [{\"a\": 1}, 2]")));
    assert_false(table_is_rows(test_eval(vm, "return {\"a\": 1}")));
}

static void aligned_pads_and_right_aligns_numbers(void **state)
{
    const char *t = render(*state,
                           "[{\"name\": \"bob\", \"n\": 1}, {\"name\": \"alice\", \"n\": 22, "
                           "\"ok\": true}]",
                           TABLE_ALIGNED, false);
    assert_string_equal(t, " name  |  n | ok\n"
                           "-------+----+------\n"
                           " bob   |  1 |\n"
                           " alice | 22 | true\n"
                           "(2 rows)\n");
}

static void aligned_counts_characters_not_bytes(void **state)
{
    const char *t = render(*state, "[{\"city\": \"Zürich\"}, {\"city\": \"Bern\"}]",
                           TABLE_ALIGNED, false);
    assert_string_equal(t, " city\n--------\n Zürich\n Bern\n(2 rows)\n");
    assert_int_equal(table_text_width("Zürich", strlen("Zürich")), 6);
}

static void aligned_shows_control_characters(void **state)
{
    const char *t = render(*state, "[{\"s\": \"a\\nb\\tc\\x01\"}]", TABLE_ALIGNED, false);
    assert_string_equal(t, " s\n-------------\n a\\nb\\tc\\x01\n(1 row)\n");
}

static void aligned_header_bold_on_request(void **state)
{
    const char *t = render(*state, "[{\"a\": 1}]", TABLE_ALIGNED, true);
    assert_non_null(strstr(t, "\033[1ma\033[0m"));
    assert_null(strstr(render(*state, "[{\"a\": 1}]", TABLE_ALIGNED, false), "\033"));
}

static void tsv_escapes_its_delimiters(void **state)
{
    const char *t = render(*state, "[{\"a\": \"x\\ty\", \"b\": \"l1\\nl2\", \"c\": \"b\\\\s\"}]",
                           TABLE_TSV, false);
    assert_string_equal(t, "a\tb\tc\nx\\ty\tl1\\nl2\tb\\\\s\n");
}

static void tsv_leaves_missing_cells_empty(void **state)
{
    const char *t = render(*state, "[{\"a\": 1}, {\"b\": 2.5}]", TABLE_TSV, false);
    assert_string_equal(t, "a\tb\n1\t\n\t2.5\n");
}

static void csv_quotes_as_rfc4180(void **state)
{
    const char *t = render(*state, "[{\"a\": \"x,y\", \"b\": \"say \\\"hi\\\"\", \"c\": 1.5, "
                           "\"d\": \"two\\nlines\"}]",
                           TABLE_CSV, false);
    assert_string_equal(t, "a,b,c,d\n\"x,y\",\"say \"\"hi\"\"\",1.5,\"two\nlines\"\n");
}

static void json_rows_one_per_line(void **state)
{
    const char *t = render(*state, "[{\"a\": 1, \"b\": [1, \"x\"]}, {\"a\": 2.0, \"m\": {3: false}}]",
                           TABLE_JSON, false);
    assert_string_equal(t, "[\n{\"a\":1,\"b\":[1,\"x\"]},\n{\"a\":2.0,\"m\":{\"3\":false}}\n]\n");
}

static void json_escapes_strings(void **state)
{
    const char *t = render(*state, "\"q\\\"b\\\\n\\nt\\tc\\x01\"", TABLE_JSON, false);
    assert_string_equal(t, "\"q\\\"b\\\\n\\nt\\tc\\u0001\"\n");
}

static void json_refuses_a_cycle(void **state)
{
    VM *vm = *state;
    assert_null(table_text(vm, test_eval(vm, "let a = []\npush(a, a)\nreturn a"), TABLE_JSON, false));
    assert_non_null(strstr(AS_STR(vm->err)->data, "nested too deeply"));
}

static void other_values_as_text(void **state)
{
    VM *vm = *state;
    assert_string_equal(render(vm, "\"abc\"", TABLE_ALIGNED, false), "\"abc\"\n");
    assert_string_equal(render(vm, "\"abc\"", TABLE_TSV, false), "abc\n");
    assert_string_equal(render(vm, "[1, \"b\"]", TABLE_CSV, false), "[1, \"b\"]\n");
    assert_string_equal(render(vm, "[]", TABLE_ALIGNED, false), "[]\n");
    assert_string_equal(render(vm, "nil", TABLE_JSON, false), "null\n");
}

static void formats_by_name(void **state)
{
    (void)state;
    assert_int_equal(table_format_parse("table"), TABLE_ALIGNED);
    assert_int_equal(table_format_parse("json"), TABLE_JSON);
    assert_int_equal(table_format_parse("xml"), -1);
    assert_string_equal(table_format_name(TABLE_CSV), "csv");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_are_arrays_of_maps),
        cmocka_unit_test(aligned_pads_and_right_aligns_numbers),
        cmocka_unit_test(aligned_counts_characters_not_bytes),
        cmocka_unit_test(aligned_shows_control_characters),
        cmocka_unit_test(aligned_header_bold_on_request),
        cmocka_unit_test(tsv_escapes_its_delimiters),
        cmocka_unit_test(tsv_leaves_missing_cells_empty),
        cmocka_unit_test(csv_quotes_as_rfc4180),
        cmocka_unit_test(json_rows_one_per_line),
        cmocka_unit_test(json_escapes_strings),
        cmocka_unit_test(json_refuses_a_cycle),
        cmocka_unit_test(other_values_as_text),
        cmocka_unit_test(formats_by_name),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
