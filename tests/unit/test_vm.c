/* test_vm: the run loop, calls between C and comb, errors and their
 * levels, limits, collections, and running under allocation failure. Built
 * twice by make check: with the computed-goto loop and with the switch one. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "lang/load.h"
#include "store/mem.h"
#include "vm/natives.h"
#include "vm/vm.h"

static int setup(void **state)
{
    VmOptions o = {.max_frames = 1000};
    VM *vm = vm_new(&o);
    if (!vm)
        return -1;
    lc_install_import(vm);
    *state = vm;
    return 0;
}

static int teardown(void **state)
{
    vm_free(*state);
    return 0;
}

/* Runs src as a module: 0 or -1; *mod gets the module. */
static int run(VM *vm, const char *src, VModule **mod)
{
    VModule *m = lc_load_source(vm, src, strlen(src), "<test>", stderr);
    if (!m)
        return -2;
    if (mod)
        *mod = m;
    return vm_run_module(vm, m);
}

static Value global(VM *vm, VModule *m, const char *name)
{
    Value *slot = vm_map_ref(m->symbols, v_obj(vm_str_cstr(vm, name)));
    assert_non_null(slot);
    return m->vars[slot->as.i];
}

static bool err_is(VM *vm, const char *msg)
{
    return str_eq_cstr(vm_tostring(vm, vm->err), msg);
}

static void runs_and_returns_values(void **state)
{
    VM *vm = *state;
    VModule *m = NULL;
    assert_int_equal(run(vm, "fn fib(n) { if n < 2 { return n } return fib(n - 1) + fib(n - 2) }\n"
                             "let r = fib(15)\n"
                             "let s = 0\n"
                             "for i in 0..100 { if i % 3 == 0 { continue } s += i }\n",
                         &m), 0);
    assert_true(AS_INT(global(vm, m, "r")) == 610);
    assert_true(AS_INT(global(vm, m, "s")) == 3267);
}

static void c_calls_comb(void **state)
{
    VM *vm = *state;
    VModule *m = NULL;
    assert_int_equal(run(vm, "fn add(a, b) { return a + b }\nfn boom() { error(\"no\") }", &m), 0);
    Value args[2] = {v_int(40), v_int(2)}, r;
    assert_int_equal(vm_pcall(vm, global(vm, m, "add"), 2, args, &r), 0);
    assert_true(AS_INT(r) == 42);
    assert_int_equal(vm_pcall(vm, global(vm, m, "add"), 1, args, &r), -1);
    assert_true(err_is(vm, "add expects 2 arguments, got 1"));
    assert_int_equal(vm_pcall(vm, global(vm, m, "boom"), 0, NULL, &r), -1);
    assert_true(err_is(vm, "no"));
    assert_int_equal(vm->ntrace, 2);    /* the native error and boom */
    assert_int_equal(vm->trace[1].line, 2);
    assert_int_equal(vm_pcall(vm, v_int(3), 0, NULL, &r), -1);
    assert_true(err_is(vm, "cannot call int"));
    assert_int_equal(vm->nframes, 0);
}

/* A native that calls its argument back, as sort(a, cmp) will. */
static Value nat_callback(VM *vm, int argc, Value *argv)
{
    (void)argc;
    Value arg = v_int(7);
    Value r = vm_call(vm, argv[0], 1, &arg);
    return v_int(AS_INT(r) * 2);
}

static const VmNativeDef callback_def = {"callback", 1, 1, nat_callback, "test"};

static void add_native(VM *vm, VModule *m, const VmNativeDef *def)
{
    VNative *n = vm_new_obj(vm, sizeof(VNative), VT_NATIVE);
    n->def = def;
    size_t slot = vm_module_slot(vm, m, vm_str_cstr(vm, def->name), false);
    m->vars[slot] = v_obj(n);
}

/* A native that collects, then counts the values in comb frames' registers
 * that name an object no longer in the heap. */
static Value nat_collect(VM *vm, int argc, Value *argv)
{
    (void)argc;
    (void)argv;
    vm_gc(vm);
    int64_t lost = 0;
    for (uint32_t i = 0; i < vm->nframes; i++) {
        const VmFrame *f = &vm->frames[i];
        for (const Value *v = f->base; f->fn && v < f->top; v++) {
            if (!IS_OBJ(*v))
                continue;
            const Obj *o = vm->objects;
            while (o && o != v->as.o)
                o = o->next;
            lost += o == NULL;
        }
    }
    return v_int(lost);
}

static const VmNativeDef collect_def = {"collect", 0, 0, nat_collect, "test"};

/* A callee's frame (here a native's, which ends at its arguments) can end
 * below its caller's; the caller's registers above it (the array and map
 * built for len) are read by its next collection, so they must survive. */
static void collection_keeps_callers_registers(void **state)
{
    VM *vm = *state;
    VModule *m = vm_module_new(vm, "t", "<t>");
    vm_push_root(vm, v_obj(m));
    add_native(vm, m, &collect_def);
    const char *src = "fn a() { let k = len([1, 2, 3, 4, 5, 6, {\"p\": [1]}])\n"
                      "return collect() }\nlet lost = a()\n";
    m->main = lc_compile_source(vm, m, src, strlen(src), stderr, NULL);
    assert_non_null(m->main);
    assert_int_equal(vm_run_module(vm, m), 0);
    assert_true(AS_INT(global(vm, m, "lost")) == 0);
    vm_pop_root(vm, 1);
}

static void errors_cross_native_levels(void **state)
{
    VM *vm = *state;
    VModule *m = vm_module_new(vm, "t", "<t>");
    vm_push_root(vm, v_obj(m));
    add_native(vm, m, &callback_def);
    const char *src =
        "let a = callback(fn(x) { return x + 1 })\n"
        "let b = nil\n"
        "try { callback(fn(x) { error(\"inside\") }) } catch e { b = e }\n"
        "let c = callback(fn(x) { try { error(1) } catch e { return x * 10 } })\n"
        "let d = callback(fn(x) { return callback(fn(y) { return y + x }) })\n";
    m->main = lc_compile_source(vm, m, src, strlen(src), stderr, NULL);
    assert_non_null(m->main);
    assert_int_equal(vm_run_module(vm, m), 0);
    assert_true(AS_INT(global(vm, m, "a")) == 16);
    assert_true(str_eq_cstr(AS_STR(global(vm, m, "b")), "inside"));
    assert_true(AS_INT(global(vm, m, "c")) == 140);
    assert_true(AS_INT(global(vm, m, "d")) == 56);
    assert_int_equal(vm->clevel, 0);
    assert_int_equal(vm->nhandlers, 0);
    assert_int_equal(vm->nroots, 1);
    vm_pop_root(vm, 1);
}

static void uncaught_error_trace(void **state)
{
    VM *vm = *state;
    assert_int_equal(run(vm, "fn f(x) {\n  return x / 0\n}\nfn g() { return f(1) }\ng()\n", NULL), -1);
    assert_true(err_is(vm, "division by zero"));
    assert_int_equal(vm->ntrace, 3);
    assert_int_equal(vm->trace[0].line, 2);
    assert_int_equal(vm->trace[0].col, 12);
    assert_string_equal(vm->trace[1].p->name->data, "g");
    assert_int_equal(vm->trace[2].line, 5);
    char buf[512] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    vm_print_error(vm, f);
    fclose(f);
    assert_string_equal(buf, "<test>:2:12: division by zero\n"
                             "    2 |   return x / 0\n"
                             "      |            ^\n"
                             "  in f at <test>:2:12\n"
                             "  in g at <test>:4:17\n"
                             "  in <main> at <test>:5:1\n");
    assert_int_equal(vm_error_status(vm), 1);
}

static void recursion_is_an_error(void **state)
{
    VM *vm = *state;    /* 1000 frames at most */
    assert_int_equal(run(vm, "fn down(n) { return down(n + 1) }\ndown(0)", NULL), -1);
    assert_true(err_is(vm, "stack overflow (more than 1000 nested calls)"));
    assert_int_equal(vm->ntrace, VM_TRACE_MAX);
    assert_true(vm->trace_skipped > 900);
    /* and the VM goes on */
    VModule *m = NULL;
    assert_int_equal(run(vm, "fn down(n) { if n == 0 { return 0 } return down(n - 1) }\n"
                             "let r = down(900)", &m), 0);
}

static void step_limit_and_interrupt(void **state)
{
    (void)state;
    VmOptions o = {.step_limit = 10000};
    VM *vm = vm_new(&o);
    assert_non_null(vm);
    assert_int_equal(run(vm, "try { while true { } } catch e { print(\"not caught\") }", NULL), -1);
    assert_true(err_is(vm, "step limit exceeded"));
    vm_free(vm);
    vm_poll_flag &= ~POLL_STEPS;

    vm = vm_new(NULL);
    VModule *m = NULL;
    assert_int_equal(run(vm, "let n = 0\nfn spin() { try { while true { n += 1 } } catch e { } }", &m), 0);
    vm_poll_flag |= POLL_SIGINT;     /* as SIGINT does */
    Value r;
    assert_int_equal(vm_pcall(vm, global(vm, m, "spin"), 0, NULL, &r), -1);
    assert_true(err_is(vm, "interrupted"));
    assert_int_equal(vm_error_status(vm), 130);
    assert_int_equal(vm_poll_flag & POLL_SIGINT, 0);
    vm_free(vm);
}

static void closures_and_upvalues(void **state)
{
    VM *vm = *state;
    VModule *m = NULL;
    assert_int_equal(run(vm, "fn mk() { let c = 0\n return [fn() { c += 1; return c }, fn() { return c }] }\n"
                             "let p = mk()\n p[0]()\n p[0]()\n let r = p[1]()\n"
                             "let fs = []\n for i in 0..3 { let j = i * 2\n push(fs, fn() { return i + j }) }\n"
                             "let r2 = fs[2]()\n", &m), 0);
    assert_true(AS_INT(global(vm, m, "r")) == 2);
    assert_true(AS_INT(global(vm, m, "r2")) == 6);
    assert_null(vm->open_upvals);
}

static void gc_stress_run(void **state)
{
    VM *vm = *state;
    VModule *m = NULL;
    vm_gc_stress(vm, true);
    assert_int_equal(run(vm, "let a = []\n for i in 0..200 { push(a, {\"k\": str(i) + \"x\", \"v\": [i]}) }\n"
                             "let s = \"\"\n for x in a { s += x.k }\n let n = len(s)\n"
                             "let last = a[199].k", &m), 0);
    assert_true(AS_INT(global(vm, m, "n")) == 690);
    assert_true(str_eq_cstr(AS_STR(global(vm, m, "last")), "199x"));
    vm_gc_stress(vm, false);
}

static void runs_under_allocation_failure(void **state)
{
    (void)state;
    const char *src = "fn f(n) { let m = {}\n for i in 0..n { m[str(i)] = [i, \"s\" + str(i)] }\n return m }\n"
                      "let r = 0\n try { r = len(f(30)) } catch e { r = e }\n";
    size_t base = mem_in_use();
    int ok = 0, failed = 0;
    FILE *devnull = fopen("/dev/null", "w");
    for (unsigned long n = 1; n < 600; n += 7) {
        VM *vm = vm_new(NULL);
        if (!vm)
            continue;
        mem_fail_after(n);
        VModule *m = lc_load_source(vm, src, strlen(src), "<oom>", devnull);
        int st = m ? vm_run_module(vm, m) : -2;
        mem_fail_after(0);
        if (st == 0) {
            Value r = global(vm, m, "r");
            /* the try may have caught the out-of-memory error */
            assert_true((IS_INT(r) && AS_INT(r) == 30) ||
                        (IS_STR(r) && str_eq_cstr(AS_STR(r), "out of memory")));
            ok += IS_INT(r);
            failed += IS_STR(r);
        } else {
            failed++;
        }
        vm_free(vm);
        assert_int_equal(mem_in_use(), base);
    }
    fclose(devnull);
    assert_true(ok > 0);
    assert_true(failed > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(runs_and_returns_values, setup, teardown),
        cmocka_unit_test_setup_teardown(c_calls_comb, setup, teardown),
        cmocka_unit_test_setup_teardown(errors_cross_native_levels, setup, teardown),
        cmocka_unit_test_setup_teardown(uncaught_error_trace, setup, teardown),
        cmocka_unit_test_setup_teardown(recursion_is_an_error, setup, teardown),
        cmocka_unit_test(step_limit_and_interrupt),
        cmocka_unit_test_setup_teardown(closures_and_upvalues, setup, teardown),
        cmocka_unit_test_setup_teardown(gc_stress_run, setup, teardown),
        cmocka_unit_test_setup_teardown(collection_keeps_callers_registers, setup, teardown),
        cmocka_unit_test(runs_under_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
