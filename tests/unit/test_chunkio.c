/* test_chunkio: a compiled module to bytes and back runs as the compiled
 * one did; truncated, damaged, foreign or out-of-range bytes are refused,
 * never crash; modules with constants that have no encoding are not saved. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "lang/load.h"
#include "store/bytes.h"
#include "vm/chunkio.h"
#include "vm/opcodes.h"
#include "vm/vm.h"

#define KEY 0x1234abcdu

/* Loops, closures, try, calls of natives by name, pipelines (array
 * constants), every constant kind, a string with a NUL. */
static const char *SRC =
    "let K = [1, -2, 2.5, \"a\\0b\", nil, true, false, [3, [4]]]\n"
    "fn add(a, b) { return a + b }\n"
    "fn counter() {\n"
    "    let n = 0\n"
    "    return fn() { n += 1\n return n }\n"
    "}\n"
    "let c = counter()\n"
    "c()\n"
    "let s = 0\n"
    "for i in 0..10 { if i % 2 == 0 { s += i } }\n"
    "let e = nil\n"
    "try { error(\"boom\") } catch x { e = x }\n"
    "let n = [{x: 1}, {x: 2}, {x: 3}] | where x > 1 | count\n"
    "let out = str(K) + \" \" + str(add(2, 3)) + \" \" + str(c()) + \" \" + str(s) + \" \" +\n"
    "    e + \" \" + str(n) + \" \" + str(1e308 * 10)\n";

static int setup(void **state)
{
    VM *vm = vm_new(NULL);
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

static VModule *compiled(VM *vm, const char *src)
{
    VModule *m = lc_load_source(vm, src, strlen(src), "<test>", stderr);
    assert_non_null(m);
    vm_push_root(vm, v_obj(m));
    return m;
}

/* The module's `out` after running it. */
static const char *run_out(VM *vm, VModule *m)
{
    assert_int_equal(vm_run_module(vm, m), 0);
    Value *slot = vm_map_ref(m->symbols, v_obj(vm_str_cstr(vm, "out")));
    assert_non_null(slot);
    Value v = m->vars[slot->as.i];
    assert_true(IS_STR(v));
    return AS_STR(v)->data;
}

typedef struct Load {
    VModule *m;
    const unsigned char *p;
    size_t n;
    uint64_t key;
    VProto *main;
} Load;

static void load_job(VM *vm, void *ud)
{
    Load *l = ud;
    l->m = vm_module_new(vm, "t", "<test>");
    vm_push_root(vm, v_obj(l->m));
    l->main = vm_chunk_load(vm, l->m, l->p, l->n, l->key, -1);
    vm_pop_root(vm, 1);
}

/* bytes loaded into a new module: its main, or NULL. */
static VProto *load(VM *vm, const unsigned char *p, size_t n, uint64_t key, VModule **m)
{
    Load l = {.p = p, .n = n, .key = key};
    assert_int_equal(vm_protect(vm, load_job, &l), 0);
    if (m)
        *m = l.m;
    return l.main;
}

static VStr *saved(VM *vm, VModule *m)
{
    VStr *s = vm_chunk_save(vm, m, KEY);
    assert_non_null(s);
    vm_push_root(vm, v_obj(s));
    return s;
}

/* a saved (its bytes in *s) and loaded into a new module *b, held as a
 * root: b's main. */
static VProto *reloaded(VM *vm, VModule *a, VStr **s, VModule **b)
{
    *s = saved(vm, a);
    VProto *main = load(vm, (const unsigned char *)(*s)->data, (*s)->len, KEY, b);
    assert_non_null(main);
    (*b)->main = main;
    vm_push_root(vm, v_obj(*b));
    return main;
}

static void round_trip_runs_the_same(void **state)
{
    VM *vm = *state;
    VModule *a = compiled(vm, SRC), *b;
    VStr *s;
    VProto *main = reloaded(vm, a, &s, &b);
    char want[512];
    snprintf(want, sizeof want, "%s", run_out(vm, a));
    assert_string_equal(run_out(vm, b), want);
    assert_string_equal(want, "[1, -2, 2.5, \"a\\x00b\", nil, true, false, [3, [4]]] 5 2 20 boom 2 inf");
    /* the same names, in the same slots, exported alike */
    assert_int_equal(b->nvars, a->nvars);
    for (size_t i = 0; i < a->nvars; i++)
        assert_int_equal(b->exported[i], a->exported[i]);
    /* and the encoding of the loaded module is the same bytes */
    b->main = main;
    VStr *again = vm_chunk_save(vm, b, KEY);
    assert_non_null(again);
    assert_int_equal(again->len, s->len);
    assert_memory_equal(again->data, s->data, s->len);
    vm_pop_root(vm, 3);
}

/* A string constant of several functions is one string once loaded (each
 * string is an allocation at start-up), and its value is unchanged. */
static void repeated_strings_are_shared(void **state)
{
    VM *vm = *state;
    VModule *a = compiled(vm, "fn f() { return \"words\" }\n"
                              "fn g() { return [\"other\", \"words\"] }\n"
                              "let out = f() + g()[1] + g()[0]\n");
    VModule *b;
    VStr *s;
    VProto *main = reloaded(vm, a, &s, &b);
    assert_int_equal(main->nprotos, 2);
    const VProto *f = main->protos[0], *g = main->protos[1];
    VStr *in_f = NULL, *in_g = NULL;
    for (size_t i = 0; i < f->nk; i++)
        if (IS_STR(f->k[i]))
            in_f = AS_STR(f->k[i]);
    for (size_t i = 0; i < g->nk; i++)
        if (IS_STR(g->k[i]) && !strcmp(AS_STR(g->k[i])->data, "words"))
            in_g = AS_STR(g->k[i]);
    assert_non_null(in_f);
    assert_non_null(in_g);
    assert_ptr_equal(in_f, in_g);
    assert_string_equal(run_out(vm, b), "wordswordsother");
    vm_pop_root(vm, 3);
}

static void every_truncation_is_refused(void **state)
{
    VM *vm = *state;
    VModule *a = compiled(vm, SRC);
    VStr *s = saved(vm, a);
    for (size_t n = 0; n < s->len; n++)
        assert_null(load(vm, (const unsigned char *)s->data, n, KEY, NULL));
    vm_pop_root(vm, 2);
}

static void damaged_bytes_are_refused(void **state)
{
    VM *vm = *state;
    VModule *a = compiled(vm, SRC);
    VStr *s = saved(vm, a);
    unsigned char *buf = test_malloc(s->len);
    for (size_t i = 0; i < s->len; i++) {
        memcpy(buf, s->data, s->len);
        buf[i] ^= (unsigned char)(1u << (i % 8));
        assert_null(load(vm, buf, s->len, KEY, NULL));
    }
    test_free(buf);
    vm_pop_root(vm, 2);
}

static void another_key_or_build_is_refused(void **state)
{
    VM *vm = *state;
    VModule *a = compiled(vm, SRC);
    VStr *s = saved(vm, a);
    assert_null(load(vm, (const unsigned char *)s->data, s->len, KEY + 1, NULL));
    /* another build: the fingerprint changed and the checksum made anew */
    unsigned char *buf = test_malloc(s->len);
    memcpy(buf, s->data, s->len);
    st_put64(buf + 8, st_get64(buf + 8) ^ 1);
    st_put64(buf + s->len - 8, XXH3_64bits(buf, s->len - 8));
    assert_null(load(vm, buf, s->len, KEY, NULL));
    test_free(buf);
    vm_pop_root(vm, 2);
}

/* An instruction of main replaced, the file saved with a good checksum:
 * the operand check alone must refuse it. */
static void refuses_patched(VM *vm, Instr bad, size_t at_from_end)
{
    VModule *a = compiled(vm, "let x = 1\nlet y = \"s\"\nfn f(v) { return v + x }\nlet out = str(f(2)) + y\n");
    VProto *p = a->main;
    assert_true(p->ncode > at_from_end);
    p->code[p->ncode - 1 - at_from_end] = bad;
    VStr *s = saved(vm, a);
    assert_null(load(vm, (const unsigned char *)s->data, s->len, KEY, NULL));
    vm_pop_root(vm, 2);
}

static void out_of_range_operands_are_refused(void **state)
{
    VM *vm = *state;
    refuses_patched(vm, mk_abx(OP_LOADK, 0, 60000), 1);           /* constant */
    refuses_patched(vm, mk_abx(OP_GETMOD, 0, 60000), 1);          /* module slot */
    refuses_patched(vm, mk_abx(OP_GETNATIVE, 0, 65535), 1);       /* native */
    refuses_patched(vm, mk_abx(OP_CLOSURE, 0, 9), 1);             /* nested function */
    refuses_patched(vm, mk_abc(OP_ADDK, 0, 0, 250), 1);           /* constant in C */
    refuses_patched(vm, mk_abc(OP_SETINDEXK, 0, 250, 0), 1);      /* constant in B */
    refuses_patched(vm, mk_abc(OP_CALLN, 0, 0, 255), 1);          /* native in C */
    refuses_patched(vm, mk_abx(OP_FORPREP, 0, 32767 + 5), 1);     /* forward past the end */
    refuses_patched(vm, mk_abx(OP_FORLOOP, 0, 32767 + 1000), 1);  /* back before the start */
    refuses_patched(vm, mk_abx(OP_ITERLOOP, 0, 32767 - 5), 1);    /* back past the end */
    refuses_patched(vm, mk_abc(OP_GETUPV, 0, 3, 0), 1);           /* upvalue */
    refuses_patched(vm, mk_sj(OP_JMP, 1000), 1);                  /* jump */
    refuses_patched(vm, mk_sj(OP_JMP, -1000), 1);
    refuses_patched(vm, mk_abc(OP_TEST, 0, 0, 1), 1);             /* a test without its JMP */
    refuses_patched(vm, mk_abc(OP_RETURN, 0, 0, 0), 0);           /* no RETURN0 at the end */
    refuses_patched(vm, (Instr)0xff, 1);                          /* no such opcode */
}

static void regex_literals_are_not_saved(void **state)
{
    VM *vm = *state;
    VModule *a = compiled(vm, "fn f(s) { return s ~ /a+b/ }\nlet out = str(f(\"aab\"))\n");
    assert_null(vm_chunk_save(vm, a, KEY));
    vm_pop_root(vm, 1);
}

static void build_is_stable(void **state)
{
    (void)state;
    assert_true(vm_chunk_build() != 0);
    assert_true(vm_chunk_build() == vm_chunk_build());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(round_trip_runs_the_same, setup, teardown),
        cmocka_unit_test_setup_teardown(repeated_strings_are_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(every_truncation_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(damaged_bytes_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(another_key_or_build_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(out_of_range_operands_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(regex_literals_are_not_saved, setup, teardown),
        cmocka_unit_test(build_is_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
