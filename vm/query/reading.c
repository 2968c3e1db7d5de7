/* reading: one VM's reading session; see reading.h. */
#include "config.h"
#include "vm/query/reading.h"

#include <malloc.h>
#include <string.h>

#include "store/cache.h"
#include "vm/lib.h"
#include "vm/query/qplan.h"

typedef struct VReading {
    st_reading *st;
    VSource *last;      /* the last snapshot's handle: weak (vm_reading_gone) */
    VArray *kept;       /* bound queries kept for their next run (keep.c) */
} VReading;

static void reading_mark(VM *vm, void *data)
{
    VReading *s = data;
    if (s->kept)
        vm_mark_obj(vm, &s->kept->hdr);
}

static void reading_free(VM *vm, void *data)
{
    st_reading_unref(((VReading *)data)->st);
    if (vm->reading && handle_data(vm->reading) == data)
        vm->reading = NULL;     /* (not a handle whose making ran out of memory) */
}

static const VHandleType reading_type = {
    .name = "reading session", .free = reading_free, .mark = reading_mark};

/* Queries keep what they decode in the process's cache (store/cache.h):
 * COMB_CACHE_MB megabytes (default 256; 0 turns it off), set at the first
 * session. And a session runs query after query, each allocating and
 * freeing its scratch vectors: glibc would hand the top of the heap back to
 * the kernel after each (above 128 KiB) and fault it in again for the next. */
static void cache_on(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    long long mb = lib_env_megabytes("COMB_CACHE_MB", 256);
    st_cache_set_limit(mb > 0 ? (size_t)mb << 20 : 0);
#ifdef __GLIBC__
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_TOP_PAD, 16 << 20);
#endif
}

static VReading *reading_of(VM *vm)
{
    if (!vm->reading) {
        VHandle *h = vm_handle_new(vm, &reading_type, sizeof(VReading));
        VReading *s = handle_data(h);
        if (!(s->st = st_reading_new()))
            vm_throw(vm, v_obj(vm->oom));
        vm->reading = h;
        cache_on();
    }
    return handle_data(vm->reading);
}

VArray *vm_reading_kept(VM *vm)
{
    VReading *s = reading_of(vm);
    if (!s->kept)
        s->kept = vm_array_new(vm, 0);  /* the session is rooted (gc.c) */
    return s->kept;
}

st_reading *vm_reading(VM *vm)
{
    return reading_of(vm)->st;
}

void vm_reading_opening(VM *vm, const char *dir)
{
    VReading *s = reading_of(vm);
    qkeep_forget(vm, dir);
    if (s->last && !strcmp(s->last->path, dir)) {
        s->last = NULL;
        st_reading_forget(s->st);
    }
    st_reading_opening(s->st, dir);
}

void vm_reading_opened(VM *vm, VSource *src)
{
    VReading *s = reading_of(vm);
    if (st_reading_opened(s->st, src->path))
        s->last = src;
}

VSource *vm_reading_reopen(VM *vm, const char *dir)
{
    VReading *s = reading_of(vm);
    return s->last && st_reading_current(s->st, dir) ? s->last : NULL;
}

void vm_reading_reopened(VM *vm, VSource *src)
{
    reading_of(vm)->last = src;   /* the newest handle: likely the last one collected */
}

void vm_reading_gone(VM *vm, const VSource *src)
{
    VReading *s = vm->reading ? handle_data(vm->reading) : NULL;
    if (s && s->last == src) {
        s->last = NULL;
        st_reading_forget(s->st);
    }
}
