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

/* An st_sink: one merged tagset (records sharing a key) into the file. */
static int out_put(void *self, const st_tagset *ts, st_err *err)
{
    struct out *o = self;
    if (!o->rec.w) {
        const char *path;
        if (st_store_stage(o->t, o->vol, o->part, o->kind, &path, err) < 0 ||
            !(o->rec.w = st_writer_create(path, o->rec.s, o->wo, err)))
            return -1;
    }
    return st_rec_put(&o->rec, ts, err);
}

/* Completes the file; if nothing was written, drops the partition's current one. */
static int out_finish(struct out *o, const st_store *s, st_err *err)
{
    if (o->rec.w) {
        st_writer *w = o->rec.w;
        o->rec.w = NULL;
        return st_writer_commit(w, err);
    }
    st_file f;
    int has = st_store_file(s, o->vol, o->part, o->kind, &f, err);
    if (has <= 0)
        return has;
    return st_store_drop(o->t, o->vol, o->part, o->kind, err);
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

static st_merge_action decide(const st_tagset *old, const st_tagset *add, void *ctx, st_err *err)
{
    (void)err;
    struct policy *p = ctx;
    const st_tagset *last = add->n ? add : old; /* its last record has the tagset fields */
    if (p->nrm && in_remove_set(p, last->recs))
        return ST_MERGE_REMOVE;
    if (p->age && below(p->age, last->recs + (last->n - 1) * p->rs + p->age->offset, p->cutoff))
        return ST_MERGE_REMOVE;
    return p->mode == ST_UPDATE_REPLACE ? ST_MERGE_TAKE_ADD : ST_MERGE_COMBINE;
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
    st_write_opts wo = o->write;
    wo.checked = true;
    struct out tags = {t, vol, part, target, &wo, {.s = schema}};
    struct out dels = {t, vol, part, ST_DELS, &wo, {.s = schema}};
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
    if (st_merge(&spec, &ms, err) < 0 || out_finish(&tags, s, err) < 0 ||
        (target == ST_TAGS && out_finish(&dels, s, err) < 0) ||
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
