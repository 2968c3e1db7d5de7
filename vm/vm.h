/* vm: the comb virtual machine: its state, calls, errors and the run loop.
 *
 * Errors: every runtime error longjmps to the innermost protected entry
 * (vm_pcall, or the level a native opened with vm_call); a try/catch in the
 * comb code of that level catches it there, otherwise it goes on outwards.
 * C code between a raise and its catch is skipped, so natives must not hold
 * resources that only a C cleanup would free across calls that can raise:
 * keep them in objects the collector owns (strings, handles). */
#ifndef COMB_VM_H
#define COMB_VM_H

#include <setjmp.h>
#include <signal.h>
#include <stdio.h>

#include "vm/object.h"
#include "vm/ops.h"

/* One call frame: a comb function (fn) or a native (native). */
typedef struct VmFrame {
    VFunc *fn;
    const VNative *native;
    const uint32_t *pc;     /* comb: next instruction (saved on calls and raises) */
    Value *base;            /* R[0] (comb) or argv[0] (native) */
    Value *top;             /* end of the slots this frame uses */
    const Value *k;         /* comb: fn's constants and module variables, */
    Value *mvars;           /* kept here for the return to the frame */
    uint32_t nhandlers;     /* try handlers open when the frame was entered */
    uint16_t flags;
} VmFrame;

/* An open iteration whose cursor holds resources, and the register it
 * runs from: closed when that register's level is left. */
typedef struct VmIter {
    Value *slot;
    Value it;
} VmIter;

#define FRAME_ENTRY 1       /* returning from it leaves the run loop */

/* An open `try`: where to go, and what to restore, when an error arrives. */
typedef struct VmHandler {
    uint32_t frame;         /* index of the frame that ran TRY */
    int clevel;             /* the C level (vm_call nesting) it belongs to */
    uint8_t reg;            /* register that receives the error */
    const uint32_t *pc;     /* the catch block */
    size_t nroots;          /* vm_push_root depth to restore */
} VmHandler;

/* A position of the traceback, kept when an error is raised. */
typedef struct VmTraceEntry {
    VProto *p;              /* NULL: a native */
    const VNative *native;
    uint32_t line, col;
} VmTraceEntry;

#define VM_TRACE_MAX 24

/* Where a raise goes: one per protected level. */
typedef struct VmJump {
    jmp_buf buf;
    struct VmJump *prev;
} VmJump;

typedef struct VmOptions {
    size_t stack_slots;     /* value stack size; 0: default (1M) */
    uint32_t max_frames;    /* call depth limit; 0: default (200000) */
    uint64_t step_limit;    /* raise after about this many loop/call steps; 0: none */
} VmOptions;

/* A module's variables (vars[]) may grow only while none of its code runs
 * (compiling into it: the prompt), as frames keep a pointer to them. */

/* The module loader `import` calls: resolve name relative to the importing
 * module's path and return the module, compiling it (state MOD_COMPILED, its
 * main function in main) the first time; or raise. Set by the front end
 * (lang/), which the VM knows nothing of. */
typedef VModule *(*vm_import_fn)(VM *vm, VStr *name, VModule *from);

/* Object blocks up to VM_SMALL_MAX bytes come in classes of 16 bytes and
 * are kept for reuse when freed (up to a bound), sparing malloc and the
 * allocation hook's counters on the commonest allocations. */
#define VM_SMALL_MAX 64
#define VM_SMALL_CLASSES (VM_SMALL_MAX / 16)

struct VM {
    /* the stack and frames (fixed size: slots never move, so natives'
     * argv and open upvalues stay valid) */
    Value *stack, *stack_end;
    VmFrame *frames;
    uint32_t nframes, max_frames;
    VmHandler *handlers;
    uint32_t nhandlers, cap_handlers;
    VUpval *open_upvals;
    VmIter *iters;          /* open iterations, by slot (vm_iter_push) */
    uint32_t niters, cap_iters;

    /* the collector */
    Obj *objects;
    size_t bytes;           /* bytes held by objects */
    size_t debt;            /* bytes allocated since the last collection */
    size_t gc_limit;        /* collect at a safe point once debt passes this */
    bool gc_stress;         /* limit 0: collect at every safe point after an allocation */
    bool gc_running;
    Obj **gray;
    size_t ngray, cap_gray;
    bool gray_overflow;
    void *small[VM_SMALL_CLASSES];  /* freed small object blocks, for reuse */
    uint32_t nsmall[VM_SMALL_CLASSES];
    Value *roots;           /* vm_push_root */
    size_t nroots, cap_roots;

    /* errors */
    VmJump *jump;
    int clevel;
    Value err;              /* the error value being raised */
    VStr *oom;              /* "out of memory", made in advance */
    bool err_is_interrupt;  /* try/catch cannot catch it */
    VmTraceEntry trace[VM_TRACE_MAX];
    int ntrace;
    uint32_t trace_skipped; /* frames left out of the middle of the trace */
    /* The module whose places an error raised with no comb frame names
     * (vm_error_at: a query's rows shown after its statement returned, by
     * the prompt or -e); set by the front end. err_line: that place, 0 if
     * none. */
    VModule *place_module;
    uint32_t err_line, err_col;

    /* the step limit, counted on backward jumps and calls */
    uint64_t steps_left;
    bool step_limited;

    /* names and modules */
    VNative **natives;      /* one per entry of the natives table */
    size_t nnatives;
    VMap *modules;          /* path -> module */
    vm_import_fn import;
    VArray *args;           /* the script's arguments */

    /* regexes (vm/regex.c) */
    void *re_gctx, *re_cctx, *re_mctx, *re_match;
    VMap *re_cache;         /* pattern string -> regex, for `~` with a string */

    /* the reading session (vm/query/reading.c): made at the first open */
    VHandle *reading;
};

VM *vm_new(const VmOptions *opt);
void vm_free(VM *vm);
/* The script's arguments, for the os natives: 0, or -1 out of memory. */
int vm_set_args(VM *vm, int argc, char **argv);

/* Calls fn with argv in a protected level: returns 0 with *result set, or
 * -1 when an error was not caught (see vm_error_value, vm_print_error). */
int vm_pcall(VM *vm, Value fn, int argc, const Value *argv, Value *result);
/* Calls fn from a native; errors go on to the caller's level. */
Value vm_call(VM *vm, Value fn, int argc, const Value *argv);
/* Runs a module's main function if it has not run (import and the CLI use
 * it), protected: 0, or -1 with the error in the VM. */
int vm_run_module(VM *vm, VModule *m);
/* Runs fn(vm, ud) as a protected level: 0, or -1 if it raised. */
int vm_protect(VM *vm, void (*fn)(VM *vm, void *ud), void *ud);
/* Raises again the error vm_protect returned -1 for, once the caller has
 * cleaned up. */
_Noreturn void vm_rethrow(VM *vm);

/* Raise a runtime error: a message string (printf-style) or any value. */
_Noreturn void vm_error(VM *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
_Noreturn void vm_throw(VM *vm, Value err);
/* Raises msg, reported at line:col of the comb function calling the
 * running native: for errors in code a native binds, such as a query's
 * fields. With no comb function running, at line:col of place_module. */
_Noreturn void vm_error_at(VM *vm, uint32_t line, uint32_t col, const char *msg);
/* The uncaught error as `file:line:col: message`, then the traceback. */
void vm_print_error(VM *vm, FILE *out);
/* Exit status for the uncaught error: 1, or 130 after an interrupt. */
int vm_error_status(VM *vm);

/* Iterations that hold resources: it (a handle whose type has close),
 * iterated from *slot, is closed when the level of slot is left (its loop
 * ends, a break, a return, a raise unwinding past it) or by
 * vm_iter_close(vm, slot). A native iterating such a cursor pushes it at
 * its argv and closes it before returning. */
void vm_iter_push(VM *vm, Value *slot, Value it);
void vm_iter_close(VM *vm, Value *level);

/* Temporary roots for natives holding values across vm_call. */
void vm_push_root(VM *vm, Value v);
void vm_pop_root(VM *vm, size_t n);

/* Nonzero asks the loop to poll on backward jumps and calls: SIGINT sets
 * POLL_SIGINT (the loop raises "interrupted"), SIGBUS in a mapped file POLL_CUT
 * (the loop raises its error); a VM with a step limit sets
 * POLL_STEPS, and then counts one step per poll. */
extern volatile sig_atomic_t vm_poll_flag;
#define POLL_SIGINT 1
#define POLL_STEPS 2
#define POLL_CUT 4      /* a mapped file shrank while read (vm_str_mapped) */
void vm_install_sigint(void);
/* Raises "interrupted" (not catchable) if SIGINT came: for long natives,
 * such as scans, that do not return to the loop for a while. */
void vm_check_interrupt(VM *vm);
/* Raises the ^C that set POLL_SIGINT as the loop's poll would ("interrupted",
 * exit 130, not caught by try): for natives that wait and notice it first. */
_Noreturn void vm_interrupted(VM *vm);

/* Memory: like mem.h, but raising "out of memory" instead of returning NULL,
 * and counted for the collector. */
void *vm_alloc(VM *vm, size_t size);
void *vm_realloc(VM *vm, void *p, size_t osize, size_t nsize);
void vm_free_mem(VM *vm, void *p, size_t size);
/* A new object of size bytes and type, on the collector's list; and the
 * release of its block (by vm_obj_release) with the same size. */
void *vm_new_obj(VM *vm, size_t size, VType type);
void vm_free_obj(VM *vm, void *o, size_t size);
/* n bytes the VM holds outside the allocator (a file mapped into a
 * string) counted as allocated (held) or no longer: so that the collector
 * runs, and lets go of them, as often as if they had been copied. */
void vm_count_outside(VM *vm, size_t n, bool held);

/* gc.c */
void vm_gc(VM *vm);                     /* a full collection now */
/* A collection if one is due, as the loop's safe points do: for a native
 * reading many rows, at a point where everything it still uses is rooted. */
void vm_gc_step(VM *vm);
void vm_mark(VM *vm, Value v);          /* for handle mark callbacks */
void vm_mark_obj(VM *vm, Obj *o);
void vm_gc_free_all(VM *vm);
void vm_gc_stress(VM *vm, bool on);

/* Arithmetic and comparison of values as the operators do them (ops.h's
 * scalar operations by the operands' types), for the loop's slow paths,
 * the compiler's constant folding and the row steps; they never raise. */
ArithStatus vm_arith(VM *vm, int op, Value a, Value b, Value *out);
ArithStatus vm_negate(Value a, Value *out);
ArithStatus vm_less(Value a, Value b, bool or_equal, bool *out);

/* The position (file, line, col) of the instruction a frame is at. */
void vm_frame_pos(const VmFrame *f, VmPos *pos);
/* The function of a frame's name for messages: "fib", "<main>", "native len". */
const char *vm_frame_name(const VmFrame *f);

#endif
