/* natives: the API native functions are written against, and the table of
 * natives (vm/natives.def) with the core ones.
 *
 * Writing a native:
 *   1. Add a line to vm/natives.def: X(name, min, max, "name(args): help"),
 *      or M(module, name, ...) under a MODULE line for a member of a built-in
 *      module, defined as nat_<module>_<name>.
 *   2. Define it in your vm/lib_<area>.c:
 *          Value nat_name(VM *vm, int argc, Value *argv)
 *      argc is already checked against min and max; argv[0..argc) are the
 *      arguments (they live on the VM stack, so they stay rooted).
 *   3. Return the result (v_nil() for none).
 *   4. Add the file to VM_C in Makefile.am (the library and the fuzz
 *      target are built from that list).
 *
 * Reading arguments: vm_arg_int/num/str/array/map/handle check the type of
 * argv[i] and raise "name: argument i+1 must be TYPE, got TYPE" otherwise.
 * Raising: vm_error(vm, "fmt", ...) (the native's name is put in front of
 * the message) or vm_throw(vm, value); neither returns.
 * Making values: v_int, v_float, v_bool, v_nil (vm/value.h); v_obj(o) for
 * objects made with vm_str_new / vm_str_cstr / vm_sb_* (strings),
 * vm_array_new + vm_array_push, vm_map_new + vm_map_set, vm_handle_new
 * (files, stores, matchers: a VHandleType with name, free, mark, next, show).
 * Collection happens only at the VM's safe points, so objects a native makes
 * need no rooting, unless it calls back into comb with vm_call: then push
 * them with vm_push_root first, and vm_pop_root after. A callback may also
 * change what the native is working on (pop the array being sorted): check
 * bounds again after each vm_call. An error in a callback unwinds through
 * the native without returning to it, so hold no malloc'd memory or open
 * FILE across vm_call except inside a handle, whose free callback runs
 * when it is collected.
 * The script's arguments are vm->args (an array of strings), for args().
 */
#ifndef COMB_NATIVES_H
#define COMB_NATIVES_H

#include "vm/vm.h"

typedef Value (*vm_native_fn)(VM *vm, int argc, Value *argv);

typedef struct VmNativeDef {
    const char *name;           /* a member of a built-in module: "module.name" */
    int min_args, max_args;     /* max -1: any number */
    vm_native_fn fn;
    const char *help;           /* one line: "name(args): what it does" */
} VmNativeDef;

/* A built-in module: natives reached only through `import "name"`. */
typedef struct VmNativeModule {
    const char *name;
    const char *help;           /* one line: what it is for */
} VmNativeModule;

#define X(name, min, max, help) Value nat_##name(VM *vm, int argc, Value *argv);
#define M(module, name, min, max, help) Value nat_##module##_##name(VM *vm, int argc, Value *argv);
#define MODULE(name, help)
#include "vm/natives.def"
#undef X
#undef M
#undef MODULE

/* Every native, the built-in modules' members (named "module.name") too. */
extern const VmNativeDef vm_natives[];
extern const size_t vm_nnatives;
extern const VmNativeModule vm_native_modules[];
extern const size_t vm_nnative_modules;

/* The index in vm_natives of the global native called name, or -1. */
int vm_native_find(const char *name, size_t len);
/* Whether d is a member of the built-in module called module, or (module
 * NULL) a global. */
bool vm_native_in(const VmNativeDef *d, const char *module);
/* The member of a built-in module called name ("skip" finds "search.skip"),
 * for an error's hint; NULL if none. */
const char *vm_native_member(const char *name, size_t len);
/* The built-in module called name, made at its first import; NULL if there
 * is none. */
VModule *vm_native_module(VM *vm, const char *name, size_t len);
/* Make the native function objects; vm_new calls it. */
void vm_natives_init(VM *vm);

_Noreturn void vm_arg_error(VM *vm, int i, const char *expected, Value got);
double vm_arg_num(VM *vm, Value *argv, int i);      /* an int or a float, as double */
VArray *vm_arg_array(VM *vm, Value *argv, int i);
VMap *vm_arg_map(VM *vm, Value *argv, int i);
void *vm_arg_handle(VM *vm, Value *argv, int i, const VHandleType *type);

/* Inline: the natives of inner loops (search.skip, search.sieve,
 * search.anyat, find) read several a call. */
static inline int64_t vm_arg_int(VM *vm, Value *argv, int i)
{
    if (!IS_INT(argv[i]))
        vm_arg_error(vm, i, "an int", argv[i]);
    return AS_INT(argv[i]);
}

static inline VStr *vm_arg_str(VM *vm, Value *argv, int i)
{
    if (!IS_STR(argv[i]))
        vm_arg_error(vm, i, "a string", argv[i]);
    return AS_STR(argv[i]);
}

/* Text of values (vm/show.c): print's form, or with strings quoted as in
 * containers; floats always show a point or exponent. */
void vm_show(VM *vm, VStrBuf *sb, Value v, bool quote);
VStr *vm_tostring(VM *vm, Value v);
void vm_format_float(double f, char buf[32]);
const char *vm_format_int(int64_t i, char buf[32]);   /* points into buf */

#endif
