/* collect: the rows a scan hands on as they are: each partition's records
 * ([sort key][row][u32 ntags][tags], or [sort key][row][tag] for tag
 * rows; the row only the tagset fields shown, packed: QScan.out_row) in a buffer of its own, sorted by their keys and cut to a take;
 * a sort without take past the memory budget (COMB_SORT_MB) goes to the
 * store's external sort; then read back in order as maps. */
#include "config.h"
#include "vm/query/run.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/bytes.h"
#include "store/sort.h"
#include "vm/lib.h"

/* ---- collecting rows -------------------------------------------------- */

static size_t record_size(const QScan *sc, uint32_t ntags)
{
    const st_schema *s = sc->vs->s;
    /* a tag count only where the schema has tags to count */
    size_t tags = sc->tags ? s->tag_size : s->tag_size ? 4 + (size_t)ntags * s->tag_size : 0;
    return sc->keyw + sc->out_roww + tags;
}

/* The shown fields the block left encoded, gathered at the selected rows
 * (w->gcol, w->gath): false when out of memory. */
static bool gather_rows(Worker *w, const st_batch *b, const KSel *sel)
{
    const QScan *sc = w->sh->sc;
    const st_schema *s = sc->vs->s;
    size_t need = 0;
    for (uint32_t i = 0; i < sc->nout_row; i++) {
        uint32_t f = sc->out_row[i];
        if (w->gcol)
            w->gcol[i] = NULL;  /* (not the last block's) */
        if (!b->cols[f] && b->enc && b->enc[f].codec)
            need += (size_t)sel->n * s->fields[f].width;
    }
    if (!need)
        return true;
    if (!w->gcol && !(w->gcol = mem_calloc(sc->nout_row, sizeof *w->gcol)))
        return false;
    if (need > w->gath_cap) {
        unsigned char *q = mem_realloc(w->gath, w->gath_cap, need);
        if (!q)
            return false;
        w->gath = q;
        w->gath_cap = need;
    }
    size_t at = 0;
    for (uint32_t i = 0; i < sc->nout_row; i++) {
        uint32_t f = sc->out_row[i];
        if (b->cols[f] || !b->enc || !b->enc[f].codec)
            continue;
        st_batch_gather(s, b, f, sel->idx, sel->n, w->gath + at);
        w->gcol[i] = w->gath + at;
        at += (size_t)sel->n * s->fields[f].width;
    }
    return true;
}

static void collect_end(Worker *w)
{
    mem_free(w->gath, w->gath_cap);
    mem_free(w->gcol, w->sh->sc->nout_row * sizeof *w->gcol);
}

/* Tagset t's shown fields, packed, into p: the j-th selected row, whose
 * gathered fields are at row j of w->gcol. */
static void packed_row(const Worker *wk, const st_batch *b, uint32_t t, uint32_t j, unsigned char *p)
{
    const QScan *sc = wk->sh->sc;
    const st_field *fs = sc->vs->s->fields;
    for (uint32_t i = 0; i < sc->nout_row; i++) {
        uint32_t f = sc->out_row[i], w = fs[f].width;
        if (b->cols[f])
            st_copy_value(p, (const char *)b->cols[f] + (size_t)t * w, w);
        else if (wk->gcol && wk->gcol[i])
            memcpy(p, wk->gcol[i] + (size_t)j * w, w);
        else
            memset(p, 0, w);
        p += w;
    }
}

static void collect_rows(Worker *w, uint32_t pi, bool tag, const KSel *sel)
{
    Shared *sh = w->sh;
    const QScan *sc = sh->sc;
    const st_schema *s = sc->vs->s;
    const st_batch *b = w->k.b;
    PartRows *pr = &sh->rows[pi];
    const KVec *kv[64];
    if (sc->nsort > 64) {
        scan_fail(sh, "sort: too many keys");
        return;
    }
    for (int i = 0; i < sc->nsort; i++)
        kv[i] = k_eval(&w->k, sc->sort[i].e, tag, sel);
    if (sc->defer && !gather_rows(w, b, sel)) {
        scan_fail(sh, SCAN_OOM);
        return;
    }
    for (uint32_t j = 0; j < sel->n; j++) {
        if (!sc->nsort && pr->n >= sc->limit)
            return;
        uint32_t r = sel->idx[j], t = tag ? w->k.owner[r] : r;
        /* tags only when a tag column was decoded (a select may need none) */
        bool with_tags = s->tag_size && !tag && b->tag_start;
        uint32_t lo = with_tags ? b->tag_start[t] : 0;
        uint32_t nt = with_tags ? b->tag_start[t + 1] - lo : 0;
        unsigned char *p = buf_room(&pr->b, record_size(sc, nt));
        if (!p) {
            scan_fail(sh, SCAN_OOM);
            return;
        }
        for (int i = 0; i < sc->nsort; i++) {
            k_key(sc->sort[i].e, kv[i], j, sc->sort[i].desc, p);
            p += qx_keywidth(sc->sort[i].e);
        }
        packed_row(w, b, t, j, p);
        p += sc->out_roww;
        if (tag) {
            st_batch_tag(s, b, r, p);
        } else if (s->tag_size) {
            memcpy(p, &nt, 4);
            p += 4;
            for (uint32_t i = 0; i < nt; i++, p += s->tag_size)
                st_batch_tag(s, b, lo + i, p);
        }
        pr->n++;
    }
}

/* The bytes of the record at r. */
static size_t record_len(const QScan *sc, const unsigned char *r)
{
    uint32_t nt = 0;
    if (!sc->tags && sc->vs->s->tag_size)
        memcpy(&nt, r + sc->keyw + sc->out_roww, 4);
    return record_size(sc, nt);
}

/* Offsets of the records of a buffer. */
static size_t *record_offsets(const QScan *sc, const PartRows *pr, size_t *n)
{
    size_t *o = mem_alloc((pr->n + 1) * sizeof *o), off = 0;
    if (!o)
        return NULL;
    for (uint64_t i = 0; i < pr->n; i++) {
        o[i] = off;
        off += record_len(sc, pr->b.p + off);
    }
    *n = pr->n;
    return o;
}

/* What qsort_r's comparisons read: the records and their keys' width. */
typedef struct SortCtx {
    const unsigned char *base;
    uint32_t keyw;
} SortCtx;

static int cmp_records(const void *a, const void *b, void *ctx)
{
    const SortCtx *sx = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = memcmp(sx->base + x, sx->base + y, sx->keyw);
    return c ? c : (x < y ? -1 : x > y);
}

/* Sorts a partition's records by key and keeps the first limit of them. */
static bool trim(const QScan *sc, PartRows *pr)
{
    size_t n, *o = record_offsets(sc, pr, &n);
    if (!o)
        return false;
    SortCtx sx = {pr->b.p, sc->keyw};
    if (n)
        qsort_r(o, n, sizeof *o, cmp_records, &sx);
    Buf nb = {0};
    size_t keepn = n < sc->limit ? n : (size_t)sc->limit;
    for (size_t i = 0; i < keepn; i++) {
        size_t len = record_len(sc, pr->b.p + o[i]);
        unsigned char *p = buf_room(&nb, len);
        if (!p) {
            buf_free(&nb);
            mem_free(o, (n + 1) * sizeof *o);
            return false;
        }
        memcpy(p, pr->b.p + o[i], len);
    }
    mem_free(o, (n + 1) * sizeof *o);
    buf_free(&pr->b);
    pr->b = nb;
    pr->n = keepn;
    return true;
}

/* ---- past the budget: the external sort --------------------------------
 *
 * The sorter (store/sort.h) spills sorted runs to $TMPDIR and merges them;
 * it takes fixed-width records, so a tagset becomes one record per tag
 * (one if it has none): [sort key][partition][sequence][tag index]
 * [row][u32 ntags][tag], the numbers big-endian. The sort compares the key
 * and the three numbers as bytes: rows with equal keys come out by
 * partition, then in the order the partition gave them, as the sort in
 * memory orders them, whatever order the workers added them in; and a
 * tagset's tags stay together, in order. */

#define DEFAULT_MB 256

struct QSpill {
    const QScan *sc;
    st_sorter *sorter;
    size_t cmpw, recw;  /* bytes compared; bytes of a sorter record */
    unsigned char *rec; /* a sorter record being made */
    unsigned char *out; /* a row read back, in the collected form */
    size_t out_cap;
};

/* Bytes of rows a sort without take holds in memory: COMB_SORT_MB. */
size_t qcollect_budget(void)
{
    long long mb = lib_env_megabytes("COMB_SORT_MB", DEFAULT_MB);
    return (size_t)(mb < 1 ? 1 : mb) << 20;
}

static int cmp_spilled(const void *a, const void *b, void *ctx)
{
    return memcmp(a, b, ((const QSpill *)ctx)->cmpw);
}

/* n bytes of v, most significant first: memcmp orders them as numbers. */
static void put_be(unsigned char *p, uint64_t v, int n)
{
    while (n--) {
        p[n] = (unsigned char)v;
        v >>= 8;
    }
}

/* The first 8 bytes compared, as a number in their memcmp order. */
static uint64_t prefix_spilled(const void *rec, void *ctx)
{
    const unsigned char *p = rec;
    uint64_t v = 0;
    (void)ctx;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static size_t tagw(const QScan *sc)
{
    return sc->vs->s->tag_size;
}

/* q and its temporary files; NULL is allowed. */
static void spill_free(QSpill *q)
{
    if (!q)
        return;
    st_sorter_free(q->sorter);
    mem_free(q->rec, q->recw);
    mem_free(q->out, q->out_cap);
    mem_free(q, sizeof *q);
}

static QSpill *spill_new(const QScan *sc, size_t budget, st_err *err)
{
    QSpill *q = mem_calloc(1, sizeof *q);
    if (!q) {
        st_err_set(err, ST_ENOMEM, "out of memory in a sort");
        return NULL;
    }
    q->sc = sc;
    q->cmpw = sc->keyw + 16;
    q->recw = q->cmpw + sc->out_roww + 4 + tagw(sc);
    st_sort_opts o = {.parcel_bytes = budget, .prefix = prefix_spilled};
    q->rec = mem_calloc(1, q->recw);
    if (!q->rec || !(q->sorter = st_sorter_new(q->recw, cmp_spilled, q, &o, err))) {
        if (!q->rec)
            st_err_set(err, ST_ENOMEM, "out of memory in a sort");
        spill_free(q);
        return NULL;
    }
    return q;
}

/* The record's fields after the compared bytes. */
static unsigned char *rec_row(const QSpill *q, unsigned char *rec)
{
    return rec + q->cmpw;
}

/* Adds the collected record r, the seq-th row of partition part: the
 * record's bytes, or 0 with err. */
static size_t spill_add(QSpill *q, uint32_t part, uint64_t seq, const unsigned char *r, st_err *err)
{
    const QScan *sc = q->sc;
    const st_schema *s = sc->vs->s;
    uint32_t nt = 0;
    const unsigned char *tags = r + sc->keyw + sc->out_roww;
    if (sc->tags) {
        nt = 1;
    } else if (s->tag_size) {
        memcpy(&nt, tags, 4);
        tags += 4;
    }
    unsigned char *p = q->rec;
    memcpy(p, r, sc->keyw);
    put_be(p + sc->keyw, part, 4);
    put_be(p + sc->keyw + 4, seq, 8);
    memcpy(rec_row(q, p), r + sc->keyw, sc->out_roww);
    memcpy(rec_row(q, p) + sc->out_roww, &nt, 4);
    unsigned char *tag = rec_row(q, p) + sc->out_roww + 4;
    uint32_t i = 0;
    do {    /* a record even for a tagset without tags */
        put_be(p + sc->keyw + 12, i, 4);
        if (i < nt)
            memcpy(tag, tags + (size_t)i * tagw(sc), tagw(sc));
        if (st_sorter_add(q->sorter, p, err) < 0)
            return 0;
    } while (++i < nt);
    return record_size(sc, nt);
}

static int spill_finish(QSpill *q, st_err *err)
{
    return st_sorter_finish(q->sorter, err);
}

/* The next row in order, as a collected record (valid until the next
 * call): 1, 0 at the end, -1 with err. */
static int spill_next(QSpill *q, const unsigned char **out, st_err *err)
{
    const QScan *sc = q->sc;
    const st_schema *s = sc->vs->s;
    const void *v;
    int rc = st_sorter_next(q->sorter, &v, err);
    if (rc != 1)
        return rc;
    const unsigned char *rec = v;
    uint32_t nt;
    memcpy(&nt, rec + q->cmpw + sc->out_roww, 4);
    bool counted = !sc->tags && s->tag_size;
    size_t need = sc->keyw + sc->out_roww + 4 + (size_t)(nt ? nt : 1) * tagw(sc);
    if (need > q->out_cap) {
        unsigned char *o = mem_realloc(q->out, q->out_cap, need);
        if (!o) {
            st_err_set(err, ST_ENOMEM, "out of memory in a sort");
            return -1;
        }
        q->out = o;
        q->out_cap = need;
    }
    unsigned char *p = q->out;
    memcpy(p, rec, sc->keyw);
    memcpy(p + sc->keyw, rec + q->cmpw, sc->out_roww);
    p += sc->keyw + sc->out_roww;
    if (counted) {
        memcpy(p, &nt, 4);
        p += 4;
    }
    /* A tagset's records follow one another: the first carries tag 0. */
    for (uint32_t i = 0; i < nt; i++) {
        if (i && (rc = st_sorter_next(q->sorter, &v, err)) != 1) {
            if (!rc)
                st_err_set(err, ST_ECORRUPT, "sort: a tagset's tags were cut short");
            return -1;
        }
        memcpy(p, (const unsigned char *)v + q->cmpw + sc->out_roww + 4, tagw(sc));
        p += tagw(sc);
    }
    *out = q->out;
    return 1;
}

/* Hands partition pi's collected rows to the external sort (made by the
 * first call), emptying its buffer. */
static void spill_rows(Shared *sh, uint32_t pi)
{
    PartRows *pr = &sh->rows[pi];
    st_err err = {0};
    pthread_mutex_lock(&sh->mu);
    if (!sh->spill)
        sh->spill = spill_new(sh->sc, sh->budget / 2, &err);
    bool ok = sh->spill != NULL;
    for (size_t off = 0, i = 0; ok && i < pr->n; i++) {
        size_t n = spill_add(sh->spill, pi, pr->spilled + i, pr->b.p + off, &err);
        ok = n > 0;
        off += n;
    }
    pthread_mutex_unlock(&sh->mu);
    atomic_fetch_sub(&sh->held, pr->b.len);
    pr->spilled += pr->n;
    pr->n = 0;
    pr->b.len = 0;
    if (!ok)
        scan_fail(sh, err.msg);
}

/* After a block of partition pi (whose buffer held held bytes before it):
 * trims a sort with take, spills past the budget; whether to read on. */
static bool collect_block(Shared *sh, uint32_t pi, size_t held)
{
    const QScan *sc = sh->sc;
    PartRows *pr = &sh->rows[pi];
    if (sc->nsort && sc->limit != UINT64_MAX && pr->n > 2 * sc->limit + 1024 && !trim(sc, pr))
        scan_fail(sh, SCAN_OOM);
    if (sc->nsort && sc->limit == UINT64_MAX &&
        atomic_fetch_add(&sh->held, pr->b.len - held) + pr->b.len - held > sh->budget / 2)
        spill_rows(sh, pi);     /* past the budget: to the external sort */
    return !(!sc->nsort && pr->n >= sc->limit);
}

static bool collect_consume(Worker *w, uint32_t pi, bool tag, const KSel *sel)
{
    size_t held = w->sh->rows[pi].b.len;
    collect_rows(w, pi, tag, sel);
    return collect_block(w->sh, pi, held);
}

/* ---- the rows in order ------------------------------------------------ */

void qcollect_begin(VM *vm, Shared *sh, Ordered *o)
{
    const QScan *sc = sh->sc;
    uint64_t n = 0;
    for (uint32_t i = 0; i < sh->parts.n; i++)
        n += sh->rows[i].spilled + sh->rows[i].n;
    o->n = n < sc->limit ? n : sc->limit;
    if (sh->spill) {
        st_err err;
        for (uint32_t i = 0; i < sh->parts.n; i++)
            spill_rows(sh, i);
        if (sh->err[0])
            scan_raise(vm, sh->err);
        if (spill_finish(sh->spill, &err) < 0)
            vm_error(vm, "%s", err.msg);
        return;
    }
    if (!sc->nsort)
        return;     /* read in place, partition after partition */
    /* One buffer in partition order (sorting then sees every record). */
    for (uint32_t i = 0; i < sh->parts.n; i++) {
        unsigned char *p = sh->rows[i].b.len ? buf_room(&o->all.b, sh->rows[i].b.len) : NULL;
        if (sh->rows[i].b.len && !p)
            vm_throw(vm, v_obj(vm->oom));
        if (p)
            memcpy(p, sh->rows[i].b.p, sh->rows[i].b.len);
        o->all.n += sh->rows[i].n;
        buf_free(&sh->rows[i].b);
    }
    if (!trim(sc, &o->all))
        vm_throw(vm, v_obj(vm->oom));
}

/* The record at *off of a buffer, moving *off past it. */
const unsigned char *qcollect_record(const QScan *sc, const unsigned char *base, size_t *off)
{
    const unsigned char *r = base + *off;
    *off += record_len(sc, r);
    return r;
}

/* The next row's record in order, or NULL at the end. */
const unsigned char *qcollect_next(VM *vm, Shared *sh, Ordered *o)
{
    const unsigned char *r = NULL;
    st_err err;
    if (o->i >= o->n)
        return NULL;
    o->i++;
    if (!sh->spill && sh->sc->nsort)
        return qcollect_record(sh->sc, o->all.b.p, &o->off);
    if (!sh->spill) {
        while (o->off >= sh->rows[o->pi].b.len) {   /* o->i <= rows held: one is left */
            o->pi++;
            o->off = 0;
        }
        return qcollect_record(sh->sc, sh->rows[o->pi].b.p, &o->off);
    }
    int rc = spill_next(sh->spill, &r, &err);
    if (rc < 0)
        vm_error(vm, "%s", err.msg);
    return rc ? r : NULL;
}

/* A collected record as the row (a map) comb sees; last (NULL, or
 * [nout_row], kept alive by the caller): see VRowShape. */
Value qcollect_value(VM *vm, const QScan *sc, const unsigned char *p, VStr **last)
{
    const st_schema *s = sc->vs->s;
    uint32_t nt = 0;
    const unsigned char *row = p + sc->keyw, *tags = row + sc->out_roww;
    if (!sc->tags && s->tag_size) {
        memcpy(&nt, tags, 4);
        tags += 4;
    }
    VRowShape shape = {.row = sc->out_row, .nrow = sc->nout_row, .fields = sc->out_fields,
                       .ntag = sc->out_ntag, .names = sc->out_names, .last = last};
    return vm_record_value(vm, sc->vs, row, s->tag_size ? tags : NULL, nt, &shape, sc->tags);
}

/* Rows of up to this many fields share strings with the row before (a
 * few fields selected; a whole wide row is left as it was). */
#define LAST_MAX 16

/* Rows of up to this many fields, a select the collector makes
 * (out_names), are held as columns. */
#define COLUMNS_MAX 64

/* The rows of a select the collector makes as columns (vm_array_columns):
 * the values the maps would hold, the maps made only when comb code reads
 * the array (len counts its rows without them). A million events
 * returned cost their values, not a million maps to make and collect. */
static Value collect_columns(VM *vm, Shared *sh, Ordered *o)
{
    const QScan *sc = sh->sc;
    const st_field *fs = sc->vs->s->fields;
    Value names[COLUMNS_MAX];
    for (uint32_t i = 0; i < sc->nout_row; i++)
        names[i] = v_obj(sc->out_names[i]);
    VArray *a = vm_array_columns(vm, o->n, sc->nout_row, names);
    Value av = v_obj(a);
    vm_push_root(vm, av);
    VStr *last[LAST_MAX] = {NULL};
    VStr **lp = sc->nout_row <= LAST_MAX ? last : NULL;
    Value *cell = a->cols->cells;
    for (const unsigned char *r; (r = qcollect_next(vm, sh, o));) {
        r += sc->keyw;
        for (uint32_t i = 0; i < sc->nout_row; r += fs[sc->out_row[i++]].width)
            *cell++ = vm_field_shared(vm, sc->vs, sc->out_row[i], r, lp, i);
    }
    vm_pop_root(vm, 1);
    return av;
}

/* The collected rows of every partition, in order, as maps (or columns
 * that become them: COMB_SCAN_MAPS=1 makes the maps at once). */
static Value collect_finish(VM *vm, Shared *sh, Worker *w, Ordered *o)
{
    (void)w;
    qcollect_begin(vm, sh, o);
    if (sh->sc->out_names && sh->sc->nout_row <= COLUMNS_MAX && !getenv("COMB_SCAN_MAPS"))
        return collect_columns(vm, sh, o);
    VArray *a = vm_array_new(vm, o->n);
    Value av = v_obj(a);
    vm_push_root(vm, av);
    /* the strings of a few fields shared with the row before (alive in a) */
    VStr *last[LAST_MAX] = {NULL};
    VStr **lp = sh->sc->nout_row <= LAST_MAX ? last : NULL;
    for (const unsigned char *r; (r = qcollect_next(vm, sh, o));)
        vm_array_push(vm, a, qcollect_value(vm, sh->sc, r, lp));
    vm_pop_root(vm, 1);
    return av;
}

void qcollect_free(Shared *sh, Ordered *o)
{
    for (uint32_t i = 0; sh->rows && i < sh->parts.n; i++)
        buf_free(&sh->rows[i].b);
    mem_free(sh->rows, (sh->parts.n + 1) * sizeof *sh->rows);
    buf_free(&o->all.b);
    spill_free(sh->spill);
}

/* Rows sorted, cut to a take (top-N) or collected as they come: the
 * partitions' buffers are shared (Shared.rows), so nothing merges. */
const QConsumerOps qcons_collect = {
    .consume = collect_consume,
    .end = collect_end,
    .finish = collect_finish,
};
