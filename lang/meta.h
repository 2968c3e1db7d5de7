/* meta: the prompt's dot commands (.help, .mode, ...), from the table in
 * lang/commands.def. */
#ifndef COMB_META_H
#define COMB_META_H

#include "lang/session.h"

typedef struct MetaCommand {
    const char *name, *args, *help;
} MetaCommand;

extern const MetaCommand meta_commands[];
extern const size_t meta_ncommands;

/* Runs the dot command in line (starting with '.', one line). */
RunStatus meta_run(Session *s, const char *line, size_t len);

#endif
