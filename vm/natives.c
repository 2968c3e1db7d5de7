/* natives: the natives table and the built-in modules made from it,
 * argument helpers, and the core natives (print, len, type, str, int,
 * float, error, push, pop, has); keys is with values in vm/lib_map.c. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vm/mathlib.h"
#include "vm/natives.h"

const VmNativeDef vm_natives[] = {
#define X(name, min, max, help) {#name, min, max, nat_##name, help},
#define M(module, name, min, max, help) {#module "." #name, min, max, nat_##module##_##name, help},
#define MODULE(name, help)
#include "vm/natives.def"
#undef X
#undef M
#undef MODULE
};
const size_t vm_nnatives = sizeof vm_natives / sizeof vm_natives[0];

const VmNativeModule vm_native_modules[] = {
#define X(name, min, max, help)
#define M(module, name, min, max, help)
#define MODULE(name, help) {#name, help},
#include "vm/natives.def"
#undef X
#undef M
#undef MODULE
};
const size_t vm_nnative_modules = sizeof vm_native_modules / sizeof vm_native_modules[0];

/* A member's name never matches: "search.skip" is not "skip". */
int vm_native_find(const char *name, size_t len)
{
    for (size_t i = 0; i < vm_nnatives; i++)
        if (strlen(vm_natives[i].name) == len && !memcmp(vm_natives[i].name, name, len))
            return (int)i;
    return -1;
}

bool vm_native_in(const VmNativeDef *d, const char *module)
{
    const char *dot = strchr(d->name, '.');
    if (!module)
        return !dot;
    size_t len = strlen(module);
    return dot && (size_t)(dot - d->name) == len && !strncmp(d->name, module, len);
}

const char *vm_native_member(const char *name, size_t len)
{
    for (size_t i = 0; i < vm_nnatives; i++) {
        const char *dot = strchr(vm_natives[i].name, '.');
        if (dot && strlen(dot + 1) == len && !memcmp(dot + 1, name, len))
            return vm_natives[i].name;
    }
    return NULL;
}

/* A built-in module's object, its members exported and nothing left to run. */
static VModule *make_module(VM *vm, const char *name, const char *path)
{
    VModule *m = vm_module_new(vm, name, path);
    for (size_t i = 0; i < vm_nnatives; i++)
        if (vm_native_in(&vm_natives[i], name)) {
            const char *member = vm_natives[i].name + strlen(name) + 1;
            size_t slot = vm_module_slot(vm, m, vm_str_cstr(vm, member), true);
            m->vars[slot] = v_obj(vm->natives[i]);
        }
    m->state = MOD_LOADED;
    return m;
}

/* Made once, then found in vm->modules under a key no file's path can be. */
VModule *vm_native_module(VM *vm, const char *name, size_t len)
{
    for (size_t k = 0; k < vm_nnative_modules; k++) {
        const char *mn = vm_native_modules[k].name;
        if (strlen(mn) != len || memcmp(mn, name, len))
            continue;
        char key[64];
        snprintf(key, sizeof key, "<built-in %s>", mn);
        Value hit, kv = v_obj(vm_str_cstr(vm, key));
        if (!vm_map_get(vm, vm->modules, kv, &hit)) {
            hit = v_obj(make_module(vm, mn, key));
            vm_map_set(vm, vm->modules, kv, hit);
        }
        return AS_MODULE(hit);
    }
    return NULL;
}

void vm_natives_init(VM *vm)
{
    vm->natives = vm_alloc(vm, vm_nnatives * sizeof *vm->natives);
    for (size_t i = 0; i < vm_nnatives; i++) {
        VNative *n = vm_new_obj(vm, sizeof(VNative), VT_NATIVE);
        n->def = &vm_natives[i];
        vm->natives[i] = n;
        vm->nnatives = i + 1;
    }
}

/* ---- argument helpers ------------------------------------------------- */

_Noreturn void vm_arg_error(VM *vm, int i, const char *expected, Value got)
{
    vm_error(vm, "argument %d must be %s, got %s", i + 1, expected, v_type_name(got));
}

double vm_arg_num(VM *vm, Value *argv, int i)
{
    if (IS_INT(argv[i]))
        return (double)AS_INT(argv[i]);
    if (!IS_FLOAT(argv[i]))
        vm_arg_error(vm, i, "a number", argv[i]);
    return AS_FLOAT(argv[i]);
}

VArray *vm_arg_array(VM *vm, Value *argv, int i)
{
    if (!IS_ARRAY(argv[i]))
        vm_arg_error(vm, i, "an array", argv[i]);
    return AS_ARRAY(argv[i]);
}

VMap *vm_arg_map(VM *vm, Value *argv, int i)
{
    if (!IS_MAP(argv[i]))
        vm_arg_error(vm, i, "a map", argv[i]);
    return AS_MAP(argv[i]);
}

void *vm_arg_handle(VM *vm, Value *argv, int i, const VHandleType *type)
{
    if (!IS_HANDLE(argv[i]) || AS_HANDLE(argv[i])->type != type) {
        char what[64];
        snprintf(what, sizeof what, "a %s", type->name);
        vm_arg_error(vm, i, what, argv[i]);
    }
    return handle_data(AS_HANDLE(argv[i]));
}

/* ---- the core natives ------------------------------------------------- */

Value nat_print(VM *vm, int argc, Value *argv)
{
    for (int i = 0; i < argc; i++) {
        VStr *s = vm_tostring(vm, argv[i]);
        if (i)
            fputc(' ', stdout);
        fwrite(s->data, 1, s->len, stdout);
    }
    fputc('\n', stdout);
    return v_nil();
}

Value nat_len(VM *vm, int argc, Value *argv)
{
    (void)argc;
    switch (argv[0].type) {
    case VT_STR:
        return v_int((int64_t)AS_STR(argv[0])->len);
    case VT_ARRAY:
        return v_int((int64_t)vm_array_len(argv[0]));
    case VT_MAP:
        return v_int((int64_t)AS_MAP(argv[0])->live);
    default:
        vm_arg_error(vm, 0, "a string, array or map", argv[0]);
    }
}

Value nat_type(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return v_obj(vm_str_cstr(vm, v_type_name(argv[0])));
}

Value nat_str(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return v_obj(vm_tostring(vm, argv[0]));
}

/* s as a NUL-terminated string in buf, or false if it cannot be a number. */
static bool number_text(const VStr *s, char *buf, size_t size)
{
    if (s->len == 0 || s->len >= size || memchr(s->data, '\0', s->len))
        return false;
    memcpy(buf, s->data, s->len);
    buf[s->len] = '\0';
    return true;
}

static bool only_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return *p == '\0';
}

Value nat_int(VM *vm, int argc, Value *argv)
{
    (void)argc;
    Value v = argv[0];
    if (IS_INT(v))
        return v;
    if (IS_FLOAT(v)) {
        double f = vm_math_trunc(AS_FLOAT(v));
        if (!(f >= -0x1p63 && f < 0x1p63))
            vm_error(vm, "cannot convert %g to an int", AS_FLOAT(v));
        return v_int((int64_t)f);
    }
    if (!IS_STR(v))
        vm_arg_error(vm, 0, "a number or string", v);
    char buf[64], *end;
    if (!number_text(AS_STR(v), buf, sizeof buf))
        return v_nil();
    /* decimal, or hex after 0x: never octal, so "010" is 10 */
    const char *digits = buf + strspn(buf, " \t\n\r");
    digits += *digits == '-' || *digits == '+';
    int base = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') ? 16 : 10;
    errno = 0;
    long long n = strtoll(buf, &end, base);
    if (errno || end == buf || !only_space(end))
        return v_nil();
    return v_int(n);
}

Value nat_float(VM *vm, int argc, Value *argv)
{
    (void)argc;
    Value v = argv[0];
    if (IS_FLOAT(v))
        return v;
    if (IS_INT(v))
        return v_float((double)AS_INT(v));
    if (!IS_STR(v))
        vm_arg_error(vm, 0, "a number or string", v);
    char buf[512], *end;
    if (!number_text(AS_STR(v), buf, sizeof buf))
        return v_nil();
    double f = strtod(buf, &end);
    if (end == buf || !only_space(end))
        return v_nil();
    return v_float(f);
}

Value nat_error(VM *vm, int argc, Value *argv)
{
    (void)argc;
    vm_throw(vm, argv[0]);
}

Value nat_push(VM *vm, int argc, Value *argv)
{
    VArray *a = vm_arg_array(vm, argv, 0);
    for (int i = 1; i < argc; i++)
        vm_array_push(vm, a, argv[i]);
    return v_nil();
}

Value nat_pop(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VArray *a = vm_arg_array(vm, argv, 0);
    if (!a->len)
        vm_error(vm, "the array is empty");
    return a->items[--a->len];
}

Value nat_has(VM *vm, int argc, Value *argv)
{
    (void)argc;
    if (IS_ARRAY(argv[0]))
        return v_bool(IS_INT(argv[1]) && AS_INT(argv[1]) >= 0 &&
                      (uint64_t)AS_INT(argv[1]) < AS_ARRAY(argv[0])->len);
    VMap *m = vm_arg_map(vm, argv, 0);
    return v_bool(vm_map_ref(m, argv[1]) != NULL);
}
