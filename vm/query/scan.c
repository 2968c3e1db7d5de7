/* scan: the driver of a query's scan over a store's partitions (or a
 * tagset file): a block at a time through the where's kernels into one
 * consumer (count here; group.c, stat.c, collect.c, write.c), partitions
 * in parallel on worker threads that never touch the VM, or one block at a
 * time on the VM's thread for a cursor; then the consumer's result as comb
 * values on the calling thread. */
#include "config.h"
#include "vm/query/run.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/cache.h"
#include "vm/progress.h"
#include "vm/query/reading.h"

void scan_fail(Shared *sh, const char *msg)
{
    pthread_mutex_lock(&sh->mu);
    if (!sh->err[0])
        snprintf(sh->err, sizeof sh->err, "%s", msg);
    pthread_mutex_unlock(&sh->mu);
    atomic_store(&sh->stop, true);
}

/* A scan's error, raised on the VM's thread: a kernel's "line:col: message"
 * at that place of the program, as the row steps raise theirs; others (I/O,
 * memory) at the pipeline. */
_Noreturn void scan_raise(VM *vm, const char *msg)
{
    unsigned line, col;
    int n = 0;
    if (sscanf(msg, "%u:%u: %n", &line, &col, &n) == 2 && n > 0)
        vm_error_at(vm, line, col, msg + n);
    vm_error(vm, "%s", msg);
}

/* ---- the consumers: count here, the others in files of their own -------- */

static bool count_consume(Worker *w, uint32_t pi, bool tag, const KSel *sel)
{
    (void)pi;
    (void)tag;
    w->count += sel->n;
    return true;
}

static bool count_merge(Worker *into, Worker *from)
{
    into->count += from->count;
    return true;
}

static Value count_finish(VM *vm, Shared *sh, Worker *w, Ordered *o)
{
    (void)vm;
    (void)sh;
    (void)o;
    return v_int((int64_t)w->count);
}

static const QConsumerOps qcons_count = {
    .consume = count_consume,
    .merge = count_merge,
    .finish = count_finish,
};

static const QConsumerOps *consumer(const QScan *sc)
{
    switch (sc->consumer) {
    case QC_COUNT: return &qcons_count;
    case QC_GROUP: return &qcons_group;
    case QC_STAT: return &qcons_stat;
    case QC_WRITE: return &qcons_write;
    default: return &qcons_collect;
    }
}

/* ---- the scan of one partition ----------------------------------------- */

/* Buffers of 256 KiB: partition files are read whole, one after another,
 * and smaller buffers come back from the allocator warm instead of as
 * fresh pages to fault in for every file. */
static const st_nbuf_opts scan_io = {.nbufs = 3, .bufsize = 256 << 10};

/* Through the process's read cache as the session decides (store/reading.h). */
st_nbuf_opts scan_read_opts(VM *vm)
{
    st_nbuf_opts o = scan_io;
    o.cache = st_reading_caches(vm_reading(vm), 0);
    return o;
}

/* Opens partition pi's file for w; false (the scan has failed) when it
 * cannot. */
static bool part_open(Worker *w, uint32_t pi)
{
    Shared *sh = w->sh;
    const QScan *sc = sh->sc;
    st_err err;
    st_reader *r = w->r = vm_files_reader(sh->parts.files, sh->parts.p[pi].fi, &sh->ropts, &sh->known, &err);
    if (!r || qprune_select(sc, r, &err) < 0) {
        scan_fail(sh, err.msg);
        st_reader_close(r);
        w->r = NULL;
        return false;
    }
    /* a projection missing or not the file's: the file answers, and the
     * scan says so once */
    if (sc->proj && !(w->pr = qprune_proj_open(sc, r, &sh->ropts, &err)) && err.code == ST_ENOMEM) {
        scan_fail(sh, err.msg);
        return false;
    }
    if (sc->proj && !w->pr && !atomic_exchange(&sh->proj_warned, true))
        fprintf(stderr, "comb: warning: %s; reading the file instead\n", err.msg);
    return true;
}

/* The next block of w's partition: of its projection, seen as a block of
 * the source's schema (qprune_proj_view), when it reads that. */
static int part_next(Worker *w, const st_batch **b, st_err *err)
{
    if (!w->pr)
        return st_reader_next(w->r, b, err);
    const st_batch *pb;
    int rc = st_reader_next(w->pr, &pb, err);
    if (rc == 1) {
        qprune_proj_view(w->sh->sc, pb, &w->pv, w->pstart);
        *b = &w->pv;
    }
    return rc;
}

/* One block of w's open partition pi through the where and the consumer:
 * true, or false at the partition's end, on failure or once the scan has
 * stopped. */
static bool part_step(Worker *w, uint32_t pi)
{
    Shared *sh = w->sh;
    const QScan *sc = sh->sc;
    const st_batch *b;
    st_err err;
    if (atomic_load(&sh->stop))
        return false;
    int rc = part_next(w, &b, &err);
    if (rc < 0)
        scan_fail(sh, err.msg);
    if (rc != 1)
        return false;
    if (vm_poll_flag & POLL_SIGINT) {
        atomic_store(&sh->stop, true);
        return false;
    }
    if (k_batch(&w->k, b) < 0) {
        scan_fail(sh, w->k.err);
        return false;
    }
    uint32_t lo = b->first, hi = b->ntagsets;
    qprune_rows(sc, b, &lo, &hi);
    /* the rows in the key's ranges: the where's tests of it hold */
    const QExpr *where = sc->key_narrows && b->cols[0] ? sc->key_rest : sc->where;
    if (sc->index_where && !where && !sc->tags && sc->consumer == QC_COUNT) {
        uint64_t n;     /* the indexes answer it all: their cardinality */
        if (qprune_index_count(sc, w->r, b, lo, hi, &n, &err) < 0) {
            scan_fail(sh, err.msg);
            return false;
        }
        w->count += n;
        vm_progress_add(0, 1, 0);
        return true;
    }
    KSel all = {w->k.selbuf[1], hi - lo}, sel = {w->k.selbuf[2], 0};
    bool tag = sc->tags;
    /* rows per tag with no where: the tags of the run [lo, hi), its
     * tagsets not listed */
    bool whole = tag && !sc->index_where && !where;
    if (sc->index_where) {  /* the rows the bitmap indexes leave */
        if (qprune_index_rows(sc, w->r, b, lo, hi, &all, &err) < 0) {
            scan_fail(sh, err.msg);
            return false;
        }
    } else if (!whole) {
        for (uint32_t i = 0, n = all.n; i < n; i++)
            all.idx[i] = lo + i;        /* n a local: all.n could alias all.idx */
    }
    if (where)
        k_filter(&w->k, where, false, &all, &sel);
    else
        sel = all;
    if (tag) {
        /* one row per tag of the kept tagsets */
        KSel t = {sel.idx == w->k.selbuf[1] ? w->k.selbuf[2] : w->k.selbuf[1], 0};
        const uint32_t *st = b->tag_start;
        int by_order = 0;
        if (whole || (sel.n && sel.idx[sel.n - 1] - sel.idx[0] == sel.n - 1)) { /* a run of tagsets */
            uint32_t a = st[whole ? lo : sel.idx[0]], e = st[whole ? hi : sel.idx[sel.n - 1] + 1];
            if (w->pr)  /* a projection's block: the run in the bound */
                qprune_proj_rows(sc, b, &a, &e);
            /* its tags in the tag where's range of an indexed tag field
             * (how many it spares, explain counts) */
            uint64_t spared = 0;
            if (sc->tag_order >= 0 && !w->pr &&
                (by_order = qprune_tag_rows(sc, w->r, b, a, e, &t, &spared, &err)) < 0) {
                scan_fail(sh, err.msg);
                return false;
            }
            for (uint32_t i = a; !by_order && i < e; i++)
                t.idx[t.n++] = i;
        } else
            for (uint32_t j = 0; j < sel.n; j++)
                for (uint32_t i = st[sel.idx[j]]; i < st[sel.idx[j] + 1]; i++)
                    t.idx[t.n++] = i;
        sel = t;
        const QExpr *tw = w->pr ? sc->proj_rest : by_order ? sc->tag_rest : sc->tag_where;
        if (tw) {
            KSel out = {sel.idx == w->k.selbuf[1] ? w->k.selbuf[2] : w->k.selbuf[1], 0};
            k_filter(&w->k, tw, true, &sel, &out);
            sel = out;
        }
    }
    if (w->k.err[0]) {
        scan_fail(sh, w->k.err);
        return false;
    }
    bool more = consumer(sc)->consume(w, pi, tag, &sel);
    if (w->k.err[0])
        scan_fail(sh, w->k.err);
    vm_progress_add(0, 1, 0);
    return more;
}

/* Closes w's partition pi, adding up its reads. */
static void part_close(Worker *w, uint32_t pi)
{
    Shared *sh = w->sh;
    const QScan *sc = sh->sc;
    st_read_stats rs;
    st_reader_stats(w->pr ? w->pr : w->r, &rs);
    st_reader_close(w->pr);
    w->pr = NULL;
    vm_files_release(sh->parts.files, sh->parts.p[pi].fi, w->r);
    w->r = NULL;
    vm_progress_add(1, 0, rs.bytes_read);
    pthread_mutex_lock(&sh->mu);
    sh->io.blocks_read += rs.blocks_read;
    sh->io.blocks_skipped += rs.blocks_skipped;
    sh->io.bytes_read += rs.bytes_read;
    if (sc->consumer == QC_COLLECT && !sc->nsort && sc->limit != UINT64_MAX) {
        /* Once the first partitions hold limit rows, the rest need not run. */
        sh->rows[pi].done = true;
        while (sh->prefix < sh->parts.n && sh->rows[sh->prefix].done)
            sh->prefix_rows += sh->rows[sh->prefix++].n;
        if (sh->prefix_rows >= sc->limit)
            atomic_store(&sh->stop, true);
    }
    pthread_mutex_unlock(&sh->mu);
}

static void scan_part(Worker *w, uint32_t pi)
{
    if (!part_open(w, pi))
        return;
    while (part_step(w, pi))
        ;
    part_close(w, pi);
}

static void *work(void *arg)
{
    Worker *w = arg;
    Shared *sh = w->sh;
    for (;;) {
        uint32_t i = atomic_fetch_add(&sh->next, 1);
        if (i >= sh->parts.n || atomic_load(&sh->stop))
            break;
        scan_part(w, i);
    }
    if (consumer(sh->sc)->done && !atomic_load(&sh->stop))
        consumer(sh->sc)->done(w);
    return NULL;
}

/* The cores online, asked once: glibc reads a sysfs file for each ask, and
 * a key query's whole scan costs less than that read. */
static long cores(void)
{
    static atomic_long n;
    long c = atomic_load(&n);
    if (!c)
        atomic_store(&n, c = sysconf(_SC_NPROCESSORS_ONLN));
    return c;
}

int scan_threads(const QScan *sc, uint32_t nparts)
{
    const char *env = getenv("COMB_THREADS");
    long n = env ? atol(env) : cores();
    if (n < 1)
        n = 1;
    if (n > QS_MAX_THREADS)
        n = QS_MAX_THREADS;
    if (sc->consumer == QC_WRITE || sc->vm_calls)
        n = 1;  /* the loader takes rows from one thread; comb runs on the VM's */
    return (int)(n > (long)nparts ? (nparts ? nparts : 1) : n);
}

static bool worker_init(Worker *w, Shared *sh)
{
    const QScan *sc = sh->sc;
    const st_schema *s = sc->vs->s;
    memset(w, 0, sizeof *w);
    w->sh = sh;
    if (k_ctx_take(&w->k, &sh->p->scan) < 0)
        return false;
    if (consumer(sc)->begin && !consumer(sc)->begin(w))
        return false;
    w->row = mem_alloc(s->row_size + 1);
    w->tag = mem_alloc(s->tag_size + 1);
    w->pv.ncols = st_schema_ncols(s);
    if (sc->proj && !(w->pv.cols = mem_calloc(w->pv.ncols, sizeof *w->pv.cols)))
        return false;
    return w->row && w->tag;
}

static void worker_free(Worker *w)
{
    const QScan *sc = w->sh->sc;
    if (consumer(sc)->end)
        consumer(sc)->end(w);
    st_reader_close(w->r);
    st_reader_close(w->pr);
    if (w->pv.cols)
        mem_free(w->pv.cols, w->pv.ncols * sizeof *w->pv.cols);
    mem_free(w->row, sc->vs->s->row_size + 1);
    mem_free(w->tag, sc->vs->s->tag_size + 1);
    k_ctx_keep(&w->sh->p->scan, &w->k);
}

static uint64_t footer_count(VM *vm, const QScan *sc, const PartList *pl)
{
    uint64_t n = 0;
    st_nbuf_opts io = scan_read_opts(vm);
    st_known_schema known = {sc->vs->s, sc->vs->text, sc->vs->text_len};
    for (uint32_t i = 0; i < pl->n; i++) {
        st_err err;
        st_reader *r = vm_files_reader(pl->files, pl->p[i].fi, &io, &known, &err);
        st_file_info info;
        if (!r)
            vm_error(vm, "%s", err.msg);
        st_reader_info(r, &info);
        vm_files_release(pl->files, pl->p[i].fi, r);
        n += sc->tags ? info.ntags : info.ntagsets;
    }
    return n;
}

/* ---- running ----------------------------------------------------------- */

typedef struct Run {
    Shared sh;
    Worker *w;          /* [wcap], made for the threads the scan runs */
    int nw, wcap;
    Ordered ord;
    /* a cursor (scan_open) */
    bool sorted;        /* its rows come from ord, after the whole scan */
    uint32_t pi;        /* else the partition being read, a block at a time, */
    PartRows *cur;      /* the buffer of the block's rows, */
    size_t off;         /* the next row's record there, */
    uint64_t left, sent;    /* rows left there, rows given */
} Run;

static void run_free(Run *run)
{
    Shared *sh = &run->sh;
    for (int i = 0; i < run->nw; i++)
        worker_free(&run->w[i]);
    mem_free(run->w, (size_t)run->wcap * sizeof *run->w);
    qcollect_free(sh, &run->ord);
    qgroup_free(sh);
    pthread_mutex_destroy(&sh->mu);
}

/* The run's C memory is released by a handle's free, so a raise in the
 * middle (out of memory, an interrupt) leaks nothing; a cursor's also by
 * scan_close, when the loop reading it ends. */
static void run_handle_free(VM *vm, void *data)
{
    Run *run = *(Run **)data;
    if (run) {
        qprune_parts_free(vm, &run->sh.parts);
        run_free(run);
        mem_free(run, sizeof *run);
        *(Run **)data = NULL;
    }
}

static const VHandleType run_type = {.name = "scan", .free = run_handle_free};

static void run_workers(VM *vm, void *ud)
{
    Run *run = ud;
    Shared *sh = &run->sh;
    int n = scan_threads(sh->sc, sh->parts.n);
    uint64_t bytes = 0;
    for (uint32_t i = 0; vm_progress_enabled() && i < sh->parts.n; i++) {
        struct stat st;
        bytes += stat(sh->parts.p[i].path, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    vm_progress_begin(sh->sc->src->path, sh->parts.n, 0, bytes);
    if (!(run->w = mem_calloc((size_t)n, sizeof *run->w)))
        vm_throw(vm, v_obj(vm->oom));
    run->wcap = n;
    for (int i = 0; i < n; i++) {
        if (!worker_init(&run->w[i], sh)) {
            run->nw = i + 1;
            vm_throw(vm, v_obj(vm->oom));
        }
        run->nw = i + 1;
    }
    for (int i = 1; i < n; i++)
        run->w[i].started = pthread_create(&run->w[i].th, NULL, work, &run->w[i]) == 0;
    work(&run->w[0]);
    for (int i = 1; i < n; i++)
        if (run->w[i].started)
            pthread_join(run->w[i].th, NULL);
        else
            work(&run->w[i]);   /* no thread: do its share here */
    vm_check_interrupt(vm);
    if (sh->err[0])
        scan_raise(vm, sh->err);
}

/* A run of p's scan, owned by the handle *hp (pushed as a root). */
static Run *run_new(VM *vm, QPlan *p, VHandle **hp)
{
    QScan *sc = &p->scan;
    qprune_plan(vm, p);
    st_cache_begin_pass();  /* what this scan (or cursor) caches, it keeps for the next */
    VHandle *h = *hp = vm_handle_new(vm, &run_type, sizeof(Run *));
    vm_push_root(vm, v_obj(h));
    Run *run = mem_calloc(1, sizeof *run);
    if (!run)
        vm_throw(vm, v_obj(vm->oom));
    *(Run **)handle_data(h) = run;
    Shared *sh = &run->sh;
    pthread_mutex_init(&sh->mu, NULL);
    st_reading_scan(vm_reading(vm));
    sh->ropts = scan_read_opts(vm);
    sh->known = (st_known_schema){sc->vs->s, sc->vs->text, sc->vs->text_len};
    sh->vm = vm;
    sh->p = p;
    sh->sc = sc;
    sh->budget = qcollect_budget();
    qprune_parts(vm, sc, &sh->parts);
    return run;
}

static void run_rows(VM *vm, Run *run)
{
    Shared *sh = &run->sh;
    sh->rows = mem_calloc(sh->parts.n + 1, sizeof *sh->rows);
    if (!sh->rows)
        vm_throw(vm, v_obj(vm->oom));
}

/* Runs the workers over every partition. */
static void run_all(VM *vm, VHandle *h)
{
    if (vm_protect(vm, run_workers, *(Run **)handle_data(h)) < 0) {
        /* A comb call raised mid-scan, or an interrupt: close the readers
         * now, not when the collector gets to the handle. */
        run_handle_free(vm, handle_data(h));
        vm_rethrow(vm);
    }
}

Value scan_run(VM *vm, QPlan *p)
{
    QScan *sc = &p->scan;
    VHandle *h;
    Run *run = run_new(vm, p, &h);
    Shared *sh = &run->sh;
    Value result;
    if (sc->footer_count) {
        result = v_int((int64_t)footer_count(vm, sc, &sh->parts));
        goto done;
    }
    run_rows(vm, run);
    const QConsumerOps *c = consumer(sc);
    if (c->start)
        c->start(vm, sh);
    run_all(vm, h);
    for (int i = 1; c->merge && i < run->nw; i++)
        if (!c->merge(&run->w[0], &run->w[i])) {
            if (sh->err[0])     /* a spill's I/O error */
                scan_raise(vm, sh->err);
            vm_throw(vm, v_obj(vm->oom));
        }
    result = c->finish(vm, sh, &run->w[0], &run->ord);
done:
    run_handle_free(vm, handle_data(h));
    vm_pop_root(vm, 1);
    return result;
}

/* ---- a cursor: the rows one at a time ------------------------------------ */

Value scan_open(VM *vm, QPlan *p)
{
    VHandle *h;
    Run *run = run_new(vm, p, &h);
    Shared *sh = &run->sh;
    run_rows(vm, run);
    if (p->scan.nsort) {
        /* The last row may come first: all of them, in parallel, into the
         * sort (in memory, or external past the budget). */
        run_all(vm, h);
        qcollect_begin(vm, sh, &run->ord);
        run->sorted = true;
    } else {
        /* A block at a time, on this thread, as the rows are asked for. */
        if (!(run->w = mem_calloc(1, sizeof *run->w)))
            vm_throw(vm, v_obj(vm->oom));
        run->wcap = run->nw = 1;
        if (!worker_init(&run->w[0], sh))
            vm_throw(vm, v_obj(vm->oom));
    }
    vm_pop_root(vm, 1);
    return v_obj(h);
}

bool scan_next(VM *vm, Value cursor, Value *row)
{
    Run *run = *(Run **)handle_data(AS_HANDLE(cursor));
    if (!run)
        return false;
    Shared *sh = &run->sh;
    const QScan *sc = sh->sc;
    const unsigned char *r;
    if (run->sorted) {
        if (!(r = qcollect_next(vm, sh, &run->ord)))
            return false;
        *row = qcollect_value(vm, sc, r, NULL);  /* rows between are garbage: none kept */
        return true;
    }
    Worker *w = &run->w[0];
    while (!run->left) {
        if (run->sent >= sc->limit)
            return false;
        if (!w->r && (run->pi >= sh->parts.n || !part_open(w, run->pi))) {
            if (sh->err[0])
                scan_raise(vm, sh->err);
            return false;
        }
        PartRows *pr = run->cur = &sh->rows[run->pi];
        pr->b.len = 0;
        pr->n = 0;
        if (!part_step(w, run->pi))
            part_close(w, run->pi++);
        vm_check_interrupt(vm);
        if (sh->err[0])
            scan_raise(vm, sh->err);
        run->off = 0;
        run->left = pr->n < sc->limit - run->sent ? pr->n : sc->limit - run->sent;
    }
    run->left--;
    run->sent++;
    *row = qcollect_value(vm, sc, qcollect_record(sc, run->cur->b.p, &run->off), NULL);
    return true;
}

void scan_close(VM *vm, Value cursor)
{
    run_handle_free(vm, handle_data(AS_HANDLE(cursor)));
}
