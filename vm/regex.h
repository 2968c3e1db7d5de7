/* regex: PCRE2 regular expressions as native handles, for `~` and natives. */
#ifndef COMB_REGEX_H
#define COMB_REGEX_H

#include "vm/vm.h"

extern const VHandleType vm_regex_type;

/* Contexts routing PCRE2's memory through the VM's hook; vm_new/vm_free. */
bool vm_regex_init(VM *vm);
void vm_regex_fini(VM *vm);

/* Compile pattern with flags (letters i m s x): a "regex" handle, JIT-compiled
 * when the platform allows. NULL on a bad pattern, with the reason in
 * err (errsize bytes). Raises only on out-of-memory. */
VHandle *vm_regex_new(VM *vm, const char *pat, size_t len, const char *flags, char *err,
                      size_t errsize);
/* The compiled pattern (a pcre2_code *), for code that matches on other
 * threads with match data of its own: the code itself is read-only. */
void *vm_regex_code(VHandle *re);
/* Does the regex match anywhere in s? Raises on a matching error. */
bool vm_regex_match(VM *vm, VHandle *re, const char *s, size_t len);
/* Where the regex first matches in the subject s[0..len), searching from
 * start: true with the match in [*ms, *me); false if nowhere. Raises on a
 * matching error. */
bool vm_regex_find(VM *vm, VHandle *re, const char *s, size_t len, size_t start, size_t *ms,
                   size_t *me);
/* subject ~ pattern: pattern a regex handle or a string (compiled once and
 * cached); raises on other types. */
bool vm_match(VM *vm, Value subject, Value pattern);

#endif
