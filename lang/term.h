/* term: what the prompt asks of the terminal: colour, size, the pager. */
#ifndef COMB_TERM_H
#define COMB_TERM_H

#include <stdbool.h>
#include <stddef.h>

#define TERM_DEFAULT_PAGER "less -SRFX"
#define TERM_WRAP_PAGER "less -RFX"    /* for text to copy whole: CSV, TSV, JSON */

/* Colour on file descriptor fd: a terminal, NO_COLOR unset or empty, and
 * TERM not "dumb". */
bool term_color(int fd);

/* The size of the terminal on fd; false if it is not one. */
bool term_size(int fd, int *rows, int *cols);

/* Writes text to stdout; on a terminal (terminal true), text taller than
 * the screen (its long lines wrapped) goes through $PAGER (default
 * TERM_DEFAULT_PAGER, which chops long lines, or when chop is false
 * TERM_WRAP_PAGER; an empty PAGER turns it off). */
void term_page(const char *text, size_t len, bool terminal, bool chop);

#endif
