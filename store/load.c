/* load: loading into a datastore: sort tag records by (partition, key), update each partition, commit once. */
#include "config.h"
#include "store/load.h"

#include <stdbool.h>
#include <string.h>

#include "store/mem.h"
#include "store/recsort.h"

struct st_load {
    st_store *s;
    st_load_opts o;
    st_schema *schema;
    const st_field *pk;          /* the partition key */
    uint32_t partitions, nparts; /* per volume, in all */
    st_recsort *rs;              /* the records by (global partition, key) */
};

void st_load_opts_default(st_load_opts *o)
{
    st_update_opts_default(&o->update);
    memset(&o->sort, 0, sizeof o->sort);
    o->to_adds = false;
    o->cancelled = NULL;
    o->cancel_ctx = NULL;
}

st_load *st_load_new(st_store *s, const st_load_opts *opts, st_err *err)
{
    st_load *l = mem_calloc(1, sizeof *l);
    if (!l) {
        st_err_nomem(err, "loader");
        return NULL;
    }
    l->s = s;
    if (opts)
        l->o = *opts;
    else
        st_load_opts_default(&l->o);
    if (!(l->schema = st_update_store_schema(s, err)) ||
        st_update_check(s, l->schema, &l->o.update, &l->pk, err) < 0)
        goto fail;
    st_storeinfo info;
    st_store_info(s, &info);
    l->partitions = info.partitions;
    l->nparts = info.volumes * info.partitions;
    if (!(l->rs = st_recsort_new(l->schema, l->nparts, "load", &l->o.sort, err)))
        goto fail;
    return l;
fail:
    st_load_free(l);
    return NULL;
}

const st_schema *st_load_schema(const st_load *l) { return l->schema; }
uint64_t st_load_count(const st_load *l) { return st_recsort_count(l->rs); }

int st_load_add(st_load *l, const void *row, const void *tag, st_err *err)
{
    uint32_t v, p;
    st_store_place(l->s, (const unsigned char *)row + l->pk->offset, l->pk->width, &v, &p);
    return st_recsort_add(l->rs, v * l->partitions + p, row, tag, err);
}

/* Runs the partition updates in t, in partition order: those that received
 * records, or all when the options may remove tagsets anywhere. */
static int check_cancel(const st_load *l, st_err *err)
{
    if (l->o.cancelled && l->o.cancelled(l->o.cancel_ctx))
        return st_err_set(err, ST_ECANCEL, "interrupted: nothing was loaded");
    return 0;
}

static int update_all(st_load *l, st_txn *t, st_update_stats *st, st_err *err)
{
    const st_update_opts *uo = &l->o.update;
    bool sweep = !l->o.to_adds && (uo->age_field || (uo->remove_keys && uo->nremove));
    for (uint32_t g = 0; g < l->nparts; g++) {
        if (!sweep) {
            int more = st_recsort_next_part(l->rs, &g, err);
            if (more <= 0)
                return more;
        }
        if (check_cancel(l, err) < 0)
            return -1;
        st_source src = st_recsort_source(l->rs, g);
        uint32_t v, p;
        st_partition_split(g, l->partitions, &v, &p);
        int rc = l->o.to_adds ? st_update_adds(t, l->s, l->schema, v, p, &src, uo, st, err)
                              : st_update_partition(t, l->s, l->schema, v, p, &src, uo, st, err);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int st_load_commit(st_load *l, st_update_stats *stats, st_err *err)
{
    st_update_stats st = {0};
    st_txn *t = NULL;
    int rc = -1;
    const char *label = l->o.update.write.label;
    if (check_cancel(l, err) < 0 || st_recsort_finish(l->rs, err) < 0 ||
        check_cancel(l, err) < 0 || !(t = st_store_begin(l->s, ST_ALL_VOLUMES, err)) ||
        (label && st_store_set_label(t, label, err) < 0) || update_all(l, t, &st, err) < 0)
        goto done;
    if (st.partitions == 0) {
        rc = 0; /* nothing to load: no new generation */
        goto done;
    }
    if (check_cancel(l, err) < 0)
        goto done;
    rc = st_store_commit(t, err);
    t = NULL; /* the commit ended it */
done:
    st_store_abort(t);
    if (stats)
        *stats = st;
    st_load_free(l);
    return rc;
}

void st_load_free(st_load *l)
{
    if (!l)
        return;
    st_recsort_free(l->rs);
    st_schema_free(l->schema);
    mem_free(l, sizeof *l);
}
