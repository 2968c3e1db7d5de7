/* lib_jobs: the job dispatcher from comb: build jobs in a script and run them
 * here (embedded, the default: no daemon), or hand them to the dispatcher
 * serving a run directory (`comb jobs serve`). See docs/LANGUAGE.md (Jobs)
 * and docs/JOBS.md.
 *
 * A handle of type "jobs" is an open run directory (embedded: this process
 * holds its lock until jobs_close or the collector frees the handle) or a
 * connection to a dispatcher. Every native works on both; a connected handle
 * sends its changes as requests of the control protocol. Reading goes
 * through one text, job_info_text, made here or by the dispatcher (the info
 * request), which one decoder turns into comb values.
 *
 * The dispatcher's C functions return errors rather than raise, and the C
 * memory a native needs while it may raise is owned by the handle (its
 * buffers, the one decoded spec) or is a collected object, so a raise in
 * the middle leaks nothing. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/mem.h"
#include "jobs/jobs.h"
#include "jobs/server.h"
#include "vm/lib.h"
#include "vm/lib_store.h"

#define WAIT_SLICE_MS 500 /* a connected run waits in slices, to notice ^C */

typedef struct Jobs {
    jobs *js;           /* embedded; NULL when connected or closed */
    VStr *rundir;
    bool connected, closed;
    jw_buf req, text;   /* a request; a reply or an info text */
    job_spec decoded;   /* the spec of the job line being read (lists allocated) */
} Jobs;

static void jobs_free(VM *vm, void *data)
{
    (void)vm;
    Jobs *d = data;
    job_close(d->js);
    d->js = NULL;
    jw_free(&d->req);
    jw_free(&d->text);
    job_spec_free(&d->decoded);
}

static void jobs_mark(VM *vm, void *data)
{
    Jobs *d = data;
    if (d->rundir)
        vm_mark_obj(vm, &d->rundir->hdr);
}

static void jobs_show(VM *vm, void *data, VStrBuf *sb)
{
    Jobs *d = data;
    vm_sb_addc(vm, sb, "<jobs ");
    vm_sb_add(vm, sb, d->rundir->data, d->rundir->len);
    vm_sb_addc(vm, sb, d->closed ? " (closed)>" : d->connected ? " (connected)>" : ">");
}

static const VHandleType lib_jobs_type = {.name = "jobs", .free = jobs_free, .mark = jobs_mark, .show = jobs_show};

static Jobs *jobs_arg(VM *vm, Value *argv)
{
    Jobs *d = vm_arg_handle(vm, argv, 0, &lib_jobs_type);
    if (d->closed)
        vm_error(vm, "the jobs of %s are closed", d->rundir->data);
    return d;
}

/* ---- talking to a dispatcher ------------------------------------------- */

/* Sends d->req (built by the caller; empty means out of memory) and reads
 * the reply into d->text; raises the dispatcher's error. timeout_ms < 0
 * waits for ever; returns 1 on a timeout, else 0. */
static int request(VM *vm, Jobs *d, int timeout_ms)
{
    char err[1200];
    if (!d->req.len)
        vm_error(vm, "out of memory");
    jw_clear(&d->text);
    int rc = jobsrv_request(d->rundir->data, &d->req, timeout_ms, &d->text, err, sizeof err);
    if (rc == 2)
        return 1;
    if (rc != 0)
        vm_error(vm, "%s", err);
    return 0;
}

/* A request of a verb and up to two fields (NULL: none). */
static void simple_request(VM *vm, Jobs *d, const char *verb, const char *a, const char *b)
{
    jw_clear(&d->req);
    if (jw_field(&d->req, verb) < 0 || (a && jw_field(&d->req, a) < 0) ||
        (b && jw_field(&d->req, b) < 0))
        jw_clear(&d->req);
    request(vm, d, -1);
}

/* ---- opening ------------------------------------------------------------ */

static Jobs *new_jobs(VM *vm, VStr *rundir, Value *out)
{
    VHandle *h = vm_handle_new(vm, &lib_jobs_type, sizeof(Jobs));
    Jobs *d = handle_data(h);
    d->rundir = rundir;
    *out = v_obj(h);
    return d;
}

Value nat_jobs(VM *vm, int argc, Value *argv)
{
    (void)argc;
    Value v;
    Jobs *d = new_jobs(vm, lib_cstr_arg(vm, argv, 0), &v);
    char err[1200];
    job_options opt = {NULL, NULL, 1};
    d->js = job_open(d->rundir->data, &opt, err, sizeof err);
    if (!d->js)
        vm_error(vm, "%s", err);
    d->rundir = vm_str_cstr(vm, job_rundir(d->js));
    return v;
}

Value nat_jobs_connect(VM *vm, int argc, Value *argv)
{
    (void)argc;
    Value v;
    Jobs *d = new_jobs(vm, lib_cstr_arg(vm, argv, 0), &v);
    d->connected = true;
    simple_request(vm, d, "status", "1", NULL); /* is anyone there? */
    return v;
}

Value nat_jobs_close(VM *vm, int argc, Value *argv)
{
    (void)argc;
    Jobs *d = vm_arg_handle(vm, argv, 0, &lib_jobs_type);
    job_close(d->js);
    d->js = NULL;
    d->closed = true;
    return v_nil();
}

/* ---- job specs ------------------------------------------------------------ */

/* Raises "WHAT KEY WHY", the key as comb code shows it ("colour"). */
_Noreturn static void bad_key(VM *vm, Value key, const char *what, const char *why)
{
    VStrBuf sb;
    vm_sb_init(vm, &sb, 16);
    vm_show(vm, &sb, key, true);
    VStr *s = vm_sb_done(vm, &sb);
    vm_error(vm, "%s %.*s %s", what, (int)s->len, s->data, why);
}

enum { K_NAME, K_RUN, K_COMB, K_AFTER, K_USES, K_PRIO, K_RERUN, K_HELD, K_DIR, NKEYS };
static const char *const spec_keys[NKEYS] = {"name",  "run",   "comb", "after", "uses",
                                             "prio",  "rerun", "held", "dir"};

/* The fields of the spec map v, by key; nil where absent. */
static void spec_fields(VM *vm, Value v, Value f[NKEYS])
{
    if (!IS_MAP(v))
        vm_error(vm, "a job spec must be a map, got %s", v_type_name(v));
    for (int k = 0; k < NKEYS; k++)
        f[k] = v_nil();
    Value key, val;
    size_t pos = 0;
    while (vm_map_next(AS_MAP(v), &pos, &key, &val)) {
        int k = 0;
        while (k < NKEYS && !(IS_STR(key) && str_eq_cstr(AS_STR(key), spec_keys[k])))
            k++;
        if (k == NKEYS)
            bad_key(vm, key, "unknown key",
                    "in a job spec (name, run, comb, after, uses, prio, rerun, held, dir)");
        f[k] = val;
    }
    if (IS_NIL(f[K_NAME]))
        vm_error(vm, "a job spec needs a name");
}

/* v as a NUL-terminated string without NUL bytes; what names it in errors. */
static const char *cstr(VM *vm, Value v, const char *job, const char *what)
{
    if (!IS_STR(v))
        vm_error(vm, "job '%s': %s must be a string, got %s", job, what, v_type_name(v));
    VStr *s = AS_STR(v);
    if (memchr(s->data, '\0', s->len))
        vm_error(vm, "job '%s': %s holds a NUL byte", job, what);
    return s->data[s->len] == '\0' ? s->data : vm_str_new(vm, s->data, s->len)->data;
}

/* after or uses: nil, a name, or an array of names. Their count; with out,
 * the names are put there too. */
static size_t names_of(VM *vm, Value v, const char *job, const char *what, const char **out)
{
    if (IS_NIL(v))
        return 0;
    if (IS_STR(v)) {
        if (out)
            out[0] = cstr(vm, v, job, what);
        return 1;
    }
    if (!IS_ARRAY(v))
        vm_error(vm, "job '%s': %s must be a name or an array of names, got %s", job, what,
                 v_type_name(v));
    VArray *a = AS_ARRAY(v);
    char each[32];
    snprintf(each, sizeof each, "a name in %s", what);
    for (size_t i = 0; out && i < a->len; i++)
        out[i] = cstr(vm, a->items[i], job, each);
    return a->len;
}

static bool flag(VM *vm, Value v, const char *job, const char *what)
{
    if (!IS_NIL(v) && !IS_BOOL(v))
        vm_error(vm, "job '%s': %s must be true or false, got %s", job, what, v_type_name(v));
    return v_truthy(v);
}

static VStr *current_dir(VM *vm)
{
    char buf[PATH_MAX];
    if (!getcwd(buf, sizeof buf))
        vm_error(vm, "cannot tell the current directory");
    return vm_str_cstr(vm, buf);
}

/* dir, taken from cwd if relative. */
static const char *absolute_dir(VM *vm, VStr *cwd, const char *dir)
{
    if (dir[0] == '/')
        return dir;
    VStrBuf sb;
    vm_sb_init(vm, &sb, cwd->len + strlen(dir) + 2);
    vm_sb_add(vm, &sb, cwd->data, cwd->len);
    vm_sb_addc(vm, &sb, cwd->len > 1 ? "/" : "");
    vm_sb_addc(vm, &sb, dir);
    return vm_sb_done(vm, &sb)->data;
}

/* Fills s from the fields f; the names go to names[], strings stay in
 * collected objects. The directory defaults to cwd. */
static void fill_spec(VM *vm, Value f[NKEYS], job_spec *s, const char **names, VStr *cwd)
{
    memset(s, 0, sizeof *s);
    if (!IS_STR(f[K_NAME]))
        vm_error(vm, "a job's name must be a string, got %s", v_type_name(f[K_NAME]));
    const char *name = s->name = cstr(vm, f[K_NAME], "", "its name");
    bool comb = !IS_NIL(f[K_COMB]);
    if (comb == !IS_NIL(f[K_RUN]))
        vm_error(vm, "job '%s': give it either run (a shell command) or comb (comb code)", name);
    s->kind = comb ? JOB_COMB : JOB_SHELL;
    s->text = cstr(vm, f[comb ? K_COMB : K_RUN], name, comb ? "comb" : "run");
    s->after = names;
    s->nafter = names_of(vm, f[K_AFTER], name, "after", names);
    s->uses = names + s->nafter;
    s->nuses = names_of(vm, f[K_USES], name, "uses", names + s->nafter);
    if (!IS_NIL(f[K_PRIO]) && !IS_INT(f[K_PRIO]))
        vm_error(vm, "job '%s': prio must be an int, got %s", name, v_type_name(f[K_PRIO]));
    int64_t prio = IS_INT(f[K_PRIO]) ? AS_INT(f[K_PRIO]) : 0;
    s->prio = prio < INT_MIN ? INT_MIN : prio > INT_MAX ? INT_MAX : (int)prio;
    s->rerun = flag(vm, f[K_RERUN], name, "rerun");
    s->held = flag(vm, f[K_HELD], name, "held");
    s->dir = cwd->data;
    if (!IS_NIL(f[K_DIR]))
        s->dir = absolute_dir(vm, cwd, cstr(vm, f[K_DIR], name, "dir"));
}

/* Scratch memory owned by the collector: the specs and their name lists. */
static const VHandleType scratch_type = {.name = "job specs"};

Value nat_job(VM *vm, int argc, Value *argv)
{
    (void)argc;
    Jobs *d = jobs_arg(vm, argv);
    bool many = IS_ARRAY(argv[1]);
    size_t n = many ? AS_ARRAY(argv[1])->len : 1, nnames = 0;
    Value *items = many ? AS_ARRAY(argv[1])->items : &argv[1];
    Value f[NKEYS];
    for (size_t i = 0; i < n; i++) {
        spec_fields(vm, items[i], f);
        const char *name = IS_STR(f[K_NAME]) ? AS_STR(f[K_NAME])->data : "";
        nnames += names_of(vm, f[K_AFTER], name, "after", NULL) +
                  names_of(vm, f[K_USES], name, "uses", NULL);
    }
    if (n == 0)
        return v_obj(vm_array_new(vm, 0));
    VHandle *scratch = vm_handle_new(vm, &scratch_type,
                                     n * sizeof(job_spec) + (nnames + 1) * sizeof(char *));
    job_spec *specs = handle_data(scratch);
    const char **names = (const char **)(specs + n);
    VStr *cwd = current_dir(vm);
    for (size_t i = 0; i < n; i++) {
        spec_fields(vm, items[i], f);
        fill_spec(vm, f, &specs[i], names, cwd);
        names += specs[i].nafter + specs[i].nuses;
    }
    if (d->js) {
        if (job_submit_many(d->js, specs, n) < 0)
            vm_error(vm, "%s", job_error(d->js));
    } else {
        jw_clear(&d->req);
        int rc = jw_field(&d->req, "submit");
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = job_spec_encode(&specs[i], &d->req);
        if (rc < 0)
            jw_clear(&d->req);
        request(vm, d, -1);
    }
    if (!many)
        return v_obj(vm_str_cstr(vm, specs[0].name));
    VArray *a = vm_array_new(vm, n);
    for (size_t i = 0; i < n; i++)
        vm_array_push(vm, a, v_obj(vm_str_cstr(vm, specs[i].name)));
    return v_obj(a);
}

/* ---- changes ------------------------------------------------------------- */

static Value admin(VM *vm, Value *argv, const char *verb, int (*fn)(jobs *, const char *))
{
    Jobs *d = jobs_arg(vm, argv);
    const char *name = lib_cstr_arg(vm, argv, 1)->data;
    if (!d->js)
        simple_request(vm, d, verb, name, NULL);
    else if (fn(d->js, name) < 0)
        vm_error(vm, "%s", job_error(d->js));
    return v_nil();
}

/* jobs_retry, jobs_hold, jobs_release, jobs_delete, jobs_force */
#define ADMIN(verb)                                                                            \
    Value nat_jobs_##verb(VM *vm, int argc, Value *argv)                                      \
    {                                                                                          \
        (void)argc;                                                                            \
        return admin(vm, argv, #verb, job_##verb);                                             \
    }
ADMIN(retry)
ADMIN(hold)
ADMIN(release)
ADMIN(delete)
ADMIN(force)
#undef ADMIN

Value nat_jobs_limit(VM *vm, int argc, Value *argv)
{
    (void)argc;
    Jobs *d = jobs_arg(vm, argv);
    const char *name = lib_cstr_arg(vm, argv, 1)->data;
    char text[32];
    if (IS_NIL(argv[2]))
        snprintf(text, sizeof text, "none");
    else if (IS_INT(argv[2]))
        snprintf(text, sizeof text, "%lld", (long long)AS_INT(argv[2]));
    else if (IS_FLOAT(argv[2]))
        snprintf(text, sizeof text, "%.17g", AS_FLOAT(argv[2]));
    else
        vm_arg_error(vm, 2, "a number or nil", argv[2]);
    if (!d->js)
        simple_request(vm, d, "limit", name, text);
    else if (job_set_limit_text(d->js, name, text) < 0)
        vm_error(vm, "%s", job_error(d->js));
    return v_nil();
}

/* ---- reading --------------------------------------------------------------- */

/* The info text (all jobs, or the one named) into d->text. */
static void fetch_info(VM *vm, Jobs *d, const char *name)
{
    if (!d->js) {
        simple_request(vm, d, "info", name, NULL);
        return;
    }
    jw_clear(&d->text);
    if (job_info_text(d->js, &name, name ? 1 : 0, &d->text) < 0)
        vm_error(vm, "%s", job_error(d->js));
}

static Value cstr_value(VM *vm, const char *s) { return v_obj(vm_str_cstr(vm, s)); }

static Value names_value(VM *vm, const char *const *v, size_t n)
{
    VArray *a = vm_array_new(vm, n);
    for (size_t i = 0; i < n; i++)
        vm_array_push(vm, a, cstr_value(vm, v[i]));
    return v_obj(a);
}

static Value time_value(double t) { return t > 0 ? v_float(t) : v_nil(); }

/* "none" as nil, else the number. */
static Value limit_value(const char *s)
{
    if (!strcmp(s, "none"))
        return v_nil();
    return strpbrk(s, ".eE") ? v_float(atof(s)) : v_int(atoll(s));
}

/* The map of a job line's fields (after "job"). */
static Value job_value(VM *vm, Jobs *d, char **f, int n)
{
    char err[256];
    job_spec_free(&d->decoded);
    job_info in;
    if (job_info_decode(f, n, &in, err, sizeof err) < 0)
        vm_error(vm, "the dispatcher's answer: %s", err);
    d->decoded = in.spec; /* freed next time, or with the handle */
    const job_spec *s = &in.spec;
    VMap *m = vm_map_new(vm, 20);
    lib_put(vm, m, "name", cstr_value(vm, s->name));
    lib_put(vm, m, "state", cstr_value(vm, job_state_name(in.state)));
    jw_buf *t = &d->req; /* free for reuse: the request is answered */
    jw_clear(t);
    if (job_state_text(&in, t) < 0)
        vm_error(vm, "out of memory");
    lib_put(vm, m, "detail", v_obj(vm_str_new(vm, t->p, t->len)));
    lib_put(vm, m, "cause", in.cause ? cstr_value(vm, in.cause) : v_nil());
    lib_put(vm, m, "runs", v_int(in.runs));
    bool ended = in.state == JOB_DONE || in.state == JOB_FAILED;
    lib_put(vm, m, "exit", ended && WIFEXITED(in.status) ? v_int(WEXITSTATUS(in.status)) : v_nil());
    lib_put(vm, m, "signal", ended && WIFSIGNALED(in.status) ? v_int(WTERMSIG(in.status)) : v_nil());
    lib_put(vm, m, "pid", in.pid > 0 ? v_int(in.pid) : v_nil());
    lib_put(vm, m, "started", time_value(in.started));
    lib_put(vm, m, "ended", time_value(in.ended));
    lib_put(vm, m, s->kind == JOB_COMB ? "comb" : "run", cstr_value(vm, s->text));
    lib_put(vm, m, "after", names_value(vm, s->after, s->nafter));
    lib_put(vm, m, "uses", names_value(vm, s->uses, s->nuses));
    lib_put(vm, m, "prio", v_int(s->prio));
    lib_put(vm, m, "rerun", v_bool(s->rerun));
    lib_put(vm, m, "held", v_bool(s->held));
    lib_put(vm, m, "dir", s->dir ? cstr_value(vm, s->dir) : v_nil());
    job_spec_free(&d->decoded);
    return v_obj(m);
}

/* Reads the lines of d->text: each job line's map to list (if not NULL),
 * the counts, resources and limits to summary (if not NULL). */
static void read_info(VM *vm, Jobs *d, VArray *list, VMap *summary)
{
    int64_t count[JOB_DELETED + 1] = {0}, total = 0;
    VMap *res = vm_map_new(vm, 8), *lim = vm_map_new(vm, 2);
    char *f[JOB_INFO_FIELDS + 2];
    for (char *line = d->text.p, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        int n = jw_split(line, f, JOB_INFO_FIELDS + 2);
        if (n == 1 + JOB_INFO_FIELDS && !strcmp(f[0], "job")) {
            const char *state = f[1 + JOB_SPEC_FIELDS];
            for (int s = 0; s <= JOB_DELETED; s++)
                count[s] += !strcmp(state, job_state_name((enum job_state)s));
            total++;
            if (list)
                vm_array_push(vm, list, job_value(vm, d, f + 1, n - 1));
        } else if (n == 7 && !strcmp(f[0], "resource")) {
            VMap *r = vm_map_new(vm, 5);
            lib_put(vm, r, "limit", limit_value(f[2]));
            lib_put(vm, r, "running", v_int(atoll(f[3])));
            lib_put(vm, r, "done", v_int(atoll(f[4])));
            lib_put(vm, r, "failed", v_int(atoll(f[5])));
            lib_put(vm, r, "total", v_int(atoll(f[6])));
            lib_put(vm, res, f[1], v_obj(r));
        } else if (n == 3 && !strcmp(f[0], "limits")) {
            lib_put(vm, lim, "jobs", limit_value(f[1]));
            lib_put(vm, lim, "load", limit_value(f[2]));
        } else {
            vm_error(vm, "the dispatcher's answer: an unexpected line");
        }
    }
    if (!summary)
        return;
    lib_put(vm, summary, "total", v_int(total));
    for (int s = 0; s <= JOB_DELETED; s++)
        lib_put(vm, summary, job_state_name((enum job_state)s), v_int(count[s]));
    lib_put(vm, summary, "ok", v_bool(count[JOB_DONE] + count[JOB_DELETED] == total));
    lib_put(vm, summary, "resources", v_obj(res));
    lib_put(vm, summary, "limits", v_obj(lim));
}

static Value summary(VM *vm, Jobs *d)
{
    fetch_info(vm, d, NULL);
    VMap *m = vm_map_new(vm, 16);
    read_info(vm, d, NULL, m);
    return v_obj(m);
}

Value nat_jobs_summary(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return summary(vm, jobs_arg(vm, argv));
}

Value nat_jobs_status(VM *vm, int argc, Value *argv)
{
    Jobs *d = jobs_arg(vm, argv);
    const char *name = argc > 1 ? lib_cstr_arg(vm, argv, 1)->data : NULL;
    fetch_info(vm, d, name);
    VArray *a = vm_array_new(vm, 0);
    read_info(vm, d, a, NULL);
    if (!name)
        return v_obj(a);
    return a->len == 1 ? a->items[0] : v_nil();
}

/* ---- running --------------------------------------------------------------- */

static int interrupted(void *ctx)
{
    (void)ctx;
    return (vm_poll_flag & POLL_SIGINT) != 0;
}

/* The options of jobs_run: monitor and every. */
static void run_options(VM *vm, Value opts, jobsrv_monitor *mon)
{
    if (IS_NIL(opts))
        return;
    if (!IS_MAP(opts))
        vm_arg_error(vm, 1, "a map", opts);
    Value key, val;
    size_t pos = 0;
    while (vm_map_next(AS_MAP(opts), &pos, &key, &val)) {
        if (IS_STR(key) && str_eq_cstr(AS_STR(key), "monitor") && IS_STR(val)) {
            mon->command = lib_cstr_arg(vm, &val, 0)->data;
        } else if (IS_STR(key) && str_eq_cstr(AS_STR(key), "every") && IS_NUM(val)) {
            mon->every = vm_arg_num(vm, &val, 0);
            if (!(mon->every > 0))
                vm_error(vm, "every must be a number of seconds above 0");
        } else {
            bad_key(vm, key, "bad option", "(monitor: a path, every: seconds)");
        }
    }
}

Value nat_jobs_run(VM *vm, int argc, Value *argv)
{
    Jobs *d = jobs_arg(vm, argv);
    jobsrv_monitor mon = {NULL, 60, interrupted, NULL};
    run_options(vm, argc > 1 ? argv[1] : v_nil(), &mon);
    if (d->js) {
        int rc = job_run(d->js, &mon);
        vm_store_recheck();   /* the jobs may have changed stores */
        if (rc < 0)
            vm_error(vm, "%s", job_error(d->js));
        if (rc == 2)
            vm_interrupted(vm);
        return summary(vm, d);
    }
    if (mon.command)
        vm_error(vm, "a dispatcher that serves runs its own monitor (comb jobs serve -m)");
    for (;;) { /* wait until every job is settled */
        jw_clear(&d->req);
        if (jw_field(&d->req, "wait") < 0)
            jw_clear(&d->req);
        if (!request(vm, d, WAIT_SLICE_MS)) {
            vm_store_recheck();
            return summary(vm, d);
        }
        if (interrupted(NULL))
            vm_interrupted(vm);
    }
}
