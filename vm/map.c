/* map: comb's hash maps, which keep their keys in insertion order. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "vm/vm.h"

#define MAP_MAX ((size_t)UINT32_MAX / 4)
/* A map of keys other than 0, 1, 2... with room for at most this many has
 * no index: its keys are searched in order (a row's few fields are found
 * as fast so, and a query's many rows are made with one allocation less). */
#define MAP_LINEAR 8

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

bool vm_map_norm_key(Value *k)
{
    if (k->type == VT_FLOAT) {
        double f = k->as.f;
        if (isnan(f))
            return false;
        int64_t i;
        if (ops_float_int(f, &i))
            *k = v_int(i);
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

static bool dense(const VMap *m)
{
    return m->hdr.flags & MAP_DENSE;
}

static size_t slot_size(const VMap *m)
{
    return dense(m) ? sizeof(Value) : sizeof(MapEntry);
}

VMap *vm_map_new(VM *vm, size_t cap)
{
    VMap *m = vm_new_obj(vm, sizeof(VMap), VT_MAP);
    m->hdr.flags = MAP_DENSE;
    m->entries = NULL;
    m->index = NULL;
    m->count = m->live = m->cap = m->mask = 0;
    if (cap)
        vm_map_reserve(vm, m, cap);
    return m;
}

VMap *vm_map_new_keyed(VM *vm, size_t cap)
{
    if (cap == 0)
        cap = 1;
    if (cap > MAP_LINEAR) {
        VMap *m = vm_map_new(vm, 0);
        m->hdr.flags &= (uint16_t)~MAP_DENSE;
        vm_map_reserve(vm, m, cap);
        return m;
    }
    VMap *m = vm_new_obj(vm, sizeof(VMap) + cap * sizeof(MapEntry), VT_MAP);
    m->hdr.flags = MAP_INLINE;
    m->hdr.hash = (uint32_t)cap;
    m->entries = (MapEntry *)(void *)(m + 1);
    m->index = NULL;
    m->count = m->live = m->mask = 0;
    m->cap = cap;
    return m;
}

VMap *vm_map_row(VM *vm, const Value *keys, const Value *vals, size_t n)
{
    VMap *m = vm_map_new_keyed(vm, n);
    if (n > MAP_LINEAR) {   /* an index to fill: key by key */
        for (size_t j = 0; j < n; j++)
            vm_map_set(vm, m, keys[j], vals[j]);
        return m;
    }
    for (size_t j = 0; j < n; j++)
        m->entries[j] = (MapEntry){keys[j], vals[j]};
    m->count = m->live = n;
    return m;
}

/* The entry of key (hash h) in a map that is not dense. */
static MapEntry *find(const VMap *m, Value key, uint32_t h)
{
    if (!m->index) {
        for (size_t j = 0; j < m->count; j++)
            if (key_eq(m->entries[j].key, key))
                return &m->entries[j];
        return NULL;
    }
    for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
        MapSlot s = m->index[i];
        if (!s.entry)
            return NULL;
        if (s.hash == h && key_eq(m->entries[s.entry - 1].key, key))
            return &m->entries[s.entry - 1];
    }
}

static void reindex(VMap *m)
{
    memset(m->index, 0, (m->mask + 1) * sizeof *m->index);
    for (size_t j = 0; j < m->count; j++) {
        uint32_t h = vm_hash_value(m->entries[j].key);
        size_t i = h & m->mask;
        while (m->index[i].entry)
            i = (i + 1) & m->mask;
        m->index[i] = (MapSlot){h, (uint32_t)(j + 1)};
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

/* An index big enough for cap entries, rebuilt (none for a few). */
static void build_index(VM *vm, VMap *m, size_t cap)
{
    if (!m->index && cap <= MAP_LINEAR) {
        compact(m);
        return;
    }
    size_t isize = 8;
    while (isize < 2 * cap)
        isize *= 2;
    if (!m->index || isize > m->mask + 1) {
        MapSlot *index = vm_alloc(vm, isize * sizeof *index);
        if (m->index)
            vm_free_mem(vm, m->index, (m->mask + 1) * sizeof *m->index);
        m->index = index;
        m->mask = isize - 1;
    }
    compact(m);
    reindex(m);
}

/* Room for cap entries. If an allocation fails part way the map stays
 * valid: vm_map_set grows again while index[] is half full. */
void vm_map_reserve(VM *vm, VMap *m, size_t cap)
{
    if (cap > MAP_MAX)
        vm_error(vm, "map too large");
    if (cap <= m->cap)
        return;
    if (m->hdr.flags & MAP_INLINE) {   /* out of its block, which stays as it is */
        MapEntry *e = vm_alloc(vm, cap * sizeof *e);
        memcpy(e, m->entries, m->count * sizeof *e);
        m->entries = e;
        m->hdr.flags &= (uint16_t)~MAP_INLINE;
    } else {
        m->entries = vm_realloc(vm, m->entries, m->cap * slot_size(m), cap * slot_size(m));
    }
    m->cap = cap;
    if (!dense(m))
        build_index(vm, m, cap);
}

/* A key other than the next int: the general form from now on. */
static void undense(VM *vm, VMap *m)
{
    size_t cap = m->cap < 4 ? 4 : m->cap;
    MapEntry *e = vm_alloc(vm, cap * sizeof *e);
    for (size_t k = 0; k < m->count; k++) {
        e[k].key = v_int((int64_t)k);
        e[k].val = m->vals[k];
    }
    vm_free_mem(vm, m->vals, m->cap * sizeof(Value));
    m->entries = e;
    m->cap = cap;
    m->hdr.flags &= (uint16_t)~MAP_DENSE;
    build_index(vm, m, cap);
}

Value *vm_map_ref(VMap *m, Value key)
{
    if (!vm_map_norm_key(&key))
        return NULL;
    if (dense(m))
        return key.type == VT_INT && (uint64_t)key.as.i < m->count ? &m->vals[key.as.i] : NULL;
    MapEntry *e = find(m, key, vm_hash_value(key));
    return e ? &e->val : NULL;
}

bool vm_map_get(VM *vm, VMap *m, Value key, Value *out)
{
    (void)vm;
    Value *v = vm_map_ref(m, key);
    if (v)
        *out = *v;
    return v != NULL;
}

/* Room for one more entry at the end. */
static void grow(VM *vm, VMap *m)
{
    if (m->count == m->cap)
        vm_map_reserve(vm, m, m->cap < 4 ? 4 : m->cap * 2);
}

void vm_map_set(VM *vm, VMap *m, Value key, Value val)
{
    if (!vm_map_norm_key(&key))
        vm_error(vm, "map key cannot be %s", key.type == VT_NIL ? "nil" : "NaN");
    if (dense(m)) {
        if (key.type == VT_INT && (uint64_t)key.as.i < m->count) {
            m->vals[key.as.i] = val;
            return;
        }
        if (key.type == VT_INT && (uint64_t)key.as.i == m->count) {
            grow(vm, m);
            m->vals[m->count++] = val;
            m->live++;
            return;
        }
        undense(vm, m);
    }
    uint32_t h = vm_hash_value(key);
    MapEntry *e = find(m, key, h);
    if (e) {
        e->val = val;
        return;
    }
    if (m->count == m->cap || (m->index && 2 * (m->count + 1) > m->mask + 1)) {
        if (m->live < m->count / 2)
            build_index(vm, m, m->cap);
        else
            vm_map_reserve(vm, m, m->cap < 4 ? 4 : m->cap * 2);
    }
    if (m->index) {
        size_t i = h & m->mask;
        while (m->index[i].entry)
            i = (i + 1) & m->mask;
        m->index[i] = (MapSlot){h, (uint32_t)(m->count + 1)};
    }
    m->entries[m->count].key = key;
    m->entries[m->count].val = val;
    m->count++;
    m->live++;
}

bool vm_map_del(VM *vm, VMap *m, Value key)
{
    if (!vm_map_ref(m, key))
        return false;
    if (dense(m))
        undense(vm, m);
    vm_map_norm_key(&key);
    MapEntry *e = find(m, key, vm_hash_value(key));
    e->key = v_undef();
    e->val = v_nil();
    m->live--;
    return true;
}

bool vm_map_next(VMap *m, size_t *pos, Value *key, Value *val)
{
    if (dense(m)) {
        if (*pos >= m->count)
            return false;
        *key = v_int((int64_t)*pos);
        *val = m->vals[(*pos)++];
        return true;
    }
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

void vm_map_traverse(VM *vm, VMap *m)
{
    if (dense(m)) {
        for (size_t i = 0; i < m->count; i++)
            vm_mark(vm, m->vals[i]);
        return;
    }
    for (size_t i = 0; i < m->count; i++) {
        vm_mark(vm, m->entries[i].key);
        vm_mark(vm, m->entries[i].val);
    }
}

void vm_map_release(VM *vm, VMap *m)
{
    if (!(m->hdr.flags & MAP_INLINE))
        vm_free_mem(vm, m->entries, m->cap * slot_size(m));
    if (m->index)
        vm_free_mem(vm, m->index, (m->mask + 1) * sizeof *m->index);
    vm_free_obj(vm, m, sizeof *m + m->hdr.hash * sizeof(MapEntry));
}
