/* aggs: the states of a group by's aggregates in a scan, a column per
 * aggregate indexed by group (no allocation per group), each updated by
 * one typed loop over a batch's values and their groups; merged across
 * workers; and the finishing arithmetic (variance, quantiles) the row
 * steps' group by shares. Internal to vm/query/; workers use it. */
#ifndef COMB_QUERY_AGGS_H
#define COMB_QUERY_AGGS_H

#include "vm/query/qplan.h"

typedef struct QAgg QAgg;

typedef struct QAggs {
    QAgg *a;            /* [n] */
    int n;
    uint32_t cap;       /* groups each column has room for */
    bool one;           /* no group keys: every row is group 0's */
} QAggs;

/* The states of sc's aggregates, for no groups yet. false: out of memory. */
bool qa_init(QAggs *s, const QScan *sc);
void qa_free(QAggs *s);
/* Room for groups [0, ngroups), new ones empty. false: out of memory. */
bool qa_grow(QAggs *s, uint32_t ngroups);
/* Folds aggregate i's argument values v[0 .. n) (NULL for count()) into
 * the groups gid[0 .. n) (all 0 when s->one). false: out of memory. */
bool qa_update(QAggs *s, int i, const KVec *v, const uint32_t *gid, uint32_t n);
/* Asks the cache for group g's states (rows made in key order visit the
 * groups out of their order). */
void qa_prefetch(const QAggs *s, uint32_t g);
/* The index of a count() among s's aggregates, or -1: its qa_count of a
 * group is the group's rows (a group's other counts are of its values). */
int qa_rows_at(const QAggs *s);
uint64_t qa_count(const QAggs *s, int i, uint32_t g);
/* Folds from's groups into into's: from's group g is into's map[g] (g
 * when map is NULL: states indexed alike, as by a key's range). A
 * quantile's values are handed over, not copied: from keeps none. */
bool qa_merge(QAggs *into, QAggs *from, const uint32_t *map, uint32_t ngroups);
/* Spilling (group.c, past the memory budget): whether every aggregate's
 * state is of fixed size (not distinct's pairs nor a quantile's values);
 * the bytes of a group's states; the bytes the states hold now; group g's
 * states into out (qa_recw bytes); saved states in folded into group g. */
bool qa_spillable(const QAggs *s);
size_t qa_recw(const QAggs *s);
size_t qa_bytes(const QAggs *s);
void qa_save(const QAggs *s, uint32_t g, unsigned char *out);
void qa_load(QAggs *s, uint32_t g, const unsigned char *in);
/* Group g's (fixed-size) states empty again, as a new group's. */
void qa_clear(QAggs *s, uint32_t g);
/* Aggregate i's value for group g (raises integer overflow in a sum). */
Value qa_value(VM *vm, const QAggs *s, int i, uint32_t g);

/* ---- shared with the row steps ----------------------------------------- */

/* variance and stddev: ints summed exactly (their sum and sum of squares,
 * so that the answer is the same whatever the order of the rows, the
 * workers and the partitions), floats by Welford's running mean and m2;
 * the two parts joined at the end. */
typedef struct QVar {
    __int128 s1, s2;
    uint64_t ni, nf;
    double mean, m2;
    bool over;          /* s2 overflowed */
} QVar;

static inline void qa_var_int(QVar *v, int64_t x)
{
    v->ni++;
    v->s1 += x;
    v->over |= __builtin_add_overflow(v->s2, (__int128)x * x, &v->s2);
}
static inline void qa_var_float(QVar *v, double x)
{
    double d = x - v->mean;
    v->mean += d / (double)++v->nf;
    v->m2 += d * (x - v->mean);
}
void qa_var_merge(QVar *into, const QVar *from);
/* variance(e) or stddev(e) (ag) of v: nil below two values; raises
 * integer overflow when the squares of the ints overflowed. */
Value qa_var_value(VM *vm, const QExpr *ag, const QVar *v);
/* The q-quantile of v[0 .. n) (n > 0), interpolated between the two values
 * around position q * (n - 1); reorders v. */
double qa_quantile(double *v, size_t n, double q);
/* The same of ints, by radix select (the same answer as qa_quantile of
 * them made floats), with hist [QA_HIST] for counts; reorders v. */
#define QA_BITS 16
#define QA_HIST (1u << QA_BITS)
double qa_quantile_int(int64_t *v, size_t n, double q, uint64_t *hist);

#endif
