/* ast: the syntax tree the parser builds and the compiler walks. Nodes live
 * in the compilation's arena; names and string bytes are NUL-terminated
 * copies there. */
#ifndef COMB_AST_H
#define COMB_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Expr Expr;
typedef struct Stmt Stmt;

typedef struct Name {
    const char *s;      /* NULL: absent */
    size_t n;
    int line, col;
} Name;

typedef struct Block {
    Stmt **items;
    int n;
} Block;

/* fn NAME(params) { body } or fn(params) { body } */
typedef struct FnLit {
    Name name;
    Name *params;
    int nparams;
    Block body;
    int line, col;
} FnLit;

typedef enum {
    E_NIL, E_TRUE, E_FALSE, E_INT, E_FLOAT, E_STRING, E_REGEX, E_NAME,
    E_ARRAY,    /* [items] */
    E_MAP,      /* {k: v}: items holds k0, v0, k1, v1, ... */
    E_FN,
    E_CALL,
    E_INDEX,    /* obj[key], and obj.name as obj["name"] */
    E_UNARY,    /* op: T_MINUS, T_NOT */
    E_BINARY,   /* op: the operator's token kind */
    E_AND,
    E_OR,
    E_SCHEMA,   /* schema NAME { text }: str holds the text, line/col where it starts */
    E_PIPE,     /* src | verb | verb ... */
    E_IF,       /* if cond { then } else { els }: a value */
} ExprKind;

/* One item of a verb: `name: e`, a bare expression, a sort key with desc. */
typedef struct VerbItem {
    Name name;      /* absent for where, take, write and sort items */
    Expr *e;
    bool desc;
} VerbItem;

/* One verb of a pipeline: verb is its index in vm/verbs.def. group's items
 * are its nkeys keys, then its aggregates. */
typedef struct Verb {
    int verb;
    int line, col;
    VerbItem *items;
    int n, nkeys;
    bool distinct;  /* select distinct: a distinct verb follows */
} Verb;

struct Expr {
    ExprKind kind;
    int line, col;
    bool folded;    /* the compiler has tried constant folding here */
    union {
        int64_t i;
        double f;
        struct {
            const char *s;
            size_t n;
            const char *flags;  /* E_REGEX */
            int line, col;      /* E_SCHEMA: where the text starts */
        } str;
        Name name;
        struct {
            Expr **items;
            int n;
        } list;
        FnLit *fn;
        struct {
            Expr *fn;
            Expr **args;
            int n;
        } call;
        struct {
            Expr *obj, *key;
        } index;
        struct {
            int op;
            Expr *a, *b;    /* b: binary only */
        } op;
        struct {
            Expr *src;
            Verb *verbs;
            int n;
        } pipe;
        struct {
            Expr *cond, *then, *els;
        } ifx;
    } u;
};

typedef enum {
    S_EXPR,     /* expr */
    S_LET,      /* let name = init */
    S_ASSIGN,   /* target op value; op T_ASSIGN or a compound T_PLUSEQ... */
    S_FN,       /* fn name(...) { } */
    S_IF,
    S_WHILE,
    S_FOR,      /* for var1[, var2] in iter[..limit] { body } */
    S_RETURN,   /* expr may be NULL */
    S_BREAK,
    S_CONTINUE,
    S_TRY,
    S_IMPORT,
    S_BLOCK,
} StmtKind;

struct Stmt {
    StmtKind kind;
    int line, col;
    union {
        Expr *expr;
        struct {
            Name name;
            Expr *init;     /* NULL: nil */
        } let;
        struct {
            Expr *target;
            int op;
            Expr *value;
        } assign;
        FnLit *fn;
        struct {
            Expr *cond;
            Block then;
            Stmt *els;      /* S_IF, S_BLOCK or NULL */
        } ifs;
        struct {
            Expr *cond;
            Block body;
        } whiles;
        struct {
            Name var1, var2;
            Expr *iter, *limit; /* limit: a range loop iter..limit */
            Block body;
        } fors;
        struct {
            Block body;
            Name var;
            Block handler;
        } trys;
        struct {
            const char *path;
            size_t n;
            Name as;
        } import;
        Block block;
    } u;
};

#endif
