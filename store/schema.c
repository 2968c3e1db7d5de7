/* schema: parses and prints schema text, lays out rows, compares keys. */
#include "config.h"
#include "store/schema.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store/mem.h"

static const struct {
    const char *name;
    st_type type;
    uint32_t width;
} scalar_types[] = {
    {"u8", ST_U8, 1},   {"u16", ST_U16, 2}, {"u32", ST_U32, 4},   {"u64", ST_U64, 8},
    {"i8", ST_I8, 1},   {"i16", ST_I16, 2}, {"i32", ST_I32, 4},   {"i64", ST_I64, 8},
    {"f32", ST_F32, 4}, {"f64", ST_F64, 8}, {"bool", ST_BOOL, 1}, {"time", ST_TIME, 8},
};
#define NSCALAR (sizeof scalar_types / sizeof scalar_types[0])

static const char *const role_names[] = {"key", "tagset", "tag"};

/* ---- lexer ---------------------------------------------------------------
 * Tokens: identifiers, decimal numbers, punctuation, and separators (newline
 * or ';'). Newlines inside parentheses are blanks so a long enum can wrap. */

enum tok_kind { T_EOF, T_SEP, T_IDENT, T_NUM, T_PUNCT, T_BAD };

typedef struct token {
    enum tok_kind kind;
    const char *s;
    size_t n;
    int line, col;
} token;

typedef struct lexer {
    const char *p, *end;
    int line, col;
    int depth;
    token tok; /* the current token */
    st_err *err;
} lexer;

static int is_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_ident(int c) { return is_ident_start(c) || is_digit(c); }

static void advance(lexer *lx)
{
    if (*lx->p == '\n') {
        lx->line++;
        lx->col = 1;
    } else {
        lx->col++;
    }
    lx->p++;
}

static void next_token(lexer *lx)
{
    for (;;) {
        if (lx->p >= lx->end)
            break;
        char c = *lx->p;
        if (c == '#') {
            while (lx->p < lx->end && *lx->p != '\n')
                advance(lx);
        } else if (c == ' ' || c == '\t' || c == '\r' || (c == '\n' && lx->depth > 0)) {
            advance(lx);
        } else {
            break;
        }
    }
    token *t = &lx->tok;
    t->s = lx->p;
    t->line = lx->line;
    t->col = lx->col;
    if (lx->p >= lx->end) {
        t->kind = T_EOF;
        t->n = 0;
        return;
    }
    char c = *lx->p;
    if (is_ident_start(c) || is_digit(c)) {
        t->kind = is_digit(c) ? T_NUM : T_IDENT;
        while (lx->p < lx->end && (t->kind == T_IDENT ? is_ident(*lx->p) : is_digit(*lx->p)))
            advance(lx);
    } else {
        t->kind = (c == '\n' || c == ';') ? T_SEP : strchr(":,()[]", c) ? T_PUNCT : T_BAD;
        if (c == '(')
            lx->depth++;
        else if (c == ')' && lx->depth > 0)
            lx->depth--;
        advance(lx);
    }
    t->n = (size_t)(lx->p - t->s);
}

/* Describes the current token for "expected X, got Y" messages. */
static void describe(const token *t, char *buf, size_t size)
{
    if (t->kind == T_EOF)
        snprintf(buf, size, "end of schema");
    else if (t->kind == T_SEP)
        snprintf(buf, size, "%s", *t->s == ';' ? "';'" : "end of line");
    else if (t->kind == T_BAD && (unsigned char)*t->s < 0x20)
        snprintf(buf, size, "byte 0x%02x", (unsigned char)*t->s);
    else
        snprintf(buf, size, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s);
}

static int fail_at(lexer *lx, const token *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(lexer *lx, const token *t, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return st_err_set(lx->err, ST_EINPUT, "%d:%d: %s", t->line, t->col, msg);
}

static int expected(lexer *lx, const char *what)
{
    char got[64];
    describe(&lx->tok, got, sizeof got);
    return fail_at(lx, &lx->tok, "expected %s, got %s", what, got);
}

static int punct(const lexer *lx, char c)
{
    return lx->tok.kind == T_PUNCT && *lx->tok.s == c;
}

static int expect_punct(lexer *lx, char c, const char *what)
{
    if (!punct(lx, c))
        return expected(lx, what);
    next_token(lx);
    return 0;
}

static int tok_is(const token *t, const char *word)
{
    return t->kind == T_IDENT && t->n == strlen(word) && memcmp(t->s, word, t->n) == 0;
}

/* ---- the parsed fields, in declaration order ----------------------------- */

typedef struct decl {
    st_field f;
    int line, col;
} decl;

typedef struct parser {
    lexer lx;
    decl *d;
    uint32_t n, cap;
    token carry[ST_MAX_FIELDS]; /* the fields a projection's list names */
    uint32_t ncarry;
    bool listed;                /* it has a list (else it carries every tag field) */
} parser;

static char *dup_token(const token *t)
{
    char *s = mem_alloc(t->n + 1);
    if (s) {
        memcpy(s, t->s, t->n);
        s[t->n] = '\0';
    }
    return s;
}

static void free_name(char *s)
{
    if (s)
        mem_free(s, strlen(s) + 1);
}

static void free_field(st_field *f)
{
    free_name(f->name);
    for (uint32_t i = 0; i < f->nsyms; i++)
        free_name(f->syms[i]);
    mem_free(f->syms, f->nsyms * sizeof *f->syms);
}

static int name_token(lexer *lx, const char *what)
{
    if (lx->tok.kind != T_IDENT)
        return expected(lx, what);
    if (lx->tok.n > ST_MAX_NAME)
        return fail_at(lx, &lx->tok, "%s is longer than %d bytes", what, ST_MAX_NAME);
    return 0;
}

/* enum_type: 'enum' '(' IDENT { ',' IDENT } [','] ')' */
static int parse_enum(lexer *lx, st_field *f)
{
    next_token(lx);
    if (expect_punct(lx, '(', "'(' after 'enum'") < 0)
        return -1;
    while (!punct(lx, ')')) {
        if (name_token(lx, "an enum symbol") < 0)
            return -1;
        if (st_field_enum_find(f, lx->tok.s, lx->tok.n) >= 0)
            return fail_at(lx, &lx->tok, "duplicate enum symbol '%.*s'", (int)lx->tok.n, lx->tok.s);
        if (f->nsyms == ST_MAX_SYMS)
            return fail_at(lx, &lx->tok, "enum has more than %d symbols", ST_MAX_SYMS);
        /* Grow by one so the array always has nsyms entries (free_field's size). */
        char **s = mem_realloc(f->syms, f->nsyms * sizeof *s, (f->nsyms + 1) * sizeof *s);
        if (!s)
            return st_err_nomem(lx->err, "schema");
        f->syms = s;
        if (!(f->syms[f->nsyms++] = dup_token(&lx->tok)))
            return st_err_nomem(lx->err, "schema");
        next_token(lx);
        if (punct(lx, ','))
            next_token(lx);
        else if (!punct(lx, ')'))
            return expected(lx, "',' or ')' in enum");
    }
    if (f->nsyms == 0)
        return expected(lx, "at least one enum symbol");
    f->type = ST_ENUM;
    f->width = 1;
    next_token(lx);
    return 0;
}

/* char_type: 'char' '[' NUM ']' */
static int parse_char(lexer *lx, st_field *f)
{
    next_token(lx);
    if (expect_punct(lx, '[', "'[' after 'char'") < 0)
        return -1;
    if (lx->tok.kind != T_NUM)
        return expected(lx, "a width in char[N]");
    unsigned long n = 0;
    for (size_t i = 0; i < lx->tok.n && n <= ST_MAX_CHAR; i++)
        n = n * 10 + (unsigned long)(lx->tok.s[i] - '0');
    if (n < 1 || n > ST_MAX_CHAR)
        return fail_at(lx, &lx->tok, "N in char[N] must be 1 to %d", ST_MAX_CHAR);
    next_token(lx);
    if (expect_punct(lx, ']', "']' after char[N") < 0)
        return -1;
    f->type = ST_CHAR;
    f->width = (uint32_t)n;
    return 0;
}

/* type: SCALAR | char_type | enum_type */
static int parse_type(lexer *lx, st_field *f)
{
    static const char want[] = "a type (u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 bool time "
                               "char[N] enum(...))";
    if (tok_is(&lx->tok, "enum"))
        return parse_enum(lx, f);
    if (tok_is(&lx->tok, "char"))
        return parse_char(lx, f);
    for (size_t i = 0; i < NSCALAR; i++) {
        if (tok_is(&lx->tok, scalar_types[i].name)) {
            f->type = scalar_types[i].type;
            f->width = scalar_types[i].width;
            next_token(lx);
            return 0;
        }
    }
    return expected(lx, want);
}

static decl *new_decl(parser *ps)
{
    if (ps->n == ST_MAX_FIELDS) {
        fail_at(&ps->lx, &ps->lx.tok, "schema has more than %d fields", ST_MAX_FIELDS);
        return NULL;
    }
    if (ps->n == ps->cap) {
        uint32_t ncap = ps->cap ? ps->cap * 2 : 16;
        decl *d = mem_realloc(ps->d, ps->cap * sizeof *d, ncap * sizeof *d);
        if (!d) {
            st_err_nomem(ps->lx.err, "schema");
            return NULL;
        }
        ps->d = d;
        ps->cap = ncap;
    }
    decl *d = &ps->d[ps->n++];
    memset(d, 0, sizeof *d);
    return d;
}

/* [ 'projection' [ '(' IDENT { ',' IDENT } ')' ] ] after a tag field's
 * type (and index): a copy of the tags of a file in this field's order, of
 * the fields listed (else all), beside the file (store/proj.h); the names
 * are resolved once every field is declared (lay_out). */
static int parse_projection(parser *ps, st_field *f)
{
    lexer *lx = &ps->lx;
    if (!tok_is(&lx->tok, "projection"))
        return 0;
    if (f->role != ST_TAG || f->type == ST_CHAR || f->type == ST_ENUM || f->type == ST_BOOL ||
        f->type == ST_F32 || f->type == ST_F64)
        return fail_at(lx, &lx->tok, "field '%s': a projection needs a tag field of an integer or "
                       "time type", f->name);
    f->proj = f->carried = true;
    next_token(lx);
    if (!punct(lx, '('))
        return 0;
    ps->listed = true;
    for (next_token(lx); !punct(lx, ')');) {
        if (name_token(lx, "a tag field's name") < 0)
            return -1;
        if (ps->ncarry == ST_MAX_FIELDS)
            return fail_at(lx, &lx->tok, "a projection lists more than %d fields", ST_MAX_FIELDS);
        ps->carry[ps->ncarry++] = lx->tok;
        next_token(lx);
        if (punct(lx, ','))
            next_token(lx);
        else if (!punct(lx, ')'))
            return expected(lx, "',' or ')' in the projection's fields");
    }
    next_token(lx);
    return 0;
}

/* Marks the tag fields the projection carries: those listed, else all. */
static int carry_fields(st_schema *s, parser *ps, st_err *err)
{
    for (uint32_t i = s->nrow; i < s->nfields; i++)
        s->fields[i].carried |= !ps->listed && st_schema_proj(s) >= 0;
    for (uint32_t i = 0; i < ps->ncarry; i++) {
        const token *t = &ps->carry[i];
        int c = st_schema_find(s, t->s, t->n);
        if (c < (int)s->nrow)
            return st_err_set(err, ST_EINPUT, "%d:%d: the projection carries tag fields; '%.*s' is %s",
                              t->line, t->col, (int)t->n, t->s, c < 0 ? "not a field" : "not one");
        s->fields[c].carried = true;
    }
    return 0;
}

/* field: ROLE IDENT ':' type [ 'index' ] [ 'projection' ] */
static int parse_field(parser *ps)
{
    lexer *lx = &ps->lx;
    int role = -1;
    for (int r = 0; r < 3; r++)
        if (tok_is(&lx->tok, role_names[r]))
            role = r;
    if (role < 0)
        return expected(lx, "'key', 'tagset' or 'tag' to start a field");
    decl *d = new_decl(ps);
    if (!d)
        return -1;
    d->f.role = (st_role)role;
    next_token(lx);
    if (name_token(lx, "a field name") < 0)
        return -1;
    for (uint32_t i = 0; i + 1 < ps->n; i++) {
        const char *other = ps->d[i].f.name;
        if (strlen(other) == lx->tok.n && memcmp(other, lx->tok.s, lx->tok.n) == 0)
            return st_err_set(lx->err, ST_EINPUT, "%d:%d: duplicate field '%s' (first at %d:%d)",
                              lx->tok.line, lx->tok.col, other, ps->d[i].line, ps->d[i].col);
    }
    d->line = lx->tok.line;
    d->col = lx->tok.col;
    if (!(d->f.name = dup_token(&lx->tok)))
        return st_err_nomem(lx->err, "schema");
    next_token(lx);
    if (expect_punct(lx, ':', "':' after the field name") < 0)
        return -1;
    if (parse_type(lx, &d->f) < 0)
        return -1;
    if (!tok_is(&lx->tok, "index"))
        return parse_projection(ps, &d->f);
    /* a bitmap index: a bitmap per value of a block, for few values; of a
     * tag field, an order index (store/oindex.h), for ranges */
    const st_field *f = &d->f;
    if (f->role == ST_TAG && (f->type == ST_CHAR || f->type == ST_ENUM || f->type == ST_BOOL ||
                              f->type == ST_F32 || f->type == ST_F64))
        return fail_at(lx, &lx->tok, "tag field '%s': an index (an order index, for ranges) needs "
                       "an integer or time field", f->name);
    if (f->role != ST_TAG && !(f->type == ST_BOOL || f->type == ST_ENUM || f->type == ST_U8 ||
                               f->type == ST_I8 || f->type == ST_U16 || f->type == ST_I16 ||
                               (f->type == ST_CHAR && f->width <= 8)))
        return fail_at(lx, &lx->tok, "field '%s': an index needs a key or tagset field of type "
                       "bool, enum, u8, i8, u16, i16 or char[N] with N <= 8, or a tag field of "
                       "an integer or time type", f->name);
    d->f.index = true;
    next_token(lx);
    return parse_projection(ps, &d->f);
}

/* schema: { SEP } [ field { SEP { SEP } field } ] { SEP } EOF */
static int parse_fields(parser *ps)
{
    lexer *lx = &ps->lx;
    next_token(lx);
    for (;;) {
        while (lx->tok.kind == T_SEP)
            next_token(lx);
        if (lx->tok.kind == T_EOF)
            return 0;
        if (parse_field(ps) < 0)
            return -1;
        if (lx->tok.kind != T_SEP && lx->tok.kind != T_EOF)
            return expected(lx, "end of line or ';' after the field");
    }
}

/* Moves the declarations into canonical order and computes offsets. */
static int lay_out(st_schema *s, parser *ps, st_err *err)
{
    if (!(s->fields = mem_calloc(ps->n, sizeof *s->fields)))
        return st_err_nomem(err, "schema");
    uint32_t k = 0, row = 0, tag = 0;
    for (int r = ST_KEY; r <= ST_TAG; r++) {
        for (uint32_t i = 0; i < ps->n; i++) {
            if ((int)ps->d[i].f.role != r)
                continue;
            st_field *f = &s->fields[k++];
            *f = ps->d[i].f;
            memset(&ps->d[i].f, 0, sizeof ps->d[i].f); /* moved */
            uint32_t *off = r == ST_TAG ? &tag : &row;
            f->offset = *off;
            *off += f->width;
            s->nindex += f->index;
        }
        if (r == ST_KEY) {
            s->nkeys = k;
            s->key_size = row;
        } else if (r == ST_TAGSET) {
            s->nrow = k;
        }
    }
    s->nfields = k;
    for (uint32_t i = s->nrow, n = 0; i < k; i++)
        if (s->fields[i].proj && n++)
            return st_err_set(err, ST_EINPUT, "field '%s': a schema has one projection at most",
                              s->fields[i].name);
    s->row_size = row;
    s->tag_size = tag;
    if (s->nkeys == 0)
        return st_err_set(err, ST_EINPUT, "%d:%d: schema has no key field (add e.g. 'key id: u64')",
                          ps->lx.tok.line, ps->lx.tok.col);
    return carry_fields(s, ps, err);
}

st_schema *st_schema_parse(const char *text, size_t len, int line, int col, st_err *err)
{
    parser ps = {.lx = {.p = text, .end = text + len, .line = line, .col = col, .err = err}};
    st_schema *s = mem_calloc(1, sizeof *s);
    if (!s) {
        st_err_nomem(err, "schema");
        return NULL;
    }
    int rc = parse_fields(&ps);
    if (rc == 0)
        rc = lay_out(s, &ps, err);
    for (uint32_t i = 0; i < ps.n; i++)
        free_field(&ps.d[i].f);
    mem_free(ps.d, ps.cap * sizeof *ps.d);
    if (rc < 0) {
        st_schema_free(s);
        return NULL;
    }
    return s;
}

void st_schema_free(st_schema *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->nfields; i++)
        free_field(&s->fields[i]);
    mem_free(s->fields, s->nfields * sizeof *s->fields);
    mem_free(s, sizeof *s);
}

/* ---- printing ------------------------------------------------------------ */

typedef struct strbuf {
    char *p;
    size_t n, cap;
    bool oom;
} strbuf;

static void sb_add(strbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t ncap = (b->n + n + 1) * 2;
        char *p = mem_realloc(b->p, b->cap, ncap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = ncap;
    }
    memcpy(b->p + b->n, s, n + 1);
    b->n += n;
}

const char *st_type_name(st_type t)
{
    for (size_t i = 0; i < NSCALAR; i++)
        if (scalar_types[i].type == t)
            return scalar_types[i].name;
    return NULL;
}

char *st_schema_format(const st_schema *s, size_t *len)
{
    strbuf b = {0};
    char num[32];
    for (uint32_t i = 0; i < s->nfields; i++) {
        const st_field *f = &s->fields[i];
        sb_add(&b, role_names[f->role]);
        sb_add(&b, " ");
        sb_add(&b, f->name);
        sb_add(&b, ": ");
        if (f->type == ST_CHAR) {
            snprintf(num, sizeof num, "char[%" PRIu32 "]", f->width);
            sb_add(&b, num);
        } else if (f->type == ST_ENUM) {
            sb_add(&b, "enum(");
            for (uint32_t j = 0; j < f->nsyms; j++) {
                sb_add(&b, j ? ", " : "");
                sb_add(&b, f->syms[j]);
            }
            sb_add(&b, ")");
        } else {
            sb_add(&b, st_type_name(f->type));
        }
        sb_add(&b, f->index ? " index" : "");
        sb_add(&b, f->proj ? " projection" : "");
        /* the list when it is not every tag field */
        for (uint32_t c = s->nrow, n = 0; f->proj && c < s->nfields; c++)
            if (!s->fields[c].carried) {
                for (uint32_t k = s->nrow; k < s->nfields; k++)
                    if (s->fields[k].carried && k != i) {
                        sb_add(&b, n++ ? ", " : "(");
                        sb_add(&b, s->fields[k].name);
                    }
                sb_add(&b, n ? ")" : "()");
                break;
            }
        sb_add(&b, "\n");
    }
    if (b.oom || !b.p) {
        mem_free(b.p, b.cap);
        return NULL;
    }
    /* Hand back exactly len + 1 bytes so the caller can free with that size. */
    char *p = mem_realloc(b.p, b.cap, b.n + 1);
    if (!p) {
        mem_free(b.p, b.cap);
        return NULL;
    }
    *len = b.n;
    return p;
}

static bool field_equal(const st_field *a, const st_field *b)
{
    if (strcmp(a->name, b->name) != 0 || a->type != b->type || a->role != b->role ||
        a->width != b->width || a->nsyms != b->nsyms || a->index != b->index ||
        a->proj != b->proj || a->carried != b->carried)
        return false;
    for (uint32_t j = 0; j < a->nsyms; j++)
        if (strcmp(a->syms[j], b->syms[j]) != 0)
            return false;
    return true;
}

bool st_schema_equal(const st_schema *a, const st_schema *b)
{
    if (a->nfields != b->nfields || a->nkeys != b->nkeys || a->nrow != b->nrow)
        return false;
    for (uint32_t i = 0; i < a->nfields; i++)
        if (!field_equal(&a->fields[i], &b->fields[i]))
            return false;
    return true;
}

/* ---- lookups ------------------------------------------------------------- */

bool st_schema_tag_index(const st_schema *s)
{
    for (uint32_t f = s->nrow; f < s->nfields; f++)
        if (s->fields[f].index)
            return true;
    return false;
}

int st_schema_proj(const st_schema *s)
{
    for (uint32_t f = s->nrow; f < s->nfields; f++)
        if (s->fields[f].proj)
            return (int)f;
    return -1;
}

int st_schema_index_of(const st_schema *s, uint32_t f)
{
    if (f >= s->nfields || !s->fields[f].index)
        return -1;
    int k = 0;
    for (uint32_t i = 0; i < f; i++)
        k += s->fields[i].index;
    return k;
}

int st_schema_find(const st_schema *s, const char *name, size_t len)
{
    for (uint32_t i = 0; i < s->nfields; i++)
        if (strlen(s->fields[i].name) == len && memcmp(s->fields[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

uint32_t st_schema_ncols(const st_schema *s)
{
    return s->nfields + (s->nfields > s->nrow);
}

const st_field *st_schema_col(const st_schema *s, uint32_t c)
{
    static const st_field count_field = {.name = (char *)"#tags", .type = ST_U32, .role = ST_TAG, .width = 4};
    return c < s->nfields ? &s->fields[c] : &count_field;
}

bool st_schema_col_is_tag(const st_schema *s, uint32_t c)
{
    return c >= s->nrow && c < s->nfields;
}

int st_field_enum_find(const st_field *f, const char *sym, size_t len)
{
    for (uint32_t i = 0; i < f->nsyms; i++)
        if (strlen(f->syms[i]) == len && memcmp(f->syms[i], sym, len) == 0)
            return (int)i;
    return -1;
}

/* ---- values -------------------------------------------------------------- */

static uint64_t load_unsigned(const void *p, uint32_t width)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (width) {
    case 1: memcpy(&u8, p, 1); return u8;
    case 2: memcpy(&u16, p, 2); return u16;
    case 4: memcpy(&u32, p, 4); return u32;
    default: memcpy(&u64, p, 8); return u64;
    }
}

/* Sign-extends a width-byte two's-complement value. */
static int64_t load_signed(const void *p, uint32_t width)
{
    uint64_t u = load_unsigned(p, width);
    unsigned shift = 64 - 8 * width;
    return (int64_t)(u << shift) >> shift;
}

/* IEEE double -> unsigned order: negatives reversed below positives, -0 = +0,
 * NaN above +inf. f32 widens to double exactly, so it shares this. */
static uint64_t double_order(double x)
{
    if (isnan(x))
        return UINT64_MAX;
    x = x == 0 ? 0.0 : x;
    uint64_t bits, sign = UINT64_C(1) << 63;
    memcpy(&bits, &x, 8);
    return (bits & sign) ? ~bits : bits | sign;
}

uint64_t st_field_order(const st_field *f, const void *val)
{
    switch (f->type) {
    case ST_I8: case ST_I16: case ST_I32: case ST_I64: case ST_TIME:
        return (uint64_t)load_signed(val, f->width) ^ (UINT64_C(1) << 63);
    case ST_F32: {
        float x;
        memcpy(&x, val, 4);
        return double_order(x);
    }
    case ST_F64: {
        double x;
        memcpy(&x, val, 8);
        return double_order(x);
    }
    case ST_CHAR: { /* the first 8 bytes, big-endian, zeros after a shorter field */
        uint64_t v = 0;
        memcpy(&v, val, f->width < 8 ? f->width : 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        v = __builtin_bswap64(v);
#endif
        return v;
    }
    default: /* unsigned, bool, enum */
        return load_unsigned(val, f->width);
    }
}

int st_schema_key_cmp(const st_schema *s, const void *a, const void *b)
{
    const unsigned char *pa = a, *pb = b;
    for (uint32_t i = 0; i < s->nkeys; i++) {
        const st_field *f = &s->fields[i];
        int c;
        if (f->type == ST_CHAR) {
            c = memcmp(pa + f->offset, pb + f->offset, f->width);
        } else {
            uint64_t x = st_field_order(f, pa + f->offset), y = st_field_order(f, pb + f->offset);
            c = (x > y) - (x < y);
        }
        if (c)
            return c;
    }
    return 0;
}

int st_schema_check_row(const st_schema *s, const void *row, bool tag, st_err *err)
{
    const unsigned char *p = row;
    for (uint32_t i = tag ? s->nrow : 0; i < (tag ? s->nfields : s->nrow); i++) {
        const st_field *f = &s->fields[i];
        unsigned v = p[f->offset];
        if (f->type == ST_BOOL && v > 1)
            return st_err_set(err, ST_EINPUT, "bool field '%s' holds %u (must be 0 or 1)", f->name, v);
        if (f->type == ST_ENUM && v >= f->nsyms)
            return st_err_set(err, ST_EINPUT, "enum field '%s' holds %u (it has %u symbols)",
                              f->name, v, f->nsyms);
    }
    return 0;
}

/* Days since 1970-01-01 -> civil date (proleptic Gregorian), by 400-year eras. */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

int st_time_format(int64_t t, char *buf, size_t size)
{
    int64_t days = t / 86400, secs = t % 86400;
    if (secs < 0) {
        secs += 86400;
        days--;
    }
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    unsigned hh = (unsigned)(secs / 3600), mm = (unsigned)(secs / 60 % 60), ss = (unsigned)(secs % 60);
    if (y >= 0 && y <= 9999)
        return snprintf(buf, size, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02uZ", y, m, d, hh, mm, ss);
    return snprintf(buf, size, "%+05" PRId64 "-%02u-%02uT%02u:%02u:%02uZ", y, m, d, hh, mm, ss);
}

int st_field_format(const st_field *f, const void *val, char *buf, size_t size)
{
    switch (f->type) {
    case ST_I8: case ST_I16: case ST_I32: case ST_I64:
        return snprintf(buf, size, "%" PRId64, load_signed(val, f->width));
    case ST_TIME:
        return st_time_format(load_signed(val, 8), buf, size);
    case ST_F32: {
        float x;
        memcpy(&x, val, 4);
        return snprintf(buf, size, "%.9g", (double)x);
    }
    case ST_F64: {
        double x;
        memcpy(&x, val, 8);
        return snprintf(buf, size, "%.17g", x);
    }
    case ST_BOOL:
        return snprintf(buf, size, "%s", *(const unsigned char *)val ? "true" : "false");
    case ST_ENUM: {
        unsigned v = *(const unsigned char *)val;
        if (v < f->nsyms)
            return snprintf(buf, size, "%s", f->syms[v]);
        return snprintf(buf, size, "?%u", v);
    }
    case ST_CHAR: {
        const char *s = val;
        size_t n = strnlen(s, f->width);
        return snprintf(buf, size, "%.*s", (int)n, s);
    }
    default:
        return snprintf(buf, size, "%" PRIu64, load_unsigned(val, f->width));
    }
}

void st_schema_format_key(const st_schema *s, const void *row, char *buf, size_t size)
{
    size_t n = 0;
    for (uint32_t i = 0; i < s->nkeys && n + 1 < size; i++) {
        const st_field *f = &s->fields[i];
        int w = snprintf(buf + n, size - n, "%s%s=", i ? ", " : "(", f->name);
        n += (size_t)w < size - n ? (size_t)w : size - n - 1;
        if (n + 1 >= size)
            break;
        w = st_field_format(f, (const unsigned char *)row + f->offset, buf + n, size - n);
        n += (size_t)w < size - n ? (size_t)w : size - n - 1;
    }
    if (n + 1 < size)
        snprintf(buf + n, size - n, ")");
}
