/* tmpdir: scratch directories for the store's unit tests, and the reset
 * of the failure hooks that each such test ends with. */
#ifndef COMB_TESTS_TMPDIR_H
#define COMB_TESTS_TMPDIR_H

#include <limits.h>

/* Makes a fresh directory $TMPDIR/comb-TAG-XXXXXX into path[PATH_MAX]. */
void tmp_make(const char *tag, char *path);
/* Files (not directories) below dir, recursively; directories are counted
 * in *ndirs when it is not NULL. */
int tmp_count(const char *dir, int *ndirs);
/* Removes dir and everything below it. */
void tmp_remove(const char *dir);
/* A teardown: turns injected I/O and allocation failures off, removes dir. */
void tmp_reset(const char *dir);

#endif
