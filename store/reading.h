/* reading: a reading session's state at the store level, in one owner: the
 * snapshot it opened last (to open again without reading STORE or MANIFEST
 * while no commit came: the store's commit counter, store/watch.h, mapped),
 * how many scans it has run (its scans read through the process's cache,
 * store/cache.h, from the second on: a one-shot `comb -e` reads nothing
 * twice and would only pay for filling it), and its budget of idle readers
 * (kept open between scans, within a bound on descriptors).
 *
 * The VM holds one per VM (vm/query/reading.c, with the query engine's
 * kept bindings); the file lists of its snapshots hold references too, for
 * the budget. References are counted on one thread (the VM's); the idle
 * budget may be used from any thread.
 *
 * The last snapshot stays current while the counter reads the same even
 * value it read before MANIFEST; MANIFEST's identity is checked all the same
 * when the last check is ST_READING_RECHECK_NS old, and after a command ran
 * (st_reading_recheck_all), since a store removed and made again under its
 * name leaves the old counter mapped, never to move. An odd counter is a
 * commit under way, or one whose second add failed: it proves nothing. */
#ifndef COMB_STORE_READING_H
#define COMB_STORE_READING_H

#include <stdbool.h>
#include <stdint.h>

#define ST_READING_RECHECK_NS 100000000ull

typedef struct st_reading st_reading;

/* A new reading session (one reference), or NULL out of memory. */
st_reading *st_reading_new(void);
st_reading *st_reading_ref(st_reading *s);
void st_reading_unref(st_reading *s);  /* NULL is allowed */

/* ---- the last snapshot ------------------------------------------------- */

/* The session is about to open dir's snapshot: notes what identifies the
 * current one (the counter, then MANIFEST's identity). */
void st_reading_opening(st_reading *s, const char *dir);
/* It has opened it: the snapshot becomes the session's last if no commit
 * came since st_reading_opening (true), else the last stays as it was. */
bool st_reading_opened(st_reading *s, const char *dir);
/* Whether the last snapshot is dir's and still the current one. */
bool st_reading_current(st_reading *s, const char *dir);
/* No last snapshot (its handle is gone, or a newer one is being opened). */
void st_reading_forget(st_reading *s);
/* A command ran, which may have changed stores in any way: every session
 * checks MANIFEST at its next st_reading_current. Any thread. */
void st_reading_recheck_all(void);

/* ---- scans ------------------------------------------------------------- */

/* A scan begins. */
void st_reading_scan(st_reading *s);
/* Whether the scan ahead scans from now (0: the one running) reads through
 * the process's cache. */
bool st_reading_caches(const st_reading *s, unsigned ahead);

/* ---- idle readers ------------------------------------------------------ */

/* Room for one more idle reader: counts it and true, or false at the bound
 * (a quarter of the process's descriptors, at most 256). */
bool st_reading_idle_add(st_reading *s);
/* One idle reader less (taken again, or closed). */
void st_reading_idle_sub(st_reading *s);

#endif
