/* test_session: statements at the prompt: when one goes on to the next line,
 * values shown, names kept, errors, dot commands, statements from a file. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "lang/session.h"
#include "tests/unit/eval.h"

typedef struct Fixture {
    VM *vm;
    Session s;
} Fixture;

static Fixture fx;

static int setup(void **state)
{
    fx.vm = vm_new(NULL);
    if (!fx.vm || session_init(&fx.s, fx.vm, "<test>", false))
        return -1;
    *state = &fx.s;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    memset(&session_store_ops, 0, sizeof session_store_ops);
    vm_free(fx.vm);
    return 0;
}

static RunStatus run(Session *s, const char *src, bool final)
{
    return session_run(s, src, strlen(src), 1, final);
}

/* What running src printed on stdout (its status must be want). */
static const char *output(Session *s, const char *src, RunStatus want)
{
    test_capture_begin();
    RunStatus st = run(s, src, true);
    const char *out = test_capture_end();
    assert_int_equal(st, want);
    return out;
}

static void open_brackets_and_pipes_go_on(void **state)
{
    Session *s = *state;
    assert_int_equal(run(s, "print(1,\n", false), RUN_MORE);
    assert_int_equal(run(s, "let a = [1,\n2\n", false), RUN_MORE);
    assert_int_equal(run(s, "if true {\n", false), RUN_MORE);
    assert_int_equal(run(s, "\"unterminated\n", false), RUN_MORE);
    assert_int_equal(run(s, "rows |\n", false), RUN_MORE);
    assert_int_equal(run(s, "rows | where x |  # more\n", false), RUN_MORE);
}

static void an_error_at_the_end_goes_on(void **state)
{
    Session *s = *state;
    assert_int_equal(run(s, "let x =\n", false), RUN_MORE_EOF);
    assert_int_equal(run(s, "1 +\n", false), RUN_MORE_EOF);
    /* ... unless the input is over: then it is the error it is */
    assert_int_equal(run(s, "let x =\n", true), RUN_ERROR);
    assert_int_equal(run(s, "print(1,\n", true), RUN_ERROR);
}

static void other_errors_do_not_go_on(void **state)
{
    Session *s = *state;
    assert_int_equal(run(s, "let 5 = 1\n", false), RUN_ERROR);
    assert_int_equal(run(s, "no_such_name\n", false), RUN_ERROR);
    assert_int_equal(run(s, "\"a(\" + \"[\"\n", false), RUN_OK);
    assert_int_equal(run(s, "# (\n", false), RUN_OK);
}

static void expressions_show_their_value(void **state)
{
    Session *s = *state;
    assert_string_equal(output(s, "1 + 2\n", RUN_OK), "3\n");
    assert_string_equal(output(s, "\"text\"\n", RUN_OK), "text\n");
    assert_string_equal(output(s, "nil\n", RUN_OK), "");
    assert_string_equal(output(s, "let shown = 5\n", RUN_OK), "");
    assert_string_equal(output(s, "print(7)\n", RUN_OK), "7\n");
    assert_string_equal(output(s, "[{\"a\": 1}, {\"a\": 2}]\n", RUN_OK), "a\n1\n2\n");
}

static void names_persist_between_statements(void **state)
{
    Session *s = *state;
    assert_int_equal(run(s, "let total = 40\n", true), RUN_OK);
    assert_int_equal(run(s, "fn add2(x) {\n  return x + 2\n}\n", true), RUN_OK);
    assert_string_equal(output(s, "add2(total)\n", RUN_OK), "42\n");
    Value v;
    assert_true(session_global(s, "total", 5, &v));
    assert_int_equal(AS_INT(v), 40);
    assert_false(session_global(s, "nope", 4, &v));
}

static void a_failed_statement_leaves_no_names(void **state)
{
    Session *s = *state;
    Value v;
    assert_int_equal(run(s, "let half = undefined_thing\n", true), RUN_ERROR);
    assert_false(session_global(s, "half", 4, &v));
    /* the same name made properly later works */
    assert_int_equal(run(s, "let half = 21\n", true), RUN_OK);
    assert_string_equal(output(s, "half * 2\n", RUN_OK), "42\n");
}

static void runtime_errors_keep_state(void **state)
{
    Session *s = *state;
    assert_int_equal(run(s, "let kept = 1\n", true), RUN_OK);
    assert_int_equal(run(s, "kept = 2\nerror(\"boom\")\n", true), RUN_ERROR);
    assert_string_equal(output(s, "kept\n", RUN_OK), "2\n");
}

static void dot_commands(void **state)
{
    Session *s = *state;
    assert_int_equal(run(s, ".mode json\n", true), RUN_OK);
    assert_int_equal(s->mode, TABLE_JSON);
    assert_string_equal(output(s, "[{\"a\": 1}]\n", RUN_OK), "[\n{\"a\":1}\n]\n");
    assert_string_equal(output(s, ".mode\n", RUN_OK), "mode json\n");
    assert_int_equal(run(s, ".mode xml\n", true), RUN_ERROR);
    assert_int_equal(run(s, "  .mode tsv\n", true), RUN_OK);
    assert_int_equal(s->mode, TABLE_TSV);
    assert_int_equal(run(s, ".timer on\n", true), RUN_OK);
    assert_true(s->timer);
    assert_int_equal(run(s, ".timer off\n", true), RUN_OK);
    assert_int_equal(run(s, ".timer maybe\n", true), RUN_ERROR);
    assert_int_equal(run(s, ".nosuch\n", true), RUN_ERROR);
    assert_non_null(strstr(output(s, ".help len\n", RUN_OK), "len(v)"));
    assert_int_equal(run(s, ".read\n", true), RUN_ERROR);
    assert_int_equal(run(s, ".read /nonexistent/file\n", true), RUN_ERROR);
    assert_int_equal(run(s, ".quit\n", true), RUN_OK);
    assert_true(s->quit);
    s->quit = false;
}

static void dump_shows_the_last_statement(void **state)
{
    Session *s = *state;
    assert_int_equal(run(s, "let dumped = 123456\n", true), RUN_OK);
    const char *out = output(s, ".dump\n", RUN_OK);
    assert_non_null(strstr(out, "<main>"));
    assert_non_null(strstr(out, "123456"));
}

static void statements_from_a_stream(void **state)
{
    Session *s = *state;
    FILE *f = tmpfile();
    fputs("\nlet sa = 1\n\nfn sb(x) {\n  return x * 10\n}\nsb(sa)\nundefined_x\nsa = 99\n", f);
    rewind(f);
    test_capture_begin();
    RunStatus st = session_run_stream(s, f, "<stream>");
    const char *out = test_capture_end();
    fclose(f);
    assert_int_equal(st, RUN_ERROR);   /* stops at the first error... */
    assert_string_equal(out, "10\n");
    Value v;
    assert_true(session_global(s, "sa", 2, &v));
    assert_int_equal(AS_INT(v), 1);    /* ...so sa = 99 never ran */
    assert_string_equal(s->file, "<test>");
}

static void an_unfinished_stream_is_an_error(void **state)
{
    Session *s = *state;
    FILE *f = tmpfile();
    fputs("let u = [1,\n2", f);
    rewind(f);
    assert_int_equal(session_run_stream(s, f, "<stream>"), RUN_ERROR);
    fclose(f);
}

static int readies;
static void count_ready(const char *src, size_t len)
{
    (void)src;
    (void)len;
    readies++;
}

static void ready_sees_whole_statements(void **state)
{
    Session *s = *state;
    s->ready = count_ready;
    readies = 0;
    assert_int_equal(run(s, "let r = (1 +\n", false), RUN_MORE);
    assert_int_equal(run(s, "let r = 1 +\n", false), RUN_MORE_EOF);
    assert_int_equal(readies, 0);
    assert_int_equal(run(s, "let r = 1\n", false), RUN_OK);
    assert_int_equal(run(s, "r r\n", false), RUN_ERROR);
    assert_int_equal(run(s, ".timer off\n", false), RUN_OK);
    assert_int_equal(readies, 3);
    s->ready = NULL;
}

static char asked[64];
static bool answer;
static bool ask_hook(const char *question)
{
    snprintf(asked, sizeof asked, "%s", question);
    return answer;
}

/* Count before select: at a terminal with someone to ask, a query of more
 * rows than .confirm's is counted and shown only on a yes. */
static void a_large_query_asks_first(void **state)
{
    Session *s = *state;
    const char *three = "[{\"a\": 1}, {\"a\": 2}, {\"a\": 3}] | select a\n";
    s->ask = ask_hook;
    s->terminal = true;
    assert_int_equal(run(s, ".confirm 2\n", true), RUN_OK);
    answer = false;
    asked[0] = 0;
    assert_string_equal(output(s, three, RUN_OK), "");
    assert_string_equal(asked, "3 rows: show them? [y/N] ");
    answer = true;
    asked[0] = 0;
    assert_string_equal(output(s, three, RUN_OK), "a\n1\n2\n3\n");
    assert_string_equal(asked, "3 rows: show them? [y/N] ");
    asked[0] = 0;
    assert_string_equal(output(s, "[{\"a\": 1}, {\"a\": 2}] | select a\n", RUN_OK), "a\n1\n2\n");
    assert_string_equal(asked, "");     /* not above 2 rows */
    assert_string_equal(output(s, "[{\"a\": 1}, {\"a\": 2}, {\"a\": 3}]\n", RUN_OK), "a\n1\n2\n3\n");
    assert_string_equal(asked, "");     /* rows made already: no query */
    assert_string_equal(output(s, ".confirm\n", RUN_OK), "confirm above 2 rows\n");
    assert_int_equal(run(s, ".confirm off\n", true), RUN_OK);
    assert_string_equal(output(s, three, RUN_OK), "a\n1\n2\n3\n");
    assert_string_equal(asked, "");
    assert_int_equal(run(s, ".confirm 2\n", true), RUN_OK);
    s->terminal = false;    /* results into a pipe or file */
    assert_string_equal(output(s, three, RUN_OK), "a\n1\n2\n3\n");
    assert_string_equal(asked, "");
    s->terminal = true;
    s->ask = NULL;          /* a batch: no one to ask */
    assert_string_equal(output(s, three, RUN_OK), "a\n1\n2\n3\n");
    assert_int_equal(run(s, ".confirm 0\n", true), RUN_ERROR);
    assert_int_equal(run(s, ".confirm 2x\n", true), RUN_ERROR);
    assert_int_equal(run(s, ".confirm on\n", true), RUN_OK);
    assert_string_equal(output(s, ".confirm\n", RUN_OK), "confirm on (above the screen's height)\n");
    s->terminal = false;
}

static void add_name(void *acc, const char *name, size_t len)
{
    char *out = acc;
    strncat(out, name, len);
    strcat(out, " ");
}

static void fields_of_rows_and_stores(void **state)
{
    Session *s = *state;
    char names[256] = "";
    assert_true(session_fields(s, test_eval(s->vm, "return [{\"a\": 1}, {\"b\": 2}]"), add_name,
                               names));
    assert_string_equal(names, "a b ");
    assert_false(session_fields(s, v_int(7), add_name, names));
    session_store_ops.fields = test_fake_fields;
    names[0] = '\0';
    assert_true(session_fields(s, v_int(7), add_name, names));
    assert_string_equal(names, "onum orig ");
    session_store_ops.fields = NULL;
}

static void schema_needs_a_store(void **state)
{
    Session *s = *state;
    assert_int_equal(run(s, ".schema\n", true), RUN_ERROR);
    assert_int_equal(run(s, "let notastore = 1\n", true), RUN_OK);
    assert_int_equal(run(s, ".schema notastore\n", true), RUN_ERROR);
    assert_int_equal(session_bind_store(s, "/tmp"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_brackets_and_pipes_go_on),
        cmocka_unit_test(an_error_at_the_end_goes_on),
        cmocka_unit_test(other_errors_do_not_go_on),
        cmocka_unit_test(expressions_show_their_value),
        cmocka_unit_test(names_persist_between_statements),
        cmocka_unit_test(a_failed_statement_leaves_no_names),
        cmocka_unit_test(runtime_errors_keep_state),
        cmocka_unit_test(dot_commands),
        cmocka_unit_test(dump_shows_the_last_statement),
        cmocka_unit_test(statements_from_a_stream),
        cmocka_unit_test(an_unfinished_stream_is_an_error),
        cmocka_unit_test(ready_sees_whole_statements),
        cmocka_unit_test(a_large_query_asks_first),
        cmocka_unit_test(fields_of_rows_and_stores),
        cmocka_unit_test(schema_needs_a_store),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
