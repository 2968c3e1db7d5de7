/* test_complete: what Tab offers where: names, verbs, fields (through a
 * stand-in for the store bindings), files, dot commands. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "lang/complete.h"
#include "tests/unit/eval.h"

static VM *vm;
static Session sess;

static int setup(void **state)
{
    vm = vm_new(NULL);
    if (!vm || session_init(&sess, vm, "<test>", false))
        return -1;
    const char *src = "let rows = [{\"onum\": 1, \"bsid\": 2}, {\"dur\": 3}]\n"
                      "let ds = 7\nfn fib(n) { return n }\nlet other = 1\n";
    *state = &sess;
    return session_run(&sess, src, strlen(src), 1, true) == RUN_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    vm_free(vm);
    return 0;
}

static CompleteContext ctx(const char *before, const char *word)
{
    return complete_context(vm, before, strlen(before), word);
}

/* The candidates for word after before, joined by spaces. */
static const char *offer(const char *before, const char *word)
{
    static char out[2048];
    CompleteContext c = ctx(before, word);
    CompleteList l = {0};
    assert_int_equal(complete_candidates(&sess, &c, word, &l), 0);
    out[0] = '\0';
    for (size_t i = 0; i < l.n; i++) {
        strcat(out, i ? " " : "");
        strcat(out, l.items[i]);
    }
    complete_free(&l);
    return out;
}

static void contexts(void **state)
{
    (void)state;
    assert_int_equal(ctx("", "pri").kind, COMPLETE_NAME);
    assert_int_equal(ctx("let x = ", "pri").kind, COMPLETE_NAME);
    assert_int_equal(ctx("rows | ", "wh").kind, COMPLETE_VERB);
    assert_int_equal(ctx("rows |\n", "").kind, COMPLETE_VERB);
    assert_int_equal(ctx("rows | where ", "on").kind, COMPLETE_FIELD);
    assert_int_equal(ctx("rows | where (a == 1) && ", "b").kind, COMPLETE_FIELD);
    assert_int_equal(ctx("lines(\"", "da").kind, COMPLETE_FILE);
    assert_int_equal(ctx("print(\"a\") + f(", "x").kind, COMPLETE_NAME);
    assert_int_equal(ctx("", ".he").kind, COMPLETE_COMMAND);
    assert_int_equal(ctx(".mode ", "c").kind, COMPLETE_WORDS);
    assert_int_equal(ctx(".read ", "f").kind, COMPLETE_FILE);
    assert_int_equal(ctx(".help ", "").kind, COMPLETE_HELP);
    assert_int_equal(ctx(".mode csv ", "").kind, COMPLETE_NONE);
}

static void the_source_is_the_name_before_the_first_pipe(void **state)
{
    (void)state;
    CompleteContext c = ctx("let n = rows | where x | select ", "d");
    assert_int_equal(c.kind, COMPLETE_FIELD);
    assert_int_equal(c.source_len, 4);
    assert_memory_equal(c.source, "rows", 4);
    c = ctx("f(x) | where ", "d");
    assert_int_equal(c.kind, COMPLETE_FIELD);
    assert_null(c.source);
    /* a pipe in an earlier statement is not this one's */
    assert_int_equal(ctx("rows | count\nlet y = ", "d").kind, COMPLETE_NAME);
    assert_int_equal(ctx("rows | count; ", "d").kind, COMPLETE_NAME);
}

static void names_keywords_and_natives(void **state)
{
    (void)state;
    assert_string_equal(offer("", "fib"), "fib");
    assert_string_equal(offer("", "le"), "len let");
    assert_string_equal(offer("", "ot"), "other");
    assert_string_equal(offer("x = ", "wh"), "while");
}

static void verbs_after_a_pipe(void **state)
{
    (void)state;
    assert_string_equal(offer("rows | ", "s"), "schema select skip sort stat");
    assert_string_equal(offer("rows | where x |\n", "co"), "count");
}

static void fields_of_the_source(void **state)
{
    (void)state;
    assert_string_equal(offer("rows | where ", "bs"), "bsid");
    assert_string_equal(offer("rows | where onum == 1 && ", "du"), "dur");
    /* the names are offered too: a predicate may use a variable */
    assert_string_equal(offer("rows | where ", "o"), "onum open other");
}

/* A name holding a query: its source's fields, and the columns its select
 * and group by make. */
static void fields_of_a_query(void **state)
{
    (void)state;
    const char *src = "let q = rows | where bsid > 0 | select onum, total: bsid + 1\n"
                      "let g = rows | group by bsid { howmany: count() }\n";
    assert_int_equal(session_run(&sess, src, strlen(src), 1, true), RUN_OK);
    assert_string_equal(offer("q | where ", "to"), "total totime");  /* names too */
    assert_string_equal(offer("q | where ", "bs"), "bsid");
    assert_string_equal(offer("g | where ", "how"), "howmany");
}

static void fields_of_a_store_through_the_hook(void **state)
{
    (void)state;
    session_store_ops.fields = test_fake_fields;
    assert_string_equal(offer("ds | where ", "or"), "orig");
    /* a source that is not a name: the store bound to ds */
    assert_string_equal(offer("f(1) | where ", "or"), "orig");
    session_store_ops.fields = NULL;
    assert_string_equal(offer("ds | where ", "or"), "");
}

static void commands_and_their_words(void **state)
{
    (void)state;
    assert_string_equal(offer("", ".t"), ".tables .timer");
    assert_string_equal(offer("", ".ti"), ".timer");
    assert_string_equal(offer("", ".d"), ".dump");
    assert_string_equal(offer(".mode ", "t"), "table tsv");
    assert_string_equal(offer(".timer ", "o"), "off on");
    assert_string_equal(offer(".help ", "wh"), "where");
    assert_string_equal(offer(".help ", "ta"), "tables tags take tan");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(contexts),
        cmocka_unit_test(the_source_is_the_name_before_the_first_pipe),
        cmocka_unit_test(names_keywords_and_natives),
        cmocka_unit_test(verbs_after_a_pipe),
        cmocka_unit_test(fields_of_the_source),
        cmocka_unit_test(fields_of_a_query),
        cmocka_unit_test(fields_of_a_store_through_the_hook),
        cmocka_unit_test(commands_and_their_words),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
