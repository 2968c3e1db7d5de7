/* map: comb's hash maps, which keep their keys in insertion order. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "vm/vm.h"

#define MAP_MAX ((size_t)UINT32_MAX / 4)

uint32_t vm_hash_value(Value v)
{
    uint64_t x;
    switch (v.type) {
    case VT_STR:
        return str_hash(AS_STR(v));
    case VT_INT:
        x = (uint64_t)v.as.i;
        break;
    case VT_FLOAT:
        memcpy(&x, &v.as.f, sizeof x);
        break;
    case VT_BOOL:
        x = v.as.b ? 0x51ed27u : 0x2545f4u;
        break;
    default:
        x = (uint64_t)(uintptr_t)v.as.o >> 4;
        break;
    }
    x *= 0x9E3779B97F4A7C15ull;
    return (uint32_t)(x >> 32);
}

/* Keys as stored: integral floats become ints; nil and NaN are refused
 * (return false). */
static bool norm_key(Value *k)
{
    if (k->type == VT_FLOAT) {
        double f = k->as.f;
        if (isnan(f))
            return false;
        if (f == floor(f) && f >= -9223372036854775808.0 && f < 9223372036854775808.0)
            *k = v_int((int64_t)f);
        return true;
    }
    return k->type != VT_NIL && k->type != VT_UNDEF;
}

static bool key_eq(Value a, Value b)
{
    if (a.type != b.type)
        return false;
    switch (a.type) {
    case VT_INT:
        return a.as.i == b.as.i;
    case VT_STR:
        return str_equal(AS_STR(a), AS_STR(b));
    case VT_FLOAT:
        return a.as.f == b.as.f;
    case VT_BOOL:
        return a.as.b == b.as.b;
    default:
        return a.as.o == b.as.o;
    }
}

VMap *vm_map_new(VM *vm, size_t cap)
{
    VMap *m = vm_new_obj(vm, sizeof(VMap), VT_MAP);
    m->entries = NULL;
    m->index = NULL;
    m->count = m->live = m->cap = m->mask = 0;
    if (cap)
        vm_map_reserve(vm, m, cap);
    return m;
}

static MapEntry *find(const VMap *m, Value key, uint32_t h)
{
    if (!m->index)
        return NULL;
    for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
        uint32_t s = m->index[i];
        if (!s)
            return NULL;
        MapEntry *e = &m->entries[s - 1];
        if (key_eq(e->key, key))
            return e;
    }
}

static void reindex(VMap *m)
{
    memset(m->index, 0, (m->mask + 1) * sizeof *m->index);
    for (size_t j = 0; j < m->count; j++) {
        size_t i = vm_hash_value(m->entries[j].key) & m->mask;
        while (m->index[i])
            i = (i + 1) & m->mask;
        m->index[i] = (uint32_t)(j + 1);
    }
}

/* Drops deleted entries, keeping the order of the others. */
static void compact(VMap *m)
{
    size_t j = 0;
    for (size_t i = 0; i < m->count; i++)
        if (m->entries[i].key.type != VT_UNDEF)
            m->entries[j++] = m->entries[i];
    m->count = j;
}

/* Room for cap entries. If an allocation fails part way the map stays
 * valid: vm_map_set grows again while index[] is half full. */
void vm_map_reserve(VM *vm, VMap *m, size_t cap)
{
    if (cap > MAP_MAX)
        vm_error(vm, "map too large");
    if (cap <= m->cap)
        return;
    m->entries = vm_realloc(vm, m->entries, m->cap * sizeof(MapEntry), cap * sizeof(MapEntry));
    m->cap = cap;
    size_t isize = 8;
    while (isize < 2 * cap)
        isize *= 2;
    if (!m->index || isize > m->mask + 1) {
        uint32_t *index = vm_alloc(vm, isize * sizeof *index);
        if (m->index)
            vm_free_mem(vm, m->index, (m->mask + 1) * sizeof *m->index);
        m->index = index;
        m->mask = isize - 1;
    }
    compact(m);
    reindex(m);
}

static MapEntry *lookup(const VMap *m, Value key)
{
    return norm_key(&key) ? find(m, key, vm_hash_value(key)) : NULL;
}

bool vm_map_get(VM *vm, VMap *m, Value key, Value *out)
{
    (void)vm;
    MapEntry *e = lookup(m, key);
    if (e)
        *out = e->val;
    return e != NULL;
}

Value *vm_map_ref(VMap *m, Value key)
{
    MapEntry *e = lookup(m, key);
    return e ? &e->val : NULL;
}

void vm_map_set(VM *vm, VMap *m, Value key, Value val)
{
    if (!norm_key(&key))
        vm_error(vm, "map key cannot be %s", key.type == VT_NIL ? "nil" : "NaN");
    uint32_t h = vm_hash_value(key);
    MapEntry *e = find(m, key, h);
    if (e) {
        e->val = val;
        return;
    }
    if (m->count == m->cap || 2 * (m->count + 1) > m->mask + 1) {
        if (m->live < m->count / 2) {
            compact(m);
            reindex(m);
        } else {
            vm_map_reserve(vm, m, m->cap < 4 ? 4 : m->cap * 2);
        }
    }
    size_t i = h & m->mask;
    while (m->index[i])
        i = (i + 1) & m->mask;
    m->entries[m->count].key = key;
    m->entries[m->count].val = val;
    m->index[i] = (uint32_t)++m->count;
    m->live++;
}

bool vm_map_del(VM *vm, VMap *m, Value key)
{
    (void)vm;
    MapEntry *e = lookup(m, key);
    if (!e)
        return false;
    e->key = v_undef();
    e->val = v_nil();
    m->live--;
    return true;
}

bool vm_map_next(VMap *m, size_t *pos, Value *key, Value *val)
{
    while (*pos < m->count) {
        MapEntry *e = &m->entries[(*pos)++];
        if (e->key.type != VT_UNDEF) {
            *key = e->key;
            *val = e->val;
            return true;
        }
    }
    return false;
}
