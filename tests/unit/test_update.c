/* test_update: partition updates and loads on real stores, against a model:
 * combine, replace, age-off and remove sets; the dels file holds exactly the
 * removed tagsets; the loader places every tagset where st_store_place says
 * and loses none; failures at any I/O or allocation leave the previous
 * generation current and whole; records and schema forms. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/datastore.h"
#include "store/load.h"
#include "store/mem.h"
#include "store/record.h"
#include "store/sysio.h"
#include "store/update.h"
#include "tests/unit/tmpdir.h"

static const char schema_text[] =
    "schema calls {\n"
    "  key k: u32\n"
    "  key ts: time\n"
    "  tagset state: enum(open, billed, closed)\n"
    "  tag v: u32\n"
    "  tag name: char[6]\n"
    "}\n";

#define MAXT 12 /* tags per model tagset */

/* A model tagset: its row and tags, in the schema's layout. */
typedef struct mts {
    unsigned char row[32];
    unsigned ntags;
    unsigned char tags[2 * MAXT][16];
} mts;

typedef struct model {
    mts *v;
    size_t n, cap;
} model;

static char tmp[PATH_MAX], dir[PATH_MAX + 16];
static st_schema *S;
static uint32_t off_k, off_ts, off_state, off_v, off_name;
static uint64_t rng = 12345;

static uint64_t rnd(uint64_t n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (rng >> 33) % n;
}

static uint32_t field_off(const char *name)
{
    int i = st_schema_find(S, name, strlen(name));
    assert_true(i >= 0);
    return S->fields[i].offset;
}

static void make_store(uint32_t vols, uint32_t parts)
{
    snprintf(dir, sizeof dir, "%s/store", tmp);
    st_store_meta m = {.name = "calls", .partkey = "k", .volumes = vols, .partitions = parts,
                       .schema = schema_text, .schema_len = strlen(schema_text)};
    st_err err;
    if (st_store_create(dir, &m, &err) < 0)
        fail_msg("%s", err.msg);
}

static int setup(void **state)
{
    (void)state;
    tmp_make("update", tmp);
    st_err err;
    S = st_update_schema(schema_text, strlen(schema_text), &err);
    if (!S)
        fail_msg("%s", err.msg);
    off_k = field_off("k"), off_ts = field_off("ts"), off_state = field_off("state");
    off_v = field_off("v"), off_name = field_off("name");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    st_schema_free(S);
    tmp_reset(tmp);
    assert_int_equal(mem_in_use(), 0);
    return 0;
}

/* ---- the model ------------------------------------------------------------- */

static mts *model_push(model *m)
{
    if (m->n == m->cap) {
        size_t ncap = m->cap ? 2 * m->cap : 64;
        m->v = mem_realloc(m->v, m->cap * sizeof *m->v, ncap * sizeof *m->v);
        assert_non_null(m->v);
        m->cap = ncap;
    }
    mts *t = &m->v[m->n++];
    memset(t, 0, sizeof *t);
    return t;
}

static void model_free(model *m)
{
    mem_free(m->v, m->cap * sizeof *m->v);
    *m = (model){0};
}

static void set_key(mts *t, uint32_t k, int64_t ts)
{
    memcpy(t->row + off_k, &k, 4);
    memcpy(t->row + off_ts, &ts, 8);
}

static void add_tag(mts *t, uint32_t v)
{
    assert_true(t->ntags < 2 * MAXT);
    unsigned char *tag = t->tags[t->ntags++];
    memcpy(tag + off_v, &v, 4);
    snprintf((char *)tag + off_name, 6, "t%u", v % 10000);
}

static int64_t ts_of(const mts *t)
{
    int64_t ts;
    memcpy(&ts, t->row + off_ts, 8);
    return ts;
}

/* n tagsets with distinct keys drawn from k < nk, ts in {0, 1000, .. 9000}, 0..maxt tags. */
static void random_tagsets(model *m, size_t n, uint32_t nk, unsigned maxt)
{
    for (size_t i = 0; i < n; i++) {
        mts t;
        memset(&t, 0, sizeof t);
        for (int fresh = 0; !fresh;) {
            set_key(&t, (uint32_t)rnd(nk), (int64_t)rnd(10) * 1000);
            fresh = 1;
            for (size_t j = 0; j < m->n && fresh; j++)
                fresh = st_schema_key_cmp(S, m->v[j].row, t.row) != 0;
        }
        t.row[off_state] = (unsigned char)rnd(3);
        unsigned nt = (unsigned)rnd(maxt + 1);
        for (unsigned j = 0; j < nt; j++)
            add_tag(&t, (uint32_t)rnd(1000000));
        *model_push(m) = t;
    }
}

static mts *model_find(model *m, const void *row)
{
    for (size_t i = 0; i < m->n; i++)
        if (st_schema_key_cmp(S, m->v[i].row, row) == 0)
            return &m->v[i];
    return NULL;
}

static int cmp_mts(const void *a, const void *b)
{
    return st_schema_key_cmp(S, ((const mts *)a)->row, ((const mts *)b)->row);
}

static void sort_model(model *m)
{
    if (m->n > 1) /* an empty model has no array: qsort must not see NULL */
        qsort(m->v, m->n, sizeof *m->v, cmp_mts);
}

static void assert_same(model *want, model *got)
{
    sort_model(want);
    sort_model(got);
    assert_int_equal(got->n, want->n);
    for (size_t i = 0; i < want->n; i++) {
        assert_memory_equal(got->v[i].row, want->v[i].row, S->row_size);
        assert_int_equal(got->v[i].ntags, want->v[i].ntags);
        for (unsigned j = 0; j < want->v[i].ntags; j++)
            assert_memory_equal(got->v[i].tags[j], want->v[i].tags[j], S->tag_size);
    }
}

/* ---- reading the store back ---------------------------------------------------- */

/* Appends the tagsets of a file to m (checking their placement when s is given). */
static void read_file(const char *path, const st_store *s, uint32_t vol, uint32_t part, model *m)
{
    st_err err;
    st_rec_reader *r = st_rec_open(path, S, NULL, &err);
    if (!r)
        fail_msg("%s", err.msg);
    st_source src = st_rec_source(r);
    const void *rec;
    mts *cur = NULL;
    int rc;
    while ((rc = src.next(src.self, &rec, &err)) == 1) {
        if (!cur || st_schema_key_cmp(S, cur->row, rec) != 0) {
            if (cur)
                assert_true(st_schema_key_cmp(S, cur->row, rec) < 0);
            cur = model_push(m);
            memcpy(cur->row, rec, S->row_size);
            if (s) {
                uint32_t v, p;
                st_store_place(s, (const unsigned char *)rec + off_k, 4, &v, &p);
                assert_int_equal(v, vol);
                assert_int_equal(p, part);
            }
        }
        const void *tag = st_rec_tag(S, rec);
        if (tag) {
            assert_true(cur->ntags < 2 * MAXT);
            memcpy(cur->tags[cur->ntags++], tag, S->tag_size);
        }
    }
    assert_int_equal(rc, 0);
    st_rec_close(r);
}

/* Every tagset of one kind in the store, placement checked. */
static uint64_t read_store(st_kind kind, model *m)
{
    st_err err;
    st_store *s = st_store_open(dir, &err);
    assert_non_null(s);
    st_storeinfo in;
    st_store_info(s, &in);
    for (uint32_t v = 0; v < in.volumes; v++)
        for (uint32_t p = 0; p < in.partitions; p++) {
            st_file f;
            if (st_store_file(s, v, p, kind, &f, &err) == 1)
                read_file(f.path, s, v, p, m);
        }
    uint64_t gen = in.generation;
    st_store_close(s);
    return gen;
}

static void assert_store(st_kind kind, model *want)
{
    model got = {0};
    read_store(kind, &got);
    assert_same(want, &got);
    model_free(&got);
}

/* ---- loading ------------------------------------------------------------------------ */

/* Loads the tagsets of m, their records interleaved at random (each
 * tagset's own records in order; a tagset without tags as a marker). */
static int load(const model *m, const st_load_opts *o, st_update_stats *st, st_err *err)
{
    size_t nrec = 0;
    for (size_t i = 0; i < m->n; i++)
        nrec += m->v[i].ntags ? m->v[i].ntags : 1;
    size_t *order = mem_alloc(nrec * sizeof *order + 1), *next = mem_calloc(m->n + 1, sizeof *next);
    st_store *s = order && next ? st_store_open(dir, err) : NULL;
    st_load *l = s ? st_load_new(s, o, err) : NULL;
    if (!l) {
        if (!order || !next)
            st_err_nomem(err, "test");
        mem_free(order, nrec * sizeof *order + 1);
        mem_free(next, (m->n + 1) * sizeof *next);
        st_store_close(s);
        return -1;
    }
    size_t r = 0;
    for (size_t i = 0; i < m->n; i++)
        for (unsigned j = 0; j < (m->v[i].ntags ? m->v[i].ntags : 1); j++)
            order[r++] = i;
    for (size_t i = nrec; i > 1; i--) {
        size_t j = (size_t)rnd(i), x = order[i - 1];
        order[i - 1] = order[j];
        order[j] = x;
    }
    int rc = 0;
    for (size_t i = 0; i < nrec && rc == 0; i++) {
        const mts *t = &m->v[order[i]];
        rc = st_load_add(l, t->row, t->ntags ? t->tags[next[order[i]]++] : NULL, err);
    }
    mem_free(order, nrec * sizeof *order + 1);
    mem_free(next, (m->n + 1) * sizeof *next);
    if (rc == 0)
        rc = st_load_commit(l, st, err);
    else
        st_load_free(l);
    st_store_close(s);
    return rc;
}

static void load_ok(const model *m, const st_load_opts *o, st_update_stats *st)
{
    st_err err;
    if (load(m, o, st, &err) != 0)
        fail_msg("%s", err.msg);
}

/* A new store of vols x parts loaded with nold random tagsets (old), and
 * nadd more (adds) over the same keys, not loaded yet. */
static void old_and_adds(uint32_t vols, uint32_t parts, size_t nold, size_t nadd, uint32_t nk,
                         unsigned maxt, model *old, model *adds)
{
    make_store(vols, parts);
    random_tagsets(old, nold, nk, maxt);
    load_ok(old, NULL, NULL);
    random_tagsets(adds, nadd, nk, maxt);
}

static st_load_opts small_parcels(void)
{
    st_load_opts o;
    st_load_opts_default(&o);
    o.sort.parcel_bytes = 64 << 10; /* spill runs even for small loads */
    o.update.write.block_size = 4096;
    return o;
}

/* The model after combining adds into old (COMBINE): tags appended, row from the add. */
static void model_combine(model *old, const model *adds)
{
    for (size_t i = 0; i < adds->n; i++) {
        const mts *a = &adds->v[i];
        mts *t = model_find(old, a->row);
        if (!t) {
            *model_push(old) = *a;
            continue;
        }
        memcpy(t->row, a->row, S->row_size);
        for (unsigned j = 0; j < a->ntags; j++)
            memcpy(t->tags[t->ntags++], a->tags[j], S->tag_size);
    }
}

/* ---- tests ------------------------------------------------------------------------- */

/* The loader places every tagset where st_store_place says and the union of
 * the partitions is the input, through sort runs and many small blocks. */
static void load_places_every_tagset(void **state)
{
    (void)state;
    make_store(2, 3);
    model in = {0};
    random_tagsets(&in, 1500, 400, MAXT);
    st_load_opts o = small_parcels();
    o.update.write.label = "first load";
    st_update_stats st;
    load_ok(&in, &o, &st);
    assert_int_equal(st.out_tagsets, in.n);
    assert_int_equal(st.partitions, 6);
    assert_int_equal(st.removed_tagsets + st.replaced_tagsets + st.old_tagsets, 0);
    assert_store(ST_TAGS, &in);
    st_store *s = st_store_open(dir, &(st_err){0});
    st_storeinfo info;
    st_store_info(s, &info);
    assert_int_equal(info.generation, 1);
    assert_string_equal(info.label, "first load");
    assert_int_equal(info.files[ST_TAGS], 6);
    assert_int_equal(info.files[ST_DELS], 0);
    st_store_close(s);
    model_free(&in);
}

/* A second load combines: old tags, then the add's; the add's tagset fields. */
static void combine_appends_tags(void **state)
{
    (void)state;
    model old = {0}, adds = {0};
    old_and_adds(1, 4, 600, 400, 300, 5, &old, &adds); /* many keys shared */
    st_update_stats st;
    load_ok(&adds, NULL, &st);
    size_t shared = 0;
    for (size_t i = 0; i < adds.n; i++)
        shared += model_find(&old, adds.v[i].row) != NULL;
    assert_true(shared > 50);
    model_combine(&old, &adds);
    assert_store(ST_TAGS, &old);
    assert_int_equal(st.out_tagsets, old.n);
    assert_int_equal(st.add_tagsets, adds.n);
    assert_int_equal(st.removed_tagsets, 0);
    model none = {0};
    assert_store(ST_DELS, &none); /* nothing removed: no dels file */
    model_free(&old);
    model_free(&adds);
}

/* REPLACE: an add tagset supersedes the old one with its key. */
static void replace_supersedes(void **state)
{
    (void)state;
    model old = {0}, adds = {0};
    old_and_adds(1, 2, 300, 200, 150, 4, &old, &adds);
    st_load_opts o;
    st_load_opts_default(&o);
    o.update.mode = ST_UPDATE_REPLACE;
    st_update_stats st;
    load_ok(&adds, &o, &st);
    size_t shared = 0;
    for (size_t i = 0; i < adds.n; i++) {
        mts *t = model_find(&old, adds.v[i].row);
        shared += t != NULL;
        if (t)
            *t = adds.v[i];
        else
            *model_push(&old) = adds.v[i];
    }
    assert_int_equal(st.replaced_tagsets, shared);
    assert_store(ST_TAGS, &old);
    model none = {0};
    assert_store(ST_DELS, &none);
    model_free(&old);
    model_free(&adds);
}

/* Age-off removes exactly the tagsets below the cutoff (after combining) into
 * dels; the next update that removes nothing drops that dels file. */
static void age_off_fills_dels_exactly(void **state)
{
    (void)state;
    model old = {0}, adds = {0}, keep = {0}, gone = {0};
    old_and_adds(2, 2, 500, 100, 200, 4, &old, &adds);
    model_combine(&old, &adds);
    for (size_t i = 0; i < old.n; i++)
        *model_push(ts_of(&old.v[i]) < 4000 ? &gone : &keep) = old.v[i];
    st_load_opts o;
    st_load_opts_default(&o);
    o.update.age_field = "ts";
    o.update.age_cutoff = 4000;
    st_update_stats st;
    load_ok(&adds, &o, &st);
    assert_true(gone.n > 50);
    assert_int_equal(st.removed_tagsets, gone.n);
    assert_int_equal(st.partitions, 4); /* age-off visits every partition */
    assert_store(ST_TAGS, &keep);
    assert_store(ST_DELS, &gone);
    /* A load that removes nothing leaves no dels: they belong to the last update. */
    model more = {0};
    mts *t = model_push(&more);
    set_key(t, 7, 9000);
    add_tag(t, 1);
    st_store *s = st_store_open(dir, &(st_err){0});
    uint32_t v, p;
    st_store_place(s, t->row + off_k, 4, &v, &p);
    st_store_close(s);
    load_ok(&more, NULL, NULL);
    model dels = {0};
    read_store(ST_DELS, &dels);
    for (size_t i = 0; i < dels.n; i++) { /* only the touched partition lost its dels */
        uint32_t v2, p2;
        s = st_store_open(dir, &(st_err){0});
        st_store_place(s, dels.v[i].row + off_k, 4, &v2, &p2);
        st_store_close(s);
        assert_false(v2 == v && p2 == p);
    }
    model_free(&dels);
    model_free(&old), model_free(&adds), model_free(&keep), model_free(&gone);
    model_free(&more);
}

/* A remove set takes exactly its keys (with whatever the adds bring) to dels. */
static void remove_set_takes_its_keys(void **state)
{
    (void)state;
    make_store(1, 3);
    model old = {0}, gone = {0}, keep = {0};
    random_tagsets(&old, 400, 300, 3);
    load_ok(&old, NULL, NULL);
    sort_model(&old);
    unsigned char *keys = mem_alloc(old.n * S->key_size);
    size_t nk = 0;
    for (size_t i = 0; i < old.n; i++) {
        if (i % 3 == 0)
            memcpy(keys + nk++ * S->key_size, old.v[i].row, S->key_size);
        *model_push(i % 3 == 0 ? &gone : &keep) = old.v[i];
    }
    st_load_opts o;
    st_load_opts_default(&o);
    o.update.remove_keys = keys;
    o.update.nremove = nk;
    model empty = {0};
    st_update_stats st;
    load_ok(&empty, &o, &st);
    assert_int_equal(st.removed_tagsets, nk);
    assert_store(ST_TAGS, &keep);
    assert_store(ST_DELS, &gone);
    /* Keys out of order are refused before anything is read. */
    memcpy(keys, keys + S->key_size, S->key_size);
    memcpy(keys + S->key_size, gone.v[0].row, S->key_size);
    st_err err;
    assert_int_equal(load(&empty, &o, NULL, &err), -1);
    assert_int_equal(err.code, ST_EINPUT);
    assert_non_null(strstr(err.msg, "remove key 1"));
    mem_free(keys, old.n * S->key_size);
    model_free(&old), model_free(&gone), model_free(&keep);
}

/* Records with equal keys: tags in the order added, tagset fields of the last. */
static void last_record_gives_the_tagset_fields(void **state)
{
    (void)state;
    make_store(1, 1);
    st_err err;
    st_store *s = st_store_open(dir, &err);
    st_load *l = st_load_new(s, NULL, &err);
    assert_non_null(l);
    mts a = {0}, b = {0};
    set_key(&a, 5, 100);
    set_key(&b, 5, 100);
    a.row[off_state] = 0;
    b.row[off_state] = 2;
    add_tag(&a, 1);
    add_tag(&a, 2);
    assert_int_equal(st_load_add(l, a.row, a.tags[0], &err), 0);
    assert_int_equal(st_load_add(l, b.row, NULL, &err), 0); /* a marker: new state only */
    assert_int_equal(st_load_add(l, a.row, a.tags[1], &err), 0);
    assert_int_equal(st_load_add(l, b.row, NULL, &err), 0);
    /* A bad enum value is refused, and the loader goes on. */
    b.row[off_state] = 3;
    assert_int_equal(st_load_add(l, b.row, NULL, &err), -1);
    assert_int_equal(err.code, ST_EINPUT);
    assert_non_null(strstr(err.msg, "record 5"));
    assert_int_equal(st_load_count(l), 4);
    assert_int_equal(st_load_commit(l, NULL, &err), 0);
    st_store_close(s);
    model want = {0};
    mts *t = model_push(&want);
    *t = a;
    t->row[off_state] = 2;
    assert_store(ST_TAGS, &want);
    model_free(&want);
}

/* Generation and file names before a failure, to compare after it. */
static uint64_t snapshot(model *m)
{
    return read_store(ST_TAGS, m);
}

static uint64_t stray_gen;
static int nstray;

static int stray_one(const char *path, const struct stat *sb, int type, struct FTW *f)
{
    (void)sb;
    const char *name = path + f->base, *dot = strchr(name, '.');
    if (type == FTW_F && f->level == 3 && (!dot || strchr(dot + 1, '.') ||
                                          strtoull(dot + 1, NULL, 10) > stray_gen))
        nstray++;
    return 0;
}

/* Partition files that no generation up to gen can name: writers'
 * temporaries and files staged by commits that did not happen. */
static int stray_files(uint64_t gen)
{
    stray_gen = gen;
    nstray = 0;
    nftw(dir, stray_one, 16, FTW_PHYS);
    return nstray;
}

/* The store is still at generation gen and holds before's tagsets. */
static void assert_unchanged(model *before, uint64_t gen)
{
    model now = {0};
    assert_int_equal(snapshot(&now), gen);
    assert_same(before, &now);
    model_free(&now);
}

/* Makes the n-th call of op fail during a load until one succeeds; each
 * failure leaves the previous generation current, whole and alone. */
static void fail_each(st_sys_op op, int errnum, int maxn)
{
    model before = {0}, adds = {0};
    random_tagsets(&adds, 300, 500, 4);
    uint64_t gen = snapshot(&before);
    st_load_opts o = small_parcels();
    o.update.age_field = "ts";
    o.update.age_cutoff = 2000;
    int n;
    for (n = 1; n <= maxn; n++) {
        st_err err;
        st_sys_fail_after(op, (unsigned long)n, errnum);
        int rc = load(&adds, &o, NULL, &err);
        st_sys_fail_reset();
        if (rc == 0 || rc == -2) /* -2: committed; only the last directory fsync failed */
            break;
        assert_int_equal(err.code, ST_EIO);
        assert_non_null(strstr(err.msg, strerror(errnum)));
        assert_unchanged(&before, gen);
        assert_int_equal(stray_files(gen), 0); /* no temporaries, no staged files */
    }
    assert_true(n > 1 && n <= maxn);
    model_combine(&before, &adds);
    model keep = {0};
    for (size_t i = 0; i < before.n; i++)
        if (ts_of(&before.v[i]) >= 2000)
            *model_push(&keep) = before.v[i];
    assert_store(ST_TAGS, &keep);
    model_free(&before), model_free(&adds), model_free(&keep);
}

static void io_failures_keep_the_previous_generation(void **state)
{
    (void)state;
    make_store(2, 2);
    model old = {0};
    random_tagsets(&old, 400, 500, 4);
    load_ok(&old, NULL, NULL);
    fail_each(ST_SYS_WRITE, EIO, 400);
    fail_each(ST_SYS_WRITE, ENOSPC, 400);
    fail_each(ST_SYS_FSYNC, EIO, 100);
    fail_each(ST_SYS_READ, EIO, 400);
    fail_each(ST_SYS_RENAME, EIO, 20);
    model_free(&old);
}

/* Says yes at its n-th question: a caller's interrupt at each point a load asks. */
static bool cancel_at(void *ctx)
{
    int *n = ctx;
    return --*n == 0;
}

static void a_cancelled_load_commits_nothing(void **state)
{
    (void)state;
    model old = {0}, adds = {0};
    old_and_adds(2, 2, 300, 100, 200, 3, &old, &adds);
    model before = {0};
    uint64_t gen = snapshot(&before);
    int n;
    for (n = 1; n < 100; n++) {
        st_load_opts o;
        st_load_opts_default(&o);
        int left = n;
        o.cancelled = cancel_at;
        o.cancel_ctx = &left;
        st_err err;
        int rc = load(&adds, &o, NULL, &err);
        if (left > 0) {     /* asked fewer than n times: it ran to its commit */
            assert_int_equal(rc, 0);
            break;
        }
        assert_int_equal(rc, -1);
        assert_int_equal(err.code, ST_ECANCEL);
        assert_unchanged(&before, gen);
        assert_int_equal(stray_files(gen), 0);
    }
    assert_true(n > 4);     /* before the sort, after it, per partition, before the commit */
    model_combine(&before, &adds);
    assert_store(ST_TAGS, &before);
    model_free(&old), model_free(&adds), model_free(&before);
}

static void allocation_failures_keep_the_previous_generation(void **state)
{
    (void)state;
    model old = {0}, adds = {0};
    old_and_adds(1, 2, 200, 100, 300, 3, &old, &adds);
    model before = {0};
    uint64_t gen = snapshot(&before);
    size_t base = mem_in_use();
    int n;
    for (n = 1; n < 5000; n++) {
        st_err err;
        mem_fail_after((unsigned long)n);
        int rc = load(&adds, NULL, NULL, &err);
        mem_fail_after(0);
        assert_int_equal(mem_in_use(), base);
        if (rc == 0)
            break;
        assert_unchanged(&before, gen);
    }
    assert_true(n > 10 && n < 5000);
    model_combine(&before, &adds);
    assert_store(ST_TAGS, &before);
    model_free(&old), model_free(&adds), model_free(&before);
}

/* Records from an array, for st_update_partition directly. */
typedef struct arr {
    unsigned char *recs;
    size_t n, pos, rs;
} arr;

static int arr_next(void *self, const void **rec, st_err *err)
{
    (void)err;
    arr *a = self;
    if (a->pos == a->n)
        return 0;
    *rec = a->recs + a->pos++ * a->rs;
    return 1;
}

static int update_one(uint32_t part, arr *a, st_err *err)
{
    st_store *s = st_store_open(dir, err);
    st_txn *t = s ? st_store_begin(s, 0, err) : NULL;
    st_source src = {arr_next, a, "array"};
    int rc = t ? st_update_partition(t, s, S, 0, part, a ? &src : NULL, NULL, NULL, err) : -1;
    if (rc == 0)
        rc = st_store_commit(t, err);
    else
        st_store_abort(t);
    st_store_close(s);
    return rc;
}

/* Adds in the wrong partition or out of order are refused and change nothing;
 * with no add stream the partition's adds file is merged and dropped. */
static void update_checks_its_adds(void **state)
{
    (void)state;
    make_store(1, 2);
    st_err err;
    st_store *s = st_store_open(dir, &err);
    size_t rs = st_rec_size(S);
    unsigned char recs[4][64];
    uint32_t ks[2], v, p;
    int have[2] = {0, 0};
    for (uint32_t k = 0; !have[0] || !have[1]; k++) { /* a key for each partition */
        st_store_place(s, &k, 4, &v, &p);
        if (!have[p])
            ks[p] = k, have[p] = 1;
    }
    st_store_close(s);
    mts t = {0};
    set_key(&t, ks[1], 50);
    add_tag(&t, 9);
    st_rec_make(S, recs[0], t.row, t.tags[0]);
    arr a = {(unsigned char *)recs, 1, 0, 64};
    assert_true(rs <= 64);
    assert_int_equal(update_one(0, &a, &err), -1);
    assert_int_equal(err.code, ST_EINPUT);
    assert_non_null(strstr(err.msg, "array: record 1: it belongs in volume 0 partition 1"));
    /* Out of order within the right partition. */
    mts u = t;
    set_key(&u, ks[1], 10);
    st_rec_make(S, recs[1], u.row, NULL);
    a = (arr){(unsigned char *)recs, 2, 0, 64};
    assert_int_equal(update_one(1, &a, &err), -1);
    assert_non_null(strstr(err.msg, "out of order"));
    model none = {0};
    assert_store(ST_TAGS, &none);
    /* A flag byte that is neither 0 nor 1 is refused. */
    recs[0][S->row_size + S->tag_size] = 7;
    a = (arr){(unsigned char *)recs, 1, 0, 64};
    assert_int_equal(update_one(1, &a, &err), -1);
    assert_non_null(strstr(err.msg, "record flag 7"));
    /* A bad value in an add is refused: the writer leaves the values to the
     * update (st_write_opts.checked), so its check of the adds is the one. */
    recs[0][S->row_size + S->tag_size] = 1;
    recs[0][off_state] = 3;
    a = (arr){(unsigned char *)recs, 1, 0, 64};
    assert_int_equal(update_one(1, &a, &err), -1);
    assert_non_null(strstr(err.msg, "array: record 1: enum field 'state' holds 3"));
    assert_store(ST_TAGS, &none);
    recs[0][off_state] = 0;
    /* An adds file staged by one commit is merged by the next update. */
    s = st_store_open(dir, &err);
    st_txn *tx = st_store_begin(s, 0, &err);
    const char *path;
    assert_int_equal(st_store_stage(tx, 0, 1, ST_ADDS, &path, &err), 0);
    st_writer *w = st_writer_create(path, S, NULL, &err);
    assert_int_equal(st_writer_append(w, u.row, NULL, 0, &err), 0);
    assert_int_equal(st_writer_append(w, t.row, t.tags[0], 1, &err), 0);
    assert_int_equal(st_writer_commit(w, &err), 0);
    assert_int_equal(st_store_commit(tx, &err), 0);
    st_store_close(s);
    assert_int_equal(update_one(1, NULL, &err), 0);
    model want = {0};
    *model_push(&want) = u;
    want.v[0].ntags = 0;
    *model_push(&want) = t;
    assert_store(ST_TAGS, &want);
    assert_store(ST_ADDS, &none);
    model_free(&want);
}

/* Writes m, in its order, as partition 0's tags file in blocks of block_size
 * bytes: st_writer_append of each tagset, what the merge's records give.
 * With stage false it goes to path instead, outside the store. */
static void write_tagsets(const model *m, uint32_t block_size, bool stage, const char *path)
{
    st_err err;
    st_store *s = stage ? st_store_open(dir, &err) : NULL;
    st_txn *tx = s ? st_store_begin(s, 0, &err) : NULL;
    assert_true(!stage || (tx && st_store_stage(tx, 0, 0, ST_TAGS, &path, &err) == 0));
    st_write_opts wo;
    st_write_opts_default(&wo);
    wo.block_size = block_size;
    st_writer *w = st_writer_create(path, S, &wo, &err);
    if (!w)
        fail_msg("%s", err.msg);
    unsigned char tags[2 * MAXT * 16];
    for (size_t i = 0; i < m->n; i++) {
        for (unsigned j = 0; j < m->v[i].ntags; j++)
            memcpy(tags + j * S->tag_size, m->v[i].tags[j], S->tag_size);
        assert_int_equal(st_writer_append(w, m->v[i].row, tags, m->v[i].ntags, &err), 0);
    }
    assert_int_equal(st_writer_commit(w, &err), 0);
    if (stage)
        assert_int_equal(st_store_commit(tx, &err), 0);
    st_store_close(s);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    unsigned char *p = malloc(*n + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, *n, f), *n);
    fclose(f);
    return p;
}

/* The update copies old tagsets no add touches from block to block on
 * columns, a run at a time: runs that span blocks, adds at the first and
 * the last tagset of blocks, new keys before, amid and after them, a remove
 * key amid a run, tagsets without tags, and a key two old tagsets share
 * (one tagset to the merge). The new file is byte for byte the one
 * st_writer_append of the expected tagsets writes (the records' path), in
 * blocks cut elsewhere than the old file's. */
static void untouched_runs_copy_on_columns(void **state)
{
    (void)state;
    make_store(1, 1);
    model old = {0}, want = {0}, gone = {0};
    for (uint32_t i = 0; i < 2000; i++) {
        mts *t = model_push(&old);
        set_key(t, 2 * i, 1000);
        t->row[off_state] = (unsigned char)(i % 3);
        for (unsigned j = 0; j < i % 4; j++)
            add_tag(t, 100 * i + j);
        if (i == 61) { /* the same key again: its tags follow, its fields win */
            mts *u = model_push(&old);
            *u = *t;
            u->row[off_state] = 2;
            u->ntags = 0;
            add_tag(u, 7777);
        }
    }
    write_tagsets(&old, 4096, true, NULL);
    for (size_t i = 0; i < old.n; i++) { /* what the merge makes of it */
        if (i && st_schema_key_cmp(S, old.v[i - 1].row, old.v[i].row) == 0) {
            mts *t = &want.v[want.n - 1];
            memcpy(t->row, old.v[i].row, S->row_size);
            for (unsigned j = 0; j < old.v[i].ntags; j++)
                memcpy(t->tags[t->ntags++], old.v[i].tags[j], S->tag_size);
        } else {
            *model_push(&want) = old.v[i];
        }
    }
    /* The old file's blocks: the index in want of each block's first tagset. */
    st_err err;
    st_store *s = st_store_open(dir, &err);
    st_file f;
    assert_int_equal(st_store_file(s, 0, 0, ST_TAGS, &f, &err), 1);
    st_reader *r = st_reader_open(f.path, NULL, &err);
    assert_non_null(r);
    const st_batch *b;
    size_t first[64], nb = 0, at = 0;
    while (st_reader_next(r, &b, &err) == 1) {
        assert_true(nb < 63);
        first[nb++] = at - (at >= 62); /* the shared key's second tagset counts once */
        at += b->ntagsets;
    }
    first[nb] = want.n;
    st_reader_close(r);
    st_store_close(s);
    assert_true(nb >= 10);
    /* Adds: at block 1's first tagset, block 2's last, block 3's first and
     * last, a new key amid block 8, before all and after all; blocks 4 to 7
     * untouched but for a remove key amid block 5. */
    model adds = {0};
    size_t hit[] = {first[1], first[3] - 1, first[3], first[4] - 1};
    for (size_t i = 0; i < sizeof hit / sizeof *hit; i++) {
        mts *a = model_push(&adds);
        memcpy(a->row, want.v[hit[i]].row, S->row_size);
        a->row[off_state] = 1;
        add_tag(a, 900000 + (uint32_t)i);
    }
    uint32_t fresh[] = {0, 2 * (uint32_t)first[8] + 1, 2 * 2000 + 1};
    for (size_t i = 0; i < sizeof fresh / sizeof *fresh; i++) {
        mts *a = model_push(&adds);
        set_key(a, fresh[i], i == 0 ? 500 : 1000);
        add_tag(a, 800000 + (uint32_t)i);
    }
    sort_model(&adds);
    size_t rm = (first[5] + first[6]) / 2;
    assert_true(rm > first[5]);
    *model_push(&gone) = want.v[rm];
    model_combine(&want, &adds);
    sort_model(&want);
    mts *g = model_find(&want, gone.v[0].row);
    *g = want.v[--want.n];
    sort_model(&want);
    /* The update, writing blocks of 5000 bytes. */
    size_t rs = st_rec_size(S), nrec = 0;
    unsigned char *recs = mem_alloc(adds.n * rs);
    for (size_t i = 0; i < adds.n; i++)
        st_rec_make(S, recs + nrec++ * rs, adds.v[i].row, adds.v[i].tags[0]);
    arr a = {recs, nrec, 0, rs};
    st_source src = {arr_next, &a, "array"};
    st_update_opts o;
    st_update_opts_default(&o);
    o.write.block_size = 5000;
    o.remove_keys = gone.v[0].row;
    o.nremove = 1;
    s = st_store_open(dir, &err);
    st_txn *t = st_store_begin(s, 0, &err);
    st_update_stats st = {0};
    if (st_update_partition(t, s, S, 0, 0, &src, &o, &st, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st_store_commit(t, &err), 0);
    assert_int_equal(st.out_tagsets, want.n);
    assert_int_equal(st.removed_tagsets, 1);
    assert_int_equal(st_store_file(s, 0, 0, ST_TAGS, &f, &err), 1);
    char ref[PATH_MAX + 16];
    snprintf(ref, sizeof ref, "%s/ref", tmp);
    write_tagsets(&want, 5000, false, ref);
    size_t n1, n2;
    unsigned char *got = slurp(f.path, &n1), *exp = slurp(ref, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(got, exp, n1);
    free(got), free(exp);
    st_store_close(s);
    assert_store(ST_TAGS, &want);
    assert_store(ST_DELS, &gone);
    mem_free(recs, adds.n * rs);
    model_free(&old), model_free(&want), model_free(&gone), model_free(&adds);
}

/* Gecko's cycle: the day's loads wait in adds files (combined load after
 * load); then one job per volume merges each partition's adds file into its
 * tags and drops it, under an age-off. */
static void adds_files_wait_for_the_cycle(void **state)
{
    (void)state;
    model old = {0}, day1 = {0}, day2 = {0};
    old_and_adds(2, 3, 400, 150, 300, 4, &old, &day1);
    random_tagsets(&day2, 150, 300, 4);
    st_load_opts o;
    st_load_opts_default(&o);
    o.to_adds = true;
    o.update.age_field = "ts"; /* ignored when staging adds */
    o.update.age_cutoff = 9999;
    load_ok(&day1, &o, NULL);
    load_ok(&day2, &o, NULL);
    model before = {0}, waiting = {0};
    read_store(ST_TAGS, &before);
    assert_same(&old, &before);
    model_combine(&waiting, &day1);
    model_combine(&waiting, &day2);
    assert_store(ST_ADDS, &waiting);
    st_err err;
    st_store *s = st_store_open(dir, &err);
    st_update_opts uo;
    st_update_opts_default(&uo);
    uo.age_field = "ts";
    uo.age_cutoff = 3000;
    for (uint32_t v = 0; v < 2; v++) {
        st_txn *t = st_store_begin(s, v, &err);
        assert_non_null(t);
        for (uint32_t p = 0; p < 3; p++)
            if (st_update_partition(t, s, S, v, p, NULL, &uo, NULL, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(st_store_commit(t, &err), 0);
    }
    st_store_close(s);
    model_combine(&old, &waiting);
    model keep = {0}, gone = {0}, none = {0};
    for (size_t i = 0; i < old.n; i++)
        *model_push(ts_of(&old.v[i]) < 3000 ? &gone : &keep) = old.v[i];
    assert_store(ST_TAGS, &keep);
    assert_store(ST_DELS, &gone);
    assert_store(ST_ADDS, &none);
    model_free(&old), model_free(&day1), model_free(&day2), model_free(&before);
    model_free(&waiting), model_free(&keep), model_free(&gone);
}

/* A schema without tag fields: every record is a tagset; equal keys stay apart. */
static void tagless_schema(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s/events", tmp);
    static const char text[] = "key run: u32\nkey event: u64\ntagset e: f64\n";
    st_store_meta m = {.name = "events", .partkey = "event", .volumes = 1, .partitions = 3,
                       .schema = text, .schema_len = strlen(text)};
    st_err err;
    assert_int_equal(st_store_create(dir, &m, &err), 0);
    st_store *s = st_store_open(dir, &err);
    st_load *l = st_load_new(s, NULL, &err);
    const st_schema *sc = st_load_schema(l);
    assert_int_equal(st_rec_size(sc), sc->row_size);
    unsigned char row[20];
    for (uint64_t i = 0; i < 300; i++) {
        uint32_t run = (uint32_t)(i % 7);
        uint64_t ev = i % 100; /* each key three times */
        double e = (double)i;
        memcpy(row, &run, 4), memcpy(row + 4, &ev, 8), memcpy(row + 12, &e, 8);
        assert_int_equal(st_load_add(l, row, NULL, &err), 0);
    }
    st_update_stats st;
    assert_int_equal(st_load_commit(l, &st, &err), 0);
    assert_int_equal(st.out_tagsets, 300);
    assert_int_equal(st.out_tags, 0);
    st_storeinfo in;
    st_store_info(s, &in);
    assert_int_equal(in.generation, 1);
    /* A second load: the old files' tagsets that share a key merge as
     * records and still stay apart; the others are copied whole. */
    l = st_load_new(s, NULL, &err);
    for (uint64_t i = 0; i < 3; i++) {
        uint32_t run = 9;
        double e = -1.0;
        memcpy(row, &run, 4), memcpy(row + 4, &i, 8), memcpy(row + 12, &e, 8);
        assert_int_equal(st_load_add(l, row, NULL, &err), 0);
    }
    assert_int_equal(st_load_commit(l, &st, &err), 0);
    assert_int_equal(st.add_tagsets, 3);
    st_store_info(s, &in);
    uint64_t n = 0;
    for (uint32_t p = 0; p < in.partitions; p++) {
        st_file f;
        assert_int_equal(st_store_file(s, 0, p, ST_TAGS, &f, &err), 1);
        st_reader *r = st_reader_open(f.path, NULL, &err);
        const st_batch *b;
        while (st_reader_next(r, &b, &err) == 1)
            n += b->ntagsets;
        st_reader_close(r);
    }
    assert_int_equal(n, 303);
    st_store_close(s);
}

/* The schema text of a store: canonical, or inside a comb `schema` form. */
static void schema_forms(void **state)
{
    (void)state;
    st_err err;
    st_schema *a = st_update_schema("key k: u8\n", 10, &err);
    const char form[] = "# calls\nschema calls {\n  key k: u8\n}\n# end\n";
    st_schema *b = st_update_schema(form, strlen(form), &err);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(st_schema_equal(a, b));
    st_schema_free(a);
    st_schema_free(b);
    const char bad[] = "schema calls {\n  key k: u8\n  key j u8\n}\n";
    assert_null(st_update_schema(bad, strlen(bad), &err));
    assert_non_null(strstr(err.msg, "3:"));
    const char open[] = "schema calls {\n key k: u8\n";
    assert_null(st_update_schema(open, strlen(open), &err));
    assert_non_null(strstr(err.msg, "no matching '}'"));
    const char trail[] = "schema x { key k: u8 } key j: u8\n";
    assert_null(st_update_schema(trail, strlen(trail), &err));
    assert_non_null(strstr(err.msg, "1:24: unexpected text after"));
    const char noname[] = "schema { key k: u8 }";
    assert_null(st_update_schema(noname, strlen(noname), &err));
    assert_non_null(strstr(err.msg, "expected `schema NAME {`"));
}

/* Bad options are refused when the loader is made. */
static void bad_options_are_refused(void **state)
{
    (void)state;
    make_store(1, 1);
    st_err err;
    st_store *s = st_store_open(dir, &err);
    st_load_opts o;
    st_load_opts_default(&o);
    o.update.age_field = "v";
    assert_null(st_load_new(s, &o, &err));
    assert_non_null(strstr(err.msg, "age-off field 'v' is not a key or tagset field"));
    o.update.age_field = "state";
    assert_null(st_load_new(s, &o, &err));
    assert_non_null(strstr(err.msg, "is not a time or an integer"));
    o.update.age_field = NULL;
    o.update.mode = (st_update_mode)9;
    assert_null(st_load_new(s, &o, &err));
    assert_non_null(strstr(err.msg, "unknown mode"));
    st_store_close(s);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(load_places_every_tagset),
        T(combine_appends_tags),
        T(replace_supersedes),
        T(age_off_fills_dels_exactly),
        T(remove_set_takes_its_keys),
        T(last_record_gives_the_tagset_fields),
        T(io_failures_keep_the_previous_generation),
        T(allocation_failures_keep_the_previous_generation),
        T(a_cancelled_load_commits_nothing),
        T(update_checks_its_adds),
        T(untouched_runs_copy_on_columns),
        T(adds_files_wait_for_the_cycle),
        T(tagless_schema),
        T(schema_forms),
        T(bad_options_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
