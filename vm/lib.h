/* lib: what the library natives (vm/lib_*.c) share among themselves. */
#ifndef COMB_LIB_H
#define COMB_LIB_H

#include "vm/natives.h"

/* The exit status of a command from its wait status, as the shell gives
 * it: the command's code, or 128 plus the signal that ended it. */
int64_t lib_exit_status(int wait_status);

#endif
