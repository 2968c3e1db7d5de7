/* eval: helpers for unit tests of the front end: comb expressions made
 * into values, and stdout captured. */
#ifndef COMB_TEST_EVAL_H
#define COMB_TEST_EVAL_H

#include "lang/session.h"
#include "vm/vm.h"

/* The value of a comb expression (or statements ending in `return`),
 * compiled in a module of its own; the test fails on any error. The value
 * is not rooted: use it before the next evaluation. */
Value test_eval(VM *vm, const char *src);

/* A stand-in for the store bindings' session_store_ops.fields: the int 7
 * is a store with the fields onum and orig. */
bool test_fake_fields(VM *vm, Value v, session_name_fn add, void *acc);

/* Everything written to stdout between the two calls (NUL-terminated, in
 * a static buffer). */
void test_capture_begin(void);
const char *test_capture_end(void);

#endif
