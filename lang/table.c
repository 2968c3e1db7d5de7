/* table: results as text: rows (an array of maps) as an aligned table, TSV,
 * CSV or JSON. Cells are made once, measured, then laid out; everything is
 * built in collector-owned strings so an error part way leaks nothing. */
#include "config.h"
#include "lang/table.h"

#include "vm/query/query.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>

#include "vm/natives.h"

#define JSON_DEPTH 64   /* deeper than this is taken for a cycle */

const char *const table_format_names[] = {"table", "tsv", "csv", "json", "line", NULL};

int table_format_parse(const char *name)
{
    for (int i = 0; table_format_names[i]; i++)
        if (!strcmp(name, table_format_names[i]))
            return i;
    return -1;
}

const char *table_format_name(TableFormat f)
{
    return table_format_names[f];
}

bool table_is_rows(Value v)
{
    if (!IS_ARRAY(v) || AS_ARRAY(v)->len == 0)
        return false;
    VArray *a = AS_ARRAY(v);
    for (size_t i = 0; i < a->len; i++)
        if (!IS_MAP(a->items[i]))
            return false;
    return true;
}

size_t table_text_width(const char *s, size_t len)
{
    size_t w = 0;
    for (size_t i = 0; i < len; i++)
        w += ((unsigned char)s[i] & 0xc0) != 0x80;
    return w;
}

/* ---- cells ------------------------------------------------------------ */

/* The escape for byte c in a cell of format f, or NULL to keep it. TSV
 * escapes its delimiters (as PostgreSQL's text format does); the aligned
 * table makes every control character visible; CSV quotes instead. */
static const char *cell_escape(unsigned char c, TableFormat f, char buf[8])
{
    if (f == TABLE_CSV)
        return NULL;
    switch (c) {
    case '\n': return "\\n";
    case '\t': return "\\t";
    case '\r': return "\\r";
    case '\\': return f == TABLE_TSV ? "\\\\" : NULL;
    default: break;
    }
    if (f == TABLE_ALIGNED && (c < 0x20 || c == 0x7f)) {
        snprintf(buf, 8, "\\x%02x", c);
        return buf;
    }
    return NULL;
}

static void add_escaped(VM *vm, VStrBuf *sb, const VStr *s, TableFormat f)
{
    char buf[8];
    size_t from = 0;
    for (size_t i = 0; i < s->len; i++) {
        const char *esc = cell_escape((unsigned char)s->data[i], f, buf);
        if (!esc)
            continue;
        vm_sb_add(vm, sb, s->data + from, i - from);
        vm_sb_addc(vm, sb, esc);
        from = i + 1;
    }
    vm_sb_add(vm, sb, s->data + from, s->len - from);
}

static bool csv_needs_quotes(const VStr *s)
{
    for (size_t i = 0; i < s->len; i++)
        if (strchr(",\"\n\r", s->data[i]) && s->data[i])
            return true;
    return s->len && (s->data[0] == ' ' || s->data[s->len - 1] == ' ');
}

static void add_csv_quoted(VM *vm, VStrBuf *sb, const VStr *s)
{
    vm_sb_add(vm, sb, "\"", 1);
    size_t from = 0;
    for (size_t i = 0; i < s->len; i++)
        if (s->data[i] == '"') {
            vm_sb_add(vm, sb, s->data + from, i + 1 - from);
            vm_sb_add(vm, sb, "\"", 1);
            from = i + 1;
        }
    vm_sb_add(vm, sb, s->data + from, s->len - from);
    vm_sb_add(vm, sb, "\"", 1);
}

/* A float as the aligned table shows it, rounded for reading to 12
 * significant digits (as DuckDB's shell shows them): 37832.3, not the
 * 37832.30000000011 a sum may hold. Machine formats keep every digit. */
static VStr *float_for_reading(VM *vm, double d)
{
    char buf[40];
    int n = snprintf(buf, sizeof buf, "%.12g", d);
    if (isfinite(d) && !strpbrk(buf, ".e"))
        n += snprintf(buf + n, sizeof buf - (size_t)n, ".0");   /* still a float, as print shows */
    return vm_str_new(vm, buf, (size_t)n);
}

/* The text of a value in a cell: nil is empty; strings are their bytes;
 * floats in the aligned table rounded for reading; anything else as print
 * shows it. */
static VStr *cell_text(VM *vm, Value v, TableFormat f)
{
    VStr *plain = IS_NIL(v) ? vm_str_new(vm, "", 0)
                  : IS_FLOAT(v) && f == TABLE_ALIGNED ? float_for_reading(vm, v.as.f)
                                                      : vm_tostring(vm, v);
    VStrBuf sb;
    vm_sb_init(vm, &sb, plain->len + 2);
    if (f == TABLE_CSV && csv_needs_quotes(plain))
        add_csv_quoted(vm, &sb, plain);
    else
        add_escaped(vm, &sb, plain, f);
    return vm_sb_done(vm, &sb);
}

/* ---- rows ------------------------------------------------------------- */

/* Adds the keys of row that cols lacks: key -> column. */
static void add_columns(VM *vm, VMap *cols, VMap *row)
{
    size_t pos = 0;
    Value k, v;
    while (vm_map_next(row, &pos, &k, &v))
        if (!vm_map_ref(cols, k))
            vm_map_set(vm, cols, k, v_int((int64_t)cols->live));
}

/* The keys of all rows, in the order they first appear. */
static VMap *columns_of(VM *vm, VArray *rows)
{
    VMap *cols = vm_map_new(vm, 8);
    for (size_t r = 0; r < rows->len; r++)
        add_columns(vm, cols, AS_MAP(rows->items[r]));
    return cols;
}

/* A grid of cell texts: the header, then each row; ncols per line. */
typedef struct Grid {
    VArray *cells;
    size_t ncols, nlines;
    VArray *numeric;    /* per column: true when every non-empty cell is a number */
} Grid;

static Grid make_grid(VM *vm, VArray *rows, TableFormat f)
{
    VMap *cols = columns_of(vm, rows);
    Grid g = {vm_array_new(vm, (rows->len + 1) * cols->live), cols->live, rows->len + 1,
              vm_array_new(vm, cols->live)};
    size_t pos = 0;
    Value k, v;
    while (vm_map_next(cols, &pos, &k, &v)) {
        vm_array_push(vm, g.cells, v_obj(cell_text(vm, k, f)));
        vm_array_push(vm, g.numeric, v_bool(true));
    }
    for (size_t r = 0; r < rows->len; r++) {
        VMap *row = AS_MAP(rows->items[r]);
        pos = 0;
        for (size_t c = 0; vm_map_next(cols, &pos, &k, &v); c++) {
            Value *cell = vm_map_ref(row, k);
            Value x = cell ? *cell : v_nil();
            if (!IS_NUM(x) && !IS_NIL(x))
                g.numeric->items[c] = v_bool(false);
            vm_array_push(vm, g.cells, v_obj(cell_text(vm, x, f)));
        }
    }
    return g;
}

static VStr *grid_cell(const Grid *g, size_t line, size_t col)
{
    return AS_STR(g->cells->items[line * g->ncols + col]);
}

static void add_spaces(VM *vm, VStrBuf *sb, size_t n)
{
    static const char spaces[] = "                                ";
    for (; n > sizeof spaces - 1; n -= sizeof spaces - 1)
        vm_sb_add(vm, sb, spaces, sizeof spaces - 1);
    vm_sb_add(vm, sb, spaces, n);
}

/* The widest cell of each column, as ints. */
static VArray *column_widths(VM *vm, const Grid *g)
{
    VArray *width = vm_array_new(vm, g->ncols);
    for (size_t c = 0; c < g->ncols; c++) {
        size_t w = 0;
        for (size_t l = 0; l < g->nlines; l++) {
            VStr *s = grid_cell(g, l, c);
            size_t n = table_text_width(s->data, s->len);
            w = n > w ? n : w;
        }
        vm_array_push(vm, width, v_int((int64_t)w));
    }
    return width;
}

/* One line of the aligned table: ` a | b`, numbers to the right, no
 * blanks at the end. */
static void aligned_line(VM *vm, VStrBuf *sb, const Grid *g, size_t line, const VArray *width,
                         bool bold)
{
    for (size_t c = 0; c < g->ncols; c++) {
        VStr *s = grid_cell(g, line, c);
        size_t pad = (size_t)AS_INT(width->items[c]) - table_text_width(s->data, s->len);
        bool right = AS_BOOL(g->numeric->items[c]);
        vm_sb_addc(vm, sb, c ? " | " : " ");
        if (right)
            add_spaces(vm, sb, pad);
        if (bold)
            vm_sb_addc(vm, sb, "\033[1m");
        vm_sb_add(vm, sb, s->data, s->len);
        if (bold)
            vm_sb_addc(vm, sb, "\033[0m");
        if (!right)
            add_spaces(vm, sb, pad);
    }
    while (sb->s->len && sb->s->chars[sb->s->len - 1] == ' ')
        sb->s->len--;   /* an empty or short last cell leaves no trailing blanks */
    vm_sb_add(vm, sb, "\n", 1);
}

static void render_aligned(VM *vm, VStrBuf *sb, VArray *rows, bool bold)
{
    Grid g = make_grid(vm, rows, TABLE_ALIGNED);
    VArray *width = column_widths(vm, &g);
    aligned_line(vm, sb, &g, 0, width, bold);
    for (size_t c = 0; c < g.ncols; c++) {
        if (c)
            vm_sb_add(vm, sb, "+", 1);
        for (int64_t i = 0; i < AS_INT(width->items[c]) + 2; i++)
            vm_sb_add(vm, sb, "-", 1);
    }
    vm_sb_add(vm, sb, "\n", 1);
    for (size_t l = 1; l < g.nlines; l++)
        aligned_line(vm, sb, &g, l, width, false);
    vm_sb_printf(vm, sb, "(%zu row%s)\n", rows->len, rows->len == 1 ? "" : "s");
}

/* .mode line: each row as one `name = value` line per column, names
 * right-aligned, a blank line between rows (sqlite3's). */
static void render_lines(VM *vm, VStrBuf *sb, VArray *rows)
{
    Grid g = make_grid(vm, rows, TABLE_ALIGNED);
    size_t w = 0;
    for (size_t c = 0; c < g.ncols; c++) {
        VStr *s = grid_cell(&g, 0, c);
        size_t n = table_text_width(s->data, s->len);
        w = n > w ? n : w;
    }
    for (size_t l = 1; l < g.nlines; l++) {
        vm_sb_addc(vm, sb, l > 1 ? "\n" : "");
        for (size_t c = 0; c < g.ncols; c++) {
            VStr *name = grid_cell(&g, 0, c), *s = grid_cell(&g, l, c);
            add_spaces(vm, sb, w - table_text_width(name->data, name->len));
            vm_sb_add(vm, sb, name->data, name->len);
            vm_sb_addc(vm, sb, " = ");
            vm_sb_add(vm, sb, s->data, s->len);
            vm_sb_addc(vm, sb, "\n");
        }
    }
}

/* A TSV or CSV line: the header of cols (row nil), or row's cells. */
static void delimited_line(VM *vm, VStrBuf *sb, VMap *cols, Value row, TableFormat f)
{
    size_t pos = 0;
    Value k, v;
    for (bool first = true; vm_map_next(cols, &pos, &k, &v); first = false) {
        Value *cell = IS_NIL(row) ? &k : vm_map_ref(AS_MAP(row), k);
        VStr *s = cell_text(vm, cell ? *cell : v_nil(), f);
        if (!first)
            vm_sb_addc(vm, sb, f == TABLE_TSV ? "\t" : ",");
        vm_sb_add(vm, sb, s->data, s->len);
    }
    vm_sb_add(vm, sb, "\n", 1);
}

static void render_delimited(VM *vm, VStrBuf *sb, VArray *rows, TableFormat f)
{
    VMap *cols = columns_of(vm, rows);
    delimited_line(vm, sb, cols, v_nil(), f);
    for (size_t r = 0; r < rows->len; r++)
        delimited_line(vm, sb, cols, rows->items[r], f);
}

/* ---- JSON ------------------------------------------------------------- */

static void json_string(VM *vm, VStrBuf *sb, const char *p, size_t n)
{
    vm_sb_add(vm, sb, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') {
            vm_sb_add(vm, sb, "\\", 1);
            vm_sb_add(vm, sb, p + i, 1);
        } else if (c == '\n') {
            vm_sb_addc(vm, sb, "\\n");
        } else if (c == '\t') {
            vm_sb_addc(vm, sb, "\\t");
        } else if (c < 0x20 || c == 0x7f) {
            vm_sb_printf(vm, sb, "\\u%04x", c);
        } else {
            vm_sb_add(vm, sb, p + i, 1);
        }
    }
    vm_sb_add(vm, sb, "\"", 1);
}

static void json(VM *vm, VStrBuf *sb, Value v, int depth)
{
    if (depth > JSON_DEPTH)
        vm_error(vm, "json: value nested too deeply (or it contains itself)");
    char buf[32];
    switch (v.type) {
    case VT_NIL:
        vm_sb_addc(vm, sb, "null");
        return;
    case VT_BOOL:
    case VT_INT:
        vm_show(vm, sb, v, false);
        return;
    case VT_FLOAT:
        if (!isfinite(AS_FLOAT(v))) {
            vm_sb_addc(vm, sb, "null");
            return;
        }
        vm_format_float(AS_FLOAT(v), buf);
        vm_sb_addc(vm, sb, buf);
        return;
    case VT_ARRAY: {
        VArray *a = AS_ARRAY(v);
        vm_sb_add(vm, sb, "[", 1);
        for (size_t i = 0; i < a->len; i++) {
            if (i)
                vm_sb_add(vm, sb, ",", 1);
            json(vm, sb, a->items[i], depth + 1);
        }
        vm_sb_add(vm, sb, "]", 1);
        return;
    }
    case VT_MAP: {
        size_t pos = 0;
        Value k, x;
        vm_sb_add(vm, sb, "{", 1);
        for (bool first = true; vm_map_next(AS_MAP(v), &pos, &k, &x); first = false) {
            if (!first)
                vm_sb_add(vm, sb, ",", 1);
            VStr *ks = vm_tostring(vm, k);
            json_string(vm, sb, ks->data, ks->len);
            vm_sb_add(vm, sb, ":", 1);
            json(vm, sb, x, depth + 1);
        }
        vm_sb_add(vm, sb, "}", 1);
        return;
    }
    default: {      /* strings, and what JSON has no type for, as text */
        VStr *s = vm_tostring(vm, v);
        json_string(vm, sb, s->data, s->len);
        return;
    }
    }
}

/* Rows as a JSON array, one row a line, so it reads and diffs well: the
 * text before row r, and after the last (JSON_END). */
#define JSON_END "\n]\n"

static void json_row(VM *vm, VStrBuf *sb, Value row, size_t r)
{
    vm_sb_addc(vm, sb, r ? ",\n" : "[\n");
    json(vm, sb, row, 1);
}

static void render_json_rows(VM *vm, VStrBuf *sb, VArray *rows)
{
    for (size_t r = 0; r < rows->len; r++)
        json_row(vm, sb, rows->items[r], r);
    vm_sb_addc(vm, sb, JSON_END);
}

void table_render(VM *vm, VStrBuf *sb, Value v, TableFormat f, bool bold)
{
    if (table_is_rows(v)) {
        VArray *rows = AS_ARRAY(v);
        if (f == TABLE_ALIGNED)
            render_aligned(vm, sb, rows, bold);
        else if (f == TABLE_LINE)
            render_lines(vm, sb, rows);
        else if (f == TABLE_JSON)
            render_json_rows(vm, sb, rows);
        else
            render_delimited(vm, sb, rows, f);
        return;
    }
    if (f == TABLE_JSON)
        json(vm, sb, v, 0);
    else
        vm_show(vm, sb, v, f == TABLE_ALIGNED || f == TABLE_LINE);
    vm_sb_add(vm, sb, "\n", 1);
}

typedef struct TextJob {
    Value v;
    TableFormat f;
    bool bold;
    VStr *text;
} TextJob;

static void text_job(VM *vm, void *ud)
{
    TextJob *j = ud;
    VStrBuf sb;
    j->v = vm_query_display(vm, j->v);     /* a query shows its rows */
    vm_push_root(vm, j->v);
    vm_sb_init(vm, &sb, 64);
    table_render(vm, &sb, j->v, j->f, j->bold);
    vm_pop_root(vm, 1);
    j->text = vm_sb_done(vm, &sb);
}

VStr *table_text(VM *vm, Value v, TableFormat f, bool bold)
{
    TextJob j = {v, f, bold, NULL};
    return vm_protect(vm, text_job, &j) ? NULL : j.text;
}

/* ---- a query's rows as they come --------------------------------------- */

/* Rows into out in format f (not aligned), a line at a time, each written
 * before the next row is asked for (the rows may call comb, which may
 * collect): rows is an array of maps, or a handle whose type's next gives
 * them (a scan's rows all have the first one's keys); the columns named in
 * times show as ISO-8601. The rows written. */
static size_t stream_rows(VM *vm, Value rows, VArray *times, TableFormat f, FILE *out, bool file)
{
    VHandle *h = IS_HANDLE(rows) ? AS_HANDLE(rows) : NULL;
    VMap *cols = NULL;
    Value row, b;
    int64_t pos = 0;
    size_t n = 0;
    if (!h && AS_ARRAY(rows)->len && table_is_rows(rows)) {
        cols = columns_of(vm, AS_ARRAY(rows));
        vm_push_root(vm, v_obj(cols));
    }
    vm_push_root(vm, v_nil());     /* the row shown (a copy with its times as text) */
    size_t shown = vm->nroots - 1;
    for (; h ? h->type->next(vm, h->data, &pos, &row, &b)
             : n < AS_ARRAY(rows)->len && (row = AS_ARRAY(rows)->items[n], true);
         n++) {
        if (!IS_MAP(row))
            vm_error(vm, "write: a text file takes rows (maps), not %s", v_type_name(row));
        row = vm->roots[shown] = vm_query_show_times(vm, times, row);
        VStrBuf sb;
        vm_sb_init(vm, &sb, 256);
        if (f == TABLE_JSON) {
            json_row(vm, &sb, row, n);
        } else {
            if (!n) {
                if (!cols) {
                    cols = vm_map_new(vm, 8);
                    vm_push_root(vm, v_obj(cols));
                    add_columns(vm, cols, AS_MAP(row));
                }
                delimited_line(vm, &sb, cols, v_nil(), f);
            }
            delimited_line(vm, &sb, cols, row, f);
        }
        VStr *line = vm_sb_done(vm, &sb);
        fwrite(line->data, 1, line->len, out);
        vm_gc_step(vm);     /* the rows written are garbage */
    }
    if (n && f == TABLE_JSON)
        fputs(JSON_END, out);
    if (!n && file) {   /* no rows: an empty file, or JSON's empty array */
        fputs(f == TABLE_JSON ? "[]\n" : "", out);
    } else if (!n) {    /* no rows: what the empty array shows */
        VStrBuf sb;
        vm_sb_init(vm, &sb, 16);
        table_render(vm, &sb, v_obj(vm_array_new(vm, 0)), f, false);
        VStr *s = vm_sb_done(vm, &sb);
        fwrite(s->data, 1, s->len, out);
    }
    vm_pop_root(vm, cols ? 2 : 1);
    return n;
}

/* ---- a query's rows as they come --------------------------------------- */

typedef struct StreamJob {
    Value q;
    TableFormat f;
    FILE *out;
    Value it;           /* the query's cursor, closed after */
    VArray *times;
    size_t n;
} StreamJob;

static void stream_job(VM *vm, void *ud)
{
    StreamJob *j = ud;
    VArray *times = j->times ? j->times : vm_query_time_columns(vm, j->q);
    vm_push_root(vm, v_obj(times));
    if (IS_HANDLE(j->q) && AS_HANDLE(j->q)->type->iter)
        j->it = AS_HANDLE(j->q)->type->iter(vm, j->q);
    vm_push_root(vm, j->it);
    j->n = stream_rows(vm, IS_NIL(j->it) ? j->q : j->it, times, j->f, j->out, j->times != NULL);
    vm_pop_root(vm, 2);
}

bool table_stream(VM *vm, Value v, TableFormat f, FILE *out)
{
    if (f == TABLE_ALIGNED || f == TABLE_LINE || !vm_query_streams(vm, v)) {
        VStr *text = table_text(vm, v, f, false);
        if (text)
            fwrite(text->data, 1, text->len, out);
        return text != NULL;
    }
    StreamJob j = {v, f, out, v_nil(), NULL, 0};
    int rc = vm_protect(vm, stream_job, &j);
    if (IS_HANDLE(j.it) && AS_HANDLE(j.it)->type->close)
        AS_HANDLE(j.it)->type->close(vm, handle_data(AS_HANDLE(j.it)));
    return rc == 0;
}

/* ---- write(path) of a text file ----------------------------------------- */

/* vm_text_writer: into a temporary file beside path, renamed over it when
 * every row is written, removed on an error (raised again). */
static int64_t write_text_file(VM *vm, Value rows, VArray *times, VStr *path, int format)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmpXXXXXX", path->data) >= (int)sizeof tmp)
        vm_error(vm, "write: the path is too long");
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        vm_error(vm, "write: cannot write %s: %s", path->data, strerror(errno));
    }
    mode_t mask = umask(0);     /* mkstemp's 0600 made as open(2) would */
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    StreamJob j = {rows, (TableFormat)format, f, v_nil(), times, 0};
    int rc = vm_protect(vm, stream_job, &j);
    int err = ferror(f) ? EIO : 0;
    if (fclose(f) && !err)
        err = errno;
    if (!rc && !err && rename(tmp, path->data))
        err = errno;
    if (rc || err)
        unlink(tmp);
    if (rc)
        vm_rethrow(vm);
    if (err)
        vm_error(vm, "write: cannot write %s: %s", path->data, strerror(err));
    return (int64_t)j.n;
}

void table_register(void)
{
    _Static_assert((int)VM_TEXT_TSV == (int)TABLE_TSV && (int)VM_TEXT_CSV == (int)TABLE_CSV &&
                       (int)VM_TEXT_JSON == (int)TABLE_JSON,
                   "the text formats of write are the table's");
    vm_text_writer = write_text_file;
}
