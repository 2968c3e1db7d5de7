/* load: programs from text and files to compiled modules, and the module
 * loader behind `import`. */
#ifndef COMB_LOAD_H
#define COMB_LOAD_H

#include <stdbool.h>
#include <stdio.h>

#include "vm/vm.h"

/* Compiles src into mod: its main function, or NULL after reporting every
 * error to errout (*at_eof, if given, says an error was at the end of the
 * input, as when a line typed at the prompt is unfinished). */
VProto *lc_compile_source(VM *vm, VModule *mod, const char *src, size_t len, FILE *errout,
                          bool *at_eof);

/* A new module compiled from src (main set, not yet run), registered under
 * path so that importing the same file finds it; NULL after errors. */
VModule *lc_load_source(VM *vm, const char *src, size_t len, const char *path, FILE *errout);
/* The same, but a final expression statement becomes the main function's
 * result (comb -e 'ds | count' prints the count). */
VModule *lc_load_eval(VM *vm, const char *src, size_t len, const char *path, FILE *errout);
/* The same from a file; a file that cannot be read is reported too. */
VModule *lc_load_file(VM *vm, const char *path, FILE *errout);

/* Let `import` load modules: "name" is NAME.comb beside the importing file,
 * else stdlib/NAME.comb (lang/paths.h); a name ending in .comb or holding a
 * '/' is a path relative to the importing file. */
void lc_install_import(VM *vm);

#endif
