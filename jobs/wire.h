/* wire: the dispatcher's text codec: a growable buffer, and lines of
 * space-separated, percent-escaped fields.
 *
 * Journal records and control-protocol requests are both such lines, so a
 * field (a shell command, a directory) never carries a raw space, newline or
 * NUL into either, and one decoder serves both. An empty field is written "%". */
#ifndef COMB_JOBS_WIRE_H
#define COMB_JOBS_WIRE_H

#include <stddef.h>

typedef struct jw_buf {
    char *p; /* always NUL-terminated once anything was put */
    size_t len, cap;
} jw_buf;

/* All return 0, or -1 when memory runs out (the buffer is left as it was). */
int jw_put(jw_buf *b, const void *s, size_t n);
int jw_puts(jw_buf *b, const char *s);
int jw_printf(jw_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s escaped as one field, preceded by a space unless at a line start. */
int jw_field(jw_buf *b, const char *s);
void jw_clear(jw_buf *b);
void jw_free(jw_buf *b);

/* Writes all n bytes to fd: write_all to a file or pipe (write(2)),
 * send_all to a socket (without SIGPIPE: a peer that went away is an
 * error, not a signal). 0, or -1 with errno. */
int jw_write_all(int fd, const void *p, size_t n);
int jw_send_all(int fd, const void *p, size_t n);

/* Splits the NUL-terminated line in place into at most max fields and
 * unescapes each. Returns the count, or -1 for a bad escape, a NUL escape or
 * more than max fields. */
int jw_split(char *line, char **fields, int max);

#endif
