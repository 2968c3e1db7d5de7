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
#include "store/sort.h"
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
    uint32_t by_keys;   /* of those eliminated, by the manifest's key ranges */
} PartList;

/* ---- what the workers share and hold ----------------------------------- */

typedef struct GroupState GroupState;
typedef struct ColStat ColStat;

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
    GroupState *grp;
    ColStat *stats;
    unsigned char *row, *tag;
    st_reader *r;           /* the open file, closed here too if a comb call raises */
    st_reader *pr;          /* its projection, when the scan reads that (likewise) */
    st_batch pv;            /* a block of the projection as a block of one tagset of the
                             * source's schema: pv.cols [ncols], its start and end */
    uint32_t pstart[2];
    /* COLLECT: the shown fields a block left encoded (QScan.defer), gathered
     * at the selected rows: gath holds them field after field, gcol[i]
     * where out_row[i]'s are (NULL: not gathered) */
    unsigned char *gath;
    size_t gath_cap;
    const unsigned char **gcol;
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
    st_sorter *gspill;      /* GROUP: groups' states once past the budget (under mu) */
    uint64_t grange_lo;     /* GROUP by its key's range (group.c): the least key image */
    uint32_t grange_n;      /* its codes (nil, then the range); 0: not by range */
    st_nbuf_opts ropts;     /* the partitions' readers' */
    st_known_schema known;  /* the source's schema: files with it need not parse theirs */
    atomic_bool proj_warned; /* a file's projection could not be read (said once) */
};

/* The collected rows in order: every partition's records in one buffer
 * (sorted if the scan sorts), or read back from the external sort. */
typedef struct Ordered {
    PartRows all;       /* sorted: every partition's records */
    uint32_t pi;        /* unsorted: the partition read, its buffer read in place */
    size_t off;         /* the next record in all or in partition pi's buffer */
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
/* The rows in [lo, hi) of batch b (r's) that sc->index_where holds for, by
 * the block's bitmap indexes, into out; -1 with err set (a damaged index
 * names its file, block and field: the scan then fails, never miscounts). */
int qprune_index_rows(const QScan *sc, st_reader *r, const st_batch *b, uint32_t lo, uint32_t hi,
                      KSel *out, st_err *err);
/* The tags in [a, e) of batch b (r's) whose sc->tag_order field lies in
 * its range, by the block's order index of that field, into out (ascending)
 * and the others counted in *skipped: 1; 0 when the scan has no such range
 * or most tags lie in it (the tag where tests them all, as it tests those
 * out leaves); -1 with err set (a damaged index names its file and block). */
int qprune_tag_rows(const QScan *sc, st_reader *r, const st_batch *b, uint32_t a, uint32_t e,
                    KSel *out, uint64_t *skipped, st_err *err);
/* The projection of r's file for a scan that reads it (sc->proj): its
 * reader, its columns and zone ranges set, or NULL with err set (none, or
 * not the file's: the scan reads the file instead, and says so). */
st_reader *qprune_proj_open(const QScan *sc, st_reader *r, const st_nbuf_opts *io, st_err *err);
/* A block of a projection, pb, as v: a block of the source's schema of one
 * tagset holding pb's rows as its tags (v->cols [ncols], start: [2]). */
void qprune_proj_view(const QScan *sc, const st_batch *pb, st_batch *v, uint32_t *start);
/* The run [*a, *e) of a projection's block (as qprune_proj_view shows it)
 * in the scan's bound of its field: the rows left to sc->proj_rest. */
void qprune_proj_rows(const QScan *sc, const st_batch *b, uint32_t *a, uint32_t *e);
/* How many of those rows there are, without listing them (a count the
 * indexes cover). */
int qprune_index_count(const QScan *sc, st_reader *r, const st_batch *b, uint32_t lo, uint32_t hi,
                       uint64_t *n, st_err *err);

/* ---- the consumers ------------------------------------------------------ */

/* What a scan hands its rows to, one interface for all: count (scan.c),
 * group by (group.c), stat (stat.c), collect, sort and top-N (collect.c),
 * write (write.c). Each worker's state is begun, fed the batches it reads
 * (a batch's rows of level tag as its selection sel, from partition pi),
 * and ended; after the scan the workers' states are merged into the first
 * (in worker order) and finish makes the result on the VM's thread. */
typedef struct QConsumerOps {
    /* On the VM's thread before the workers start (NULL: nothing to do). */
    void (*start)(VM *vm, Shared *sh);
    /* A worker's state: false out of memory. */
    bool (*begin)(Worker *w);
    /* A batch: false when the scan need read no further in this partition. */
    bool (*consume)(Worker *w, uint32_t pi, bool tag, const KSel *sel);
    /* In the worker's thread after its last batch (NULL: nothing to do):
     * work the merges would do on the VM's thread, done side by side. */
    void (*done)(Worker *w);
    /* from's state into into's (NULL: the state is shared): false out of memory. */
    bool (*merge)(Worker *into, Worker *from);
    /* The result, from the first worker's state (o: the collected rows). */
    Value (*finish)(VM *vm, Shared *sh, Worker *w, Ordered *o);
    /* Frees a worker's state (also after a failed begin or a raise). */
    void (*end)(Worker *w);
} QConsumerOps;

extern const QConsumerOps qcons_group, qcons_stat, qcons_collect, qcons_write;

/* vm/query/group.c: frees the groups spilled past the budget. */
void qgroup_free(Shared *sh);
/* How a group by of sc over the files pl would find its rows' groups
 * (explain's group_path): "range of N codes", "dense codes" or "hash". */
void qgroup_path(VM *vm, const QScan *sc, const PartList *pl, char *out, size_t size);

/* vm/query/collect.c: rows collected, sorted, spilled past the budget */
size_t qcollect_budget(void);
/* The rows in order: begin after the whole scan, then next until NULL. */
void qcollect_begin(VM *vm, Shared *sh, Ordered *o);
const unsigned char *qcollect_next(VM *vm, Shared *sh, Ordered *o);
/* The record at *off of a buffer, moving *off past it. */
const unsigned char *qcollect_record(const QScan *sc, const unsigned char *base, size_t *off);
/* A collected record as the row (a map) comb sees. */
Value qcollect_value(VM *vm, const QScan *sc, const unsigned char *p, VStr **last);
/* Every row, in order, as an array of maps. */
void qcollect_free(Shared *sh, Ordered *o);

#endif
