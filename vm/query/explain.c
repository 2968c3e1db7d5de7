/* explain: what a query would do, without doing it: the scan's plan as a
 * map (the partitions and blocks it would read, by elimination and zone
 * maps and the cache, the tags a tag field's order index spares the tag
 * where, the bytes of its files and those it would read, the
 * columns it would decode, its wheres as bound, its
 * consumer and threads, the row steps after it). The one place explain's
 * text is made (an array source's explain is rowsteps.c's). */
#include "config.h"
#include "vm/query/run.h"

#include <stdio.h>

#include "vm/natives.h"
#include "vm/query/reading.h"

/* ---- a bound expression as text ---------------------------------------- */

static void show(VM *vm, VStrBuf *sb, const QExpr *e, const st_schema *s);

static void show_operand(VM *vm, VStrBuf *sb, const QExpr *e, const st_schema *s)
{
    bool paren = (e->op >= QOP_ADD && e->op <= QOP_INRANGE) || e->op == QX_SET || e->op == QOP_IF;
    vm_sb_addc(vm, sb, paren ? "(" : "");
    show(vm, sb, e, s);
    vm_sb_addc(vm, sb, paren ? ")" : "");
}

/* e as text, fully bound (quantifiers made explicit); s names the fields
 * first/last(tags, P).f reads. */
static void show(VM *vm, VStrBuf *sb, const QExpr *e, const st_schema *s)
{
    switch (e->op) {
    case QOP_CONST:
        vm_show(vm, sb, e->k, true);
        return;
    case QX_FIELD: case QX_MAPGET:
        vm_sb_add(vm, sb, e->name->data, e->name->len);
        return;
    case QOP_NEG: case QOP_NOT:
        vm_sb_addc(vm, sb, e->op == QOP_NEG ? "-" : "!");
        show_operand(vm, sb, e->a, s);
        return;
    case QX_SET: case QOP_MATCH: case QOP_NOMATCH:
        show_operand(vm, sb, e->a, s);
        vm_sb_addc(vm, sb, e->op == QX_SET ? " in " : e->op == QOP_MATCH ? " ~ " : " !~ ");
        vm_show(vm, sb, e->k, true);
        return;
    case QX_QUANT: case QX_AGG: case QX_FUNC:
        vm_sb_printf(vm, sb, "%s(%s", vm_query_funcs[e->fn].name, e->op == QX_QUANT ? "tags" : "");
        for (const QExpr *x = e->a; x; x = x == e->a ? e->b : x == e->b ? e->c : NULL) {
            vm_sb_addc(vm, sb, e->op == QX_QUANT || x != e->a ? ", " : "");
            show(vm, sb, x, s);
        }
        vm_sb_addc(vm, sb, ")");
        if (e->op == QX_QUANT && e->name)
            vm_sb_printf(vm, sb, ".%s", e->name->data);
        else if (e->op == QX_QUANT && e->field >= 0 && s)
            vm_sb_printf(vm, sb, ".%s", s->fields[e->field].name);
        return;
    case QX_CALL:
        vm_show(vm, sb, e->k, false);
        vm_sb_addc(vm, sb, "(");
        for (const QExpr *x = e->a; x; x = x->b) {
            show(vm, sb, x->a, s);
            vm_sb_addc(vm, sb, x->b ? ", " : "");
        }
        vm_sb_addc(vm, sb, ")");
        return;
    case QOP_AND: case QOP_OR:
        show_operand(vm, sb, e->a, s);
        vm_sb_addc(vm, sb, e->op == QOP_AND ? " && " : " || ");
        show_operand(vm, sb, e->b, s);
        return;
    case QOP_IF:
        if (e->fn) {    /* a || b, a && b giving a value (bind_logic) */
            show_operand(vm, sb, e->fn == QOP_OR ? e->b : e->c, s);
            vm_sb_addc(vm, sb, e->fn == QOP_AND ? " && " : " || ");
            show_operand(vm, sb, e->fn == QOP_OR ? e->c : e->b, s);
            return;
        }
        vm_sb_addc(vm, sb, "if ");
        show(vm, sb, e->a, s);
        vm_sb_addc(vm, sb, " { ");
        show(vm, sb, e->b, s);
        vm_sb_addc(vm, sb, " } else { ");
        show(vm, sb, e->c, s);
        vm_sb_addc(vm, sb, " }");
        return;
    case QOP_INDEX:
        show_operand(vm, sb, e->a, s);
        vm_sb_addc(vm, sb, ".");
        show(vm, sb, e->b, s);
        return;
    default:
        show_operand(vm, sb, e->a, s);
        vm_sb_printf(vm, sb, " %s ", qx_op_sym[e->op]);
        show_operand(vm, sb, e->b, s);
        return;
    }
}

/* ---- the scan's plan as a map ------------------------------------------- */

static const char *const consumer_names[] = {
    [QC_COUNT] = "count", [QC_COLLECT] = "rows", [QC_GROUP] = "group", [QC_STAT] = "stat",
    [QC_WRITE] = "write",
};

/* A where as bound (nil: none). */
static Value where_text(VM *vm, const QExpr *e, const st_schema *s)
{
    if (!e)
        return v_nil();
    VStrBuf sb;
    vm_sb_init(vm, &sb, 64);
    show(vm, &sb, e, s);
    return v_obj(vm_sb_done(vm, &sb));
}

/* m's "then": the verbs that follow, by name. */
static void then_steps(VM *vm, VMap *m, const QPlan *p)
{
    VArray *steps = vm_array_new(vm, (size_t)p->nsteps);
    map_setc(vm, m, "then", v_obj(steps));
    for (int i = 0; i < p->nsteps; i++)
        if (p->steps[i].verb != QV_explain)
            vm_array_push(vm, steps, v_obj(vm_str_cstr(vm, vm_verbs[p->steps[i].verb].name)));
}

/* The scan's zone ranges on tag fields, into out (room for nranges): a
 * tag-level range (a time a tag was seen) is what a layout by time
 * windows lets zone maps use, so explain counts what those skip apart. */
static uint32_t tag_ranges(const QScan *sc, st_range *out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < sc->nranges; i++)
        if (sc->ranges[i].col < sc->vs->s->nfields &&
            st_schema_col(sc->vs->s, sc->ranges[i].col)->role == ST_TAG)
            out[n++] = sc->ranges[i];
    return n;
}

/* The tags of the blocks r would read that the order index of the tag
 * where's indexed field leaves out, into *skipped: reads that index and
 * that field's column of each (the scan's own test, qprune_tag_rows). */
static int order_skips(const QScan *sc, st_reader *r, uint64_t *skipped, st_err *err)
{
    uint32_t col = (uint32_t)sc->tag_order;
    const st_batch *b;
    KSel out = {NULL, 0};
    size_t cap = 0;
    int rc;
    if (st_reader_select(r, &col, 1, err) < 0 || st_reader_where(r, sc->ranges, sc->nranges, err) < 0)
        return -1;
    while ((rc = st_reader_next(r, &b, err)) == 1) {
        if (b->ntags > cap) {
            mem_free(out.idx, cap * 4);
            cap = b->ntags;
            if (!(out.idx = mem_alloc(cap * 4))) {
                cap = 0;
                rc = st_err_set(err, ST_ENOMEM, "out of memory for a block's tags");
                break;
            }
        }
        if (qprune_tag_rows(sc, r, b, 0, b->ntags, &out, skipped, err) < 0) {
            rc = -1;
            break;
        }
    }
    mem_free(out.idx, cap * 4);
    return rc < 0 ? -1 : 0;
}

Value qexplain_scan(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    const st_schema *s = sc->vs->s;
    qprune_plan(vm, p);
    VMap *m = vm_map_new(vm, 12);
    Value mv = v_obj(m);
    vm_push_root(vm, mv);
    PartList pl;
    qprune_parts(vm, sc, &pl);
    uint64_t blocks = 0, kept = 0, cached = 0, tag_skip = 0, bytes = 0, bytes_read = 0, order_skip = 0;
    uint64_t pblocks = 0, pkept = 0;    /* of the projections the scan reads */
    char pfail[sizeof ((st_err *)0)->msg + 40] = "";  /* one it could not, which it says */
    st_range *tr = vm_alloc(vm, (sc->nranges + 1) * sizeof *tr);
    uint32_t ntr = tag_ranges(sc, tr);
    bool cache = st_reading_caches(vm_reading(vm), 1);    /* the scan, were it run now */
    st_nbuf_opts io = scan_read_opts(vm);
    st_known_schema known = {s, sc->vs->text, sc->vs->text_len};
    st_err err;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < pl.n; i++) {
        st_reader *r = vm_files_reader(pl.files, pl.p[i].fi, &io, &known, &err);
        if (!r) {
            rc = -1;
            break;
        }
        st_file_info info;
        st_reader_info(r, &info);
        blocks += info.nblocks;
        rc = qprune_select(sc, r, &err);
        bytes += info.size;
        kept += rc < 0 || sc->footer_count ? 0 : st_reader_blocks_kept(r);
        uint64_t b = 0;
        if (rc == 0 && !sc->footer_count && (rc = st_reader_bytes_kept(r, &b, &err)) == 0)
            bytes_read += b;
        cached += rc < 0 || sc->footer_count || !cache ? 0 : st_reader_blocks_cached(r);
        if (rc == 0 && ntr && !sc->footer_count && (rc = st_reader_where(r, tr, ntr, &err)) == 0)
            tag_skip += info.nblocks - st_reader_blocks_kept(r);
        if (rc == 0 && sc->tag_order >= 0 && !sc->footer_count)
            rc = order_skips(sc, r, &order_skip, &err);
        st_err perr = {0};
        st_reader *pr = rc == 0 && sc->proj ? qprune_proj_open(sc, r, &io, &perr) : NULL;
        if (perr.code == ST_ENOMEM) {
            err = perr;
            rc = -1;
        } else if (perr.code && !pfail[0]) {
            snprintf(pfail, sizeof pfail, "the files: %s", perr.msg);
        }
        if (pr) {
            st_file_info pi;
            st_reader_info(pr, &pi);
            pblocks += pi.nblocks;
            pkept += st_reader_blocks_kept(pr);
            st_reader_close(pr);
        }
        vm_files_release(pl.files, pl.p[i].fi, r);
    }
    char gpath[64] = "";   /* how a group by finds its rows' groups */
    if (rc == 0 && sc->consumer == QC_GROUP)
        qgroup_path(vm, sc, &pl, gpath, sizeof gpath);
    uint32_t nread = pl.n, total = pl.total, by_keys = pl.by_keys;
    qprune_parts_free(vm, &pl);
    vm_free_mem(vm, tr, (sc->nranges + 1) * sizeof *tr);
    if (rc < 0)
        vm_error(vm, "%s", err.msg);
    map_setc(vm, m, "source", v_obj(vm_str_cstr(vm, sc->src->path)));
    map_setc(vm, m, "partitions", v_int(total));
    map_setc(vm, m, "partitions_read", v_int(nread));
    map_setc(vm, m, "blocks", v_int((int64_t)blocks));
    map_setc(vm, m, "blocks_read", v_int((int64_t)kept));
    map_setc(vm, m, "blocks_cached", v_int((int64_t)cached));
    map_setc(vm, m, "blocks_skipped_by_tags", v_int((int64_t)tag_skip));
    map_setc(vm, m, "tag_index", sc->tag_order >= 0 ? v_obj(vm_str_cstr(vm, s->fields[sc->tag_order].name))
                                                    : v_nil());
    map_setc(vm, m, "tags_skipped_by_index", v_int((int64_t)order_skip));
    /* of a schema declaring a projection: whether the scan reads it
     * instead of the files (why not), and its blocks */
    int pf = st_schema_proj(s);
    if (pf >= 0) {
        map_setc(vm, m, "projection", v_obj(vm_str_cstr(vm, s->fields[pf].name)));
        map_setc(vm, m, "projection_path", v_obj(vm_str_cstr(vm, pfail[0] ? pfail : sc->proj ? "read"
                                                                                  : sc->proj_why)));
        map_setc(vm, m, "projection_blocks", v_int((int64_t)pblocks));
        map_setc(vm, m, "projection_blocks_read", v_int((int64_t)pkept));
    }
    map_setc(vm, m, "bytes", v_int((int64_t)bytes));
    map_setc(vm, m, "bytes_read", v_int((int64_t)bytes_read));
    VArray *cols = vm_array_new(vm, 8);
    map_setc(vm, m, "columns", v_obj(cols));
    for (uint32_t c = 0; !sc->footer_count && c < st_schema_ncols(s); c++)
        if (sc->want[c])
            vm_array_push(vm, cols, v_obj(vm_str_cstr(vm, st_schema_col(s, c)->name)));
    /* of those, the ones only the rows show: where a block stores them by
     * RLE or FOR, read at the rows kept alone */
    VArray *gathered = vm_array_new(vm, 4);
    map_setc(vm, m, "columns_gathered", v_obj(gathered));
    for (uint32_t c = 0; sc->defer && c < st_schema_ncols(s); c++)
        if (sc->defer[c])
            vm_array_push(vm, gathered, v_obj(vm_str_cstr(vm, st_schema_col(s, c)->name)));
    VArray *ranges = vm_array_new(vm, sc->nranges);
    map_setc(vm, m, "zone_ranges", v_obj(ranges));
    for (uint32_t i = 0; i < sc->nranges; i++) {
        const st_field *f = st_schema_col(s, sc->ranges[i].col);
        char lo[64] = "", hi[64] = "", buf[160];
        if (sc->ranges[i].lo)
            st_field_format(f, sc->ranges[i].lo, lo, sizeof lo);
        if (sc->ranges[i].hi)
            st_field_format(f, sc->ranges[i].hi, hi, sizeof hi);
        snprintf(buf, sizeof buf, "%s in [%s, %s]", f->name, sc->ranges[i].lo ? lo : "-inf",
                 sc->ranges[i].hi ? hi : "+inf");
        vm_array_push(vm, ranges, v_obj(vm_str_cstr(vm, buf)));
    }
    map_setc(vm, m, "where", where_text(vm, sc->where, s));
    map_setc(vm, m, "tag_where", where_text(vm, sc->tag_where, s));
    map_setc(vm, m, "index_where", where_text(vm, sc->index_where, s));
    map_setc(vm, m, "path", sc->index_why ? v_obj(vm_str_cstr(vm, sc->index_why)) : v_nil());
    map_setc(vm, m, "rows", v_obj(vm_str_cstr(vm, sc->tags ? "tags" : "tagsets")));
    map_setc(vm, m, "does", v_obj(vm_str_cstr(vm, sc->footer_count ? "count from the footers"
                                                             : consumer_names[sc->consumer])));
    if (gpath[0])
        map_setc(vm, m, "group_path", v_obj(vm_str_cstr(vm, gpath)));
    map_setc(vm, m, "partitions_skipped_by_keys", v_int(by_keys));
    map_setc(vm, m, "threads", v_int(scan_threads(sc, nread)));
    then_steps(vm, m, p);
    vm_pop_root(vm, 1);
    return mv;
}

Value qexplain_array(VM *vm, const QPlan *p)
{
    VMap *m = vm_map_new(vm, 4);
    Value mv = v_obj(m);
    vm_push_root(vm, mv);
    map_setc(vm, m, "source", v_obj(vm_str_cstr(vm, IS_ARRAY(p->array) ? "array" : "text rows")));
    map_setc(vm, m, "rows", IS_ARRAY(p->array) ? v_int((int64_t)AS_ARRAY(p->array)->len)
                                                : v_obj(vm_str_cstr(vm, "as read")));
    then_steps(vm, m, p);
    vm_pop_root(vm, 1);
    return mv;
}
