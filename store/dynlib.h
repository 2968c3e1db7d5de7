/* dynlib: a shared library opened when first needed, not at comb's start. */
#ifndef COMB_STORE_DYNLIB_H
#define COMB_STORE_DYNLIB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* Opens soname and puts its functions names[0 .. n-1] in fns, in order.
 * Missing either, says so on stderr and exits as the dynamic linker does
 * when a library is missing at start: comb cannot go on without them.
 * Called once (callers use pthread_once); what names the library for the
 * message, e.g. "the bitmap index library". */
void st_dyn_bind(const char *soname, const char *what, const char *const *names, void **fns,
                 size_t n);

/* A library's functions as a list FUNCS(X) of X(return type, name,
 * parameters, arguments) gives a file its table lib (lib.NAME), and
 * load_once(), which binds the table on the first call of any thread.
 * Once bound, load_once is a load and a branch the CPU predicts (an
 * operator such as float % calls it each time): only the first calls go
 * through pthread_once, which makes the others wait for the binding. */
#define ST_DYN_FIELD(ret, name, params, args) ret(*name) params;
#define ST_DYN_NAME(ret, name, params, args) #name,
#define ST_DYN_LIB(FUNCS, soname, what)                                        \
    static struct {                                                            \
        FUNCS(ST_DYN_FIELD)                                                    \
    } lib;                                                                     \
    static const char *const lib_names[] = {FUNCS(ST_DYN_NAME)};              \
    static atomic_bool lib_bound;                                              \
    static void lib_load(void)                                                 \
    {                                                                          \
        st_dyn_bind(soname, what, lib_names, (void **)&lib,                    \
                    sizeof lib_names / sizeof *lib_names);                     \
        atomic_store_explicit(&lib_bound, true, memory_order_release);         \
    }                                                                          \
    static pthread_once_t lib_once = PTHREAD_ONCE_INIT;                        \
    __attribute__((noinline, cold)) static void lib_load_first(void)           \
    {                                                                          \
        pthread_once(&lib_once, lib_load);                                     \
    }                                                                          \
    static inline void load_once(void)                                         \
    {                                                                          \
        if (!atomic_load_explicit(&lib_bound, memory_order_acquire))           \
            lib_load_first();                                                  \
    }

#endif
