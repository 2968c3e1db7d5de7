/* text: a growing, NUL-terminated byte buffer in mem.h memory, for the
 * lines of a statement being read. */
#ifndef COMB_TEXT_H
#define COMB_TEXT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct Text {
    char *p;            /* NULL until something is added */
    size_t len, cap;
} Text;

/* Appends n bytes: 0, or -1 out of memory (t unchanged). */
int text_add(Text *t, const char *p, size_t n);
void text_free(Text *t);

/* Whether n bytes at p are only spaces, tabs and line ends. */
bool text_blank(const char *p, size_t n);
/* The first byte of the n at p that is no space or tab; 0 if none. */
int text_lead(const char *p, size_t n);
/* Whether a line goes on a pipeline written above it: it starts with '|'
 * (and is no `||`). */
bool text_pipes_on(const char *p, size_t n);

#endif
