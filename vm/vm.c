/* vm: the VM's state, calls, errors and protected levels, and the run loop. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "store/mem.h"
#include "vm/chunkio.h"
#include "vm/natives.h"
#include "vm/place.h"
#include "vm/opcodes.h"
#include "vm/regex.h"
#include "vm/vm.h"

#define DEFAULT_SLOTS ((size_t)1 << 20)
#define DEFAULT_FRAMES 200000u
#define MAX_CLEVEL 200          /* vm_call nesting: natives calling comb */

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

volatile sig_atomic_t vm_poll_flag;

/* ---- life ------------------------------------------------------------- */

static void init_objects(VM *vm)
{
    vm->modules = vm_map_new(vm, 0);
    vm->re_cache = vm_map_new(vm, 0);
    vm_natives_init(vm);
}

VM *vm_new(const VmOptions *opt)
{
    VmOptions o = opt ? *opt : (VmOptions){0};
    VM *vm = mem_calloc(1, sizeof *vm);
    if (!vm)
        return NULL;
    size_t slots = o.stack_slots ? o.stack_slots : DEFAULT_SLOTS;
    vm->max_frames = o.max_frames ? o.max_frames : DEFAULT_FRAMES;
    vm->stack = mem_alloc(slots * sizeof(Value));
    vm->stack_end = vm->stack ? vm->stack + slots : NULL;
    vm->frames = mem_alloc(vm->max_frames * sizeof(VmFrame));
    vm->oom = mem_alloc(sizeof(VStr) + 14);
    vm->step_limited = o.step_limit != 0;
    vm->steps_left = o.step_limit;
    if (vm->step_limited)
        vm_poll_flag |= POLL_STEPS;
    vm->err = v_nil();
    vm_gc_stress(vm, getenv("COMB_GC_STRESS") && !strcmp(getenv("COMB_GC_STRESS"), "1"));
    if (!vm->stack || !vm->frames || !vm->oom || !vm_regex_init(vm)) {
        vm_free(vm);
        return NULL;
    }
    /* The out-of-memory message is made by hand: raising needs it. */
    memset(vm->oom, 0, sizeof(VStr));
    vm->oom->hdr.type = VT_STR;
    memcpy(vm->oom->chars, "out of memory", 14);
    vm->oom->data = vm->oom->chars;
    vm->oom->len = vm->oom->cap = vm->oom->used = 13;
    VmJump j;
    j.prev = NULL;
    vm->jump = &j;
    if (setjmp(j.buf)) {
        vm->jump = NULL;
        vm_free(vm);
        return NULL;
    }
    init_objects(vm);
    vm->jump = NULL;
    return vm;
}

void vm_free(VM *vm)
{
    if (!vm)
        return;
    vm_gc_free_all(vm);
    if (vm->re_gctx)
        vm_regex_fini(vm);
    mem_free(vm->natives, vm_nnatives * sizeof *vm->natives);
    mem_free(vm->handlers, vm->cap_handlers * sizeof *vm->handlers);
    mem_free(vm->roots, vm->cap_roots * sizeof *vm->roots);
    mem_free(vm->iters, vm->cap_iters * sizeof *vm->iters);
    mem_free(vm->oom, sizeof(VStr) + 14);
    mem_free(vm->frames, vm->max_frames * sizeof(VmFrame));
    mem_free(vm->stack, (size_t)(vm->stack_end - vm->stack) * sizeof(Value));
    mem_free(vm, sizeof *vm);
}

typedef struct ArgList {
    int argc;
    char **argv;
} ArgList;

static void set_args(VM *vm, void *ud)
{
    ArgList *a = ud;
    vm->args = vm_array_new(vm, (size_t)a->argc);
    for (int i = 0; i < a->argc; i++)
        vm_array_push(vm, vm->args, v_obj(vm_str_cstr(vm, a->argv[i])));
}

int vm_set_args(VM *vm, int argc, char **argv)
{
    ArgList a = {argc, argv};
    return vm_protect(vm, set_args, &a);
}

void vm_push_root(VM *vm, Value v)
{
    if (vm->nroots == vm->cap_roots) {
        size_t cap = vm->cap_roots ? 2 * vm->cap_roots : 16;
        Value *r = mem_realloc(vm->roots, vm->cap_roots * sizeof *r, cap * sizeof *r);
        if (!r)
            vm_throw(vm, v_obj(vm->oom));
        vm->roots = r;
        vm->cap_roots = cap;
    }
    vm->roots[vm->nroots++] = v;
}

void vm_iter_push(VM *vm, Value *slot, Value it)
{
    VHandle *h = AS_HANDLE(it);
    if (vm->niters == vm->cap_iters) {
        uint32_t cap = vm->cap_iters ? 2 * vm->cap_iters : 8;
        VmIter *a = mem_realloc(vm->iters, vm->cap_iters * sizeof *a, cap * sizeof *a);
        if (!a) {
            h->type->close(vm, h->data);
            vm_throw(vm, v_obj(vm->oom));
        }
        vm->iters = a;
        vm->cap_iters = cap;
    }
    vm->iters[vm->niters++] = (VmIter){slot, it};
}

void vm_iter_close(VM *vm, Value *level)
{
    while (vm->niters && vm->iters[vm->niters - 1].slot >= level) {
        VHandle *h = AS_HANDLE(vm->iters[--vm->niters].it);
        h->type->close(vm, h->data);
    }
}

void vm_pop_root(VM *vm, size_t n)
{
    vm->nroots -= n;
}

static void on_sigint(int sig)
{
    (void)sig;
    vm_poll_flag |= POLL_SIGINT;
}

void vm_install_sigint(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

/* ---- errors ----------------------------------------------------------- */

void vm_frame_pos(const VmFrame *f, VmPos *pos)
{
    const VProto *p = f->fn->p;
    size_t at = (size_t)(f->pc - p->code);
    *pos = at ? vm_chunk_pos(p, at - 1) : (VmPos){p->line, p->col};
}

const char *vm_frame_name(const VmFrame *f)
{
    if (f->native)
        return f->native->def->name;
    return f->fn->p->name ? f->fn->p->name->data : "fn";
}

static void trace_add(VM *vm, const VmFrame *f)
{
    VmTraceEntry *t = &vm->trace[vm->ntrace++];
    memset(t, 0, sizeof *t);    /* compared whole by vm_print_error */
    t->native = f->native;
    t->p = f->fn ? f->fn->p : NULL;
    if (t->p) {
        VmPos pos;
        vm_frame_pos(f, &pos);
        t->line = pos.line;
        t->col = pos.col;
    }
}

/* The frames at the time of the raise: the innermost and outermost halves
 * when there are more than fit. */
static void capture_trace(VM *vm)
{
    uint32_t n = vm->nframes, half = VM_TRACE_MAX / 2;
    vm->ntrace = 0;
    vm->err_line = 0;
    vm->trace_skipped = n > VM_TRACE_MAX ? n - VM_TRACE_MAX : 0;
    for (uint32_t i = n; i-- > 0;) {
        if (vm->trace_skipped && i < n - half && i >= half)
            continue;
        trace_add(vm, &vm->frames[i]);
    }
}

_Noreturn static void raise_error(VM *vm)
{
    if (!vm->jump) {
        fprintf(stderr, "comb: error outside any protected call\n");
        abort();
    }
    longjmp(vm->jump->buf, 1);
}

_Noreturn void vm_rethrow(VM *vm)
{
    raise_error(vm);
}

_Noreturn void vm_throw(VM *vm, Value err)
{
    vm->err = err;
    vm->err_is_interrupt = false;
    capture_trace(vm);
    raise_error(vm);
}

_Noreturn void vm_error(VM *vm, const char *fmt, ...)
{
    char msg[512];
    int n = 0;
    const VmFrame *top = vm->nframes ? &vm->frames[vm->nframes - 1] : NULL;
    if (top && top->native && top->native->def->name[0] != '_')    /* not an internal one */
        n = snprintf(msg, sizeof msg, "%s: ", top->native->def->name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    vm_throw(vm, v_obj(vm_str_cstr(vm, msg)));
}

_Noreturn void vm_error_at(VM *vm, uint32_t line, uint32_t col, const char *msg)
{
    vm->err = v_obj(vm_str_cstr(vm, msg));
    vm->err_is_interrupt = false;
    capture_trace(vm);
    int i = 0;
    while (i < vm->ntrace && !vm->trace[i].p)
        i++;
    if (i < vm->ntrace) {
        vm->trace[i].line = line;
        vm->trace[i].col = col;
    } else {
        vm->err_line = line;
        vm->err_col = col;
    }
    raise_error(vm);
}

_Noreturn static void interrupt(VM *vm, const char *why)
{
    vm->err = v_obj(vm_str_cstr(vm, why));
    capture_trace(vm);
    vm->err_is_interrupt = true;
    raise_error(vm);
}

_Noreturn void vm_interrupted(VM *vm)
{
    vm_poll_flag &= ~POLL_SIGINT;
    interrupt(vm, "interrupted");
}

/* Called on backward jumps and calls while vm_poll_flag is set. */
static void poll(VM *vm)
{
    vm_check_interrupt(vm);
    if (vm_poll_flag & POLL_CUT)
        vm_str_raise_cut(vm);
    if (vm->step_limited && vm->steps_left-- == 0)
        interrupt(vm, "step limit exceeded");
}

static void error_text(VM *vm, void *msg)
{
    *(VStr **)msg = vm_tostring(vm, vm->err);
}

void vm_check_interrupt(VM *vm)
{
    if (vm_poll_flag & POLL_SIGINT)
        vm_interrupted(vm);
}

void vm_print_error(VM *vm, FILE *out)
{
    VStr *msg = vm->oom;    /* if even the text of the error cannot be made */
    Value err = vm->err;
    vm_protect(vm, error_text, &msg);
    vm->err = err;
    const VmTraceEntry *at = NULL;
    for (int i = 0; i < vm->ntrace && !at; i++)
        if (vm->trace[i].p)
            at = &vm->trace[i];
    if (at)
        fprintf(out, "%s:%u:%u: ", at->p->module->path->data, at->line, at->col);
    else if (vm->err_line && vm->place_module)
        fprintf(out, "%s:%u:%u: ", vm->place_module->path->data, vm->err_line, vm->err_col);
    else
        fputs("comb: ", out);
    fwrite(msg->data, 1, msg->len, out);
    fputc('\n', out);
    if (at)
        vm_show_source_place(out, at->p->source, at->p->module, at->line, at->col);
    else if (vm->err_line && vm->place_module)
        vm_show_source_place(out, vm->place_module->source, vm->place_module, vm->err_line, vm->err_col);
    for (int i = 0; i < vm->ntrace;) {
        const VmTraceEntry *t = &vm->trace[i];
        if (i == VM_TRACE_MAX / 2 && vm->trace_skipped)
            fprintf(out, "  ... %u more\n", vm->trace_skipped);
        int same = 1;   /* a recursion shows as one line */
        while (i + same < vm->ntrace && i + same != VM_TRACE_MAX / 2 &&
               !memcmp(&vm->trace[i + same], t, sizeof *t))
            same++;
        if (t->native && t->native->def->name[0] == '_') {
            i += same;  /* the compiler's own (_pipe): not in the program's text */
            continue;
        }
        if (t->native)
            fprintf(out, "  in native %s", t->native->def->name);
        else
            fprintf(out, "  in %s at %s:%u:%u", t->p->name ? t->p->name->data : "fn",
                    t->p->module->path->data, t->line, t->col);
        if (same > 1)
            fprintf(out, " (%d times)", same);
        fputc('\n', out);
        i += same;
    }
}

int vm_error_status(VM *vm)
{
    return vm->err_is_interrupt && str_eq_cstr(AS_STR(vm->err), "interrupted") ? 130 : 1;
}

/* ---- upvalues --------------------------------------------------------- */

/* Open upvalues are kept sorted by slot, highest first. */
static VUpval *capture(VM *vm, Value *slot)
{
    VUpval **link = &vm->open_upvals;
    while (*link && (*link)->v > slot)
        link = &(*link)->next_open;
    if (*link && (*link)->v == slot)
        return *link;
    VUpval *u = vm_new_obj(vm, sizeof(VUpval), VT_UPVAL);
    u->v = slot;
    u->closed = v_nil();
    u->next_open = *link;
    *link = u;
    return u;
}

static void close_upvals(VM *vm, Value *level)
{
    while (vm->open_upvals && vm->open_upvals->v >= level) {
        VUpval *u = vm->open_upvals;
        u->closed = *u->v;
        u->v = &u->closed;
        vm->open_upvals = u->next_open;
    }
}

/* Leaving the registers from level up: their upvalues and iterations. */
static void close_level(VM *vm, Value *level)
{
    close_upvals(vm, level);
    vm_iter_close(vm, level);
}

static VFunc *make_closure(VM *vm, VProto *p, VFunc *enclosing, Value *base)
{
    VFunc *f = vm_func_new(vm, p);
    for (int i = 0; i < p->nupvals; i++)
        f->up[i] = p->upv_local[i] ? capture(vm, base + p->upv_index[i])
                                   : enclosing->up[p->upv_index[i]];
    return f;
}

/* ---- calls ------------------------------------------------------------ */

_Noreturn static void arity_error(VM *vm, const char *name, int want, int max, int got)
{
    if (max < 0)
        vm_error(vm, "%s expects at least %d argument%s, got %d", name, want, want == 1 ? "" : "s",
                 got);
    if (max != want)
        vm_error(vm, "%s expects %d to %d arguments, got %d", name, want, max, got);
    vm_error(vm, "%s expects %d argument%s, got %d", name, want, want == 1 ? "" : "s", got);
}

_Noreturn static void overflow_error(VM *vm)
{
    vm_error(vm, "stack overflow (more than %u nested calls)", vm->max_frames);
}

/* A frame for comb function f whose arguments are at base[0..argc).
 * Inlined: it is most of what a call costs. */
static inline __attribute__((always_inline)) VmFrame *push_frame(VM *vm, VFunc *f, Value *base, int argc)
{
    VProto *p = f->p;
    if (UNLIKELY(argc != p->nparams))
        arity_error(vm, p->name ? p->name->data : "fn", p->nparams, p->nparams, argc);
    if (UNLIKELY(vm->nframes >= vm->max_frames || base + p->maxregs > vm->stack_end))
        overflow_error(vm);
    for (Value *v = base + argc; v < base + p->maxregs; v++)
        v->type = VT_NIL;
    VmFrame *fr = &vm->frames[vm->nframes++];
    fr->fn = f;
    fr->native = NULL;
    fr->pc = p->code;
    fr->base = base;
    fr->top = base + p->maxregs;
    fr->k = p->k;
    fr->mvars = p->module->vars;
    fr->nhandlers = vm->nhandlers;
    fr->flags = 0;
    return fr;
}

static Value call_native(VM *vm, const VNative *n, Value *args, int argc)
{
    const VmNativeDef *d = n->def;
    if (UNLIKELY(argc < d->min_args || (d->max_args >= 0 && argc > d->max_args)))
        arity_error(vm, d->name, d->min_args, d->max_args, argc);
    if (UNLIKELY(vm->nframes >= vm->max_frames))
        overflow_error(vm);
    VmFrame *fr = &vm->frames[vm->nframes++];
    fr->fn = NULL;
    fr->native = n;
    fr->pc = NULL;
    fr->base = args;
    fr->top = args + argc;
    fr->nhandlers = vm->nhandlers;
    fr->flags = 0;
    Value r = d->fn(vm, argc, args);
    vm->nframes--;
    return r;
}

static Value execute(VM *vm);

/* Calls slot[0] with the argc values after it, from C. */
static Value call_at(VM *vm, Value *slot, int argc)
{
    if (IS_FUNC(slot[0])) {
        VmFrame *f = push_frame(vm, AS_FUNC(slot[0]), slot + 1, argc);
        f->flags = FRAME_ENTRY;
        return execute(vm);
    }
    if (slot[0].type == VT_NATIVE)
        return call_native(vm, AS_NATIVE(slot[0]), slot + 1, argc);
    vm_error(vm, "cannot call %s", v_type_name(slot[0]));
}

/* An error reached the level clevel: if a try of this level is open, unwind
 * to it and return true (the loop goes on from its catch block). */
static bool catch_here(VM *vm, uint32_t entry_frame)
{
    if (vm->err_is_interrupt || !vm->nhandlers)
        return false;
    VmHandler *h = &vm->handlers[vm->nhandlers - 1];
    if (h->clevel != vm->clevel || h->frame < entry_frame)
        return false;
    vm->nhandlers--;
    VmFrame *f = &vm->frames[h->frame];
    close_level(vm, f->base + h->reg);
    vm->nframes = h->frame + 1;
    vm->nroots = h->nroots;
    f->pc = h->pc;
    f->base[h->reg] = vm->err;
    vm->err = v_nil();
    vm->ntrace = 0;
    return true;
}

/* Runs slot[0](slot[1..argc]) as a protected level: 0 and *out, or -1 when
 * an error was not caught in it (vm->err holds it; the stack is unwound). */
static int protected_call(VM *vm, Value *slot, int argc, Value *out)
{
    VmJump j;
    uint32_t nframes = vm->nframes, nhandlers = vm->nhandlers;
    size_t nroots = vm->nroots;
    volatile bool resumed = false;
    int status = 0;
    j.prev = vm->jump;
    vm->jump = &j;
    vm->clevel++;
    while (setjmp(j.buf)) {
        if (!catch_here(vm, nframes)) {
            close_level(vm, slot);
            vm->nframes = nframes;
            vm->nhandlers = nhandlers;
            vm->nroots = nroots;
            status = -1;
            goto done;
        }
        resumed = true;
    }
    *out = resumed ? execute(vm) : call_at(vm, slot, argc);
done:
    vm->jump = j.prev;
    vm->clevel--;
    return status;
}

/* Where C may put a call's function and arguments: above every frame. */
static Value *free_slot(VM *vm, int argc)
{
    Value *slot = vm->nframes ? vm->frames[vm->nframes - 1].top : vm->stack;
    if (slot + 1 + argc > vm->stack_end)
        overflow_error(vm);
    return slot;
}

int vm_pcall(VM *vm, Value fn, int argc, const Value *argv, Value *result)
{
    VmJump j;
    j.prev = vm->jump;
    vm->jump = &j;
    if (setjmp(j.buf)) {    /* no room on the stack for the call itself */
        vm->jump = j.prev;
        return -1;
    }
    Value *slot = free_slot(vm, argc);
    vm->jump = j.prev;
    slot[0] = fn;
    for (int i = 0; i < argc; i++)
        slot[1 + i] = argv[i];
    return protected_call(vm, slot, argc, result);
}

Value vm_call(VM *vm, Value fn, int argc, const Value *argv)
{
    if (vm->clevel >= MAX_CLEVEL)
        vm_error(vm, "calls from natives nested too deeply");
    Value *slot = free_slot(vm, argc);
    slot[0] = fn;
    for (int i = 0; i < argc; i++)
        slot[1 + i] = argv[i];
    Value r;
    if (protected_call(vm, slot, argc, &r))
        raise_error(vm);
    return r;
}

/* ---- modules ---------------------------------------------------------- */

static void run_module(VM *vm, VModule *m)
{
    if (m->state == MOD_LOADED)
        return;
    if (m->state == MOD_RUNNING)
        vm_error(vm, "circular import of '%s'", m->name->data);
    if (vm->clevel >= MAX_CLEVEL)
        vm_error(vm, "imports nested too deeply");
    Value *slot = free_slot(vm, 0), r;
    *slot = v_obj(vm_func_new(vm, m->main));
    m->state = MOD_RUNNING;
    if (protected_call(vm, slot, 0, &r)) {
        m->state = MOD_COMPILED;    /* a later import tries again */
        raise_error(vm);
    }
    m->state = MOD_LOADED;
    m->main = NULL;
}

static void run_module_cb(VM *vm, void *m)
{
    run_module(vm, m);
}

int vm_run_module(VM *vm, VModule *m)
{
    return vm_protect(vm, run_module_cb, m);
}

int vm_protect(VM *vm, void (*fn)(VM *vm, void *ud), void *ud)
{
    VmJump j;
    int status = 0;
    j.prev = vm->jump;
    vm->jump = &j;
    if (setjmp(j.buf))
        status = -1;
    else
        fn(vm, ud);
    vm->jump = j.prev;
    return status;
}

static VModule *import(VM *vm, VStr *name, VModule *from)
{
    if (!vm->import)
        vm_error(vm, "import is not available here");
    VModule *m = vm->import(vm, name, from);
    run_module(vm, m);
    return m;
}

static Value module_get(VM *vm, VModule *m, Value key)
{
    if (!IS_STR(key))
        vm_error(vm, "module '%s' is read by name, not by %s", m->name->data, v_type_name(key));
    Value *slot = vm_map_ref(m->symbols, key);
    if (!slot || !m->exported[slot->as.i])
        vm_error(vm, "module '%s' has no export '%.*s'", m->name->data, (int)AS_STR(key)->len,
                 AS_STR(key)->data);
    if (m->vars[slot->as.i].type == VT_UNDEF)
        vm_error(vm, "'%.*s' is used before its definition", (int)AS_STR(key)->len,
                 AS_STR(key)->data);
    return m->vars[slot->as.i];
}

/* ---- the loop's slow paths -------------------------------------------- */

_Noreturn static void type_error2(VM *vm, const char *op, Value a, Value b)
{
    vm_error(vm, OPS_TYPES_FMT, op, v_type_name(a), v_type_name(b));
}

static void arith_slow(VM *vm, int op, Value a, Value b, Value *dst)
{
    Value r;
    ArithStatus st = vm_arith(vm, op, a, b, &r);
    if (st == AR_OK)
        *dst = r;
    else if (st != AR_TYPES)
        vm_error(vm, "%s", ops_message[st]);
    else
        type_error2(vm, ops_arith_sym[op], a, b);
}

static bool less_slow(VM *vm, Value a, Value b, bool or_equal)
{
    bool r;
    if (vm_less(a, b, or_equal, &r) != AR_OK)
        type_error2(vm, or_equal ? "<=" : "<", a, b);
    return r;
}

static Value negate_slow(VM *vm, Value a)
{
    Value r;
    ArithStatus st = vm_negate(a, &r);
    if (st == AR_TYPES)
        vm_error(vm, OPS_UNARY_FMT, "-", v_type_name(a));
    if (st != AR_OK)
        vm_error(vm, "%s", ops_message[st]);
    return r;
}

static int64_t index_of(VM *vm, Value key, size_t len, const char *what)
{
    if (!IS_INT(key))
        vm_error(vm, "%s index must be an int, got %s", what, v_type_name(key));
    if (key.as.i < 0 || (uint64_t)key.as.i >= len)
        vm_error(vm, "index %lld out of range (%s of length %zu)", (long long)key.as.i, what,
                 len);
    return key.as.i;
}

static Value index_get(VM *vm, Value c, Value key)
{
    switch (c.type) {
    case VT_ARRAY:
        return AS_ARRAY(c)->items[index_of(vm, key, AS_ARRAY(c)->len, "array")];
    case VT_MAP: {
        Value *v = vm_map_ref(AS_MAP(c), key);
        return v ? *v : v_nil();
    }
    case VT_STR:
        return v_int((unsigned char)AS_STR(c)->data[index_of(vm, key, AS_STR(c)->len, "string")]);
    case VT_MODULE:
        return module_get(vm, AS_MODULE(c), key);
    default:
        vm_error(vm, "cannot index %s", v_type_name(c));
    }
}

static void index_set(VM *vm, Value c, Value key, Value v)
{
    switch (c.type) {
    case VT_ARRAY:
        AS_ARRAY(c)->items[index_of(vm, key, AS_ARRAY(c)->len, "array")] = v;
        return;
    case VT_MAP:
        vm_map_set(vm, AS_MAP(c), key, v);
        return;
    case VT_STR:
        vm_error(vm, "cannot assign into a string: strings are immutable");
    default:
        vm_error(vm, "cannot assign into %s", v_type_name(c));
    }
}

static int64_t length(VM *vm, Value v)
{
    switch (v.type) {
    case VT_STR:
        return (int64_t)AS_STR(v)->len;
    case VT_ARRAY:
        return (int64_t)vm_array_len(v);
    case VT_MAP:
        return (int64_t)AS_MAP(v)->live;
    default:
        vm_error(vm, "len: argument 1 must be a string, array or map, got %s", v_type_name(v));
    }
}

/* Checks that ra[0] can be iterated; a handle with an iter hook is
 * replaced by the cursor it gives, closed with the loop (vm_iter_push). */
static void iter_begin(VM *vm, Value *ra)
{
    Value c = ra[0];
    if (c.type == VT_ARRAY || c.type == VT_MAP || c.type == VT_STR ||
        (c.type == VT_HANDLE && AS_HANDLE(c)->type->next))
        return;
    if (c.type != VT_HANDLE || !AS_HANDLE(c)->type->iter)
        vm_error(vm, "cannot iterate over %s", v_type_name(c));
    ra[0] = AS_HANDLE(c)->type->iter(vm, c);
    if (AS_HANDLE(ra[0])->type->close)
        vm_iter_push(vm, ra, ra[0]);
}

/* The next element of ra[0] at cursor ra[1] into ra[2] (and ra[3] when two
 * loop variables); false at the end. */
static bool iter_next(VM *vm, Value *ra, bool two)
{
    Value c = ra[0];
    int64_t i = ra[1].as.i;
    switch (c.type) {
    case VT_ARRAY:
        if ((uint64_t)i >= AS_ARRAY(c)->len)
            return false;
        ra[2 + two] = AS_ARRAY(c)->items[i];
        break;
    case VT_STR:
        if ((uint64_t)i >= AS_STR(c)->len)
            return false;
        ra[2 + two] = v_int((unsigned char)AS_STR(c)->data[i]);
        break;
    case VT_MAP: {
        size_t pos = (size_t)i;
        Value k, v;
        if (!vm_map_next(AS_MAP(c), &pos, &k, &v))
            return false;
        ra[2] = k;
        if (two)
            ra[3] = v;
        ra[1].as.i = (int64_t)pos;
        return true;
    }
    default: {
        VHandle *h = AS_HANDLE(c);
        Value a = v_nil(), b = v_nil();
        if (!h->type->next(vm, h->data, &ra[1].as.i, &a, &b))
            return false;
        ra[2] = a;
        if (two)
            ra[3] = b;
        return true;
    }
    }
    if (two)
        ra[2] = v_int(i);
    ra[1].as.i = i + 1;
    return true;
}

_Noreturn static void undefined_error(VM *vm, VModule *m, size_t slot)
{
    Value k, v;
    size_t pos = 0;
    while (vm_map_next(m->symbols, &pos, &k, &v))
        if ((size_t)v.as.i == slot)
            vm_error(vm, "'%s' is used before its definition", AS_STR(k)->data);
    vm_error(vm, "variable used before its definition");
}

static void push_handler(VM *vm, uint32_t frame, int reg, const Instr *target)
{
    if (vm->nhandlers == vm->cap_handlers) {
        uint32_t cap = vm->cap_handlers ? 2 * vm->cap_handlers : 16;
        vm->handlers = vm_realloc(vm, vm->handlers, vm->cap_handlers * sizeof(VmHandler),
                                  cap * sizeof(VmHandler));
        vm->cap_handlers = cap;
    }
    VmHandler *h = &vm->handlers[vm->nhandlers++];
    h->frame = frame;
    h->clevel = vm->clevel;
    h->reg = (uint8_t)reg;
    h->pc = target;
    h->nroots = vm->nroots;
}

/* ---- the loop --------------------------------------------------------- */

#if defined(__GNUC__) && !defined(VM_SWITCH_DISPATCH)
#define VM_GOTO 1
#endif

#ifdef VM_GOTO
#define NEXT()                      \
    do {                            \
        i = *pc++;                  \
        goto *labels[OP(i)];        \
    } while (0)
#define CASE(name) L_##name:
#else
#define NEXT() goto next
#define CASE(name) case OP_##name:
#endif

#define R(x) (base + (x))
#define RA R(GA(i))
#define RB R(GB(i))
#define RC R(GC(i))
#define KB (k + GB(i))
#define KC (k + GC(i))
#define SAVEPC() (frame->pc = pc)
#define PROTECT(x)   \
    do {             \
        SAVEPC();    \
        x;           \
    } while (0)
/* A safe point: everything live is in registers, so the collector may run. */
#define GCSTEP()                                    \
    do {                                            \
        if (UNLIKELY(vm->debt > vm->gc_limit))      \
            vm_gc(vm);                              \
    } while (0)
#define POLL()                                      \
    do {                                            \
        if (UNLIKELY(vm_poll_flag))                 \
            PROTECT(poll(vm));                      \
    } while (0)
#define LOAD_FRAME()                                \
    do {                                            \
        base = frame->base;                         \
        pc = frame->pc;                             \
        k = frame->k;                               \
        mvars = frame->mvars;                       \
    } while (0)
/* A test's result c: take the JMP that follows if c == k, else skip it. */
#define COND(c)                                     \
    do {                                            \
        if ((c) != (bool)GC(i))                     \
            pc++;                                   \
        else                                        \
            pc += GsJ(*pc) + 1;                     \
        NEXT();                                     \
    } while (0)

/* Binary arithmetic: ops.h's int and float operations inline (aop is a
 * constant, so each case keeps only its own), the rest in arith_slow. */
#define ARITH(name, aop, rhs)                                                       \
    CASE(name)                                                                      \
    {                                                                               \
        const Value *rb = RB, *rc = rhs;                                            \
        int64_t r;                                                                  \
        double f;                                                                   \
        if (LIKELY(rb->type == VT_INT && rc->type == VT_INT) &&                     \
            ops_int(aop, rb->as.i, rc->as.i, &r) == AR_OK) {                        \
            RA->type = VT_INT;                                                      \
            RA->as.i = r;                                                           \
        } else if (rb->type == VT_FLOAT && rc->type == VT_FLOAT &&                  \
                   ops_float(aop, rb->as.f, rc->as.f, &f) == AR_OK) {               \
            *RA = v_float(f);                                                       \
        } else if (aop == ARITH_ADD && rb->type == VT_STR && rc->type == VT_STR) {  \
            PROTECT(*RA = v_obj(vm_str_concat(vm, AS_STR(*rb), AS_STR(*rc))));      \
            GCSTEP();                                                               \
        } else {                                                                    \
            PROTECT(arith_slow(vm, aop, *rb, *rc, RA));                             \
            GCSTEP();                                                               \
        }                                                                           \
        NEXT();                                                                     \
    }

/* R[A] against the immediate sB: ints inline, the rest as x < y or x <= y. */
#define CMPI(name, op, x, y, or_equal)                                              \
    CASE(name)                                                                      \
    {                                                                               \
        Value *ra = RA;                                                             \
        bool c;                                                                     \
        if (LIKELY(ra->type == VT_INT))                                             \
            c = ra->as.i op GsB(i);                                                 \
        else                                                                        \
            PROTECT(c = less_slow(vm, x, y, or_equal));                             \
        COND(c);                                                                    \
    }

/* Each instruction ends in its own indirect jump (threaded code) only if
 * GCC does not merge those tails into one: hence no-crossjumping and, as
 * the GCC manual advises for computed gotos, no-gcse. */
#if defined(VM_GOTO) && !defined(__clang__)
__attribute__((optimize("no-crossjumping", "no-gcse")))
#endif
static Value execute(VM *vm)
{
#ifdef VM_GOTO
    static const void *const labels[OP__COUNT] = {
#define X(name, fmt, doc) &&L_##name,
        VM_OPCODES(X)
#undef X
    };
#endif
    VmFrame *frame = &vm->frames[vm->nframes - 1];
    Value *base;
    const Instr *pc;
    const Value *k;
    Value *mvars;
    Instr i;
    Value ret;
    LOAD_FRAME();
#ifdef VM_GOTO
    NEXT();
#else
next:
    i = *pc++;
    switch (OP(i)) {
#endif
    CASE(MOVE)
    {
        *RA = *RB;
        NEXT();
    }
    CASE(LOADK)
    {
        *RA = k[GBx(i)];
        NEXT();
    }
    CASE(LOADI)
    {
        RA->type = VT_INT;
        RA->as.i = GsBx(i);
        NEXT();
    }
    CASE(LOADNIL)
    {
        Value *ra = RA;
        for (int n = GB(i); n >= 0; n--)
            ra[n].type = VT_NIL;
        NEXT();
    }
    CASE(LOADTRUE)
    {
        *RA = v_bool(true);
        NEXT();
    }
    CASE(LOADFALSE)
    {
        *RA = v_bool(false);
        NEXT();
    }
    CASE(LFALSESKIP)
    {
        *RA = v_bool(false);
        pc++;
        NEXT();
    }
    CASE(GETMOD)
    {
        Value v = mvars[GBx(i)];
        if (UNLIKELY(v.type == VT_UNDEF))
            PROTECT(undefined_error(vm, frame->fn->p->module, (size_t)GBx(i)));
        *RA = v;
        NEXT();
    }
    CASE(SETMOD)
    {
        mvars[GBx(i)] = *RA;
        NEXT();
    }
    CASE(GETUPV)
    {
        *RA = *frame->fn->up[GB(i)]->v;
        NEXT();
    }
    CASE(SETUPV)
    {
        *frame->fn->up[GB(i)]->v = *RA;
        NEXT();
    }
    CASE(GETNATIVE)
    {
        *RA = v_obj(vm->natives[GBx(i)]);
        NEXT();
    }
    CASE(CLOSURE)
    {
        PROTECT(*RA = v_obj(make_closure(vm, frame->fn->p->protos[GBx(i)], frame->fn, base)));
        GCSTEP();
        NEXT();
    }
    CASE(CLOSE)
    {
        close_level(vm, RA);
        NEXT();
    }
    CASE(NEWARRAY)
    {
        PROTECT(*RA = v_obj(vm_array_new(vm, (size_t)GB(i))));
        GCSTEP();
        NEXT();
    }
    CASE(NEWMAP)
    {
        PROTECT(*RA = v_obj(vm_map_new(vm, (size_t)GB(i))));
        GCSTEP();
        NEXT();
    }
    CASE(APPEND)
    {
        VArray *a = AS_ARRAY(*RA);
        int n = GB(i);
        PROTECT(vm_array_reserve(vm, a, a->len + (size_t)n));
        memcpy(a->items + a->len, RA + 1, (size_t)n * sizeof(Value));
        a->len += (size_t)n;
        GCSTEP();
        NEXT();
    }
    CASE(GETINDEX)
    {
        Value *rb = RB, *rc = RC;
        if (rb->type == VT_ARRAY && rc->type == VT_INT && (uint64_t)rc->as.i < AS_ARRAY(*rb)->len) {
            *RA = AS_ARRAY(*rb)->items[rc->as.i];
        } else if (rb->type == VT_MAP) {
            VMap *m = AS_MAP(*rb);
            Value *v;
            if ((m->hdr.flags & MAP_DENSE) && rc->type == VT_INT && (uint64_t)rc->as.i < m->count)
                v = &m->vals[rc->as.i];
            else
                v = vm_map_ref(m, *rc);
            *RA = v ? *v : v_nil();
        } else {
            PROTECT(*RA = index_get(vm, *rb, *rc));
        }
        NEXT();
    }
    CASE(GETINDEXK)
    {
        Value *rb = RB;
        if (rb->type == VT_MAP) {
            Value *v = vm_map_ref(AS_MAP(*rb), *KC);
            *RA = v ? *v : v_nil();
        } else {
            PROTECT(*RA = index_get(vm, *rb, *KC));
        }
        NEXT();
    }
    CASE(GETINDEXI)
    {
        Value *rb = RB;
        if (rb->type == VT_ARRAY && (size_t)GC(i) < AS_ARRAY(*rb)->len)
            *RA = AS_ARRAY(*rb)->items[GC(i)];
        else
            PROTECT(*RA = index_get(vm, *rb, v_int(GC(i))));
        NEXT();
    }
    CASE(SETINDEX)
    {
        Value *ra = RA, *rb = RB;
        if (ra->type == VT_ARRAY && rb->type == VT_INT && (uint64_t)rb->as.i < AS_ARRAY(*ra)->len) {
            AS_ARRAY(*ra)->items[rb->as.i] = *RC;
        } else if (ra->type == VT_MAP && (AS_MAP(*ra)->hdr.flags & MAP_DENSE) && rb->type == VT_INT &&
                   (uint64_t)rb->as.i <= AS_MAP(*ra)->count && AS_MAP(*ra)->count < AS_MAP(*ra)->cap) {
            VMap *m = AS_MAP(*ra);      /* a dense map: set, or append with room */
            m->vals[rb->as.i] = *RC;
            if ((uint64_t)rb->as.i == m->count) {
                m->count++;
                m->live++;
            }
        } else {
            PROTECT(index_set(vm, *ra, *rb, *RC));
            GCSTEP();
        }
        NEXT();
    }
    CASE(SETINDEXK)
    {
        PROTECT(index_set(vm, *RA, *KB, *RC));
        GCSTEP();
        NEXT();
    }
    ARITH(ADD, ARITH_ADD, RC)
    ARITH(SUB, ARITH_SUB, RC)
    ARITH(MUL, ARITH_MUL, RC)
    ARITH(DIV, ARITH_DIV, RC)
    ARITH(MOD, ARITH_MOD, RC)
    ARITH(ADDK, ARITH_ADD, KC)
    ARITH(SUBK, ARITH_SUB, KC)
    ARITH(MULK, ARITH_MUL, KC)
    ARITH(DIVK, ARITH_DIV, KC)
    ARITH(MODK, ARITH_MOD, KC)
    CASE(ADDI)
    {
        Value *rb = RB;
        int64_t r;
        if (LIKELY(rb->type == VT_INT) && ops_int(ARITH_ADD, rb->as.i, (int64_t)GsC(i), &r) == AR_OK) {
            RA->type = VT_INT;
            RA->as.i = r;
        } else {
            PROTECT(arith_slow(vm, ARITH_ADD, *rb, v_int(GsC(i)), RA));
        }
        NEXT();
    }
    CASE(UNM)
    {
        Value *rb = RB;
        int64_t r;
        if (rb->type == VT_INT && ops_int_neg(rb->as.i, &r) == AR_OK)
            *RA = v_int(r);
        else
            PROTECT(*RA = negate_slow(vm, *rb));
        NEXT();
    }
    CASE(NOT)
    {
        *RA = v_bool(!v_truthy(*RB));
        NEXT();
    }
    CASE(LEN)
    {
        Value *rb = RB;
        int64_t n;
        PROTECT(n = length(vm, *rb));
        *RA = v_int(n);
        NEXT();
    }
    CASE(MATCH)
    {
        bool m;
        PROTECT(m = vm_match(vm, *RB, *RC));
        *RA = v_bool(m);
        GCSTEP();
        NEXT();
    }
    CASE(MATCHK)
    {
        bool m;
        PROTECT(m = vm_match(vm, *RB, *KC));
        *RA = v_bool(m);
        NEXT();
    }
    CASE(EQ)
    {
        Value *ra = RA, *rb = RB;
        bool c = ra->type == VT_INT && rb->type == VT_INT ? ra->as.i == rb->as.i : v_equal(*ra, *rb);
        COND(c);
    }
    CASE(LT)
    {
        Value *ra = RA, *rb = RB;
        bool c;
        if (ra->type == VT_INT && rb->type == VT_INT)
            c = ra->as.i < rb->as.i;
        else
            PROTECT(c = less_slow(vm, *ra, *rb, false));
        COND(c);
    }
    CASE(LE)
    {
        Value *ra = RA, *rb = RB;
        bool c;
        if (ra->type == VT_INT && rb->type == VT_INT)
            c = ra->as.i <= rb->as.i;
        else
            PROTECT(c = less_slow(vm, *ra, *rb, true));
        COND(c);
    }
    CASE(EQK)
    {
        const Value *kb = KB;
        if (kb->type == VT_NIL)     /* x == nil: the common case, a type test */
            COND(RA->type == VT_NIL);
        COND(v_equal(*RA, *kb));
    }
    CASE(EQI)
    {
        Value *ra = RA;
        COND(ra->type == VT_INT ? ra->as.i == GsB(i) : v_equal(*ra, v_int(GsB(i))));
    }
    CMPI(LTI, <, *ra, v_int(GsB(i)), false)
    CMPI(LEI, <=, *ra, v_int(GsB(i)), true)
    CMPI(GTI, >, v_int(GsB(i)), *ra, false)
    CMPI(GEI, >=, v_int(GsB(i)), *ra, true)
    CASE(TEST)
    {
        COND(v_truthy(*RA));
    }
    CASE(JMP)
    {
        int off = GsJ(i);
        if (off < 0)
            POLL();     /* before moving, so an interrupt names the loop */
        pc += off;
        NEXT();
    }
    CASE(FORPREP)
    {
        Value *ra = RA;
        if (UNLIKELY(ra[0].type != VT_INT || ra[1].type != VT_INT))
            PROTECT(vm_error(vm, "range bounds must be ints, got %s and %s",
                             v_type_name(ra[0]), v_type_name(ra[1])));
        if (ra[0].as.i >= ra[1].as.i)
            pc += GsBx(i);
        else
            ra[2] = ra[0];
        NEXT();
    }
    CASE(FORLOOP)
    {
        Value *ra = RA;
        int64_t n = ra[0].as.i + 1;     /* < limit, so no overflow */
        if (n < ra[1].as.i) {
            ra[0].as.i = n;
            ra[2].type = VT_INT;
            ra[2].as.i = n;
            if (UNLIKELY((n & 1023) == 0))  /* a range ends: polling now and then is enough */
                POLL();
            pc -= GsBx(i);
        }
        NEXT();
    }
    CASE(ITERPREP)
    {
        Value *ra = RA;
        PROTECT(iter_begin(vm, ra));
        GCSTEP();
        ra[1] = v_int(0);
        pc += GsBx(i);
        NEXT();
    }
    CASE(ITERLOOP)
    {
        Value *ra = RA;
        bool more;
        if (ra->type == VT_ARRAY) {
            VArray *a = AS_ARRAY(*ra);
            more = (uint64_t)ra[1].as.i < a->len;
            if (more)
                ra[2] = a->items[ra[1].as.i++];
        } else {
            PROTECT(more = iter_next(vm, ra, false));
            GCSTEP();
        }
        if (more) {
            POLL();
            pc -= GsBx(i);
        }
        NEXT();
    }
    CASE(ITERLOOP2)
    {
        bool more;
        PROTECT(more = iter_next(vm, RA, true));
        GCSTEP();
        if (more) {
            POLL();
            pc -= GsBx(i);
        }
        NEXT();
    }
    CASE(CALL)
    {
        Value *ra = RA;
        int argc = GB(i);
        POLL();
        SAVEPC();
        if (LIKELY(ra->type == VT_FUNC)) {
            frame = push_frame(vm, AS_FUNC(*ra), ra + 1, argc);
            LOAD_FRAME();
        } else if (ra->type == VT_NATIVE) {
            Value r = call_native(vm, AS_NATIVE(*ra), ra + 1, argc);
            *ra = r;
            GCSTEP();
        } else {
            vm_error(vm, "cannot call %s", v_type_name(*ra));
        }
        NEXT();
    }
    CASE(CALLN)
    {
        /* GETNATIVE and CALL in one dispatch: most calls in a loop are of natives */
        Value *ra = RA;
        VNative *n = vm->natives[GC(i)];
        POLL();
        SAVEPC();
        *ra = v_obj(n);
        Value r = call_native(vm, n, ra + 1, GB(i));
        *ra = r;
        GCSTEP();
        NEXT();
    }
    CASE(RETURN)
    {
        ret = *RA;
        goto do_return;
    }
    CASE(RETURN0)
    {
        ret = v_nil();
    do_return:
        if (vm->open_upvals && vm->open_upvals->v >= base)
            close_upvals(vm, base);
        if (vm->niters && vm->iters[vm->niters - 1].slot >= base)
            vm_iter_close(vm, base);
        vm->nhandlers = frame->nhandlers;
        vm->nframes--;
        base[-1] = ret;
        if (frame->flags & FRAME_ENTRY)
            return ret;
        frame--;
        LOAD_FRAME();
        NEXT();
    }
    CASE(TRY)
    {
        PROTECT(push_handler(vm, vm->nframes - 1, GA(i), pc + GsBx(i)));
        NEXT();
    }
    CASE(ENDTRY)
    {
        vm->nhandlers--;
        NEXT();
    }
    CASE(IMPORT)
    {
        VModule *m;
        PROTECT(m = import(vm, AS_STR(k[GBx(i)]), frame->fn->p->module));
        *RA = v_obj(m);
        GCSTEP();
        NEXT();
    }
#ifndef VM_GOTO
    default:
        abort();
    }
#endif
}
