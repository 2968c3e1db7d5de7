/* cmd_jobs: `comb jobs ...`: the dispatcher daemon, the embedded run and the
 * client (Gecko's wreq). */
#include "config.h"
#include "cli/cmd_jobs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lang/paths.h"
#include "store/mem.h"
#include "jobs/jobs.h"
#include "jobs/server.h"
#include "jobs/spawn.h"

#define MAX_TOKENS 256

static const char usage_text[] =
    "usage: comb jobs COMMAND RUNDIR [ARGS...]\n"
    "\n"
    "  serve RUNDIR [-f] [-j N] [-m MONITOR] [-k SECONDS]\n"
    "        run the dispatcher as a daemon (-f: in the foreground); MONITOR: a\n"
    "        comb file, a shell command, or a stdlib monitor (balance, tagcache)\n"
    "  run RUNDIR [-f FILE] [-l NAME=VALUE]... [-j N] [-m MONITOR] [-k SECONDS]\n"
    "      [--backend slurm|slurm-jobs]\n"
    "        dispatch without a daemon until every job is settled (slurm: a Slurm\n"
    "        job step per volume and per cross-volume stage in one allocation;\n"
    "        slurm-jobs: a Slurm batch job each; docs/CLUSTER.md)\n"
    "  submit RUNDIR SPEC | -f FILE     add jobs (FILE: one SPEC a line, - for stdin)\n"
    "  status RUNDIR [-s] [NAME...]     state of the jobs (-s: summary only)\n"
    "  dump RUNDIR                      every detail of every job\n"
    "  delete|force|retry|hold|release RUNDIR NAME...\n"
    "  limit RUNDIR NAME VALUE...       NAME: a resource, jobs or load; VALUE: n or none\n"
    "  wait RUNDIR [-t SECONDS] [NAME...]  until the jobs (all: none named) are settled\n"
    "  With no dispatcher serving RUNDIR, all but wait open RUNDIR itself (a finished\n"
    "  or crashed run) and change its journal; the next run goes on from there.\n"
    "\n"
    "SPEC: NAME [-p PRIO] [-a AFTER,...] [-u RESOURCE,...] [-r] [-H] [-c] [-d DIR] -- COMMAND\n"
    "  -a  prerequisites: jobs (must exit 0) or resources (earlier users must finish)\n"
    "  -u  resources used   -r rerunnable   -H held   -c COMMAND is comb code (comb -e)\n";

static int usage(void)
{
    fputs(usage_text, stderr);
    return 2;
}

static int complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int complain(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "comb jobs: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* ---- job specs ------------------------------------------------------------ */

static size_t count_items(const char *list)
{
    size_t n = 1;
    for (; *list; list++)
        n += *list == ',';
    return n;
}

/* Parses NAME OPTIONS (tok) and the command text into s; lists are split in
 * place and their arrays allocated as job_spec_decode does (job_spec_free). */
static int parse_spec(char **tok, int ntok, const char *cmd, const char *cwd, job_spec *s,
                      char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (ntok < 1 || tok[0][0] == '-') {
        snprintf(err, errlen, "a job spec starts with the job's name");
        return -1;
    }
    s->name = tok[0];
    s->text = cmd;
    s->dir = cwd;
    size_t na = 0, nu = 0;
    for (int i = 1; i < ntok; i++) {
        const char *o = tok[i];
        int takes = !strcmp(o, "-p") || !strcmp(o, "-a") || !strcmp(o, "-u") || !strcmp(o, "-d");
        if (takes && i + 1 == ntok) {
            snprintf(err, errlen, "option %s needs a value", o);
            return -1;
        }
        if (!strcmp(o, "-a"))
            na += count_items(tok[i + 1]);
        else if (!strcmp(o, "-u"))
            nu += count_items(tok[i + 1]);
        else if (!takes && strcmp(o, "-r") && strcmp(o, "-H") && strcmp(o, "-c")) {
            snprintf(err, errlen, "unknown option '%s' in the spec of job '%s'", o, s->name);
            return -1;
        }
        i += takes;
    }
    const char **v = mem_calloc(na + nu + 1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->after = v;
    s->uses = v + na;
    for (int i = 1; i < ntok; i++) {
        char *o = tok[i], *val = i + 1 < ntok ? tok[i + 1] : NULL, *end;
        if (!strcmp(o, "-r") || !strcmp(o, "-H") || !strcmp(o, "-c")) {
            s->rerun |= o[1] == 'r';
            s->held |= o[1] == 'H';
            s->kind = o[1] == 'c' ? JOB_COMB : s->kind;
            continue;
        }
        i++;
        if (!strcmp(o, "-p")) {
            long p = strtol(val, &end, 10);
            if (end == val || *end || p < INT_MIN || p > INT_MAX) {
                snprintf(err, errlen, "bad priority '%s'", val);
                job_spec_free(s);
                return -1;
            }
            s->prio = (int)p;
        } else if (!strcmp(o, "-d")) {
            s->dir = val;
        } else {
            const char **dst = o[1] == 'a' ? (const char **)s->after : (const char **)s->uses;
            size_t *n = o[1] == 'a' ? &s->nafter : &s->nuses;
            for (char *p = val;;) {
                dst[(*n)++] = p;
                p += strcspn(p, ",");
                if (!*p)
                    break;
                *p++ = '\0';
            }
        }
    }
    return 0;
}

struct specs {
    job_spec *v;
    size_t n, cap;
    jw_buf file; /* the specs point into it */
    char cwd[PATH_MAX];
};

static void specs_free(struct specs *sp)
{
    for (size_t i = 0; i < sp->n; i++)
        job_spec_free(&sp->v[i]);
    mem_free(sp->v, sp->cap * sizeof *sp->v);
    jw_free(&sp->file);
}

static int read_file(const char *path, jw_buf *b)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f)
        return complain("%s: %s", path, strerror(errno));
    char buf[65536];
    size_t n;
    int rc = 0;
    while (rc == 0 && (n = fread(buf, 1, sizeof buf, f)) > 0)
        rc = jw_put(b, buf, n);
    if (rc == 0)
        rc = jw_puts(b, "");
    if (ferror(f) || rc < 0)
        rc = complain("%s: %s", path, rc < 0 ? "out of memory" : "read error");
    if (f != stdin)
        fclose(f);
    return rc;
}

/* One spec a line: NAME OPTIONS -- COMMAND; blank lines and # comments skipped. */
static int parse_file(const char *path, struct specs *sp)
{
    if (read_file(path, &sp->file))
        return 1;
    int lineno = 0;
    for (char *line = sp->file.p, *next; line && *line; line = next) {
        lineno++;
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        line += strspn(line, " \t");
        if (!*line || *line == '#')
            continue;
        char *tok[MAX_TOKENS], *cmd = NULL, err[512];
        int ntok = 0;
        for (char *p = line; *p && !cmd;) {
            char *t = p;
            p += strcspn(p, " \t");
            if (*p)
                *p++ = '\0';
            p += strspn(p, " \t");
            if (!strcmp(t, "--"))
                cmd = p;
            else if (ntok < MAX_TOKENS)
                tok[ntok++] = t;
        }
        if (!cmd || !*cmd || ntok == MAX_TOKENS) {
            fprintf(stderr, "comb jobs: %s:%d: %s\n", path, lineno,
                    ntok == MAX_TOKENS ? "too many options" : "expected NAME [OPTIONS] -- COMMAND");
            return 1;
        }
        if (sp->n == sp->cap) {
            size_t cap = sp->cap ? 2 * sp->cap : 64;
            job_spec *v = mem_realloc(sp->v, sp->cap * sizeof *v, cap * sizeof *v);
            if (!v)
                return complain("%s: %s", path, "out of memory");
            sp->v = v;
            sp->cap = cap;
        }
        if (parse_spec(tok, ntok, cmd, sp->cwd, &sp->v[sp->n], err, sizeof err) < 0) {
            fprintf(stderr, "comb jobs: %s:%d: %s\n", path, lineno, err);
            return 1;
        }
        sp->n++;
    }
    return 0;
}

/* Specs from `-f FILE` or from the words of one SPEC. */
static int get_specs(int argc, char **argv, struct specs *sp, jw_buf *cmdbuf)
{
    if (!getcwd(sp->cwd, sizeof sp->cwd))
        return complain("cannot tell the current directory: %s", strerror(errno));
    if (argc == 2 && !strcmp(argv[0], "-f"))
        return parse_file(argv[1], sp);
    int dd = 0;
    while (dd < argc && strcmp(argv[dd], "--"))
        dd++;
    if (dd >= argc - 1)
        return complain("expected NAME [OPTIONS] -- COMMAND");
    for (int i = dd + 1; i < argc; i++)
        if ((i > dd + 1 && jw_puts(cmdbuf, " ") < 0) || jw_puts(cmdbuf, argv[i]) < 0)
            return complain("out of memory");
    char err[512];
    sp->v = mem_calloc(1, sizeof *sp->v);
    if (!sp->v)
        return complain("out of memory");
    sp->cap = 1;
    if (parse_spec(argv, dd, cmdbuf->p, sp->cwd, &sp->v[0], err, sizeof err) < 0)
        return complain("%s", err);
    sp->n = 1;
    return 0;
}

/* ---- the client ------------------------------------------------------------ */

static int add_fields(jw_buf *req, char *const *v, int n)
{
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = jw_field(req, v[i]);
    return rc;
}

/* wait's exit status: 0 when every job it reports (all, for none named) is
 * done or deleted. */
static int all_done(const char *text, int named)
{
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        char state[16] = "";
        unsigned long total = 0, done = 0, deleted = 0;
        if (named && !strncmp(l, "job ", 4) && sscanf(l + 4, "%*s %15[a-z]", state) == 1 &&
            strcmp(state, "done") &&
            strcmp(state, "deleted"))
            return 0;
        if (!named && sscanf(l, "jobs total %lu waiting %*u runnable %*u running %*u done %lu "
                                "failed %*u blocked %*u held %*u deleted %lu",
                             &total, &done, &deleted) == 3)
            return done + deleted == total;
    }
    return named;
}

/* The submit request for `-f FILE` or one SPEC. 0, or 1 (said why). */
static int build_submit(int argc, char **argv, jw_buf *req)
{
    struct specs sp = {0};
    jw_buf cmd = {0};
    int rc = get_specs(argc, argv, &sp, &cmd);
    if (rc == 0) {
        rc = jw_field(req, "submit") < 0;
        for (size_t i = 0; i < sp.n && rc == 0; i++)
            rc = job_spec_encode(&sp.v[i], req) < 0;
        if (rc)
            rc = complain("out of memory");
    }
    jw_free(&cmd);
    specs_free(&sp);
    return rc;
}

static int client(const char *verb, const char *rundir, int argc, char **argv)
{
    jw_buf req = {0}, reply = {0};
    int timeout_ms = -1, brief = 0, rc = 0;
    if (!strcmp(verb, "wait") && argc >= 2 && !strcmp(argv[0], "-t")) {
        timeout_ms = (int)(atof(argv[1]) * 1000);
        argc -= 2;
        argv += 2;
    }
    if (!strcmp(verb, "status")) {
        brief = argc > 0 && !strcmp(argv[0], "-s");
        argc -= brief;
        argv += brief;
    }
    if (!strcmp(verb, "submit"))
        rc = build_submit(argc, argv, &req);
    else if (jw_field(&req, verb) < 0 ||
             (!strcmp(verb, "status") && jw_field(&req, brief ? "1" : "0") < 0) ||
             add_fields(&req, argv, argc) < 0)
        rc = complain("out of memory");
    char err[1200];
    if (rc == 0) {
        rc = jobsrv_request(rundir, &req, timeout_ms, &reply, err, sizeof err);
        if (rc == 3 && strcmp(verb, "wait")) /* no dispatcher: the run directory itself */
            rc = jobsrv_offline(rundir, &req, &reply, err, sizeof err);
        if (rc == 0)
            fwrite(reply.p ? reply.p : "", 1, reply.len, stdout);
        else
            fprintf(stderr, "comb jobs: %s\n", err);
        if (rc == 0 && !strcmp(verb, "wait") && !all_done(reply.p, argc > 0))
            rc = 1;
    }
    jw_free(&reply);
    jw_free(&req);
    return rc == 0 ? 0 : rc == 2 ? 2 : 1;
}

/* ---- serve and run ---------------------------------------------------------- */

struct runopts {
    jobsrv_monitor mon;
    char monitor[PATH_MAX]; /* -m NAME found in the stdlib */
    const char *file, *jobs, *every_arg;
    char **limits; /* NAME=VALUE */
    const char *slurm; /* --backend slurm or slurm-jobs; NULL: embedded */
    int nlimits, foreground;
};

/* -m NAME, a plain name that is no file here, is a monitor of the stdlib
 * (stdlib/monitors/NAME.comb) if there is one; else m as given. */
static const char *find_monitor(const char *m, char *buf, size_t n)
{
    if (strchr(m, '/') || access(m, F_OK) == 0)
        return m;
    snprintf(buf, n, "%s/monitors/%s.comb", paths_stdlib(), m);
    return access(buf, R_OK) == 0 ? buf : m;
}

static int parse_runopts(int argc, char **argv, int serve, struct runopts *o)
{
    memset(o, 0, sizeof *o);
    o->mon.every = 60;
    o->limits = argv;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (serve && !strcmp(a, "-f")) {
            o->foreground = 1;
            continue;
        }
        if (!serve && v && !strcmp(a, "--backend")) {
            if (strcmp(v, "slurm") && strcmp(v, "slurm-jobs") && strcmp(v, "embedded"))
                return complain("--backend %s: expected embedded, slurm or slurm-jobs", v);
            o->slurm = strcmp(v, "embedded") ? v : NULL;
            i++;
            continue;
        }
        if (!v || a[0] != '-' || !strchr(serve ? "jmk" : "fljmk", a[1]) || a[2])
            return complain("%s: unknown option or missing value", a);
        i++;
        switch (a[1]) {
        case 'f': o->file = v; break;
        case 'j': o->jobs = v; break;
        case 'm': o->mon.command = find_monitor(v, o->monitor, sizeof o->monitor); break;
        case 'k':
            o->every_arg = v;
            o->mon.every = atof(v);
            if (o->mon.every <= 0)
                return complain("-k %s: expected seconds > 0", v);
            break;
        case 'l':
            if (!strchr(v, '='))
                return complain("-l %s: expected NAME=VALUE", v);
            o->limits[o->nlimits++] = (char *)v; /* reuses argv's slots, all already read */
            break;
        }
    }
    return 0;
}

static int apply_limits(jobs *js, const struct runopts *o)
{
    if (o->jobs && job_set_limit_text(js, "jobs", o->jobs) < 0)
        return complain("%s", job_error(js));
    for (int i = 0; i < o->nlimits; i++) {
        char *eq = strchr(o->limits[i], '=');
        *eq = '\0';
        int rc = job_set_limit_text(js, o->limits[i], eq + 1);
        *eq = '=';
        if (rc < 0)
            return complain("%s", job_error(js));
    }
    return 0;
}

/* ---- the Slurm backend ------------------------------------------------------ */

/* Whether RUNDIR was run on Slurm (stdlib/cycle/slurm.comb keeps its units there). */
static int slurm_used(const char *rundir)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/slurm/units", rundir);
    return access(p, F_OK) == 0;
}

/* Hands over to the Slurm backend, written in comb: this binary runs
 * slurm.command() with VERB RUNDIR ARGS as its args(). Returns only on error. */
static int slurm_exec(const char *verb, const char *rundir, int argc, char **args)
{
    char self[PATH_MAX], code[PATH_MAX + 64], *argv[MAX_TOKENS + 6];
    if (argc > MAX_TOKENS)
        return complain("too many arguments");
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return complain("cannot find this comb binary: %s", strerror(errno));
    self[n] = '\0';
    snprintf(code, sizeof code, "import \"%s/cycle/slurm.comb\" as slurm\nslurm.command()",
             paths_stdlib());
    int n0 = 0;
    argv[n0++] = self;
    argv[n0++] = "-e";
    argv[n0++] = code;
    argv[n0++] = (char *)verb;
    argv[n0++] = (char *)rundir;
    for (int i = 0; i < argc; i++)
        argv[n0++] = args[i];
    argv[n0] = NULL;
    fflush(stdout);
    execv(self, argv);
    return complain("%s: %s", self, strerror(errno));
}

/* Embedded: jobs from the file join those already in the run directory. */
static int cmd_run(const char *rundir, int argc, char **argv)
{
    struct runopts o;
    struct specs sp = {0};
    char err[1200];
    if (parse_runopts(argc, argv, 0, &o))
        return 2;
    if (o.file && (!getcwd(sp.cwd, sizeof sp.cwd) || parse_file(o.file, &sp))) {
        specs_free(&sp);
        return 1;
    }
    job_options opt = {stderr, NULL, 0};
    jobs *js = job_open(rundir, &opt, err, sizeof err);
    int rc = js ? 0 : complain("%s", err);
    if (rc == 0 && sp.n && job_submit_many(js, sp.v, sp.n) < 0)
        rc = complain("%s", job_error(js));
    if (rc == 0)
        rc = apply_limits(js, &o);
    if (rc == 0 && o.slurm) { /* the graph and limits are in the journal: Slurm runs them */
        job_close(js);
        specs_free(&sp);
        char *args[] = {(char *)o.slurm, (char *)o.mon.command,
                        (char *)(o.every_arg ? o.every_arg : "60")};
        return slurm_exec("run", rundir, o.mon.command ? 3 : 1, args);
    }
    if (rc == 0) {
        rc = job_run(js, &o.mon);
        if (rc < 0)
            rc = complain("%s", job_error(js));
    }
    if (js && rc >= 0) { /* the summary, and the jobs left undone */
        jw_buf out = {0};
        int orc = job_status_text(js, NULL, 0, 1, &out);
        for (size_t i = 0; i < job_count(js) && orc == 0; i++) {
            job_info in;
            job_get(js, i, &in);
            if (in.state != JOB_DONE && in.state != JOB_DELETED)
                orc = job_line_text(js, i, &out);
        }
        fwrite(out.p ? out.p : "", 1, out.len, stdout);
        jw_free(&out);
    }
    job_close(js);
    specs_free(&sp);
    return rc;
}

/* The daemon: a child in its own session holds the run directory; the parent
 * returns once it serves (or says why it could not). */
static int cmd_serve(const char *rundir, int argc, char **argv)
{
    struct runopts o;
    if (parse_runopts(argc, argv, 1, &o))
        return 2;
    int pfd[2] = {-1, -1};
    if (!o.foreground) {
        if (pipe2(pfd, O_CLOEXEC) < 0)
            return complain("pipe: %s", strerror(errno));
        pid_t p = fork();
        if (p < 0)
            return complain("fork: %s", strerror(errno));
        if (p > 0) {
            char msg[1400];
            close(pfd[1]);
            ssize_t n = read(pfd[0], msg, sizeof msg - 1);
            msg[n > 0 ? n : 0] = '\0';
            if (!strcmp(msg, "ok\n"))
                return 0;
            fprintf(stderr, "comb jobs: %s\n", n > 0 ? msg : "the dispatcher did not start");
            return 1;
        }
        close(pfd[0]);
        setsid();
        char logp[PATH_MAX];
        snprintf(logp, sizeof logp, "%s/dispatcher.log", rundir);
        int nul = open("/dev/null", O_RDWR), lfd;
        if (mkdir(rundir, 0700) < 0 && errno != EEXIST) {
            dprintf(pfd[1], "%s: %s", rundir, strerror(errno));
            _exit(1);
        }
        if ((lfd = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0600)) < 0) {
            dprintf(pfd[1], "%s: %s", logp, strerror(errno));
            _exit(1);
        }
        dup2(nul, 0);
        dup2(lfd, 1);
        dup2(lfd, 2);
        close(nul);
        close(lfd);
    }
    char err[1200];
    job_options opt = {stderr, NULL, 0};
    jobs *js = job_open(rundir, &opt, err, sizeof err);
    int rc = js ? apply_limits(js, &o) : 1;
    if (rc == 0)
        rc = jobsrv_serve(js, &o.mon, pfd[1]) < 0;
    if (rc) {
        const char *why = js ? job_error(js) : err;
        fprintf(stderr, "comb jobs: %s\n", why);
        if (pfd[1] >= 0)
            dprintf(pfd[1], "%s", why);
    }
    job_close(js);
    return rc;
}

int cmd_jobs(int argc, char **argv)
{
    static const char *const client_verbs[] = {"submit", "status", "dump",  "delete", "force",
                                               "retry",  "hold",   "release", "limit", "wait"};
    if (argc < 3) {
        if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
            fputs(usage_text, stdout);
            return 0;
        }
        return usage();
    }
    const char *verb = argv[1], *rundir = argv[2];
    if (!strcmp(verb, "__spawner") && argc == 4) /* internal: the dispatcher's (jobs/spawn.h) */
        return jsp_serve(atoi(argv[2]), atoi(argv[3]));
    if (!strcmp(verb, "serve"))
        return cmd_serve(rundir, argc - 3, argv + 3);
    if (!strcmp(verb, "run"))
        return cmd_run(rundir, argc - 3, argv + 3);
    if (!strcmp(verb, "status") && slurm_used(rundir))
        return slurm_exec("status", rundir, argc - 3, argv + 3);
    for (size_t i = 0; i < sizeof client_verbs / sizeof *client_verbs; i++)
        if (!strcmp(verb, client_verbs[i]))
            return client(verb, rundir, argc - 3, argv + 3);
    fprintf(stderr, "comb jobs: unknown command '%s'\n", verb);
    return usage();
}
