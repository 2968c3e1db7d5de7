/* merge: merging sorted old and add tagsets under a per-key policy. */
#include "config.h"
#include "store/merge.h"

#include <string.h>

#include "store/mem.h"

static int sorter_next(void *self, const void **rec, st_err *err)
{
    return st_sorter_next(self, rec, err);
}

st_source st_source_of_sorter(st_sorter *s, const char *name)
{
    return (st_source){sorter_next, s, name};
}

int st_merge_append(st_merge_side *sd, const void *recs, size_t n, st_err *err)
{
    size_t rs = sd->spec->rec_size;
    if (n == 0)
        return 0; /* recs may be NULL: an absent tagset */
    if (sd->n + n > sd->cap) {
        size_t ncap = sd->cap ? sd->cap : 16;
        while (ncap < sd->n + n)
            ncap *= 2;
        unsigned char *b = mem_realloc(sd->buf, sd->cap * rs, ncap * rs);
        if (!b)
            return st_err_nomem(err, "merge: tagset");
        sd->buf = b;
        sd->cap = ncap;
    }
    memcpy(sd->buf + sd->n * rs, recs, n * rs);
    sd->n += n;
    return 0;
}

/* Reads one record; *rec is NULL at the end. */
static int read_rec(st_merge_side *sd, const void **rec, st_err *err)
{
    int rc = sd->src->next(sd->src->self, rec, err);
    if (rc < 0)
        return -1;
    if (rc == 0)
        *rec = NULL;
    else
        sd->pos++;
    return 0;
}

int st_merge_disorder(const char *name, uint64_t pos, st_err *err)
{
    return st_err_set(err, ST_EINPUT,
                      "merge: %s: record %llu is out of order (its key sorts before the previous "
                      "record's)", name, (unsigned long long)pos);
}

int st_merge_load(st_merge_side *sd, st_err *err)
{
    const st_merge_spec *sp = sd->spec;
    sd->n = 0;
    if (!sd->has_ahead)
        return 0;
    if (st_merge_append(sd, sd->ahead, 1, err) < 0)
        return -1;
    for (;;) {
        const void *rec;
        if (read_rec(sd, &rec, err) < 0)
            return -1;
        sd->has_ahead = rec != NULL;
        if (!rec)
            return 0;
        int c = sp->keycmp(sd->buf, rec, sp->key_ctx);
        if (c > 0)
            return st_merge_disorder(sd->name, sd->pos, err);
        if (c < 0) {
            memcpy(sd->ahead, rec, sp->rec_size);
            return 0;
        }
        if (st_merge_append(sd, rec, 1, err) < 0)
            return -1;
    }
}

int st_merge_open_side(st_merge_side *sd, const st_merge_spec *spec, const st_source *src,
                     const char *dflt, st_err *err)
{
    memset(sd, 0, sizeof *sd);
    sd->spec = spec;
    sd->src = src;
    sd->name = src->name ? src->name : dflt;
    sd->ahead = mem_alloc(spec->rec_size);
    if (!sd->ahead)
        return st_err_nomem(err, "merge: look-ahead record");
    const void *rec;
    if (read_rec(sd, &rec, err) < 0)
        return -1;
    sd->has_ahead = rec != NULL;
    if (rec)
        memcpy(sd->ahead, rec, spec->rec_size);
    return st_merge_load(sd, err);
}

void st_merge_close_side(st_merge_side *sd)
{
    mem_free(sd->buf, sd->cap * sd->spec->rec_size);
    mem_free(sd->ahead, sd->spec->rec_size);
}

static int emit(const st_sink *sink, const st_tagset *ts, uint64_t *ntags, uint64_t *nrecs,
                st_err *err)
{
    if (ts->n == 0)
        return 0;
    ++*ntags;
    *nrecs += ts->n;
    return sink->put ? sink->put(sink->self, ts, err) : 0;
}

/* Applies the policy's action to one key. old and add are the two sides'
 * tagsets for it (n == 0 where absent); o is the old side, whose buffer can
 * take the add's records when both go the same way. */
static int apply(const st_merge_spec *sp, st_merge_action act, st_merge_side *o,
                 const st_tagset *old, const st_tagset *add, st_merge_stats *st, st_err *err)
{
    const st_tagset *keep = old, *drop = add;
    switch (act) {
    case ST_MERGE_TAKE_ADD:
        keep = add, drop = old;
        /* fall through */
    case ST_MERGE_KEEP_OLD:
        if (keep->n == 0) /* one-sided: keep what there is */
            return emit(&sp->out, drop, &st->out_tagsets, &st->out_recs, err);
        if (emit(&sp->out, keep, &st->out_tagsets, &st->out_recs, err) < 0)
            return -1;
        return emit(&sp->discarded, drop, &st->discarded_tagsets, &st->discarded_recs, err);
    case ST_MERGE_COMBINE:
    case ST_MERGE_REMOVE: {
        st_tagset both = *add;
        if (old->n > 0) {
            if (st_merge_append(o, add->recs, add->n, err) < 0)
                return -1;
            both = (st_tagset){o->buf, o->n};
        }
        if (act == ST_MERGE_COMBINE)
            return emit(&sp->out, &both, &st->out_tagsets, &st->out_recs, err);
        return emit(&sp->removed, &both, &st->removed_tagsets, &st->removed_recs, err);
    }
    case ST_MERGE_FAIL:
        if (!err->msg[0])
            st_err_set(err, ST_EINPUT, "merge: the policy stopped the merge");
        return -1;
    }
    return st_err_set(err, ST_EINPUT, "merge: the policy returned an unknown action %d", (int)act);
}

int st_merge_key(const st_merge_spec *sp, st_merge_side *o, const st_tagset *old,
                 const st_tagset *add, st_merge_stats *st, st_err *err)
{
    st->old_tagsets += old->n > 0;
    st->old_recs += old->n;
    st->add_tagsets += add->n > 0;
    st->add_recs += add->n;
    st_merge_action act = sp->policy ? sp->policy(old, add, sp->policy_ctx, err) : ST_MERGE_COMBINE;
    return apply(sp, act, o, old, add, st, err);
}

int st_merge(const st_merge_spec *sp, st_merge_stats *stats, st_err *err)
{
    st_merge_stats st = {0};
    st_merge_side o, a;
    int rc = -1;
    if (sp->rec_size == 0 || !sp->keycmp)
        return st_err_set(err, ST_EINPUT, "merge: bad arguments (record size %zu)", sp->rec_size);
    err->msg[0] = '\0';
    memset(&a, 0, sizeof a);
    a.spec = sp;
    if (st_merge_open_side(&o, sp, &sp->old, "old", err) < 0 ||
        st_merge_open_side(&a, sp, &sp->add, "add", err) < 0)
        goto done;
    while (o.n || a.n) {
        int c = !o.n ? 1 : !a.n ? -1 : sp->keycmp(o.buf, a.buf, sp->key_ctx);
        st_tagset old = {o.buf, c <= 0 ? o.n : 0}, add = {a.buf, c >= 0 ? a.n : 0};
        if (st_merge_key(sp, &o, &old, &add, &st, err) < 0 ||
            (c <= 0 && st_merge_load(&o, err) < 0) || (c >= 0 && st_merge_load(&a, err) < 0))
            goto done;
    }
    rc = 0;
done:
    st_merge_close_side(&o);
    st_merge_close_side(&a);
    if (stats)
        *stats = st;
    return rc;
}
