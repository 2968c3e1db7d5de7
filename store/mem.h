/* mem: the one allocation hook every layer of comb allocates through.
 *
 * Ownership: whoever calls mem_alloc owns the block and frees it with mem_free
 * (or hands it to an owner that will). The hook lets tests fail the N-th
 * allocation or cap total memory, and lets the GC account for every byte. */
#ifndef COMB_MEM_H
#define COMB_MEM_H

#include <stddef.h>

/* realloc-like: old == NULL allocates, nsize == 0 frees and returns NULL.
 * Returns NULL on failure (never aborts); callers decide how to report it. */
void *mem_realloc(void *old, size_t osize, size_t nsize);
void *mem_alloc(size_t size);
void *mem_calloc(size_t n, size_t size);
void mem_free(void *p, size_t size);
char *mem_strdup(const char *s);

/* Live bytes allocated through the hook (sizes as callers report them). */
size_t mem_in_use(void);

/* Test hooks: fail the n-th allocation from now (0 turns it off), or fail any
 * allocation that would take the total past limit bytes (0 turns it off). */
void mem_fail_after(unsigned long n);
void mem_set_limit(size_t limit);

#endif
