/* multiline: whether a statement typed at the prompt goes on to the next
 * line, judged from its tokens before it is compiled. */
#ifndef COMB_MULTILINE_H
#define COMB_MULTILINE_H

#include <stdbool.h>
#include <stddef.h>

#include "vm/vm.h"

/* True when src cannot be complete whatever follows it: a bracket is still
 * open, a string is unterminated, or the last token is `|` (a pipeline goes
 * on). The compiler's "error at end of input" (lc_compile_statement's
 * at_eof) is the other reason to read on. Out of memory counts as
 * complete, so the compiler reports it. */
bool ml_open(VM *vm, const char *src, size_t len);

/* What keeps src open, for the prompt to say, into buf: the innermost
 * bracket not closed and where it opened ("'(' from line 1, column 7"), a
 * string or regex, or a trailing '|'; false when nothing is open. */
bool ml_what_open(VM *vm, const char *src, size_t len, char *buf, size_t n);

#endif
