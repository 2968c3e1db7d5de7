/* lexer: comb source text to tokens, all at once, with newlines that end
 * statements made explicit.
 *
 * A newline becomes a T_NEWLINE token when it can end a statement: after a
 * name, a literal, `)`, `]`, `}`, `return`, `break` or `continue`, and not
 * inside ( ) or [ ] (inside { } it may: blocks hold statements). So a line
 * ending in an operator or a comma goes on to the next line.
 * `/` starts a regex literal unless it follows a value, where it divides. */
#include "config.h"
#include "lang/lexer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/fieldtext.h"

#define BRACKET_DEPTH 256

typedef struct Lexer {
    Arena *arena;
    Diag *diag;
    const char *src, *p, *end;
    const char *line_start;
    int line;
    Token *toks;
    size_t n, cap;
    char brackets[BRACKET_DEPTH];   /* the open brackets, innermost last */
    int depth;
} Lexer;

static const char *const kind_text[] = {
#define X(k, text) text,
    TOKENS(X)
#undef X
};

const char *tok_kind_text(TokKind k)
{
    return kind_text[k];
}

static const struct {
    const char *word;
    TokKind kind;
} keywords[] = {
    {"let", T_LET}, {"fn", T_FN}, {"if", T_IF}, {"else", T_ELSE}, {"while", T_WHILE},
    {"for", T_FOR}, {"in", T_IN}, {"return", T_RETURN}, {"break", T_BREAK},
    {"continue", T_CONTINUE}, {"try", T_TRY}, {"catch", T_CATCH}, {"import", T_IMPORT},
    {"as", T_AS}, {"true", T_TRUE}, {"false", T_FALSE}, {"nil", T_NIL},
};

static Token *add(Lexer *lx, TokKind kind, const char *start, int col)
{
    lx->toks = arena_grow(lx->arena, lx->toks, lx->n, &lx->cap, sizeof *lx->toks, 256);
    Token *t = &lx->toks[lx->n++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->line = lx->line;
    t->col = col;
    t->start = start;
    t->len = (size_t)(lx->p - start);
    t->bol = lx->n == 1 || lx->toks[lx->n - 2].line != lx->line;
    return t;
}

static int col_of(const Lexer *lx, const char *p)
{
    return (int)(p - lx->line_start) + 1;
}

static TokKind last_kind(const Lexer *lx)
{
    return lx->n ? lx->toks[lx->n - 1].kind : T_NEWLINE;
}

/* Does the previous token end a value (so `/` divides, a newline ends)? */
static bool after_value(const Lexer *lx)
{
    switch (last_kind(lx)) {
    case T_NAME: case T_INT: case T_FLOAT: case T_STRING: case T_REGEX:
    case T_TRUE: case T_FALSE: case T_NIL: case T_RPAREN: case T_RBRACKET:
        return true;
    default:
        return false;
    }
}

static bool ends_statement(const Lexer *lx)
{
    TokKind k = last_kind(lx);
    return after_value(lx) || k == T_RBRACE || k == T_RETURN || k == T_BREAK ||
           k == T_CONTINUE;
}

/* Inside ( or [ (brackets nested past what is kept count as parens)? */
static bool in_parens(const Lexer *lx)
{
    return lx->depth > BRACKET_DEPTH || (lx->depth > 0 && lx->brackets[lx->depth - 1] != '{');
}

static void newline(Lexer *lx)
{
    if (!in_parens(lx) && ends_statement(lx))
        add(lx, T_NEWLINE, lx->p, col_of(lx, lx->p));
    lx->p++;
    lx->line++;
    lx->line_start = lx->p;
}

__attribute__((format(printf, 3, 4)))
static void error_at(Lexer *lx, const char *at, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(lx->diag, lx->line, col_of(lx, at), "%s", msg);
}

/* A line starting with a statement keyword inside ( or [ means they were
 * left unclosed: forget them, so that newlines end statements again and
 * the parser's error recovery finds the statements that follow. */
static void unclosed_before(Lexer *lx, TokKind k)
{
    bool bol = lx->n == 0 || lx->toks[lx->n - 1].line != lx->line;
    if (!bol || (k != T_LET && k != T_IF && k != T_WHILE && k != T_FOR && k != T_RETURN &&
                 k != T_IMPORT && k != T_TRY && k != T_BREAK && k != T_CONTINUE))
        return;
    bool unclosed = false;
    while (in_parens(lx)) {
        lx->depth--;
        unclosed = true;
    }
    if (unclosed) {     /* placed just after the last token */
        const Token *prev = &lx->toks[lx->n - 1];
        int line = prev->line, col = prev->col + (int)prev->len;
        Token *t = add(lx, T_NEWLINE, lx->p, col);
        t->line = line;
    }
}

static bool is_ident(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9');
}

static void lex_name(Lexer *lx)
{
    const char *s = lx->p;
    while (lx->p < lx->end && is_ident((unsigned char)*lx->p))
        lx->p++;
    size_t n = (size_t)(lx->p - s);
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (strlen(keywords[i].word) == n && !memcmp(keywords[i].word, s, n)) {
            unclosed_before(lx, keywords[i].kind);
            add(lx, keywords[i].kind, s, col_of(lx, s));
            return;
        }
    add(lx, T_NAME, s, col_of(lx, s));
}

static bool is_digit_of(int c, int base)
{
    if (base == 16)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (base == 2)
        return c == '0' || c == '1';
    return c >= '0' && c <= '9';
}

/* Digits of base, with `_` allowed between them, copied without the `_`. */
static size_t digits(Lexer *lx, int base, char *buf, size_t n, size_t size)
{
    while (lx->p < lx->end && (is_digit_of((unsigned char)*lx->p, base) ||
                               (*lx->p == '_' && lx->p + 1 < lx->end &&
                                is_digit_of((unsigned char)lx->p[1], base)))) {
        if (*lx->p != '_' && n + 1 < size)
            buf[n++] = *lx->p;
        lx->p++;
    }
    buf[n] = '\0';
    return n;
}

static bool digits_at(const char *s, size_t from, size_t n)
{
    for (size_t i = from; i < from + n; i++)
        if (!is_digit_of((unsigned char)s[i], 10))
            return false;
    return true;
}

/* A time literal, 2026-12-02 or 2026-12-02T13:05[:00][Z]: an int, the
 * seconds since 1970 UTC (what time fields hold). */
static bool lex_time(Lexer *lx)
{
    const char *s = lx->p;
    size_t len = (size_t)(lx->end - s), n = 10;
    if (len < 10 || !digits_at(s, 0, 4) || s[4] != '-' || !digits_at(s, 5, 2) || s[7] != '-' ||
        !digits_at(s, 8, 2))
        return false;
    if (len >= 16 && s[10] == 'T' && digits_at(s, 11, 2) && s[13] == ':' && digits_at(s, 14, 2)) {
        n = 16;
        if (len >= 19 && s[16] == ':' && digits_at(s, 17, 2))
            n = 19;
    }
    n += n < len && s[n] == 'Z';
    /* 2026-12-02x or 2026-12-02.5 are not times; 2026-12-02..2026-12-03 is a range */
    if (n < len && (is_ident((unsigned char)s[n]) ||
                    (s[n] == '.' && !(n + 1 < len && s[n + 1] == '.'))))
        return false;
    int64_t t;
    lx->p += n;
    if (st_fieldtext_time(s, n, &t) != 0) {
        error_at(lx, s, "bad time '%.*s'", (int)n, s);
        add(lx, T_ERROR, s, col_of(lx, s));
        return true;
    }
    add(lx, T_INT, s, col_of(lx, s))->v.i = t;
    return true;
}

static void lex_number(Lexer *lx)
{
    const char *s = lx->p;
    if (lex_time(lx))
        return;
    char buf[128];
    size_t n = 0;
    int base = 10;
    if (*s == '0' && lx->p + 1 < lx->end && (s[1] == 'x' || s[1] == 'X' || s[1] == 'b' || s[1] == 'B')) {
        base = (s[1] == 'x' || s[1] == 'X') ? 16 : 2;
        lx->p += 2;
    }
    n = digits(lx, base, buf, 0, sizeof buf);
    bool is_float = false;
    if (base == 10 && lx->p + 1 < lx->end && *lx->p == '.' && is_digit_of((unsigned char)lx->p[1], 10)) {
        is_float = true;
        buf[n++] = *lx->p++;
        n = digits(lx, 10, buf, n, sizeof buf);
    }
    if (base == 10 && lx->p < lx->end && (*lx->p == 'e' || *lx->p == 'E')) {
        const char *e = lx->p + 1;
        if (e < lx->end && (*e == '+' || *e == '-'))
            e++;
        if (e < lx->end && is_digit_of((unsigned char)*e, 10)) {
            is_float = true;
            while (lx->p < e && n + 1 < sizeof buf)
                buf[n++] = *lx->p++;
            n = digits(lx, 10, buf, n, sizeof buf);
        }
    }
    if (lx->p < lx->end && is_ident((unsigned char)*lx->p)) {
        while (lx->p < lx->end && is_ident((unsigned char)*lx->p))
            lx->p++;
        error_at(lx, s, "malformed number '%.*s'", (int)(lx->p - s), s);
        add(lx, T_ERROR, s, col_of(lx, s));
        return;
    }
    errno = 0;
    if (is_float) {
        Token *t = add(lx, T_FLOAT, s, col_of(lx, s));
        t->v.f = strtod(buf, NULL);
        return;
    }
    unsigned long long u = n ? strtoull(buf, NULL, base) : 0;
    if (!n || errno || u > INT64_MAX) {
        if (n)
            error_at(lx, s, "integer literal '%.*s' is too large", (int)(lx->p - s), s);
        else
            error_at(lx, s, "malformed number '%.*s'", (int)(lx->p - s), s);
        add(lx, T_ERROR, s, col_of(lx, s));
        return;
    }
    add(lx, T_INT, s, col_of(lx, s))->v.i = (int64_t)u;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static size_t utf8_encode(unsigned long cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* One escape after a backslash at lx->p; its bytes go to out. Returns the
 * count, or -1 (reported) for a bad escape. */
static int escape(Lexer *lx, char *out)
{
    const char *at = lx->p - 1;
    if (lx->p >= lx->end)
        return -1;
    char c = *lx->p++;
    switch (c) {
    case 'n': *out = '\n'; return 1;
    case 't': *out = '\t'; return 1;
    case 'r': *out = '\r'; return 1;
    case '0': *out = '\0'; return 1;
    case 'e': *out = 27; return 1;
    case '\\': case '"': case '\'': *out = c; return 1;
    case 'x': {
        int h = lx->p + 1 < lx->end ? hexval((unsigned char)lx->p[0]) : -1;
        int l = h >= 0 ? hexval((unsigned char)lx->p[1]) : -1;
        if (l < 0)
            break;
        lx->p += 2;
        *out = (char)(h * 16 + l);
        return 1;
    }
    case 'u': {
        unsigned long cp = 0;
        int nd = 0;
        if (lx->p >= lx->end || *lx->p != '{')
            break;
        const char *q = lx->p + 1;
        while (q < lx->end && hexval((unsigned char)*q) >= 0 && nd < 7)
            cp = cp * 16 + (unsigned long)hexval((unsigned char)*q++), nd++;
        if (q >= lx->end || *q != '}' || nd == 0 || cp > 0x10ffff)
            break;
        lx->p = q + 1;
        return (int)utf8_encode(cp, out);
    }
    default:
        break;
    }
    error_at(lx, at, "bad escape '\\%c' in string", c);
    return -1;
}

static void lex_string(Lexer *lx)
{
    const char *s = lx->p++;
    int line = lx->line, col = col_of(lx, s);
    /* The decoded bytes are never longer than the source text. */
    const char *close = lx->p;
    while (close < lx->end && *close != '"')
        close += (*close == '\\' && close + 1 < lx->end) ? 2 : 1;
    char *buf = arena_alloc(lx->arena, (size_t)(close - lx->p) + 4);
    size_t n = 0;
    bool bad = false;
    while (lx->p < lx->end && *lx->p != '"') {
        char c = *lx->p;
        if (c == '\\') {
            lx->p++;
            int k = escape(lx, buf + n);
            if (k < 0)
                bad = true;
            else
                n += (size_t)k;
            continue;
        }
        if (c == '\n') {
            lx->line++;
            lx->line_start = lx->p + 1;
        }
        buf[n++] = c;
        lx->p++;
    }
    if (lx->p >= lx->end) {
        diag_error(lx->diag, line, col, "unterminated string");
        lx->diag->at_eof = true;
        bad = true;
    } else {
        lx->p++;
    }
    Token *t = add(lx, bad ? T_ERROR : T_STRING, s, col);
    t->line = line;
    t->v.str.s = buf;
    t->v.str.n = n;
}

static void lex_regex(Lexer *lx)
{
    const char *s = lx->p++;
    const char *pat = lx->p;
    while (lx->p < lx->end && *lx->p != '/' && *lx->p != '\n')
        lx->p += (*lx->p == '\\' && lx->p + 1 < lx->end && lx->p[1] != '\n') ? 2 : 1;
    if (lx->p >= lx->end || *lx->p != '/') {
        error_at(lx, s, "unterminated regex");
        add(lx, T_ERROR, s, col_of(lx, s));
        return;
    }
    const char *pend = lx->p++;
    const char *flags = lx->p;
    while (lx->p < lx->end && ((*lx->p >= 'a' && *lx->p <= 'z') || (*lx->p >= 'A' && *lx->p <= 'Z')))
        lx->p++;
    Token *t = add(lx, T_REGEX, s, col_of(lx, s));
    t->v.str.s = arena_strndup(lx->arena, pat, (size_t)(pend - pat));
    t->v.str.n = (size_t)(pend - pat);
    t->v.str.flags = arena_strndup(lx->arena, flags, (size_t)(lx->p - flags));
}

static void open_bracket(Lexer *lx, char c)
{
    if (lx->depth < BRACKET_DEPTH)
        lx->brackets[lx->depth] = c;
    lx->depth++;
}

static void close_bracket(Lexer *lx)
{
    if (lx->depth > 0)
        lx->depth--;
}

/* Operators: longest first. */
static const struct {
    const char *text;
    TokKind kind;
} ops[] = {
    {"..", T_DOTDOT}, {"==", T_EQ}, {"!=", T_NE}, {"<=", T_LE}, {">=", T_GE},
    {"&&", T_AND}, {"||", T_OR}, {"+=", T_PLUSEQ}, {"-=", T_MINUSEQ}, {"*=", T_STAREQ},
    {"/=", T_SLASHEQ}, {"%=", T_PERCENTEQ}, {"!~", T_NOMATCH},
    {"(", T_LPAREN}, {")", T_RPAREN}, {"[", T_LBRACKET}, {"]", T_RBRACKET},
    {"{", T_LBRACE}, {"}", T_RBRACE}, {",", T_COMMA}, {";", T_SEMI}, {":", T_COLON},
    {".", T_DOT}, {"+", T_PLUS}, {"-", T_MINUS}, {"*", T_STAR}, {"/", T_SLASH},
    {"%", T_PERCENT}, {"<", T_LT}, {">", T_GT}, {"!", T_NOT}, {"=", T_ASSIGN},
    {"~", T_MATCH}, {"|", T_PIPE},
};

static void lex_op(Lexer *lx)
{
    const char *s = lx->p;
    size_t left = (size_t)(lx->end - s);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        size_t n = strlen(ops[i].text);
        if (n <= left && !memcmp(s, ops[i].text, n)) {
            lx->p += n;
            TokKind k = ops[i].kind;
            if (k == T_LPAREN || k == T_LBRACKET || k == T_LBRACE)
                open_bracket(lx, *s);
            else if (k == T_RPAREN || k == T_RBRACKET || k == T_RBRACE)
                close_bracket(lx);
            add(lx, k, s, col_of(lx, s));
            return;
        }
    }
    lx->p++;
    unsigned char c = (unsigned char)*s;
    if (c >= 0x20 && c < 0x7f)
        error_at(lx, s, "unexpected character '%c'", c);
    else
        error_at(lx, s, "unexpected byte 0x%02x", c);
    add(lx, T_ERROR, s, col_of(lx, s));
}

TokenList lex(Arena *a, const char *src, size_t len, Diag *diag)
{
    return lex_at(a, src, len, 1, diag);
}

TokenList lex_at(Arena *a, const char *src, size_t len, int first_line, Diag *diag)
{
    Lexer lx = {.arena = a, .diag = diag, .src = src, .p = src, .end = src + len,
                .line_start = src, .line = first_line};
    while (lx.p < lx.end) {
        char c = *lx.p;
        if (c == '\n') {
            newline(&lx);
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            lx.p++;
        } else if (c == '#') {
            while (lx.p < lx.end && *lx.p != '\n')
                lx.p++;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            lex_name(&lx);
        } else if (c >= '0' && c <= '9') {
            lex_number(&lx);
        } else if (c == '"') {
            lex_string(&lx);
        } else if (c == '/' && !after_value(&lx) && !(lx.p + 1 < lx.end && lx.p[1] == '=')) {
            lex_regex(&lx);
        } else {
            lex_op(&lx);
        }
    }
    if (ends_statement(&lx) && !in_parens(&lx))
        add(&lx, T_NEWLINE, lx.p, col_of(&lx, lx.p));
    add(&lx, T_EOF, lx.p, col_of(&lx, lx.p));
    return (TokenList){lx.toks, lx.n};
}

const char *tok_describe(const Token *t, char *buf, size_t size)
{
    switch (t->kind) {
    case T_NAME:
        snprintf(buf, size, "name '%.*s'", (int)(t->len > 40 ? 40 : t->len), t->start);
        return buf;
    case T_INT:
    case T_FLOAT:
        snprintf(buf, size, "number %.*s", (int)(t->len > 40 ? 40 : t->len), t->start);
        return buf;
    default:
        return kind_text[t->kind];
    }
}
