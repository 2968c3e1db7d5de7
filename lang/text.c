/* text: a growing, NUL-terminated byte buffer in mem.h memory. */
#include "config.h"
#include "lang/text.h"

#include <string.h>

#include "store/mem.h"

int text_add(Text *t, const char *p, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *q = mem_realloc(t->p, t->cap, cap);
        if (!q)
            return -1;
        t->p = q;
        t->cap = cap;
    }
    memcpy(t->p + t->len, p, n);
    t->len += n;
    t->p[t->len] = '\0';
    return 0;
}

void text_free(Text *t)
{
    mem_free(t->p, t->cap);
    t->p = NULL;
    t->len = t->cap = 0;
}

bool text_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
            return false;
    return true;
}

int text_lead(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t')
            return (unsigned char)p[i];
    return 0;
}

bool text_pipes_on(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    return i < n && p[i] == '|' && (i + 1 == n || p[i + 1] != '|');
}
