/* help: the prompt's .help and comb --reference, both generated from the
 * tables: natives (vm/natives.def), verbs (vm/verbs.def), dot commands
 * (lang/commands.def) and topics (lang/topics.def). */
#ifndef COMB_HELP_H
#define COMB_HELP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct HelpEntry {
    const char *name, *usage, *text;
} HelpEntry;

extern const HelpEntry help_verbs[];
extern const size_t help_nverbs;
extern const HelpEntry help_topics[];   /* usage: the topic's summary */
extern const size_t help_ntopics;
extern const HelpEntry help_operators[];    /* name: the symbols, space-separated */
extern const size_t help_noperators;

/* .help: the overview (topic NULL or empty), a topic, or a native, verb or
 * command by name. False (after saying so) when nothing is called that. */
bool help_show(FILE *out, const char *topic);

/* Calls add(acc, name) for every name .help knows. */
void help_names(void (*add)(void *acc, const char *name, size_t len), void *acc);

/* The reference section of docs/LANGUAGE.md, in Markdown. */
void help_reference(FILE *out);

#endif
