/* reading: one VM's reading session, the one owner of what a VM keeps between
 * the queries it reads stores with: the store-level state (store/reading.h:
 * its last snapshot, with the store's commit counter mapped; how many scans
 * it ran, which decides when they use the process's read cache; the budget
 * of idle readers its snapshots keep), the handle of that last snapshot,
 * and the query engine's bindings kept for their next run (keep.c). A new
 * snapshot, a command run, a handle freed: what each invalidates is let go
 * here. (A plan's kernel scratch goes with its plan.) */
#ifndef COMB_QUERY_READING_H
#define COMB_QUERY_READING_H

#include "store/reading.h"
#include "vm/lib_store.h"

/* The VM's session, made at its first use (which also turns the process's
 * read cache on: COMB_CACHE_MB); raises out of memory. */
st_reading *vm_reading(VM *vm);

/* The session's kept bindings (keep.c's table). */
VArray *vm_reading_kept(VM *vm);

/* dir's snapshot is being opened anew: the session lets go of what it kept
 * of older ones (the bindings that read dir, with their pins; dir's last
 * snapshot) and notes what identifies the current one. */
void vm_reading_opening(VM *vm, const char *dir);
/* It was opened as src: src is the last snapshot if no commit came since. */
void vm_reading_opened(VM *vm, VSource *src);
/* The last snapshot's handle if it is dir's and still current, else NULL;
 * a new handle on it made from that one becomes the last (reopened). */
VSource *vm_reading_reopen(VM *vm, const char *dir);
void vm_reading_reopened(VM *vm, VSource *src);
/* src's handle is being freed: the session forgets it. */
void vm_reading_gone(VM *vm, const VSource *src);

#endif
