/* place: an error's place shown as people read it: the source line, and a
 * caret under the column, after the `file:line:col: message` line. The
 * front end (syntax errors) and vm_print_error (runtime errors) share it. */
#ifndef COMB_VM_PLACE_H
#define COMB_VM_PLACE_H

#include <stdint.h>
#include <stdio.h>

#include "vm/vm.h"

/* Writes line `line` of the text src[0 .. len) (its first line numbered
 * first_line) with a caret under byte column col (1-based); nothing when
 * the text has no such line. */
void vm_show_place(FILE *out, const char *src, size_t len, int first_line, uint32_t line, uint32_t col);

/* Keeps text (numbered from first_line), which main and the functions in
 * it were compiled from, with them and as m's last, for the places of
 * their runtime errors. */
void vm_keep_source(VM *vm, VModule *m, VProto *main, const char *src, size_t len, int first_line);

/* vm_show_place for a place in source (vm_keep_source's, NULL if none) of
 * module m: that text, or else m's file as it is now. */
void vm_show_source_place(FILE *out, const VArray *source, const VModule *m, uint32_t line, uint32_t col);

#endif
