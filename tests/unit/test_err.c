/* test_err: the store's error buffer sets, prefixes and truncates safely. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "store/err.h"

static void set_prefix_suffix(void **state)
{
    (void)state;
    st_err err = {0};
    assert_int_equal(st_err_set(&err, ST_ECORRUPT, "checksum mismatch (%d)", 7), -1);
    assert_int_equal(err.code, ST_ECORRUPT);
    st_err_prefix(&err, "%s: block %d: ", "calls.ts", 3);
    st_err_suffix(&err, " [%s]", "verify");
    assert_string_equal(err.msg, "calls.ts: block 3: checksum mismatch (7) [verify]");
    assert_int_equal(st_err_nomem(&err, "footer"), -1);
    assert_int_equal(err.code, ST_ENOMEM);
    assert_string_equal(err.msg, "out of memory (footer)");
}

static void long_messages_truncate(void **state)
{
    (void)state;
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    st_err err = {0};
    st_err_set(&err, ST_EIO, "%s", big);
    assert_int_equal(strlen(err.msg), sizeof err.msg - 1);
    st_err_prefix(&err, "%s: ", "file");
    assert_int_equal(strlen(err.msg), sizeof err.msg - 1);
    assert_memory_equal(err.msg, "file: xxx", 9);
    st_err_prefix(&err, "%s", big);
    assert_int_equal(strlen(err.msg), sizeof err.msg - 1);
    st_err_suffix(&err, "%s", "tail");
    assert_int_equal(strlen(err.msg), sizeof err.msg - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(set_prefix_suffix),
        cmocka_unit_test(long_messages_truncate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
