/* parser: tokens to the syntax tree, by recursive descent, reporting every
 * syntax error of a file: after one, it skips to the next statement. */
#include "config.h"
#include "lang/parser.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vm/verbs.h"
#include "vm/suggest.h"

/* Nesting of expressions and blocks, counting each operator of a chain
 * like a + b + c as a level too: the compiler recurses that deep. */
#define MAX_DEPTH 400

typedef struct Parser {
    Arena *a;
    Diag *d;
    const Token *t;
    size_t pos;
    bool panic;         /* in an error: say nothing until the next statement */
    int depth;
    int height;         /* the height of the expression parsed last */
    int query;          /* > 0 inside a verb: `in` is an operator */
} Parser;

static Expr *expr(Parser *p);
static Expr *binary(Parser *p, int min);
static Expr *unary(Parser *p);
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

static bool is_word(const Token *t, const char *w)
{
    return t->kind == T_NAME && t->len == strlen(w) && !memcmp(t->start, w, t->len);
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

/* An expression of height h made at t: the compiler walks trees
 * recursively, and a suffix or operator wraps a subtree whose own nesting
 * the parser has already left (`((f))()()...`), so heights are counted as
 * trees grow, with the same limit as nesting. */
static bool grow(Parser *p, int h, const Token *t)
{
    p->height = h;
    if (h <= MAX_DEPTH)
        return true;
    error_at(p, t, "program nested too deeply");
    return false;
}

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

/* The name in token t; "" if the parser did not find one (an error). */
static Name name_of(Parser *p, const Token *t)
{
    Name n = {"", 0, 0, 0};
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
/* A branch of an if-expression: '{' expr '}' */
static Expr *if_branch(Parser *p)
{
    const Token *at = peek(p);
    if (!expect(p, T_LBRACE, "'{' around a branch of an if-expression"))
        return new_expr(p, E_NIL, at);
    skip_newlines(p);
    Expr *e = expr(p);
    skip_newlines(p);
    expect(p, T_RBRACE, "'}' after the branch's value (an if-expression's branch is one value)");
    return e;
}

/* ifx: 'if' binary '{' expr '}' 'else' (ifx | '{' expr '}') */
static Expr *if_expr(Parser *p, const Token *kw)
{
    Expr *e = new_expr(p, E_IF, kw);
    e->u.ifx.cond = binary(p, 0);
    e->u.ifx.then = if_branch(p);
    size_t save = p->pos;
    skip_newlines(p);
    if (!match(p, T_ELSE)) {
        p->pos = save;
        error_at(p, kw, "an if-expression needs an else: if COND { VALUE } else { VALUE }");
        e->u.ifx.els = new_expr(p, E_NIL, kw);
        return e;
    }
    /* else if: through unary, which bounds the nesting */
    e->u.ifx.els = check(p, T_IF) ? unary(p) : if_branch(p);
    return e;
}

static Expr *array_literal(Parser *p, const Token *open)
{
    Expr *e = new_expr(p, E_ARRAY, open);
    List l = {0};
    int h = 0;
    while (!check(p, T_RBRACKET) && !check(p, T_EOF) && !p->panic) {
        list_add(p, &l, expr(p));
        h = max_int(h, p->height);
        if (!match(p, T_COMMA))
            break;
    }
    expect(p, T_RBRACKET, NULL);
    grow(p, h + 1, open);
    e->u.list.items = (Expr **)l.items;
    e->u.list.n = l.n;
    return e;
}

/* map: '{' [key ':' expr {',' key ':' expr} [',']] '}'; key: NAME (a string) | expr */
static Expr *map_literal(Parser *p, const Token *open)
{
    Expr *e = new_expr(p, E_MAP, open);
    List l = {0};
    int h = 0;
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
        h = max_int(h, p->height);
        list_add(p, &l, key);
        skip_newlines(p);
        expect(p, T_COLON, NULL);
        skip_newlines(p);
        list_add(p, &l, expr(p));
        h = max_int(h, p->height);
        skip_newlines(p);
        if (!match(p, T_COMMA))
            break;
        skip_newlines(p);
    }
    skip_newlines(p);
    expect(p, T_RBRACE, NULL);
    grow(p, h + 1, open);
    e->u.list.items = (Expr **)l.items;
    e->u.list.n = l.n;
    return e;
}

static Expr *primary(Parser *p)
{
    const Token *t = advance(p);
    Expr *e;
    p->height = 1;      /* a leaf; brackets and literals set their own */
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
    case T_IF:
        return if_expr(p, t);
    default: {
        char buf[64];
        p->pos -= t->kind != T_EOF;     /* leave it for the statement's recovery */
        error_at(p, t, "expected an expression, got %s", tok_describe(t, buf, sizeof buf));
        return new_expr(p, E_NIL, t);
    }
    }
}

/* postfix: primary {'(' args ')' | '[' expr ']' | '.' NAME}
 * Each suffix nests the tree one level deeper (the compiler walks it
 * recursively), so it counts toward the nesting limit. */
static Expr *postfix(Parser *p)
{
    Expr *e = primary(p);
    int depth = p->depth, h = p->height;
    for (;;) {
        const Token *t = peek(p);
        if ((t->kind == T_LPAREN || t->kind == T_LBRACKET || t->kind == T_DOT) &&
            (!enter(p) || !grow(p, h + 1, t))) {
            p->depth = depth;
            return e;
        }
        if (match(p, T_LPAREN)) {
            Expr *c = new_expr(p, E_CALL, t);
            List l = {0};
            while (!check(p, T_RPAREN) && !check(p, T_EOF) && !p->panic) {
                list_add(p, &l, expr(p));
                h = max_int(h, p->height);
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
            h = max_int(h, p->height);
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
            p->depth = depth;
            p->height = h;
            return e;
        }
        h++;
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
        grow(p, p->height + 1, t);
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
    case T_IN: return 3;    /* only inside a verb (binary checks) */
    case T_PLUS: case T_MINUS: return 5;
    case T_STAR: case T_SLASH: case T_PERCENT: return 6;
    default: return 0;
    }
}

/* binary: unary {op unary}, by precedence, all left-associative:
 * || < && < == != ~ !~ in < < <= > >= < + - < * / %
 * (in a verb, `a in set` and `a in lo..hi` are comparisons too) */
static Expr *binary(Parser *p, int min)
{
    Expr *l = unary(p);
    int depth = p->depth, h = p->height;
    for (;;) {
        const Token *t = peek(p);
        int prec = precedence(t->kind);
        if (prec <= min || (t->kind == T_IN && !p->query) || !enter(p)) {
            p->depth = depth;
            p->height = h;
            return l;
        }
        advance(p);
        Expr *r = binary(p, prec);
        int hr = p->height;
        if (t->kind == T_IN && check(p, T_DOTDOT)) {
            const Token *dd = advance(p);
            Expr *range = new_expr(p, E_BINARY, dd);
            range->u.op.op = T_DOTDOT;
            range->u.op.a = r;
            range->u.op.b = binary(p, prec);
            hr = max_int(hr, p->height) + 1;
            r = range;
        }
        if (!grow(p, max_int(h, hr) + 1, t)) {
            p->depth = depth;
            return l;
        }
        h = p->height;
        Expr *e = new_expr(p, t->kind == T_AND ? E_AND : t->kind == T_OR ? E_OR : E_BINARY, t);
        e->u.op.op = t->kind;
        e->u.op.a = l;
        e->u.op.b = r;
        l = e;
    }
}

/* ---- pipelines --------------------------------------------------------- */

static Expr *verb_expr(Parser *p)
{
    p->query++;
    Expr *e = binary(p, 0);
    p->query--;
    if (check(p, T_ASSIGN))     /* SQL's = */
        error_at(p, peek(p), "'=' assigns; to compare, write '=='");
    return e;
}

static void add_item(Parser *p, List *l, Name name, Expr *e, bool desc)
{
    VerbItem *it = arena_alloc(p->a, sizeof *it);
    it->name = name;
    it->e = e;
    it->desc = desc;
    list_add(p, l, it);
}

/* A column's name: `name: e`, or the field an expression names (f, x.f). */
static Name column_name(Parser *p, Expr *e)
{
    if (e->kind == E_NAME)
        return e->u.name;
    if (e->kind == E_INDEX && e->u.index.key->kind == E_STRING)
        return (Name){e->u.index.key->u.str.s, e->u.index.key->u.str.n, e->line, e->col};
    error_at(p, &(Token){.kind = T_NAME, .line = e->line, .col = e->col},
             "name this column: write NAME: expression");
    return (Name){"?", 1, e->line, e->col};
}

/* items: item {',' item}; item: NAME ':' expr | expr */
static void named_items(Parser *p, List *l)
{
    do {
        skip_newlines(p);
        if (check(p, T_NAME) && p->t[p->pos + 1].kind == T_COLON) {
            Name n = name_of(p, advance(p));
            advance(p);
            add_item(p, l, n, verb_expr(p), false);
        } else {
            Expr *e = verb_expr(p);
            add_item(p, l, column_name(p, e), e, false);
        }
    } while (match(p, T_COMMA) && !p->panic);
}

/* aggs: '{' [NAME ':' expr {',' NAME ':' expr}] '}' */
static void aggregates(Parser *p, List *l)
{
    skip_newlines(p);
    while (!check(p, T_RBRACE) && !check(p, T_EOF) && !p->panic) {
        Name n = name_of(p, expect(p, T_NAME, "an aggregate's name"));
        expect(p, T_COLON, NULL);
        add_item(p, l, n, verb_expr(p), false);
        skip_newlines(p);
        if (!match(p, T_COMMA))
            break;
        skip_newlines(p);
    }
    expect(p, T_RBRACE, NULL);
}

/* verb: where expr | take expr | select items | group 'by' items [aggs]
 *     | sort expr ['desc'|'asc'] {',' ...} | write '(' args ')'
 *     | join expr 'on' NAME {',' NAME} | stat [NAME {',' NAME}] | NAME */
static void verb_args(Parser *p, Verb *v, const Token *t)
{
    List l = {0};
    switch (v->verb) {
    case QV_where:
    case QV_take:
    case QV_skip:
        add_item(p, &l, (Name){0}, verb_expr(p), false);
        break;
    case QV_select:
        if (is_word(peek(p), "distinct") && p->t[p->pos + 1].kind != T_COLON &&
            p->t[p->pos + 1].kind != T_COMMA && p->t[p->pos + 1].kind != T_NEWLINE &&
            p->t[p->pos + 1].kind != T_EOF && p->t[p->pos + 1].kind != T_PIPE) {
            advance(p);     /* select distinct ...: a distinct verb follows (pipeline) */
            v->distinct = true;
        }
        named_items(p, &l);
        break;
    case QV_group: {
        const Token *by = peek(p);
        if (!is_word(by, "by")) {
            char buf[64];
            error_at(p, by, "expected 'by' after 'group', got %s", tok_describe(by, buf, sizeof buf));
            break;
        }
        advance(p);
        if (!check(p, T_LBRACE))
            named_items(p, &l);
        v->nkeys = l.n;
        if (match(p, T_LBRACE)) {
            aggregates(p, &l);
        } else {
            /* no aggregates: { n: count() } */
            Expr *call = new_expr(p, E_CALL, t), *fn = new_expr(p, E_NAME, t);
            fn->u.name = (Name){"count", 5, t->line, t->col};
            call->u.call.fn = fn;
            add_item(p, &l, (Name){"n", 1, t->line, t->col}, call, false);
        }
        break;
    }
    case QV_sort:
        do {
            skip_newlines(p);
            Expr *e = verb_expr(p);
            bool desc = is_word(peek(p), "desc");
            if (desc || is_word(peek(p), "asc"))
                advance(p);
            add_item(p, &l, (Name){0}, e, desc);
        } while (match(p, T_COMMA) && !p->panic);
        break;
    case QV_join: {
        add_item(p, &l, (Name){0}, verb_expr(p), false);
        const Token *on = peek(p);
        if (!is_word(on, "on")) {
            char buf[64];
            error_at(p, on, "expected 'on' and the key fields after join's rows, got %s",
                     tok_describe(on, buf, sizeof buf));
            break;
        }
        advance(p);
        do {    /* the keys' names, as strings */
            skip_newlines(p);
            const Token *k = expect(p, T_NAME, "a key field's name");
            Expr *key = new_expr(p, E_STRING, k);
            key->u.str.s = k->start;
            key->u.str.n = k->len;
            add_item(p, &l, (Name){0}, key, false);
        } while (match(p, T_COMMA) && !p->panic);
        break;
    }
    case QV_stat:
        /* stat [f, ...]: the fields' names (a string for one no name can
         * spell, "#tags"), as strings; none: every field */
        while ((check(p, T_NAME) || check(p, T_STRING)) && !p->panic) {
            const Token *f = advance(p);
            Expr *name = new_expr(p, E_STRING, f);
            if (f->kind == T_STRING) {
                name->u.str.s = f->v.str.s;
                name->u.str.n = f->v.str.n;
                name->u.str.flags = f->v.str.flags;
            } else {
                name->u.str.s = f->start;
                name->u.str.n = f->len;
            }
            add_item(p, &l, (Name){0}, name, false);
            if (!match(p, T_COMMA))
                break;
            skip_newlines(p);
        }
        break;
    case QV_write:
        expect(p, T_LPAREN, "'(' after write");
        while (!check(p, T_RPAREN) && !check(p, T_EOF) && !p->panic) {
            add_item(p, &l, (Name){0}, expr(p), false);
            if (!match(p, T_COMMA))
                break;
        }
        expect(p, T_RPAREN, NULL);
        break;
    default:
        (void)t;
        break;
    }
    v->items = (VerbItem *)arena_alloc(p->a, (size_t)l.n * sizeof(VerbItem));
    for (int i = 0; i < l.n; i++)
        v->items[i] = *(VerbItem *)l.items[i];
    v->n = l.n;
}

/* The verb named by the next token, or -1 after reporting it. */
static int verb_name(Parser *p, const Token **at)
{
    const Token *t = peek(p);
    char buf[64];
    *at = t;
    if (t->kind != T_NAME) {
        error_at(p, t, "expected a verb after '|', got %s", tok_describe(t, buf, sizeof buf));
        return -1;
    }
    advance(p);
    int k = vm_verb_find(t->start, t->len);
    if (k >= 0)
        return k;
    const char *names[QV__COUNT];
    for (int i = 0; i < QV__COUNT; i++)
        names[i] = vm_verbs[i].name;
    const char *hint = vm_suggest(t->start, t->len, names, QV__COUNT);
    error_at(p, t, "unknown verb '%.*s'%s%s%s", (int)t->len, t->start,
             hint ? " (did you mean '" : "", hint ? hint : "", hint ? "'?)" : "");
    return -1;
}

/* Is the next token a '|', perhaps on a later line? Then skip to it. */
static bool pipe_follows(Parser *p)
{
    size_t i = p->pos;
    while (p->t[i].kind == T_NEWLINE)
        i++;
    if (p->t[i].kind != T_PIPE)
        return false;
    p->pos = i + 1;
    skip_newlines(p);
    return true;
}

/* pipe: binary {'|' verb}; `| explain VERB ...` explains the rest. */
static Expr *pipeline(Parser *p, Expr *src)
{
    Expr *e = new_expr(p, E_PIPE, &p->t[p->pos - 1]);
    e->line = src->line;
    e->col = src->col;
    List l = {0};
    const Verb *explain = NULL, *prev = NULL;
    for (;;) {
        const Token *t;
        int k = verb_name(p, &t);
        if (k < 0)
            break;
        if (prev && vm_verbs[prev->verb].last) {
            error_at(p, t, "'%s' cannot follow '%s', which ends the pipeline", vm_verbs[k].name,
                     vm_verbs[prev->verb].name);
            break;
        }
        Verb *v = arena_alloc(p->a, sizeof *v);
        v->verb = k;
        v->line = t->line;
        v->col = t->col;
        verb_args(p, v, t);
        if (k == QV_explain && !explain && check(p, T_NAME)) {
            explain = v;    /* the prefix form: it goes last */
            continue;
        }
        list_add(p, &l, v);
        prev = v;
        if (v->distinct) {
            Verb *d = arena_alloc(p->a, sizeof *d);
            *d = (Verb){.verb = QV_distinct, .line = v->line, .col = v->col};
            list_add(p, &l, d);
        }
        if (p->panic || !pipe_follows(p))
            break;
    }
    if (explain)
        list_add(p, &l, (void *)explain);
    e->u.pipe.src = src;
    e->u.pipe.n = l.n;
    e->u.pipe.verbs = arena_alloc(p->a, (size_t)l.n * sizeof(Verb));
    for (int i = 0; i < l.n; i++)
        e->u.pipe.verbs[i] = *(Verb *)l.items[i];
    return e;
}

static Expr *expr(Parser *p)
{
    Expr *e = binary(p, 0);
    return pipe_follows(p) ? pipeline(p, e) : e;
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

static bool starts_statement(TokKind k)
{
    return k == T_LET || k == T_FN || k == T_IF || k == T_WHILE || k == T_FOR ||
           k == T_RETURN || k == T_BREAK || k == T_CONTINUE || k == T_TRY || k == T_IMPORT;
}

/* After an error: skip to the end of the statement (a newline or ';' at
 * this level, or the '}' that closes the block, which is left there), or
 * to a keyword that starts a line and a statement (an unclosed '(' hides
 * the newlines). */
static void sync(Parser *p)
{
    int depth = 0;
    for (;;) {
        const Token *t = peek(p);
        if (depth == 0 && t->bol && starts_statement(t->kind))
            break;     /* statement() always takes its keyword: no loop */
        switch (t->kind) {
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
