/* multiline: whether a statement typed at the prompt goes on to the next
 * line, from the lexer's tokens (so strings, comments and regex literals
 * are read as the compiler will read them). */
#include "config.h"
#include "lang/multiline.h"

#include "lang/load.h"

#include <stdio.h>

#define ML_STACK 64     /* brackets remembered; deeper ones are counted only */

typedef struct Opener {
    char *buf;
    size_t n;
    bool open;
} Opener;

static void find_opener(const TokenList *toks, bool at_eof, void *ud)
{
    Opener *o = ud;
    const Token *stack[ML_STACK];
    int depth = 0;
    TokKind last = T_EOF;
    for (size_t i = 0; i < toks->n; i++) {
        const Token *t = &toks->t[i];
        if (t->kind == T_LPAREN || t->kind == T_LBRACKET || t->kind == T_LBRACE) {
            if (depth < ML_STACK)
                stack[depth] = t;
            depth++;
        } else if ((t->kind == T_RPAREN || t->kind == T_RBRACKET || t->kind == T_RBRACE) && depth > 0) {
            depth--;
        }
        if (t->kind != T_NEWLINE && t->kind != T_EOF)
            last = t->kind;
    }
    o->open = true;
    if (at_eof) {
        snprintf(o->buf, o->n, "a string (or regex) not closed");
    } else if (depth > 0 && depth <= ML_STACK) {
        const Token *t = stack[depth - 1];
        snprintf(o->buf, o->n, "'%c' from line %d, column %d", *t->start, t->line, t->col);
    } else if (depth > 0) {
        snprintf(o->buf, o->n, "%d brackets", depth);
    } else if (last == T_PIPE) {
        snprintf(o->buf, o->n, "a pipeline after its trailing '|'");
    } else {
        o->open = false;
    }
}

bool ml_what_open(VM *vm, const char *src, size_t len, char *buf, size_t n)
{
    Opener o = {buf, n, false};
    return !lc_with_tokens(vm, src, len, find_opener, &o) && o.open;
}

bool ml_open(VM *vm, const char *src, size_t len)
{
    char what[64];
    return ml_what_open(vm, src, len, what, sizeof what);
}
