/* load: programs from text and files to compiled modules, and the module
 * loader behind `import`. */
#ifndef COMB_LOAD_H
#define COMB_LOAD_H

#include <stdbool.h>
#include <stdio.h>

#include "lang/lexer.h"
#include "vm/vm.h"

/* Compiles src into mod: its main function, or NULL after reporting every
 * error to errout (*at_eof, if given, says an error was at the end of the
 * input, as when a line typed at the prompt is unfinished). */
VProto *lc_compile_source(VM *vm, VModule *mod, const char *src, size_t len, FILE *errout,
                          bool *at_eof);

/* For the prompt and batch input: compiles one statement (or several) read
 * from file at first_line into mod, whose names persist between calls. When
 * src is a single expression the function returns its value. A failed
 * compilation leaves mod's names as they were. errout may be NULL. */
VProto *lc_compile_statement(VM *vm, VModule *mod, const char *src, size_t len,
                             const char *file, int first_line, FILE *errout, bool *at_eof);

/* For tools that read a statement's tokens (the prompt's continuation and
 * completion): lexes src quietly and calls use(toks, at_eof, ud), where
 * at_eof says the text ended inside a token (an unterminated string). 0, or
 * -1 out of memory. */
int lc_with_tokens(VM *vm, const char *src, size_t len,
                   void (*use)(const TokenList *toks, bool at_eof, void *ud), void *ud);

/* A new module compiled from src (main set, not yet run), registered under
 * path so that importing the same file finds it; NULL after errors. */
VModule *lc_load_source(VM *vm, const char *src, size_t len, const char *path, FILE *errout);
/* The same, but a final expression statement becomes the main function's
 * result (comb -e 'ds | count' prints the count). */
VModule *lc_load_eval(VM *vm, const char *src, size_t len, const char *path, FILE *errout);
/* The same from a file; a file that cannot be read is reported too. */
VModule *lc_load_file(VM *vm, const char *path, FILE *errout);

/* Let `import` load modules: "name" is a built-in module of natives if
 * there is one (search; vm/natives.def), else NAME.comb beside the importing
 * file, else stdlib/NAME.comb (lang/paths.h); a name ending in .comb or
 * holding a '/' is a path relative to the importing file. */
void lc_install_import(VM *vm);

#endif
