/* modcache: compiled modules kept on disk, so that `import` compiles a file
 * once per change of the file or of comb (vm/chunkio.c holds the bytes).
 *
 * For a module file DIR/NAME.comb the cache is looked for in
 * DIR/NAME.combc (what the build makes for stdlib/, installed beside it),
 * then in the user's cache, $COMB_MODCACHE_DIR or $XDG_CACHE_HOME/comb or
 * ~/.cache/comb, as NAME-HASH.combc (HASH: of the file's real path).
 * A file that is missing, of another build, of other source text or
 * damaged is a miss; the module is then compiled and the user's cache
 * written, if it can be (else silently not).
 *
 * COMB_MODCACHE=off reads and writes no cache; COMB_MODCACHE=refresh reads none
 * but writes the user's cache (the build uses it for stdlib/). */
#ifndef COMB_MODCACHE_H
#define COMB_MODCACHE_H

#include "vm/vm.h"

/* m (new, no names) filled from a cache of the module file at path: its
 * main function, or NULL on a miss (discard m then). Raises only on out of
 * memory. */
VProto *lc_cache_get(VM *vm, VModule *m, const char *path);

/* Keeps m (just compiled from src, not run) in the user's cache. Raises
 * only on out of memory. */
void lc_cache_put(VM *vm, VModule *m, const char *path, const char *src, size_t len);

#endif
