/* multiline: whether a statement typed at the prompt goes on to the next
 * line, from the lexer's tokens (so strings, comments and regex literals
 * are read as the compiler will read them). */
#include "config.h"
#include "lang/multiline.h"

#include "lang/load.h"

static void scan(const TokenList *toks, bool at_eof, void *ud)
{
    bool *open = ud;
    int depth = 0;
    TokKind last = T_EOF;
    for (size_t i = 0; i < toks->n; i++) {
        TokKind k = toks->t[i].kind;
        if (k == T_LPAREN || k == T_LBRACKET || k == T_LBRACE)
            depth++;
        else if ((k == T_RPAREN || k == T_RBRACKET || k == T_RBRACE) && depth > 0)
            depth--;
        if (k != T_NEWLINE && k != T_EOF)
            last = k;
    }
    *open = depth > 0 || last == T_PIPE || at_eof;
}

bool ml_open(VM *vm, const char *src, size_t len)
{
    bool open = false;
    if (lc_with_tokens(vm, src, len, scan, &open))
        return false;
    return open;
}
