/* session: the prompt's state between statements (one module holds the
 * names every statement makes), and what one statement does: compile it,
 * run it, show its value. The prompt, batch input, .read and ~/.combrc all
 * go through session_run. */
#ifndef COMB_SESSION_H
#define COMB_SESSION_H

#include <stdbool.h>
#include <stdio.h>

#include "lang/table.h"
#include "vm/vm.h"

typedef enum {
    RUN_OK,             /* ran; or a dot command did its work */
    RUN_ERROR,          /* a compile or run-time error, reported */
    RUN_INTERRUPTED,    /* Ctrl-C stopped it, reported */
    RUN_MORE,           /* unfinished: a bracket or string open, or a trailing `|` */
    RUN_MORE_EOF,       /* unfinished: the compiler met the end of the input */
} RunStatus;

typedef struct Session {
    VM *vm;
    VModule *mod;       /* the statements' top-level names */
    VArray *keep;       /* rooted: what the session holds (KEEP_ slots) */
    TableFormat mode;   /* how results print */
    TableFormat unexpanded; /* the mode \x goes back to */
    bool timer;
    long confirm;       /* .confirm: a query giving more rows asks first (0: never; -1: the screen's height) */
    bool terminal;      /* stdout is a terminal: pager, progress */
    bool color;         /* colour on stdout */
    bool color_err;     /* colour on stderr */
    bool quit;          /* .quit was run */
    FILE *out;          /* .output/.once: results go here (NULL: stdout) */
    bool out_once;      /* .once: only the next statement's */
    TableFormat out_mode;   /* their format: by the file's extension, else the mode */
    const char *file;   /* where statements come from, for messages */
    /* Called with each whole statement (or dot command) just before it runs
     * or its errors are reported: the prompt records history here, so a
     * statement that brings comb down is not lost. NULL: none. */
    void (*ready)(const char *src, size_t len);
    /* Asks the person at the prompt question; whether they said yes. NULL
     * (a batch, a pipe, -e): there is no one to ask, nothing is asked. */
    bool (*ask)(const char *question);
} Session;

/* The session's own module, named path, rooted until the VM is freed;
 * terminal says stdout is one (it picks the mode, colour and pager).
 * 0, or -1 out of memory. */
int session_init(Session *s, VM *vm, const char *path, bool terminal);

/* Runs src, the text of one statement (several lines, maybe several
 * statements) starting at first_line of s->file; a line starting with '.'
 * is a dot command. final: the input has ended, so an unfinished statement
 * is an error rather than RUN_MORE(_EOF). */
RunStatus session_run(Session *s, const char *src, size_t len, int first_line, bool final);

/* Runs the statements read from in (named name in messages), stopping at
 * the first error: RUN_OK, RUN_ERROR or RUN_INTERRUPTED. */
RunStatus session_run_stream(Session *s, FILE *in, const char *name);
/* The same from a file; a file that cannot be read is an error too, unless
 * missing_ok and it does not exist (~/.combrc). */
RunStatus session_run_file(Session *s, const char *path, bool missing_ok);

/* Prints each top-level name bound to a store or tagset file, with what it
 * is (.tables); the count. */
size_t session_tables(Session *s, FILE *out);

/* The value of the session's top-level name, or false if it has none. */
bool session_global(Session *s, const char *name, size_t len, Value *out);

/* What the prompt asks of stores. The store bindings fill these in (the
 * prompt works without them: no store, no fields, "no store bound"). */
typedef void (*session_name_fn)(void *acc, const char *name, size_t len);
typedef struct SessionStoreOps {
    /* Calls add(acc, field, len) for each field of v; false: v is not a
     * store it knows. Must not raise. */
    bool (*fields)(VM *vm, Value v, session_name_fn add, void *acc);
    /* Prints v's schema to out; false: v is not a store it knows. */
    bool (*schema)(VM *vm, Value v, FILE *out);
    /* The store in directory dir; raises on error (called protected). */
    Value (*open)(VM *vm, const char *dir);
} SessionStoreOps;
extern SessionStoreOps session_store_ops;

/* The field names of v: a store's (through session_store_ops), or the keys
 * of the maps in an array of maps (rows); false when v has none. */
bool session_fields(Session *s, Value v, session_name_fn add, void *acc);

/* `comb DIR`: opens the store in dir and binds it to `ds`. 0, or -1 after
 * reporting why (no store bindings yet, or the store would not open). */
int session_bind_store(Session *s, const char *dir);

/* Ends .output (or .once): results go to stdout again. Reports a failed
 * write; false then. */
bool session_output_close(Session *s);

/* The last statement's function, for .dump; NULL before any. */
VProto *session_last(Session *s);

#endif
