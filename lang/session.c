/* session: the prompt's state between statements and what one statement
 * does: compile it into the session's module, run it, show its value. */
#include "config.h"
#include "lang/session.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "lang/load.h"
#include "lang/meta.h"
#include "lang/multiline.h"
#include "lang/term.h"
#include "lang/text.h"
#include "store/mem.h"
#include "vm/lib_store.h"
#include "vm/natives.h"
#include "vm/progress.h"
#include "vm/query/query.h"

static bool store_fields(VM *vm, Value v, session_name_fn add, void *acc)
{
    (void)vm;
    VHandle *h = vm_schema_of(v);
    if (!h)
        return false;
    const VSchema *vs = vschema(h);
    for (uint32_t f = 0; f < vs->s->nfields; f++)
        add(acc, vs->names[f]->data, vs->names[f]->len);
    if (vs->s->tag_size)
        add(acc, vs->tags_name->data, vs->tags_name->len);
    return true;
}

static bool store_schema(VM *vm, Value v, FILE *out)
{
    (void)vm;
    VHandle *h = vm_schema_of(v);
    size_t len;
    char *text = h ? st_schema_format(vschema(h)->s, &len) : NULL;
    if (!text)
        return false;
    fwrite(text, 1, len, out);
    mem_free(text, len + 1);
    return true;
}

static Value store_open(VM *vm, const char *dir)
{
    Value v;
    if (!vm_store_open(vm, vm_str_cstr(vm, dir), &v))
        vm_error(vm, "%s: not a datastore or tagset file", dir);
    return v;
}

/* The prompt's view of stores, through the store bindings; tests may swap it. */
SessionStoreOps session_store_ops = {store_fields, store_schema, store_open};

/* What the session keeps alive, in s->keep. */
enum { KEEP_MODULE, KEEP_LAST, KEEP_PATH, KEEP_N };

#define FIELD_ROWS 100  /* rows whose keys name an array's fields */

/* A protected step of the session's with the text (a path) it needs. */
typedef struct Job {
    Session *s;
    const char *text;
} Job;

static void init_job(VM *vm, void *ud)
{
    Job *j = ud;
    Session *s = j->s;
    s->keep = vm_array_new(vm, KEEP_N);
    vm_push_root(vm, v_obj(s->keep));
    s->mod = vm_module_new(vm, "prompt", j->text);
    vm->place_module = s->mod;  /* rows shown after a statement name its places */
    for (int i = 0; i < KEEP_N; i++)
        vm_array_push(vm, s->keep, v_nil());
    s->keep->items[KEEP_MODULE] = v_obj(s->mod);
}

int session_init(Session *s, VM *vm, const char *path, bool terminal)
{
    memset(s, 0, sizeof *s);
    s->vm = vm;
    s->terminal = terminal;
    s->mode = terminal ? TABLE_ALIGNED : TABLE_TSV;
    s->color = terminal && term_color(1);
    s->color_err = term_color(2);
    s->file = path;
    s->confirm = -1;
    Job j = {s, path};
    return vm_protect(vm, init_job, &j) ? -1 : 0;
}

VProto *session_last(Session *s)
{
    Value f = s->keep->items[KEEP_LAST];
    return IS_FUNC(f) ? AS_FUNC(f)->p : NULL;
}

/* ---- errors and timing ------------------------------------------------ */

/* Error text goes to stderr, red where colour is on. */
static void err_begin(Session *s)
{
    fflush(stdout);
    vm_progress_clear();
    if (s->color_err)
        fputs("\033[31m", stderr);
}

static void err_end(Session *s)
{
    if (s->color_err)
        fputs("\033[0m", stderr);
    fflush(stderr);
}

typedef struct Clock {
    struct timespec wall, cpu;
} Clock;

static void clock_now(Clock *c)
{
    clock_gettime(CLOCK_MONOTONIC, &c->wall);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c->cpu);
}

static double seconds(struct timespec a, struct timespec b)
{
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

/* The time from start to end (the end of the statement's own work: the
 * pager's time is the reader's). */
static void report_time(Session *s, const Clock *start, const Clock *end)
{
    if (!s->timer)
        return;
    fprintf(stderr, "time: wall %.3f s, cpu %.3f s\n", seconds(start->wall, end->wall),
            seconds(start->cpu, end->cpu));
}

/* ---- running a statement ---------------------------------------------- */

bool session_output_close(Session *s)
{
    if (!s->out)
        return true;
    bool ok = !ferror(s->out);
    ok &= fclose(s->out) == 0;
    s->out = NULL;
    s->out_once = false;
    if (!ok)
        fprintf(stderr, "comb: writing the output file failed\n");
    return ok;
}

/* A result into the .output file, rows as they come. */
static RunStatus show_to_file(Session *s, Value v)
{
    if (table_stream(s->vm, v, s->out_mode, s->out) && !ferror(s->out))
        return RUN_OK;
    err_begin(s);
    if (ferror(s->out))
        fprintf(stderr, "comb: writing the output file failed\n");
    else
        vm_print_error(s->vm, stderr);
    err_end(s);
    return RUN_ERROR;
}

/* The error the VM holds, reported: RUN_INTERRUPTED for a Ctrl-C. */
static RunStatus run_error(Session *s)
{
    bool interrupted = vm_error_status(s->vm) == 130;
    err_begin(s);
    if (interrupted)
        fputs("interrupted\n", stderr);
    else
        vm_print_error(s->vm, stderr);
    err_end(s);
    return interrupted ? RUN_INTERRUPTED : RUN_ERROR;
}

typedef struct CountJob {
    Value q;
    int64_t n;
} CountJob;

static void count_job(VM *vm, void *ud)
{
    CountJob *j = ud;
    j->n = vm_query_count(vm, j->q);
}

/* Count before select: a query at the prompt giving more rows than
 * s->confirm (-1: than the screen is high) is counted first, and its rows
 * retrieved only if the person says so (as analysts counted, to avoid a
 * whole retrieval by mistake). RUN_OK with *show set, or the count's error.
 * The time spent waiting for the answer moves *start on: the timer leaves
 * it out. */
static RunStatus confirm(Session *s, Value v, Clock *start, bool *show)
{
    int rows, cols;
    long limit = s->confirm;
    *show = true;
    if (!s->ask || !s->terminal || !limit || !IS_HANDLE(v) || AS_HANDLE(v)->type != &vm_query_type ||
        (limit < 0 && !term_size(1, &rows, &cols)))
        return RUN_OK;
    CountJob j = {v, 0};
    if (vm_protect(s->vm, count_job, &j))
        return run_error(s);
    vm_progress_clear();
    if (j.n <= (limit < 0 ? rows : limit))
        return RUN_OK;
    char question[64];
    snprintf(question, sizeof question, "%lld rows: show them? [y/N] ", (long long)j.n);
    Clock asked, answered;
    clock_now(&asked);
    *show = s->ask(question);
    clock_now(&answered);
    /* seconds() takes tv_nsec out of range as it is */
    start->wall.tv_sec += answered.wall.tv_sec - asked.wall.tv_sec;
    start->wall.tv_nsec += answered.wall.tv_nsec - asked.wall.tv_nsec;
    return RUN_OK;
}

/* Shows v; *paged: the time from which the pager had it (the timer
 * leaves the time spent reading it out). */
static RunStatus show_result(Session *s, Value v, Clock *start, Clock *paged)
{
    vm_progress_clear();
    if (IS_NIL(v))
        return RUN_OK;
    if (s->out)
        return show_to_file(s, v);
    bool show;
    RunStatus st = confirm(s, v, start, &show);
    if (st != RUN_OK || !show)
        return st;
    VStr *text = table_text(s->vm, v, s->mode, s->color);
    if (!text)
        return run_error(s);
    fflush(stdout);
    clock_now(paged);
    term_page(text->data, text->len, s->terminal, s->mode == TABLE_ALIGNED);
    return RUN_OK;
}

typedef struct FnJob {
    Session *s;
    VProto *p;
} FnJob;

/* The compiled statement becomes the kept function (no collection can
 * happen between the compiler's return and this). */
static void make_function(VM *vm, void *ud)
{
    FnJob *j = ud;
    j->s->keep->items[KEEP_LAST] = v_obj(vm_func_new(vm, j->p));
}

static RunStatus execute(Session *s, VProto *p, Clock *start, Clock *paged)
{
    VM *vm = s->vm;
    Value result = v_nil();
    FnJob j = {s, p};
    vm_poll_flag &= ~POLL_SIGINT;
    int rc = vm_protect(vm, make_function, &j);
    if (!rc)
        rc = vm_pcall(vm, s->keep->items[KEEP_LAST], 0, NULL, &result);
    fflush(stdout);
    return rc ? run_error(s) : show_result(s, result, start, paged);
}

static RunStatus statement(Session *s, const char *src, size_t len, int first_line, bool final)
{
    VM *vm = s->vm;
    if (!final && ml_open(vm, src, len))
        return RUN_MORE;
    Clock start;
    clock_now(&start);
    bool at_eof = false;
    /* Compiled quietly first: an unfinished statement is not an error yet. */
    VProto *p = lc_compile_statement(vm, s->mod, src, len, s->file, first_line, NULL, &at_eof);
    if (!p && at_eof && !final)
        return RUN_MORE_EOF;
    if (s->ready)
        s->ready(src, len);
    if (!p) {
        err_begin(s);
        lc_compile_statement(vm, s->mod, src, len, s->file, first_line, stderr, NULL);
        err_end(s);
        return RUN_ERROR;
    }
    Clock end = {{0, 0}, {0, 0}};
    RunStatus st = execute(s, p, &start, &end);
    if (s->out_once && !session_output_close(s) && st == RUN_OK)
        st = RUN_ERROR;
    if (!end.wall.tv_sec && !end.wall.tv_nsec)
        clock_now(&end);    /* nothing was shown */
    report_time(s, &start, &end);
    return st;
}

/* Whether src is the word w alone (spaces and a line end around it). */
static bool is_word(const char *src, size_t len, const char *w)
{
    while (len && strchr(" \t\r\n", src[len - 1]))
        len--;
    while (len && (*src == ' ' || *src == '\t'))
        src++, len--;
    return len == strlen(w) && !memcmp(src, w, len);
}

RunStatus session_run(Session *s, const char *src, size_t len, int first_line, bool final)
{
    size_t i = 0;
    Value v;
    while (i < len && (src[i] == ' ' || src[i] == '\t'))
        i++;
    if (i < len && src[i] == '.') {
        if (s->ready)
            s->ready(src, len);
        return meta_run(s, src + i, len - i);
    }
    if (is_word(src, len, "\\x")) {    /* psql's expanded display, on and off */
        if (s->ready)
            s->ready(src, len);
        bool on = s->mode != TABLE_LINE;
        s->unexpanded = on ? s->mode : s->unexpanded;
        s->mode = on ? TABLE_LINE : s->unexpanded;
        printf("Expanded display is %s.\n", on ? "on" : "off");
        return RUN_OK;
    }
    /* psql's and sqlite3's words, unless the session has made them names */
    bool leave = is_word(src, len, "exit") || is_word(src, len, "quit");
    if ((leave && !session_global(s, src + i, 4, &v)) || (is_word(src, len, "help") && !session_global(s, "help", 4, &v))) {
        if (s->ready)
            s->ready(src, len);
        return meta_run(s, leave ? ".quit" : ".help", 5);
    }
    return statement(s, src, len, first_line, final);
}

/* ---- statements from a stream ----------------------------------------- */

/* Appends the next line of in (with its newline) to t: 1, 0 at the end of
 * the input, -1 out of memory. */
static int read_line(FILE *in, Text *t)
{
    char chunk[4096];
    size_t start = t->len;
    while (fgets(chunk, sizeof chunk, in)) {
        size_t n = strlen(chunk);
        if (text_add(t, chunk, n))
            return -1;
        if (chunk[n - 1] == '\n')
            return 1;
    }
    if (t->len == start)
        return 0;
    return text_add(t, "\n", 1) ? -1 : 1;
}

/* Whether a line holds no code: blank, or only a comment. */
static bool no_code(const Text *l)
{
    int c = text_lead(l->p, l->len);
    return !c || c == '\n' || c == '\r' || c == '#';
}

/* Reads on after the statement in t: lines without code are added to it,
 * and a line starting with '|' too (a pipeline goes on there, as in a
 * file), with what follows it. The first other line stays in ahead. 1, 0
 * at the end of the input, -1 out of memory. */
static int read_ahead(FILE *in, Text *t, Text *ahead, int *line)
{
    int got;
    for (;;) {
        ahead->len = 0;
        if ((got = read_line(in, ahead)) <= 0)
            return got;
        if (!no_code(ahead) && !text_pipes_on(ahead->p, ahead->len))
            return 1;
        if (text_add(t, ahead->p, ahead->len))
            return -1;
        ++*line;
    }
}

static RunStatus run_lines(Session *s, FILE *in)
{
    Text t = {0}, ahead = {0};
    RunStatus st = RUN_OK;
    int line = 0, first = 0, got;
    for (;;) {
        if (ahead.len) {
            got = text_add(&t, ahead.p, ahead.len) ? -1 : 1;
            ahead.len = 0;
        } else {
            got = read_line(in, &t);
        }
        if (got <= 0)
            break;
        line++;
        if (text_blank(t.p, t.len)) {
            t.len = 0;
            continue;
        }
        if (first == 0)
            first = line;
        if (text_lead(t.p, t.len) != '.' && (got = read_ahead(in, &t, &ahead, &line)) < 0)
            break;
        st = session_run(s, t.p, t.len, first, got == 0);
        if (st == RUN_MORE || st == RUN_MORE_EOF)
            continue;
        t.len = 0;
        first = 0;
        if (st != RUN_OK || s->quit || got == 0)
            break;
    }
    if (got == 0 && t.len && !s->quit)
        st = session_run(s, t.p, t.len, first, true);
    if (got < 0) {
        fprintf(stderr, "%s: out of memory reading the input\n", s->file);
        st = RUN_ERROR;
    }
    text_free(&t);
    text_free(&ahead);
    return st == RUN_MORE || st == RUN_MORE_EOF ? RUN_OK : st;
}

static void set_path(VM *vm, void *ud)
{
    Job *j = ud;
    j->s->mod->path = vm_str_cstr(vm, j->text);
}

RunStatus session_run_stream(Session *s, FILE *in, const char *name)
{
    /* Run-time errors name the module's path: the stream's, while it runs. */
    const char *file = s->file;
    VStr *path = s->mod->path;
    s->keep->items[KEEP_PATH] = v_obj(path);
    Job j = {s, name};
    if (vm_protect(s->vm, set_path, &j)) {
        fprintf(stderr, "%s: out of memory\n", name);
        return RUN_ERROR;
    }
    void (*ready)(const char *, size_t) = s->ready;
    s->file = name;
    s->ready = NULL;    /* the prompt's history holds what was typed */
    RunStatus st = run_lines(s, in);
    s->ready = ready;
    s->file = file;
    s->mod->path = path;
    s->keep->items[KEEP_PATH] = v_nil();
    return st;
}

RunStatus session_run_file(Session *s, const char *path, bool missing_ok)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (missing_ok && errno == ENOENT)
            return RUN_OK;
        err_begin(s);
        fprintf(stderr, "comb: cannot read %s: %s\n", path, strerror(errno));
        err_end(s);
        return RUN_ERROR;
    }
    RunStatus st = session_run_stream(s, f, path);
    fclose(f);
    return st;
}

/* ---- names and stores ------------------------------------------------- */

bool session_global(Session *s, const char *name, size_t len, Value *out)
{
    size_t pos = 0;
    Value k, slot;
    while (vm_map_next(s->mod->symbols, &pos, &k, &slot)) {
        VStr *ks = AS_STR(k);
        if (ks->len == len && !memcmp(ks->data, name, len)) {
            *out = s->mod->vars[slot.as.i];
            return out->type != VT_UNDEF;
        }
    }
    return false;
}

size_t session_tables(Session *s, FILE *out)
{
    size_t pos = 0, n = 0;
    Value k, slot;
    while (vm_map_next(s->mod->symbols, &pos, &k, &slot)) {
        Value v = s->mod->vars[slot.as.i];
        if (v.type == VT_UNDEF || !vm_source_of(v))
            continue;
        VStr *text = table_text(s->vm, v, TABLE_TSV, false);
        fprintf(out, "%s\t%s", AS_STR(k)->data, text ? text->data : "?\n");
        n++;
    }
    return n;
}

bool session_fields(Session *s, Value v, session_name_fn add, void *acc)
{
    /* a query: its source's fields, and the columns its verbs make */
    if (vm_query_made_columns(v, add, acc)) {
        session_fields(s, vm_query_source(v), add, acc);
        return true;
    }
    if (session_store_ops.fields && session_store_ops.fields(s->vm, v, add, acc))
        return true;
    if (!table_is_rows(v))
        return false;
    VArray *rows = AS_ARRAY(v);
    for (size_t r = 0; r < rows->len && r < FIELD_ROWS; r++) {
        size_t pos = 0;
        Value k, x;
        while (vm_map_next(AS_MAP(rows->items[r]), &pos, &k, &x))
            if (IS_STR(k))
                add(acc, AS_STR(k)->data, AS_STR(k)->len);
    }
    return true;
}

static void bind_job(VM *vm, void *ud)
{
    Job *j = ud;
    Value store = session_store_ops.open(vm, j->text);
    size_t slot = vm_module_slot(vm, j->s->mod, vm_str_cstr(vm, "ds"), true);
    j->s->mod->vars[slot] = store;
}

int session_bind_store(Session *s, const char *dir)
{
    if (!session_store_ops.open) {
        fprintf(stderr, "comb: cannot open %s: this comb has no stores yet\n", dir);
        return -1;
    }
    Job j = {s, dir};
    if (vm_protect(s->vm, bind_job, &j)) {
        vm_print_error(s->vm, stderr);
        return -1;
    }
    return 0;
}
