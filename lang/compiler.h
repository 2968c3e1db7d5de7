/* compiler: the syntax tree to VM bytecode (see vm/opcodes.h). */
#ifndef COMB_COMPILER_H
#define COMB_COMPILER_H

#include "lang/ast.h"
#include "lang/lexer.h"
#include "lang/diag.h"
#include "vm/vm.h"

/* Compiles a program's top-level statements into module mod (adding its
 * top-level names to mod's): the module's main function, or NULL after
 * reporting errors to d. Allocates through the VM, so it may raise
 * out-of-memory: call it inside vm_protect. */
VProto *lc_compile(VM *vm, VModule *mod, Block *prog, Arena *a, Diag *d);

#endif
