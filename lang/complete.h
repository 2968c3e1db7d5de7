/* complete: what Tab offers at the cursor of a statement being typed:
 * names and keywords, a verb after `|`, the fields of the pipeline's source
 * inside a stage, a file name inside a string, dot commands and their
 * arguments. Kept apart from readline so it can be tested. */
#ifndef COMB_COMPLETE_H
#define COMB_COMPLETE_H

#include <stddef.h>

#include "lang/session.h"

typedef enum {
    COMPLETE_NONE,
    COMPLETE_NAME,      /* keywords, natives, the session's names */
    COMPLETE_VERB,      /* the first word of a pipeline stage */
    COMPLETE_FIELD,     /* inside a stage: the source's fields, and names */
    COMPLETE_FILE,      /* inside a string literal, or after .read */
    COMPLETE_COMMAND,   /* .help, .mode, ... */
    COMPLETE_WORDS,     /* one of a fixed list (.mode, .timer) */
    COMPLETE_HELP,      /* what .help knows: topics, natives, verbs, commands */
} CompleteKind;

typedef struct CompleteContext {
    CompleteKind kind;
    const char *source;             /* COMPLETE_FIELD: the name the pipeline starts */
    size_t source_len;              /* from (source NULL: none; `ds` is used) */
    const char *const *words;       /* COMPLETE_WORDS: NULL-terminated */
} CompleteContext;

/* The context of word, which starts after `before` (the statement so far
 * up to the word: earlier lines too). source points into before. */
CompleteContext complete_context(VM *vm, const char *before, size_t len, const char *word);

/* Candidates: sorted, without duplicates, in mem.h memory. */
typedef struct CompleteList {
    char **items;
    size_t n, cap;
} CompleteList;

/* Adds to out the candidates of ctx that start with word (not for
 * COMPLETE_FILE, which readline does itself). 0, or -1 out of memory. */
int complete_candidates(Session *s, const CompleteContext *ctx, const char *word,
                        CompleteList *out);
void complete_free(CompleteList *l);

#endif
