/* lib_map: map natives beyond the core's keys and has: values and del. */
#include "config.h"

#include "vm/lib.h"

Value nat_values(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VMap *m = vm_arg_map(vm, argv, 0);
    VArray *a = vm_array_new(vm, m->live);
    Value k, v;
    size_t pos = 0;
    while (vm_map_next(m, &pos, &k, &v))
        a->items[a->len++] = v;
    return v_obj(a);
}

Value nat_del(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return v_bool(vm_map_del(vm, vm_arg_map(vm, argv, 0), argv[1]));
}
