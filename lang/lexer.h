/* lexer: comb source text to tokens, all at once, with newlines that end
 * statements made explicit. */
#ifndef COMB_LEXER_H
#define COMB_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lang/arena.h"
#include "lang/diag.h"

/* X(kind, text for messages) */
#define TOKENS(X)                                                              \
    X(EOF, "end of input") X(NEWLINE, "newline") X(ERROR, "bad token")         \
    X(NAME, "name") X(INT, "number") X(FLOAT, "number") X(STRING, "string")    \
    X(REGEX, "regex")                                                          \
    X(LET, "'let'") X(FN, "'fn'") X(IF, "'if'") X(ELSE, "'else'")              \
    X(WHILE, "'while'") X(FOR, "'for'") X(IN, "'in'") X(RETURN, "'return'")    \
    X(BREAK, "'break'") X(CONTINUE, "'continue'") X(TRY, "'try'")              \
    X(CATCH, "'catch'") X(IMPORT, "'import'") X(AS, "'as'") X(TRUE, "'true'")  \
    X(FALSE, "'false'") X(NIL, "'nil'")                                        \
    X(LPAREN, "'('") X(RPAREN, "')'") X(LBRACKET, "'['") X(RBRACKET, "']'")    \
    X(LBRACE, "'{'") X(RBRACE, "'}'") X(COMMA, "','") X(SEMI, "';'")           \
    X(COLON, "':'") X(DOT, "'.'") X(DOTDOT, "'..'")                            \
    X(PLUS, "'+'") X(MINUS, "'-'") X(STAR, "'*'") X(SLASH, "'/'")              \
    X(PERCENT, "'%'") X(EQ, "'=='") X(NE, "'!='") X(LT, "'<'") X(LE, "'<='")   \
    X(GT, "'>'") X(GE, "'>='") X(AND, "'&&'") X(OR, "'||'") X(NOT, "'!'")      \
    X(ASSIGN, "'='") X(PLUSEQ, "'+='") X(MINUSEQ, "'-='") X(STAREQ, "'*='")    \
    X(SLASHEQ, "'/='") X(PERCENTEQ, "'%='") X(MATCH, "'~'")                    \
    X(NOMATCH, "'!~'") X(PIPE, "'|'")

typedef enum {
#define X(k, text) T_##k,
    TOKENS(X)
#undef X
} TokKind;

typedef struct Token {
    TokKind kind;
    int line, col;
    bool bol;               /* first on its line */
    const char *start;      /* in the source */
    size_t len;
    union {
        int64_t i;          /* T_INT */
        double f;           /* T_FLOAT */
        struct {            /* T_STRING: decoded bytes; T_REGEX: the pattern */
            const char *s;
            size_t n;
            const char *flags;  /* T_REGEX */
        } str;
    } v;
} Token;

typedef struct TokenList {
    Token *t;
    size_t n;
} TokenList;

/* Tokens of src (ending with T_EOF); errors go to diag and become T_ERROR. */
TokenList lex(Arena *a, const char *src, size_t len, Diag *diag);
/* The same, numbering lines from first_line (a statement read from the
 * middle of a file or session). */
TokenList lex_at(Arena *a, const char *src, size_t len, int first_line, Diag *diag);

/* How a token reads in a message: "')'", "name 'foo'", "end of input". */
const char *tok_describe(const Token *t, char *buf, size_t size);
const char *tok_kind_text(TokKind k);

#endif
