/* eval: helpers for unit tests of the front end. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/eval.h"
#include "lang/load.h"

Value test_eval(VM *vm, const char *src)
{
    VModule *m = lc_load_source(vm, src, strlen(src), "<test>", stderr);
    assert_non_null(m);
    Value f = v_obj(vm_func_new(vm, m->main)), out;
    assert_int_equal(vm_pcall(vm, f, 0, NULL, &out), 0);
    return out;
}

bool test_fake_fields(VM *vm, Value v, session_name_fn add, void *acc)
{
    (void)vm;
    if (!IS_INT(v) || AS_INT(v) != 7)
        return false;
    add(acc, "onum", 4);
    add(acc, "orig", 4);
    return true;
}

static FILE *captured;
static int saved_fd = -1;
static char buf[1 << 16];

void test_capture_begin(void)
{
    fflush(stdout);
    captured = tmpfile();
    assert_non_null(captured);
    saved_fd = dup(1);
    dup2(fileno(captured), 1);
}

const char *test_capture_end(void)
{
    fflush(stdout);
    dup2(saved_fd, 1);
    close(saved_fd);
    rewind(captured);
    size_t n = fread(buf, 1, sizeof buf - 1, captured);
    buf[n] = '\0';
    fclose(captured);
    return buf;
}
