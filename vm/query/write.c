/* write: a scan's rows to a loader (a tagset file or a store) as the
 * blocks hold them, on one worker: `... | write(target, opts)` straight
 * after the scan, with no row step between. */
#include "config.h"
#include "vm/query/run.h"

/* Pushes a root that write_finish pops. */
static void write_start(VM *vm, Shared *sh)
{
    const QScan *sc = sh->sc;
    Value keep = v_nil();
    sh->loader = vm_loader_new(vm, sc->write_target, sc->src->schema, sc->write_opts, &keep);
    vm_push_root(vm, keep);
    if (!st_schema_equal(vschema(sh->loader->schema)->s, sc->vs->s))
        vm_error(vm, "write: the target's schema differs from the source's");
}

static bool write_consume(Worker *w, uint32_t pi, bool tag, const KSel *sel)
{
    (void)pi;
    Shared *sh = w->sh;
    const st_schema *s = sh->sc->vs->s;
    const st_batch *b = w->k.b;
    st_err err;
    for (uint32_t j = 0; j < sel->n; j++) {
        uint32_t r = sel->idx[j], t = tag ? w->k.owner[r] : r;
        st_batch_row(s, b, t, w->row);
        uint32_t lo = tag ? r : s->tag_size ? b->tag_start[t] : 0;
        uint32_t hi = tag ? r + 1 : s->tag_size ? b->tag_start[t + 1] : 0;
        int rc = 0;
        if (lo == hi)
            rc = vm_loader_add_raw(sh->loader, w->row, NULL, &err);
        for (uint32_t i = lo; i < hi && rc == 0; i++) {
            st_batch_tag(s, b, i, w->tag);
            rc = vm_loader_add_raw(sh->loader, w->row, w->tag, &err);
        }
        if (rc < 0) {
            scan_fail(sh, err.msg);
            return false;
        }
        sh->written++;
    }
    return true;
}

static Value write_finish(VM *vm, Shared *sh, Worker *w, Ordered *o)
{
    (void)w;
    (void)o;
    vm_loader_finish(vm, sh->loader);
    vm_pop_root(vm, 1);
    return v_int((int64_t)sh->written);
}

const QConsumerOps qcons_write = {
    .start = write_start,
    .consume = write_consume,
    .finish = write_finish,
};
