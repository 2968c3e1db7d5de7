/* arena: bump allocation for a compilation's tokens and syntax tree. */
#include "config.h"
#include "lang/arena.h"

#include <string.h>

#include "store/mem.h"
#include "vm/vm.h"

#define CHUNK_MIN 16384

struct ArenaChunk {
    ArenaChunk *prev;
    size_t size;
    _Alignas(16) char data[];
};

void arena_init(Arena *a, VM *vm)
{
    a->vm = vm;
    a->chunks = NULL;
    a->next = a->end = NULL;
}

void *arena_alloc(Arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if ((size_t)(a->end - a->next) < size) {
        size_t csize = size > CHUNK_MIN ? size : CHUNK_MIN;
        ArenaChunk *c = mem_alloc(sizeof *c + csize);
        if (!c)
            vm_throw(a->vm, v_obj(a->vm->oom));
        c->prev = a->chunks;
        c->size = csize;
        a->chunks = c;
        a->next = c->data;
        a->end = c->data + csize;
    }
    void *p = a->next;
    a->next += size;
    memset(p, 0, size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void *arena_grow(Arena *a, void *old, size_t n, size_t *cap, size_t size, size_t first)
{
    if (n < *cap)
        return old;
    size_t ncap = *cap ? 2 * *cap : first;
    void *p = arena_alloc(a, ncap * size);
    if (n)
        memcpy(p, old, n * size);
    *cap = ncap;
    return p;
}

void arena_free(Arena *a)
{
    while (a->chunks) {
        ArenaChunk *c = a->chunks;
        a->chunks = c->prev;
        mem_free(c, sizeof *c + c->size);
    }
    a->next = a->end = NULL;
}
