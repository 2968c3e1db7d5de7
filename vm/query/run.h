/* run: one run of a scan, as its files share it: the partitions to read,
 * the state the worker threads share and each worker's own, and the
 * functions by which the driver (vm/query/scan.c) hands blocks to the
 * consumers (group.c, stat.c, collect.c, write.c) and asks prune.c what to
 * read. Internal to vm/query/; workers never touch the VM. */
#ifndef COMB_QUERY_RUN_H
#define COMB_QUERY_RUN_H

#include <stdatomic.h>
#include <string.h>

#include "store/mem.h"
#include "vm/query/qplan.h"

/* ---- growable byte buffers (C memory: workers use them) ---------------- */

typedef struct Buf {
    unsigned char *p;
    size_t len, cap;
} Buf;

static inline unsigned char *buf_room(Buf *b, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *p = mem_realloc(b->p, b->cap, cap);
        if (!p)
            return NULL;
        b->p = p;
        b->cap = cap;
    }
    unsigned char *r = b->p + b->len;
    b->len += n;
    return r;
}

static inline void buf_free(Buf *b)
{
    mem_free(b->p, b->cap);
    memset(b, 0, sizeof *b);
}

/* ---- the files to read ------------------------------------------------- */

typedef struct Part {
    const char *path;
    uint32_t fi;        /* the source's file number */
    uint32_t gpart;     /* global partition number (0 for a file) */
} Part;

/* The source's files to read: its list as the scan began (a reference:
 * a load through the source during the scan gives the source a new one). */
typedef struct PartList {
    VFiles *files;
    Part *p;
    uint32_t n, total;  /* after elimination, before */
} PartList;

/* ---- what the workers share and hold ----------------------------------- */

typedef struct Group Group;
typedef struct ColStat ColStat;

typedef struct GroupTable {
    Group *g;
    uint32_t *slots;    /* group index + 1 */
    size_t n, cap, mask;
    Buf arena;          /* keys and min/max bytes */
} GroupTable;

/* The rows one partition collected: records of [sort key][row][u32 ntags][tags],
 * or [sort key][row][tag] for tag rows. */
typedef struct PartRows {
    Buf b;
    uint64_t n;
    uint64_t spilled;   /* rows of the partition handed to the external sort */
    bool done;
} PartRows;

typedef struct Shared Shared;

typedef struct Worker {
    Shared *sh;
    KCtx k;
    uint64_t count;
    GroupTable gt;
    Buf keys;           /* a batch's group keys (or dense codes) */
    uint32_t *dense;    /* small-domain keys: group index + 1 per key code */
    uint32_t ndense;    /* codes (0: keys go through the table alone) */
    uint64_t *dcount;   /* dense, every aggregate count(): rows per code */
    ColStat *stats;
    unsigned char *row, *tag;
    st_reader *r;           /* the open file, closed here too if a comb call raises */
    pthread_t th;
    bool started;
} Worker;

typedef struct QSpill QSpill;

struct Shared {
    VM *vm;
    QPlan *p;
    const QScan *sc;
    PartList parts;
    PartRows *rows;         /* per partition (COLLECT) */
    atomic_uint next;       /* the next partition to claim */
    atomic_bool stop;
    pthread_mutex_t mu;
    char err[600];
    uint64_t prefix_rows;   /* COLLECT with a limit and no sort: rows of the done prefix */
    uint32_t prefix;
    VLoader *loader;        /* WRITE (one worker) */
    uint64_t written;
    st_read_stats io;
    size_t budget;          /* COLLECT with a sort and no take: bytes of rows held */
    atomic_size_t held;     /* bytes of rows in the partitions' buffers */
    QSpill *spill;          /* the rows once past the budget (under mu) */
    st_nbuf_opts ropts;     /* the partitions' readers' */
    st_known_schema known;  /* the source's schema: files with it need not parse theirs */
};

/* The collected rows in order: every partition's records in one buffer
 * (sorted if the scan sorts), or read back from the external sort. */
typedef struct Ordered {
    PartRows all;
    size_t off;
    uint64_t i, n;      /* rows read; rows to read */
} Ordered;

#define SCAN_OOM "out of memory in a scan"

static inline void map_setc(VM *vm, VMap *m, const char *k, Value v)
{
    vm_map_set(vm, m, v_obj(vm_str_cstr(vm, k)), v);
}

/* ---- vm/query/scan.c: the driver --------------------------------------- */

/* The scan fails with msg (the first failure's message is kept) and stops. */
void scan_fail(Shared *sh, const char *msg);
/* Raises a scan's error on the VM's thread. */
_Noreturn void scan_raise(VM *vm, const char *msg);
/* The options a scan's readers get now. */
st_nbuf_opts scan_read_opts(VM *vm);
/* The threads a scan of nparts partitions runs. */
int scan_threads(const QScan *sc, uint32_t nparts);

/* ---- vm/query/prune.c: what a scan need not read ----------------------- */

/* Sets sc's zone-map ranges and partitions from its wheres (once). */
void qprune_plan(VM *vm, QPlan *p);
/* The files of the partitions sc reads, into pl (a reference to the list). */
void qprune_parts(VM *vm, const QScan *sc, PartList *pl);
void qprune_parts_free(VM *vm, PartList *pl);
/* Narrows a batch's tagsets [*lo, *hi) by binary search on the first key. */
void qprune_rows(const QScan *sc, const st_batch *b, uint32_t *lo, uint32_t *hi);
/* The scan's columns and zone-map ranges, to a reader of one of its files. */
int qprune_select(const QScan *sc, st_reader *r, st_err *err);

/* ---- the consumers: a block's selected rows (level tag) each ----------- */

/* vm/query/group.c: group by */
void qgroup_init(Worker *w);
void qgroup_rows(Worker *w, bool tag, const KSel *sel);
void qgroup_free(Worker *w);
/* The workers' groups merged, as rows (maps). */
Value qgroup_result(VM *vm, const QScan *sc, Worker *w, int nw);

/* vm/query/stat.c: tagstat */
bool qstat_init(Worker *w);
void qstat_rows(Worker *w, bool tag, const KSel *sel);
void qstat_free(Worker *w);
Value qstat_result(VM *vm, const QScan *sc, Worker *w, int nw);

/* vm/query/collect.c: rows collected, sorted, spilled past the budget */
size_t qcollect_budget(void);
void qcollect_rows(Worker *w, uint32_t pi, bool tag, const KSel *sel);
/* After a block of partition pi (whose buffer held held bytes before it):
 * trims a sort with take, spills past the budget; whether to read on. */
bool qcollect_block(Shared *sh, uint32_t pi, size_t held);
/* The rows in order: begin after the whole scan, then next until NULL. */
void qcollect_begin(VM *vm, Shared *sh, Ordered *o);
const unsigned char *qcollect_next(VM *vm, Shared *sh, Ordered *o);
/* The record at *off of a buffer, moving *off past it. */
const unsigned char *qcollect_record(const QScan *sc, const unsigned char *base, size_t *off);
/* A collected record as the row (a map) comb sees. */
Value qcollect_value(VM *vm, const QScan *sc, const unsigned char *p);
/* Every row, in order, as an array of maps. */
Value qcollect_result(VM *vm, Shared *sh, Ordered *o);
void qcollect_free(Shared *sh, Ordered *o);

/* vm/query/write.c: to a loader. qwrite_begin pushes a root that
 * qwrite_finish pops. */
void qwrite_begin(VM *vm, Shared *sh);
void qwrite_rows(Worker *w, bool tag, const KSel *sel);
Value qwrite_finish(VM *vm, Shared *sh);

#endif
