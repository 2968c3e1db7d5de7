/* wire: the dispatcher's text codec (growable buffer, escaped fields). */
#include "config.h"
#include "jobs/wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "store/mem.h"

static int reserve(jw_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)-1) / 2)
            return -1;
        cap *= 2;
    }
    char *p = mem_realloc(b->p, b->cap, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int jw_put(jw_buf *b, const void *s, size_t n)
{
    if (reserve(b, n) < 0)
        return -1;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int jw_puts(jw_buf *b, const char *s) { return jw_put(b, s, strlen(s)); }

int jw_printf(jw_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n) < 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

/* Bytes that would split a field or a line, and the escape byte itself. */
static int needs_escape(unsigned char c) { return c <= ' ' || c == '%' || c == 0x7f; }

int jw_field(jw_buf *b, const char *s)
{
    size_t n = 0;
    for (const char *q = s; *q; q++)
        n += needs_escape((unsigned char)*q) ? 3 : 1;
    int sep = b->len > 0 && b->p[b->len - 1] != '\n';
    if (reserve(b, n + 2) < 0)
        return -1;
    char *w = b->p + b->len;
    if (sep)
        *w++ = ' ';
    if (!*s)
        *w++ = '%';
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        if (needs_escape(*q)) {
            *w++ = '%';
            *w++ = "0123456789ABCDEF"[*q >> 4];
            *w++ = "0123456789ABCDEF"[*q & 15];
        } else {
            *w++ = (char)*q;
        }
    }
    *w = '\0';
    b->len = (size_t)(w - b->p);
    return 0;
}

void jw_clear(jw_buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

void jw_free(jw_buf *b)
{
    mem_free(b->p, b->cap);
    b->p = NULL;
    b->len = b->cap = 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Unescapes the field at s in place; returns -1 on a bad escape. */
static int unescape(char *s)
{
    if (s[0] == '%' && s[1] == '\0') {
        s[0] = '\0';
        return 0;
    }
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r != '%') {
            *w++ = *r;
            continue;
        }
        int hi = hexval(r[1]), lo = hi < 0 ? -1 : hexval(r[2]);
        if (lo < 0 || (hi == 0 && lo == 0))
            return -1;
        *w++ = (char)(hi << 4 | lo);
        r += 2;
    }
    *w = '\0';
    return 0;
}

int jw_split(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ')
            p++;
        if (!*p)
            return n;
        if (n == max)
            return -1;
        fields[n] = p;
        while (*p && *p != ' ')
            p++;
        if (*p)
            *p++ = '\0';
        if (unescape(fields[n]) < 0)
            return -1;
        n++;
    }
}

/* Writes all n bytes with put (write, or send without SIGPIPE). */
static int put_all(int fd, const void *p, size_t n, int sock)
{
    const char *q = p;
    while (n > 0) {
        ssize_t w = sock ? send(fd, q, n, MSG_NOSIGNAL) : write(fd, q, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        q += w;
        n -= (size_t)w;
    }
    return 0;
}

int jw_write_all(int fd, const void *p, size_t n) { return put_all(fd, p, n, 0); }
int jw_send_all(int fd, const void *p, size_t n) { return put_all(fd, p, n, 1); }
