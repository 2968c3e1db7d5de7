/* test_plan: a query's binding (vm/query/plan.c, query.c's _pipe): a query
 * grown a where step at a time (in a loop) binds each stage once, not the
 * whole chain again at every step; the module variables a step read are
 * those of where it was written, bound later or not. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lang/load.h"
#include "tests/unit/tmpdir.h"
#include "vm/query/qplan.h"

static VM *vm;
static char dir[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    tmp_make("plan", dir);
    vm = vm_new(NULL);
    return vm ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    vm_free(vm);
    vm = NULL;
    tmp_reset(dir);
    return 0;
}

static Value var(VModule *m, const char *name)
{
    Value *slot = vm_map_ref(m->symbols, v_obj(vm_str_cstr(vm, name)));
    assert_non_null(slot);
    return m->vars[slot->as.i];
}

/* Runs src after a prelude that makes `f`, a tagset file of keys 0..99. */
static VModule *run(const char *src)
{
    char text[PATH_MAX * 2 + 1024];
    snprintf(text, sizeof text,
             "let rows = []\nfor i in 0..100 { push(rows, {k: i, tags: [{t: i %% 5}]}) }\n"
             "load(\"%s/k.ts\", rows, {schema: schema(\"key k: u64; tag t: u8\")})\n"
             "let f = open(\"%s/k.ts\")\n%s",
             dir, dir, src);
    VModule *m = lc_load_source(vm, text, strlen(text), "<test>", stderr);
    assert_non_null(m);
    int rc = vm_run_module(vm, m);
    if (rc)
        vm_print_error(vm, stderr);
    assert_int_equal(rc, 0);
    return m;
}

#define STEPS 3000

static void where_chain_binds_each_stage_once(void **state)
{
    (void)state;
    uint64_t before = qp_stages_bound();
    VModule *m = run("let q = f\nfor i in 0..3000 { q = q | where k > i % 60 }\n"
                     "let n = q | count\nlet nt = q | tags | where t == 2 | count\n");
    uint64_t bound = qp_stages_bound() - before;
    assert_int_equal(var(m, "n").as.i, 40);     /* keys 60..99 */
    assert_int_equal(var(m, "nt").as.i, 8);      /* of those, k % 5 == 2 */
    /* The two runs bind the chain once each (and the prelude's few);
     * binding it again at each step would be STEPS * STEPS / 2. */
    assert_true(bound <= 2 * STEPS + 10);
}

static void later_binding_reads_variables_as_written(void **state)
{
    (void)state;
    VModule *m = run("let lim = 90\nlet q = f | where k > 10\nlet q2 = q | where k > lim\n"
                     "lim = 0\nlet n = q2 | count\n"
                     "fn grow(x) { let l = 95\n return x | where k > l }\nlet n2 = grow(q) | count\n"
                     "let lo = q | where k < 20\nlet n3 = q2 | where k < 95 | count\n"
                     "let n4 = lo | count\nlet n5 = q | count\n");
    assert_int_equal(var(m, "n").as.i, 9);
    assert_int_equal(var(m, "n2").as.i, 4);
    /* Queries grown from the same one keep their own steps. */
    assert_int_equal(var(m, "n3").as.i, 4);
    assert_int_equal(var(m, "n4").as.i, 9);
    assert_int_equal(var(m, "n5").as.i, 89);
}

/* An error in a step added to a query is raised when it runs, at the
 * step's place. */
static void later_binding_errors_name_the_step(void **state)
{
    (void)state;
    char text[PATH_MAX * 2 + 512];
    snprintf(text, sizeof text,
             "let rows = [{k: 1, tags: []}]\nload(\"%s/e.ts\", rows, {schema: schema(\"key k: u64; tag t: u8\")})\n"
             "let q = open(\"%s/e.ts\") | where k > 0\nlet q2 = q | where nosuch > 1\nlet n = q2 | count\n",
             dir, dir);
    VModule *m = lc_load_source(vm, text, strlen(text), "<test>", stderr);
    assert_non_null(m);
    assert_int_equal(vm_run_module(vm, m), -1);
    assert_true(IS_STR(vm->err));
    assert_non_null(strstr(AS_STR(vm->err)->data, "unknown field 'nosuch'"));
    int i = 0;
    while (i < vm->ntrace && !vm->trace[i].p)
        i++;    /* the natives binding it */
    assert_true(i < vm->ntrace);
    assert_int_equal(vm->trace[i].line, 4);
    assert_int_equal(vm->trace[i].col, 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(where_chain_binds_each_stage_once, setup, teardown),
        cmocka_unit_test_setup_teardown(later_binding_reads_variables_as_written, setup, teardown),
        cmocka_unit_test_setup_teardown(later_binding_errors_name_the_step, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
