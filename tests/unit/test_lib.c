/* test_lib: the library natives (vm/lib_*.c) called through the VM's C API:
 * fmt against snprintf, sort against qsort and for stability, reading files
 * across the read buffer's boundaries, NUL bytes, allocation failures. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lang/load.h"
#include "store/cache.h"
#include "store/mem.h"
#include "vm/lib_store.h"
#include "vm/natives.h"

#define CHUNK 65536     /* lib_io.c's read buffer */

static VM *vm;

static int setup(void **state)
{
    (void)state;
    vm = vm_new(NULL);
    return vm ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    vm_free(vm);
    vm = NULL;
    return 0;
}

static Value str(const char *p, size_t n)
{
    return v_obj(vm_str_new(vm, p, n));
}

static Value cstr(const char *s)
{
    return str(s, strlen(s));
}

/* Calls the native called name: 0 and *out, or -1 with the error in vm->err. */
static int call(const char *name, int argc, const Value *argv, Value *out)
{
    int i = vm_native_find(name, strlen(name));
    assert_true(i >= 0);
    return vm_pcall(vm, v_obj(vm->natives[i]), argc, argv, out);
}

static Value call_ok(const char *name, int argc, const Value *argv)
{
    Value r;
    if (call(name, argc, argv, &r)) {
        VStr *e = vm_tostring(vm, vm->err);
        fail_msg("%s raised: %.*s", name, (int)e->len, e->data);
    }
    return r;
}

/* The error message a failing call raised. */
static const char *call_err(const char *name, int argc, const Value *argv)
{
    Value r;
    assert_int_equal(call(name, argc, argv, &r), -1);
    assert_true(IS_STR(vm->err));
    return AS_STR(vm->err)->data;
}

static void assert_bytes(Value v, const char *p, size_t n)
{
    assert_true(IS_STR(v));
    assert_int_equal(AS_STR(v)->len, n);
    assert_memory_equal(AS_STR(v)->data, p, n);
}

/* ---- fmt against snprintf ------------------------------------------- */

static const char *const flag_sets[] = {"", "-", "+", " ", "0", "#", "-+", "+0", " 0", "-#", "0#", "-+ 0#"};
static const char *const widths[] = {"", "1", "5", "12", "30"};
static const char *const precs[] = {"", ".0", ".1", ".3", ".12"};

/* Whether C defines the flag set for conv (fmt refuses the others). */
static bool flags_fit(const char *flags, char conv)
{
    const char *ok = strchr("di", conv) ? "-+ 0" : strchr("xXo", conv) ? "-0#" : "-+ 0#";
    for (const char *f = flags; *f; f++)
        if (!strchr(ok, *f))
            return false;
    return true;
}

/* fmt(spec, v) must equal the C text `want`. */
static void check_fmt(const char *spec, Value v, const char *want)
{
    Value args[2] = {cstr(spec), v};
    Value r = call_ok("fmt", 2, args);
    VStr *s = AS_STR(r);
    if (s->len != strlen(want) || memcmp(s->data, want, s->len))
        fail_msg("fmt(\"%s\") gave \"%.*s\", snprintf \"%s\"", spec, (int)s->len, s->data, want);
}

static void fmt_ints_match_snprintf(void **state)
{
    (void)state;
    static const int64_t vals[] = {0, 1, -1, 42, -42, 255, 1234567, INT64_MAX, INT64_MIN};
    static const char convs[] = "dixXo";
    int checked = 0;
    for (size_t c = 0; convs[c]; c++)
        for (size_t f = 0; f < sizeof flag_sets / sizeof *flag_sets; f++) {
            if (!flags_fit(flag_sets[f], convs[c]))
                continue;
            for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
                for (size_t p = 0; p < sizeof precs / sizeof *precs; p++)
                    for (size_t v = 0; v < sizeof vals / sizeof *vals; v++) {
                        char spec[64], cspec[64], want[128];
                        snprintf(spec, sizeof spec, "<%%%s%s%s%c>", flag_sets[f], widths[w],
                                 precs[p], convs[c]);
                        snprintf(cspec, sizeof cspec, "<%%%s%s%sll%c>", flag_sets[f], widths[w],
                                 precs[p], convs[c]);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                        if (strchr("di", convs[c]))
                            snprintf(want, sizeof want, cspec, (long long)vals[v]);
                        else
                            snprintf(want, sizeof want, cspec, (unsigned long long)vals[v]);
#pragma GCC diagnostic pop
                        check_fmt(spec, v_int(vals[v]), want);
                        checked++;
                    }
        }
    assert_true(checked > 1000);
}

static void fmt_floats_match_snprintf(void **state)
{
    (void)state;
    static const double vals[] = {0.0, -0.0, 1.5, -2.25, 1e-10, 123456789.125, 1e300, -7e-300,
                                  INFINITY, -INFINITY, NAN};
    static const char convs[] = "fFeEgG";
    int checked = 0;
    for (size_t c = 0; convs[c]; c++)
        for (size_t f = 0; f < sizeof flag_sets / sizeof *flag_sets; f++)
            for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
                for (size_t p = 0; p < sizeof precs / sizeof *precs; p++)
                    for (size_t v = 0; v < sizeof vals / sizeof *vals; v++) {
                        char spec[64], want[512];
                        snprintf(spec, sizeof spec, "<%%%s%s%s%c>", flag_sets[f], widths[w],
                                 precs[p], convs[c]);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                        snprintf(want, sizeof want, spec, vals[v]);
#pragma GCC diagnostic pop
                        check_fmt(spec, v_float(vals[v]), want);
                        checked++;
                    }
    assert_true(checked > 10000);
    /* an int given to a float conversion is its value */
    check_fmt("%.2f", v_int(3), "3.00");
    /* a float with an integral value given to %d is that int */
    check_fmt("%d", v_float(-12.0), "-12");
}

static void fmt_strings_pad_by_bytes(void **state)
{
    (void)state;
    static const char *const specs[] = {"%s", "%8s", "%-8s", "%.2s", "%8.2s", "%-8.0s", "%1s"};
    static const char *const vals[] = {"", "a", "abc", "abcdefghij"};
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++)
        for (size_t v = 0; v < sizeof vals / sizeof *vals; v++) {
            char want[64];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
            snprintf(want, sizeof want, specs[s], vals[v]);
#pragma GCC diagnostic pop
            check_fmt(specs[s], cstr(vals[v]), want);
        }
    /* NUL bytes are bytes: counted in widths, kept in the output */
    Value args[3] = {cstr("[%5s|%-3c]"), str("a\0b", 3), v_int(0)};
    assert_bytes(call_ok("fmt", 3, args), "[  a\0b|\0  ]", 11);
    Value nulfmt[2] = {str("x\0%d\0", 5), v_int(7)};
    assert_bytes(call_ok("fmt", 2, nulfmt), "x\0" "7\0", 4);
}

static void fmt_refuses_what_c_leaves_undefined(void **state)
{
    (void)state;
    static const char *const bad[] = {"%#d", "%+x", "% o", "%0s", "%+c", "%q", "%", "%5", "%.",
                                      "%10001d", "%.10001f", "%ld", "%*d"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Value args[2] = {cstr(bad[i]), v_int(1)};
        const char *e = call_err("fmt", 2, args);
        assert_true(strncmp(e, "fmt: ", 5) == 0);
    }
    Value few[2] = {cstr("%d %d"), v_int(1)};
    assert_string_equal(call_err("fmt", 2, few), "fmt: no argument for '%d' (conversion 2)");
    Value many[3] = {cstr("%d"), v_int(1), v_int(2)};
    assert_string_equal(call_err("fmt", 3, many), "fmt: 2 values given, but the format uses 1");
    Value type[2] = {cstr("%x"), v_float(1.5)};
    assert_string_equal(call_err("fmt", 2, type), "fmt: argument 2 must be an int, got float");
    Value huge[2] = {cstr("%d"), v_float(1e19)};
    assert_string_equal(call_err("fmt", 2, huge), "fmt: argument 2 must be an int, got float");
}

/* ---- sort ----------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts the n ints of want with sort() and with qsort and compares. */
static void check_int_sort(int64_t *want, size_t n)
{
    VArray *a = vm_array_new(vm, n);
    for (size_t i = 0; i < n; i++)
        vm_array_push(vm, a, v_int(want[i]));
    Value arg = v_obj(a);
    Value r = call_ok("sort", 1, &arg);
    assert_ptr_equal(AS_ARRAY(r), a);
    qsort(want, n, sizeof *want, cmp_i64);
    assert_int_equal(a->len, n);
    for (size_t i = 0; i < n; i++) {
        assert_true(IS_INT(a->items[i]));
        assert_int_equal(a->items[i].as.i, want[i]);
    }
}

static void sort_ints_every_shape(void **state)
{
    (void)state;
    size_t cap = 200000;
    int64_t *v = mem_alloc(cap * sizeof *v);
    assert_non_null(v);
    srand(7);
    /* every small size, in random, sorted, reversed, equal and few-valued orders */
    for (size_t n = 0; n < 300; n++)
        for (int shape = 0; shape < 5; shape++) {
            for (size_t i = 0; i < n; i++) {
                int64_t r = (int64_t)rand() * ((rand() & 1) ? 1 : -1);
                v[i] = shape == 0 ? r : shape == 1 ? (int64_t)i : shape == 2 ? (int64_t)(n - i)
                     : shape == 3 ? 5 : r % 3;
            }
            check_int_sort(v, n);
        }
    /* large: random, organ pipe, sawtooth, extremes */
    for (int shape = 0; shape < 4; shape++) {
        for (size_t i = 0; i < cap; i++)
            v[i] = shape == 0 ? ((int64_t)rand() << 31) ^ rand()
                 : shape == 1 ? (int64_t)(i < cap / 2 ? i : cap - i)
                 : shape == 2 ? (int64_t)(i % 1000)
                 : (i % 2 ? INT64_MAX : INT64_MIN);
        check_int_sort(v, cap);
    }
    mem_free(v, cap * sizeof *v);
}

static VModule *run_comb(const char *src)
{
    VModule *m = lc_load_source(vm, src, strlen(src), "<test>", stderr);
    assert_non_null(m);
    assert_int_equal(vm_run_module(vm, m), 0);
    return m;
}

static Value module_var(VModule *m, const char *name)
{
    Value *slot = vm_map_ref(m->symbols, cstr(name));
    assert_non_null(slot);
    return m->vars[slot->as.i];
}

/* Runs a comb program and returns its top-level variable name. */
static Value comb_var(const char *src, const char *name)
{
    return module_var(run_comb(src), name);
}

static void sort_with_comparator_is_stable(void **state)
{
    (void)state;
    Value less = comb_var("fn less(x, y) { return x[0] < y[0] }", "less");
    size_t n = 5000;
    VArray *a = vm_array_new(vm, n);
    vm_push_root(vm, v_obj(a));
    for (size_t i = 0; i < n; i++) {
        VArray *pair = vm_array_new(vm, 2);
        vm_array_push(vm, pair, v_int(rand() % 17));
        vm_array_push(vm, pair, v_int((int64_t)i));
        vm_array_push(vm, a, v_obj(pair));
    }
    Value args[2] = {v_obj(a), less};
    call_ok("sort", 2, args);
    assert_int_equal(a->len, n);
    for (size_t i = 1; i < n; i++) {
        VArray *p = AS_ARRAY(a->items[i - 1]), *q = AS_ARRAY(a->items[i]);
        assert_true(p->items[0].as.i <= q->items[0].as.i);
        if (p->items[0].as.i == q->items[0].as.i)
            assert_true(p->items[1].as.i < q->items[1].as.i);   /* input order kept */
    }
    vm_pop_root(vm, 1);
}

static void sort_comparator_errors_leave_array(void **state)
{
    (void)state;
    /* raises on its 200th call, deep into the merge passes */
    Value bad = comb_var("let calls = 0\n"
                         "fn bad(x, y) { calls += 1; if calls == 200 { error(\"stop\") } return x < y }",
                         "bad");
    vm_push_root(vm, bad);  /* its module goes when the next takes its name */
    Value nonbool = comb_var("fn nb(x, y) { return 0 }", "nb");
    VArray *a = vm_array_new(vm, 100);
    vm_push_root(vm, v_obj(a));
    for (int i = 0; i < 100; i++)
        vm_array_push(vm, a, v_int(100 - i));
    Value args[2] = {v_obj(a), bad};
    assert_string_equal(call_err("sort", 2, args), "stop");
    for (int i = 0; i < 100; i++)
        assert_int_equal(a->items[i].as.i, 100 - i);
    args[1] = nonbool;
    assert_string_equal(call_err("sort", 2, args),
                        "sort: the comparator must return a bool, got int");
    assert_int_equal(a->len, 100);
    assert_int_equal(vm->nroots, 2);    /* the sort's own roots are gone */
    vm_pop_root(vm, 2);
}

static void sort_mixed_numbers_and_strings(void **state)
{
    (void)state;
    VArray *a = vm_array_new(vm, 6);
    vm_array_push(vm, a, v_float(2.5));
    vm_array_push(vm, a, v_int(1));
    vm_array_push(vm, a, v_float(1.0));
    vm_array_push(vm, a, v_int(-3));
    vm_array_push(vm, a, v_float(-INFINITY));
    vm_array_push(vm, a, v_int(2));
    Value arg = v_obj(a);
    call_ok("sort", 1, &arg);
    static const double want[] = {-INFINITY, -3, 1, 1, 2, 2.5};
    for (int i = 0; i < 6; i++)
        assert_true((IS_INT(a->items[i]) ? (double)a->items[i].as.i : a->items[i].as.f) ==
                    want[i]);
    assert_true(IS_INT(a->items[2]) && IS_FLOAT(a->items[3]));   /* 1 before 1.0: stable */

    VArray *s = vm_array_new(vm, 4);
    vm_array_push(vm, s, str("b\0", 2));
    vm_array_push(vm, s, cstr("b"));
    vm_array_push(vm, s, cstr(""));
    vm_array_push(vm, s, str("a\0z", 3));
    arg = v_obj(s);
    call_ok("sort", 1, &arg);
    assert_bytes(s->items[0], "", 0);
    assert_bytes(s->items[1], "a\0z", 3);
    assert_bytes(s->items[2], "b", 1);
    assert_bytes(s->items[3], "b\0", 2);

    vm_array_push(vm, s, v_int(1));
    assert_string_equal(call_err("sort", 1, &arg), "sort: cannot compare string and int");
}

/* ---- reading files across buffer boundaries -------------------------- */

/* A temporary file holding n bytes of p; its path in path. */
static void temp_file(char path[64], const char *p, size_t n)
{
    strcpy(path, "/tmp/comb-test-lib-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, n), (ssize_t)n);
    close(fd);
}

static Value open_file(const char *path)
{
    Value arg = cstr(path);
    return call_ok("open", 1, &arg);
}

/* Text of the given line lengths, each line's bytes 'a' + its number,
 * newline-ended unless last_newline is false. */
static char *make_lines(const size_t *lens, size_t nlines, bool last_newline, size_t *size,
                        size_t *alloc)
{
    size_t n = 0;
    for (size_t i = 0; i < nlines; i++)
        n += lens[i] + 1;
    char *p = mem_alloc(n), *w = p;
    assert_non_null(p);
    for (size_t i = 0; i < nlines; i++) {
        memset(w, 'a' + (int)(i % 26), lens[i]);
        w += lens[i];
        *w++ = '\n';
    }
    *size = last_newline ? n : n - 1;
    *alloc = n;
    return p;
}

static void lines_cross_buffer_boundaries(void **state)
{
    (void)state;
    /* lines ending just before, at and after each buffer boundary, one
     * three buffers long, empty ones, and no final newline */
    static const size_t lens[] = {CHUNK - 2, 0, CHUNK - 1, CHUNK, 1, CHUNK + 1, 3 * CHUNK + 5,
                                  0, 0, 10, 2 * CHUNK, 7};
    size_t nlines = sizeof lens / sizeof *lens;
    for (int last_nl = 0; last_nl < 2; last_nl++) {
        size_t size, alloc;
        char *text = make_lines(lens, nlines, last_nl, &size, &alloc);
        char path[64];
        temp_file(path, text, size);

        /* readline, then nil at the end */
        Value f = open_file(path);
        vm_push_root(vm, f);
        for (size_t i = 0; i < nlines; i++) {
            Value line = call_ok("readline", 1, &f);
            assert_true(IS_STR(line));
            assert_int_equal(AS_STR(line)->len, lens[i]);
            for (size_t k = 0; k < lens[i]; k++)
                assert_int_equal(AS_STR(line)->data[k], 'a' + (int)(i % 26));
        }
        assert_true(IS_NIL(call_ok("readline", 1, &f)));
        call_ok("close", 1, &f);
        vm_pop_root(vm, 1);

        /* read(f, n) in pieces of every awkward size gives back the file */
        static const int64_t pieces[] = {1, 7, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17};
        for (size_t p = 0; p < sizeof pieces / sizeof *pieces; p++) {
            f = open_file(path);
            vm_push_root(vm, f);
            size_t at = 0;
            for (;;) {
                Value args[2] = {f, v_int(pieces[p])};
                Value s = call_ok("read", 2, args);
                if (IS_NIL(s))
                    break;
                size_t len = AS_STR(s)->len;
                assert_true(len == (size_t)pieces[p] || at + len == size);
                assert_true(at + len <= size);
                assert_memory_equal(AS_STR(s)->data, text + at, len);
                at += len;
            }
            assert_int_equal(at, size);
            vm_pop_root(vm, 1);
        }
        /* a line, then the whole rest at once */
        f = open_file(path);
        call_ok("readline", 1, &f);
        Value rest = call_ok("read", 1, &f);
        assert_bytes(rest, text + lens[0] + 1, size - lens[0] - 1);
        unlink(path);
        mem_free(text, alloc);
    }
}

static void lines_keep_nul_and_cr_bytes(void **state)
{
    (void)state;
    static const char text[] = "a\0b\r\n\0\n\r\nlast\0";
    char path[64];
    temp_file(path, text, sizeof text - 1);
    Value f = open_file(path);
    assert_bytes(call_ok("readline", 1, &f), "a\0b\r", 4);
    assert_bytes(call_ok("readline", 1, &f), "\0", 1);
    assert_bytes(call_ok("readline", 1, &f), "\r", 1);
    assert_bytes(call_ok("readline", 1, &f), "last\0", 5);
    assert_true(IS_NIL(call_ok("readline", 1, &f)));
    unlink(path);
}

static void io_errors_name_the_file(void **state)
{
    (void)state;
    Value arg = cstr("/nonexistent-dir/file");
    assert_string_equal(call_err("open", 1, &arg),
                        "open: cannot open '/nonexistent-dir/file': No such file or directory");
    Value args[2] = {cstr("/tmp"), cstr("w")};
    assert_string_equal(call_err("open", 2, args), "open: cannot open '/tmp': Is a directory");
    /* a full device: the error comes when the buffer is written, at close */
    if (access("/dev/full", W_OK) == 0) {
        Value full[2] = {cstr("/dev/full"), cstr("w")};
        Value f = call_ok("open", 2, full);
        Value w[2] = {f, cstr("data")};
        call_ok("write", 2, w);
        assert_string_equal(call_err("close", 1, &f),
                            "close: cannot write '/dev/full': No space left on device");
        assert_true(IS_NIL(call_ok("close", 1, &f)));   /* closed all the same */
    }
}

/* ---- strings with NUL bytes ------------------------------------------ */

static void strings_hold_nul_bytes(void **state)
{
    (void)state;
    Value s = str("a\0b\0\0c", 6);
    Value sep = str("\0", 1);
    Value args[3] = {s, sep, v_int(2)};
    Value parts = call_ok("split", 2, args);
    assert_int_equal(AS_ARRAY(parts)->len, 4);
    assert_bytes(AS_ARRAY(parts)->items[2], "", 0);
    assert_bytes(AS_ARRAY(parts)->items[3], "c", 1);
    Value found = call_ok("find", 3, args);
    assert_int_equal(found.as.i, 3);
    Value j[2] = {parts, sep};
    assert_bytes(call_ok("join", 2, j), "a\0b\0\0c", 6);
    assert_bytes(call_ok("upper", 1, &s), "A\0B\0\0C", 6);
    Value sub[3] = {s, v_int(1), v_int(-1)};
    assert_bytes(call_ok("sub", 3, sub), "\0b\0\0", 4);
    Value rep[2] = {str("\0x", 2), v_int(3)};
    assert_bytes(call_ok("repeat", 2, rep), "\0x\0x\0x", 6);
    Value t = str("\0 \t x\0 \n", 8);
    assert_bytes(call_ok("trim", 1, &t), "\0 \t x\0", 6);
    Value ws = call_ok("split", 1, &t);
    assert_int_equal(AS_ARRAY(ws)->len, 2);
    assert_bytes(AS_ARRAY(ws)->items[1], "x\0", 2);
}

/* A view from `s += t` is not NUL-terminated at its own length: paths
 * made that way must still name the right file. */
static void paths_from_views(void **state)
{
    (void)state;
    char path[64];
    temp_file(path, "ok\n", 3);
    char src[512];
    snprintf(src, sizeof src,
             "let p = \"/tmp/\" + repeat(\"./\", 40)\np += \"%s\"\nlet q = p\n"
             "p += \"-not-this\"\nlet f = open(q)\nlet line = readline(f)\n",
             path + 5);
    VModule *m = run_comb(src);
    Value line = module_var(m, "line"), q = module_var(m, "q");
    assert_bytes(line, "ok", 2);
    assert_true(AS_STR(q)->data[AS_STR(q)->len] != '\0');  /* the case meant */
    unlink(path);
}

/* ---- allocation failures --------------------------------------------- */

static void allocation_failures_raise_cleanly(void **state)
{
    (void)state;
    char path[64];
    temp_file(path, "one\ntwo\nthree\n", 14);
    int failed = 0;
    for (unsigned long n = 1; n < 40; n++) {
        Value big = cstr("w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12");
        Value f = cstr(path);
        vm_push_root(vm, big);
        vm_push_root(vm, f);
        Value r, fmt[3] = {cstr("%s-%08.3f"), big, v_float(2.5)};
        vm_push_root(vm, fmt[0]);
        mem_fail_after(n);
        int st1 = call("split", 1, &big, &r);
        mem_fail_after(n);
        int st2 = call("fmt", 3, fmt, &r);
        mem_fail_after(n);
        int st3 = call("lines", 1, &f, &r);
        if (!st3) {
            mem_fail_after(n);
            st3 = call("read", 1, &r, &r);
        }
        mem_fail_after(0);
        vm_pop_root(vm, 3);
        for (int st = 0; st < 3; st++) {
            int s = st == 0 ? st1 : st == 1 ? st2 : st3;
            if (s) {
                assert_true(IS_STR(vm->err));
                assert_string_equal(AS_STR(vm->err)->data, "out of memory");
                failed++;
            }
        }
        vm_gc(vm);
    }
    assert_true(failed > 0);
    unlink(path);
}

/* Everything a VM allocated, files included, goes back when it is freed. */
static void vm_free_releases_everything(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    VM *v = vm_new(NULL);
    VM *saved = vm;
    vm = v;
    char path[64];
    temp_file(path, "x\n", 2);
    Value f = open_file(path);
    call_ok("readline", 1, &f);
    Value p = cstr(path);
    call_ok("lines", 1, &p);
    vm = saved;
    vm_free(v);
    assert_int_equal(mem_in_use(), base);
    unlink(path);
}

/* COMB_CACHE_MB beyond the machine (here 2^44 MiB, whose bytes would wrap
 * to 0) bounds the read cache by the physical memory. Runs first: the
 * cache is set up at a process's first store open. */
static void cache_mb_is_clamped(void **state)
{
    (void)state;
    setenv("COMB_CACHE_MB", "17592186044416", 1);
    Value out;
    assert_false(vm_store_open(vm, vm_str_cstr(vm, "/nonexistent/store"), &out));
    st_cache_stats st;
    st_cache_stats_get(&st);
    uint64_t phys = (uint64_t)sysconf(_SC_PHYS_PAGES) / 1024 * ((uint64_t)sysconf(_SC_PAGESIZE) / 1024);
    assert_true(phys > 0);
    assert_int_equal(st.limit, phys << 20);
    st_cache_set_limit(0);
    unsetenv("COMB_CACHE_MB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(cache_mb_is_clamped, setup, teardown),
        cmocka_unit_test_setup_teardown(fmt_ints_match_snprintf, setup, teardown),
        cmocka_unit_test_setup_teardown(fmt_floats_match_snprintf, setup, teardown),
        cmocka_unit_test_setup_teardown(fmt_strings_pad_by_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(fmt_refuses_what_c_leaves_undefined, setup, teardown),
        cmocka_unit_test_setup_teardown(sort_ints_every_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(sort_with_comparator_is_stable, setup, teardown),
        cmocka_unit_test_setup_teardown(sort_comparator_errors_leave_array, setup, teardown),
        cmocka_unit_test_setup_teardown(sort_mixed_numbers_and_strings, setup, teardown),
        cmocka_unit_test_setup_teardown(lines_cross_buffer_boundaries, setup, teardown),
        cmocka_unit_test_setup_teardown(lines_keep_nul_and_cr_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(io_errors_name_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(strings_hold_nul_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(paths_from_views, setup, teardown),
        cmocka_unit_test_setup_teardown(allocation_failures_raise_cleanly, setup, teardown),
        cmocka_unit_test(vm_free_releases_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
