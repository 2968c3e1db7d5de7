/* prune: what a scan need not read: partitions eliminated by the where's
 * partition key (== a constant, `in` a set, and on a store placed by
 * windows of the key, a range of it), zone-map ranges of the
 * columns its conjuncts compare with constants (the readers skip blocks
 * outside them), the binary search of a block's rows on the first key
 * field, and the columns a reader decodes. */
#include "config.h"
#include "vm/query/run.h"

#include <inttypes.h>
#include <string.h>

#include "store/bindex.h"
#include "store/oindex.h"
#include "store/proj.h"

/* ---- the files to read ------------------------------------------------- */

static bool part_wanted(const QScan *sc, uint32_t g)
{
    if (sc->nparts == UINT32_MAX)
        return true;
    for (uint32_t i = 0; i < sc->nparts; i++)
        if (sc->parts[i] == g)
            return true;
    return false;
}

/* Whether file i of a store can hold rows the where keeps, by the range of
 * the partition key its manifest records (none: it may). */
static bool keys_may_hold(const QScan *sc, const VFiles *f, uint32_t i)
{
    const st_mkeys *k = f->keys ? &f->keys[i] : NULL;
    if (!k || k->state == ST_KEYS_UNKNOWN)
        return true;
    if (k->state == ST_KEYS_NONE)
        return false;
    return !sc->pk_bounded || (k->lo <= sc->pk_hi && k->hi >= sc->pk_lo);
}

void qprune_parts(VM *vm, const QScan *sc, PartList *pl)
{
    VFiles *f = sc->src->files;
    pl->p = vm_alloc(vm, (f->n + 1) * sizeof *pl->p);
    pl->files = vm_files_ref(f);
    pl->n = 0;
    pl->total = f->n;
    pl->by_keys = 0;
    for (uint32_t i = 0; i < f->n; i++) {
        uint32_t g = f->parts ? f->parts[i] : 0;
        if (!part_wanted(sc, g))
            continue;
        if (keys_may_hold(sc, f, i))
            pl->p[pl->n++] = (Part){f->paths[i], i, g};
        else
            pl->by_keys++;
    }
}

void qprune_parts_free(VM *vm, PartList *pl)
{
    if (pl->files) {
        vm_files_unref(pl->files);
        vm_free_mem(vm, pl->p, (pl->total + 1) * sizeof *pl->p);
        pl->files = NULL;
    }
}

/* ---- ranges and partitions from the predicate -------------------------- */

/* v (a string, a bool, an int of a set) in field f's storage form (clamped
 * to its range): false if no value of the field can equal it. A number
 * field compared with a number has its test instead (QExpr.num). */
static bool encode_const(const st_field *f, const QExpr *k, unsigned char *out, bool *exact)
{
    *exact = true;
    memset(out, 0, f->width);
    switch (f->type) {
    case ST_F32: case ST_F64:
        return false;
    case ST_CHAR:
        if (k->type != QT_STR || k->kn > f->width || memchr(k->ks, 0, k->kn))
            return false;
        memcpy(out, k->ks, k->kn);
        return true;
    case ST_ENUM: {
        int s = k->type == QT_STR ? st_field_enum_find(f, k->ks, k->kn) : -1;
        out[0] = (unsigned char)(s < 0 ? 0 : s);
        return s >= 0;
    }
    default: {
        if (k->type != QT_INT && k->type != QT_BOOL)
            return false;
        int64_t lo, hi, x = k->ki;
        vm_int_range(f, &lo, &hi);
        *exact = x >= lo && x <= hi;
        x = x < lo ? lo : x > hi ? hi : x;
        memcpy(out, &x, f->width);
        return true;
    }
    }
}

typedef struct Ranges {
    st_range *r;
    unsigned char *bytes;   /* bounds, ST_MAX_CHAR each */
    uint32_t n, cap;
} Ranges;

static void add_bound(VM *vm, QPlan *p, Ranges *rs, uint32_t col, const unsigned char *lo,
                      const unsigned char *hi, uint32_t width)
{
    if (rs->n == rs->cap) {
        uint32_t cap = rs->cap ? 2 * rs->cap : 8;
        st_range *r = qp_alloc(vm, p, cap * sizeof *r);
        if (rs->n)
            memcpy(r, rs->r, rs->n * sizeof *r);
        rs->r = r;
        rs->cap = cap;
    }
    unsigned char *l = lo ? qp_alloc(vm, p, width) : NULL, *h = hi ? qp_alloc(vm, p, width) : NULL;
    if (l)
        memcpy(l, lo, width);
    if (h)
        memcpy(h, hi, width);
    rs->r[rs->n++] = (st_range){col, l, h};
}

static void ranges_of(VM *vm, QPlan *p, const QExpr *e, Ranges *rs);

/* A number test's bound v in field f's storage form: a narrower int is
 * the low bytes, and a f32 the nearest float (no f32 lies between a bound
 * and its nearest float, so the range keeps what it should). */
static void num_bytes(const st_field *f, QNum v, unsigned char *out)
{
    if (f->type == ST_F32) {
        float x = (float)v.f;
        memcpy(out, &x, 4);
    } else {
        memcpy(out, &v, f->width);
    }
}

/* The run of values a number test keeps as a range: none for all but a
 * run (!=), an empty one (lo above hi) for none. */
static void range_of_num(VM *vm, QPlan *p, const st_field *f, int col, const QNumTest *t,
                         Ranges *rs)
{
    unsigned char lo[8], hi[8];
    if (t->kind == QN_ALL || t->kind == QN_OUT)
        return;
    num_bytes(f, t->lo, lo);
    num_bytes(f, t->hi, hi);
    add_bound(vm, p, rs, (uint32_t)col, t->kind == QN_LE ? NULL : lo, t->kind == QN_GE ? NULL : hi,
              f->width);
}

/* A comparison of a field with a constant gives a range of that column. */
static void range_of_compare(VM *vm, QPlan *p, const QExpr *e, Ranges *rs)
{
    const st_schema *s = p->scan.vs->s;
    if (e->a->op != QX_FIELD || e->b->op != QOP_CONST || e->op == QOP_NE || e->mask)
        return;
    const st_field *f = &s->fields[e->a->field];
    unsigned char v[ST_MAX_CHAR];
    bool exact;
    if (e->num.kind) {
        range_of_num(vm, p, f, e->a->field, &e->num, rs);
        return;
    }
    if (f->type == ST_CHAR && e->op != QOP_EQ)
        return;     /* zone maps hold 8-byte prefixes; equality is enough */
    if (!encode_const(f, e->b, v, &exact)) {
        if (e->op == QOP_EQ) {  /* nothing can match: an empty range */
            unsigned char one = 1, zero = 0;
            if (f->width == 1)
                add_bound(vm, p, rs, (uint32_t)e->a->field, &one, &zero, 1);
        }
        return;
    }
    bool lo = e->op == QOP_EQ || e->op == QOP_GT || e->op == QOP_GE;
    bool hi = e->op == QOP_EQ || e->op == QOP_LT || e->op == QOP_LE;
    add_bound(vm, p, rs, (uint32_t)e->a->field, lo ? v : NULL, hi ? v : NULL, f->width);
}

static void ranges_of(VM *vm, QPlan *p, const QExpr *e, Ranges *rs)
{
    if (!e)
        return;
    switch (e->op) {
    case QOP_AND:
        ranges_of(vm, p, e->a, rs);
        ranges_of(vm, p, e->b, rs);
        return;
    case QOP_EQ: case QOP_LT: case QOP_LE: case QOP_GT: case QOP_GE:
        range_of_compare(vm, p, e, rs);
        return;
    case QX_QUANT:
        /* any(tags, P): some tag of a kept tagset satisfies P's ranges */
        if (e->fn == QF_any)
            ranges_of(vm, p, e->a, rs);
        return;
    default:
        return;
    }
}

/* The one stored value partkey == c allows, into v: 1, 0 when none can
 * equal c, -1 when many can (a float above the ints stands for many u64s;
 * 0.0 is -0.0 too). */
static int eq_value(const st_field *f, const QExpr *e, unsigned char *v)
{
    bool exact;
    const QNumTest *t = &e->num;
    if (!t->kind)
        return encode_const(f, e->b, v, &exact) && exact;
    if (t->kind == QN_NONE)
        return 0;
    if (t->kind != QN_IN || memcmp(&t->lo, &t->hi, sizeof t->lo))
        return -1;
    num_bytes(f, t->lo, v);
    return 1;
}

/* The partitions a where can touch: partkey == c or partkey in set. */
static bool parts_of(VM *vm, QPlan *p, const QExpr *e, uint32_t **out, uint32_t *n)
{
    QScan *sc = &p->scan;
    const st_field *f = &sc->vs->s->fields[sc->src->partkey];
    unsigned char v[ST_MAX_CHAR];
    bool exact;
    if (!e)
        return false;
    if (e->op == QOP_AND)
        return parts_of(vm, p, e->a, out, n) || parts_of(vm, p, e->b, out, n);
    if (e->op == QOP_EQ && e->a->op == QX_FIELD && e->a->field == (int)sc->src->partkey &&
        e->b->op == QOP_CONST) {
        int one = eq_value(f, e, v);
        if (one < 0)
            return false;
        *out = qp_alloc(vm, p, sizeof **out);
        *n = 0;
        if (one) {
            uint32_t vol, part;
            st_storeinfo info;
            st_store_info(sc->src->st, &info);
            st_store_place(sc->src->st, v, f->width, &vol, &part);
            (*out)[(*n)++] = vol * info.partitions + part;
        }
        return true;
    }
    /* (a float above the ints stands for many u64 values: no elimination) */
    if (e->op == QX_SET && e->set && !e->set->match && e->a->op == QX_FIELD &&
        e->a->field == (int)sc->src->partkey && e->set->type != QT_FLOAT &&
        !(e->set->big && e->set->big->n)) {
        const QSet *s = e->set;
        st_storeinfo info;
        st_store_info(sc->src->st, &info);
        *out = qp_alloc(vm, p, (s->n + 1) * sizeof **out);
        *n = 0;
        for (size_t i = 0; i < s->n; i++) {
            QExpr k = {.type = s->type, .ki = s->ints[i], .ks = s->strs[i], .kn = s->lens[i]};
            uint32_t vol, part, g, j;
            if (!encode_const(f, &k, v, &exact) || !exact)
                continue;
            st_store_place(sc->src->st, v, f->width, &vol, &part);
            g = vol * info.partitions + part;
            for (j = 0; j < *n && (*out)[j] != g; j++)
                ;
            if (j == *n)
                (*out)[(*n)++] = g;
        }
        return true;
    }
    return false;
}

/* Narrows a bound [*lo, *hi] to [a, b] too (st_field_order images: a
 * above b leaves nothing). */
static void narrow(uint64_t *lo, uint64_t *hi, uint64_t a, uint64_t b)
{
    *lo = a > *lo ? a : *lo;
    *hi = b < *hi ? b : *hi;
}

/* Narrows a bound [*lo, *hi] of field f to its range r too. */
static void narrow_by(const st_field *f, const st_range *r, uint64_t *lo, uint64_t *hi)
{
    narrow(lo, hi, r->lo ? st_field_order(f, r->lo) : 0,
           r->hi ? st_field_order(f, r->hi) : UINT64_MAX);
}

/* The where's bounds on the partition key from an `in` set of it: its
 * least and greatest values. */
static void set_bounds(QScan *sc, const st_field *f, const QExpr *e)
{
    unsigned char v[ST_MAX_CHAR];
    bool exact;
    if (e && e->op == QOP_AND) {
        set_bounds(sc, f, e->a);
        set_bounds(sc, f, e->b);
        return;
    }
    if (!e || e->op != QX_SET || !e->set || e->set->match || e->a->op != QX_FIELD ||
        e->a->field != (int)sc->src->partkey || e->set->type != QT_INT ||
        (e->set->big && e->set->big->n))
        return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < e->set->n; i++) {
        QExpr k = {.type = QT_INT, .ki = e->set->ints[i]};
        if (!encode_const(f, &k, v, &exact) || !exact)
            continue;
        uint64_t o = st_field_order(f, v);
        lo = o < lo ? o : lo;
        hi = o > hi ? o : hi;
    }
    narrow(&sc->pk_lo, &sc->pk_hi, lo, hi);     /* none: lo above hi, nothing */
    sc->pk_bounded = true;
}

/* The where's bounds on the partition key (an integer's): its ranges on
 * the key (==, <, between ...) and its `in` sets of it. */
static void key_bounds(QScan *sc, const Ranges *rs)
{
    const st_field *f = &sc->vs->s->fields[sc->src->partkey];
    sc->pk_lo = 0;
    sc->pk_hi = UINT64_MAX;
    sc->pk_bounded = false;
    if (f->type > ST_I64 && f->type != ST_TIME)
        return;     /* key ranges are of integer keys */
    for (uint32_t i = 0; i < rs->n; i++) {
        const st_range *r = &rs->r[i];
        if (r->col == sc->src->partkey) {
            narrow_by(f, r, &sc->pk_lo, &sc->pk_hi);
            sc->pk_bounded = true;
        }
    }
    set_bounds(sc, f, sc->where);
}

/* An integer field's value of order image o (st_field_order), as stored:
 * the low bytes of the value, its sign bit flipped back when signed. */
static void order_bytes(const st_field *f, uint64_t o, unsigned char *out)
{
    if ((f->type >= ST_I8 && f->type <= ST_I64) || f->type == ST_TIME)
        o ^= UINT64_C(1) << 63;
    memcpy(out, &o, f->width);
}

/* The partitions a store placed by windows of its partition key can hold
 * the rows of the where's bounds on that key in (key_bounds): `run
 * between A and B`, `run >= A`, `run in A..B` read only the windows those
 * cover. */
static bool parts_of_ranges(VM *vm, QPlan *p, uint32_t **out, uint32_t *n)
{
    QScan *sc = &p->scan;
    const st_field *f = &sc->vs->s->fields[sc->src->partkey];
    unsigned char lo[8], hi[8];
    if (!sc->pk_bounded)
        return false;
    /* an image at either end of them all bounds nothing (no narrower
     * type's value has one) */
    order_bytes(f, sc->pk_lo, lo);
    order_bytes(f, sc->pk_hi, hi);
    st_storeinfo info;
    st_store_info(sc->src->st, &info);
    *out = qp_alloc(vm, p, (size_t)info.volumes * info.partitions * sizeof **out);
    return st_store_place_range(sc->src->st, sc->pk_lo ? lo : NULL,
                                sc->pk_hi < UINT64_MAX ? hi : NULL, f->width, *out, n);
}

/* ---- bitmap indexes ------------------------------------------------------ */

/* Whether the bitmap indexes answer e: ==, != and `in` between an indexed
 * field and constants (any test of an enum with constants, which binds as
 * the mask of its symbols that hold), an indexed bool field as a test, and
 * their &&, || and !. */
static bool indexed(const QScan *sc, const QExpr *e)
{
    const st_schema *s = sc->vs->s;
    unsigned char v[ST_MAX_CHAR];
    if (e->mask && e->a && e->a->op == QX_FIELD && e->a->field >= 0 && !e->tag)
        return s->fields[e->a->field].index && !sc->scan_field[e->a->field]; /* an enum's symbols */
    switch (e->op) {
    case QOP_AND: case QOP_OR:
        return indexed(sc, e->a) && indexed(sc, e->b);
    case QOP_NOT:
        return indexed(sc, e->a);
    case QX_FIELD:
        return e->field >= 0 && s->fields[e->field].index && !sc->scan_field[e->field] &&
               s->fields[e->field].type == ST_BOOL && !e->tag;
    case QOP_EQ: case QOP_NE: case QOP_LT: case QOP_LE: case QOP_GT: case QOP_GE:
        /* a number test holds for some of the index's values; else == or != */
        return e->a->op == QX_FIELD && e->a->field >= 0 && s->fields[e->a->field].index &&
               !sc->scan_field[e->a->field] && !e->tag && e->b->op == QOP_CONST &&
               (e->num.kind || ((e->op == QOP_EQ || e->op == QOP_NE) &&
                                eq_value(&s->fields[e->a->field], e, v) >= 0));
    case QX_SET:
        return e->a->op == QX_FIELD && e->a->field >= 0 && s->fields[e->a->field].index &&
               !sc->scan_field[e->a->field] && !e->tag && e->set && !e->set->match && e->set->type != QT_FLOAT &&
               !(e->set->big && e->set->big->n);
    default:
        return false;
    }
}

/* Moves the where's conjuncts the indexes answer to sc->index_where. */
static void split_indexed(VM *vm, QPlan *p, QExpr **where, QExpr **idx)
{
    QExpr *e = *where;
    if (!e)
        return;
    if (e->op == QOP_AND && !indexed(&p->scan, e)) {
        split_indexed(vm, p, &e->a, idx);
        split_indexed(vm, p, &e->b, idx);
        *where = !e->a ? e->b : !e->b ? e->a : e;
        return;
    }
    if (!indexed(&p->scan, e))
        return;
    if (*idx) {
        QExpr *both = qp_alloc(vm, p, sizeof *both);
        *both = (QExpr){.op = QOP_AND, .type = QT_BOOL, .a = *idx, .b = e, .line = e->line, .col = e->col};
        e = both;
    }
    *idx = e;
    *where = NULL;
}

/* The columns the scan's wheres, sort, keys and aggregates read, as they
 * are planned now [ncols]. */
static bool *uses_now(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    bool *want = sc->want, *used = qp_alloc(vm, p, st_schema_ncols(sc->vs->s));
    sc->want = used;
    qp_scan_uses(sc);
    sc->want = want;
    return used;
}

/* The columns only the indexed conjuncts read need no decoding now. */
static void unwant_indexed(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    bool *rest = uses_now(vm, p);
    for (uint32_t c = 0; c < sc->vs->s->nfields; c++)
        sc->want[c] = sc->want[c] && (rest[c] || sc->out_fields[c]);
}

/* Columns only the collected rows show need their values at the rows the
 * where keeps alone: a block storing them by RLE or FOR gives those
 * without decoding the column (a 1% cut of four columns decoded 65% of
 * its time away). Not for a row per tag, nor a projection's blocks. */
static void plan_defer(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    const st_schema *s = sc->vs->s;
    sc->defer = NULL;
    if (sc->consumer != QC_COLLECT || sc->tags || sc->proj)
        return;
    bool *used = uses_now(vm, p), any = false;
    for (uint32_t c = 0; c < s->nrow; c++) {
        used[c] = sc->want[c] && sc->out_fields[c] && !used[c];    /* used: now the deferred */
        any |= used[c];
    }
    memset(used + s->nrow, 0, st_schema_ncols(s) - s->nrow);
    sc->defer = any ? used : NULL;
}

/* The indexed fields whose index, in the first block the scan reads, is
 * more than 4 times the size of their decoded column: many values, each
 * in few rows (a roaring bitmap costs about 2 bytes a row in arrays of
 * rows, plus 12 bytes a value), where decoding the column costs less than
 * reading and decoding the bitmaps (sc->scan_field). */
static int weigh_indexes(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    const st_schema *s = sc->vs->s;
    int nscan = 0;
    sc->scan_field = qp_alloc(vm, p, s->nfields);
    PartList pl;
    qprune_parts(vm, sc, &pl);
    st_nbuf_opts io = scan_read_opts(vm);
    st_known_schema known = {s, sc->vs->text, sc->vs->text_len};
    st_err err;
    st_reader *r = pl.n ? vm_files_reader(pl.files, pl.p[0].fi, &io, &known, &err) : NULL;
    st_file_info info;
    if (r)
        st_reader_info(r, &info);
    for (uint32_t f = 0; r && info.nblocks && f < s->nrow; f++) {
        uint32_t col, idx;
        uint64_t raw = info.ntagsets / info.nblocks * s->fields[f].width;
        if (s->fields[f].index && st_reader_block_sizes(r, 0, f, &col, &idx, &err) == 0 && idx > 4 * raw) {
            sc->scan_field[f] = true;
            nscan++;
        }
    }
    if (r)
        vm_files_release(pl.files, pl.p[0].fi, r);
    qprune_parts_free(vm, &pl);
    return nscan;
}

static void plan_index(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    if (!sc->vs->s->nindex) {
        sc->index_why = "scan: no field of the schema has an index";
        return;
    }
    int nscan = weigh_indexes(vm, p);
    split_indexed(vm, p, &sc->where, &sc->index_where);
    if (!sc->index_where) {
        sc->index_why = nscan ? "scan: the where's indexed fields have indexes over 4 times their "
                                "decoded columns (many values, few rows each), or it tests none with "
                                "==, !=, <, in or as a bool"
                              : "scan: no conjunct of the where tests indexed fields with ==, !=, "
                                "<, in or as a bool";
        return;
    }
    unwant_indexed(vm, p);
    sc->index_why = sc->where ? "bitmap indexes for the conjuncts on indexed fields, then the kernels "
                                "for the rest over the rows they leave"
                              : "bitmap indexes answer the whole where: no column of it is decoded";
}

/* Whether an indexed int field's value (an index key) passes number test
 * t, the kernels' test in the column's terms (int64 for these types). */
static bool num_holds(const st_field *f, const QNumTest *t, uint64_t key)
{
    int64_t v = f->type == ST_I8 ? (int8_t)key : f->type == ST_I16 ? (int16_t)key : (int64_t)key;
    bool in = v >= t->lo.i && v <= t->hi.i;
    switch (t->kind) {
    case QN_ALL: return true;
    case QN_LE: return v <= t->hi.i;
    case QN_GE: return v >= t->lo.i;
    case QN_IN: return in;
    case QN_OUT: return !in;
    default: return false;
    }
}

/* A bitmap of field fe's index (whose checksum held) that is malformed, or
 * no memory: -1 with err set, never a guess. */
static int damaged(const st_batch *b, const QExpr *fe, st_err *err)
{
    return st_err_set(err, ST_ECORRUPT, "block %" PRIu64 ": index of '%s': a bitmap is malformed "
                      "or holds a row past the block", b->block, fe->name ? fe->name->data : "?");
}

/* The rows of block b (its ntagsets) as a bitset of nw words, a bit a row:
 * what the indexes' bitmaps are read into, in place, and combined by, a
 * word at a time (no roaring_bitmap_t made or freed for each block). */
typedef struct Rows {
    const QScan *sc;
    st_reader *r;
    const st_batch *b;
    size_t nw;
} Rows;

/* ORs the rows of value i of index idx (field fe's) into w. */
static int or_value(const Rows *x, const QExpr *fe, const unsigned char *idx, size_t len, uint32_t i,
                    uint64_t *w, st_err *err)
{
    size_t at = st_bidx_at(idx, i);
    uint32_t sz = st_bidx_size(idx, i);
    if (at + sz > len || st_bidx_or_rows(idx + at, sz, x->b->ntagsets, w) < 0)
        return damaged(x->b, fe, err);
    return 0;
}

/* Flips w's rows (not the bits past the block's last). */
static void flip(const Rows *x, uint64_t *w)
{
    for (size_t i = 0; i < x->nw; i++)
        w[i] = ~w[i];
    if (x->b->ntagsets % 64)
        w[x->nw - 1] &= (UINT64_C(1) << (x->b->ntagsets % 64)) - 1;
}

/* The rows of block b that e holds for, from the reader's indexes, into
 * w: 0, or -1 with err set. */
static int index_rows(const Rows *x, const QExpr *e, uint64_t *w, st_err *err)
{
    const st_schema *s = x->sc->vs->s;
    const unsigned char *idx;
    size_t len;
    unsigned char v[ST_MAX_CHAR];
    bool exact;
    const QExpr *fe = e->op == QX_FIELD ? e : e->a;
    if (e->op == QOP_AND || e->op == QOP_OR) {
        uint64_t *y = mem_alloc(x->nw * 8);
        int rc = y ? 0 : st_err_set(err, ST_ENOMEM, "out of memory for a block's rows");
        if (rc == 0 && (rc = index_rows(x, e->a, w, err)) == 0 && (rc = index_rows(x, e->b, y, err)) == 0) {
            if (e->op == QOP_AND)
                for (size_t i = 0; i < x->nw; i++)
                    w[i] &= y[i];
            else
                for (size_t i = 0; i < x->nw; i++)
                    w[i] |= y[i];
        }
        mem_free(y, x->nw * 8);
        return rc;
    }
    if (e->op == QOP_NOT) {
        if (index_rows(x, e->a, w, err) < 0)
            return -1;
        flip(x, w);
        return 0;
    }
    memset(w, 0, x->nw * 8);
    const st_field *f = &s->fields[fe->field];
    if (st_reader_index(x->r, (uint32_t)fe->field, &idx, &len, err) < 0)
        return -1;
    uint32_t k = st_bidx_nvalues(idx), i;
    if (e->op == QX_FIELD)
        return (i = st_bidx_find(idx, 1)) < k ? or_value(x, fe, idx, len, i, w, err) : 0;
    if (e->mask || e->num.kind) {  /* the values of the block the test holds for */
        size_t at = st_bidx_at(idx, 0);
        for (i = 0; i < k; i++) {
            uint64_t key = st_bidx_value(idx, i);
            uint32_t sz = st_bidx_size(idx, i);
            bool holds = e->mask ? key < f->nsyms && ((e->mask[key >> 3] >> (key & 7)) & 1)
                                 : num_holds(f, &e->num, key);
            if (holds && (at + sz > len || st_bidx_or_rows(idx + at, sz, x->b->ntagsets, w) < 0))
                return damaged(x->b, fe, err);
            at += sz;
        }
    } else if (e->op == QX_SET) {
        const QSet *set = e->set;
        for (size_t j = 0; j < set->n; j++) {
            QExpr c = {.type = set->type, .ki = set->ints[j], .ks = set->strs[j], .kn = set->lens[j]};
            if (encode_const(f, &c, v, &exact) && exact && (i = st_bidx_find(idx, st_bidx_key(f, v))) < k &&
                or_value(x, fe, idx, len, i, w, err) < 0)
                return -1;
        }
    } else {
        if (eq_value(f, e, v) > 0 && (i = st_bidx_find(idx, st_bidx_key(f, v))) < k &&
            or_value(x, fe, idx, len, i, w, err) < 0)
            return -1;
        if (e->op == QOP_NE)
            flip(x, w);
    }
    return 0;
}

/* The rows of block b the scan's index_where holds for, into a new bitset
 * (*nw words; mem_free it), or NULL with err set. */
static uint64_t *block_rows(const QScan *sc, st_reader *r, const st_batch *b, size_t *nw, st_err *err)
{
    Rows x = {sc, r, b, ((size_t)b->ntagsets + 63) / 64};
    uint64_t *w = mem_alloc((x.nw ? x.nw : 1) * 8);
    if (!w) {
        st_err_set(err, ST_ENOMEM, "out of memory for a block's rows");
        return NULL;
    }
    if (x.nw && index_rows(&x, sc->index_where, w, err) < 0) {
        mem_free(w, x.nw * 8);
        return NULL;
    }
    *nw = x.nw ? x.nw : 1;
    return w;
}

/* The bits of w from row i to the end of its word or hi (*e), shifted
 * down: [lo, hi) read a word at a time. */
static uint64_t bits_at(const uint64_t *w, uint32_t i, uint32_t hi, uint32_t *e)
{
    *e = (i | 63) + 1 < hi ? (i | 63) + 1 : hi;
    uint64_t m = w[i >> 6] >> (i & 63);
    return *e - i < 64 ? m & ((UINT64_C(1) << (*e - i)) - 1) : m;
}

int qprune_index_count(const QScan *sc, st_reader *r, const st_batch *b, uint32_t lo, uint32_t hi,
                       uint64_t *n, st_err *err)
{
    size_t nw;
    uint64_t *w = block_rows(sc, r, b, &nw, err);
    if (!w)
        return -1;
    *n = st_bidx_count(w, lo, hi);
    mem_free(w, nw * 8);
    return 0;
}

int qprune_index_rows(const QScan *sc, st_reader *r, const st_batch *b, uint32_t lo, uint32_t hi,
                      KSel *out, st_err *err)
{
    size_t nw;
    uint64_t *w = block_rows(sc, r, b, &nw, err);
    if (!w)
        return -1;
    out->n = 0;
    for (uint32_t i = lo, e; i < hi; i = e)
        for (uint64_t m = bits_at(w, i, hi, &e); m; m &= m - 1)
            out->idx[out->n++] = i + (uint32_t)__builtin_ctzll(m);
    mem_free(w, nw * 8);
    return 0;
}

/* Whether conjunct e tests field c against a constant by a number test of
 * its storage type's bounds: exactly the zone range it gives, so the tags
 * an order index keeps by that range need no test of it. */
static bool order_exact(const QExpr *e, int c)
{
    return (e->op == QOP_EQ || e->op == QOP_LT || e->op == QOP_LE || e->op == QOP_GT ||
            e->op == QOP_GE) && e->a->op == QX_FIELD && e->a->field == c && e->b->op == QOP_CONST &&
           !e->mask && (e->num.kind == QN_LE || e->num.kind == QN_GE || e->num.kind == QN_IN);
}

/* e's conjuncts other than the order index's exact tests of field c, joined
 * again by &&: each new && a copy of one of e's (so of its scratch slot,
 * which no other node on its path shares); NULL when none is left. */
static QExpr *order_rest(VM *vm, QPlan *p, QExpr *e, int c)
{
    QExpr *keep[64], *ands[64];
    uint32_t nk = 0, na = 0, nstack = 1;
    QExpr *stack[128] = {e};
    while (nstack) {
        QExpr *x = stack[--nstack];
        if (x->op == QOP_AND && nstack + 2 <= 128 && na < 64) {
            ands[na++] = x;
            stack[nstack++] = x->b;
            stack[nstack++] = x->a;
        } else if (!order_exact(x, c)) {
            if (nk == 64)
                return e;   /* too many to join again: test them all */
            keep[nk++] = x;
        }
    }
    QExpr *r = nk ? keep[0] : NULL;
    for (uint32_t i = 1; i < nk; i++) {
        QExpr *and = qp_alloc(vm, p, sizeof *and);
        *and = *ands[i - 1];
        and->a = r;
        and->b = keep[i];
        r = and;
    }
    return r;
}

/* The tag field with an order index that the tag where's ranges (tr, n)
 * bound, and that bound (sc->tag_order, -1: none): each tag must hold it,
 * so a block's tags outside it need no test, and those in it no test of
 * the conjuncts that gave it exactly (sc->tag_rest: the others). */
static void plan_tag_order(VM *vm, QPlan *p, const st_range *tr, uint32_t n)
{
    QScan *sc = &p->scan;
    const st_schema *s = sc->vs->s;
    sc->tag_order = -1;
    sc->tag_order_lo = 0;
    sc->tag_order_hi = UINT64_MAX;
    for (uint32_t i = 0; i < n && sc->tags; i++) {
        uint32_t c = tr[i].col;
        if (c < s->nrow || c >= s->nfields || !s->fields[c].index ||
            (sc->tag_order >= 0 && (uint32_t)sc->tag_order != c))
            continue;
        sc->tag_order = (int)c;
        narrow_by(&s->fields[c], &tr[i], &sc->tag_order_lo, &sc->tag_order_hi);
    }
    sc->tag_rest = sc->tag_order >= 0 ? order_rest(vm, p, sc->tag_where, sc->tag_order) : sc->tag_where;
}

int qprune_tag_rows(const QScan *sc, st_reader *r, const st_batch *b, uint32_t a, uint32_t e,
                    KSel *out, uint64_t *skipped, st_err *err)
{
    uint32_t c = (uint32_t)sc->tag_order;
    const st_field *f = &sc->vs->s->fields[c];
    const unsigned char *idx;
    size_t len;
    uint32_t from, to;
    if (sc->tag_order < 0 || a >= e || !b->cols[c])
        return 0;
    if (st_reader_index(r, c, &idx, &len, err) < 0)
        return -1;
    st_oidx_range(f, b->cols[c], idx, sc->tag_order_lo, sc->tag_order_hi, &from, &to);
    if ((uint64_t)(to - from) * 4 > e - a)
        return 0;   /* most tags are in range: testing them all costs no more */
    /* the tags in range among [a, e), in row order: a bit each */
    size_t words = ((size_t)(e - a) + 63) / 64;
    uint64_t *bits = mem_calloc(words, 8);
    if (!bits)
        return st_err_set(err, ST_ENOMEM, "out of memory for a block's tags");
    int rc = 0;
    for (uint32_t i = from; i < to; i++) {
        uint32_t t = st_oidx_row(idx, i);
        if (t >= b->ntags) {
            rc = st_err_set(err, ST_ECORRUPT, "%s: block %" PRIu64 ": order index of '%s' holds row %"
                            PRIu32 " past the block's tags", st_reader_path(r), b->block, f->name, t);
            break;
        }
        if (t >= a && t < e)
            bits[(t - a) / 64] |= UINT64_C(1) << ((t - a) % 64);
    }
    out->n = 0;
    for (size_t w = 0; w < words && rc == 0; w++)
        for (uint64_t x = bits[w]; x; x &= x - 1)
            out->idx[out->n++] = a + (uint32_t)(w * 64) + (uint32_t)__builtin_ctzll(x);
    mem_free(bits, words * 8);
    *skipped += (e - a) - out->n;
    return rc < 0 ? -1 : 1;
}

/* Whether the scan reads the files' projections (store/proj.h): rows per
 * tag, of tag fields only (no tagset where, no tagset field read, no comb
 * called), into a consumer that does not keep the rows' order, with a bound
 * on the projection field among the tag where's ranges (tr, n). */
static void plan_proj(VM *vm, QPlan *p, const st_range *tr, uint32_t n)
{
    QScan *sc = &p->scan;
    const st_schema *s = sc->vs->s;
    int f = st_schema_proj(s);
    bool bound = false;
    sc->proj = false;
    sc->proj_why = NULL;
    if (f < 0)
        return;
    for (uint32_t i = 0; i < n; i++)
        bound |= tr[i].col == (uint32_t)f && (tr[i].lo || tr[i].hi);
    for (uint32_t c = 0; c < s->nfields && !sc->proj_why; c++)
        if (sc->want[c] && !s->fields[c].carried)
            sc->proj_why = c < s->nrow ? "the query reads key or tagset fields"
                                       : "the query reads tag fields the projection does not carry";
    if (!sc->proj_why)
        sc->proj_why = !sc->tags || sc->where || sc->index_where ? "the rows are tagsets, or a where tests them"
                       : sc->vm_calls ? "the scan calls comb"
                       : sc->consumer != QC_COUNT && sc->consumer != QC_GROUP && sc->consumer != QC_STAT
                           ? "the rows are kept in key order"
                       : !bound ? "the tag where bounds not the projection field"
                                : NULL;
    sc->proj = !sc->proj_why;
    /* the bound, which each block of the projection (in its order) holds
     * as one run of rows, none of them to test again by its conjuncts */
    sc->proj_lo = 0;
    sc->proj_hi = UINT64_MAX;
    for (uint32_t i = 0; sc->proj && i < n; i++)
        if (tr[i].col == (uint32_t)f)
            narrow_by(&s->fields[f], &tr[i], &sc->proj_lo, &sc->proj_hi);
    sc->proj_rest = sc->proj ? order_rest(vm, p, sc->tag_where, f) : sc->tag_where;
}

/* Whether every file the scan reads holds only keys within the where's
 * bounds on the partition key, by the ranges the manifest records: its
 * exact tests of the key then hold for every row read, and need no test
 * (a run's partitions of `between(run, A, B)`: a count then comes from the
 * indexes or footers, no column of run decoded). */
static bool keys_inside(const QScan *sc)
{
    const VFiles *f = sc->src->files;
    if (!sc->pk_bounded || !f->keys)
        return false;
    for (uint32_t i = 0; i < f->n; i++) {
        const st_mkeys *k = &f->keys[i];
        if (!part_wanted(sc, f->parts[i]) || !keys_may_hold(sc, f, i))
            continue;
        if (k->state == ST_KEYS_UNKNOWN ||
            (k->state == ST_KEYS_RANGE && (k->lo < sc->pk_lo || k->hi > sc->pk_hi)))
            return false;
    }
    return true;
}

/* The where less its exact tests of the first key field (sc->key_rest):
 * a file is sorted by that field, so the rows qprune_rows leaves of a block
 * pass them all (the 10% cut over runs 1..P tests no run, and a count the
 * indexes answer for the rest decodes nothing but the run column's two
 * binary searches). Not for a float key, whose f32 ranges are rounded. */
static void plan_key_rest(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    const st_field *f = &sc->vs->s->fields[0];
    sc->key_narrows = false;
    if (!sc->where || !sc->vs->s->nrow || f->type == ST_F32 || f->type == ST_F64)
        return;
    sc->key_rest = order_rest(vm, p, sc->where, 0);
    sc->key_narrows = sc->key_rest != sc->where;
}

void qprune_plan(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    if (sc->ranges || sc->nparts)
        return;
    Ranges rs = {0};
    ranges_of(vm, p, sc->where, &rs);
    uint32_t ntagset_ranges = rs.n;
    ranges_of(vm, p, sc->tag_where, &rs);
    sc->ranges = rs.r;
    sc->nranges = rs.n;
    plan_tag_order(vm, p, rs.r + ntagset_ranges, rs.n - ntagset_ranges);
    sc->nparts = UINT32_MAX;
    if (sc->src->st)
        key_bounds(sc, &rs);
    if (sc->src->st && !parts_of(vm, p, sc->where, &sc->parts, &sc->nparts) &&
        !parts_of_ranges(vm, p, &sc->parts, &sc->nparts))
        sc->nparts = UINT32_MAX;
    if (sc->pk_bounded && sc->pk_lo > sc->pk_hi)
        sc->nparts = 0;     /* no key can be in an empty range: no partition */
    else if (sc->where && sc->src->st && keys_inside(sc))
        sc->where = order_rest(vm, p, sc->where, (int)sc->src->partkey);
    sc->footer_count = sc->consumer == QC_COUNT && !sc->where && !sc->tag_where;
    if (!sc->footer_count)
        plan_index(vm, p);
    plan_key_rest(vm, p);
    plan_proj(vm, p, rs.r + ntagset_ranges, rs.n - ntagset_ranges);
    plan_defer(vm, p);
}

/* ---- a block's rows by the key, a reader's columns ---------------------- */

/* The first row of [lo, hi) whose first key field (column c, sorted in the
 * file) orders after k, or at or after it when !after. */
static uint32_t key_search(const st_field *f, const char *c, uint32_t lo, uint32_t hi,
                           uint64_t k, bool after)
{
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint64_t v = st_field_order(f, c + (size_t)mid * f->width);
        if (after ? v <= k : v < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Narrows the batch's tagsets [*lo, *hi) to those the where's ranges on the
 * first key field allow: a file is sorted by its key, so two binary searches
 * find them (Gecko's key query reads a few rows of its block, not all; the
 * where still tests each row left). */
void qprune_rows(const QScan *sc, const st_batch *b, uint32_t *lo, uint32_t *hi)
{
    const st_field *f = &sc->vs->s->fields[0];
    for (uint32_t i = 0; i < sc->nranges; i++) {
        const st_range *q = &sc->ranges[i];
        if (q->col != 0 || !b->cols[0])
            continue;
        /* most blocks lie inside the range: their first and last keys say
         * so, with no search */
        const char *c = b->cols[0];
        uint64_t klo = q->lo ? st_field_order(f, q->lo) : 0, khi = q->hi ? st_field_order(f, q->hi) : 0;
        if (q->lo && *lo < *hi && st_field_order(f, c + (size_t)*lo * f->width) < klo)
            *lo = key_search(f, c, *lo, *hi, klo, false);
        if (q->hi && *lo < *hi && st_field_order(f, c + (size_t)(*hi - 1) * f->width) > khi)
            *hi = key_search(f, c, *lo, *hi, khi, true);
    }
}

st_reader *qprune_proj_open(const QScan *sc, st_reader *r, const st_nbuf_opts *io, st_err *err)
{
    const st_schema *s = sc->vs->s;
    st_file_info info;
    st_reader_info(r, &info);
    st_reader *pr = st_proj_open(st_reader_path(r), s, &info, io, err);
    uint32_t cols[ST_MAX_FIELDS], ncols = 1, nranges = 0;
    st_range ranges[64];
    cols[0] = 0;    /* the projection field, whose runs qprune_proj_rows finds */
    for (uint32_t c = s->nrow; pr && c < s->nfields; c++)
        if (sc->want[c] && st_proj_col(s, c) != 0)
            cols[ncols++] = st_proj_col(s, c);
    for (uint32_t i = 0; pr && i < sc->nranges && nranges < 64; i++)
        if (sc->ranges[i].col < s->nfields && st_proj_col(s, sc->ranges[i].col) != UINT32_MAX) {
            ranges[nranges] = sc->ranges[i];
            ranges[nranges++].col = st_proj_col(s, sc->ranges[i].col);
        }
    if (pr && (st_reader_select(pr, cols, ncols, err) < 0 || st_reader_where(pr, ranges, nranges, err) < 0)) {
        st_reader_close(pr);
        return NULL;
    }
    return pr;
}

void qprune_proj_view(const QScan *sc, const st_batch *pb, st_batch *v, uint32_t *start)
{
    const st_schema *s = sc->vs->s;
    start[0] = 0;
    start[1] = pb->ntagsets;
    v->ntagsets = 1;
    v->ntags = pb->ntagsets;
    v->first = 0;
    v->block = pb->block;
    for (uint32_t c = 0; c < s->nfields; c++)
        v->cols[c] = c < s->nrow || !s->fields[c].carried ? NULL : pb->cols[st_proj_col(s, c)];
    v->cols[s->nfields] = &start[1];   /* the one tagset's tag count */
    v->counts = &start[1];
    v->tag_start = start;
}

void qprune_proj_rows(const QScan *sc, const st_batch *b, uint32_t *a, uint32_t *e)
{
    uint32_t f = (uint32_t)st_schema_proj(sc->vs->s);
    const st_field *fd = &sc->vs->s->fields[f];
    *a = key_search(fd, b->cols[f], 0, b->ntags, sc->proj_lo, false);
    *e = sc->proj_lo > sc->proj_hi ? *a : key_search(fd, b->cols[f], *a, b->ntags, sc->proj_hi, true);
}

/* The fields whose indexes index_rows reads for e, to the reader: a cold
 * scan then asks for them ahead (st_reader_expect_index). */
static void expect_indexes(st_reader *r, const QExpr *e)
{
    if (e->op == QOP_AND || e->op == QOP_OR) {
        expect_indexes(r, e->a);
        expect_indexes(r, e->b);
    } else if (e->op == QOP_NOT) {
        expect_indexes(r, e->a);
    } else {
        st_reader_expect_index(r, (uint32_t)(e->op == QX_FIELD ? e : e->a)->field);
    }
}

/* The scan's columns, zone-map ranges and indexes, to a reader of one of
 * its files. */
int qprune_select(const QScan *sc, st_reader *r, st_err *err)
{
    uint32_t cols[ST_MAX_FIELDS + 1], ncols = 0, n = st_schema_ncols(sc->vs->s);
    for (uint32_t c = 0; c < n; c++)
        if (sc->want[c])
            cols[ncols++] = c;
    if (st_reader_select(r, cols, ncols, err) < 0)
        return -1;
    if (sc->index_where)
        expect_indexes(r, sc->index_where);
    uint32_t ndefer = 0;
    for (uint32_t c = 0; c < n && sc->defer; c++)
        if (sc->defer[c])
            cols[ndefer++] = c;
    if (st_reader_defer(r, cols, ndefer, err) < 0)
        return -1;
    return st_reader_where(r, sc->ranges, sc->nranges, err);
}
