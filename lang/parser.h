/* parser: tokens to the syntax tree (lang/ast.h), reporting every syntax
 * error of a file to the Diag. */
#ifndef COMB_PARSER_H
#define COMB_PARSER_H

#include "lang/ast.h"
#include "lang/lexer.h"

/* The program's top-level statements; check d->nerrors before using them. */
Block parse(Arena *a, const TokenList *toks, Diag *d);

#endif
