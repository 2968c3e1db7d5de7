/* repl: comb with no program: the interactive prompt (GNU Readline) when
 * stdin is a terminal, else a batch run of what stdin holds. */
#ifndef COMB_REPL_H
#define COMB_REPL_H

#include <stdbool.h>

#include "vm/vm.h"

typedef struct ReplOptions {
    bool norc;              /* --norc: do not run ~/.combrc */
    const char *store_dir;  /* `comb DIR`: the store to bind to ds, or NULL */
} ReplOptions;

/* Runs the prompt or the batch; the process's exit status: 0; 1 after a
 * batch statement failed (or the store would not open); 130 after a batch
 * was interrupted. */
int repl_main(VM *vm, const ReplOptions *o);

/* The most entries ~/.comb_history keeps. */
#define REPL_HISTORY_MAX 5000

#endif
