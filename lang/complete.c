/* complete: what Tab offers at the cursor of a statement being typed. The
 * context comes from the lexer's tokens of the text before the word, so
 * strings, comments and regexes are read as the compiler reads them. */
#include "config.h"
#include "lang/complete.h"

#include <stdlib.h>
#include <string.h>

#include "lang/help.h"
#include "lang/load.h"
#include "lang/meta.h"
#include "store/mem.h"
#include "vm/natives.h"

#define COUNT_TOKEN(k, text) +1
enum { NTOKENS = 0 TOKENS(COUNT_TOKEN) };

static const char *const timer_words[] = {"on", "off", NULL};

/* ---- the context ------------------------------------------------------ */

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* A dot command's argument: which command, if the text is `.name `. */
static CompleteContext command_context(const char *p, const char *end)
{
    CompleteContext c = {.kind = COMPLETE_NONE};
    const char *name = ++p;
    while (p < end && !is_space(*p))
        p++;
    size_t n = (size_t)(p - name);
    while (p < end && is_space(*p))
        p++;
    if (p != end)
        return c;       /* only the first argument is completed */
    if (n == 4 && !memcmp(name, "help", 4))
        c.kind = COMPLETE_HELP;
    else if (n == 4 && !memcmp(name, "mode", 4))
        c = (CompleteContext){.kind = COMPLETE_WORDS, .words = table_format_names};
    else if (n == 5 && !memcmp(name, "timer", 5))
        c = (CompleteContext){.kind = COMPLETE_WORDS, .words = timer_words};
    else if (n == 4 && !memcmp(name, "read", 4))
        c.kind = COMPLETE_FILE;
    else if (n == 6 && !memcmp(name, "schema", 6))
        c.kind = COMPLETE_NAME;
    return c;
}

static bool opens(TokKind k)
{
    return k == T_LPAREN || k == T_LBRACKET || k == T_LBRACE;
}

static bool closes(TokKind k)
{
    return k == T_RPAREN || k == T_RBRACKET || k == T_RBRACE;
}

/* Tokens that may come just before a pipeline's source. */
static bool starts_expression(TokKind k)
{
    return k == T_NEWLINE || k == T_SEMI || k == T_ASSIGN || k == T_COMMA || k == T_IN ||
           k == T_RETURN || opens(k);
}

/* In a pipeline stage (a `|` before the word in the same statement, seen
 * through any brackets the word is inside): the field context, with the
 * pipeline's source when it is a plain name. */
static CompleteContext stage_context(const TokenList *toks, size_t end)
{
    CompleteContext c = {.kind = COMPLETE_NAME};
    int depth = 0;
    ptrdiff_t first_pipe = -1;
    for (size_t i = end; i-- > 0;) {
        TokKind k = toks->t[i].kind;
        if (closes(k))
            depth++;
        else if (opens(k) && depth > 0)
            depth--;
        else if (depth == 0 && (k == T_NEWLINE || k == T_SEMI))
            break;
        else if (depth == 0 && k == T_PIPE)
            first_pipe = (ptrdiff_t)i;
    }
    if (first_pipe < 0)
        return c;
    c.kind = COMPLETE_FIELD;
    if (first_pipe >= 1 && toks->t[first_pipe - 1].kind == T_NAME &&
        (first_pipe == 1 || starts_expression(toks->t[first_pipe - 2].kind))) {
        c.source = toks->t[first_pipe - 1].start;
        c.source_len = toks->t[first_pipe - 1].len;
    }
    return c;
}

static void context_of_tokens(const TokenList *toks, bool at_eof, void *ud)
{
    CompleteContext *ctx = ud;
    size_t end = toks->n - 1;   /* the EOF */
    if (end > 0 && toks->t[end - 1].kind == T_NEWLINE)
        end--;                  /* the end of the text, not of the statement */
    if (at_eof && end > 0 && toks->t[end - 1].kind == T_ERROR && toks->t[end - 1].start[0] == '"')
        ctx->kind = COMPLETE_FILE;
    else if (end > 0 && toks->t[end - 1].kind == T_PIPE)
        ctx->kind = COMPLETE_VERB;
    else
        *ctx = stage_context(toks, end);
}

CompleteContext complete_context(VM *vm, const char *before, size_t len, const char *word)
{
    const char *p = before, *end = before + len;
    while (p < end && (is_space(*p) || *p == '\n'))
        p++;
    if (p == end && word[0] == '.')
        return (CompleteContext){.kind = COMPLETE_COMMAND};
    if (p < end && *p == '.')
        return command_context(p, end);
    CompleteContext ctx = {.kind = COMPLETE_NAME};
    if (lc_with_tokens(vm, before, len, context_of_tokens, &ctx))
        ctx.kind = COMPLETE_NONE;
    return ctx;
}

/* ---- candidates ------------------------------------------------------- */

typedef struct Acc {
    CompleteList *out;
    const char *word;
    size_t wlen;
    int failed;
} Acc;

static void add(void *ud, const char *name, size_t len)
{
    Acc *acc = ud;
    CompleteList *l = acc->out;
    if (acc->failed || len < acc->wlen || memcmp(name, acc->word, acc->wlen))
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        char **items = mem_realloc(l->items, l->cap * sizeof *items, cap * sizeof *items);
        if (!items) {
            acc->failed = -1;
            return;
        }
        l->items = items;
        l->cap = cap;
    }
    char *copy = mem_alloc(len + 1);
    if (!copy) {
        acc->failed = -1;
        return;
    }
    memcpy(copy, name, len);
    copy[len] = '\0';
    l->items[l->n++] = copy;
}

static void add_c(Acc *acc, const char *name)
{
    add(acc, name, strlen(name));
}

/* Keywords are the tokens whose text is a quoted word: 'let', 'fn', ... */
static void add_keywords(Acc *acc)
{
    for (int k = 0; k < NTOKENS; k++) {
        const char *t = tok_kind_text((TokKind)k);
        size_t n = strlen(t);
        if (n > 2 && t[0] == '\'' && t[1] >= 'a' && t[1] <= 'z')
            add(acc, t + 1, n - 2);
    }
}

static void add_names(Session *s, Acc *acc)
{
    add_keywords(acc);
    for (size_t i = 0; i < vm_nnatives; i++)
        add_c(acc, vm_natives[i].name);
    size_t pos = 0;
    Value k, slot;
    while (vm_map_next(s->mod->symbols, &pos, &k, &slot))
        if (s->mod->vars[slot.as.i].type != VT_UNDEF)
            add(acc, AS_STR(k)->data, AS_STR(k)->len);
}

static void add_fields(Session *s, const CompleteContext *ctx, Acc *acc)
{
    Value v;
    if (ctx->source && session_global(s, ctx->source, ctx->source_len, &v) &&
        session_fields(s, v, add, acc))
        return;
    if (session_global(s, "ds", 2, &v))
        session_fields(s, v, add, acc);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void sort_unique(CompleteList *l)
{
    if (!l->n)
        return;
    qsort(l->items, l->n, sizeof *l->items, by_name);
    size_t w = 1;
    for (size_t i = 1; i < l->n; i++) {
        if (!strcmp(l->items[i], l->items[w - 1]))
            mem_free(l->items[i], strlen(l->items[i]) + 1);
        else
            l->items[w++] = l->items[i];
    }
    l->n = w;
}

int complete_candidates(Session *s, const CompleteContext *ctx, const char *word,
                        CompleteList *out)
{
    Acc acc = {out, word, strlen(word), 0};
    char dotted[64];
    switch (ctx->kind) {
    case COMPLETE_FIELD:
        add_fields(s, ctx, &acc);
        add_names(s, &acc);
        break;
    case COMPLETE_NAME:
        add_names(s, &acc);
        break;
    case COMPLETE_VERB:
        for (size_t i = 0; i < help_nverbs; i++)
            add_c(&acc, help_verbs[i].name);
        break;
    case COMPLETE_COMMAND:
        for (size_t i = 0; i < meta_ncommands; i++) {
            snprintf(dotted, sizeof dotted, ".%s", meta_commands[i].name);
            add_c(&acc, dotted);
        }
        break;
    case COMPLETE_WORDS:
        for (size_t i = 0; ctx->words[i]; i++)
            add_c(&acc, ctx->words[i]);
        break;
    case COMPLETE_HELP:
        help_names(add, &acc);
        break;
    case COMPLETE_NONE:
    case COMPLETE_FILE:
        break;
    }
    sort_unique(out);
    return acc.failed;
}

void complete_free(CompleteList *l)
{
    for (size_t i = 0; i < l->n; i++)
        mem_free(l->items[i], strlen(l->items[i]) + 1);
    mem_free(l->items, l->cap * sizeof *l->items);
    l->items = NULL;
    l->n = l->cap = 0;
}
