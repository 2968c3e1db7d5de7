/* lib_regex: regex natives: regex (compile a pattern made at run time) and
 * rematch (where a regex matches, within a slice of a string). */
#include "config.h"

#include "vm/lib.h"
#include "vm/regex.h"

Value nat_regex(VM *vm, int argc, Value *argv)
{
    VStr *pat = vm_arg_str(vm, argv, 0);
    VStr *flags = argc > 1 ? lib_cstr_arg(vm, argv, 1) : NULL;
    char err[200];
    VHandle *h = vm_regex_new(vm, pat->data, pat->len, flags ? flags->data : "", err, sizeof err);
    if (!h)
        vm_error(vm, "%s", err);
    return v_obj(h);
}

Value nat_rematch(VM *vm, int argc, Value *argv)
{
    vm_arg_handle(vm, argv, 0, &vm_regex_type);
    VHandle *re = AS_HANDLE(argv[0]);
    VStr *s = vm_arg_str(vm, argv, 1);
    size_t from, to;
    lib_slice_range(vm, argc < 4 ? argc : 4, argv, 2, s->len, &from, &to);
    size_t start = from;
    if (argc > 4) {
        int64_t at = vm_arg_int(vm, argv, 4);
        if (at < (int64_t)from || at > (int64_t)to)
            vm_error(vm, "start %lld is outside the slice %zu..%zu", (long long)at, from, to);
        start = (size_t)at;
    }
    size_t ms, me;
    if (!vm_regex_find(vm, re, s->data + from, to - from, start - from, &ms, &me))
        return v_nil();
    VArray *a = vm_array_new(vm, 2);
    vm_array_push(vm, a, v_int((int64_t)(from + ms)));
    vm_array_push(vm, a, v_int((int64_t)(from + me)));
    return v_obj(a);
}
