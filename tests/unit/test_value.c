/* test_value: values, strings, maps and the collector, allocation failure included. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/mem.h"
#include "vm/natives.h"
#include "vm/vm.h"

static int setup(void **state)
{
    *state = vm_new(NULL);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    vm_free(*state);
    return 0;
}

static Value str(VM *vm, const char *s)
{
    return v_obj(vm_str_cstr(vm, s));
}

static void equality(void **state)
{
    VM *vm = *state;
    assert_true(v_equal(v_int(1), v_float(1.0)));
    assert_false(v_equal(v_int(1), v_float(1.5)));
    /* exact: 2^53 + 1 is not the double 2^53 */
    assert_false(v_equal(v_int(9007199254740993), v_float(9007199254740992.0)));
    assert_false(v_equal(v_float(NAN), v_float(NAN)));
    assert_true(v_equal(str(vm, "ab"), str(vm, "ab")));
    assert_false(v_equal(str(vm, "ab"), str(vm, "abc")));
    assert_false(v_equal(v_nil(), v_bool(false)));
    assert_false(v_equal(v_int(1), str(vm, "1")));
    assert_true(v_equal(v_nil(), v_nil()));
    assert_false(v_truthy(v_nil()));
    assert_false(v_truthy(v_bool(false)));
    assert_true(v_truthy(v_int(0)));
    assert_true(v_truthy(str(vm, "")));
}

static void ordering_is_exact(void **state)
{
    (void)state;
    bool r;
    assert_int_equal(vm_less(v_int(INT64_MAX), v_float(0x1p63), false, &r), AR_OK);
    assert_true(r);
    assert_int_equal(vm_less(v_float(0x1p63), v_int(INT64_MAX), false, &r), AR_OK);
    assert_false(r);
    assert_int_equal(vm_less(v_int(3), v_float(3.0), true, &r), AR_OK);
    assert_true(r);
    assert_int_equal(vm_less(v_int(3), v_float(NAN), true, &r), AR_OK);
    assert_false(r);
    assert_int_equal(vm_less(v_int(1), v_nil(), false, &r), AR_TYPES);
}

/* Sorts' order: NaN (of either sign) after every number, equal to NaN. */
static void sort_order_is_total(void **state)
{
    (void)state;
    assert_int_equal(v_order_num(v_float(NAN), v_float(INFINITY)), 1);
    assert_int_equal(v_order_num(v_int(INT64_MAX), v_float(NAN)), -1);
    assert_int_equal(v_order_num(v_float(-NAN), v_float(NAN)), 0);
    assert_int_equal(v_order_num(v_float(-NAN), v_float(-INFINITY)), 1);
    assert_int_equal(v_order_num(v_int(3), v_float(3.0)), 0);
    assert_int_equal(v_order_num(v_int(INT64_MAX), v_float(0x1p63)), -1);
}

/* An int sum does not depend on the order: past the ints and back is fine. */
static void sums_are_exact(void **state)
{
    (void)state;
    VSum s = {0}, t = {0};
    Value r;
    v_sum_int(&s, INT64_MAX);
    v_sum_int(&s, 1);
    assert_false(v_sum_value(&s, &r));
    v_sum_int(&t, -INT64_MAX);
    v_sum_merge(&s, &t);
    assert_true(v_sum_value(&s, &r));
    assert_true(IS_INT(r) && r.as.i == 1);
    assert_true(v_sum_mean(&s, 3) == 1.0 / 3);
    v_sum_float(&s, 0.5);
    assert_true(v_sum_value(&s, &r));
    assert_true(IS_FLOAT(r) && r.as.f == 1.5);
}

static void arithmetic_checks(void **state)
{
    VM *vm = *state;
    Value r;
    assert_int_equal(vm_arith(vm, ARITH_ADD, v_int(INT64_MAX), v_int(1), &r), AR_OVERFLOW);
    assert_int_equal(vm_arith(vm, ARITH_MUL, v_int(INT64_MIN), v_int(-1), &r), AR_OVERFLOW);
    assert_int_equal(vm_arith(vm, ARITH_DIV, v_int(INT64_MIN), v_int(-1), &r), AR_OVERFLOW);
    assert_int_equal(vm_arith(vm, ARITH_MOD, v_int(INT64_MIN), v_int(-1), &r), AR_OVERFLOW);
    assert_int_equal(vm_arith(vm, ARITH_DIV, v_int(1), v_int(0), &r), AR_DIVZERO);
    assert_int_equal(vm_arith(vm, ARITH_DIV, v_float(1), v_float(0), &r), AR_DIVZERO);
    assert_int_equal(vm_arith(vm, ARITH_DIV, v_int(-7), v_int(2), &r), AR_OK);
    assert_true(IS_INT(r) && AS_INT(r) == -3);
    assert_int_equal(vm_arith(vm, ARITH_ADD, v_int(1), v_float(0.5), &r), AR_OK);
    assert_true(IS_FLOAT(r) && AS_FLOAT(r) == 1.5);
    assert_int_equal(vm_arith(vm, ARITH_SUB, str(vm, "a"), v_int(1), &r), AR_TYPES);
    assert_int_equal(vm_arith(vm, ARITH_ADD, str(vm, "ab"), str(vm, "c"), &r), AR_OK);
    assert_true(str_eq_cstr(AS_STR(r), "abc"));
    assert_int_equal(vm_negate(v_int(INT64_MIN), &r), AR_OVERFLOW);
}

static void strings_append_in_place_but_never_change(void **state)
{
    VM *vm = *state;
    VStr *s = vm_str_cstr(vm, "");
    VStr *seen[200];
    for (int i = 0; i < 200; i++) {
        s = vm_str_concat(vm, s, vm_str_cstr(vm, "x"));
        seen[i] = s;
    }
    /* appends after the first ones shared one buffer */
    assert_true(str_owner(seen[199]) == str_owner(seen[150]));
    for (int i = 0; i < 200; i++)
        assert_int_equal(seen[i]->len, (size_t)i + 1);
    /* extending an earlier string copies: the later ones keep their bytes */
    VStr *fork = vm_str_concat(vm, seen[100], vm_str_cstr(vm, "Y"));
    assert_int_equal(fork->data[101], 'Y');
    assert_int_equal(seen[101]->data[101], 'x');
    assert_int_equal(seen[199]->data[101], 'x');
    /* equal bytes hash equal, NUL included */
    VStr *a = vm_str_new(vm, "a\0b", 3), *b = vm_str_new(vm, "a\0b", 3);
    assert_int_equal(str_hash(a), str_hash(b));
    assert_true(str_equal(a, b));
    assert_false(str_equal(a, vm_str_new(vm, "a\0c", 3)));
    assert_true(str_compare(vm_str_cstr(vm, "ab"), vm_str_cstr(vm, "abc")) < 0);
}

static void map_order_and_kinds(void **state)
{
    VM *vm = *state;
    VMap *m = vm_map_new(vm, 0);
    /* dense while keys are 0, 1, 2... */
    for (int i = 0; i < 5; i++)
        vm_map_set(vm, m, v_int(i), v_int(i * 10));
    assert_true(m->hdr.flags & MAP_DENSE);
    vm_map_set(vm, m, str(vm, "k"), v_int(99));
    assert_false(m->hdr.flags & MAP_DENSE);
    vm_map_set(vm, m, v_float(2.0), v_int(-2));      /* 2.0 is the key 2 */
    Value v;
    assert_true(vm_map_get(vm, m, v_int(2), &v) && AS_INT(v) == -2);
    assert_true(vm_map_get(vm, m, str(vm, "k"), &v) && AS_INT(v) == 99);
    assert_false(vm_map_get(vm, m, str(vm, "nope"), &v));
    assert_false(vm_map_get(vm, m, v_nil(), &v));
    assert_true(vm_map_del(vm, m, v_int(1)));
    assert_false(vm_map_del(vm, m, v_int(1)));
    vm_map_set(vm, m, v_int(1), v_int(11));          /* back, at the end */
    int64_t want[] = {0, 2, 3, 4, -1, 1};
    size_t pos = 0, n = 0;
    Value k;
    while (vm_map_next(m, &pos, &k, &v)) {
        if (IS_STR(k))
            assert_true(want[n] == -1);
        else
            assert_true(AS_INT(k) == want[n]);
        n++;
    }
    assert_int_equal(n, 6);
    assert_int_equal(m->live, 6);
}

static void map_many_and_deletes(void **state)
{
    VM *vm = *state;
    VMap *m = vm_map_new(vm, 0);
    char buf[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(buf, sizeof buf, "key%d", i);
        vm_map_set(vm, m, str(vm, buf), v_int(i));
    }
    for (int i = 0; i < 20000; i += 2) {
        snprintf(buf, sizeof buf, "key%d", i);
        assert_true(vm_map_del(vm, m, str(vm, buf)));
    }
    for (int i = 0; i < 5000; i++)     /* reuses room: compaction keeps order */
        vm_map_set(vm, m, v_int(i), v_int(i));
    assert_int_equal(m->live, 15000);
    Value v;
    for (int i = 1; i < 20000; i += 2) {
        snprintf(buf, sizeof buf, "key%d", i);
        assert_true(vm_map_get(vm, m, str(vm, buf), &v) && AS_INT(v) == i);
    }
    size_t pos = 0;
    Value k, first;
    assert_true(vm_map_next(m, &pos, &first, &v));
    assert_true(str_eq_cstr(AS_STR(first), "key1"));
    while (vm_map_next(m, &pos, &k, &v))
        ;
    assert_true(IS_INT(k) && AS_INT(k) == 4999);
}

/* A row's map (made keyed for a few keys: entries in its own block, no
 * index) finds its keys, deletes, and keeps order and every key as it
 * outgrows its block and then the few searched without an index. */
static void keyed_map_grows_out_of_its_block(void **state)
{
    VM *vm = *state;
    for (size_t cap = 1; cap <= 12; cap += 3) {
        VMap *m = vm_map_new_keyed(vm, cap);
        vm_push_root(vm, v_obj(m));
        char buf[32];
        for (int i = 0; i < 40; i++) {
            snprintf(buf, sizeof buf, "f%d", i);
            vm_map_set(vm, m, str(vm, buf), v_int(i));
            if (i == 2)
                assert_true(vm_map_del(vm, m, str(vm, "f1")));
            for (int j = 0; j <= i; j++) {
                Value v;
                snprintf(buf, sizeof buf, "f%d", j);
                bool gone = j == 1 && i >= 2;
                assert_int_equal(vm_map_get(vm, m, str(vm, buf), &v), !gone);
                if (!gone)
                    assert_int_equal(AS_INT(v), j);
            }
            assert_false(vm_map_get(vm, m, str(vm, "g"), &(Value){0}));
        }
        vm_map_set(vm, m, str(vm, "f1"), v_int(-1));    /* back, at the end */
        size_t pos = 0;
        Value k, v;
        int64_t want = 0;
        while (vm_map_next(m, &pos, &k, &v)) {
            assert_int_equal(AS_INT(v), want == 40 ? -1 : want);
            want = want == 0 ? 2 : want + 1;
        }
        assert_int_equal(want, 41);
        assert_int_equal(m->live, 40);
        vm_pop_root(vm, 1);
    }
    vm_gc(vm);
}

static void set_nil_key(VM *vm, void *m)
{
    vm_map_set(vm, m, v_nil(), v_int(1));
}

static void errors_from_c_are_protected(void **state)
{
    VM *vm = *state;
    VMap *m = vm_map_new(vm, 0);
    vm_push_root(vm, v_obj(m));
    assert_int_equal(vm_protect(vm, set_nil_key, m), -1);
    assert_true(str_eq_cstr(vm_tostring(vm, vm->err), "map key cannot be nil"));
    vm_pop_root(vm, 1);
}

static void text_forms(void **state)
{
    VM *vm = *state;
    VArray *a = vm_array_new(vm, 0);
    vm_array_push(vm, a, v_int(-5));
    vm_array_push(vm, a, v_float(2.0));
    vm_array_push(vm, a, str(vm, "q\"t"));
    vm_array_push(vm, a, v_obj(a));             /* a cycle */
    assert_true(str_eq_cstr(vm_tostring(vm, v_obj(a)), "[-5, 2.0, \"q\\\"t\", [...]]"));
    char buf[32];
    vm_format_float(0.1, buf);
    assert_string_equal(buf, "0.1");
    vm_format_float(1e21, buf);
    assert_string_equal(buf, "1e+21");
    assert_string_equal(vm_format_int(INT64_MIN, buf), "-9223372036854775808");
}

/* ---- the collector ---------------------------------------------------- */

/* vm->bytes counts the bytes of live objects (freed small blocks kept for
 * reuse are not), so it shows what a collection freed. */
static void collects_the_unreachable(void **state)
{
    VM *vm = *state;
    vm_gc(vm);
    size_t base = vm->bytes;
    VArray *keep = vm_array_new(vm, 0);
    vm_push_root(vm, v_obj(keep));
    for (int i = 0; i < 1000; i++) {
        VMap *garbage = vm_map_new(vm, 0);
        vm_map_set(vm, garbage, v_int(0), v_obj(garbage));    /* a cycle */
        vm_map_set(vm, garbage, str(vm, "s"), str(vm, "a string"));
        if (i % 100 == 0)
            vm_array_push(vm, keep, str(vm, "kept"));
    }
    assert_true(vm->bytes > base + 1000 * sizeof(VMap));
    vm_gc(vm);
    assert_int_equal(keep->len, 10);
    assert_true(str_eq_cstr(AS_STR(keep->items[9]), "kept"));
    size_t kept = vm->bytes;
    assert_true(kept < base + 2000);
    vm_pop_root(vm, 1);
    vm_gc(vm);
    assert_true(vm->bytes < kept);
    assert_int_equal(vm->bytes, base);
}

/* An array held as columns: its cells' strings live through collections
 * while held, vm_array_len counts its rows as they are, AS_ARRAY makes
 * its rows (maps of the named fields in order), and every byte is given
 * back once it is garbage, made or not. */
static void columns_become_rows_when_read(void **state)
{
    VM *vm = *state;
    vm_gc(vm);
    size_t base = vm->bytes;
    Value names[2] = {str(vm, "k"), str(vm, "n")};
    VArray *a = vm_array_columns(vm, 3, 2, names);
    Value av = v_obj(a);
    vm_push_root(vm, av);
    for (int i = 0; i < 3; i++) {
        char k[8];
        snprintf(k, sizeof k, "key%d", i);
        a->cols->cells[2 * i] = str(vm, k);
        a->cols->cells[2 * i + 1] = v_int(10 * i);
    }
    assert_int_equal(a->len, 0);    /* not read yet */
    vm_gc(vm);
    assert_int_equal(vm_array_len(av), 3);  /* counted, still columns */
    assert_true(a->hdr.flags & ARRAY_COLUMNS);
    VArray *r = AS_ARRAY(av);
    assert_false(r->hdr.flags & ARRAY_COLUMNS);
    assert_int_equal(r->len, 3);
    for (int i = 0; i < 3; i++) {
        Value k, n;
        assert_true(IS_MAP(r->items[i]));
        assert_int_equal(AS_MAP(r->items[i])->live, 2);
        assert_true(vm_map_get(vm, AS_MAP(r->items[i]), names[0], &k));
        assert_true(vm_map_get(vm, AS_MAP(r->items[i]), names[1], &n));
        char want[8];
        snprintf(want, sizeof want, "key%d", i);
        assert_true(str_eq_cstr(AS_STR(k), want));
        assert_int_equal(AS_INT(n), 10 * i);
    }
    assert_int_equal(AS_ARRAY(av)->len, 3);     /* made once */
    assert_int_equal(vm_array_len(av), 3);
    /* one never read, and no rows at all */
    vm_push_root(vm, v_obj(vm_array_columns(vm, 1000, 2, names)));
    Value none = v_obj(vm_array_columns(vm, 0, 2, names));
    vm_push_root(vm, none);
    assert_int_equal(AS_ARRAY(none)->len, 0);
    vm_pop_root(vm, 3);
    vm_gc(vm);
    assert_int_equal(vm->bytes, base);
}

/* A file of the n bytes at p, unlinked, open for reading and writing. */
static int temp_file(const char *p, size_t n)
{
    char path[] = "/tmp/test_value_mapXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(write(fd, p, n), (ssize_t)n);
    return fd;
}

/* A mapped string: the file's bytes at an offset inside a page, the byte
 * after them readable even when they end a page, never appended to in
 * place, counted as memory while held, unmapped (and uncounted) when
 * collected. */
static void mapped_strings_are_counted_and_let_go(void **state)
{
    VM *vm = *state;
    char page[8192];
    for (size_t i = 0; i < sizeof page; i++)
        page[i] = (char)('a' + i % 26);
    int fd = temp_file(page, sizeof page);
    vm_gc(vm);
    size_t base = vm->bytes;
    VStr *s = vm_str_mapped(vm, fd, 100, sizeof page - 100, AS_STR(str(vm, "page")));
    assert_non_null(s);
    assert_true(s->hdr.flags & STR_MAPPED);
    assert_int_equal(s->len, sizeof page - 100);
    assert_memory_equal(s->data, page + 100, s->len);
    (void)*(volatile const char *)(s->data + s->len);   /* readable */
    assert_true(vm->bytes >= base + sizeof page);
    vm_push_root(vm, v_obj(s));
    VStr *t = vm_str_concat(vm, s, vm_str_cstr(vm, "XY"));
    assert_false(t->hdr.flags & STR_VIEW);              /* a copy, not in place */
    assert_int_equal(t->len, s->len + 2);
    assert_memory_equal(t->data + s->len, "XY", 2);
    assert_memory_equal(s->data, page + 100, s->len);
    assert_null(vm_str_mapped(vm, fd, 0, 0, AS_STR(str(vm, "page"))));
    vm_gc(vm);
    assert_int_equal(s->data[0], page[100]);            /* rooted: kept */
    vm_pop_root(vm, 1);
    vm_gc(vm);
    assert_int_equal(vm->bytes, base);
    close(fd);
}

static void raise_cut(VM *vm, void *ud)
{
    (void)ud;
    vm_str_raise_cut(vm);
}

static void assert_cut_raised(VM *vm, const char *name)
{
    assert_true(vm_poll_flag & POLL_CUT);
    assert_int_equal(vm_protect(vm, raise_cut, NULL), -1);
    char want[256];
    snprintf(want, sizeof want, "cannot read '%s': changed size while being read", name);
    assert_string_equal(vm_tostring(vm, vm->err)->data, want);
    assert_false(vm_poll_flag & POLL_CUT);
    assert_int_equal(vm_protect(vm, raise_cut, NULL), 0);  /* once */
}

/* A child that maps fd's 8 KiB itself (not a string), truncates the file
 * and reads past its end after a string was mapped: dies of SIGBUS, as it
 * would without comb's handler; and of a SIGBUS sent to it. */
static int foreign_sigbus(VM *vm, int fd, bool sent)
{
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGBUS, SIG_DFL);    /* not the harness's: the default is what is kept */
        if (ftruncate(fd, 8192) != 0 || !vm_str_mapped(vm, fd, 0, 8192, AS_STR(str(vm, "f"))))
            _exit(3);
        if (sent)
            kill(getpid(), SIGBUS);
        const char *p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED || ftruncate(fd, 0) != 0)
            _exit(3);
        (void)*(volatile const char *)(p + 4096);
        _exit(0);
    }
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    return WIFSIGNALED(ws) ? WTERMSIG(ws) : -WEXITSTATUS(ws);
}

/* A mapped file truncated meanwhile: its bytes past the new end read as
 * zeros, not SIGBUS, and the next poll raises a read error naming it, once;
 * also when the string was collected before that poll. A SIGBUS outside
 * any mapping keeps its default. */
static void truncated_mappings_read_zeros_and_raise(void **state)
{
    VM *vm = *state;
    static char pages[3 * 4096];
    memset(pages, 'x', sizeof pages);
    int fd = temp_file(pages, sizeof pages);
    VStr *s = vm_str_mapped(vm, fd, 0, sizeof pages, AS_STR(str(vm, "cut")));
    assert_non_null(s);
    vm_push_root(vm, v_obj(s));
    assert_int_equal(ftruncate(fd, 100), 0);
    assert_false(vm_poll_flag & POLL_CUT);
    assert_int_equal(s->data[99], 'x');
    assert_int_equal(s->data[sizeof pages - 1], 0);
    assert_int_equal(s->data[4096], 0);
    assert_cut_raised(vm, "cut");
    vm_pop_root(vm, 1);

    assert_int_equal(ftruncate(fd, sizeof pages), 0);
    s = vm_str_mapped(vm, fd, 0, sizeof pages, AS_STR(str(vm, "gone")));
    assert_non_null(s);
    assert_int_equal(ftruncate(fd, 0), 0);
    assert_int_equal(s->data[5000], 0);
    vm_gc(vm);                  /* unrooted: unmapped before the poll */
    assert_cut_raised(vm, "gone");

    assert_int_equal(foreign_sigbus(vm, fd, false), SIGBUS);
    assert_int_equal(foreign_sigbus(vm, fd, true), SIGBUS);
    close(fd);
}

static void views_keep_their_owner(void **state)
{
    VM *vm = *state;
    VStr *s = vm_str_cstr(vm, "");
    for (int i = 0; i < 100; i++)
        s = vm_str_concat(vm, s, vm_str_cstr(vm, "abcdefgh"));
    assert_true(s->hdr.flags & STR_VIEW);
    vm_push_root(vm, v_obj(s));
    vm_gc(vm);     /* only the view is rooted: its owner must stay */
    assert_int_equal(s->len, 800);
    assert_int_equal(s->data[799], 'h');
    vm_pop_root(vm, 1);
}

typedef struct Work {
    int n;
    VArray *out;
} Work;

/* Allocates a little of everything, then collects. */
static void busy(VM *vm, void *ud)
{
    Work *w = ud;
    VArray *a = vm_array_new(vm, 0);
    vm_push_root(vm, v_obj(a));
    for (int i = 0; i < w->n; i++) {
        VMap *m = vm_map_new(vm, 0);
        vm_array_push(vm, a, v_obj(m));
        vm_map_set(vm, m, str(vm, "i"), v_int(i));
        vm_map_set(vm, m, v_int(0), v_obj(vm_str_concat(vm, vm_str_cstr(vm, "x"), vm_tostring(vm, v_int(i)))));
        if (i % 7 == 0)
            vm_gc(vm);
    }
    w->out = a;
    vm_pop_root(vm, 1);
}

static void allocation_failure_loses_nothing(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    int failed = 0, ok = 0;
    for (unsigned long n = 1; n < 400; n += 3) {
        mem_fail_after(n);
        VM *vm = vm_new(NULL);
        if (!vm) {              /* the failure hit vm_new itself */
            mem_fail_after(0);
            assert_int_equal(mem_in_use(), base);
            failed++;
            continue;
        }
        Work w = {40, NULL};
        int st = vm_protect(vm, busy, &w);
        mem_fail_after(0);
        if (st) {
            assert_true(str_eq_cstr(AS_STR(vm->err), "out of memory"));
            failed++;
        } else {
            assert_int_equal(w.out->len, 40);
            ok++;
        }
        /* the VM is still usable after the failure */
        Work again = {5, NULL};
        assert_int_equal(vm_protect(vm, busy, &again), 0);
        vm_free(vm);
        assert_int_equal(mem_in_use(), base);
    }
    assert_true(failed > 0);
    assert_true(ok > 0);
}

static void stress_mode_collects_at_safe_points(void **state)
{
    VM *vm = *state;
    vm_gc_stress(vm, true);
    assert_int_equal(vm->gc_limit, 0);
    Work w = {50, NULL};
    assert_int_equal(vm_protect(vm, busy, &w), 0);
    vm_push_root(vm, v_obj(w.out));
    vm_gc(vm);
    Value v;
    assert_true(vm_map_get(vm, AS_MAP(w.out->items[49]), v_int(0), &v));
    assert_true(str_eq_cstr(AS_STR(v), "x49"));
    vm_pop_root(vm, 1);
    vm_gc_stress(vm, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(equality, setup, teardown),
        cmocka_unit_test_setup_teardown(ordering_is_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(sort_order_is_total, setup, teardown),
        cmocka_unit_test_setup_teardown(sums_are_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(arithmetic_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(strings_append_in_place_but_never_change, setup, teardown),
        cmocka_unit_test_setup_teardown(map_order_and_kinds, setup, teardown),
        cmocka_unit_test_setup_teardown(map_many_and_deletes, setup, teardown),
        cmocka_unit_test_setup_teardown(keyed_map_grows_out_of_its_block, setup, teardown),
        cmocka_unit_test_setup_teardown(errors_from_c_are_protected, setup, teardown),
        cmocka_unit_test_setup_teardown(text_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(collects_the_unreachable, setup, teardown),
        cmocka_unit_test_setup_teardown(columns_become_rows_when_read, setup, teardown),
        cmocka_unit_test_setup_teardown(views_keep_their_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(mapped_strings_are_counted_and_let_go, setup, teardown),
        cmocka_unit_test_setup_teardown(truncated_mappings_read_zeros_and_raise, setup, teardown),
        cmocka_unit_test(allocation_failure_loses_nothing),
        cmocka_unit_test_setup_teardown(stress_mode_collects_at_safe_points, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
