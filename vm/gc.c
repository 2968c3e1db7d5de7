/* gc: the VM's memory: allocation through store/mem.h, and a mark-sweep
 * collector that runs at the loop's safe points. */
#include "config.h"

#include <stdlib.h>

#include "store/mem.h"
#include "vm/vm.h"

#define GC_MIN_LIMIT ((size_t)1 << 20)

_Noreturn static void out_of_memory(VM *vm)
{
    /* The message is made when the VM starts: no allocation here. */
    vm_throw(vm, v_obj(vm->oom));
}

void *vm_realloc(VM *vm, void *p, size_t osize, size_t nsize)
{
    void *q = mem_realloc(p, osize, nsize);
    if (!q && nsize)
        out_of_memory(vm);
    vm->bytes = vm->bytes - osize + nsize;
    if (nsize > osize)
        vm->debt += nsize - osize;
    return q;
}

void *vm_alloc(VM *vm, size_t size)
{
    return vm_realloc(vm, NULL, 0, size ? size : 1);
}

void vm_free_mem(VM *vm, void *p, size_t size)
{
    if (p)
        vm_realloc(vm, p, size ? size : 1, 0);
}

#define SMALL_KEEP 16384    /* blocks kept per class */

static void *obj_alloc(VM *vm, size_t size)
{
    if (size > VM_SMALL_MAX)
        return vm_alloc(vm, size);
    size_t c = (size - 1) / 16;
    void *p = vm->small[c];
    if (!p)
        return vm_alloc(vm, (c + 1) * 16);
    vm->small[c] = *(void **)p;
    vm->nsmall[c]--;
    vm->bytes += (c + 1) * 16;
    vm->debt += (c + 1) * 16;
    return p;
}

void vm_free_obj(VM *vm, void *o, size_t size)
{
    if (size > VM_SMALL_MAX) {
        vm_free_mem(vm, o, size);
        return;
    }
    size_t c = (size - 1) / 16;
    if (vm->nsmall[c] == SMALL_KEEP) {
        vm_free_mem(vm, o, (c + 1) * 16);
        return;
    }
    *(void **)o = vm->small[c];
    vm->small[c] = o;
    vm->nsmall[c]++;
    vm->bytes -= (c + 1) * 16;
}

void vm_count_outside(VM *vm, size_t n, bool held)
{
    if (!held) {
        vm->bytes -= n;
        return;
    }
    vm->bytes += n;
    vm->debt += n;
}

void *vm_new_obj(VM *vm, size_t size, VType type)
{
    Obj *o = obj_alloc(vm, size);
    o->type = (uint8_t)type;
    o->marked = 0;
    o->flags = 0;
    o->hash = 0;
    o->next = vm->objects;
    vm->objects = o;
    return o;
}

/* ---- marking ---------------------------------------------------------- */

static bool has_children(const Obj *o)
{
    return o->type != VT_NATIVE && (o->type != VT_STR || (o->flags & STR_VIEW));
}

void vm_mark_obj(VM *vm, Obj *o)
{
    if (o->marked)
        return;
    o->marked = 1;
    if (!has_children(o))
        return;
    if (vm->ngray == vm->cap_gray) {
        /* Outside vm_alloc: the collector must not raise. If the gray stack
         * cannot grow, the heap is rescanned for marked objects instead. */
        size_t cap = vm->cap_gray ? vm->cap_gray * 2 : 256;
        Obj **g = mem_realloc(vm->gray, vm->cap_gray * sizeof *g, cap * sizeof *g);
        if (!g) {
            vm->gray_overflow = true;
            return;
        }
        vm->gray = g;
        vm->cap_gray = cap;
    }
    vm->gray[vm->ngray++] = o;
}

void vm_mark(VM *vm, Value v)
{
    if (IS_OBJ(v))
        vm_mark_obj(vm, v.as.o);
}

static void drain(VM *vm)
{
    for (;;) {
        while (vm->ngray)
            vm_obj_traverse(vm, vm->gray[--vm->ngray]);
        if (!vm->gray_overflow)
            return;
        vm->gray_overflow = false;
        for (Obj *o = vm->objects; o; o = o->next)
            if (o->marked && has_children(o))
                vm_obj_traverse(vm, o);
    }
}

static void mark_roots(VM *vm)
{
    /* Every frame's registers, to the highest top: a callee's frame can end
     * below its caller's, whose registers above it must stay valid. */
    Value *top = vm->stack;
    for (uint32_t i = 0; i < vm->nframes; i++)
        if (vm->frames[i].top > top)
            top = vm->frames[i].top;
    for (Value *v = vm->stack; v < top; v++)
        vm_mark(vm, *v);
    for (uint32_t i = 0; i < vm->nframes; i++)
        if (vm->frames[i].fn)
            vm_mark_obj(vm, &vm->frames[i].fn->hdr);
    for (VUpval *u = vm->open_upvals; u; u = u->next_open)
        vm_mark_obj(vm, &u->hdr);
    for (size_t i = 0; i < vm->nroots; i++)
        vm_mark(vm, vm->roots[i]);
    for (uint32_t i = 0; i < vm->niters; i++)
        vm_mark(vm, vm->iters[i].it);
    for (size_t i = 0; i < vm->nnatives; i++)
        vm_mark_obj(vm, &vm->natives[i]->hdr);
    for (int i = 0; i < vm->ntrace; i++)
        if (vm->trace[i].p)
            vm_mark_obj(vm, &vm->trace[i].p->hdr);
    vm_mark(vm, vm->err);
    vm_mark_obj(vm, &vm->oom->hdr);
    vm_mark_obj(vm, &vm->modules->hdr);
    vm_mark_obj(vm, &vm->re_cache->hdr);
    if (vm->reading)
        vm_mark_obj(vm, &vm->reading->hdr);
    if (vm->args)
        vm_mark_obj(vm, &vm->args->hdr);
    if (vm->place_module)
        vm_mark_obj(vm, &vm->place_module->hdr);
}

static void sweep(VM *vm)
{
    Obj **link = &vm->objects;
    while (*link) {
        Obj *o = *link;
        if (o->marked) {
            o->marked = 0;
            link = &o->next;
        } else {
            *link = o->next;
            vm_obj_release(vm, o);
        }
    }
}

void vm_gc(VM *vm)
{
    if (vm->gc_running)
        return;
    vm->gc_running = true;
    mark_roots(vm);
    drain(vm);
    sweep(vm);
    vm->debt = 0;
    vm->gc_limit = vm->gc_stress ? 0 : (vm->bytes > GC_MIN_LIMIT ? vm->bytes : GC_MIN_LIMIT);
    vm->gc_running = false;
}

void vm_gc_step(VM *vm)
{
    if (vm->debt > vm->gc_limit)
        vm_gc(vm);
}

void vm_gc_stress(VM *vm, bool on)
{
    vm->gc_stress = on;
    vm->gc_limit = on ? 0 : GC_MIN_LIMIT;
}

void vm_gc_free_all(VM *vm)
{
    while (vm->objects) {
        Obj *o = vm->objects;
        vm->objects = o->next;
        vm_obj_release(vm, o);
    }
    for (size_t c = 0; c < VM_SMALL_CLASSES; c++) {
        while (vm->small[c]) {
            void *p = vm->small[c];
            vm->small[c] = *(void **)p;
            mem_free(p, (c + 1) * 16);
        }
        vm->nsmall[c] = 0;
    }
    mem_free(vm->gray, vm->cap_gray * sizeof *vm->gray);
    vm->gray = NULL;
    vm->cap_gray = vm->ngray = 0;
}
