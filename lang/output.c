/* output: a program's result as the CLI and the prompt print it: a query
 * runs first and its time columns become ISO-8601 text; then rows (an array
 * of maps) render through lang/table.c (aligned, TSV, CSV or JSON), and any
 * other value as print() would. */
#include "config.h"
#include "lang/output.h"

#include <string.h>
#include <unistd.h>

#include "lang/table.h"
#include "store/schema.h"
#include "vm/query.h"

static const char *const names[] = {"auto", "table", "tsv", "csv", "json"};

int out_format_parse(const char *name)
{
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

/* Row r with the int values of the columns named in times as ISO-8601 text. */
static Value times_as_text(VM *vm, Value r, const VArray *times)
{
    VMap *row = AS_MAP(r);
    VMap *copy = NULL;
    for (size_t i = 0; i < times->len; i++) {
        Value *cell = vm_map_ref(row, times->items[i]);
        if (!cell || !IS_INT(*cell))
            continue;
        if (!copy) {
            copy = vm_map_new(vm, 8);
            vm_push_root(vm, v_obj(copy));
            size_t pos = 0;
            Value k, v;
            while (vm_map_next(row, &pos, &k, &v))
                vm_map_set(vm, copy, k, v);
        }
        char buf[40];
        st_time_format(cell->as.i, buf, sizeof buf);
        vm_map_set(vm, copy, times->items[i], v_obj(vm_str_cstr(vm, buf)));
    }
    if (!copy)
        return r;
    vm_pop_root(vm, 1);
    return v_obj(copy);
}

Value out_present(VM *vm, Value v)
{
    if (!IS_HANDLE(v) || AS_HANDLE(v)->type != &vm_query_type)
        return v;
    VArray *times = vm_query_time_columns(vm, v);
    vm_push_root(vm, v_obj(times));
    Value rows = vm_query_run(vm, v);
    vm_push_root(vm, rows);
    if (times->len && table_is_rows(rows)) {
        VArray *a = AS_ARRAY(rows);
        for (size_t i = 0; i < a->len; i++)
            a->items[i] = times_as_text(vm, a->items[i], times);
    }
    vm_pop_root(vm, 2);
    return rows;
}

typedef struct Job {
    Value v;
    int format;
    FILE *out;
} Job;

static const TableFormat table_of[] = {
    [OUT_TABLE] = TABLE_ALIGNED, [OUT_TSV] = TABLE_TSV, [OUT_CSV] = TABLE_CSV,
    [OUT_JSON] = TABLE_JSON,
};

static void render(VM *vm, void *ud)
{
    Job *j = ud;
    Value v = out_present(vm, j->v);
    if (IS_NIL(v))
        return;
    vm_push_root(vm, v);
    int f = j->format == OUT_AUTO ? (isatty(fileno(j->out)) ? OUT_TABLE : OUT_TSV) : j->format;
    VStrBuf sb;
    vm_sb_init(vm, &sb, 256);
    vm_push_root(vm, v_obj(sb.s));
    table_render(vm, &sb, v, table_of[f], false);
    VStr *s = vm_sb_done(vm, &sb);
    fwrite(s->data, 1, s->len, j->out);
    vm_pop_root(vm, 2);
}

int out_print(VM *vm, Value v, int format, FILE *out)
{
    Job j = {v, format, out};
    vm_push_root(vm, v);
    int rc = vm_protect(vm, render, &j);
    vm_pop_root(vm, 1);
    return rc;
}
