/* ops: the words of the operators' errors, one table for the VM, the
 * kernels and the row steps (the operations themselves are ops.h's). */
#include "config.h"

#include <stdio.h>

#include "vm/ops.h"

const char *const ops_arith_sym[] = {"+", "-", "*", "/", "%"};

const char *const ops_message[] = {
    [AR_OVERFLOW] = "integer overflow",
    [AR_DIVZERO] = "division by zero",
};

void ops_types_message(char *buf, size_t n, const char *sym, const char *ta, const char *tb)
{
    snprintf(buf, n, "cannot apply '%s' to %s and %s", sym, ta, tb);
}

void ops_unary_message(char *buf, size_t n, const char *sym, const char *ta)
{
    snprintf(buf, n, "cannot apply unary '%s' to %s", sym, ta);
}

void ops_notime_message(char *buf, size_t n, const char *fn, const char *ta)
{
    snprintf(buf, n, "%s() needs a time (an int), not %s", fn, ta);
}
