/* ops: the operators' symbols and the words of their failed statuses, one
 * table for the VM, the kernels and the row steps (the operations, and the
 * formats of the messages that name operands, are ops.h's). */
#include "config.h"

#include "vm/ops.h"

const char *const ops_arith_sym[] = {"+", "-", "*", "/", "%"};

const char *const ops_message[] = {
    [AR_OVERFLOW] = "integer overflow",
    [AR_DIVZERO] = "division by zero",
};
