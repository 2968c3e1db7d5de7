/* lib_map: map natives: keys, values and del (has is with the core). */
#include "config.h"

#include "vm/lib.h"

/* The keys (or the values) of the map argv[0], in insertion order. */
static Value column(VM *vm, Value *argv, bool values)
{
    VMap *m = vm_arg_map(vm, argv, 0);
    VArray *a = vm_array_new(vm, m->live);
    Value k, v;
    size_t pos = 0;
    while (vm_map_next(m, &pos, &k, &v))
        a->items[a->len++] = values ? v : k;
    return v_obj(a);
}

Value nat_keys(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return column(vm, argv, false);
}

Value nat_values(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return column(vm, argv, true);
}

Value nat_del(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return v_bool(vm_map_del(vm, vm_arg_map(vm, argv, 0), argv[1]));
}
