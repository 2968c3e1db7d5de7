/* output: how the CLI prints a program's result: a query runs, rows (an
 * array of maps) become an aligned table, TSV, CSV or JSON, anything else
 * prints as print() would. (A small renderer until the prompt's table
 * module joins it.) */
#include "config.h"
#include "lang/output.h"

#include <string.h>
#include <unistd.h>

#include "store/schema.h"
#include "vm/natives.h"
#include "vm/query.h"

static const char *const names[] = {"auto", "table", "tsv", "csv", "json"};

int out_format_parse(const char *name)
{
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

static bool is_rows(Value v)
{
    if (!IS_ARRAY(v) || !AS_ARRAY(v)->len)
        return false;
    for (size_t i = 0; i < AS_ARRAY(v)->len; i++)
        if (!IS_MAP(AS_ARRAY(v)->items[i]))
            return false;
    return true;
}

/* The keys of all rows, in the order they first appear. */
static VArray *columns(VM *vm, VArray *rows)
{
    VMap *seen = vm_map_new(vm, 8);
    vm_push_root(vm, v_obj(seen));
    VArray *cols = vm_array_new(vm, 8);
    vm_push_root(vm, v_obj(cols));
    for (size_t i = 0; i < rows->len; i++) {
        size_t pos = 0;
        Value k, v;
        while (vm_map_next(AS_MAP(rows->items[i]), &pos, &k, &v))
            if (!vm_map_ref(seen, k)) {
                vm_map_set(vm, seen, k, v_bool(true));
                vm_array_push(vm, cols, k);
            }
    }
    vm_pop_root(vm, 2);
    return cols;
}

static void json(VM *vm, VStrBuf *sb, Value v, int depth)
{
    if (depth > 100)
        vm_error(vm, "value nested too deeply for JSON");
    switch (v.type) {
    case VT_NIL:
        vm_sb_addc(vm, sb, "null");
        return;
    case VT_STR: {
        VStr *s = AS_STR(v);
        vm_sb_addc(vm, sb, "\"");
        for (size_t i = 0; i < s->len; i++) {
            unsigned char c = (unsigned char)s->data[i];
            if (c == '"' || c == '\\')
                vm_sb_printf(vm, sb, "\\%c", c);
            else if (c < 0x20)
                vm_sb_printf(vm, sb, "\\u%04x", c);
            else
                vm_sb_add(vm, sb, (const char *)&c, 1);
        }
        vm_sb_addc(vm, sb, "\"");
        return;
    }
    case VT_ARRAY:
        vm_sb_addc(vm, sb, "[");
        for (size_t i = 0; i < AS_ARRAY(v)->len; i++) {
            if (i)
                vm_sb_addc(vm, sb, ",");
            json(vm, sb, AS_ARRAY(v)->items[i], depth + 1);
        }
        vm_sb_addc(vm, sb, "]");
        return;
    case VT_MAP: {
        size_t pos = 0, n = 0;
        Value k, x;
        vm_sb_addc(vm, sb, "{");
        while (vm_map_next(AS_MAP(v), &pos, &k, &x)) {
            if (n++)
                vm_sb_addc(vm, sb, ",");
            json(vm, sb, IS_STR(k) ? k : v_obj(vm_tostring(vm, k)), depth + 1);
            vm_sb_addc(vm, sb, ":");
            json(vm, sb, x, depth + 1);
        }
        vm_sb_addc(vm, sb, "}");
        return;
    }
    case VT_BOOL: case VT_INT: case VT_FLOAT:
        vm_show(vm, sb, v, false);
        return;
    default:
        json(vm, sb, v_obj(vm_tostring(vm, v)), depth + 1);
        return;
    }
}

/* The columns a query says hold times (ints shown as ISO-8601). */
static VArray *times;

/* A cell's text: nil is empty, strings as they are, times as ISO-8601,
 * the rest as print. */
static VStr *cell(VM *vm, Value col, Value v)
{
    if (IS_INT(v) && times && IS_STR(col))
        for (size_t i = 0; i < times->len; i++)
            if (str_equal(AS_STR(times->items[i]), AS_STR(col))) {
                char buf[40];
                st_time_format(v.as.i, buf, sizeof buf);
                return vm_str_cstr(vm, buf);
            }
    return IS_NIL(v) ? vm_str_cstr(vm, "") : vm_tostring(vm, v);
}

static void csv_field(VM *vm, VStrBuf *sb, VStr *s)
{
    if (!memchr(s->data, ',', s->len) && !memchr(s->data, '"', s->len) &&
        !memchr(s->data, '\n', s->len)) {
        vm_sb_add(vm, sb, s->data, s->len);
        return;
    }
    vm_sb_addc(vm, sb, "\"");
    for (size_t i = 0; i < s->len; i++)
        vm_sb_add(vm, sb, s->data[i] == '"' ? "\"\"" : &s->data[i], s->data[i] == '"' ? 2 : 1);
    vm_sb_addc(vm, sb, "\"");
}

/* TSV cells: tabs and newlines would break the lines, so they are spaces. */
static void tsv_field(VM *vm, VStrBuf *sb, VStr *s)
{
    for (size_t i = 0; i < s->len; i++)
        vm_sb_add(vm, sb, s->data[i] == '\t' || s->data[i] == '\n' ? " " : &s->data[i], 1);
}

static void delimited(VM *vm, VStrBuf *sb, VArray *rows, VArray *cols, bool csv)
{
    for (size_t r = 0; r <= rows->len; r++) {
        for (size_t c = 0; c < cols->len; c++) {
            Value v = r ? *(vm_map_ref(AS_MAP(rows->items[r - 1]), cols->items[c]) ?: &(Value){0}) : cols->items[c];
            VStr *s = r ? cell(vm, cols->items[c], v) : cell(vm, v_nil(), v);
            if (c)
                vm_sb_addc(vm, sb, csv ? "," : "\t");
            (csv ? csv_field : tsv_field)(vm, sb, s);
        }
        vm_sb_addc(vm, sb, "\n");
    }
}

#define MAX_CELL 60

static void aligned(VM *vm, VStrBuf *sb, VArray *rows, VArray *cols)
{
    size_t nc = cols->len, *w = vm_alloc(vm, (nc + 1) * sizeof *w);
    bool *num = vm_alloc(vm, nc + 1);
    VArray *text = vm_array_new(vm, (rows->len + 1) * nc);
    vm_push_root(vm, v_obj(text));
    for (size_t c = 0; c < nc; c++) {
        w[c] = 0;
        num[c] = true;
    }
    for (size_t r = 0; r <= rows->len; r++)
        for (size_t c = 0; c < nc; c++) {
            Value v = r ? *(vm_map_ref(AS_MAP(rows->items[r - 1]), cols->items[c]) ?: &(Value){0}) : cols->items[c];
            VStr *s = r ? cell(vm, cols->items[c], v) : cell(vm, v_nil(), v);
            if (s->len > MAX_CELL) {
                VStr *t = vm_str_new(vm, s->data, MAX_CELL - 3);
                s = vm_str_concat(vm, t, vm_str_cstr(vm, "..."));
            }
            vm_array_push(vm, text, v_obj(s));
            if (r && !IS_NUM(v) && !IS_NIL(v))
                num[c] = false;
            if (s->len > w[c])
                w[c] = s->len;
        }
    for (size_t r = 0; r <= rows->len; r++) {
        for (size_t c = 0; c < nc; c++) {
            VStr *s = AS_STR(text->items[r * nc + c]);
            size_t pad = w[c] - s->len;
            if (c)
                vm_sb_addc(vm, sb, "  ");
            for (size_t i = 0; num[c] && r && i < pad; i++)
                vm_sb_addc(vm, sb, " ");
            vm_sb_add(vm, sb, s->data, s->len);
            for (size_t i = 0; (!num[c] || !r) && c + 1 < nc && i < pad; i++)
                vm_sb_addc(vm, sb, " ");
        }
        vm_sb_addc(vm, sb, "\n");
        for (size_t c = 0; !r && c < nc; c++) {
            if (c)
                vm_sb_addc(vm, sb, "  ");
            for (size_t i = 0; i < w[c]; i++)
                vm_sb_addc(vm, sb, "-");
        }
        if (!r)
            vm_sb_addc(vm, sb, "\n");
    }
    vm_pop_root(vm, 1);
    vm_free_mem(vm, w, (nc + 1) * sizeof *w);
    vm_free_mem(vm, num, nc + 1);
}

typedef struct Job {
    Value v;
    int format;
    FILE *out;
} Job;

static void render(VM *vm, void *ud)
{
    Job *j = ud;
    Value v = j->v;
    times = NULL;
    if (IS_HANDLE(v) && AS_HANDLE(v)->type == &vm_query_type) {
        times = vm_query_time_columns(vm, v);
        vm_push_root(vm, v_obj(times));
        v = vm_query_run(vm, v);
        vm_pop_root(vm, 1);
    }
    vm_push_root(vm, v);
    if (times)
        vm_push_root(vm, v_obj(times));
    VStrBuf sb;
    vm_sb_init(vm, &sb, 256);
    vm_push_root(vm, v_obj(sb.s));
    int f = j->format == OUT_AUTO ? (isatty(fileno(j->out)) ? OUT_TABLE : OUT_TSV) : j->format;
    if (f == OUT_JSON) {
        json(vm, &sb, v, 0);
        vm_sb_addc(vm, &sb, "\n");
    } else if (is_rows(v)) {
        VArray *cols = columns(vm, AS_ARRAY(v));
        vm_push_root(vm, v_obj(cols));
        if (f == OUT_TABLE)
            aligned(vm, &sb, AS_ARRAY(v), cols);
        else
            delimited(vm, &sb, AS_ARRAY(v), cols, f == OUT_CSV);
        vm_pop_root(vm, 1);
    } else if (!IS_NIL(v)) {
        vm_show(vm, &sb, v, false);
        vm_sb_addc(vm, &sb, "\n");
    }
    VStr *s = vm_sb_done(vm, &sb);
    fwrite(s->data, 1, s->len, j->out);
    vm_pop_root(vm, times ? 3 : 2);
    times = NULL;
}

int out_print(VM *vm, Value v, int format, FILE *out)
{
    Job j = {v, format, out};
    vm_push_root(vm, v);
    int rc = vm_protect(vm, render, &j);
    vm_pop_root(vm, 1);
    return rc;
}
