/* fileload: tags in any order into a new tagset file: the shared front end
 * (store/recsort.h) with one partition, merged into a file writer. */
#include "config.h"
#include "store/fileload.h"

#include <string.h>

#include "store/mem.h"
#include "store/merge.h"
#include "store/record.h"
#include "store/recsort.h"

struct st_fileload {
    char *path;
    st_fileload_opts o;
    st_recsort *rs;
    st_rec_out out; /* the file's writer while st_fileload_finish runs */
};

void st_fileload_opts_default(st_fileload_opts *o)
{
    memset(o, 0, sizeof *o);
    st_write_opts_default(&o->write);
}

st_fileload *st_fileload_file(const char *path, const st_schema *s, const st_fileload_opts *opts,
                          st_err *err)
{
    st_fileload *l = mem_calloc(1, sizeof *l);
    if (!l || !(l->path = mem_strdup(path))) {
        mem_free(l, sizeof *l);
        st_err_nomem(err, path);
        return NULL;
    }
    if (opts)
        l->o = *opts;
    else
        st_fileload_opts_default(&l->o);
    l->o.write.checked = true; /* st_recsort_add checks each record as it comes */
    l->out.s = s;
    if (!(l->rs = st_recsort_new(s, 1, path, &l->o.sort, err))) {
        st_fileload_free(l);
        return NULL;
    }
    return l;
}

int st_fileload_add(st_fileload *l, const void *row, const void *tag, st_err *err)
{
    return st_recsort_add(l->rs, 0, row, tag, err);
}

static int no_records(void *self, const void **rec, st_err *err)
{
    (void)self, (void)rec, (void)err;
    return 0;
}

int st_fileload_finish(st_fileload *l, st_fileload_stats *stats, st_err *err)
{
    const st_schema *s = l->out.s;
    st_merge_spec m = {
        .rec_size = st_rec_size(s), .keycmp = st_rec_cmp, .key_ctx = (void *)s,
        .old = {no_records, NULL, "old"}, .add = st_recsort_source(l->rs, 0),
        .out = {st_rec_put, &l->out},
    };
    int rc = -1;
    if (st_recsort_finish(l->rs, err) == 0 &&
        (l->out.w = st_writer_create(l->path, s, &l->o.write, err))) {
        if (st_merge(&m, NULL, err) < 0)
            st_writer_abort(l->out.w);
        else
            rc = st_writer_commit(l->out.w, err);
        l->out.w = NULL;
    }
    if (stats)
        *stats = (st_fileload_stats){st_recsort_count(l->rs), l->out.ntagsets, l->out.ntags};
    return rc;
}

void st_fileload_free(st_fileload *l)
{
    if (!l)
        return;
    st_recsort_free(l->rs);
    st_rec_out_free(&l->out);
    mem_free(l->path, strlen(l->path) + 1);
    mem_free(l, sizeof *l);
}
