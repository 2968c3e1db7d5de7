/* object: arrays, functions, handles and modules; what each object type
 * keeps alive and how it is released (strings and maps have their own files). */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "vm/vm.h"

#define ARRAY_MAX ((size_t)1 << 40)

VArray *vm_array_new(VM *vm, size_t cap)
{
    VArray *a = vm_new_obj(vm, sizeof(VArray), VT_ARRAY);
    a->items = NULL;
    a->len = a->cap = 0;
    a->times = NULL;
    if (cap)
        vm_array_reserve(vm, a, cap);
    return a;
}

void vm_array_reserve(VM *vm, VArray *a, size_t cap)
{
    if (cap <= a->cap)
        return;
    if (cap > ARRAY_MAX)
        vm_error(vm, "array too large");
    a->items = vm_realloc(vm, a->items, a->cap * sizeof(Value), cap * sizeof(Value));
    a->cap = cap;
}

void vm_array_push(VM *vm, VArray *a, Value v)
{
    if (a->len == a->cap)
        vm_array_reserve(vm, a, a->cap < 4 ? 4 : a->cap * 2);
    a->items[a->len++] = v;
}

VArray *vm_array_columns(VM *vm, size_t n, uint32_t nf, const Value *names)
{
    if (n > ARRAY_MAX || (nf && n > ARRAY_MAX / nf))
        vm_error(vm, "array too large");
    size_t cells = n * nf;
    VColumns *c = vm_alloc(vm, sizeof *c + (nf + cells) * sizeof(Value));
    c->vm = vm;
    c->n = n;
    c->nf = nf;
    c->names = (Value *)(c + 1);
    c->cells = c->names + nf;
    c->built = NULL;
    memcpy(c->names, names, nf * sizeof(Value));
    memset(c->cells, 0, cells * sizeof(Value));     /* nil until filled */
    VArray *a = vm_new_obj(vm, sizeof(VArray), VT_ARRAY);
    a->hdr.flags = ARRAY_COLUMNS;
    a->cols = c;
    a->len = a->cap = 0;
    a->times = NULL;
    return a;
}

static void columns_free(VM *vm, VColumns *c)
{
    vm_free_mem(vm, c->built, c->built ? c->n * sizeof(Value) : 0);
    vm_free_mem(vm, c, sizeof *c + (c->nf + c->n * c->nf) * sizeof(Value));
}

/* The rows made as a group by makes them: a map of the fields in order.
 * No collection runs inside an allocation, so the new maps need no root. */
void vm_array_force(Obj *o)
{
    VArray *a = (VArray *)o;
    VColumns *c = a->cols;
    VM *vm = c->vm;
    if (!c->built)
        c->built = vm_alloc(vm, (c->n ? c->n : 1) * sizeof(Value));
    bool distinct = true;   /* a select may name a field twice: the last wins */
    for (uint32_t j = 0; j < c->nf; j++)
        for (uint32_t k = 0; k < j; k++)
            distinct &= !str_equal(AS_STR(c->names[j]), AS_STR(c->names[k]));
    for (size_t i = 0; i < c->n; i++) {
        const Value *row = c->cells + i * c->nf;
        VMap *m = distinct ? vm_map_row(vm, c->names, row, c->nf) : vm_map_new_keyed(vm, c->nf);
        for (uint32_t j = 0; !distinct && j < c->nf; j++)
            vm_map_set(vm, m, c->names[j], row[j]);
        c->built[i] = v_obj(m);
    }
    Value *items = c->built;
    size_t n = c->n;
    c->built = NULL;
    if (!n) {
        vm_free_mem(vm, items, sizeof(Value));
        items = NULL;
    }
    columns_free(vm, c);
    a->hdr.flags &= (uint16_t)~ARRAY_COLUMNS;
    a->items = items;
    a->len = a->cap = n;
}

VProto *vm_proto_new(VM *vm, VModule *mod)
{
    VProto *p = vm_new_obj(vm, sizeof(VProto), VT_PROTO);
    memset((char *)p + sizeof(Obj), 0, sizeof(VProto) - sizeof(Obj));
    p->module = mod;
    return p;
}

VFunc *vm_func_new(VM *vm, VProto *p)
{
    VFunc *f = vm_new_obj(vm, sizeof(VFunc) + p->nupvals * sizeof(VUpval *), VT_FUNC);
    f->p = p;
    f->hdr.flags = p->nupvals; /* its size, even after p is freed in a sweep */
    for (int i = 0; i < p->nupvals; i++)
        f->up[i] = NULL;
    return f;
}

VHandle *vm_handle_new(VM *vm, const VHandleType *type, size_t size)
{
    VHandle *h = vm_new_obj(vm, sizeof(VHandle) + size, VT_HANDLE);
    h->type = type;
    h->size = size;
    memset(h->data, 0, size);
    return h;
}

VModule *vm_module_new(VM *vm, const char *name, const char *path)
{
    VModule *m = vm_new_obj(vm, sizeof(VModule), VT_MODULE);
    memset((char *)m + sizeof(Obj), 0, sizeof(VModule) - sizeof(Obj));
    vm_push_root(vm, v_obj(m));
    m->name = vm_str_cstr(vm, name);
    m->path = vm_str_cstr(vm, path);
    m->symbols = vm_map_new(vm, 0);
    m->posfd = -1;
    vm_pop_root(vm, 1);
    return m;
}

size_t vm_module_slot(VM *vm, VModule *m, VStr *name, bool exported)
{
    Value *slot = vm_map_ref(m->symbols, v_obj(name));
    if (slot) {
        size_t i = (size_t)slot->as.i;
        m->exported[i] |= exported;
        return i;
    }
    if (m->nvars == m->cap) {
        size_t cap = m->cap < 8 ? 8 : 2 * m->cap;
        m->exported = vm_realloc(vm, m->exported, m->cap, cap);
        m->vars = vm_realloc(vm, m->vars, m->cap * sizeof(Value), cap * sizeof(Value));
        m->cap = cap;
    }
    size_t i = m->nvars;
    vm_map_set(vm, m->symbols, v_obj(name), v_int((int64_t)i));
    m->vars[i] = v_undef();
    m->exported[i] = exported;
    m->nvars++;
    return i;
}

/* ---- for the collector ------------------------------------------------ */

static void traverse_proto(VM *vm, VProto *p)
{
    for (size_t i = 0; i < p->nk; i++)
        vm_mark(vm, p->k[i]);
    for (size_t i = 0; i < p->nprotos; i++)
        vm_mark_obj(vm, &p->protos[i]->hdr);
    if (p->name)
        vm_mark_obj(vm, &p->name->hdr);
    if (p->module)
        vm_mark_obj(vm, &p->module->hdr);
    if (p->source)
        vm_mark_obj(vm, &p->source->hdr);
}

static void traverse_module(VM *vm, VModule *m)
{
    vm_mark_obj(vm, &m->name->hdr);
    vm_mark_obj(vm, &m->path->hdr);
    vm_mark_obj(vm, &m->symbols->hdr);
    if (m->main)
        vm_mark_obj(vm, &m->main->hdr);
    if (m->source)
        vm_mark_obj(vm, &m->source->hdr);
    for (size_t i = 0; i < m->nvars; i++)
        vm_mark(vm, m->vars[i]);
}

void vm_obj_traverse(VM *vm, Obj *o)
{
    switch ((VType)o->type) {
    case VT_STR:
        if (o->flags & STR_VIEW)
            vm_mark_obj(vm, &str_owner((VStr *)o)->hdr);
        break;
    case VT_ARRAY: {
        VArray *a = (VArray *)o;
        if (o->flags & ARRAY_COLUMNS)
            for (size_t i = 0; i < a->cols->nf * (a->cols->n + 1); i++)
                vm_mark(vm, a->cols->names[i]);     /* the names, then the cells */
        for (size_t i = 0; i < a->len; i++)
            vm_mark(vm, a->items[i]);
        if (a->times)
            vm_mark_obj(vm, &a->times->hdr);
        break;
    }
    case VT_MAP:
        vm_map_traverse(vm, (VMap *)o);
        break;
    case VT_FUNC: {
        VFunc *f = (VFunc *)o;
        vm_mark_obj(vm, &f->p->hdr);
        for (int i = 0; i < f->p->nupvals; i++)
            if (f->up[i])
                vm_mark_obj(vm, &f->up[i]->hdr);
        break;
    }
    case VT_HANDLE: {
        VHandle *h = (VHandle *)o;
        if (h->type->mark)
            h->type->mark(vm, h->data);
        break;
    }
    case VT_MODULE:
        traverse_module(vm, (VModule *)o);
        break;
    case VT_PROTO:
        traverse_proto(vm, (VProto *)o);
        break;
    case VT_UPVAL:
        vm_mark(vm, *((VUpval *)o)->v);
        break;
    default:
        break;
    }
}

static void release_proto(VM *vm, VProto *p)
{
    vm_free_mem(vm, p->code, p->ncode * sizeof *p->code);
    vm_free_mem(vm, p->pos, p->ncode * sizeof *p->pos);
    vm_free_mem(vm, p->k, p->nk * sizeof *p->k);
    vm_free_mem(vm, p->protos, p->nprotos * sizeof *p->protos);
    vm_free_mem(vm, p->upv_local, p->nupvals);
    vm_free_mem(vm, p->upv_index, p->nupvals);
    vm_free_obj(vm, p, sizeof *p);
}

void vm_obj_release(VM *vm, Obj *o)
{
    switch ((VType)o->type) {
    case VT_STR: {
        VStr *s = (VStr *)o;
        if (o->flags & STR_MAPPED)
            vm_str_unmap(vm, s);
        vm_free_obj(vm, s, sizeof *s + ((o->flags & STR_VIEW) ? 0 : s->cap + 1));
        break;
    }
    case VT_ARRAY: {
        VArray *a = (VArray *)o;
        if (o->flags & ARRAY_COLUMNS)
            columns_free(vm, a->cols);
        else
            vm_free_mem(vm, a->items, a->cap * sizeof(Value));
        vm_free_obj(vm, a, sizeof *a);
        break;
    }
    case VT_MAP:
        vm_map_release(vm, (VMap *)o);
        break;
    case VT_FUNC: {
        VFunc *f = (VFunc *)o;
        vm_free_obj(vm, f, sizeof *f + f->hdr.flags * sizeof(VUpval *));
        break;
    }
    case VT_HANDLE: {
        VHandle *h = (VHandle *)o;
        if (h->type->free)
            h->type->free(vm, h->data);
        vm_free_obj(vm, h, sizeof *h + h->size);
        break;
    }
    case VT_MODULE: {
        VModule *m = (VModule *)o;
        vm_free_mem(vm, m->vars, m->cap * sizeof(Value));
        vm_free_mem(vm, m->exported, m->cap);
        if (m->posfd >= 0)
            close(m->posfd);
        vm_free_obj(vm, m, sizeof *m);
        break;
    }
    case VT_PROTO:
        release_proto(vm, (VProto *)o);
        break;
    case VT_NATIVE:
        vm_free_obj(vm, o, sizeof(VNative));
        break;
    case VT_UPVAL:
        vm_free_obj(vm, o, sizeof(VUpval));
        break;
    default:
        break;
    }
}
