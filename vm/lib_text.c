/* lib_text: read_text, delimited text (CSV, TSV, |-separated, quoted
 * fields) read with a schema into rows of tags; rows that do not parse are
 * counted and reported by file and line, never dropped silently. */
#include "config.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/fieldtext.h"
#include "store/mem.h"
#include "vm/lib.h"
#include "vm/lib_store.h"
#include "vm/natives.h"
#include "vm/suggest.h"

/* What is open while reading, owned by a handle so a raise closes it. */
typedef struct TextRead {
    FILE *f;
    char *rec;          /* the record being read, its fields NUL-separated */
    size_t cap;
    size_t *start;      /* field starts in rec */
    size_t *len;
    size_t nf, capf;
    bool unclosed;      /* the record ended at the end of the file inside quotes */
    bool at_start;      /* the next record is the file's first */
    glob_t g;
    bool globbed;
} TextRead;

static void text_free(VM *vm, void *data)
{
    TextRead *t = data;
    if (t->f)
        fclose(t->f);
    vm_free_mem(vm, t->rec, t->cap);
    vm_free_mem(vm, t->start, t->capf * sizeof(size_t));
    vm_free_mem(vm, t->len, t->capf * sizeof(size_t));
    if (t->globbed)
        globfree(&t->g);
}

static const VHandleType text_type = {.name = "text reader", .free = text_free};

static void put_char(VM *vm, TextRead *t, size_t *n, int c)
{
    if (*n + 1 >= t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        t->rec = vm_realloc(vm, t->rec, t->cap, cap);
        t->cap = cap;
    }
    t->rec[(*n)++] = (char)c;
}

static void end_field(VM *vm, TextRead *t, size_t *n, size_t *fstart)
{
    if (t->nf == t->capf) {
        size_t cap = t->capf ? 2 * t->capf : 16;
        t->start = vm_realloc(vm, t->start, t->capf * sizeof(size_t), cap * sizeof(size_t));
        t->len = vm_realloc(vm, t->len, t->capf * sizeof(size_t), cap * sizeof(size_t));
        t->capf = cap;
    }
    t->start[t->nf] = *fstart;
    t->len[t->nf++] = *n - *fstart;
    put_char(vm, t, n, 0);
    *fstart = *n;
}

/* Reads one record (a line; quoted fields may hold delimiters, newlines
 * and doubled quotes) into t's fields. *lines counts the lines it took.
 * false at the end of the file. */
static bool read_record(VM *vm, TextRead *t, int delim, int quote, long *lines)
{
    size_t n = 0, fstart = 0;
    bool quoted = false, any = false, was_quoted = false;
    int c;
    t->nf = 0;
    t->unclosed = false;
    while ((c = getc(t->f)) != EOF) {
        any = true;
        if (quoted) {
            if (c == quote) {
                int d = getc(t->f);
                if (d == quote) {
                    put_char(vm, t, &n, c);
                    continue;
                }
                quoted = false;
                if (d == EOF)
                    break;
                c = d;
            } else {
                *lines += c == '\n';
                put_char(vm, t, &n, c);
                continue;
            }
        }
        if (c == quote && n == fstart && !was_quoted) {
            quoted = was_quoted = true;
        } else if (c == delim) {
            end_field(vm, t, &n, &fstart);
            was_quoted = false;
        } else if (c == '\n') {
            break;
        } else if (c != '\r') {
            put_char(vm, t, &n, c);
        }
    }
    if (!any)
        return false;
    t->unclosed = quoted;
    ++*lines;
    end_field(vm, t, &n, &fstart);
    if (t->at_start && t->len[0] >= 3 && !memcmp(t->rec, "\xef\xbb\xbf", 3)) {
        /* a UTF-8 byte order mark, which a header's first name would keep */
        memmove(t->rec, t->rec + 3, n - 3);
        t->len[0] -= 3;
        for (size_t i = 1; i < t->nf; i++)
            t->start[i] -= 3;
    }
    t->at_start = false;
    return true;
}

typedef struct Opts {
    int delim, quote;
    bool header;
    VArray *columns;    /* names, when there is no header */
    int64_t max_errors; /* report at most this many lines */
} Opts;

static int one_char(VM *vm, Value v, const char *what, int dflt)
{
    if (IS_NIL(v))
        return dflt;
    if (!IS_STR(v) || AS_STR(v)->len != 1)
        vm_error(vm, "option %s must be one character", what);
    return (unsigned char)AS_STR(v)->data[0];
}

static Value get(VM *vm, VMap *m, const char *k)
{
    Value v = v_nil();
    if (m)
        vm_map_get(vm, m, v_obj(vm_str_cstr(vm, k)), &v);
    return v;
}

static void read_opts(VM *vm, VMap *m, const char *path, Opts *o)
{
    size_t n = strlen(path);
    bool tsv = n > 4 && !strcmp(path + n - 4, ".tsv");
    o->delim = one_char(vm, get(vm, m, "delim"), "delim", tsv ? '\t' : ',');
    o->quote = one_char(vm, get(vm, m, "quote"), "quote", '"');
    Value h = get(vm, m, "header");
    o->header = IS_NIL(h) ? true : v_truthy(h);
    Value c = get(vm, m, "columns");
    o->columns = IS_ARRAY(c) ? AS_ARRAY(c) : NULL;
    Value e = get(vm, m, "max_errors");
    o->max_errors = IS_INT(e) ? e.as.i : 10;
}

/* Field indices of the columns, from the header or the option, or the
 * schema's order. */
static int *column_fields(VM *vm, const st_schema *s, TextRead *t, const Opts *o, const char *path,
                          size_t *ncols, Value *keep)
{
    size_t n = o->header ? t->nf : o->columns ? o->columns->len : s->nfields;
    VStr *buf = vm_str_alloc(vm, (n + 1) * sizeof(int));
    *keep = v_obj(buf);
    int *cols = (int *)(void *)str_wbuf(buf);
    const char *names[ST_MAX_FIELDS];
    for (uint32_t f = 0; f < s->nfields && f < ST_MAX_FIELDS; f++)
        names[f] = s->fields[f].name;
    for (size_t i = 0; i < n; i++) {
        const char *name;
        size_t len;
        if (o->header) {
            name = t->rec + t->start[i];
            len = t->len[i];
        } else if (o->columns) {
            if (!IS_STR(o->columns->items[i]))
                vm_error(vm, "option columns must be an array of field names");
            name = AS_STR(o->columns->items[i])->data;
            len = AS_STR(o->columns->items[i])->len;
        } else {
            cols[i] = (int)i;
            continue;
        }
        cols[i] = st_schema_find(s, name, len);
        if (cols[i] < 0) {
            const char *hint = vm_suggest(name, len, names, s->nfields);
            vm_error(vm, "%s: column '%.*s' is not a field of the schema%s%s%s", path, (int)len, name,
                     hint ? " (did you mean '" : "", hint ? hint : "", hint ? "'?)" : "");
        }
        for (size_t j = 0; j < i; j++)
            if (cols[j] == cols[i])
                vm_error(vm, "%s: column '%.*s' is named twice", path, (int)len, name);
    }
    *ncols = n;
    return cols;
}

/* One file's rows into out; bad lines are counted and reported. */
static void read_file(VM *vm, TextRead *t, VSchema *vs, const char *path, const Opts *o, VArray *out,
                      int64_t *bad, int64_t *good)
{
    const st_schema *s = vs->s;
    struct stat sb;
    if (!(t->f = fopen(path, "rb")))
        vm_error(vm, "%s: %s", path, strerror(errno));
    if (fstat(fileno(t->f), &sb) == 0 && S_ISDIR(sb.st_mode))
        vm_error(vm, "%s: %s", path, strerror(EISDIR));
    t->at_start = true;
    long line = 0, first;
    size_t ncols = 0;
    int *cols = NULL;
    Value keep = v_nil();
    unsigned char val[ST_MAX_CHAR];
    if (o->header && !read_record(vm, t, o->delim, o->quote, &line)) {
        int err = ferror(t->f);
        fclose(t->f);
        t->f = NULL;
        if (err)
            vm_error(vm, "%s: read error", path);
        return;
    }
    cols = column_fields(vm, s, t, o, path, &ncols, &keep);
    vm_push_root(vm, keep);
    for (;;) {
        first = line + 1;
        if (!read_record(vm, t, o->delim, o->quote, &line))
            break;
        if (t->nf == 1 && t->len[0] == 0)
            continue;   /* a blank line */
        st_err fe;
        char why[sizeof fe.msg] = "";
        VMap *row = vm_map_new(vm, ncols);
        vm_push_root(vm, v_obj(row));
        if (t->unclosed)
            snprintf(why, sizeof why, "a quoted field is not closed by the end of the file");
        else if (t->nf != ncols)
            snprintf(why, sizeof why, "%zu fields, expected %zu", t->nf, ncols);
        for (size_t i = 0; !why[0] && i < ncols; i++) {
            if (st_fieldtext_parse(&s->fields[cols[i]], t->rec + t->start[i], t->len[i], val,
                                   vm_suggest, &fe) == 0)
                vm_map_set(vm, row, v_obj(vs->names[cols[i]]), vm_field_value(vm, vs, (uint32_t)cols[i], val));
            else if (fe.code == ST_ENOMEM)
                vm_throw(vm, v_obj(vm->oom));
            else
                snprintf(why, sizeof why, "%s", fe.msg);
        }
        if (why[0]) {
            if (++*bad <= o->max_errors)
                fprintf(stderr, "read_text: %s:%ld: %s\n", path, first, why);
        } else {
            vm_array_push(vm, out, v_obj(row));
            ++*good;
        }
        vm_pop_root(vm, 1);
    }
    int err = ferror(t->f);
    fclose(t->f);
    t->f = NULL;
    vm_pop_root(vm, 1);
    if (err)
        vm_error(vm, "%s: read error", path);
}

/* read_text(pattern, schema, opts): the rows of the files matching the
 * glob pattern, as maps of the schema's fields (one tag each). */
Value nat_read_text(VM *vm, int argc, Value *argv)
{
    VStr *pat = vm_arg_str(vm, argv, 0);
    VHandle *sh = vm_schema_of(argv[1]);
    if (!sh)
        vm_arg_error(vm, 1, "a schema", argv[1]);
    VMap *m = argc > 2 && !IS_NIL(argv[2]) ? vm_arg_map(vm, argv, 2) : NULL;
    static const char *const known[] = {"delim", "quote", "header", "columns", "max_errors", NULL};
    lib_check_opts(vm, m, known);
    VHandle *h = vm_handle_new(vm, &text_type, sizeof(TextRead));
    vm_push_root(vm, v_obj(h));
    TextRead *t = handle_data(h);
    int rc = glob(pat->data, 0, NULL, &t->g);
    t->globbed = rc == 0;
    if (rc == GLOB_NOMATCH)
        vm_error(vm, "no file matches %s", pat->data);
    if (rc)
        vm_error(vm, "%s: cannot list the files", pat->data);
    VArray *out = vm_array_new(vm, 64);
    vm_push_root(vm, v_obj(out));
    int64_t bad = 0, good = 0;
    Opts o = {0};
    for (size_t i = 0; i < t->g.gl_pathc; i++) {
        read_opts(vm, m, t->g.gl_pathv[i], &o);
        read_file(vm, t, vschema(sh), t->g.gl_pathv[i], &o, out, &bad, &good);
    }
    if (bad)
        fprintf(stderr, "read_text: %lld of %lld rows did not parse%s\n", (long long)bad,
                (long long)(bad + good), bad > o.max_errors ? " (the first ones are shown)" : "");
    vm_pop_root(vm, 2);
    return v_obj(out);
}
