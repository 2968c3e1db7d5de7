/* query: pipelines (`src | where ... | group by ...`) as comb values, the
 * plan format the compiler hands to the engine, and the engine's entry
 * points.
 *
 * The compiler turns `src | verb ... | verb ...` into a call of the native
 * _pipe(src, plan, captures...): plan is a constant array of stages, each
 *     [verb, line, col, items...]
 * (verb: a QV_ index; items per verb below), and every expression inside a
 * stage is a node, an array
 *     [op, line, col, operands...]
 * with op a QOP_ code. Names that are not comb variables are fields
 * ([QOP_FIELD, l, c, "name"]); a local or upvalue of the pipeline's
 * function, and any subexpression that uses no field (a call of a comb
 * function, a literal array, `cfg.limit`), is evaluated where the pipeline
 * is written and passed as captures[i] ([QOP_CAPTURE, l, c, i, name or nil,
 * [names it used]]); a module variable is read by slot when the query is
 * built ([QOP_MODVAR, l, c, slot, "name"]). A field of the source shadows a
 * variable of the same name.
 *
 * Stage items:
 *   where   pred                       take    n
 *   select  name1, e1, name2, e2, ...   sort    e1, desc1, e2, desc2, ...
 *   group   nkeys, name1, e1, ... (keys, then aggregates: name, e)
 *   write   args...                     others  (none)
 *
 * A pipeline whose last verb ends it (count, stat, explain, schema, write)
 * runs at once and _pipe returns its result; any other pipeline is a
 * "query" handle: run it with rows(q), iterate it with `for`, print it, or
 * extend it (`q | where ...`). */
#ifndef COMB_QUERY_H
#define COMB_QUERY_H

#include "vm/verbs.h"
#include "vm/vm.h"

/* Expression node operators. */
#define QUERY_OPS(X)                                                        \
    X(CONST) X(FIELD) X(CAPTURE) X(MODVAR)                                  \
    X(NEG) X(NOT) X(ADD) X(SUB) X(MUL) X(DIV) X(MOD)                        \
    X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(AND) X(OR)                        \
    X(MATCH) X(NOMATCH) /* a ~ b, a !~ b */                                 \
    X(IN)               /* a in set */                                      \
    X(INRANGE)          /* a in lo..hi: lo <= a < hi */                     \
    X(CALL)             /* a query function: "name", args... */             \
    X(INDEX)            /* obj.key: obj, key (a node) */                \
    X(IF)               /* if c { a } else { b }: c, a, b */

enum {
#define X(name) QOP_##name,
    QUERY_OPS(X)
#undef X
    QOP__COUNT
};

/* The functions a query expression may call: quantifiers over a tagset's
 * tags, aggregates (in group by), and scalar functions. */
#define QUERY_FUNCS(X)                                                      \
    X(any, 2, 2, "any(tags, PRED): whether some tag satisfies PRED")        \
    X(all, 2, 2, "all(tags, PRED): whether every tag satisfies PRED")       \
    X(count, 0, 2, "count(tags[, PRED]): tags (satisfying PRED); count(): rows of a group; count(PRED): rows of a group where PRED holds") \
    X(first, 2, 2, "first(tags, PRED).f: field f of the first tag satisfying PRED (nil: none)") \
    X(last, 2, 2, "last(tags, PRED).f: field f of the last tag satisfying PRED (nil: none)") \
    X(sum, 1, 1, "sum(e): the sum over a group (of a bool: how many are true)") \
    X(min, 1, 1, "min(e): the least value in a group")                      \
    X(max, 1, 1, "max(e): the greatest value in a group")                   \
    X(avg, 1, 1, "avg(e): the mean over a group, a float (of a bool: the fraction true)") \
    X(distinct, 1, 1, "distinct(e): how many different values in a group")  \
    X(median, 1, 1, "median(e): the middle value in a group (a float)")     \
    X(quantile, 2, 2, "quantile(e, q): the value a fraction q (0 to 1) into a group's sorted values (a float)") \
    X(variance, 1, 1, "variance(e): the sample variance over a group (a float)") \
    X(stddev, 1, 1, "stddev(e): the sample standard deviation over a group (a float)") \
    X(between, 3, 3, "between(e, lo, hi): lo <= e <= hi")                   \
    X(day, 1, 1, "day(t): time t at the start of its day (UTC)")            \
    X(hour, 1, 1, "hour(t): the hour of time t, 0..23 (UTC)")              \
    X(max_by, 2, 2, "max_by(tags, e).f: field f of the tag with the greatest number e (the first of equals; nil: none has one; DuckDB's arg_max)") \
    X(min_by, 2, 2, "min_by(tags, e).f: field f of the tag with the least number e (the first of equals; nil: none has one)")

enum {
#define X(name, min, max, help) QF_##name,
    QUERY_FUNCS(X)
#undef X
    QF__COUNT
};

typedef struct QueryFuncDef {
    const char *name;
    int min_args, max_args;
    const char *help;
} QueryFuncDef;

extern const QueryFuncDef vm_query_funcs[QF__COUNT];
int vm_query_func_find(const char *name, size_t n);

extern const VHandleType vm_query_type;

/* matcher(fn): `f in M` asks the comb function fn(s) -> bool for each
 * string value (gre's many-string matchers make one). A scan whose plan
 * has one runs on the VM's thread. */
extern const VHandleType vm_matcher_type;

/* Runs a query (a "query" handle) to its result: an array of maps, or the
 * value of its last verb. */
Value vm_query_run(VM *vm, Value q);
/* The names of the result's columns that hold times (ints of seconds), so
 * that a table can show them as ISO-8601. */
VArray *vm_query_time_columns(VM *vm, Value q);
/* v to show: a query runs and its time columns become ISO-8601 text (the
 * rows are its own, fresh); any other value is v. */
Value vm_query_display(VM *vm, Value v);
/* How many rows the query q gives, counted as `q | count` counts them (a
 * store's block footers when nothing filters, rows never collected). */
int64_t vm_query_count(VM *vm, Value q);
/* Whether v is a query whose rows come from a scan a row at a time (maps
 * with the same keys), so a `for` over it holds no more than a block. */
bool vm_query_streams(VM *vm, Value v);
/* A query's source (its store, tagset file or array: for completion);
 * nil when v is no query. */
Value vm_query_source(Value v);
/* Calls add(acc, name, len) for each column a query's select and group by
 * stages make; false when v is no query. Does not raise. */
bool vm_query_made_columns(Value v, void (*add)(void *acc, const char *name, size_t len), void *acc);
/* One row of a query shown so: a copy of it whose columns named in times
 * (from vm_query_time_columns) that hold ints are ISO-8601 text (the row
 * itself when times is empty or it is no map). */
Value vm_query_show_times(VM *vm, VArray *times, Value row);

/* `| write(path)` with a path ending in .tsv, .csv or .json writes text in
 * that format (any other path: a tagset file). The text is the prompt's
 * (lang/table.c), which fills this in: it writes the rows (an array of
 * maps, or a handle whose type's next gives them), showing the columns in
 * times as ISO-8601, into path whole or not at all, and returns how many;
 * it raises on error. NULL: this program cannot write text (an error). */
enum { VM_TEXT_TSV = 1, VM_TEXT_CSV, VM_TEXT_JSON };
/* The VM_TEXT_ format a file's name asks for by its extension, or 0. */
int vm_text_format_of(const char *path, size_t len);
extern int64_t (*vm_text_writer)(VM *vm, Value rows, VArray *times, VStr *path, int format);

#endif
