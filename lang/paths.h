/* paths: where comb finds its stdlib, installed or run from the build tree. */
#ifndef COMB_PATHS_H
#define COMB_PATHS_H

/* The stdlib directory: $COMB_STDLIB if set; the source tree's stdlib/ when
 * this binary is the one in the build tree; else the installed data dir. */
const char *paths_stdlib(void);

#endif
