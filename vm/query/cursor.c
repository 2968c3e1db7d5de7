/* cursor: a query's rows one at a time, for `for`, a streaming write or
 * count: as they come from the scan's cursor (vm/query/scan.c) through the
 * row steps that go a row at a time, or the run's array when a step needs
 * every row first (group by, a sort after a select) or the source is an
 * array. */
#include "config.h"
#include "vm/query/qplan.h"

typedef struct QCursor {
    Value q;            /* the query: its plan */
    Value scan;         /* the scan's cursor, or nil */
    Value rows;         /* else the rows, or nil */
    Value row;          /* the row going through the steps */
    size_t i;           /* the next of rows */
    int to;             /* the scan's rows go through steps [0, to) */
    uint64_t taken[];   /* [nsteps]: rows each take let through */
} QCursor;

static void cursor_mark(VM *vm, void *data)
{
    QCursor *c = data;
    vm_mark(vm, c->q);
    vm_mark(vm, c->scan);
    vm_mark(vm, c->rows);
    vm_mark(vm, c->row);
}

/* The loop is over: the scan's files closed now, the rows let go. */
static void cursor_close(VM *vm, void *data)
{
    QCursor *c = data;
    if (!IS_NIL(c->scan))
        scan_close(vm, c->scan);
    c->scan = c->rows = v_nil();
}

static bool cursor_next(VM *vm, void *data, int64_t *pos, Value *a, Value *b)
{
    QCursor *c = data;
    (void)pos;
    if (IS_ARRAY(c->rows)) {
        if (c->i >= AS_ARRAY(c->rows)->len)
            return false;
        *a = *b = AS_ARRAY(c->rows)->items[c->i++];
        return true;
    }
    QPlan *p = &((VQuery *)handle_data(AS_HANDLE(c->q)))->plan;
    while (!IS_NIL(c->scan) && scan_next(vm, c->scan, &c->row)) {
        int k = rows_step(vm, p, 0, c->to, c->taken, &c->row);
        if (k < 0)
            break;
        if (k == 2)
            cursor_close(vm, c);
        if (k) {
            *a = *b = c->row;
            c->row = v_nil();
            return true;
        }
        vm_gc_step(vm);     /* a row a where left out is garbage */
    }
    cursor_close(vm, c);
    return false;
}

static const VHandleType cursor_type = {
    .name = "query cursor", .mark = cursor_mark, .next = cursor_next, .close = cursor_close,
};

/* Whether the scan's rows can go a row at a time through steps [0, to). */
bool qcursor_streams(const QPlan *p, int to)
{
    return p->typed && p->scan.consumer == QC_COLLECT && rows_streams_to(p, 0) >= to;
}

/* A cursor over the rows of steps [0, to), lazy when they stream. */
Value qcursor_open(VM *vm, Value qv, int to)
{
    VQuery *q = qp_ready(vm, qv);
    QPlan *p = &q->plan;
    VHandle *h = vm_handle_new(vm, &cursor_type, sizeof(QCursor) + (size_t)p->nsteps * sizeof(uint64_t));
    Value hv = v_obj(h);
    vm_push_root(vm, hv);
    QCursor *c = handle_data(h);
    c->q = qv;
    c->scan = c->rows = c->row = v_nil();
    c->to = to;
    if (qcursor_streams(p, to)) {
        c->scan = scan_open(vm, p);
    } else {
        Value r = vm_query_run(vm, qv);
        if (!IS_ARRAY(r))
            vm_error(vm, "this query gives %s, not rows to iterate over", v_type_name(r));
        c->rows = r;
    }
    vm_pop_root(vm, 1);
    return hv;
}

static void ready(VM *vm, void *qv)
{
    qp_ready(vm, *(Value *)qv);
}

bool vm_query_streams(VM *vm, Value v)
{
    if (!IS_HANDLE(v) || AS_HANDLE(v)->type != &vm_query_type)
        return false;
    if (vm_protect(vm, ready, &v))
        return false;   /* running it raises the binding's error again */
    const QPlan *p = &((VQuery *)handle_data(AS_HANDLE(v)))->plan;
    return qcursor_streams(p, p->nsteps);
}

bool qcursor_next(VM *vm, Value cursor, Value *row)
{
    int64_t pos = 0;
    Value same;
    return cursor_next(vm, handle_data(AS_HANDLE(cursor)), &pos, row, &same);
}
