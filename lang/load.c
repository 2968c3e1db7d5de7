/* load: programs from text and files to compiled modules, and the module
 * loader behind `import`. */
#include "config.h"
#include "lang/load.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lang/modcache.h"
#include "lang/compiler.h"
#include "lang/parser.h"
#include "lang/paths.h"
#include "store/mem.h"
#include "vm/natives.h"
#include "vm/place.h"

typedef struct CompileJob {
    VModule *mod;
    const char *src;
    size_t len;
    int first_line;
    bool value;         /* a final expression statement returns its value */
    Diag *d;
    Arena *a;
    VProto *main;
    size_t nvars;       /* the module's names before this compilation */
} CompileJob;

/* A final `expr` becomes `return expr`, so the prompt and -e can show it. */
static void return_last_expression(Block *prog)
{
    if (prog->n && prog->items[prog->n - 1]->kind == S_EXPR)
        prog->items[prog->n - 1]->kind = S_RETURN;
}

static void compile_job(VM *vm, void *ud)
{
    CompileJob *j = ud;
    TokenList toks = lex_at(j->a, j->src, j->len, j->first_line, j->d);
    Block prog = parse(j->a, &toks, j->d);
    if (j->value && !j->d->nerrors)
        return_last_expression(&prog);
    /* Compiled even after syntax errors, to report its errors too. */
    j->main = lc_compile(vm, j->mod, &prog, j->a, j->d);
    if (j->d->nerrors)
        j->main = NULL;
}

/* The text compiled, kept in its module for its runtime errors' places. */
static void keep_source(VM *vm, void *ud)
{
    CompileJob *j = ud;
    vm_keep_source(vm, j->mod, j->main, j->src, j->len, j->first_line);
}

/* Forgets the top-level names a failed compilation declared, so that a
 * statement retyped at the prompt does not meet its own half-made names. */
static void forget_names(VM *vm, VModule *mod, size_t nvars)
{
    size_t pos = 0;
    Value k, v;
    while (vm_map_next(mod->symbols, &pos, &k, &v))
        if ((size_t)v.as.i >= nvars)
            vm_map_del(vm, mod->symbols, k);
    mod->nvars = nvars;
}

static VProto *compile(VM *vm, CompileJob *j, const char *file, FILE *errout, bool *at_eof)
{
    Arena a;
    Diag d;
    arena_init(&a, vm);
    diag_init(&d, errout, file);
    diag_source(&d, j->src, j->len, j->first_line);
    j->d = &d;
    j->a = &a;
    j->main = NULL;
    j->nvars = j->mod->nvars;
    if (vm_protect(vm, compile_job, j)) {
        if (errout)
            fprintf(errout, "%s: out of memory while compiling\n", file);
        j->main = NULL;
    }
    arena_free(&a);
    diag_flush(&d);
    if (j->main)
        (void)vm_protect(vm, keep_source, j);  /* out of memory: its errors show no line */
    if (!j->main && j->value)
        forget_names(vm, j->mod, j->nvars);
    if (at_eof)
        *at_eof = d.at_eof;
    return j->main;
}

static VProto *compile_source(VM *vm, VModule *mod, const char *src, size_t len, FILE *errout,
                              bool *at_eof, bool eval)
{
    CompileJob j = {.mod = mod, .src = src, .len = len, .first_line = 1, .value = eval};
    return compile(vm, &j, mod->path->data, errout, at_eof);
}

VProto *lc_compile_statement(VM *vm, VModule *mod, const char *src, size_t len,
                             const char *file, int first_line, FILE *errout, bool *at_eof)
{
    CompileJob j = {.mod = mod, .src = src, .len = len, .first_line = first_line, .value = true};
    return compile(vm, &j, file, errout, at_eof);
}

typedef struct TokensJob {
    const char *src;
    size_t len;
    Arena a;
    void (*use)(const TokenList *toks, bool at_eof, void *ud);
    void *ud;
} TokensJob;

static void tokens_job(VM *vm, void *ud)
{
    (void)vm;
    TokensJob *j = ud;
    Diag d;
    diag_init(&d, NULL, "");
    TokenList toks = lex(&j->a, j->src, j->len, &d);
    j->use(&toks, d.at_eof, j->ud);
}

int lc_with_tokens(VM *vm, const char *src, size_t len,
                   void (*use)(const TokenList *toks, bool at_eof, void *ud), void *ud)
{
    TokensJob j = {.src = src, .len = len, .use = use, .ud = ud};
    arena_init(&j.a, vm);
    int rc = vm_protect(vm, tokens_job, &j);
    arena_free(&j.a);
    return rc ? -1 : 0;
}

VProto *lc_compile_source(VM *vm, VModule *mod, const char *src, size_t len, FILE *errout,
                          bool *at_eof)
{
    return compile_source(vm, mod, src, len, errout, at_eof, false);
}

static const char *base_name(const char *path, char *buf, size_t size)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 5 && !strcmp(b + n - 5, ".comb"))
        n -= 5;
    snprintf(buf, size, "%.*s", (int)n, b);
    return buf;
}

typedef struct NewModule {
    const char *path;
    VModule *m;
} NewModule;

/* A new module for the file at path, named by the file's base name. */
static VModule *module_of(VM *vm, const char *path)
{
    char name[256];
    return vm_module_new(vm, base_name(path, name, sizeof name), path);
}

static void new_module(VM *vm, void *ud)
{
    NewModule *nm = ud;
    nm->m = module_of(vm, nm->path);
}

static void register_module(VM *vm, VModule *m)
{
    char real[PATH_MAX];
    const char *key = realpath(m->path->data, real) ? real : m->path->data;
    vm_map_set(vm, vm->modules, v_obj(vm_str_cstr(vm, key)), v_obj(m));
}

static void register_job(VM *vm, void *m)
{
    register_module(vm, m);
}

static VModule *load_source(VM *vm, const char *src, size_t len, const char *path, FILE *errout,
                            bool eval)
{
    NewModule nm = {path, NULL};
    if (vm_protect(vm, new_module, &nm)) {
        fprintf(errout, "%s: out of memory\n", path);
        return NULL;
    }
    vm_push_root(vm, v_obj(nm.m));
    nm.m->main = compile_source(vm, nm.m, src, len, errout, NULL, eval);
    vm_pop_root(vm, 1);
    if (!nm.m->main || vm_protect(vm, register_job, nm.m))
        return NULL;
    return nm.m;
}

VModule *lc_load_source(VM *vm, const char *src, size_t len, const char *path, FILE *errout)
{
    return load_source(vm, src, len, path, errout, false);
}

VModule *lc_load_eval(VM *vm, const char *src, size_t len, const char *path, FILE *errout)
{
    return load_source(vm, src, len, path, errout, true);
}

/* The whole file, NUL-terminated, in a mem_alloc'd buffer of *size bytes
 * (*len of text); or NULL with errno set. */
static char *read_file(const char *path, size_t *len, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    /* room for a regular file at once (its size may change as it is read) */
    struct stat st;
    size_t cap = !fstat(fileno(f), &st) && S_ISREG(st.st_mode) && st.st_size < (1 << 30)
                     ? (size_t)st.st_size + 2 : 4096, n = 0;
    char *buf = mem_alloc(cap);
    int err = buf ? 0 : ENOMEM;
    while (buf) {
        n += fread(buf + n, 1, cap - 1 - n, f);
        if (n < cap - 1)
            break;
        char *more = mem_realloc(buf, cap, 2 * cap);
        if (!more) {
            err = ENOMEM;
            break;
        }
        buf = more;
        cap *= 2;
    }
    if (!err && ferror(f))
        err = EIO;
    fclose(f);
    if (err) {
        mem_free(buf, cap);
        errno = err;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    *size = cap;
    return buf;
}

typedef struct CacheJob {
    const char *path, *src;
    size_t len;
    VModule *m;
} CacheJob;

static void cache_get_job(VM *vm, void *ud)
{
    CacheJob *j = ud;
    j->m = module_of(vm, j->path);
    vm_push_root(vm, v_obj(j->m));
    j->m->main = lc_cache_get(vm, j->m, j->path);
    if (j->m->main)
        register_module(vm, j->m);
    vm_pop_root(vm, 1);
}

static void cache_put_job(VM *vm, void *ud)
{
    CacheJob *j = ud;
    lc_cache_put(vm, j->m, j->path, j->src, j->len);
}

/* The module of the file at path; cached: from its compiled form kept in
 * the cache if there, else compiled and then kept (lang/modcache.h). */
static VModule *load_file(VM *vm, const char *path, FILE *errout, bool cached)
{
    CacheJob j = {.path = path};
    /* out of memory for the cache's module: compiled as usual */
    if (cached && !vm_protect(vm, cache_get_job, &j) && j.m->main)
        return j.m;
    size_t size = 0;
    char *src = read_file(path, &j.len, &size);
    if (!src) {
        fprintf(errout, "comb: cannot read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    j.src = src;
    j.m = lc_load_source(vm, src, j.len, path, errout);
    if (j.m && cached)
        (void)vm_protect(vm, cache_put_job, &j);    /* no cache written: no matter */
    mem_free(src, size);
    return j.m;
}

VModule *lc_load_file(VM *vm, const char *path, FILE *errout)
{
    return load_file(vm, path, errout, false);
}

/* ---- import ----------------------------------------------------------- */

static bool is_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

/* dir of from (with its '/') + name (+ ".comb"), into buf. */
static void beside(const char *from, const char *name, bool add_ext, char *buf, size_t size)
{
    const char *slash = strrchr(from, '/');
    int dirlen = slash && from[0] != '<' ? (int)(slash - from + 1) : 0;
    snprintf(buf, size, "%.*s%s%s", dirlen, from, name, add_ext ? ".comb" : "");
}

static VModule *import_module(VM *vm, VStr *name, VModule *from)
{
    char rel[PATH_MAX], std[PATH_MAX], real[PATH_MAX];
    const char *n = name->data;
    if (strlen(n) != name->len || !name->len)
        vm_error(vm, "bad module name");
    bool ext = name->len > 5 && !strcmp(n + name->len - 5, ".comb");
    bool pathlike = strchr(n, '/') || ext;
    VModule *builtin = pathlike ? NULL : vm_native_module(vm, n, name->len);
    if (builtin)
        return builtin;
    beside(from->path->data, n, !pathlike, rel, sizeof rel);
    /* DIR/NAME without .comb is also a stdlib module's (cycle/dock). */
    snprintf(std, sizeof std, "%s/%s.comb", paths_stdlib(), n);
    const char *found = is_file(rel) ? rel : !ext && is_file(std) ? std : NULL;
    if (!found) {
        if (ext)
            vm_error(vm, "cannot find module \"%s\" (no file %s)", n, rel);
        vm_error(vm, "cannot find module \"%s\" (no file %s or %s)", n, rel, std);
    }
    Value hit;
    if (realpath(found, real) && vm_map_get(vm, vm->modules, v_obj(vm_str_cstr(vm, real)), &hit))
        return AS_MODULE(hit);
    VModule *m = load_file(vm, found, stderr, true);
    if (!m)
        vm_error(vm, "cannot load module \"%s\" (see the errors above)", n);
    return m;
}

void lc_install_import(VM *vm)
{
    vm->import = import_module;
}
