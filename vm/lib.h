/* lib: what the library natives (vm/lib_*.c) share among themselves. */
#ifndef COMB_LIB_H
#define COMB_LIB_H

#include "vm/natives.h"

/* The exit status of a command from its wait status, as the shell gives
 * it: the command's code, or 128 plus the signal that ended it. */
int64_t lib_exit_status(int wait_status);

/* The slice [*from, *to) of a sequence of len items that the optional
 * arguments argv[i] (start) and argv[i + 1] (end, exclusive) name: ints,
 * negative ones counting from the end, clamped to the sequence; the end
 * defaults to len and an end before the start gives an empty slice. */
void lib_slice_range(VM *vm, int argc, Value *argv, int i, size_t len, size_t *from,
                     size_t *to);
/* n as an index of a sequence of len items, negative from the end; raises
 * when it is outside. */
size_t lib_index(VM *vm, int64_t n, size_t len);

/* argv[i], a string without NUL bytes, as one NUL-terminated at its length
 * (a copy when it is a view whose next byte is not NUL), for C calls that
 * take paths, commands and names. */
VStr *lib_cstr_arg(VM *vm, Value *argv, int i);

/* The megabytes environment variable name asks for (dflt when it is unset
 * or empty), at most the machine's memory, so that a huge value cannot wrap
 * a shift; the memory is asked once (glibc makes a system call each time,
 * and scans ask per query). */
long long lib_env_megabytes(const char *name, long long dflt);

/* m[key] = v, key a C string: for natives that answer with a map. */
void lib_put(VM *vm, VMap *m, const char *key, Value v);

/* Raises "unknown option 'x'" (with a "did you mean") for a key of the
 * options map m (NULL: none) not in known (NULL-terminated). */
void lib_check_opts(VM *vm, VMap *m, const char *const *known);

#endif
