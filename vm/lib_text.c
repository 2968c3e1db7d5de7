/* lib_text: read_text, delimited text (CSV, TSV, |-separated, quoted
 * fields) read with a schema into rows of tags, all at once or as a stream
 * (for loops, load and queries: a row at a time, and load's rows as bytes
 * when the schema is the store's), and text_schema, the schema guessed from
 * a header and a sample when none is given; rows that do not parse are
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
#include "vm/regex.h"
#include "vm/suggest.h"

/* One pass over the files of a glob: what is open while reading, owned by
 * a handle (a cursor) so a raise closes it. read_text makes one and reads
 * it to the end into an array; a stream's `for`, `load` and queries each
 * make their own and take its rows as they are read. */
#define PIECE (1 << 16)     /* read_line's reads */

typedef struct Opts {
    int delim, quote;
    bool header;
    bool nocase;        /* header names match fields whatever their case */
    bool extra;         /* columns that name no field are skipped */
    VArray *columns;    /* names, when there is no header */
    int64_t max_errors; /* report at most this many lines */
    int64_t skip;       /* lines skipped at the start of each file, whatever they say */
    bool compact_time;  /* time fields are YYYYMMDDhhmmss or YYYYMMDD, nothing else */
    VHandle *pattern;   /* a regex every record's text must match */
    VArray *rejects;    /* the rows that do not parse go here, not to stderr */
    VMap *set;          /* values of fields no column gives */
    VStr *line_field;   /* the field that takes each record's line number */
} Opts;

typedef struct TextRead {
    FILE *f;
    char *rec;          /* the record being read, its fields NUL-separated */
    size_t cap;
    size_t *start;      /* field starts in rec */
    size_t *len;
    size_t nf, capf;
    bool unclosed;      /* the record ended at the end of the file inside quotes */
    char *text;         /* the record as it was in the file (for pattern and rejects) */
    size_t text_len, text_cap;
    unsigned char *buf; /* read_line's piece of the file, [pos, len) not yet taken */
    size_t buf_pos, buf_len;
    bool at_start;      /* the next record is the file's first */
    glob_t g;
    bool globbed;
    VHandle *schema;    /* the rows' */
    VMap *opts;         /* the caller's options */
    bool inferred;      /* the schema was made from the header: names as text_name makes them */
    size_t next_file;   /* the glob's next path to open */
    const char *path;   /* the file being read */
    long line;
    Opts o;
    int *cols;          /* column -> field, -1 for a column skipped */
    size_t ncols, colcap;
    bool has_tag;       /* some column is a tag field */
    const VSchema *raw; /* rows go out as bytes of this layout (load's fast path): every key needs a column */
    unsigned char *row, *tag;   /* the last record read */
    size_t row_cap, tag_cap;
    unsigned char *set_row, *set_tag;   /* a record before its columns: option set's values */
    size_t set_row_cap, set_tag_cap;
    uint32_t *given;    /* the fields set and line_field give, for rows as maps */
    size_t ngiven, given_cap;
    int line_field;     /* its field, or -1 */
    int64_t bad, good;
    bool done;
} TextRead;

static void text_close(VM *vm, void *data)
{
    (void)vm;
    TextRead *t = data;
    if (t->f)
        fclose(t->f);
    t->f = NULL;
    if (t->globbed)
        globfree(&t->g);
    t->globbed = false;
    t->done = true;
}

static void text_free(VM *vm, void *data)
{
    TextRead *t = data;
    text_close(vm, t);
    vm_free_mem(vm, t->rec, t->cap);
    vm_free_mem(vm, t->start, t->capf * sizeof(size_t));
    vm_free_mem(vm, t->len, t->capf * sizeof(size_t));
    vm_free_mem(vm, t->cols, t->colcap * sizeof(int));
    vm_free_mem(vm, t->row, t->row_cap);
    vm_free_mem(vm, t->tag, t->tag_cap);
    vm_free_mem(vm, t->text, t->text_cap);
    vm_free_mem(vm, t->buf, t->buf ? PIECE : 0);
    vm_free_mem(vm, t->set_row, t->set_row_cap);
    vm_free_mem(vm, t->set_tag, t->set_tag_cap);
    vm_free_mem(vm, t->given, t->given_cap);
}

static void text_mark(VM *vm, void *data)
{
    TextRead *t = data;
    if (t->schema)
        vm_mark_obj(vm, &t->schema->hdr);
    if (t->opts)
        vm_mark_obj(vm, &t->opts->hdr);
    if (t->o.columns)
        vm_mark_obj(vm, &t->o.columns->hdr);
}

static bool text_next(VM *vm, void *data, int64_t *cursor, Value *a, Value *b);

const VHandleType vm_text_cursor_type = {.name = "text reader", .free = text_free,
                                         .mark = text_mark, .next = text_next,
                                         .close = text_close};

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

/* A record without quoting: its line read whole, then cut at each delim
 * (the common case of machine-written files, a few times faster). */
static bool read_line(VM *vm, TextRead *t, int delim, long *lines)
{
    size_t n = 0;
    bool any = false;
    if (!t->buf)
        t->buf = vm_alloc(vm, PIECE);
    for (;;) {
        if (t->buf_pos == t->buf_len) {
            t->buf_pos = 0;
            if (!(t->buf_len = fread(t->buf, 1, PIECE, t->f)))
                break;
        }
        any = true;
        unsigned char *from = t->buf + t->buf_pos, *nl = memchr(from, '\n', t->buf_len - t->buf_pos);
        size_t k = nl ? (size_t)(nl - from) : t->buf_len - t->buf_pos;
        if (n + k + 2 > t->cap) {
            size_t cap = 2 * (n + k + 2) < 256 ? 256 : 2 * (n + k + 2);
            t->rec = vm_realloc(vm, t->rec, t->cap, cap);
            t->cap = cap;
        }
        memcpy(t->rec + n, from, k);
        n += k;
        t->buf_pos += k + (nl != NULL);
        if (nl)
            break;
    }
    if (!any)
        return false;
    ++*lines;
    if (t->o.pattern || t->o.rejects) {
        t->text_len = n && t->rec[n - 1] == '\r' ? n - 1 : n;
        vm_grow(vm, (unsigned char **)&t->text, &t->text_cap, t->text_len + 1);
        memcpy(t->text, t->rec, t->text_len);
    }
    size_t end = n, fstart = 0;
    n = 0;
    t->nf = 0;
    for (size_t i = 0; i < end; i++) {     /* in place: the fields NUL-separated, no '\r' */
        char ch = t->rec[i];
        if (ch == delim)
            end_field(vm, t, &n, &fstart);
        else if (ch != '\r')
            t->rec[n++] = ch;
    }
    end_field(vm, t, &n, &fstart);
    return true;
}

/* Reads one record (a line; quoted fields may hold delimiters, newlines
 * and doubled quotes) into t's fields. *lines counts the lines it took.
 * false at the end of the file. */
static bool read_record(VM *vm, TextRead *t, int delim, int quote, long *lines)
{
    size_t n = 0, fstart = 0;
    bool quoted = false, any = false, was_quoted = false;
    bool keep = t->o.pattern || t->o.rejects;
    int c;
    t->nf = 0;
    t->unclosed = false;
    t->text_len = 0;
    if (quote < 0) {
        if (!read_line(vm, t, delim, lines))
            return false;
        goto read;
    }
    while ((c = getc_unlocked(t->f)) != EOF) {    /* (the VM's thread alone reads it) */
        any = true;
        if (keep && (c != '\n' || quoted)) {
            vm_grow(vm, (unsigned char **)&t->text, &t->text_cap, t->text_len + 1);
            t->text[t->text_len++] = (char)c;
        }
        if (quoted) {
            if (c == quote) {
                int d = getc_unlocked(t->f);
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
    if (t->text_len && t->text[t->text_len - 1] == '\r')
        t->text_len--;
    t->unclosed = quoted;
    ++*lines;
    end_field(vm, t, &n, &fstart);
read:
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

/* An option of one character; "" is none (-1, which no byte read equals). */
static int one_char(VM *vm, Value v, const char *what, int dflt)
{
    if (IS_NIL(v))
        return dflt;
    if (IS_STR(v) && AS_STR(v)->len == 0)
        return -1;
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

static bool is_count(Value v) { return IS_INT(v) && v.as.i >= 0; }
static bool is_regex(Value v) { return IS_HANDLE(v) && AS_HANDLE(v)->type == &vm_regex_type; }
static bool is_array(Value v) { return IS_ARRAY(v); }
static bool is_map(Value v) { return IS_MAP(v); }
static bool is_str(Value v) { return IS_STR(v); }

/* Option key of m: nil, or a value ok accepts; else raises saying what it must be. */
static Value checked(VM *vm, VMap *m, const char *key, bool (*ok)(Value), const char *must)
{
    Value v = get(vm, m, key);
    if (!IS_NIL(v) && !ok(v))
        vm_error(vm, "option %s must be %s", key, must);
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
    o->nocase = v_truthy(get(vm, m, "ignore_case"));
    Value x = get(vm, m, "extra");
    if (!IS_NIL(x) && !(IS_STR(x) && (!strcmp(AS_STR(x)->data, "ignore") ||
                                     !strcmp(AS_STR(x)->data, "error"))))
        vm_error(vm, "option extra must be \"ignore\" or \"error\"");
    o->extra = !IS_NIL(x) && !strcmp(AS_STR(x)->data, "ignore");
    Value c = get(vm, m, "columns");
    o->columns = IS_ARRAY(c) ? AS_ARRAY(c) : NULL;
    Value e = get(vm, m, "max_errors");
    o->max_errors = IS_INT(e) ? e.as.i : 10;
    Value sk = checked(vm, m, "skip", is_count, "a number of lines");
    o->skip = IS_NIL(sk) ? 0 : sk.as.i;
    o->compact_time = v_truthy(get(vm, m, "compact_time"));
    Value p = checked(vm, m, "pattern", is_regex, "a regex");
    o->pattern = IS_NIL(p) ? NULL : AS_HANDLE(p);
    Value r = checked(vm, m, "rejects", is_array, "an array (the rows that do not parse go into it)");
    o->rejects = IS_NIL(r) ? NULL : AS_ARRAY(r);
    Value sv = checked(vm, m, "set", is_map, "a map of field names to values");
    o->set = IS_NIL(sv) ? NULL : AS_MAP(sv);
    Value lf = checked(vm, m, "line_field", is_str, "a field name");
    o->line_field = IS_NIL(lf) ? NULL : AS_STR(lf);
}

/* A column's name as a field name of an inferred schema: letters, digits
 * and '_', the rest made '_', a '_' before a leading digit; at most 64 bytes. */
static size_t text_name(const char *name, size_t len, char *out)
{
    size_t n = 0;
    if (!len || (name[0] >= '0' && name[0] <= '9'))
        out[n++] = '_';
    for (size_t i = 0; i < len && n < ST_MAX_NAME; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        out[n++] = ok ? c : '_';
    }
    out[n] = 0;
    return n;
}

static int find_field(const st_schema *s, const char *name, size_t len, bool nocase)
{
    if (!nocase)
        return st_schema_find(s, name, len);
    for (uint32_t f = 0; f < s->nfields; f++)
        if (strlen(s->fields[f].name) == len && !strncasecmp(s->fields[f].name, name, len))
            return (int)f;
    return -1;
}

/* The name of column i: the header's, the option's, or NULL for the schema's order. */
static const char *column_name(VM *vm, const TextRead *t, size_t i, size_t *len)
{
    if (t->o.header) {
        *len = t->len[i];
        return t->rec + t->start[i];
    }
    if (!t->o.columns)
        return NULL;
    Value v = t->o.columns->items[i];
    if (!IS_STR(v))
        vm_error(vm, "option columns must be an array of field names");
    *len = AS_STR(v)->len;
    return AS_STR(v)->data;
}

/* A field the options name (set, line_field), or raises; noted in t->given
 * and seen (it may be a key). */
static uint32_t option_field(VM *vm, TextRead *t, bool *seen, const char *opt, Value name)
{
    const st_schema *s = vschema(t->schema)->s;
    int f = IS_STR(name) ? st_schema_find(s, AS_STR(name)->data, AS_STR(name)->len) : -1;
    if (f < 0)
        vm_error(vm, "option %s: %s is not a field of the schema", opt,
                 IS_STR(name) ? AS_STR(name)->data : v_type_name(name));
    if (seen[f])
        vm_error(vm, "%s: field '%s' is given twice (a column, set or line_field)", t->path,
                 s->fields[f].name);
    seen[f] = true;
    t->has_tag |= (uint32_t)f >= s->nrow;
    vm_grow(vm, (unsigned char **)&t->given, &t->given_cap, (t->ngiven + 1) * sizeof(uint32_t));
    t->given[t->ngiven++] = (uint32_t)f;
    return (uint32_t)f;
}

/* The record every row starts from: zeros, and option set's values. */
static void set_fields(VM *vm, TextRead *t, bool *seen)
{
    const VSchema *vs = vschema(t->schema);
    const st_schema *s = vs->s;
    vm_grow(vm, &t->set_row, &t->set_row_cap, s->row_size + 1);
    vm_grow(vm, &t->set_tag, &t->set_tag_cap, s->tag_size + 1);
    memset(t->set_row, 0, s->row_size);
    memset(t->set_tag, 0, s->tag_size);
    size_t pos = 0;
    Value k, v;
    t->ngiven = 0;
    while (t->o.set && vm_map_next(t->o.set, &pos, &k, &v)) {
        uint32_t f = option_field(vm, t, seen, "set", k);
        unsigned char *base = f < s->nrow ? t->set_row : t->set_tag;
        vm_field_store(vm, vs, f, v, base + s->fields[f].offset, "option set");
    }
    t->line_field = -1;
    if (t->o.line_field)
        t->line_field = (int)option_field(vm, t, seen, "line_field", v_obj(t->o.line_field));
}

/* Field indices of the file's columns (t->cols), from the header or the
 * option, or the schema's order. */
static void column_fields(VM *vm, TextRead *t)
{
    const VSchema *vs = vschema(t->schema);
    const st_schema *s = vs->s;
    size_t n = t->o.header ? t->nf : t->o.columns ? t->o.columns->len : s->nfields;
    if (n > t->colcap) {
        t->cols = vm_realloc(vm, t->cols, t->colcap * sizeof(int), n * sizeof(int));
        t->colcap = n;
    }
    const char *names[ST_MAX_FIELDS];
    bool seen[ST_MAX_FIELDS] = {0};
    for (uint32_t f = 0; f < s->nfields && f < ST_MAX_FIELDS; f++)
        names[f] = s->fields[f].name;
    t->has_tag = false;
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *name = column_name(vm, t, i, &len);
        char clean[ST_MAX_NAME + 2];
        int f = (int)i;
        if (name && t->inferred)
            len = text_name(name, len, clean), name = clean;
        if (name)
            f = find_field(s, name, len, t->o.nocase);
        if (f < 0 && !t->o.extra) {
            int other = find_field(s, name, len, true);
            const char *hint = other >= 0 ? names[other] : vm_suggest(name, len, names, s->nfields);
            vm_error(vm, "%s: column '%.*s' is not a field of the schema%s%s%s%s", t->path,
                     (int)len, name, hint ? " (did you mean '" : "", hint ? hint : "",
                     hint ? "'?)" : "", other >= 0 ? "; option ignore_case: true matches it"
                                                   : "; option extra: \"ignore\" skips it");
        }
        if (f >= 0 && seen[f])
            vm_error(vm, "%s: column '%.*s' is named twice", t->path, (int)len, name);
        if (f >= 0)
            seen[f] = true;
        t->has_tag |= f >= (int)s->nrow;
        t->cols[i] = f;
    }
    set_fields(vm, t, seen);
    for (uint32_t f = 0; t->raw && f < s->nkeys; f++)
        if (!seen[f])
            vm_error(vm, "%s: no column for the key field '%s'", t->path, s->fields[f].name);
    t->ncols = n;
}

/* Opens the glob's next file and reads its header: false when none is left. */
static bool open_next(VM *vm, TextRead *t)
{
    struct stat sb;
    while (t->next_file < t->g.gl_pathc) {
        t->path = t->g.gl_pathv[t->next_file++];
        read_opts(vm, t->opts, t->path, &t->o);
        if (!(t->f = fopen(t->path, "rb")))
            vm_error(vm, "%s: %s", t->path, strerror(errno));
        if (fstat(fileno(t->f), &sb) == 0 && S_ISDIR(sb.st_mode))
            vm_error(vm, "%s: %s", t->path, strerror(EISDIR));
        t->at_start = true;
        t->line = 0;
        t->buf_pos = t->buf_len = 0;
        for (int64_t i = 0; i < t->o.skip && read_record(vm, t, t->o.delim, t->o.quote, &t->line); i++)
            ;
        if (!t->o.header || read_record(vm, t, t->o.delim, t->o.quote, &t->line)) {
            column_fields(vm, t);
            return true;
        }
        int err = ferror(t->f);
        fclose(t->f);
        t->f = NULL;
        if (err)
            vm_error(vm, "%s: read error", t->path);
    }
    return false;
}

/* The end of the files: the count of bad rows, and an error when no row
 * parsed at all (a wrong schema or delimiter reads as a failure, not as
 * nothing to do). */
static void text_end(VM *vm, TextRead *t)
{
    int64_t bad = t->bad, all = t->bad + t->good, max = t->o.max_errors;
    text_close(vm, t);
    if (t->o.rejects)
        return;     /* the caller has them and judges */
    if (bad && bad == all)
        vm_error(vm, "none of the %lld rows parsed", (long long)all);
    if (bad)
        fprintf(stderr, "read_text: %lld of %lld rows did not parse%s\n", (long long)bad,
                (long long)all, bad > max ? " (the first ones are shown)" : "");
}

/* A row that does not parse, into option rejects: {file, line, text, reason}. */
static void reject(VM *vm, TextRead *t, long line, const char *why)
{
    VMap *m = vm_map_new(vm, 4);
    vm_push_root(vm, v_obj(m));
    const char *keys[] = {"file", "line", "text", "reason"};
    for (int i = 0; i < 4; i++) {
        Value v = i == 1 ? v_int(line)
                         : v_obj(i == 0 ? vm_str_cstr(vm, t->path)
                                        : i == 2 ? vm_str_new(vm, t->text, t->text_len)
                                                 : vm_str_cstr(vm, why));
        vm_push_root(vm, v);
        vm_map_set(vm, m, v_obj(vm_str_cstr(vm, keys[i])), v);
        vm_pop_root(vm, 1);
    }
    vm_array_push(vm, t->o.rejects, v_obj(m));
    vm_pop_root(vm, 1);
}

/* The next record that parses into t->row and t->tag (bad ones counted and
 * reported); false at the end of the last file. */
static bool next_record(VM *vm, TextRead *t)
{
    const VSchema *vs = vschema(t->schema);
    const st_schema *s = vs->s;
    vm_grow(vm, &t->row, &t->row_cap, s->row_size + 1);
    vm_grow(vm, &t->tag, &t->tag_cap, s->tag_size + 1);
    while (!t->done) {
        if (!t->f && !open_next(vm, t)) {
            text_end(vm, t);
            return false;
        }
        long first = t->line + 1;
        if (!read_record(vm, t, t->o.delim, t->o.quote, &t->line)) {
            int err = ferror(t->f);
            fclose(t->f);
            t->f = NULL;
            if (err)
                vm_error(vm, "%s: read error", t->path);
            continue;
        }
        if (t->nf == 1 && t->len[0] == 0 && !t->o.pattern)
            continue;   /* a blank line (with a pattern, a line like any other) */
        st_err fe;
        char why[sizeof fe.msg] = "";
        memcpy(t->row, t->set_row, s->row_size);
        memcpy(t->tag, t->set_tag, s->tag_size);
        if (t->o.pattern && !vm_regex_match(vm, t->o.pattern, t->text, t->text_len))
            snprintf(why, sizeof why, "the record does not match the pattern");
        else if (t->unclosed)
            snprintf(why, sizeof why, "a quoted field is not closed by the end of the file");
        else if (t->nf != t->ncols)
            snprintf(why, sizeof why, "%zu fields, expected %zu", t->nf, t->ncols);
        for (size_t i = 0; !why[0] && i < t->ncols; i++) {
            int f = t->cols[i];
            if (f < 0)
                continue;
            const st_field *fd = &s->fields[f];
            unsigned char *out = ((uint32_t)f < s->nrow ? t->row : t->tag) + fd->offset;
            if (t->o.compact_time && fd->type == ST_TIME) {
                int64_t tv;
                if (st_fieldtext_compact_time(t->rec + t->start[i], t->len[i], &tv) == 0) {
                    memcpy(out, &tv, 8);
                    continue;
                }
                snprintf(why, sizeof why, "field '%s': '%.*s' is not a time YYYYMMDDhhmmss",
                         fd->name, (int)(t->len[i] > 40 ? 40 : t->len[i]), t->rec + t->start[i]);
                break;
            }
            if (st_fieldtext_parse(fd, t->rec + t->start[i], t->len[i], out, vm_suggest, &fe) == 0)
                continue;
            if (fe.code == ST_ENOMEM)
                vm_throw(vm, v_obj(vm->oom));
            snprintf(why, sizeof why, "%s", fe.msg);
        }
        if (!why[0] && t->line_field >= 0) {
            uint32_t f = (uint32_t)t->line_field;
            vm_field_store(vm, vs, f, v_int(first),
                           (f < s->nrow ? t->row : t->tag) + s->fields[f].offset, "line_field");
        }
        if (!why[0]) {
            t->good++;
            return true;
        }
        ++t->bad;
        if (t->o.rejects)
            reject(vm, t, first, why);
        else if (t->bad <= t->o.max_errors)
            fprintf(stderr, "read_text: %s:%ld: %s\n", t->path, first, why);
    }
    return false;
}

/* The cursor's next row: a flat map of the fields its columns name. */
static bool text_next(VM *vm, void *data, int64_t *cursor, Value *a, Value *b)
{
    TextRead *t = data;
    if (!next_record(vm, t))
        return false;
    const VSchema *vs = vschema(t->schema);
    const st_schema *s = vs->s;
    VMap *row = vm_map_new(vm, t->ncols + t->ngiven);
    *a = *b = v_obj(row);
    vm_push_root(vm, *a);
    for (size_t i = 0; i < t->ncols + t->ngiven; i++) {
        int f = i < t->ncols ? t->cols[i] : (int)t->given[i - t->ncols];
        if (f >= 0)
            vm_map_set(vm, row, v_obj(vs->names[f]),
                       vm_field_value(vm, vs, (uint32_t)f,
                                      ((uint32_t)f < s->nrow ? t->row : t->tag) + s->fields[f].offset));
    }
    vm_pop_root(vm, 1);
    ++*cursor;
    return true;
}

bool vm_text_raw(VM *vm, VHandle *cursor, const VSchema *target)
{
    if (cursor->type != &vm_text_cursor_type)
        return false;
    TextRead *t = handle_data(cursor);
    const VSchema *vs = vschema(t->schema);
    if (vs->text_len != target->text_len || memcmp(vs->text, target->text, vs->text_len))
        return false;
    (void)vm;
    t->raw = target;    /* before its first file opens: every file then needs its keys */
    return true;
}

bool vm_text_next_raw(VM *vm, VHandle *cursor, const unsigned char **row, const unsigned char **tag)
{
    TextRead *t = handle_data(cursor);
    if (!next_record(vm, t))
        return false;
    *row = t->row;
    *tag = t->has_tag ? t->tag : NULL;
    return true;
}

/* A cursor over the files of pat (a raise names a pattern no file matches). */
static VHandle *text_open(VM *vm, VStr *pat, VHandle *schema, VMap *opts, bool inferred)
{
    VHandle *h = vm_handle_new(vm, &vm_text_cursor_type, sizeof(TextRead));
    vm_push_root(vm, v_obj(h));
    TextRead *t = handle_data(h);
    t->schema = schema;
    t->opts = opts;
    t->inferred = inferred;
    int rc = glob(pat->data, 0, NULL, &t->g);
    t->globbed = rc == 0;
    if (rc == GLOB_NOMATCH)
        vm_error(vm, "no file matches %s", pat->data);
    if (rc)
        vm_error(vm, "%s: cannot list the files", pat->data);
    vm_pop_root(vm, 1);
    return h;
}

/* ---- a schema from the text -------------------------------------------- */

/* What a column's values in the sample could be. */
typedef struct Guess {
    bool not_int, not_float, not_bool, not_time, any;
    size_t longest;
} Guess;

static void guess(Guess *g, const char *v, size_t n)
{
    static const st_field i64 = {(char *)"i64", ST_I64, ST_TAG, 8, 0, 0, NULL, false, false, false},
                          f64 = {(char *)"f64", ST_F64, ST_TAG, 8, 0, 0, NULL, false, false, false};
    unsigned char out[8];
    st_err err;
    int64_t t;
    while (n && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (!n)
        return;
    g->any = true;
    g->longest = n > g->longest ? n : g->longest;
    g->not_int |= st_fieldtext_parse(&i64, v, n, out, NULL, &err) != 0;
    g->not_float |= st_fieldtext_parse(&f64, v, n, out, NULL, &err) != 0;
    g->not_bool |= !((n == 4 && !memcmp(v, "true", 4)) || (n == 5 && !memcmp(v, "false", 5)));
    g->not_time |= !memchr(v, '-', n) || st_fieldtext_time(v, n, &t) != 0;
}

/* A column's type: bool (true/false), i64, f64, time (dates and times, not
 * bare seconds), else char[N], N twice the longest value seen (at least 16). */
static void guessed_type(const Guess *g, char *out, size_t n)
{
    size_t w = 2 * g->longest < 16 ? 16 : 2 * g->longest > ST_MAX_CHAR ? ST_MAX_CHAR : 2 * g->longest;
    if (!g->any)
        snprintf(out, n, "char[16]");
    else if (!g->not_bool)
        snprintf(out, n, "bool");
    else if (!g->not_int)
        snprintf(out, n, "i64");
    else if (!g->not_float)
        snprintf(out, n, "f64");
    else if (!g->not_time)
        snprintf(out, n, "time");
    else
        snprintf(out, n, "char[%zu]", w);
}

/* The column a key option names (its name as text_name makes it), or raises. */
static size_t key_column(VM *vm, Value k, const char *names, size_t n)
{
    char clean[ST_MAX_NAME + 2];
    if (!IS_STR(k))
        vm_error(vm, "option key must be an array of column names");
    text_name(AS_STR(k)->data, AS_STR(k)->len, clean);
    for (size_t i = 0; i < n; i++, names += strlen(names) + 1)
        if (!strcmp(clean, names))
            return i;
    vm_error(vm, "option key: '%s' is not a column", AS_STR(k)->data);
}

/* A field of the guessed schema: its role, name and type, the one option
 * types gives or the guessed one. */
static void guessed_field(VM *vm, VStrBuf *text, const char *role, const char *name,
                          const Guess *g, Value types)
{
    char type[32];
    Value over = IS_MAP(types) ? get(vm, AS_MAP(types), name) : v_nil();
    guessed_type(g, type, sizeof type);
    if (!IS_NIL(over) && !IS_STR(over))
        vm_error(vm, "option types: the type of '%s' must be a string", name);
    vm_sb_printf(vm, text, "%s %s: %s\n", role, name, IS_NIL(over) ? type : AS_STR(over)->data);
}

/* The schema of the first file matching pat, from its header (or option
 * columns, or c1, c2, ...) and its first `sample` rows: key fields those
 * option key names (default: the first column), the rest tag fields, each
 * of the type guessed_type gives unless option types names one. */
static VHandle *infer_schema(VM *vm, VStr *pat, VMap *opts)
{
    static const char *const known[] = {"delim", "quote", "header", "columns", "max_errors",
                                        "stream", "ignore_case", "extra", "compact_time",
                                        "pattern", "rejects", "set", "line_field", "skip",
                                        "types", "key", "sample", NULL};
    lib_check_opts(vm, opts, known);
    Value kv = get(vm, opts, "key"), tv = get(vm, opts, "types"), sv = get(vm, opts, "sample");
    if (!IS_NIL(kv) && !IS_ARRAY(kv))
        vm_error(vm, "option key must be an array of column names");
    if (!IS_NIL(tv) && !IS_MAP(tv))
        vm_error(vm, "option types must be a map of column names to types");
    int64_t sample = IS_INT(sv) && sv.as.i > 0 ? sv.as.i : 1000;
    VHandle *h = text_open(vm, pat, NULL, opts, false);
    vm_push_root(vm, v_obj(h));
    TextRead *t = handle_data(h);
    t->path = t->g.gl_pathv[0];
    read_opts(vm, opts, t->path, &t->o);
    if (!(t->f = fopen(t->path, "rb")))
        vm_error(vm, "%s: %s", t->path, strerror(errno));
    t->at_start = true;
    for (int64_t i = 0; i < t->o.skip && read_record(vm, t, t->o.delim, t->o.quote, &t->line); i++)
        ;
    if (!read_record(vm, t, t->o.delim, t->o.quote, &t->line))
        vm_error(vm, "%s: no header and no rows to guess a schema from", t->path);
    size_t n = t->o.columns ? t->o.columns->len : t->nf;
    if (n > ST_MAX_FIELDS)
        vm_error(vm, "%s: %zu columns, more than a schema's %d fields", t->path, n, ST_MAX_FIELDS);
    VStrBuf names, text;
    vm_sb_init(vm, &names, 256);    /* the names, NUL-separated */
    for (size_t i = 0; i < n; i++) {
        char clean[ST_MAX_NAME + 2], def[16];
        size_t len;
        const char *name = column_name(vm, t, i, &len);
        if (!name) {
            snprintf(def, sizeof def, "c%zu", i + 1);
            name = def;
            len = strlen(def);
        }
        len = text_name(name, len, clean);
        vm_sb_add(vm, &names, clean, len + 1);
    }
    Value nv = v_obj(vm_sb_done(vm, &names));
    vm_push_root(vm, nv);
    VStr *gs = vm_str_alloc(vm, (n + 1) * sizeof(Guess) + n);   /* the collector's, should a raise come */
    vm_push_root(vm, v_obj(gs));
    Guess *g = (Guess *)(void *)str_wbuf(gs);
    memset(g, 0, (n + 1) * sizeof *g);
    bool first_is_row = !t->o.header;
    for (int64_t r = 0; r < sample; r++) {
        if (!first_is_row && !read_record(vm, t, t->o.delim, t->o.quote, &t->line))
            break;
        first_is_row = false;
        for (size_t i = 0; i < n && i < t->nf && !t->unclosed; i++)
            guess(&g[i], t->rec + t->start[i], t->len[i]);
    }
    vm_sb_init(vm, &text, 256);
    const char *name = AS_STR(nv)->data;
    size_t nkeys = IS_NIL(kv) ? 1 : AS_ARRAY(kv)->len;
    bool *key = (bool *)(void *)(g + n);     /* (g has room for n bools past its n guesses) */
    memset(key, 0, n);
    for (size_t k = 0; k < nkeys; k++) {    /* the key in the option's order */
        size_t i = IS_NIL(kv) ? 0 : key_column(vm, AS_ARRAY(kv)->items[k], name, n);
        const char *nm = name;
        for (size_t j = 0; j < i; j++)
            nm += strlen(nm) + 1;
        if (!key[i])
            guessed_field(vm, &text, "key", nm, &g[i], tv);
        key[i] = true;
    }
    const char *nm = name;
    for (size_t i = 0; i < n; i++, nm += strlen(nm) + 1)
        if (!key[i])
            guessed_field(vm, &text, "tag", nm, &g[i], tv);
    VStr *st = vm_sb_done(vm, &text);
    vm_push_root(vm, v_obj(st));
    st_err err;
    VHandle *sh = vm_schema_parse(vm, st->data, st->len, 1, 1, &err);
    if (!sh)
        vm_error(vm, "%s: the schema guessed from it: %s:\n%s", t->path, err.msg, st->data);
    text_close(vm, t);
    vm_pop_root(vm, 4);
    return sh;
}

/* text_schema(glob, opts): the schema read_text would guess. */
Value nat_text_schema(VM *vm, int argc, Value *argv)
{
    VStr *pat = vm_arg_str(vm, argv, 0);
    VMap *m = argc > 1 && !IS_NIL(argv[1]) ? vm_arg_map(vm, argv, 1) : NULL;
    return v_obj(infer_schema(vm, pat, m));
}

/* ---- read_text ---------------------------------------------------------- */

/* A stream: the glob, schema and options, read anew by each loop, load or
 * query that takes its rows (through a cursor). */
typedef struct TextSource {
    VStr *pat;
    VHandle *schema;
    VMap *opts;
    bool inferred;
} TextSource;

static void source_mark(VM *vm, void *data)
{
    TextSource *ts = data;
    vm_mark_obj(vm, &ts->pat->hdr);
    vm_mark_obj(vm, &ts->schema->hdr);
    if (ts->opts)
        vm_mark_obj(vm, &ts->opts->hdr);
}

static void source_show(VM *vm, void *data, VStrBuf *sb)
{
    TextSource *ts = data;
    vm_sb_printf(vm, sb, "<text rows of %s>", ts->pat->data);
}

static Value source_iter(VM *vm, Value self)
{
    TextSource *ts = handle_data(AS_HANDLE(self));
    return v_obj(text_open(vm, ts->pat, ts->schema, ts->opts, ts->inferred));
}

VArray *vm_text_time_columns(VM *vm, Value v)
{
    if (IS_ARRAY(v))
        return AS_ARRAY(v)->times;
    if (IS_HANDLE(v) && AS_HANDLE(v)->type == &vm_text_rows_type)
        v = v_obj(((TextSource *)handle_data(AS_HANDLE(v)))->schema);
    VHandle *sh = vm_schema_of(v);
    if (!sh)
        return NULL;
    const VSchema *vs = vschema(sh);
    VArray *names = vm_array_new(vm, 2);
    vm_push_root(vm, v_obj(names));
    for (uint32_t f = 0; f < vs->s->nfields; f++)
        if (vs->s->fields[f].type == ST_TIME)
            vm_array_push(vm, names, v_obj(vs->names[f]));
    vm_pop_root(vm, 1);
    return names;
}

const VHandleType vm_text_rows_type = {.name = "text rows", .mark = source_mark,
                                       .show = source_show, .iter = source_iter};

/* read_text(pattern, [schema], opts): the rows of the files matching the
 * glob pattern, as maps of the schema's fields (one tag each); without a
 * schema, one guessed from the first file; with {stream: true} a value
 * that reads them as they are taken. */
Value nat_read_text(VM *vm, int argc, Value *argv)
{
    VStr *pat = vm_arg_str(vm, argv, 0);
    bool guessed = argc < 2 || IS_NIL(argv[1]) || IS_MAP(argv[1]);
    int mi = guessed && argc > 1 && IS_MAP(argv[1]) ? 1 : 2;
    VMap *m = argc > mi && !IS_NIL(argv[mi]) ? vm_arg_map(vm, argv, mi) : NULL;
    VHandle *sh = guessed ? infer_schema(vm, pat, m) : vm_schema_of(argv[1]);
    if (!sh)
        vm_arg_error(vm, 1, "a schema (or options)", argv[1]);
    vm_push_root(vm, v_obj(sh));
    static const char *const known[] = {"delim", "quote", "header", "columns", "max_errors",
                                        "stream", "ignore_case", "extra", "compact_time",
                                        "pattern", "rejects", "set", "line_field", "skip", NULL};
    if (!guessed)   /* a guessed schema's options were checked by infer_schema */
        lib_check_opts(vm, m, known);
    Value r;
    if (v_truthy(get(vm, m, "stream"))) {
        VHandle *h = vm_handle_new(vm, &vm_text_rows_type, sizeof(TextSource));
        *(TextSource *)handle_data(h) = (TextSource){pat, sh, m, guessed};
        r = v_obj(h);
    } else {
        VHandle *h = text_open(vm, pat, sh, m, guessed);
        vm_push_root(vm, v_obj(h));
        VArray *out = vm_array_new(vm, 64);
        vm_push_root(vm, v_obj(out));
        int64_t cursor = 0;
        Value a, b;
        while (text_next(vm, handle_data(h), &cursor, &a, &b))
            vm_array_push(vm, out, a);
        out->times = vm_text_time_columns(vm, v_obj(sh));
        vm_pop_root(vm, 2);
        r = v_obj(out);
    }
    vm_pop_root(vm, 1);
    return r;
}
