/* output: how the CLI prints a program's result (--format). */
#ifndef COMB_OUTPUT_H
#define COMB_OUTPUT_H

#include <stdio.h>

#include "vm/vm.h"

/* auto: an aligned table on a terminal, TSV when piped. */
enum { OUT_AUTO, OUT_TABLE, OUT_TSV, OUT_CSV, OUT_JSON };

/* The format called name ("auto", "table", "tsv", "csv", "json"), or -1. */
int out_format_parse(const char *name);
/* Prints v to out: a query runs first; rows in the format; nil prints
 * nothing; anything else as print() writes it. 0, or -1 with the error in
 * the VM. */
int out_print(VM *vm, Value v, int format, FILE *out);

#endif
