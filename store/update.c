/* update: the partition update: old tags file + sorted adds -> tags.G and dels.G. */
#include "config.h"
#include "store/update.h"

#include <stdbool.h>
#include <string.h>

#include "store/mem.h"
#include "store/record.h"

void st_update_opts_default(st_update_opts *o)
{
    memset(o, 0, sizeof *o);
    o->mode = ST_UPDATE_COMBINE;
    st_write_opts_default(&o->write);
}

/* ---- schema text --------------------------------------------------------- */

/* Skips blanks, newlines and '#' comments. */
static const char *skip_space(const char *p, const char *end)
{
    while (p < end) {
        if (*p == '#')
            while (p < end && *p != '\n')
                p++;
        else if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        else
            break;
    }
    return p;
}

static void position(const char *text, const char *at, int *line, int *col)
{
    *line = *col = 1;
    for (const char *p = text; p < at; p++) {
        if (*p == '\n')
            ++*line, *col = 1;
        else
            ++*col;
    }
}

static int form_error(const char *text, const char *at, const char *what, st_err *err)
{
    int line, col;
    position(text, at, &line, &col);
    return st_err_set(err, ST_EINPUT, "%d:%d: %s", line, col, what);
}

static bool is_word(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

st_schema *st_update_schema(const char *text, size_t len, st_err *err)
{
    const char *end = text + len, *p = skip_space(text, end);
    if (end - p < 7 || memcmp(p, "schema", 6) != 0 || is_word(p[6]))
        return st_schema_parse(text, len, 1, 1, err);
    /* `schema NAME { fields }`: the fields are the canonical text. */
    const char *name = skip_space(p + 6, end), *q = name;
    while (q < end && is_word(*q))
        q++;
    const char *open = skip_space(q, end), *close = end;
    while (close > open && close[-1] != '}')
        close--;
    if (q == name || open == end || *open != '{') {
        form_error(text, q == name ? name : open, "expected `schema NAME {`", err);
        return NULL;
    }
    if (close <= open + 1 || skip_space(close, end) != end) {
        form_error(text, close > open + 1 ? skip_space(close, end) : end,
                   close > open + 1 ? "unexpected text after the schema's '}'"
                                    : "the schema's '{' has no matching '}'", err);
        return NULL;
    }
    int line, col;
    position(text, open + 1, &line, &col);
    return st_schema_parse(open + 1, (size_t)(close - 1 - (open + 1)), line, col, err);
}

st_schema *st_update_store_schema(const st_store *s, st_err *err)
{
    st_storeinfo info;
    st_store_info(s, &info);
    st_schema *sc = st_update_schema(info.schema, info.schema_len, err);
    if (!sc)
        st_err_prefix(err, "%s/STORE: schema: ", info.dir);
    return sc;
}

/* ---- output files ---------------------------------------------------------- */

/* A partition's new file of one kind, staged and created at its first tagset. */
struct out {
    st_txn *t;
    uint32_t vol, part;
    st_kind kind;
    const st_write_opts *wo;
    st_rec_out rec; /* its writer, once created */
};

/* Creates the file at its first tagset. */
static int out_open(struct out *o, st_err *err)
{
    const char *path;
    if (o->rec.w)
        return 0;
    if (st_store_stage(o->t, o->vol, o->part, o->kind, &path, err) < 0 ||
        !(o->rec.w = st_writer_create(path, o->rec.s, o->wo, err)))
        return -1;
    return 0;
}

/* An st_sink: one merged tagset (records sharing a key) into the file. */
static int out_put(void *self, const st_tagset *ts, st_err *err)
{
    struct out *o = self;
    return out_open(o, err) < 0 ? -1 : st_rec_put(&o->rec, ts, err);
}

/* Completes the file (a tags file with its range of the partition key, pk,
 * for the commit); if nothing was written, drops the partition's current one. */
static int out_finish(struct out *o, const st_store *s, const st_field *pk, st_err *err)
{
    if (o->rec.w) {
        st_writer *w = o->rec.w;
        st_zone z;
        o->rec.w = NULL;
        if (o->kind != ST_TAGS)
            return st_writer_commit(w, err);
        if (st_writer_commit_zone(w, (uint32_t)(pk - o->rec.s->fields), &z, err) < 0)
            return -1;
        return st_store_stage_keys(o->t, o->vol, o->part, &z, err);
    }
    st_file f;
    int has = st_store_file(s, o->vol, o->part, o->kind, &f, err);
    if (has <= 0)
        return has;
    return st_store_drop(o->t, o->vol, o->part, o->kind, err);
}

/* Tagsets [t0, t1) of an old file's batch, copied whole into the file. */
static int out_batch(struct out *o, const st_batch *b, uint32_t t0, uint32_t t1, st_err *err)
{
    if (out_open(o, err) < 0 || st_writer_append_batch(o->rec.w, b, t0, t1, err) < 0)
        return -1;
    o->rec.ntagsets += t1 - t0;
    o->rec.ntags += o->rec.s->tag_size ? b->tag_start[t1] - b->tag_start[t0] : 0;
    return 0;
}

static void out_free(struct out *o)
{
    st_writer_abort(o->rec.w);
    st_rec_out_free(&o->rec);
}

/* ---- the policy -------------------------------------------------------------- */

struct policy {
    const st_schema *s;
    size_t rs;
    st_update_mode mode;
    const st_field *age; /* NULL: no age-off */
    int64_t cutoff;
    const unsigned char *rm; /* remove keys, ascending */
    size_t nrm, next;        /* keys below rm[next] are behind the merge */
};

static int policy_init(struct policy *p, const st_schema *s, const st_update_opts *o, st_err *err)
{
    *p = (struct policy){.s = s, .rs = st_rec_size(s), .mode = o->mode, .cutoff = o->age_cutoff,
                         .rm = o->remove_keys, .nrm = o->remove_keys ? o->nremove : 0};
    if ((unsigned)o->mode > ST_UPDATE_REPLACE)
        return st_err_set(err, ST_EINPUT, "update: unknown mode %d", (int)o->mode);
    for (size_t i = 1; i < p->nrm; i++)
        if (st_schema_key_cmp(s, p->rm + (i - 1) * s->key_size, p->rm + i * s->key_size) > 0)
            return st_err_set(err, ST_EINPUT, "update: remove key %zu sorts before the one above it",
                              i);
    if (!o->age_field)
        return 0;
    int i = st_schema_find(s, o->age_field, strlen(o->age_field));
    if (i < 0 || (uint32_t)i >= s->nrow)
        return st_err_set(err, ST_EINPUT, "update: age-off field '%s' is not a key or tagset field",
                          o->age_field);
    p->age = &s->fields[i];
    if (p->age->type > ST_I64 && p->age->type != ST_TIME)
        return st_err_set(err, ST_EINPUT, "update: age-off field '%s' is not a time or an integer",
                          o->age_field);
    return 0;
}

static bool in_remove_set(struct policy *p, const void *key)
{
    size_t ks = p->s->key_size;
    for (; p->next < p->nrm; p->next++) {
        int c = st_schema_key_cmp(p->s, p->rm + p->next * ks, key);
        if (c >= 0)
            return c == 0;
    }
    return false;
}

/* v < cutoff for an integer or time value (little-endian, as the store keeps it). */
static bool below(const st_field *f, const unsigned char *v, int64_t cutoff)
{
    uint64_t u = 0;
    memcpy(&u, v, f->width);
    if (f->type >= ST_U8 && f->type <= ST_U64)
        return cutoff > 0 && u < (uint64_t)cutoff;
    unsigned shift = 64 - 8 * f->width; /* sign-extend */
    return (int64_t)(u << shift) >> shift < cutoff;
}

/* Whether the policy removes the tagset of key, whose age-off field's value
 * is at age (read only when the policy ages off). */
static bool removes(struct policy *p, const void *key, const unsigned char *age)
{
    return (p->nrm && in_remove_set(p, key)) || (p->age && below(p->age, age, p->cutoff));
}

static st_merge_action decide(const st_tagset *old, const st_tagset *add, void *ctx, st_err *err)
{
    (void)err;
    struct policy *p = ctx;
    const st_tagset *last = add->n ? add : old; /* its last record has the tagset fields */
    const unsigned char *rec = last->recs + (last->n - 1) * p->rs;
    if (removes(p, last->recs, p->age ? rec + p->age->offset : NULL))
        return ST_MERGE_REMOVE;
    return p->mode == ST_UPDATE_REPLACE ? ST_MERGE_TAKE_ADD : ST_MERGE_COMBINE;
}

/* Whether the policy keeps old tagset t of a batch (key: its key) that no
 * add touches, as decide would say for it. */
static bool keeps(struct policy *p, const st_batch *b, uint32_t t, const unsigned char *key)
{
    static const unsigned char zero[8]; /* an undecoded column reads as zeros */
    const unsigned char *col = p->age ? b->cols[p->age - p->s->fields] : NULL;
    return !removes(p, key, !p->age ? NULL : col ? col + (size_t)t * p->age->width : zero);
}

/* ---- the add stream, checked ------------------------------------------------- */

struct adds {
    st_source in;
    const st_store *store;
    const st_schema *s;
    const st_field *pk; /* the partition key */
    uint32_t vol, part;
    uint64_t n;
};

static int no_records(void *self, const void **rec, st_err *err)
{
    (void)self, (void)rec, (void)err;
    return 0;
}

/* Passes the adds on, refusing bad values and records of other partitions. */
static int adds_next(void *self, const void **rec, st_err *err)
{
    struct adds *a = self;
    int rc = a->in.next(a->in.self, rec, err);
    if (rc <= 0)
        return rc;
    a->n++;
    const unsigned char *p = *rec;
    uint32_t v, part;
    if (st_rec_check(a->s, p, err) < 0)
        goto bad;
    st_store_place(a->store, p + a->pk->offset, a->pk->width, &v, &part);
    if (v != a->vol || part != a->part) {
        st_err_set(err, ST_EINPUT, "it belongs in volume %u partition %u, not %u/%u", v, part,
                   a->vol, a->part);
        goto bad;
    }
    return 1;
bad:
    st_err_prefix(err, "%s: record %llu: ", a->in.name ? a->in.name : "adds",
                  (unsigned long long)a->n);
    return -1;
}

/* The policy for o, and the partition key (when pk is not NULL). */
static int setup(const st_store *s, const st_schema *schema, const st_update_opts *o,
                 struct policy *pol, const st_field **pk, st_err *err)
{
    if (policy_init(pol, schema, o, err) < 0)
        return -1;
    st_storeinfo info;
    st_store_info(s, &info);
    int i = st_schema_find(schema, info.partkey, strlen(info.partkey));
    if (i < 0 || (uint32_t)i >= schema->nkeys)
        return st_err_set(err, ST_EINPUT, "%s: the partition key '%s' is not a key field of the "
                          "schema", info.dir, info.partkey);
    if (pk)
        *pk = &schema->fields[i];
    return 0;
}

int st_update_check(const st_store *s, const st_schema *schema, const st_update_opts *o,
                    const st_field **pk, st_err *err)
{
    struct policy pol;
    return setup(s, schema, o, &pol, pk, err);
}

/* ---- the merge, untouched tagsets on columns ------------------------------------ */

/* st_merge's result, but the old tagsets that no add touches and the policy
 * keeps go from the decoded block to the new one column by column, runs at
 * a time, without becoming records; the others merge as records. An old
 * tagset whose key the next one shares is one tagset in the merge, so it
 * goes as records too. */
struct cmerge {
    const st_schema *s;
    const st_merge_spec *sp; /* its old source reads cm->old */
    struct policy *pol;      /* NULL: every old tagset kept (the split) */
    st_rec_reader *old;      /* NULL: no old file */
    struct out *out;
    st_merge_side a, o;      /* the adds; old records being merged */
    unsigned char *key, *next, *prev; /* an old tagset's key, the one after, the last read */
    bool has_prev;
    uint64_t opos; /* old records read, for messages */
    st_merge_stats st;
};

/* The old tagsets of b from t on (cm->key: t's key) that can be copied
 * whole: before the next add's key and before the next tagset's, kept by
 * the policy; the last of a block is never one (the next key is unread).
 * *end is the first that cannot, *nrecs the run's records. */
static int run_of(struct cmerge *cm, const st_batch *b, uint32_t t, uint32_t *end,
                  uint64_t *nrecs, st_err *err)
{
    const st_schema *s = cm->s;
    uint64_t recs = 0;
    for (; t + 1 < b->ntagsets; t++) {
        if ((cm->a.n && st_schema_key_cmp(s, cm->key, cm->a.buf) >= 0) ||
            (cm->pol && !keeps(cm->pol, b, t, cm->key)))
            break;
        st_batch_key(s, b, t + 1, cm->next);
        int c = st_schema_key_cmp(s, cm->key, cm->next);
        if (c > 0)
            return st_merge_disorder(cm->sp->old.name, cm->opos + recs + st_rec_count(s, b, t) + 1,
                                     err);
        if (c == 0)
            break;
        recs += st_rec_count(s, b, t);
        unsigned char *k = cm->key;
        cm->key = cm->next, cm->next = k;
    }
    *end = t;
    *nrecs = recs;
    return 0;
}

/* Reads old tagset t of b, and those after it with its key, as records into cm->o. */
static int gather(struct cmerge *cm, const st_batch *b, uint32_t t, st_err *err)
{
    const st_source *src = &cm->sp->old;
    cm->o.n = 0;
    memcpy(cm->prev, cm->key, cm->s->key_size);
    cm->has_prev = true;
    for (;;) {
        for (uint32_t i = 0, n = st_rec_count(cm->s, b, t); i < n; i++) {
            const void *rec;
            int rc = src->next(src->self, &rec, err);
            if (rc == 0)
                return st_err_set(err, ST_EINPUT, "%s: its last tagset ends early", src->name);
            if (rc < 0 || st_merge_append(&cm->o, rec, 1, err) < 0)
                return -1;
            cm->opos++;
        }
        int has = st_rec_at(cm->old, &b, &t, err);
        if (has <= 0)
            return has;
        st_batch_key(cm->s, b, t, cm->next);
        int c = st_schema_key_cmp(cm->s, cm->prev, cm->next);
        if (c > 0)
            return st_merge_disorder(src->name, cm->opos + 1, err);
        if (c < 0)
            return 0;
    }
}

/* One step: a run of old tagsets copied, or one key merged as records. 1, 0 at the end. */
static int cmerge_step(struct cmerge *cm, st_err *err)
{
    const st_schema *s = cm->s;
    const st_batch *b = NULL;
    uint32_t t = 0;
    int has = cm->old ? st_rec_at(cm->old, &b, &t, err) : 0;
    if (has < 0 || (!has && !cm->a.n))
        return has;
    if (has) {
        st_batch_key(s, b, t, cm->key);
        if (cm->has_prev && st_schema_key_cmp(s, cm->prev, cm->key) > 0)
            return st_merge_disorder(cm->sp->old.name, cm->opos + 1, err);
    }
    int c = !has ? 1 : !cm->a.n ? -1 : st_schema_key_cmp(s, cm->key, cm->a.buf);
    uint32_t end = t;
    uint64_t recs = 0;
    if (c < 0 && run_of(cm, b, t, &end, &recs, err) < 0)
        return -1;
    if (end > t) {
        if (out_batch(cm->out, b, t, end, err) < 0)
            return -1;
        st_rec_skip(cm->old, end - t);
        st_batch_key(s, b, end - 1, cm->prev);
        cm->has_prev = true;
        cm->opos += recs;
        cm->st.old_tagsets += end - t;
        cm->st.out_tagsets += end - t;
        cm->st.old_recs += recs;
        cm->st.out_recs += recs;
        return 1;
    }
    if (c <= 0 && gather(cm, b, t, err) < 0)
        return -1;
    st_tagset old = {cm->o.buf, c <= 0 ? cm->o.n : 0}, add = {cm->a.buf, c >= 0 ? cm->a.n : 0};
    if (st_merge_key(cm->sp, &cm->o, &old, &add, &cm->st, err) < 0 ||
        (c >= 0 && st_merge_load(&cm->a, err) < 0))
        return -1;
    return 1;
}

static int cmerge(const st_merge_spec *sp, const st_schema *s, struct policy *pol,
                  st_rec_reader *old, struct out *out, st_merge_stats *stats, st_err *err)
{
    struct cmerge cm = {.s = s, .sp = sp, .pol = pol, .old = old, .out = out,
                        .a = {.spec = sp}, .o = {.spec = sp}};
    int rc = -1;
    err->msg[0] = '\0'; /* the policy's failure is told by it */
    unsigned char *keys = mem_alloc(3 * (size_t)s->key_size);
    if (!keys) {
        st_err_nomem(err, "merge: keys");
        goto done;
    }
    cm.key = keys, cm.next = keys + s->key_size, cm.prev = keys + 2 * s->key_size;
    if (st_merge_open_side(&cm.a, sp, &sp->add, "add", err) < 0)
        goto done;
    while ((rc = cmerge_step(&cm, err)) > 0)
        ;
done:
    st_merge_close_side(&cm.a);
    st_merge_close_side(&cm.o);
    mem_free(keys, 3 * (size_t)s->key_size);
    *stats = cm.st;
    return rc;
}

/* ---- the update ---------------------------------------------------------------- */

static void add_stats(st_update_stats *st, const st_merge_stats *m, const struct out *tags,
                      const struct out *dels)
{
    st->partitions++;
    st->old_tagsets += m->old_tagsets;
    st->add_tagsets += m->add_tagsets;
    st->out_tagsets += tags->rec.ntagsets;
    st->out_tags += tags->rec.ntags;
    st->removed_tagsets += dels->rec.ntagsets;
    st->removed_tags += dels->rec.ntags;
    st->replaced_tagsets += m->discarded_tagsets;
}

/* Merges adds into the partition's file of kind target: its tags (the
 * update), or its adds file (the split step: plain combine, no dels). */
static int update(st_txn *t, const st_store *s, const st_schema *schema, uint32_t vol,
                  uint32_t part, st_kind target, const st_source *adds, const st_update_opts *o,
                  st_update_stats *stats, st_err *err)
{
    st_update_opts dflt;
    if (!o) {
        st_update_opts_default(&dflt);
        o = &dflt;
    }
    struct policy pol;
    struct adds chk = {.in = {no_records, NULL, NULL}, .store = s, .s = schema, .vol = vol,
                       .part = part};
    if (setup(s, schema, o, &pol, &chk.pk, err) < 0)
        return -1;
    /* Every record written is checked once: the adds by adds_next, the old
     * ones when their file was written (its blocks are checksummed). */
    st_write_opts wo = o->write, side;
    wo.checked = true;
    side = wo;  /* the dels and adds files: queries read no projection of them */
    side.no_projection = true;
    struct out tags = {t, vol, part, target, target == ST_TAGS ? &wo : &side, {.s = schema}};
    struct out dels = {t, vol, part, ST_DELS, &side, {.s = schema}};
    st_rec_reader *old = NULL, *addf = NULL;
    st_source oldsrc = {no_records, NULL, NULL};
    st_file f;
    int rc = -1, has = st_store_file(s, vol, part, target, &f, err);
    if (has < 0 || (has && !(old = st_rec_open(f.path, schema, &o->write.io, err))))
        goto done;
    if (old)
        oldsrc = st_rec_source(old);
    if (adds) {
        chk.in = *adds;
    } else if (target == ST_TAGS) {
        has = st_store_file(s, vol, part, ST_ADDS, &f, err);
        if (has < 0 || (has && !(addf = st_rec_open(f.path, schema, &o->write.io, err))))
            goto done;
        if (addf)
            chk.in = st_rec_source(addf);
    }
    st_merge_spec spec = {
        .rec_size = st_rec_size(schema),
        .keycmp = st_rec_cmp,
        .key_ctx = (void *)schema,
        .old = oldsrc,
        .add = {adds_next, &chk, chk.in.name},
        .policy = target == ST_TAGS ? decide : NULL, /* NULL: combine everything */
        .policy_ctx = &pol,
        .out = {out_put, &tags},
        .removed = {out_put, &dels},
    };
    st_merge_stats ms;
    if (cmerge(&spec, schema, target == ST_TAGS ? &pol : NULL, old, &tags, &ms, err) < 0 ||
        out_finish(&tags, s, chk.pk, err) < 0 ||
        (target == ST_TAGS && out_finish(&dels, s, chk.pk, err) < 0) ||
        (addf && st_store_drop(t, vol, part, ST_ADDS, err) < 0))
        goto done;
    if (stats)
        add_stats(stats, &ms, &tags, &dels);
    rc = 0;
done:
    out_free(&tags);
    out_free(&dels);
    st_rec_close(old);
    st_rec_close(addf);
    return rc;
}

int st_update_partition(st_txn *t, const st_store *s, const st_schema *schema, uint32_t vol,
                        uint32_t part, const st_source *adds, const st_update_opts *o,
                        st_update_stats *stats, st_err *err)
{
    return update(t, s, schema, vol, part, ST_TAGS, adds, o, stats, err);
}

int st_update_adds(st_txn *t, const st_store *s, const st_schema *schema, uint32_t vol,
                   uint32_t part, const st_source *adds, const st_update_opts *o,
                   st_update_stats *stats, st_err *err)
{
    if (!adds)
        return st_err_set(err, ST_EINPUT, "update: st_update_adds needs an add stream");
    return update(t, s, schema, vol, part, ST_ADDS, adds, o, stats, err);
}
