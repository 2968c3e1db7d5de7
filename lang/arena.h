/* arena: bump allocation for a compilation's tokens and syntax tree, freed
 * all at once; running out of memory raises the VM's out-of-memory error. */
#ifndef COMB_ARENA_H
#define COMB_ARENA_H

#include <stddef.h>

typedef struct VM VM;
typedef struct ArenaChunk ArenaChunk;

typedef struct Arena {
    VM *vm;
    ArenaChunk *chunks;
    char *next, *end;
} Arena;

void arena_init(Arena *a, VM *vm);
void *arena_alloc(Arena *a, size_t size);     /* zeroed, 16-aligned */
char *arena_strndup(Arena *a, const char *s, size_t n);
/* A growing array: when *n == *cap, a new one of twice the room (first if
 * empty) holding the n old elements of size each; else old itself. */
void *arena_grow(Arena *a, void *old, size_t n, size_t *cap, size_t size, size_t first);
void arena_free(Arena *a);

#endif
