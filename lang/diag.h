/* diag: how the front end reports errors in a program: `file:line:col: message`,
 * every error of a file, counted. */
#ifndef COMB_DIAG_H
#define COMB_DIAG_H

#include <stdbool.h>
#include <stdio.h>

#define DIAG_MAX 50     /* report at most this many errors of one file */

typedef struct DiagMsg {
    int line, col;
    char text[240];
} DiagMsg;

/* Errors are kept and written in the order of their place in the file by
 * diag_flush, as the lexer, parser and compiler find them out of order. */
typedef struct Diag {
    FILE *out;          /* where messages go; NULL: counted only */
    const char *file;
    int nerrors;
    bool at_eof;        /* an error was at the end of the input (the prompt reads on) */
    const char *src;    /* the text, to show each error's line with a caret (NULL: not shown) */
    size_t len;
    int first_line;
    DiagMsg msgs[DIAG_MAX];
} Diag;

void diag_init(Diag *d, FILE *out, const char *file);
/* The text the errors are in: its first line is numbered first_line. */
void diag_source(Diag *d, const char *src, size_t len, int first_line);
void diag_error(Diag *d, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_flush(Diag *d);

#endif
