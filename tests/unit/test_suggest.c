/* test_suggest: "did you mean" picks the closest candidate within a typo's
 * distance (substitution, insertion, deletion, a swap of neighbours) and
 * nothing farther. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "vm/suggest.h"

static const char *const fields[] = {"onum", "ts", "bsid", "dur", "state", "sys", "status", "dnum"};
#define NF (sizeof fields / sizeof fields[0])

static const char *sug(const char *w)
{
    return vm_suggest(w, strlen(w), fields, NF);
}

static void typos_find_their_field(void **state)
{
    (void)state;
    assert_string_equal(sug("bsdi"), "bsid");     /* a swap */
    assert_string_equal(sug("onm"), "onum");      /* a deletion */
    assert_string_equal(sug("duur"), "dur");      /* an insertion */
    assert_string_equal(sug("statsu"), "status"); /* nearer to status than to state */
    assert_string_equal(sug("statu"), "state");   /* as near to both: the first */
    assert_string_equal(sug("stat"), "state");
}

static void far_words_find_nothing(void **state)
{
    (void)state;
    assert_null(sug("x"));
    assert_null(sug("calls"));
    assert_null(sug("bsidbsid"));
    assert_null(sug(""));
    char longw[100];
    memset(longw, 'a', sizeof longw - 1);
    longw[sizeof longw - 1] = 0;
    assert_null(sug(longw));
    assert_null(vm_suggest("onum", 4, fields, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(typos_find_their_field),
        cmocka_unit_test(far_words_find_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
