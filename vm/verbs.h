/* verbs: the pipeline verbs (vm/verbs.def) as an enum and a table, for
 * the parser, the query engine and the prompt; no VM needed. */
#ifndef COMB_VERBS_H
#define COMB_VERBS_H

#include <stdbool.h>
#include <stddef.h>

enum {
#define X(name, last, usage, help) QV_##name,
#include "vm/verbs.def"
#undef X
    QV__COUNT
};

typedef struct VerbDef {
    const char *name;
    bool last;          /* nothing may follow it */
    const char *usage, *help;
} VerbDef;

extern const VerbDef vm_verbs[QV__COUNT];
/* The verb called name[0 .. n), or -1. */
int vm_verb_find(const char *name, size_t n);

#endif
