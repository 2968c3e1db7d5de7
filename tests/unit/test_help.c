/* test_help: .help finds every name the tables hold, and the reference
 * for docs/LANGUAGE.md lists them all. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "lang/help.h"
#include "lang/meta.h"
#include "vm/query/query.h"
#include "tests/unit/eval.h"
#include "vm/natives.h"

/* What .help topic printed; *ok: whether it knew the topic. */
static const char *shown(const char *topic, bool *ok)
{
    test_capture_begin();
    *ok = help_show(stdout, topic);
    return test_capture_end();
}

static void overview_lists_the_topics(void **state)
{
    (void)state;
    bool ok;
    const char *t = shown(NULL, &ok);
    assert_true(ok);
    for (size_t i = 0; i < help_ntopics; i++)
        assert_non_null(strstr(t, help_topics[i].name));
    assert_non_null(strstr(t, "natives"));
    assert_non_null(strstr(t, "verbs"));
    assert_non_null(strstr(t, "commands"));
}

static void every_name_has_help(void **state)
{
    (void)state;
    bool ok;
    char want[512];
    for (size_t i = 0; i < vm_nnatives; i++) {
        snprintf(want, sizeof want, "%s\n", vm_natives[i].help);
        assert_non_null(strstr(shown(vm_natives[i].name, &ok), want));
        assert_true(ok);
    }
    for (size_t i = 0; i < help_nverbs; i++) {
        snprintf(want, sizeof want, "%s: %s\n", help_verbs[i].usage, help_verbs[i].text);
        assert_non_null(strstr(shown(help_verbs[i].name, &ok), want));
        assert_true(ok);
    }
    /* sort is a native and a verb: both are shown */
    const char *both = shown("sort", &ok);
    assert_non_null(strstr(both, "sort(a"));
    assert_non_null(strstr(both, "| sort f"));
}

/* Every query function and operator by name: .help any, .help between,
 * .help && (each of an entry's symbols), .help if. */
static void query_functions_and_operators(void **state)
{
    (void)state;
    bool ok;
    char want[512];
    for (size_t i = 0; i < QF__COUNT; i++) {
        snprintf(want, sizeof want, "in a query: %s\n", vm_query_funcs[i].help);
        assert_non_null(strstr(shown(vm_query_funcs[i].name, &ok), want));
        assert_true(ok);
    }
    for (size_t i = 0; i < help_noperators; i++) {
        snprintf(want, sizeof want, "%s: %s\n", help_operators[i].usage, help_operators[i].text);
        char names[64], *save = NULL;
        snprintf(names, sizeof names, "%s", help_operators[i].name);
        for (char *n = strtok_r(names, " ", &save); n; n = strtok_r(NULL, " ", &save)) {
            assert_non_null(strstr(shown(n, &ok), want));
            assert_true(ok);
        }
    }
    assert_non_null(strstr(shown("||", &ok), "a && b, a || b: "));
    assert_non_null(strstr(shown("between", &ok), "between(e, lo, hi)"));
    assert_non_null(strstr(shown("operators", &ok), "if c { a } else { b }"));
    assert_non_null(strstr(shown("functions", &ok), "any(tags, PRED)"));
}

static void each_kind_by_name(void **state)
{
    (void)state;
    bool ok;
    assert_non_null(strstr(shown("mode", &ok), ".mode [table|tsv|csv|json|line]: "));
    assert_non_null(strstr(shown(".mode", &ok), ".mode [table|tsv|csv|json|line]: "));
    assert_string_equal(shown("prompt", &ok), help_topics[0].text);
    assert_non_null(strstr(shown("verbs", &ok), "group by f"));
    assert_non_null(strstr(shown("natives", &ok), "push(a, v, ...)"));
    assert_non_null(strstr(shown("commands", &ok), ".read FILE"));
    assert_true(ok);
    assert_non_null(strstr(shown("nosuch", &ok), "no help on 'nosuch'"));
    assert_false(ok);
}

/* A built-in module: by its name, its members listed; a member by its name
 * alone too; the list of natives and the reference show it apart. */
static void modules_by_name(void **state)
{
    (void)state;
    bool ok;
    const char *t = shown("search", &ok);
    assert_true(ok);
    assert_non_null(strstr(t, "module search (import \"search\"): gre's engine room"));
    assert_non_null(strstr(t, "search.sieve(s, i, filter, q, end, pairs, dir, r, lo) "));
    assert_non_null(strstr(shown("skip", &ok), "search.skip(s, i, table"));
    assert_true(ok);
    assert_non_null(strstr(shown("natives", &ok), "\nmodule search "));
    test_capture_begin();
    help_reference(stdout);
    t = test_capture_end();
    const char *natives = strstr(t, "### Natives"), *mod = strstr(t, "### Module search");
    assert_non_null(mod);
    assert_true(strstr(natives, "| `search.") > mod);
}

static void reference_lists_every_entry(void **state)
{
    (void)state;
    test_capture_begin();
    help_reference(stdout);
    const char *text = test_capture_end();
    char want[256];
    for (size_t i = 0; i < vm_nnatives; i++) {
        snprintf(want, sizeof want, "| `%s(", vm_natives[i].name);
        assert_non_null(strstr(text, want));
    }
    for (size_t i = 0; i < help_nverbs; i++)
        assert_non_null(strstr(text, help_verbs[i].text));
    for (size_t i = 0; i < meta_ncommands; i++) {
        snprintf(want, sizeof want, "| `.%s", meta_commands[i].name);
        assert_non_null(strstr(text, want));
    }
    assert_non_null(strstr(text, "`.mode [table\\|tsv\\|csv\\|json\\|line]`"));
    for (size_t i = 0; i < help_ntopics; i++)
        assert_non_null(strstr(text, help_topics[i].text));
}

static void add_name(void *acc, const char *name, size_t len)
{
    (void)len;
    if (!strcmp(name, "timer") || !strcmp(name, "where") || !strcmp(name, "len") ||
        !strcmp(name, "syntax") || !strcmp(name, "natives"))
        ++*(int *)acc;
}

static void names_for_completion(void **state)
{
    (void)state;
    int found = 0;
    help_names(add_name, &found);
    assert_int_equal(found, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(overview_lists_the_topics),
        cmocka_unit_test(every_name_has_help),
        cmocka_unit_test(each_kind_by_name),
        cmocka_unit_test(query_functions_and_operators),
        cmocka_unit_test(modules_by_name),
        cmocka_unit_test(reference_lists_every_entry),
        cmocka_unit_test(names_for_completion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
