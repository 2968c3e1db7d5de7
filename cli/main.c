/* main: comb's command line; parses options and hands off to the right front end. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cmd_jobs.h"
#include "cli/cmd_store.h"
#include "lang/help.h"
#include "lang/load.h"
#include "lang/table.h"
#include "lang/paths.h"
#include "lang/repl.h"
#include "store/mem.h"
#include "store/tagfile.h"
#include "vm/opcodes.h"
#include "vm/vm.h"

/* Exit statuses: a comb error (syntax or run time) is 1, bad usage 2. */
enum { EXIT_COMB_ERROR = 1, EXIT_USAGE = 2 };

/* Subcommands: `comb NAME ARGS...` hands ARGS to the NAME front end: a C
 * one (run), or command() of a stdlib module written in comb (path, found in
 * the stdlib directory only, never beside the caller; parse_args runs it
 * with ARGS as its args()). --help lists them from here. */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *path;
    const char *what;
} subcommands[] = {
    {"cycle", NULL, "cycle/cycle.comb", "the daily cycle: dock, update, history, reports (docs/CYCLE.md)"},
    {"gen", NULL, "gen/gen.comb", "test data: tap files and their expected reports (docs/TAPS.md), event stores (docs/EVENTS.md)"},
    {"gre", NULL, "gre.comb", "the fixed-string grep work-alike, written in comb (docs/GRE.md)"},
    {"report", NULL, "report/report.comb", "the cycle's reports to look at: show, drill, html (docs/REPORT.md)"},
    {"jobs", cmd_jobs, NULL, "the job dispatcher: run, serve, status, ... (docs/JOBS.md)"},
    {"store", cmd_store, NULL, "datastores: create, info, verify, load, gen (docs/STORE.md)"},
};
#define NSUBCOMMANDS (sizeof subcommands / sizeof subcommands[0])

static void usage(FILE *out)
{
    fprintf(out,
            "usage: comb [options] [FILE [ARGS...]]\n"
            "\n"
            "comb is a query language, bytecode VM and prompt for stores of tagsets.\n"
            "\n"
            "  comb                    the prompt on a terminal; else run standard input\n"
            "                          as a batch, statement by statement, as if typed\n"
            "  comb DIR                the same, with the store in DIR bound to ds\n"
            "  comb FILE [ARGS...]     run the program in FILE\n"
            "  comb -e CODE [ARGS...]  run CODE and print the value of its last expression\n"
            "  comb - [ARGS...]        run the program read from standard input\n"
            "\n"
            "options:\n"
            "  --norc            do not run ~/.combrc before the prompt or batch\n"
            "  --dump            print the program's bytecode instead of running it\n"
            "  --reference       print the reference tables of docs/LANGUAGE.md (Markdown)\n"
            "  --format F        how -e prints rows: table, tsv, csv or json\n"
            "                    (default: a table on a terminal, else tsv)\n"
            "  -h, --help        show this help and exit\n"
            "  -V, --version     show the version and exit\n"
            "\n"
            "commands (comb COMMAND --help for each):\n");
    for (size_t i = 0; i < NSUBCOMMANDS; i++)
        fprintf(out, "  comb %-6s %s\n", subcommands[i].name, subcommands[i].what);
    fprintf(out, "\nstdlib: %s\n", paths_stdlib());
}

/* What the command line asks for. */
typedef struct Args {
    const char *file;       /* a path, "-" for stdin, a store DIR; NULL: the prompt */
    const char *code;       /* -e */
    bool dump;
    bool norc;
    int format;             /* a TableFormat, or -1: a table on a terminal, else TSV */
    int nargs;              /* the program's own arguments */
    char **args;
} Args;

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, Args *a)
{
    static char code[PATH_MAX + 64];
    for (size_t i = 0; argc > 1 && i < NSUBCOMMANDS; i++)
        if (subcommands[i].path && !strcmp(argv[1], subcommands[i].name)) {
            snprintf(code, sizeof code, "import \"%s/%s\" as command\ncommand.command()",
                     paths_stdlib(), subcommands[i].path);
            a->code = code;
            a->nargs = argc - 2;
            a->args = argv + 2;
            return -1;
        }
    int i = 1;
    for (; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(s, "-V") || !strcmp(s, "--version")) {
            printf("comb %s\n", PACKAGE_VERSION);
            return 0;
        }
        if (!strcmp(s, "--reference")) {
            help_reference(stdout);
            return 0;
        }
        if (!strcmp(s, "--dump")) {
            a->dump = true;
        } else if (!strcmp(s, "--norc")) {
            a->norc = true;
        } else if (!strcmp(s, "--format")) {
            if (++i == argc || (a->format = table_format_parse(argv[i])) < 0) {
                fprintf(stderr, "comb: --format needs table, tsv, csv or json\n");
                return EXIT_USAGE;
            }
        } else if (!strcmp(s, "-e")) {
            if (++i == argc) {
                fprintf(stderr, "comb: -e needs CODE\n");
                return EXIT_USAGE;
            }
            a->code = argv[i++];
            break;
        } else if (!strcmp(s, "-") || s[0] != '-') {
            a->file = argv[i++];
            break;
        } else {
            fprintf(stderr, "comb: unknown argument '%s'\n", s);
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    a->nargs = argc - i;
    a->args = argv + i;
    return -1;
}

static VModule *load_stdin(VM *vm)
{
    size_t cap = 4096, n = 0;
    char *buf = mem_alloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, stdin);
        if (n < cap)
            break;
        char *more = mem_realloc(buf, cap, 2 * cap);
        if (!more)
            mem_free(buf, cap);
        buf = more;
        cap *= 2;
    }
    if (!buf) {
        fprintf(stderr, "comb: out of memory reading the program\n");
        return NULL;
    }
    VModule *m = lc_load_source(vm, buf, n, "<stdin>", stderr);
    mem_free(buf, cap);
    return m;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static void new_main(VM *vm, void *ud)
{
    Value *fn = ud;
    *fn = v_obj(vm_func_new(vm, AS_MODULE(*fn)->main));
}

/* -e: run the code and print the value of its last expression (nil: nothing). */
static int eval(VM *vm, VModule *m, const Args *a)
{
    Value fn = v_obj(m), result;
    vm->place_module = m;   /* the rows shown after it returns name its places */
    TableFormat f = a->format >= 0 ? (TableFormat)a->format
                                   : isatty(fileno(stdout)) ? TABLE_ALIGNED : TABLE_TSV;
    if (vm_protect(vm, new_main, &fn) || vm_pcall(vm, fn, 0, NULL, &result) ||
        (!IS_NIL(result) && !table_stream(vm, result, f, stdout))) {
        fflush(stdout);
        vm_print_error(vm, stderr);
        return vm_error_status(vm);
    }
    return 0;
}

static bool ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), m = strlen(end);
    return n >= m && !strcmp(s + n - m, end);
}

/* What `comb PATH` does with a path that is no program: -1 to run it as
 * one, 0 to open the prompt on it (a store, a tagset file), else an exit
 * status after saying why. */
static int data_path(const char *path)
{
    static const char *const text[] = {".csv", ".tsv", ".txt", ".json", ".log"};
    if (is_dir(path)) {
        char store[4096];
        snprintf(store, sizeof store, "%s/STORE", path);
        if (!access(store, F_OK))
            return 0;
        fprintf(stderr, "comb: %s is not a datastore (there is no %s); comb store create or "
                        "create_store() makes one\n", path, store);
        return EXIT_COMB_ERROR;
    }
    if (st_file_is_tagset(path))
        return 0;
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        if (ends_with(path, text[i])) {
            fprintf(stderr, "comb: %s is data, not a comb program: read it with "
                            "read_text(\"%s\", SCHEMA), or load it with comb store load\n",
                    path, path);
            return EXIT_USAGE;
        }
    return -1;
}

static int run(VM *vm, const Args *a)
{
    int data = a->code || !a->file || !strcmp(a->file, "-") ? -1 : data_path(a->file);
    if (data > 0)
        return data;
    if (!a->code && (!a->file || data == 0)) {
        ReplOptions o = {.norc = a->norc, .store_dir = a->file};
        return repl_main(vm, &o);
    }
    VModule *m;
    if (a->code)
        m = lc_load_eval(vm, a->code, strlen(a->code), "<-e>", stderr);
    else if (!strcmp(a->file, "-"))
        m = load_stdin(vm);
    else
        m = lc_load_file(vm, a->file, stderr);
    if (!m)
        return EXIT_COMB_ERROR;
    if (a->dump) {
        vm_disasm(m->main, stdout);
        return 0;
    }
    if (a->code)
        return eval(vm, m, a);
    int status = vm_run_module(vm, m);
    fflush(stdout);
    if (status) {
        vm_print_error(vm, stderr);
        return vm_error_status(vm);
    }
    return 0;
}

int main(int argc, char **argv)
{
    for (size_t i = 0; argc > 1 && i < NSUBCOMMANDS; i++)
        if (subcommands[i].run && !strcmp(argv[1], subcommands[i].name))
            return subcommands[i].run(argc - 1, argv + 1);
    Args a = {.format = -1};
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;
    VM *vm = vm_new(NULL);
    table_register();
    if (!vm) {
        fprintf(stderr, "comb: out of memory\n");
        return EXIT_COMB_ERROR;
    }
    lc_install_import(vm);
    vm_install_sigint();
    status = EXIT_COMB_ERROR;
    if (vm_set_args(vm, a.nargs, a.args) == 0)
        status = run(vm, &a);
    fflush(stdout);
    vm_free(vm);
    return status;
}
