/* group: group by in a scan: each worker's groups (gtable.c's hash table
 * of their keys, or for keys of few values an array indexed by their
 * codes, or for an int key of a narrow range states indexed by its value)
 * and the aggregates' states (aggs.c's columns), a batch at a time:
 * the batch's rows' groups first, then each aggregate's loop over them;
 * with many groups, rows partitioned by hash into tables that fit the
 * cache; past the memory budget spilled to the external sort and folded back in
 * key order; merged after the scan and turned into rows. */
#include "config.h"
#include "vm/query/run.h"

#include <stdlib.h>
#include <string.h>

#include "vm/query/aggs.h"
#include "vm/query/gtable.h"

typedef struct Parts Parts;

struct GroupState {
    GTable t;           /* the groups' keys */
    QAggs aggs;
    Buf keys;           /* a batch's keys (or dense codes) */
    uint32_t *gid;      /* a batch's rows' groups */
    uint64_t *hash;     /* their keys' hashes, after gid in its block */
    size_t gcap;
    uint32_t *dense;    /* small-domain keys: group index + 1 per key code */
    uint32_t ndense;    /* codes (0: keys go through the table alone) */
    uint32_t *order;    /* the groups in key order (here, so that a raise
                         * while making rows leaks nothing): made by a merge
                         * or for the result */
    uint32_t ocap;      /* order's room */
    Value *heap;        /* top-N's heap: values, then positions and slots, [heapn] */
    uint32_t heapn;
    unsigned char *kept;    /* top-N after a spill: the kept groups' records, [heapn] */
    size_t limit;       /* bytes of groups held before they spill (0: never) */
    Parts *parts;       /* many groups: rows partitioned by hash (NULL: not) */
    uint32_t pfrom;     /* groups past which rows are partitioned (0: never) */
    uint32_t pnp;       /* into how many partitions */
    uint8_t *seen;      /* by range: 1 for each code a row had, [nrange]; NULL
                         * when a count()'s rows say it (rows_at) */
    int rows_at;        /* by range: that count()'s aggregate, or -1 */
    uint32_t nrange;    /* by range: the codes (0: not by range) */
    uint64_t rlo;       /* by range: code 1's key image */
    uint32_t nseen;     /* by range: groups in order */
};

/* Dense group keys: a key whose values are few (an enum symbol, a bool, a
 * u8 or i8 field, also as first/last(tags, P).f) has a code, 0 for nil and
 * 1 + its rank otherwise; when the codes of all the keys together number
 * at most DENSE_MAX, a row's code indexes an array of group indices
 * directly, and only a code's first row goes through the group table.
 * Rows of one code have one encoded key, so the groups are the table's.
 * COMB_GROUP_HASH=1 in the environment turns this off (tests compare). */
#define DENSE_MAX (1u << 17)

/* Rows ahead whose group slot a probe asks the cache for. */
#define PREFETCH 8

/* Whether e is a field's value (or a tag's, first or last of some). */
static bool fieldish(const QExpr *e)
{
    return e->op == QX_FIELD || (e->op == QX_QUANT && (e->fn == QF_first || e->fn == QF_last));
}

/* The codes of key e, or 0 when its values are not few. */
static uint32_t key_codes(const st_schema *s, const QExpr *e)
{
    if (e->type == QT_BOOL)
        return 257;     /* a bool field's byte, or a condition's 0 or 1 */
    if (!fieldish(e) || e->field < 0)
        return 0;
    const st_field *f = &s->fields[e->field];
    if (e->type == QT_STR && e->is_enum && f->type == ST_ENUM)
        return f->nsyms + 2;    /* nil, the symbols, and "?" for bytes past them */
    if (e->type == QT_INT && (f->type == ST_U8 || f->type == ST_I8))
        return 257;
    return 0;
}

/* The number of dense codes of sc's group keys, or 0 when they are too many. */
static uint32_t dense_codes(const QScan *sc)
{
    uint64_t n = 1;
    for (int i = 0; i < sc->nkeys && n; i++) {
        n *= key_codes(sc->vs->s, sc->keys[i]);
        if (n > DENSE_MAX)
            n = 0;
    }
    return (uint32_t)n;
}

/* Adds each row's code of key e (vector v) times stride to code[]. */
static void add_codes(const st_schema *s, const QExpr *e, const KVec *v, uint32_t n,
                      uint32_t stride, uint32_t *code)
{
    uint32_t last = e->type == QT_STR ? s->fields[e->field].nsyms : 0;
    const uint8_t *valid = v->valid;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t c;
        if (e->type == QT_STR)
            c = 1 + ((uint64_t)v->i[j] < last ? (uint32_t)v->i[j] : last);
        else
            c = 1 + (uint32_t)(v->i[j] & 0xff);
        code[j] += (valid && !valid[j] ? 0 : c) * stride;
    }
}

/* ---- keys by their range ---------------------------------------------------- *
 *
 * A group key of one int field (ints, u64, times; also first/last(tags,
 * P).f) whose values in the files the scan reads, by their zone maps, span
 * few codes: a row's code is its key image (the 8 bytes k_key writes after
 * the valid byte) less the least one, plus 1 (0 for nil), and the states
 * are indexed by it: no hash, no probe, no table of keys. The workers'
 * states merge slot by slot, and the groups come out in key order by
 * walking the codes. Codes number at most RANGE_MAX, and no more than the
 * rows (plus RANGE_SLACK: walking a code costs less than a row), and their
 * states fit a worker's share of the budget (nothing here spills). */
#define RANGE_MAX (1u << 22)
#define RANGE_SLACK 65536

/* Key image x of key e's value (an int, or a u64 field's bits). */
static inline uint64_t range_image(bool u64, uint64_t x)
{
    return u64 ? qx_u64_seen(x) : x ^ UINT64_C(1) << 63;
}

/* The key image of a zone map's st_field_order image z of field f. */
static uint64_t zone_image(const st_field *f, uint64_t z)
{
    switch (f->type) {
    case ST_U64:
        return qx_u64_seen(z);
    case ST_U8: case ST_U16: case ST_U32:
        return z ^ UINT64_C(1) << 63;
    default:    /* signed and time: the same image */
        return z;
    }
}

/* The codes of sc's key by its range over the files of pl (*lo: code 1's
 * key image), or 0: not one int field, or a range too wide. */
static uint32_t range_codes(VM *vm, const QScan *sc, const PartList *pl, uint64_t *lo)
{
    if (getenv("COMB_GROUP_HASH") || sc->nkeys != 1 || dense_codes(sc))
        return 0;
    const QExpr *e = sc->keys[0];
    if (!fieldish(e) || e->type != QT_INT || e->field < 0)
        return 0;
    const st_field *f = &sc->vs->s->fields[e->field];
    st_nbuf_opts io = scan_read_opts(vm);
    st_known_schema known = {sc->vs->s, sc->vs->text, sc->vs->text_len};
    uint64_t min = UINT64_MAX, max = 0, rows = 0;
    for (uint32_t i = 0; i < pl->n; i++) {
        st_err err;
        st_zone z;
        st_file_info info;
        st_reader *r = vm_files_reader(pl->files, pl->p[i].fi, &io, &known, &err);
        if (!r)
            return 0;   /* the scan says why */
        st_reader_info(r, &info);
        int rc = st_reader_zone(r, (uint32_t)e->field, &z, &err);
        vm_files_release(pl->files, pl->p[i].fi, r);
        if (rc < 0)
            return 0;
        rows += sc->tags ? info.ntags : info.ntagsets;
        if (z.min <= z.max) {
            min = z.min < min ? z.min : min;
            max = z.max > max ? z.max : max;
        }
    }
    *lo = min > max ? 0 : zone_image(f, min);
    uint64_t span = min > max ? 0 : zone_image(f, max) - *lo;    /* no wrap: the images order */
    if (span >= RANGE_MAX)
        return 0;
    uint64_t codes = min > max ? 1 : span + 2;
    QAggs a;
    bool ok = qa_init(&a, sc);
    size_t each = qa_recw(&a) + 1;
    qa_free(&a);
    size_t share = qcollect_budget() / 2 / (size_t)scan_threads(sc, pl->n);
    if (!ok || codes > RANGE_MAX || codes > rows + RANGE_SLACK || codes * each > share)
        return 0;
    return (uint32_t)codes;
}

/* Whether a row had code c. */
static bool range_seen(const GroupState *g, uint32_t c)
{
    return g->seen ? g->seen[c] : qa_count(&g->aggs, g->rows_at, c) != 0;
}

/* The batch's rows' codes into g->gid (marked seen unless a count() says
 * it: a byte stored at random a row costs as much as the count's update):
 * false when one lies outside the range (the zone maps do not hold the
 * file's values). */
static bool range_groups(GroupState *g, const QExpr *e, const KVec *v, uint32_t n)
{
    bool u64 = qx_u64_key(e), out = false;
    uint64_t lo = g->rlo, last = g->nrange - 1;
    const uint8_t *valid = v->valid;
    const int64_t *in = v->i;
    uint32_t *gid = g->gid;     /* in registers: byte stores could be g's */
    uint8_t *seen = g->seen;
    for (uint32_t j = 0; j < n; j++) {
        /* tested before the 1 is added: one below the least would wrap to 0 */
        uint64_t d = range_image(u64, (uint64_t)in[j]) - lo;
        bool nil = valid && !valid[j], far = !nil && d >= last;
        out |= far;
        gid[j] = nil || far ? 0 : (uint32_t)(d + 1);
    }
    for (uint32_t j = 0; seen && j < n; j++)
        seen[gid[j]] = 1;
    return !out;
}

/* Group (code) g's key into buf (by range), or its key in the table. */
static const unsigned char *group_key(const GroupState *g, uint32_t i, unsigned char *buf)
{
    if (!g->nrange)
        return gt_key(&g->t, i);
    uint64_t be = i ? g->rlo + i - 1 : 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    be = __builtin_bswap64(be);
#endif
    buf[0] = i != 0;
    memcpy(buf + 1, &be, 8);
    return buf;
}

/* Row j's group key into p (sc->keyw bytes). */
static void key_at(const QScan *sc, const KVec *const *kv, const uint32_t *kw, uint32_t j,
                   unsigned char *p)
{
    for (int i = 0; i < sc->nkeys; i++) {
        k_key(sc->keys[i], kv[i], j, false, p);
        p += kw[i];
    }
}

/* Room in g->gid (and g->hash) for n rows: false out of memory. */
static bool gid_room(GroupState *g, uint32_t n)
{
    if (n <= g->gcap)
        return true;
    size_t cap = n > 2 * g->gcap ? n : 2 * g->gcap;
    uint64_t *h = mem_alloc(cap * 12);
    if (!h)
        return false;
    mem_free(g->hash, g->gcap * 12);
    g->hash = h;
    g->gid = (uint32_t *)(void *)(h + cap);
    g->gcap = cap;
    return true;
}

/* The groups of the batch's rows into g->gid: false out of memory. */
static bool batch_groups(Worker *w, const KVec *const *kv, uint32_t n)
{
    const QScan *sc = w->sh->sc;
    GroupState *g = w->grp;
    uint32_t kw[64];
    unsigned char ab[4096];
    for (int i = 0; i < sc->nkeys; i++)
        kw[i] = qx_keywidth(sc->keys[i]);
    /* Every row's key (or code) first, then the lookups: a key hashed right
     * after its bytes were stored one by one would stall its loads. */
    g->keys.len = 0;
    size_t each = g->ndense ? sizeof(uint32_t) : sc->keyw;
    unsigned char *keys = buf_room(&g->keys, (size_t)n * each + 1);
    uint32_t *code = (uint32_t *)(void *)keys;
    if (!keys || (g->ndense && !g->dense && !(g->dense = mem_calloc(g->ndense, 4))) ||
        !gid_room(g, n))
        return false;
    if (g->ndense) {
        memset(code, 0, (size_t)n * 4);
        for (int i = 0, stride = 1; i < sc->nkeys; i++) {
            add_codes(sc->vs->s, sc->keys[i], kv[i], n, (uint32_t)stride, code);
            stride *= (int)key_codes(sc->vs->s, sc->keys[i]);
        }
        for (uint32_t j = 0; j < n; j++) {
            if (!g->dense[code[j]]) {
                key_at(sc, kv, kw, j, ab);
                long gi = gt_find(&g->t, ab, gt_hash(ab, sc->keyw));
                if (gi < 0)
                    return false;
                g->dense[code[j]] = (uint32_t)gi + 1;
            }
            g->gid[j] = g->dense[code[j]] - 1;
        }
        return true;
    }
    for (int i = 0, off = 0; i < sc->nkeys; off += (int)kw[i++])
        k_keys(sc->keys[i], kv[i], n, keys + off, sc->keyw);
    /* the hashes first, then the probes, each slot fetched a few rows
     * ahead (with many groups a probe is a cache miss); a row whose key is
     * the last row's (a tagset's tags by a tagset field) is in its group */
    size_t kw0 = sc->keyw;
    uint64_t *hash = g->hash;
    for (uint32_t j = 0; j < n; j++) {
        const unsigned char *key = keys + (size_t)j * kw0;
        bool same = j && gt_eq(key, key - kw0, kw0);
        g->gid[j] = same;   /* for the loop below */
        hash[j] = same ? hash[j - 1] : gt_hash(key, kw0);
    }
    for (uint32_t j = 0; j < n; j++) {
        const unsigned char *key = keys + (size_t)j * kw0;
        if (g->gid[j] && j) {
            g->gid[j] = g->gid[j - 1];
            continue;
        }
        if (j + PREFETCH < n)
            gt_prefetch(&g->t, hash[j + PREFETCH]);
        long gi = gt_find(&g->t, key, hash[j]);
        if (gi < 0)
            return false;
        g->gid[j] = (uint32_t)gi;
    }
    return true;
}

/* ---- past the budget ----------------------------------------------------- *
 *
 * A worker whose groups hold more than its share of COMB_SORT_MB hands them
 * to the scan's external sort (store/sort.h) as records [key][states] and
 * starts again with none; so do the other workers' groups when they are
 * merged. After the scan the sorted records come back in key order and
 * records of one key are folded into one group. Only aggregates whose
 * state has a fixed size spill (not distinct's pairs nor quantiles'
 * values: with those, groups stay in memory). */

static int cmp_spilled(const void *a, const void *b, void *sc)
{
    return memcmp(a, b, ((const QScan *)sc)->keyw);
}

/* A key's first 8 bytes, big-endian: orders as the bytes. */
static uint64_t prefix_spilled(const void *rec, void *sc)
{
    unsigned char b[8] = {0};
    uint32_t w = ((const QScan *)sc)->keyw;
    memcpy(b, rec, w < 8 ? w : 8);
    uint64_t k = 0;
    for (int i = 0; i < 8; i++)
        k = k << 8 | b[i];
    return k;
}

/* The groups' states as they are at the start. */
static bool group_reset(GroupState *g, const QScan *sc)
{
    gt_free(&g->t);
    qa_free(&g->aggs);
    mem_free(g->order, g->order ? (size_t)g->ocap * 4 + 4 : 0);
    g->order = NULL;
    if (g->dense)
        memset(g->dense, 0, (size_t)g->ndense * 4);
    return qa_init(&g->aggs, sc);
}

/* An earlier aggregate's values of the same field as aggregate a's (min
 * and max of one field read it once), or NULL. */
static const KVec *same_field(const QScan *sc, int a, const KVec *const *args)
{
    const QExpr *x = sc->agg_list[a]->a;
    for (int b = 0; x->op == QX_FIELD && b < a && b < 64; b++) {
        const QExpr *y = sc->agg_list[b]->a;
        if (y && y->op == QX_FIELD && y->field == x->field && y->type == x->type &&
            y->big == x->big && y->is_enum == x->is_enum)
            return args[b];
    }
    return NULL;
}

/* ---- many groups: rows partitioned by hash ---------------------------------- *
 *
 * Past PARTS_FROM groups a worker's table no longer fits the cache and
 * every row's probe and updates are misses. Rows are then written, in the
 * order they come, to one of np partitions by their hash's low bits (the
 * slots take the high ones): the hash's high half, the key, each argument
 * as a word and its valid byte. A partition's rows are folded into its own
 * table and states when its room is full (and before anything reads the
 * groups), a table an np-th of the size, in the cache while they are. The
 * workers' partitions of the same bits are merged one by one; the result's
 * groups are then put together and sorted as the others. Only aggregates
 * whose arguments are words (ints, bools, floats: no strings, not big) and
 * whose states spill. COMB_GROUP_PARTS=N partitions into N (a power of
 * two) from the first row (tests compare). */

#define PARTS 128
#define PART_ROWS 65536     /* at most, rows a partition holds before they are folded */
#define PARTS_FROM 65536

typedef struct GPart {
    GTable t;
    QAggs aggs;
    unsigned char *rows;    /* [cap * roww] */
    uint32_t n;
} GPart;

struct Parts {
    uint32_t np, cap, roww;     /* partitions, rows each holds, bytes a row */
    uint32_t at[64];            /* where in a row an aggregate's argument is (its
                                 * word, then its valid byte); 0: no argument */
    unsigned char *scratch;     /* a fold's: words [cap], gid [cap], valid [cap] */
    GPart p[];
};

/* The partitions asked for by COMB_GROUP_PARTS (0: by the groups' number). */
static uint32_t parts_asked(void)
{
    const char *e = getenv("COMB_GROUP_PARTS");
    long n = e ? atol(e) : 0;
    uint32_t np = 1;
    while (n > 0 && np < (uint32_t)n && np < 4096)
        np *= 2;
    return n > 0 ? np : 0;
}

/* Whether sc's groups can be partitioned: keys, and every aggregate's
 * argument a word (or none) and its state of fixed size. */
static bool parts_fit(const QScan *sc, const QAggs *aggs)
{
    if (!sc->nkeys || sc->nagg_list > 64 || !qa_spillable(aggs))
        return false;
    for (int a = 0; a < sc->nagg_list; a++) {
        const QExpr *x = sc->agg_list[a]->a;
        if (x && (x->big || (x->type != QT_INT && x->type != QT_BOOL && x->type != QT_FLOAT)))
            return false;
    }
    return true;
}

static void parts_free(GroupState *g)
{
    Parts *ps = g->parts;
    if (!ps)
        return;
    for (uint32_t i = 0; i < ps->np; i++) {
        gt_free(&ps->p[i].t);
        qa_free(&ps->p[i].aggs);
        mem_free(ps->p[i].rows, (size_t)ps->cap * ps->roww);
    }
    mem_free(ps->scratch, (size_t)ps->cap * 13);
    mem_free(ps, sizeof *ps + ps->np * sizeof(GPart));
    g->parts = NULL;
}

/* Bytes the partitions' groups hold (their rows' room, a quarter of the
 * groups' share of the budget at most, is apart: held rows are not groups,
 * and spilling for them would spill groups half the size). */
static size_t parts_bytes(const Parts *ps)
{
    size_t b = 0;
    for (uint32_t i = 0; i < ps->np; i++)
        b += gt_bytes(&ps->p[i].t) + qa_bytes(&ps->p[i].aggs);
    return b;
}

/* Partition pt's rows folded into its groups. false: out of memory. */
static bool part_fold(const QScan *sc, Parts *ps, GPart *pt)
{
    uint32_t n = pt->n, na = (uint32_t)sc->nagg_list;
    int64_t *word = (int64_t *)(void *)ps->scratch;
    uint32_t *gid = (uint32_t *)(void *)(word + ps->cap);
    uint8_t *valid = (uint8_t *)(gid + ps->cap);
    for (uint32_t j = 0; j < n; j++) {
        const unsigned char *row = pt->rows + (size_t)j * ps->roww;
        uint32_t hi;
        memcpy(&hi, row, 4);
        long gi = gt_find(&pt->t, row + 4, (uint64_t)hi << 32);
        if (gi < 0)
            return false;
        gid[j] = (uint32_t)gi;
    }
    if (!qa_grow(&pt->aggs, pt->t.n))
        return false;
    for (uint32_t a = 0; a < na; a++) {
        uint32_t at = ps->at[a];
        KVec v = {.i = word, .f = (double *)(void *)word, .valid = valid};
        bool all = true;
        for (uint32_t j = 0; at && j < n; j++) {
            const unsigned char *row = pt->rows + (size_t)j * ps->roww + at;
            memcpy(&word[j], row, 8);
            valid[j] = row[8];
            all &= valid[j];
        }
        if (all)
            v.valid = NULL;
        if (!qa_update(&pt->aggs, (int)a, at ? &v : NULL, gid, n))
            return false;
    }
    pt->n = 0;
    return true;
}

static bool parts_fold(const QScan *sc, Parts *ps)
{
    for (uint32_t i = 0; i < ps->np; i++)
        if (!part_fold(sc, ps, &ps->p[i]))
            return false;
    return true;
}

/* Group i of (t, aggs) folded into partition pt's groups. */
static bool part_take(GPart *pt, const GTable *t, const QAggs *aggs, uint32_t i, uint64_t h,
                      unsigned char *rec)
{
    long gi = gt_find(&pt->t, gt_key(t, i), h);
    if (gi < 0 || !qa_grow(&pt->aggs, pt->t.n))
        return false;
    qa_save(aggs, i, rec);
    qa_load(&pt->aggs, (uint32_t)gi, rec);
    return true;
}

/* g's groups moved into np new partitions. false: out of memory. */
static bool parts_make(GroupState *g, const QScan *sc, uint32_t np)
{
    uint32_t at[64] = {0}, roww = 4 + sc->keyw;
    for (int a = 0; a < sc->nagg_list; a++)
        if (sc->agg_list[a]->a)
            at[a] = roww, roww += 9;
    size_t room = g->limit / 4 / np / roww;     /* a quarter of the groups' share */
    uint32_t cap = room < 256 ? 256 : room > PART_ROWS ? PART_ROWS : (uint32_t)room;
    Parts *ps = g->parts = mem_calloc(1, sizeof *ps + np * sizeof(GPart));
    if (!ps)
        return false;
    ps->np = np, ps->cap = cap, ps->roww = roww;
    memcpy(ps->at, at, sizeof at);
    bool ok = (ps->scratch = mem_alloc((size_t)cap * 13)) != NULL;
    for (uint32_t i = 0; i < np; i++) {
        gt_init(&ps->p[i].t, sc->keyw);
        ok = qa_init(&ps->p[i].aggs, sc) && (ps->p[i].rows = mem_alloc((size_t)cap * roww)) && ok;
    }
    unsigned char *rec = mem_alloc(qa_recw(&g->aggs) + 1);
    for (uint32_t i = 0; ok && rec && i < g->t.n; i++) {
        uint64_t h = gt_hash(gt_key(&g->t, i), sc->keyw);
        ok = part_take(&ps->p[h & (np - 1)], &g->t, &g->aggs, i, h, rec);
    }
    ok = ok && rec;
    mem_free(rec, rec ? qa_recw(&g->aggs) + 1 : 0);
    return ok && group_reset(g, sc);
}

/* Partition b's groups folded into a's (or appended to a's table when
 * append: its keys are not there) by qa_merge's map; b is left empty. */
static bool part_merge(const QScan *sc, GTable *at, QAggs *aa, GPart *b, bool append)
{
    uint32_t n = b->t.n;
    uint32_t *map = mem_alloc((size_t)n * 4 + 4);
    bool ok = map != NULL;
    for (uint32_t j = 0; ok && j < n; j++) {
        const unsigned char *k = gt_key(&b->t, j);
        long gi = append ? gt_append(at, k) : gt_find(at, k, gt_hash(k, sc->keyw));
        ok = gi >= 0;
        map[j] = (uint32_t)gi;
    }
    ok = ok && qa_grow(aa, at->n) && qa_merge(aa, &b->aggs, map, n);
    mem_free(map, map ? (size_t)n * 4 + 4 : 0);
    gt_free(&b->t);
    qa_free(&b->aggs);
    return qa_init(&b->aggs, sc) && ok;
}

/* The partitions' groups put together in g's table, the partitions let go. */
static bool parts_join(GroupState *g, const QScan *sc)
{
    Parts *ps = g->parts;
    bool ok = parts_fold(sc, ps);
    for (uint32_t i = 0; ok && i < ps->np; i++)
        ok = part_merge(sc, &g->t, &g->aggs, &ps->p[i], true);
    parts_free(g);
    return ok;
}

/* from's partitioned groups folded into into's, partition by partition. */
static bool parts_merge(const QScan *sc, Parts *into, Parts *from)
{
    bool ok = parts_fold(sc, into) && parts_fold(sc, from);
    for (uint32_t i = 0; ok && i < into->np; i++)
        ok = part_merge(sc, &into->p[i].t, &into->p[i].aggs, &from->p[i], false);
    return ok;
}

/* A batch's rows written to their partitions (those full folded first). */
static bool parts_consume(Worker *w, const KVec *const *kv, bool tag, const KSel *sel)
{
    const QScan *sc = w->sh->sc;
    GroupState *g = w->grp;
    Parts *ps = g->parts;
    uint32_t n = sel->n, kw = sc->keyw, na = (uint32_t)sc->nagg_list, off = 0;
    g->keys.len = 0;
    unsigned char *keys = buf_room(&g->keys, (size_t)n * kw + 1);
    if (!keys)
        return false;
    for (int i = 0; i < sc->nkeys; off += qx_keywidth(sc->keys[i++]))
        k_keys(sc->keys[i], kv[i], n, keys + off, kw);
    const KVec *args[64];
    for (uint32_t a = 0; a < na; a++) {
        const QExpr *x = sc->agg_list[a]->a;
        args[a] = x ? same_field(sc, (int)a, args) : NULL;
        if (x && !args[a])
            args[a] = k_eval(&w->k, x, tag, sel);
    }
    uint64_t h = 0;
    for (uint32_t j = 0; j < n; j++) {
        const unsigned char *key = keys + (size_t)j * kw;
        if (!j || !gt_eq(key, key - kw, kw))
            h = gt_hash(key, kw);
        GPart *pt = &ps->p[h & (ps->np - 1)];
        if (pt->n == ps->cap && !part_fold(sc, ps, pt))
            return false;
        unsigned char *row = pt->rows + (size_t)pt->n++ * ps->roww;
        uint32_t hi = (uint32_t)(h >> 32);
        memcpy(row, &hi, 4);
        memcpy(row + 4, key, kw);
        for (uint32_t a = 0; a < na; a++) {
            const KVec *v = args[a];
            if (!v)
                continue;
            unsigned char *at = row + ps->at[a];
            memcpy(at, sc->agg_list[a]->a->type == QT_FLOAT ? (const void *)&v->f[j]
                                                             : (const void *)&v->i[j], 8);
            at[8] = !v->valid || v->valid[j];
        }
    }
    return true;
}

/* t's groups (their states aggs) to the sort as records [key][states]. */
static bool spill_groups(Shared *sh, const GTable *t, const QAggs *aggs, unsigned char *rec,
                         st_err *err)
{
    for (uint32_t i = 0; i < t->n; i++) {
        memcpy(rec, gt_key(t, i), t->keyw);
        qa_save(aggs, i, rec + t->keyw);
        if (st_sorter_add(sh->gspill, rec, err) != 0)
            return false;
    }
    return true;
}

/* Hands w's groups to the sort, w starting again with none: false (the
 * scan has failed) when it cannot. */
static bool spill(Worker *w)
{
    Shared *sh = w->sh;
    const QScan *sc = sh->sc;
    GroupState *g = w->grp;
    size_t recw = sc->keyw + qa_recw(&g->aggs);
    unsigned char *rec = mem_alloc(recw);
    st_err err = {0};
    bool ok = rec != NULL && (!g->parts || parts_fold(sc, g->parts));
    pthread_mutex_lock(&sh->mu);
    if (ok && !sh->gspill) {
        st_sort_opts o = {.parcel_bytes = sh->budget / 2, .prefix = prefix_spilled};
        sh->gspill = st_sorter_new(recw, cmp_spilled, (void *)sc, &o, &err);
        ok = sh->gspill != NULL;
    }
    ok = ok && spill_groups(sh, &g->t, &g->aggs, rec, &err);
    for (uint32_t i = 0; g->parts && i < g->parts->np; i++) {
        GPart *pt = &g->parts->p[i];
        ok = ok && spill_groups(sh, &pt->t, &pt->aggs, rec, &err);
        gt_free(&pt->t);
        qa_free(&pt->aggs);
        ok = qa_init(&pt->aggs, sc) && ok;
    }
    pthread_mutex_unlock(&sh->mu);
    mem_free(rec, recw);
    if (ok && !group_reset(g, sc))
        st_err_set(&err, ST_ENOMEM, SCAN_OOM);
    if (!ok || err.msg[0]) {
        scan_fail(sh, err.msg[0] ? err.msg : SCAN_OOM);
        return false;
    }
    return true;
}

void qgroup_free(Shared *sh)
{
    st_sorter_free(sh->gspill);
    sh->gspill = NULL;
}

static bool group_consume(Worker *w, uint32_t pi, bool tag, const KSel *sel)
{
    (void)pi;
    const QScan *sc = w->sh->sc;
    KCtx *k = &w->k;
    const KVec *kv[64];
    if (sc->keyw > 4096 || sc->nkeys > 64) {
        scan_fail(w->sh, "group by: too many or too wide keys");
        return false;
    }
    for (int i = 0; i < sc->nkeys; i++)
        kv[i] = k_eval(k, sc->keys[i], tag, sel);
    GroupState *g = w->grp;
    if (g->parts && !parts_consume(w, kv, tag, sel)) {
        scan_fail(w->sh, SCAN_OOM);
        return false;
    }
    if (g->parts)
        return !(g->limit && parts_bytes(g->parts) > g->limit) || spill(w);
    if (g->nrange) {
        char msg[sizeof w->sh->err];
        if (!gid_room(g, sel->n)) {
            scan_fail(w->sh, SCAN_OOM);
            return false;
        }
        if (!range_groups(g, sc->keys[0], kv[0], sel->n)) {
            snprintf(msg, sizeof msg, "%s: a value of %s outside the file's zone maps: the file "
                     "is damaged", st_reader_path(w->r), sc->vs->s->fields[sc->keys[0]->field].name);
            scan_fail(w->sh, msg);
            return false;
        }
    } else if (!batch_groups(w, kv, sel->n) || !qa_grow(&w->grp->aggs, w->grp->t.n)) {
        scan_fail(w->sh, SCAN_OOM);
        return false;
    }
    const KVec *args[64];
    for (int a = 0; a < sc->nagg_list; a++) {
        const QExpr *arg = sc->agg_list[a]->a;
        const KVec *v = arg ? same_field(sc, a, args) : NULL;
        if (arg && !v)
            v = k_eval(k, arg, tag, sel);
        if (a < 64)
            args[a] = v;
        if (!qa_update(&w->grp->aggs, a, v, w->grp->gid, sel->n)) {
            scan_fail(w->sh, SCAN_OOM);
            return false;
        }
    }
    if (g->nrange)
        return true;
    if (g->limit && gt_bytes(&g->t) + qa_bytes(&g->aggs) > g->limit)
        return spill(w);
    if (g->pfrom && g->t.n >= g->pfrom && !parts_make(g, sc, g->pnp)) {
        scan_fail(w->sh, SCAN_OOM);
        return false;
    }
    return true;
}

static bool group_begin(Worker *w)
{
    const QScan *sc = w->sh->sc;
    GroupState *g = w->grp = mem_calloc(1, sizeof *g);
    if (!g)
        return false;
    gt_init(&g->t, sc->keyw);
    g->ndense = getenv("COMB_GROUP_HASH") ? 0 : dense_codes(sc);
    if (!qa_init(&g->aggs, sc))
        return false;
    if ((g->nrange = w->sh->grange_n)) {  /* its states fit the budget (range_codes) */
        g->rlo = w->sh->grange_lo;
        g->rows_at = qa_rows_at(&g->aggs);
        return (g->rows_at >= 0 || (g->seen = mem_calloc(g->nrange, 1))) &&
               qa_grow(&g->aggs, g->nrange);
    }
    /* half the budget for the groups, shared by the threads; half for the sort */
    if (sc->nkeys && qa_spillable(&g->aggs))
        g->limit = w->sh->budget / 2 / (size_t)scan_threads(sc, w->sh->parts.n);
    uint32_t asked = parts_asked();
    if (!g->ndense && parts_fit(sc, &g->aggs))
        g->pfrom = asked ? 1 : PARTS_FROM;
    g->pnp = asked ? asked : PARTS;
    return true;
}

static void group_end(Worker *w)
{
    GroupState *g = w->grp;
    if (!g)
        return;
    mem_free(g->order, g->order ? (size_t)g->ocap * 4 + 4 : 0);
    mem_free(g->heap, (size_t)g->heapn * (8 + 8 * sizeof(Value)));
    mem_free(g->kept, g->kept ? (size_t)g->heapn * (w->sh->sc->keyw + qa_recw(&g->aggs)) : 0);
    gt_free(&g->t);
    qa_free(&g->aggs);
    parts_free(g);
    mem_free(g->dense, g->dense ? (size_t)g->ndense * 4 : 0);
    mem_free(g->seen, g->seen ? g->nrange : 0);
    mem_free(g->hash, g->gcap * 12);
    buf_free(&g->keys);
    mem_free(g, sizeof *g);
    w->grp = NULL;
}

/* ---- results as comb values -------------------------------------------- */

/* ---- the groups in key order ---------------------------------------------- */

/* A group as sorted: its key's first 16 bytes as two big-endian words
 * (keys order as their bytes), and its index. */
typedef struct Pre {
    uint64_t k[2];
    uint32_t g;
} Pre;

static int cmp_groups(const void *a, const void *b, void *t)
{
    const GTable *gt = t;
    return memcmp(gt_key(gt, *(const uint32_t *)a), gt_key(gt, *(const uint32_t *)b), gt->keyw);
}

#define BYTE(x, b) ((x).k[1 - (b) / 8] >> (8 * ((b) % 8)) & 0xff)

/* Sorts p[0 .. n) by k, a byte at a time from the last (LSD radix),
 * only the bytes that differ between keys (found by or-ing and and-ing
 * them all: an int's high bytes, the valid byte are passed over), each
 * pass from one buffer into the other. tmp: room for n. */
static void radix_sort(Pre *p, Pre *tmp, uint32_t n)
{
    uint64_t or[2] = {0, 0}, and[2] = {~UINT64_C(0), ~UINT64_C(0)};
    for (uint32_t i = 0; i < n; i++)
        for (int h = 0; h < 2; h++)
            or[h] |= p[i].k[h], and[h] &= p[i].k[h];
    int bytes[16], nb = 0;
    for (int b = 0; b < 16; b++)
        if ((or[1 - b / 8] ^ and[1 - b / 8]) >> (8 * (b % 8)) & 0xff)
            bytes[nb++] = b;
    uint32_t c[256];
    Pre *from = p, *to = tmp;
    for (int i = 0; i < nb; i++) {
        int b = bytes[i];
        memset(c, 0, sizeof c);
        for (uint32_t j = 0; j < n; j++)
            c[BYTE(from[j], b)]++;
        for (uint32_t v = 0, at = 0; v < 256; v++) {
            uint32_t k = c[v];
            c[v] = at;
            at += k;
        }
        for (uint32_t j = 0; j < n; j++)
            to[c[BYTE(from[j], b)]++] = from[j];
        Pre *t = from;
        from = to;
        to = t;
    }
    if (from != p)
        memcpy(p, from, (size_t)n * sizeof *p);
}

/* order[0 .. n) := the groups in key order: sorted by their first 16
 * bytes, then runs of equal first bytes by the whole key. */
static bool sort_groups(const GTable *t, uint32_t *order, uint32_t n)
{
    Pre *p = mem_alloc(((size_t)n + 1) * 2 * sizeof *p);
    if (!p)
        return false;
    uint32_t w = t->keyw < 16 ? t->keyw : 16;
    for (uint32_t g = 0; g < n; g++) {
        unsigned char b[16] = {0};
        if (w)      /* no keys: one group, and no key bytes to copy */
            memcpy(b, gt_key(t, g), w);
        p[g].g = g;
        for (int h = 0; h < 2; h++) {
            uint64_t k = 0;
            for (int i = 0; i < 8; i++)
                k = k << 8 | b[8 * h + i];
            p[g].k[h] = k;
        }
    }
    radix_sort(p, p + n + 1, n);
    for (uint32_t i = 0; i < n; i++)
        order[i] = p[i].g;
    for (uint32_t i = 0, j; t->keyw > 16 && i < n; i = j) {
        for (j = i + 1; j < n && !memcmp(p[j].k, p[i].k, sizeof p[i].k); j++)
            ;
        if (j - i > 1)
            qsort_r(order + i, j - i, 4, cmp_groups, (void *)t);
    }
    mem_free(p, ((size_t)n + 1) * 2 * sizeof *p);
    return true;
}

/* g->order := g's groups in key order, unless a merge made it. */
static bool key_order(GroupState *g)
{
    if (g->order)
        return true;
    uint32_t n = g->t.n;
    for (uint32_t c = 0; c < g->nrange; c++)
        n += range_seen(g, c);
    if (!(g->order = mem_alloc((size_t)n * 4 + 4)))
        return false;
    g->ocap = n;
    if (g->nrange) {    /* the codes are in key order */
        for (uint32_t c = 0, m = 0; c < g->nrange; c++)
            if (range_seen(g, c))
                g->order[m++] = c;
        g->nseen = n;
        return true;
    }
    if (sort_groups(&g->t, g->order, n))
        return true;
    mem_free(g->order, (size_t)n * 4 + 4);
    g->order = NULL;
    return false;
}

/* A worker's groups put in key order in its own thread, for the merges
 * (left to them when out of memory; not when spilled, as they go to the
 * sort). */
static void group_done(Worker *w)
{
    pthread_mutex_lock(&w->sh->mu);
    bool spilled = w->sh->gspill != NULL;
    pthread_mutex_unlock(&w->sh->mu);
    if (!spilled && w->sh->sc->nkeys && !w->grp->parts && !w->grp->nrange)
        key_order(w->grp);
}

/* from's groups into into's: both in key order, walked side by side (no
 * probe of a hash table, and the result comes out in key order); from's
 * groups that into lacks are added after its others. */
static bool group_merge(Worker *into, Worker *from)
{
    GroupState *a = into->grp, *b = from->grp;
    if (into->sh->gspill)   /* into's come back with them after the scan */
        return spill(from);
    if (a->nrange) {    /* slot by slot */
        for (uint32_t c = 0; a->seen && c < a->nrange; c++)
            a->seen[c] |= b->seen[c];
        return qa_merge(&a->aggs, &b->aggs, NULL, a->nrange);
    }
    if (a->parts || b->parts) {
        const QScan *sc = into->sh->sc;
        return (a->parts || parts_make(a, sc, a->pnp)) && (b->parts || parts_make(b, sc, a->pnp)) &&
               parts_merge(sc, a->parts, b->parts);
    }
    uint32_t na = a->t.n, nb = b->t.n, w = a->t.keyw, m = 0;
    if (!key_order(a) || !key_order(b))
        return false;
    uint32_t *map = mem_alloc((size_t)nb * 4 + 4), *out = mem_alloc(((size_t)na + nb) * 4 + 4);
    bool ok = map && out;
    for (uint32_t i = 0, j = 0; ok && (i < na || j < nb);) {
        uint32_t ga = i < na ? a->order[i] : 0, gb = j < nb ? b->order[j] : 0;
        int c = i == na ? 1 : j == nb ? -1 : gt_cmp(gt_key(&a->t, ga), gt_key(&b->t, gb), w);
        if (c > 0) {
            long g = gt_append(&a->t, gt_key(&b->t, gb));
            ok = g >= 0;
            ga = (uint32_t)g;
        }
        if (c >= 0)
            map[gb] = ga, j++;
        if (c <= 0)
            i++;
        out[m++] = ga;
    }
    ok = ok && qa_grow(&a->aggs, a->t.n) && qa_merge(&a->aggs, &b->aggs, map, nb);
    mem_free(map, map ? (size_t)nb * 4 + 4 : 0);
    if (!ok) {
        mem_free(out, out ? ((size_t)na + nb) * 4 + 4 : 0);
        return false;
    }
    mem_free(a->order, (size_t)a->ocap * 4 + 4);
    a->order = out;
    a->ocap = na + nb;
    return true;
}

/* Asks the cache for group g's key and states (rows made in key order). */
static void group_prefetch(const GroupState *gs, uint32_t g)
{
    if (!gs->nrange)
        __builtin_prefetch(gt_key(&gs->t, g));
    qa_prefetch(&gs->aggs, g);
}

/* Group g's row: its keys, then its items. held: the aggregates' values. */
static Value group_row(VM *vm, const QScan *sc, GroupState *gs, uint32_t g, VArray *held)
{
    VMap *m = vm_map_new_keyed(vm, (size_t)(sc->nkeys + sc->naggs));
    Value mv = v_obj(m);
    vm_push_root(vm, mv);
    unsigned char kb[16];
    const unsigned char *k = group_key(gs, g, kb);
    for (int j = 0; j < sc->nkeys; j++) {
        vm_map_set(vm, m, v_obj(sc->key_names[j]), qx_key_value(vm, sc->keys[j], k));
        k += qx_keywidth(sc->keys[j]);
    }
    for (int j = 0; j < sc->nagg_list; j++)
        held->items[j] = qa_value(vm, &gs->aggs, j, g);
    for (int j = 0; j < sc->naggs; j++)
        vm_map_set(vm, m, v_obj(sc->aggs[j].name), rows_eval_aggs(vm, sc->aggs[j].e, held->items));
    vm_pop_root(vm, 1);
    return mv;
}

/* ---- top-N over groups ------------------------------------------------------ */

/* When the steps after the scan begin `sort ... | take N` and the sort's
 * keys are the group's keys or bare aggregates, all of them numbers or
 * bools (values that allocate nothing and raise nothing, so no sum, whose
 * overflow raises), only the N groups that come first in that order (ties
 * in key order, as the stable sort keeps them) become rows: the sort and
 * take then run over those as they would over all. src[k]: sort key k's
 * group key index, or nkeys + its aggregate's index. */
#define TOPN_MAX 4096

static bool topn_plan(const QPlan *p, const QScan *sc, int *src, uint64_t *n)
{
    if (p->nsteps < 2 || p->steps[0].verb != QV_sort || p->steps[1].verb != QV_take ||
        p->steps[0].n > 8 || !IS_INT(p->steps[1].e[0]->k))
        return false;
    *n = (uint64_t)p->steps[1].e[0]->k.as.i;
    for (int a = 0; a < sc->nagg_list; a++)
        if (sc->agg_list[a]->fn == QF_sum)
            return false;
    const QStep *s = &p->steps[0];
    for (int k = 0; k < s->n; k++) {
        const QExpr *e = s->e[k], *x = NULL;
        src[k] = -1;
        for (int j = 0; e->op == QX_MAPGET && src[k] < 0 && j < sc->nkeys + sc->naggs; j++) {
            VStr *name = j < sc->nkeys ? sc->key_names[j] : sc->aggs[j - sc->nkeys].name;
            if (name->len != e->name->len || memcmp(name->data, e->name->data, name->len))
                continue;
            x = j < sc->nkeys ? sc->keys[j] : sc->aggs[j - sc->nkeys].e;
            if (j >= sc->nkeys && x->op != QX_AGG)
                return false;
            src[k] = j < sc->nkeys ? j : sc->nkeys + x->agg;
        }
        if (src[k] < 0 || (x->type != QT_INT && x->type != QT_FLOAT && x->type != QT_BOOL))
            return false;
    }
    return *n < TOPN_MAX;
}

/* Group g's values of the sort keys. */
static void topn_values(VM *vm, const QScan *sc, GroupState *gs, const int *src, int nk,
                        uint32_t g, Value *out)
{
    for (int k = 0; k < nk; k++) {
        if (src[k] >= sc->nkeys) {
            out[k] = qa_value(vm, &gs->aggs, src[k] - sc->nkeys, g);
            continue;
        }
        unsigned char kb[16];
        const unsigned char *key = group_key(gs, g, kb);
        for (int j = 0; j < src[k]; j++)
            key += qx_keywidth(sc->keys[j]);
        out[k] = qx_key_value(vm, sc->keys[src[k]], key);
    }
}

/* Whether the group at position a (values va) comes after the one at b. */
static bool topn_after(const QStep *s, const Value *va, uint32_t a, const Value *vb, uint32_t b)
{
    for (int k = 0; k < s->n; k++) {
        int c = rows_compare(va[k], vb[k]);
        if (c)
            return s->desc[k] ? c < 0 : c > 0;
    }
    return a > b;
}

/* A heap of the best top groups so far, the last of them at its root:
 * their values of the sort keys, positions in key order (ties go by
 * them) and slots (where the caller keeps what it keeps of them). */
typedef struct TopN {
    const QStep *s;
    uint32_t top, h;
    Value *vals;        /* [top + 1][8] */
    uint32_t *pos, *slot;
} TopN;

static void topn_init(VM *vm, GroupState *gs, TopN *t, const QStep *s, uint32_t top)
{
    size_t each = 8 + 8 * sizeof(Value);
    Value *vals = gs->heap = mem_alloc(((size_t)top + 1) * each);
    if (!vals)
        vm_throw(vm, v_obj(vm->oom));
    gs->heapn = top + 1;
    *t = (TopN){s, top, 0, vals, (uint32_t *)(void *)(vals + ((size_t)top + 1) * 8), NULL};
    t->slot = t->pos + top + 1;
}

/* Offers the group at position i (values cur): false when it is not among
 * the best top; else *slot is its slot (a new one, or the one of the group
 * it put out). */
static bool topn_offer(TopN *t, const Value *cur, uint32_t i, uint32_t *slot)
{
    const QStep *s = t->s;
    int nk = s->n;
    uint32_t at, *pos = t->pos, h = t->h;
#define V(k) (t->vals + (size_t)(k) * 8)
#define MOVE(to, from) (pos[to] = pos[from], t->slot[to] = t->slot[from], \
                        memcpy(V(to), V(from), (size_t)nk * sizeof(Value)))
    if (h == t->top && (t->top == 0 || topn_after(s, cur, i, V(0), pos[0])))
        return false;
    if (h < t->top) {
        *slot = at = t->h++;
        while (at && topn_after(s, cur, i, V((at - 1) / 2), pos[(at - 1) / 2])) {
            MOVE(at, (at - 1) / 2);
            at = (at - 1) / 2;
        }
    } else {    /* replaces the root, sifted down */
        *slot = t->slot[0];
        at = 0;
        for (;;) {
            uint32_t c = 2 * at + 1;
            if (c >= h)
                break;
            if (c + 1 < h && topn_after(s, V(c + 1), pos[c + 1], V(c), pos[c]))
                c++;
            if (!topn_after(s, V(c), pos[c], cur, i))
                break;
            MOVE(at, c);
            at = c;
        }
    }
#undef MOVE
#undef V
    pos[at] = i;
    t->slot[at] = *slot;
    memcpy(t->vals + (size_t)at * 8, cur, (size_t)nk * sizeof(Value));
    return true;
}

/* Keeps in order[0 .. n) (groups in key order) the first top of them in
 * the sort's order, still in key order; their number. */
static uint32_t topn_select(VM *vm, const QPlan *p, const QScan *sc, GroupState *gs,
                            const int *src, uint32_t top, uint32_t *order, uint32_t n)
{
    if (n <= top)
        return n;
    TopN t;
    Value cur[8];
    uint32_t slot;
    topn_init(vm, gs, &t, &p->steps[0], top);
    for (uint32_t i = 0; i < n; i++) {
        topn_values(vm, sc, gs, src, t.s->n, order[i], cur);
        topn_offer(&t, cur, i, &slot);
    }
    /* the kept positions in key order */
    bool *keep = mem_calloc(n, 1);
    if (!keep)
        vm_throw(vm, v_obj(vm->oom));
    for (uint32_t i = 0; i < t.h; i++)
        keep[t.pos[i]] = true;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (keep[i])
            order[m++] = order[i];
    mem_free(keep, n);
    return m;
}

/* The result's array, and an array that holds a group's aggregates'
 * values where the collector sees them (a comb call in an item around
 * them may collect: min and max of strings are new strings); both rooted. */
static VArray *rows_begin(VM *vm, const QScan *sc, size_t n, VArray **held)
{
    VArray *a = vm_array_new(vm, n);
    vm_push_root(vm, v_obj(a));
    *held = vm_array_new(vm, (size_t)sc->nagg_list);
    vm_push_root(vm, v_obj(*held));
    for (int j = 0; j < sc->nagg_list; j++)
        vm_array_push(vm, *held, v_nil());
    return a;
}

/* The groups' rows held as columns (vm_array_columns: maps only when the
 * array is read), when the query ends at the group by and its items are
 * bare aggregates (no comb code to run, so nothing but these values
 * differs from group_row's maps; a sum's overflow still raises here). */
static bool as_columns(const QPlan *p, const QScan *sc)
{
    if (p->nsteps || sc->nkeys + sc->naggs > 64)
        return false;
    for (int j = 0; j < sc->naggs; j++)
        if (sc->aggs[j].e->op != QX_AGG)
            return false;
    return true;
}

static Value group_columns(VM *vm, const QScan *sc, GroupState *gs, const uint32_t *order,
                           uint32_t n)
{
    Value names[64];
    uint32_t nf = (uint32_t)(sc->nkeys + sc->naggs), kw[64];
    for (int j = 0; j < sc->nkeys; j++) {
        names[j] = v_obj(sc->key_names[j]);
        kw[j] = qx_keywidth(sc->keys[j]);
    }
    for (int j = 0; j < sc->naggs; j++)
        names[sc->nkeys + j] = v_obj(sc->aggs[j].name);
    VArray *a = vm_array_columns(vm, n, nf, names);
    vm_push_root(vm, v_obj(a));
    Value *cell = a->cols->cells;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t g = order[i];
        if (i + PREFETCH < n)
            group_prefetch(gs, order[i + PREFETCH]);
        unsigned char kb[16];
        const unsigned char *k = group_key(gs, g, kb);
        for (int j = 0; j < sc->nkeys; k += kw[j++])
            *cell++ = qx_key_value(vm, sc->keys[j], k);
        for (int j = 0; j < sc->naggs; j++)
            *cell++ = qa_value(vm, &gs->aggs, sc->aggs[j].e->agg, g);
    }
    vm_pop_root(vm, 1);
    return v_obj(a);
}

static Value group_rows(VM *vm, const QPlan *p, const QScan *sc, GroupState *gs)
{
    if (!key_order(gs))
        vm_throw(vm, v_obj(vm->oom));
    uint32_t n = gs->nrange ? gs->nseen : gs->t.n;
    uint32_t *order = gs->order;
    int src[8];
    uint64_t top;
    if (topn_plan(p, sc, src, &top))
        n = topn_select(vm, p, sc, gs, src, (uint32_t)top, order, n);
    else if (as_columns(p, sc) && !getenv("COMB_GROUP_MAPS"))
        return group_columns(vm, sc, gs, order, n);
    VArray *held, *a = rows_begin(vm, sc, n, &held);
    for (uint32_t i = 0; i < n; i++) {
        if (i + PREFETCH < n)
            group_prefetch(gs, order[i + PREFETCH]);
        vm_array_push(vm, a, group_row(vm, sc, gs, order[i], held));
    }
    vm_pop_root(vm, 2);
    return v_obj(a);
}

/* Group 0 of g made again from a spilled or kept record (key, states). */
static void hold_group(GroupState *g, const unsigned char *rec, uint32_t kw)
{
    memcpy(g->t.keys, rec, kw);
    qa_clear(&g->aggs, 0);
    qa_load(&g->aggs, 0, rec + kw);
}

static int cmp_pos(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Past the budget: the spilled groups (w's own spilled too) come back in
 * key order; each key's records are folded into w's one group, which
 * becomes a row at once, or is offered to top-N, which keeps the records
 * of its best: memory holds the rows, not every group's states. */
static Value unspill_rows(VM *vm, Shared *sh, Worker *w)
{
    const QScan *sc = sh->sc;
    GroupState *g = w->grp;
    st_err err = {0};
    if (!spill(w) || st_sorter_finish(sh->gspill, &err) < 0)
        vm_error(vm, "%s", sh->err[0] ? sh->err : err.msg);
    uint32_t kw = sc->keyw, recw = kw + (uint32_t)qa_recw(&g->aggs), pos = 0, slot;
    int src[8];
    uint64_t top = 0;
    TopN t = {0};
    Value cur[8];
    if (topn_plan(sh->p, sc, src, &top)) {
        topn_init(vm, g, &t, &sh->p->steps[0], (uint32_t)top);
        if (!(g->kept = mem_alloc(((size_t)top + 1) * recw)))
            vm_throw(vm, v_obj(vm->oom));
    }
    VArray *held, *a = rows_begin(vm, sc, 0, &held);
    const void *r;
    int rc;
    bool any = false;
    /* group 0 is the key being folded; a row or an offer when the next
     * record's key differs, and after the last */
    for (;;) {
        rc = st_sorter_next(sh->gspill, &r, &err);
        const unsigned char *rec = rc == 1 ? r : NULL;
        if (any && (!rec || memcmp(gt_key(&g->t, 0), rec, kw))) {
            if (!t.s) {
                vm_array_push(vm, a, group_row(vm, sc, g, 0, held));
            } else {
                topn_values(vm, sc, g, src, t.s->n, 0, cur);
                if (topn_offer(&t, cur, pos, &slot)) {
                    memcpy(g->kept + (size_t)slot * recw, gt_key(&g->t, 0), kw);
                    qa_save(&g->aggs, 0, g->kept + (size_t)slot * recw + kw);
                }
            }
            pos++;
            qa_clear(&g->aggs, 0);
        }
        if (!rec)
            break;
        if (!any && (gt_append(&g->t, rec) < 0 || !qa_grow(&g->aggs, 1)))
            vm_throw(vm, v_obj(vm->oom));
        any = true;
        memcpy(g->t.keys, rec, kw);
        qa_load(&g->aggs, 0, rec + kw);
    }
    if (rc < 0)
        vm_error(vm, "%s", err.msg);
    /* top-N's kept groups, in key order (their positions), in the heap's
     * values' room (it is done with) as (position, slot) pairs */
    uint64_t *ps = (uint64_t *)(void *)t.vals;
    for (uint32_t i = 0; i < t.h; i++)
        ps[i] = (uint64_t)t.pos[i] << 32 | t.slot[i];
    if (t.h)
        qsort(ps, t.h, 8, cmp_pos);
    for (uint32_t i = 0; i < t.h; i++) {
        hold_group(g, g->kept + (size_t)(uint32_t)ps[i] * recw, kw);
        vm_array_push(vm, a, group_row(vm, sc, g, 0, held));
    }
    vm_pop_root(vm, 2);
    return v_obj(a);
}

static Value group_finish(VM *vm, Shared *sh, Worker *w, Ordered *o)
{
    (void)o;
    const QScan *sc = sh->sc;
    GroupState *gs = w->grp;
    if (sh->gspill)
        return unspill_rows(vm, sh, w);
    if (gs->parts && !parts_join(gs, sc))
        vm_throw(vm, v_obj(vm->oom));
    if (sc->nkeys == 0 && gs->t.n == 0) {  /* no keys: one group, even of nothing */
        mem_free(gs->order, gs->order ? (size_t)gs->ocap * 4 + 4 : 0);
        gs->order = NULL;   /* a merge's order of no groups */
        if (gt_find(&gs->t, (const unsigned char *)"", gt_hash((const unsigned char *)"", 0)) < 0 ||
            !qa_grow(&gs->aggs, 1))
            vm_throw(vm, v_obj(vm->oom));
    }
    return group_rows(vm, sh->p, sc, gs);
}

/* Whether the scan's groups go by its key's range, for every worker. */
static void group_start(VM *vm, Shared *sh)
{
    sh->grange_n = range_codes(vm, sh->sc, &sh->parts, &sh->grange_lo);
}

void qgroup_path(VM *vm, const QScan *sc, const PartList *pl, char *out, size_t size)
{
    uint64_t lo;
    uint32_t n = range_codes(vm, sc, pl, &lo);
    if (n)
        snprintf(out, size, "range of %u codes", n);
    else
        snprintf(out, size, "%s", !sc->nkeys ? "one group"
                                 : !getenv("COMB_GROUP_HASH") && dense_codes(sc) ? "dense codes" : "hash");
}

const QConsumerOps qcons_group = {
    .start = group_start,
    .begin = group_begin,
    .consume = group_consume,
    .done = group_done,
    .merge = group_merge,
    .finish = group_finish,
    .end = group_end,
};
