/* test_multiline: which unfinished statements read on, judged by tokens. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "lang/multiline.h"

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

static bool open_(void **state, const char *src)
{
    return ml_open(*state, src, strlen(src));
}

static void open_brackets_read_on(void **state)
{
    assert_true(open_(state, "f(1,\n"));
    assert_true(open_(state, "[1, [2,\n3]\n"));
    assert_true(open_(state, "fn f() {\n  if x {\n  }\n"));
    assert_false(open_(state, "f(1, [2], {})\n"));
}

static void a_closing_bracket_too_many_is_for_the_compiler(void **state)
{
    assert_false(open_(state, "f(1))\n"));
    assert_false(open_(state, "]\n"));
}

static void brackets_in_strings_comments_and_regexes_do_not_count(void **state)
{
    assert_false(open_(state, "print(\"(\")\n"));
    assert_false(open_(state, "x = 1 # (\n"));
    assert_false(open_(state, "s ~ /([/\n"));
    assert_false(open_(state, "6 / (3)\n"));
}

static void a_trailing_pipe_reads_on(void **state)
{
    assert_true(open_(state, "ds | where x |\n"));
    assert_true(open_(state, "ds |   # then\n"));
    assert_false(open_(state, "ds | count\n"));
    assert_false(open_(state, "a || b\n"));
}

static void an_unterminated_string_reads_on(void **state)
{
    assert_true(open_(state, "print(\"abc\n"));
    assert_false(open_(state, "print(\"a\\\"b\")\n"));
}

/* What the prompt says is open: the innermost bracket and where. */
static void what_is_open(void **state)
{
    char buf[128];
    const char *src = "print(f(1,\n  [2, 3],\n  (4\n";
    assert_true(ml_what_open(*state, src, strlen(src), buf, sizeof buf));
    assert_string_equal(buf, "'(' from line 3, column 3");
    src = "print(\"abc\n";
    assert_true(ml_what_open(*state, src, strlen(src), buf, sizeof buf));
    assert_string_equal(buf, "a string (or regex) not closed");
    src = "ds | where x |\n";
    assert_true(ml_what_open(*state, src, strlen(src), buf, sizeof buf));
    assert_string_equal(buf, "a pipeline after its trailing '|'");
    src = "f(1)\n";
    assert_false(ml_what_open(*state, src, strlen(src), buf, sizeof buf));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_brackets_read_on),
        cmocka_unit_test(a_closing_bracket_too_many_is_for_the_compiler),
        cmocka_unit_test(brackets_in_strings_comments_and_regexes_do_not_count),
        cmocka_unit_test(a_trailing_pipe_reads_on),
        cmocka_unit_test(an_unterminated_string_reads_on),
        cmocka_unit_test(what_is_open),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
