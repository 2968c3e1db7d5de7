/* parser: tokens to the syntax tree, by recursive descent, reporting every
 * syntax error of a file: after one, it skips to the next statement. */
#include "config.h"
#include "lang/parser.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 200   /* nesting of expressions and blocks */

typedef struct Parser {
    Arena *a;
    Diag *d;
    const Token *t;
    size_t pos;
    bool panic;         /* in an error: say nothing until the next statement */
    int depth;
} Parser;

static Expr *expr(Parser *p);
static Block block(Parser *p);
static Stmt *statement(Parser *p);
static void sync(Parser *p);

static const Token *peek(Parser *p)
{
    return &p->t[p->pos];
}

static bool check(Parser *p, TokKind k)
{
    return p->t[p->pos].kind == k;
}

static const Token *advance(Parser *p)
{
    const Token *t = &p->t[p->pos];
    if (t->kind != T_EOF)
        p->pos++;
    return t;
}

static bool match(Parser *p, TokKind k)
{
    if (!check(p, k))
        return false;
    advance(p);
    return true;
}

static void skip_newlines(Parser *p)
{
    while (check(p, T_NEWLINE))
        advance(p);
}

__attribute__((format(printf, 3, 4)))
static void error_at(Parser *p, const Token *t, const char *fmt, ...)
{
    if (p->panic)
        return;
    p->panic = true;
    if (t->kind == T_EOF)
        p->d->at_eof = true;
    if (t->kind == T_ERROR)     /* the lexer has said what is wrong */
        return;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(p->d, t->line, t->col, "%s", msg);
}

static const Token *expect(Parser *p, TokKind k, const char *what)
{
    if (check(p, k))
        return advance(p);
    char buf[64];
    error_at(p, peek(p), "expected %s, got %s", what ? what : tok_kind_text(k),
             tok_describe(peek(p), buf, sizeof buf));
    return NULL;
}

static bool enter(Parser *p)
{
    if (++p->depth <= MAX_DEPTH)
        return true;
    error_at(p, peek(p), "program nested too deeply");
    return false;
}

static Name name_of(Parser *p, const Token *t)
{
    Name n = {NULL, 0, 0, 0};
    if (t) {
        n.s = arena_strndup(p->a, t->start, t->len);
        n.n = t->len;
        n.line = t->line;
        n.col = t->col;
    }
    return n;
}

static Expr *new_expr(Parser *p, ExprKind k, const Token *at)
{
    Expr *e = arena_alloc(p->a, sizeof *e);
    e->kind = k;
    e->line = at->line;
    e->col = at->col;
    return e;
}

/* Growing arrays of node pointers, in the arena. */
typedef struct List {
    void **items;
    int n;
    size_t cap;
} List;

static void list_add(Parser *p, List *l, void *x)
{
    l->items = arena_grow(p->a, l->items, (size_t)l->n, &l->cap, sizeof *l->items, 4);
    l->items[l->n++] = x;
}

/* ---- expressions ------------------------------------------------------ */

/* params: '(' [NAME {',' NAME}] ')' */
static void params(Parser *p, FnLit *fn)
{
    List l = {0};
    expect(p, T_LPAREN, NULL);
    while (!check(p, T_RPAREN) && !check(p, T_EOF) && !p->panic) {
        Name *n = arena_alloc(p->a, sizeof *n);
        *n = name_of(p, expect(p, T_NAME, "a parameter name"));
        list_add(p, &l, n);
        if (!match(p, T_COMMA))
            break;
    }
    expect(p, T_RPAREN, NULL);
    fn->nparams = l.n;
    fn->params = arena_alloc(p->a, (size_t)l.n * sizeof(Name));
    for (int i = 0; i < l.n; i++)
        fn->params[i] = *(Name *)l.items[i];
}

/* fnlit: 'fn' [NAME] params block */
static FnLit *fn_literal(Parser *p, const Token *kw, bool named)
{
    FnLit *fn = arena_alloc(p->a, sizeof *fn);
    fn->line = kw->line;
    fn->col = kw->col;
    if (named)
        fn->name = name_of(p, expect(p, T_NAME, "a function name"));
    params(p, fn);
    fn->body = block(p);
    return fn;
}

/* array: '[' [expr {',' expr} [',']] ']' */
static Expr *array_literal(Parser *p, const Token *open)
{
    Expr *e = new_expr(p, E_ARRAY, open);
    List l = {0};
    while (!check(p, T_RBRACKET) && !check(p, T_EOF) && !p->panic) {
        list_add(p, &l, expr(p));
        if (!match(p, T_COMMA))
            break;
    }
    expect(p, T_RBRACKET, NULL);
    e->u.list.items = (Expr **)l.items;
    e->u.list.n = l.n;
    return e;
}

/* map: '{' [key ':' expr {',' key ':' expr} [',']] '}'; key: NAME (a string) | expr */
static Expr *map_literal(Parser *p, const Token *open)
{
    Expr *e = new_expr(p, E_MAP, open);
    List l = {0};
    skip_newlines(p);
    while (!check(p, T_RBRACE) && !check(p, T_EOF) && !p->panic) {
        Expr *key;
        if (check(p, T_NAME) && p->t[p->pos + 1].kind == T_COLON) {
            const Token *t = advance(p);
            key = new_expr(p, E_STRING, t);
            key->u.str.s = arena_strndup(p->a, t->start, t->len);
            key->u.str.n = t->len;
        } else {
            key = expr(p);
        }
        list_add(p, &l, key);
        skip_newlines(p);
        expect(p, T_COLON, NULL);
        skip_newlines(p);
        list_add(p, &l, expr(p));
        skip_newlines(p);
        if (!match(p, T_COMMA))
            break;
        skip_newlines(p);
    }
    skip_newlines(p);
    expect(p, T_RBRACE, NULL);
    e->u.list.items = (Expr **)l.items;
    e->u.list.n = l.n;
    return e;
}

static Expr *primary(Parser *p)
{
    const Token *t = advance(p);
    Expr *e;
    switch (t->kind) {
    case T_INT:
        e = new_expr(p, E_INT, t);
        e->u.i = t->v.i;
        return e;
    case T_FLOAT:
        e = new_expr(p, E_FLOAT, t);
        e->u.f = t->v.f;
        return e;
    case T_STRING:
    case T_REGEX:
        e = new_expr(p, t->kind == T_STRING ? E_STRING : E_REGEX, t);
        e->u.str.s = t->v.str.s;
        e->u.str.n = t->v.str.n;
        e->u.str.flags = t->v.str.flags;
        return e;
    case T_TRUE:
        return new_expr(p, E_TRUE, t);
    case T_FALSE:
        return new_expr(p, E_FALSE, t);
    case T_NIL:
        return new_expr(p, E_NIL, t);
    case T_NAME:
        e = new_expr(p, E_NAME, t);
        e->u.name = name_of(p, t);
        return e;
    case T_LPAREN:
        e = expr(p);
        expect(p, T_RPAREN, NULL);
        return e;
    case T_LBRACKET:
        return array_literal(p, t);
    case T_LBRACE:
        return map_literal(p, t);
    case T_FN:
        e = new_expr(p, E_FN, t);
        e->u.fn = fn_literal(p, t, false);
        return e;
    default: {
        char buf[64];
        p->pos -= t->kind != T_EOF;     /* leave it for the statement's recovery */
        error_at(p, t, "expected an expression, got %s", tok_describe(t, buf, sizeof buf));
        return new_expr(p, E_NIL, t);
    }
    }
}

/* postfix: primary {'(' args ')' | '[' expr ']' | '.' NAME} */
static Expr *postfix(Parser *p)
{
    Expr *e = primary(p);
    for (;;) {
        const Token *t = peek(p);
        if (match(p, T_LPAREN)) {
            Expr *c = new_expr(p, E_CALL, t);
            List l = {0};
            while (!check(p, T_RPAREN) && !check(p, T_EOF) && !p->panic) {
                list_add(p, &l, expr(p));
                if (!match(p, T_COMMA))
                    break;
            }
            expect(p, T_RPAREN, NULL);
            c->u.call.fn = e;
            c->u.call.args = (Expr **)l.items;
            c->u.call.n = l.n;
            e = c;
        } else if (match(p, T_LBRACKET)) {
            Expr *x = new_expr(p, E_INDEX, t);
            x->u.index.obj = e;
            x->u.index.key = expr(p);
            expect(p, T_RBRACKET, NULL);
            e = x;
        } else if (match(p, T_DOT)) {
            const Token *n = expect(p, T_NAME, "a field name after '.'");
            Expr *x = new_expr(p, E_INDEX, t);
            Expr *key = new_expr(p, E_STRING, n ? n : t);
            key->u.str.s = n ? arena_strndup(p->a, n->start, n->len) : "";
            key->u.str.n = n ? n->len : 0;
            x->u.index.obj = e;
            x->u.index.key = key;
            e = x;
        } else {
            return e;
        }
    }
}

/* unary: ('-' | '!') unary | postfix */
static Expr *unary(Parser *p)
{
    const Token *t = peek(p);
    if (!enter(p)) {
        p->depth--;
        return new_expr(p, E_NIL, t);
    }
    Expr *e;
    if (match(p, T_MINUS) || match(p, T_NOT)) {
        e = new_expr(p, E_UNARY, t);
        e->u.op.op = t->kind;
        e->u.op.a = unary(p);
    } else {
        e = postfix(p);
    }
    p->depth--;
    return e;
}

static int precedence(TokKind k)
{
    switch (k) {
    case T_OR: return 1;
    case T_AND: return 2;
    case T_EQ: case T_NE: case T_MATCH: case T_NOMATCH: return 3;
    case T_LT: case T_LE: case T_GT: case T_GE: return 4;
    case T_PLUS: case T_MINUS: return 5;
    case T_STAR: case T_SLASH: case T_PERCENT: return 6;
    default: return 0;
    }
}

/* binary: unary {op unary}, by precedence, all left-associative:
 * || < && < == != ~ !~ < < <= > >= < + - < * / % */
static Expr *binary(Parser *p, int min)
{
    Expr *l = unary(p);
    for (;;) {
        const Token *t = peek(p);
        int prec = precedence(t->kind);
        if (prec <= min)
            return l;
        advance(p);
        Expr *r = binary(p, prec);
        Expr *e = new_expr(p, t->kind == T_AND ? E_AND : t->kind == T_OR ? E_OR : E_BINARY, t);
        e->u.op.op = t->kind;
        e->u.op.a = l;
        e->u.op.b = r;
        l = e;
    }
}

static Expr *expr(Parser *p)
{
    return binary(p, 0);
}

/* ---- statements ------------------------------------------------------- */

static Stmt *new_stmt(Parser *p, StmtKind k, const Token *at)
{
    Stmt *s = arena_alloc(p->a, sizeof *s);
    s->kind = k;
    s->line = at->line;
    s->col = at->col;
    return s;
}

/* block: '{' {statement} '}' */
static Block block(Parser *p)
{
    Block b = {NULL, 0};
    List l = {0};
    if (!expect(p, T_LBRACE, NULL))
        return b;
    if (!enter(p)) {
        p->depth--;
        return b;
    }
    for (;;) {
        while (match(p, T_NEWLINE) || match(p, T_SEMI))
            ;
        if (check(p, T_RBRACE) || check(p, T_EOF))
            break;
        Stmt *s = statement(p);
        if (s)
            list_add(p, &l, s);
        if (p->panic)
            sync(p);
    }
    p->depth--;
    expect(p, T_RBRACE, NULL);
    b.items = (Stmt **)l.items;
    b.n = l.n;
    return b;
}

/* if: 'if' expr block ['else' (if | block)] */
static Stmt *if_stmt(Parser *p, const Token *kw)
{
    Stmt *s = new_stmt(p, S_IF, kw);
    s->u.ifs.cond = expr(p);
    s->u.ifs.then = block(p);
    size_t save = p->pos;
    skip_newlines(p);
    if (!match(p, T_ELSE)) {
        p->pos = save;
        return s;
    }
    const Token *t = peek(p);
    if (match(p, T_IF)) {
        s->u.ifs.els = if_stmt(p, t);
    } else {
        s->u.ifs.els = new_stmt(p, S_BLOCK, t);
        s->u.ifs.els->u.block = block(p);
    }
    return s;
}

/* for: 'for' NAME [',' NAME] 'in' expr ['..' expr] block */
static Stmt *for_stmt(Parser *p, const Token *kw)
{
    Stmt *s = new_stmt(p, S_FOR, kw);
    s->u.fors.var1 = name_of(p, expect(p, T_NAME, "a loop variable"));
    if (match(p, T_COMMA))
        s->u.fors.var2 = name_of(p, expect(p, T_NAME, "a second loop variable"));
    expect(p, T_IN, NULL);
    s->u.fors.iter = expr(p);
    if (match(p, T_DOTDOT))
        s->u.fors.limit = expr(p);
    s->u.fors.body = block(p);
    return s;
}

/* try: 'try' block 'catch' NAME block */
static Stmt *try_stmt(Parser *p, const Token *kw)
{
    Stmt *s = new_stmt(p, S_TRY, kw);
    s->u.trys.body = block(p);
    skip_newlines(p);
    expect(p, T_CATCH, NULL);
    s->u.trys.var = name_of(p, expect(p, T_NAME, "a name for the error"));
    s->u.trys.handler = block(p);
    return s;
}

static bool at_statement_end(Parser *p)
{
    TokKind k = peek(p)->kind;
    return k == T_NEWLINE || k == T_SEMI || k == T_RBRACE || k == T_EOF;
}

static bool assign_op(TokKind k)
{
    return k == T_ASSIGN || k == T_PLUSEQ || k == T_MINUSEQ || k == T_STAREQ ||
           k == T_SLASHEQ || k == T_PERCENTEQ;
}

/* A statement that ends at a newline, ';' or '}'. */
static Stmt *simple_statement(Parser *p, const Token *t)
{
    Stmt *s;
    switch (t->kind) {
    case T_LET:
        advance(p);
        s = new_stmt(p, S_LET, t);
        s->u.let.name = name_of(p, expect(p, T_NAME, "a variable name"));
        if (match(p, T_ASSIGN))
            s->u.let.init = expr(p);
        return s;
    case T_RETURN:
        advance(p);
        s = new_stmt(p, S_RETURN, t);
        s->u.expr = at_statement_end(p) ? NULL : expr(p);
        return s;
    case T_BREAK:
    case T_CONTINUE:
        advance(p);
        return new_stmt(p, t->kind == T_BREAK ? S_BREAK : S_CONTINUE, t);
    case T_IMPORT: {
        advance(p);
        s = new_stmt(p, S_IMPORT, t);
        const Token *path = expect(p, T_STRING, "a module name string");
        s->u.import.path = path ? path->v.str.s : "";
        s->u.import.n = path ? path->v.str.n : 0;
        if (match(p, T_AS))
            s->u.import.as = name_of(p, expect(p, T_NAME, "a name after 'as'"));
        return s;
    }
    default:
        break;
    }
    Expr *e = expr(p);
    if (!assign_op(peek(p)->kind)) {
        s = new_stmt(p, S_EXPR, t);
        s->u.expr = e;
        return s;
    }
    const Token *op = advance(p);
    s = new_stmt(p, S_ASSIGN, op);
    if (e->kind != E_NAME && e->kind != E_INDEX)
        error_at(p, t, "cannot assign to this expression");
    s->u.assign.target = e;
    s->u.assign.op = op->kind;
    s->u.assign.value = expr(p);
    return s;
}

static bool is_word(const Token *t, const char *w)
{
    return t->kind == T_NAME && t->len == strlen(w) && !memcmp(t->start, w, t->len);
}

/* schema: 'schema' NAME '{' schema text '}', a `let` of the schema the text
 * declares. The text is the source between the braces, for the store's
 * schema parser (store/schema.h), which reports errors at its line:col. */
static Stmt *schema_decl(Parser *p, const Token *kw)
{
    Stmt *s = new_stmt(p, S_LET, kw);
    s->u.let.name = name_of(p, advance(p));
    const Token *open = advance(p);
    int depth = 0;
    while (!check(p, T_EOF) && !(check(p, T_RBRACE) && depth == 0)) {
        depth += check(p, T_LBRACE) - check(p, T_RBRACE);
        advance(p);
    }
    const Token *close = expect(p, T_RBRACE, "'}' to end the schema");
    Expr *e = new_expr(p, E_SCHEMA, kw);
    if (close) {
        e->u.str.s = open->start + 1;
        e->u.str.n = (size_t)(close->start - (open->start + 1));
        e->u.str.line = open->line;
        e->u.str.col = open->col + 1;
    }
    s->u.let.init = e;
    return s;
}

static Stmt *statement(Parser *p)
{
    const Token *t = peek(p);
    Stmt *s;
    if (is_word(t, "schema") && p->t[p->pos + 1].kind == T_NAME &&
        p->t[p->pos + 2].kind == T_LBRACE) {
        advance(p);
        return schema_decl(p, t);
    }
    switch (t->kind) {
    case T_FN:
        if (p->t[p->pos + 1].kind != T_NAME)
            break;
        advance(p);
        s = new_stmt(p, S_FN, t);
        s->u.fn = fn_literal(p, t, true);
        return s;
    case T_IF:
        advance(p);
        return if_stmt(p, t);
    case T_WHILE:
        advance(p);
        s = new_stmt(p, S_WHILE, t);
        s->u.whiles.cond = expr(p);
        s->u.whiles.body = block(p);
        return s;
    case T_FOR:
        advance(p);
        return for_stmt(p, t);
    case T_TRY:
        advance(p);
        return try_stmt(p, t);
    case T_LBRACE:
        s = new_stmt(p, S_BLOCK, t);
        s->u.block = block(p);
        return s;
    default:
        break;
    }
    s = simple_statement(p, t);
    if (!p->panic && !at_statement_end(p)) {
        char buf[64];
        error_at(p, peek(p), "expected newline or ';' after the statement, got %s",
                 tok_describe(peek(p), buf, sizeof buf));
    }
    return s;
}

/* After an error: skip to the end of the statement (a newline or ';' at
 * this level, or the '}' that closes the block, which is left there). */
static void sync(Parser *p)
{
    int depth = 0;
    for (;;) {
        switch (peek(p)->kind) {
        case T_EOF:
            goto done;
        case T_LBRACE:
            depth++;
            break;
        case T_RBRACE:
            if (depth == 0)
                goto done;
            depth--;
            break;
        case T_NEWLINE:
        case T_SEMI:
            if (depth == 0) {
                advance(p);
                goto done;
            }
            break;
        default:
            break;
        }
        advance(p);
    }
done:
    p->panic = false;
}

Block parse(Arena *a, const TokenList *toks, Diag *d)
{
    Parser p = {.a = a, .d = d, .t = toks->t};
    List l = {0};
    for (;;) {
        while (match(&p, T_NEWLINE) || match(&p, T_SEMI))
            ;
        if (check(&p, T_EOF) || d->nerrors >= DIAG_MAX)
            break;
        if (check(&p, T_RBRACE)) {
            char buf[64];
            error_at(&p, peek(&p), "unexpected %s", tok_describe(peek(&p), buf, sizeof buf));
            advance(&p);
            p.panic = false;
            continue;
        }
        Stmt *s = statement(&p);
        if (s)
            list_add(&p, &l, s);
        if (p.panic)
            sync(&p);
    }
    return (Block){(Stmt **)l.items, l.n};
}
