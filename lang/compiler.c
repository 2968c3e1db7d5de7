/* compiler: the syntax tree to register bytecode (vm/opcodes.h).
 *
 * Each function's locals live in registers, allocated as a stack: the
 * active locals first, temporaries above them (freereg is the first free
 * one). Top-level `let`, `fn` and `import` of a module are module variables
 * instead (found by slot, not by name at run time), which later modules and
 * the prompt can see. Locals of enclosing functions are captured as
 * upvalues. Constant subexpressions are folded with the VM's own arithmetic.
 * Conditions compile to tests and jumps; pending jumps are chained through
 * their offset fields until patched. */
#include "config.h"
#include "lang/compiler.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vm/lib_store.h"
#include "vm/natives.h"
#include "vm/opcodes.h"
#include "vm/query/query.h"
#include "vm/regex.h"

#define NO_JUMP (-1)
#define MAX_REGS 250
#define APPEND_BATCH 32

typedef struct Local {
    const char *name;
    size_t n;
    int reg;
    int depth;
    bool captured;
} Local;

typedef struct Loop {
    struct Loop *prev;
    int breaks, continues;  /* pending jump chains */
    int nlocals;            /* locals outside the loop */
    int try_depth;          /* tries open outside the loop */
} Loop;

typedef struct FnState {
    struct FnState *up;
    VProto *p;
    Instr *code;
    VmPos *pos;
    size_t ncode, capcode;
    Value *k;
    size_t nk, capk;
    VMap *kmap;             /* string and int constants -> index */
    VProto **protos;
    size_t nprotos, capprotos;
    Local locals[MAX_REGS];
    int nlocals;
    int nactive;            /* registers held by active locals */
    uint8_t upv_local[256], upv_index[256];
    const char *upv_name[256];
    int nupvals;
    int freereg, maxregs;
    int depth;              /* block nesting; 0: a module's top level */
    int try_depth;
    Loop *loop;
} FnState;

typedef struct Compiler {
    VM *vm;
    Arena *a;
    Diag *d;
    VModule *mod;
    FnState *fs;
} Compiler;

static void expr_to(Compiler *c, Expr *e, int dst);
static void statements(Compiler *c, Block *b);
static void stmt(Compiler *c, Stmt *s);

__attribute__((format(printf, 4, 5)))
static void error(Compiler *c, int line, int col, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(c->d, line, col, "%s", msg);
}

/* ---- emitting --------------------------------------------------------- */

static int emit(Compiler *c, int line, int col, Instr i)
{
    FnState *fs = c->fs;
    size_t cap = fs->capcode;
    fs->code = arena_grow(c->a, fs->code, fs->ncode, &cap, sizeof *fs->code, 64);
    fs->pos = arena_grow(c->a, fs->pos, fs->ncode, &fs->capcode, sizeof *fs->pos, 64);
    if (fs->ncode >= (size_t)MAX_sJ) {
        if (fs->ncode == (size_t)MAX_sJ)
            error(c, line, col, "function too large");
        fs->ncode = 0;  /* keep going to find more errors; the code is discarded */
    }
    fs->code[fs->ncode] = i;
    fs->pos[fs->ncode] = (VmPos){(uint32_t)line, (uint32_t)col};
    return (int)fs->ncode++;
}

#define EMIT(node, i) emit(c, (node)->line, (node)->col, (i))

static int here(Compiler *c)
{
    return (int)c->fs->ncode;
}

static int push_reg(Compiler *c, int line, int col)
{
    FnState *fs = c->fs;
    if (fs->freereg >= MAX_REGS) {
        if (fs->freereg == MAX_REGS)
            error(c, line, col, "function needs too many registers");
        fs->freereg++;
        return MAX_REGS - 1;
    }
    int r = fs->freereg++;
    if (fs->freereg > fs->maxregs)
        fs->maxregs = fs->freereg;
    return r;
}

static void free_to(Compiler *c, int r)
{
    c->fs->freereg = r;
}

/* A jump to be patched: its offset field chains to the next one. */
static int emit_jump(Compiler *c, int line, int col)
{
    return emit(c, line, col, mk_sj(OP_JMP, NO_JUMP));
}

static int jump_next(Compiler *c, int j)
{
    return GsJ(c->fs->code[j]);
}

static void set_jump(Compiler *c, int j, int target)
{
    int off = target - (j + 1);
    Instr *i = &c->fs->code[j];
    if (OP(*i) == OP_JMP)
        *i = mk_sj(OP_JMP, off);
    else if (off < MIN_sBx || off > MAX_sBx)
        error(c, (int)c->fs->pos[j].line, (int)c->fs->pos[j].col, "loop or try body too large");
    else
        *i = mk_abx(OP(*i), GA(*i), off + 32767);
}

static void patch(Compiler *c, int list, int target)
{
    while (list != NO_JUMP) {
        int next = jump_next(c, list);
        set_jump(c, list, target);
        list = next;
    }
}

static int concat_jumps(Compiler *c, int l1, int l2)
{
    if (l1 == NO_JUMP)
        return l2;
    int j = l1;
    while (jump_next(c, j) != NO_JUMP)
        j = jump_next(c, j);
    c->fs->code[j] = mk_sj(OP_JMP, l2);
    return l1;
}

static void jump_back(Compiler *c, Stmt *s, int target)
{
    int j = emit_jump(c, s->line, s->col);
    set_jump(c, j, target);
}

/* ---- constants -------------------------------------------------------- */

static int add_const(Compiler *c, Value v, int line, int col)
{
    FnState *fs = c->fs;
    bool keyed = IS_STR(v) || IS_INT(v);
    if (keyed) {
        Value *hit = vm_map_ref(fs->kmap, v);
        if (hit)
            return (int)hit->as.i;
    } else if (!IS_OBJ(v)) {  /* nil, bools, floats (by bits: 0.0 is not -0.0) */
        for (size_t i = 0; i < fs->nk; i++)
            if (fs->k[i].type == v.type && !memcmp(&fs->k[i].as, &v.as, sizeof v.as))
                return (int)i;
    }
    if (fs->nk > MAX_Bx) {
        error(c, line, col, "too many constants in one function");
        return 0;
    }
    fs->k = arena_grow(c->a, fs->k, fs->nk, &fs->capk, sizeof *fs->k, 16);
    fs->k[fs->nk] = v;
    if (keyed)
        vm_map_set(c->vm, fs->kmap, v, v_int((int64_t)fs->nk));
    return (int)fs->nk++;
}

static Value str_const(Compiler *c, const char *s, size_t n)
{
    return v_obj(vm_str_new(c->vm, s, n));
}

/* ---- constant folding ------------------------------------------------- */

static bool literal_value(Compiler *c, const Expr *e, Value *v)
{
    switch (e->kind) {
    case E_NIL: *v = v_nil(); return true;
    case E_TRUE: *v = v_bool(true); return true;
    case E_FALSE: *v = v_bool(false); return true;
    case E_INT: *v = v_int(e->u.i); return true;
    case E_FLOAT: *v = v_float(e->u.f); return true;
    case E_STRING: *v = str_const(c, e->u.str.s, e->u.str.n); return true;
    default: return false;
    }
}

static void make_literal(Compiler *c, Expr *e, Value v)
{
    switch (v.type) {
    case VT_NIL: e->kind = E_NIL; break;
    case VT_BOOL: e->kind = v.as.b ? E_TRUE : E_FALSE; break;
    case VT_INT: e->kind = E_INT; e->u.i = v.as.i; break;
    case VT_FLOAT: e->kind = E_FLOAT; e->u.f = v.as.f; break;
    default:
        e->kind = E_STRING;
        e->u.str.s = arena_strndup(c->a, AS_STR(v)->data, AS_STR(v)->len);
        e->u.str.n = AS_STR(v)->len;
        break;
    }
}

static int arith_of(int tok)
{
    switch (tok) {
    case T_PLUS: case T_PLUSEQ: return ARITH_ADD;
    case T_MINUS: case T_MINUSEQ: return ARITH_SUB;
    case T_STAR: case T_STAREQ: return ARITH_MUL;
    case T_SLASH: case T_SLASHEQ: return ARITH_DIV;
    case T_PERCENT: case T_PERCENTEQ: return ARITH_MOD;
    default: return -1;
    }
}

/* The value of a binary operator on two constants, if it has one without
 * an error (an error is left to run time, where it is reported). */
static bool fold_binary(Compiler *c, int op, Value a, Value b, Value *out)
{
    bool r;
    switch (op) {
    case T_EQ: *out = v_bool(v_equal(a, b)); return true;
    case T_NE: *out = v_bool(!v_equal(a, b)); return true;
    case T_LT: case T_LE:
        if (vm_less(a, b, op == T_LE, &r) != AR_OK)
            return false;
        *out = v_bool(r);
        return true;
    case T_GT: case T_GE:   /* a > b is b < a, NaN included */
        if (vm_less(b, a, op == T_GE, &r) != AR_OK)
            return false;
        *out = v_bool(r);
        return true;
    default:
        return arith_of(op) >= 0 && vm_arith(c->vm, arith_of(op), a, b, out) == AR_OK;
    }
}

/* Folds e in place when its value is known now. */
static void fold(Compiler *c, Expr *e)
{
    Value a, b, v;
    if (e->folded)
        return;
    e->folded = true;
    switch (e->kind) {
    case E_UNARY:
        fold(c, e->u.op.a);
        if (!literal_value(c, e->u.op.a, &a))
            return;
        if (e->u.op.op == T_NOT)
            make_literal(c, e, v_bool(!v_truthy(a)));
        else if (vm_negate(a, &v) == AR_OK)
            make_literal(c, e, v);
        return;
    case E_BINARY:
        fold(c, e->u.op.a);
        fold(c, e->u.op.b);
        if (literal_value(c, e->u.op.a, &a) && literal_value(c, e->u.op.b, &b) &&
            fold_binary(c, e->u.op.op, a, b, &v))
            make_literal(c, e, v);
        return;
    case E_AND:
    case E_OR:
        fold(c, e->u.op.a);
        fold(c, e->u.op.b);
        if (literal_value(c, e->u.op.a, &a) && literal_value(c, e->u.op.b, &b))
            make_literal(c, e, (e->kind == E_AND) == v_truthy(a) ? b : a);
        return;
    default:
        return;
    }
}

/* ---- names ------------------------------------------------------------ */

typedef enum { N_LOCAL, N_UPVAL, N_MODULE, N_NATIVE, N_NONE } NameKind;

static int find_local(FnState *fs, const Name *n)
{
    for (int i = fs->nlocals - 1; i >= 0; i--)
        if (fs->locals[i].n == n->n && !memcmp(fs->locals[i].name, n->s, n->n))
            return i;
    return -1;
}

static int add_upval(Compiler *c, FnState *fs, bool local, int index, const Name *n)
{
    for (int i = 0; i < fs->nupvals; i++)
        if (fs->upv_local[i] == local && fs->upv_index[i] == index)
            return i;
    if (fs->nupvals == 255) {
        error(c, n->line, n->col, "too many captured variables");
        return 0;
    }
    fs->upv_local[fs->nupvals] = local;
    fs->upv_index[fs->nupvals] = (uint8_t)index;
    fs->upv_name[fs->nupvals] = n->s;
    return fs->nupvals++;
}

static int find_upval(Compiler *c, FnState *fs, const Name *n)
{
    if (!fs->up)
        return -1;
    int l = find_local(fs->up, n);
    if (l >= 0) {
        fs->up->locals[l].captured = true;
        return add_upval(c, fs, true, fs->up->locals[l].reg, n);
    }
    int u = find_upval(c, fs->up, n);
    return u < 0 ? -1 : add_upval(c, fs, false, u, n);
}

static NameKind resolve(Compiler *c, const Name *n, int *index)
{
    int i = find_local(c->fs, n);
    if (i >= 0) {
        *index = c->fs->locals[i].reg;
        return N_LOCAL;
    }
    if ((i = find_upval(c, c->fs, n)) >= 0) {
        *index = i;
        return N_UPVAL;
    }
    Value *slot = vm_map_ref(c->mod->symbols, str_const(c, n->s, n->n));
    if (slot) {
        *index = (int)slot->as.i;
        return N_MODULE;
    }
    if ((i = vm_native_find(n->s, n->n)) >= 0) {
        *index = i;
        return N_NATIVE;
    }
    const char *member = vm_native_member(n->s, n->n);
    if (member)
        error(c, n->line, n->col, "undefined name '%s' (did you mean '%s'? import \"%.*s\" first)",
              n->s, member, (int)(strchr(member, '.') - member), member);
    else
        error(c, n->line, n->col, "undefined name '%s'", n->s);
    return N_NONE;
}

static bool at_module_level(Compiler *c)
{
    return !c->fs->up && c->fs->depth == 0;
}

static int module_slot(Compiler *c, const Name *n, bool exported)
{
    size_t slot = vm_module_slot(c->vm, c->mod, AS_STR(str_const(c, n->s, n->n)), exported);
    if (slot > MAX_Bx)
        error(c, n->line, n->col, "too many top-level names ('%s')", n->s);
    return (int)slot;
}

/* A new local in the next free register, active at once. */
static int declare_local(Compiler *c, const Name *n)
{
    FnState *fs = c->fs;
    int r = push_reg(c, n->line, n->col);
    if (fs->nlocals == MAX_REGS)
        return r;
    Local *l = &fs->locals[fs->nlocals++];
    l->name = n->s;
    l->n = n->n;
    l->reg = r;
    l->depth = fs->depth;
    l->captured = false;
    fs->nactive = r + 1;
    return r;
}

static void begin_scope(Compiler *c)
{
    c->fs->depth++;
}

/* Ends locals declared after nlocals: their upvalues are closed. */
static void drop_locals(Compiler *c, int nlocals, int line, int col)
{
    FnState *fs = c->fs;
    bool captured = false;
    for (int i = nlocals; i < fs->nlocals; i++)
        captured |= fs->locals[i].captured;
    if (captured)
        emit(c, line, col, mk_abc(OP_CLOSE, fs->locals[nlocals].reg, 0, 0));
}

static void end_scope(Compiler *c, int line, int col)
{
    FnState *fs = c->fs;
    int n = fs->nlocals;
    while (n > 0 && fs->locals[n - 1].depth >= fs->depth)
        n--;
    drop_locals(c, n, line, col);
    fs->nlocals = n;
    fs->nactive = n ? fs->locals[n - 1].reg + 1 : 0;
    fs->freereg = fs->nactive;
    fs->depth--;
}

/* ---- expressions ------------------------------------------------------ */

/* Is dst a temporary on top of the registers, so that a call or a literal
 * may build in it and the registers after it? */
static bool is_top_temp(Compiler *c, int dst)
{
    return dst == c->fs->freereg - 1 && dst >= c->fs->nactive;
}

/* A register holding e's value: a local's own, or a new temporary. */
static int expr_any(Compiler *c, Expr *e)
{
    int r;
    if (e->kind == E_NAME) {
        int i = find_local(c->fs, &e->u.name);
        if (i >= 0)
            return c->fs->locals[i].reg;
    }
    r = push_reg(c, e->line, e->col);
    expr_to(c, e, r);
    return r;
}

/* A register holding e's value, computed into dst if dst is a temporary
 * (its old value is dead), so a chain a + b + c needs no register per link. */
static int expr_in(Compiler *c, Expr *e, int dst)
{
    if (dst < c->fs->nactive || (e->kind == E_NAME && find_local(c->fs, &e->u.name) >= 0))
        return expr_any(c, e);
    expr_to(c, e, dst);
    return dst;
}

static void load_const(Compiler *c, Expr *e, Value v, int dst)
{
    if (IS_INT(v) && v.as.i >= MIN_sBx && v.as.i <= MAX_sBx)
        EMIT(e, mk_abx(OP_LOADI, dst, (int)v.as.i + 32767));
    else
        EMIT(e, mk_abx(OP_LOADK, dst, add_const(c, v, e->line, e->col)));
}

static bool small_int(const Expr *e, int *v)
{
    if (e->kind != E_INT || e->u.i < MIN_sC || e->u.i > MAX_sC)
        return false;
    *v = (int)e->u.i;
    return true;
}

/* The constant index of a number literal, if it fits a C operand. */
static bool num_const(Compiler *c, Expr *e, int *k)
{
    Value v;
    if ((e->kind != E_INT && e->kind != E_FLOAT) || !literal_value(c, e, &v))
        return false;
    *k = add_const(c, v, e->line, e->col);
    return *k <= 255;
}

static void arith_to(Compiler *c, Expr *e, int aop, Expr *a, Expr *b, int dst)
{
    static const VmOpcode rr[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD};
    static const VmOpcode rk[] = {OP_ADDK, OP_SUBK, OP_MULK, OP_DIVK, OP_MODK};
    int save = c->fs->freereg, imm, k;
    if (aop == ARITH_ADD && small_int(b, &imm)) {
        int ra = expr_in(c, a, dst);
        EMIT(e, mk_abc(OP_ADDI, dst, ra, imm + 127));
    } else if (num_const(c, b, &k)) {
        int ra = expr_in(c, a, dst);
        EMIT(e, mk_abc(rk[aop], dst, ra, k));
    } else {
        int ra = expr_in(c, a, dst);
        int rb = expr_any(c, b);
        EMIT(e, mk_abc(rr[aop], dst, ra, rb));
    }
    free_to(c, save);
}

static int cond_jump(Compiler *c, Expr *e, bool jump_if);

/* A comparison as a test followed by a pending jump taken when its result
 * is jump_if. */
static int compare_jump(Compiler *c, Expr *e, bool jump_if)
{
    int op = e->u.op.op, save = c->fs->freereg, imm;
    Expr *a = e->u.op.a, *b = e->u.op.b;
    bool k = jump_if;
    Value kv;
    if (op == T_EQ || op == T_NE) {
        k = (op == T_EQ) == jump_if;
        if (small_int(a, &imm) || (a->kind != E_INT && literal_value(c, a, &kv))) {
            Expr *t = a;    /* the constant on the right */
            a = b;
            b = t;
        }
        int ra = expr_any(c, a), kb;
        if (small_int(b, &imm))
            EMIT(e, mk_abc(OP_EQI, ra, imm + 127, k));
        else if (literal_value(c, b, &kv) && (kb = add_const(c, kv, b->line, b->col)) <= 255)
            EMIT(e, mk_abc(OP_EQK, ra, kb, k));
        else
            EMIT(e, mk_abc(OP_EQ, ra, expr_any(c, b), k));
    } else {
        static const int swapped[] = {[T_LT] = T_GT, [T_LE] = T_GE, [T_GT] = T_LT, [T_GE] = T_LE};
        if (small_int(a, &imm) && !small_int(b, &imm)) {
            Expr *t = a;
            a = b;
            b = t;
            op = swapped[op];
        }
        if (small_int(b, &imm)) {
            VmOpcode o = op == T_LT ? OP_LTI : op == T_LE ? OP_LEI : op == T_GT ? OP_GTI : OP_GEI;
            EMIT(e, mk_abc(o, expr_any(c, a), imm + 127, k));
        } else {
            int ra = expr_any(c, a), rb = expr_any(c, b);
            if (op == T_GT || op == T_GE) {     /* a > b is b < a */
                int t = ra;
                ra = rb;
                rb = t;
            }
            EMIT(e, mk_abc(op == T_LT || op == T_GT ? OP_LT : OP_LE, ra, rb, k));
        }
    }
    free_to(c, save);
    return emit_jump(c, e->line, e->col);
}

static bool is_comparison(const Expr *e)
{
    if (e->kind != E_BINARY)
        return false;
    int op = e->u.op.op;
    return op == T_EQ || op == T_NE || op == T_LT || op == T_LE || op == T_GT || op == T_GE;
}

/* Code that jumps (the returned pending chain) when e's truth is jump_if,
 * and falls through otherwise. */
static int cond_jump(Compiler *c, Expr *e, bool jump_if)
{
    fold(c, e);
    Value v;
    if (literal_value(c, e, &v))
        return v_truthy(v) == jump_if ? emit_jump(c, e->line, e->col) : NO_JUMP;
    if (e->kind == E_UNARY && e->u.op.op == T_NOT)
        return cond_jump(c, e->u.op.a, !jump_if);
    if (is_comparison(e))
        return compare_jump(c, e, jump_if);
    if (e->kind == E_AND || e->kind == E_OR) {
        /* For &&, the left side decides alone when false; for ||, when true. */
        bool decides = e->kind == E_OR;
        if (jump_if == decides) {
            int l1 = cond_jump(c, e->u.op.a, jump_if);
            return concat_jumps(c, l1, cond_jump(c, e->u.op.b, jump_if));
        }
        int skip = cond_jump(c, e->u.op.a, decides);
        int l = cond_jump(c, e->u.op.b, jump_if);
        patch(c, skip, here(c));
        return l;
    }
    int save = c->fs->freereg;
    EMIT(e, mk_abc(OP_TEST, expr_any(c, e), 0, jump_if));
    free_to(c, save);
    return emit_jump(c, e->line, e->col);
}

/* a && b, a || b as a value: the last operand evaluated. */
static void logic_to(Compiler *c, Expr *e, int dst)
{
    if (dst < c->fs->nactive) {     /* a live local: b may read it */
        int t = push_reg(c, e->line, e->col);
        logic_to(c, e, t);
        EMIT(e, mk_abc(OP_MOVE, dst, t, 0));
        free_to(c, t);
        return;
    }
    expr_to(c, e->u.op.a, dst);
    EMIT(e, mk_abc(OP_TEST, dst, 0, e->kind == E_OR));
    int end = emit_jump(c, e->line, e->col);
    expr_to(c, e->u.op.b, dst);
    patch(c, end, here(c));
}

/* if c { a } else { b } as a value: the branch the condition picks. */
static void if_to(Compiler *c, Expr *e, int dst)
{
    int f = cond_jump(c, e->u.ifx.cond, false);
    expr_to(c, e->u.ifx.then, dst);
    int end = emit_jump(c, e->line, e->col);
    patch(c, f, here(c));
    expr_to(c, e->u.ifx.els, dst);
    patch(c, end, here(c));
}

/* A builder target: dst if it is the top temporary, else a new one (moved
 * to dst by finish_top). */
static int top_target(Compiler *c, Expr *e, int dst)
{
    return is_top_temp(c, dst) ? dst : push_reg(c, e->line, e->col);
}

static void finish_top(Compiler *c, Expr *e, int t, int dst)
{
    if (t != dst)
        EMIT(e, mk_abc(OP_MOVE, dst, t, 0));
    free_to(c, t == dst ? dst + 1 : t);
}

static void array_to(Compiler *c, Expr *e, int dst)
{
    int t = top_target(c, e, dst), n = e->u.list.n;
    EMIT(e, mk_abc(OP_NEWARRAY, t, n > 255 ? 255 : n, 0));
    for (int i = 0; i < n; i += APPEND_BATCH) {
        int m = n - i < APPEND_BATCH ? n - i : APPEND_BATCH;
        for (int j = 0; j < m; j++)
            expr_to(c, e->u.list.items[i + j], push_reg(c, e->line, e->col));
        EMIT(e, mk_abc(OP_APPEND, t, m, 0));
        free_to(c, t + 1);
    }
    finish_top(c, e, t, dst);
}

/* The constant index of a string literal key, if it fits a B/C operand. */
static bool str_key(Compiler *c, Expr *key, int *k)
{
    if (key->kind != E_STRING)
        return false;
    *k = add_const(c, str_const(c, key->u.str.s, key->u.str.n), key->line, key->col);
    return *k <= 255;
}

static void map_to(Compiler *c, Expr *e, int dst)
{
    int t = top_target(c, e, dst), n = e->u.list.n / 2, k;
    EMIT(e, mk_abc(OP_NEWMAP, t, n > 255 ? 255 : n, 0));
    for (int i = 0; i < n; i++) {
        Expr *key = e->u.list.items[2 * i], *val = e->u.list.items[2 * i + 1];
        fold(c, key);
        int save = c->fs->freereg;
        if (str_key(c, key, &k)) {
            EMIT(key, mk_abc(OP_SETINDEXK, t, k, expr_any(c, val)));
        } else {
            int rk = expr_any(c, key);
            EMIT(key, mk_abc(OP_SETINDEX, t, rk, expr_any(c, val)));
        }
        free_to(c, save);
    }
    finish_top(c, e, t, dst);
}

static VProto *function(Compiler *c, FnLit *fn);

static void fn_to(Compiler *c, Expr *e, FnLit *fn, int dst)
{
    VProto *p = function(c, fn);
    FnState *fs = c->fs;
    if (fs->nprotos > MAX_Bx) {
        error(c, e->line, e->col, "too many functions in one function");
        return;
    }
    fs->protos = arena_grow(c->a, fs->protos, fs->nprotos, &fs->capprotos, sizeof *fs->protos, 8);
    fs->protos[fs->nprotos] = p;
    EMIT(e, mk_abx(OP_CLOSURE, dst, (int)fs->nprotos++));
}

/* The index of the native that e names (not shadowed by a variable), or -1. */
static int native_index(Compiler *c, Expr *e)
{
    if (e->kind != E_NAME || find_local(c->fs, &e->u.name) >= 0 ||
        find_upval(c, c->fs, &e->u.name) >= 0 ||
        vm_map_ref(c->mod->symbols, str_const(c, e->u.name.s, e->u.name.n)))
        return -1;
    return vm_native_find(e->u.name.s, e->u.name.n);
}

/* Does e name the native called name (not shadowed by a variable)? */
static bool is_native(Compiler *c, Expr *e, const char *name)
{
    return e->kind == E_NAME && !strcmp(e->u.name.s, name) && native_index(c, e) >= 0;
}

static void call_to(Compiler *c, Expr *e, int dst)
{
    Expr *fn = e->u.call.fn;
    int n = e->u.call.n;
    if (n == 1 && is_native(c, fn, "len")) {    /* len() is an instruction */
        int save = c->fs->freereg;
        EMIT(fn, mk_abc(OP_LEN, dst, expr_any(c, e->u.call.args[0]), 0));
        free_to(c, save);
        return;
    }
    if (n > 255) {
        error(c, e->line, e->col, "too many arguments");
        return;
    }
    int base = top_target(c, e, dst);
    int nat = native_index(c, fn);
    if (nat < 0 || nat > 255)
        expr_to(c, fn, base);
    for (int i = 0; i < n; i++)
        expr_to(c, e->u.call.args[i], push_reg(c, e->line, e->col));
    if (nat < 0 || nat > 255)
        EMIT(fn, mk_abc(OP_CALL, base, n, 0));
    else
        EMIT(fn, mk_abc(OP_CALLN, base, n, nat));
    free_to(c, base + 1);
    finish_top(c, e, base, dst);
}

static void index_to(Compiler *c, Expr *e, int dst)
{
    Expr *key = e->u.index.key;
    int save = c->fs->freereg, k;
    int ro = expr_in(c, e->u.index.obj, dst);
    fold(c, key);
    if (str_key(c, key, &k))
        EMIT(e, mk_abc(OP_GETINDEXK, dst, ro, k));
    else if (key->kind == E_INT && key->u.i >= 0 && key->u.i <= 255)
        EMIT(e, mk_abc(OP_GETINDEXI, dst, ro, (int)key->u.i));
    else
        EMIT(e, mk_abc(OP_GETINDEX, dst, ro, expr_any(c, key)));
    free_to(c, save);
}

static void name_to(Compiler *c, Expr *e, int dst)
{
    int i;
    switch (resolve(c, &e->u.name, &i)) {
    case N_LOCAL:
        if (i != dst)
            EMIT(e, mk_abc(OP_MOVE, dst, i, 0));
        break;
    case N_UPVAL:
        EMIT(e, mk_abc(OP_GETUPV, dst, i, 0));
        break;
    case N_MODULE:
        EMIT(e, mk_abx(OP_GETMOD, dst, i));
        break;
    case N_NATIVE:
        EMIT(e, mk_abx(OP_GETNATIVE, dst, i));
        break;
    default:
        break;
    }
}

static void regex_to(Compiler *c, Expr *e, int dst)
{
    char err[200];
    VHandle *re = vm_regex_new(c->vm, e->u.str.s, e->u.str.n, e->u.str.flags, err, sizeof err);
    if (!re) {
        error(c, e->line, e->col, "%s", err);
        return;
    }
    EMIT(e, mk_abx(OP_LOADK, dst, add_const(c, v_obj(re), e->line, e->col)));
}

/* A schema declaration's schema, made now: its errors are the program's. */
static void schema_to(Compiler *c, Expr *e, int dst)
{
    st_err err;
    int line, col, n = 0;
    if (!e->u.str.s)
        return;     /* the parser has reported the missing '}' */
    VHandle *h = vm_schema_parse(c->vm, e->u.str.s, e->u.str.n, e->u.str.line, e->u.str.col, &err);
    if (h) {
        EMIT(e, mk_abx(OP_LOADK, dst, add_const(c, v_obj(h), e->line, e->col)));
        return;
    }
    if (sscanf(err.msg, "%d:%d: %n", &line, &col, &n) == 2 && n > 0)
        error(c, line, col, "%s", err.msg + n);
    else
        error(c, e->line, e->col, "%s", err.msg);
}

static void match_to(Compiler *c, Expr *e, int dst)
{
    int save = c->fs->freereg, k = 256;
    int ra = expr_any(c, e->u.op.a);
    Expr *b = e->u.op.b;
    if (b->kind == E_REGEX) {
        char err[200];
        VHandle *re = vm_regex_new(c->vm, b->u.str.s, b->u.str.n, b->u.str.flags, err, sizeof err);
        if (!re) {
            error(c, b->line, b->col, "%s", err);
            return;
        }
        k = add_const(c, v_obj(re), b->line, b->col);
    }
    if (k <= 255)
        EMIT(e, mk_abc(OP_MATCHK, dst, ra, k));
    else
        EMIT(e, mk_abc(OP_MATCH, dst, ra, expr_any(c, b)));
    if (e->u.op.op == T_NOMATCH)
        EMIT(e, mk_abc(OP_NOT, dst, dst, 0));
    free_to(c, save);
}

static void binary_to(Compiler *c, Expr *e, int dst)
{
    int op = e->u.op.op;
    if (op == T_MATCH || op == T_NOMATCH) {
        match_to(c, e, dst);
    } else if (is_comparison(e)) {
        int t = cond_jump(c, e, true);
        EMIT(e, mk_abc(OP_LFALSESKIP, dst, 0, 0));
        patch(c, t, here(c));
        EMIT(e, mk_abc(OP_LOADTRUE, dst, 0, 0));
    } else {
        arith_to(c, e, arith_of(op), e->u.op.a, e->u.op.b, dst);
    }
}


/* ---- pipelines ---------------------------------------------------------- */

/* `src | verb ...` becomes _pipe(src, plan, captures...), the plan a
 * constant array of stages and expression nodes (vm/query/query.h). Values the
 * query needs from the program are computed here, into the registers after
 * the plan, and referred to by capture number. */
typedef struct PipeC {
    int ncap;
    VArray *used;   /* the variable names a hoisted expression used */
} PipeC;

static VArray *qarr(Compiler *c, int op, const Expr *at, size_t room)
{
    VArray *a = vm_array_new(c->vm, room + 3);
    vm_array_push(c->vm, a, v_int(op));
    vm_array_push(c->vm, a, v_int(at->line));
    vm_array_push(c->vm, a, v_int(at->col));
    return a;
}

static bool is_query_func(const Expr *fn)
{
    return fn->kind == E_NAME && vm_query_func_find(fn->u.name.s, fn->u.name.n) >= 0;
}

/* Whether e uses no field (every name is a variable or a native) and no
 * query function, so it can be computed where the pipeline is written. */
static bool hoistable(Compiler *c, Expr *e, VArray *used)
{
    int i;
    switch (e->kind) {
    case E_NAME:
        if (find_local(c->fs, &e->u.name) < 0 && find_upval(c, c->fs, &e->u.name) < 0 &&
            !vm_map_ref(c->mod->symbols, str_const(c, e->u.name.s, e->u.name.n)))
            return false;
        if (used)
            vm_array_push(c->vm, used, str_const(c, e->u.name.s, e->u.name.n));
        return true;
    case E_CALL:
        if (is_query_func(e->u.call.fn))
            return false;
        if (e->u.call.fn->kind != E_NAME || vm_native_find(e->u.call.fn->u.name.s, e->u.call.fn->u.name.n) < 0 ||
            find_local(c->fs, &e->u.call.fn->u.name) >= 0)
            if (!hoistable(c, e->u.call.fn, used))
                return false;
        for (i = 0; i < e->u.call.n; i++)
            if (!hoistable(c, e->u.call.args[i], used))
                return false;
        return true;
    case E_ARRAY:
    case E_MAP:
        for (i = 0; i < e->u.list.n; i++)
            if (!hoistable(c, e->u.list.items[i], used))
                return false;
        return true;
    case E_INDEX:
        return hoistable(c, e->u.index.obj, used) && hoistable(c, e->u.index.key, used);
    case E_UNARY:
        return hoistable(c, e->u.op.a, used);
    case E_BINARY:
        if (e->u.op.op == T_IN || e->u.op.op == T_DOTDOT)
            return false;
        /* fall through */
    case E_AND:
    case E_OR:
        return hoistable(c, e->u.op.a, used) && hoistable(c, e->u.op.b, used);
    case E_IF:
        return hoistable(c, e->u.ifx.cond, used) && hoistable(c, e->u.ifx.then, used) &&
               hoistable(c, e->u.ifx.els, used);
    case E_PIPE:
        /* A pipeline inside a query (`onum in (ds | where ... | select
         * onum)`) is computed where the query is written: its verbs' names
         * are its own source's fields, bound by its own _pipe. */
        return hoistable(c, e->u.pipe.src, used);
    default:
        return true;    /* literals, fn literals (their names are their own) */
    }
}

/* Computes e into the next capture register: [CAPTURE, l, c, i, name, used]. */
static Value capture(Compiler *c, PipeC *pc, Expr *e, Value name, VArray *used)
{
    int r = push_reg(c, e->line, e->col);
    expr_to(c, e, r);
    VArray *a = qarr(c, QOP_CAPTURE, e, 3);
    vm_array_push(c->vm, a, v_int(pc->ncap++));
    vm_array_push(c->vm, a, name);
    vm_array_push(c->vm, a, used ? v_obj(used) : v_nil());
    return v_obj(a);
}

static Value qnode(Compiler *c, PipeC *pc, Expr *e);

static Value qop(Compiler *c, PipeC *pc, int op, Expr *e, Expr *a, Expr *b)
{
    VArray *n = qarr(c, op, e, 2);
    vm_array_push(c->vm, n, qnode(c, pc, a));
    if (b)
        vm_array_push(c->vm, n, qnode(c, pc, b));
    return v_obj(n);
}

static int qbinary_op(int tok)
{
    switch (tok) {
    case T_PLUS: return QOP_ADD;
    case T_MINUS: return QOP_SUB;
    case T_STAR: return QOP_MUL;
    case T_SLASH: return QOP_DIV;
    case T_PERCENT: return QOP_MOD;
    case T_EQ: return QOP_EQ;
    case T_NE: return QOP_NE;
    case T_LT: return QOP_LT;
    case T_LE: return QOP_LE;
    case T_GT: return QOP_GT;
    case T_GE: return QOP_GE;
    case T_MATCH: return QOP_MATCH;
    case T_NOMATCH: return QOP_NOMATCH;
    default: return QOP_IN;
    }
}

static Value qname(Compiler *c, PipeC *pc, Expr *e)
{
    Value name = str_const(c, e->u.name.s, e->u.name.n);
    Value *slot;
    if (find_local(c->fs, &e->u.name) >= 0 || find_upval(c, c->fs, &e->u.name) >= 0)
        return capture(c, pc, e, name, NULL);
    VArray *a = qarr(c, QOP_FIELD, e, 2);
    if ((slot = vm_map_ref(c->mod->symbols, name))) {
        a->items[0] = v_int(QOP_MODVAR);
        vm_array_push(c->vm, a, *slot);
    }
    vm_array_push(c->vm, a, name);
    return v_obj(a);
}

static Value qnode(Compiler *c, PipeC *pc, Expr *e)
{
    Value v;
    fold(c, e);
    if (e->kind == E_NAME)
        return qname(c, pc, e);
    if (literal_value(c, e, &v) || e->kind == E_REGEX) {
        if (e->kind == E_REGEX) {
            char err[200];
            VHandle *re = vm_regex_new(c->vm, e->u.str.s, e->u.str.n, e->u.str.flags, err, sizeof err);
            if (!re)
                error(c, e->line, e->col, "%s", err);
            v = re ? v_obj(re) : v_nil();
        }
        VArray *a = qarr(c, QOP_CONST, e, 1);
        vm_array_push(c->vm, a, v);
        return v_obj(a);
    }
    VArray *used = vm_array_new(c->vm, 0);
    if (hoistable(c, e, used))
        return capture(c, pc, e, v_nil(), used);
    switch (e->kind) {
    case E_UNARY:
        return qop(c, pc, e->u.op.op == T_NOT ? QOP_NOT : QOP_NEG, e, e->u.op.a, NULL);
    case E_AND:
    case E_OR:
        return qop(c, pc, e->kind == E_AND ? QOP_AND : QOP_OR, e, e->u.op.a, e->u.op.b);
    case E_BINARY:
        if (e->u.op.op == T_IN && e->u.op.b->kind == E_BINARY && e->u.op.b->u.op.op == T_DOTDOT) {
            VArray *a = qarr(c, QOP_INRANGE, e, 3);
            vm_array_push(c->vm, a, qnode(c, pc, e->u.op.a));
            vm_array_push(c->vm, a, qnode(c, pc, e->u.op.b->u.op.a));
            vm_array_push(c->vm, a, qnode(c, pc, e->u.op.b->u.op.b));
            return v_obj(a);
        }
        return qop(c, pc, qbinary_op(e->u.op.op), e, e->u.op.a, e->u.op.b);
    case E_CALL: {
        Expr *fn = e->u.call.fn;
        VArray *a = qarr(c, QOP_CALL, e, (size_t)e->u.call.n + 1);
        if (is_query_func(fn)) {
            vm_array_push(c->vm, a, str_const(c, fn->u.name.s, fn->u.name.n));
        } else {
            /* a comb function of fields: the function now, the call per row */
            VArray *fused = vm_array_new(c->vm, 0);
            bool native = fn->kind == E_NAME && find_local(c->fs, &fn->u.name) < 0 &&
                          vm_native_find(fn->u.name.s, fn->u.name.n) >= 0;
            if (!native && !hoistable(c, fn, fused)) {
                error(c, fn->line, fn->col, "a call in a query needs a query function (any, all, "
                      "count, first, last, sum, min, max, avg, distinct, between, day, hour) or "
                      "a function of the program");
                return v_nil();
            }
            vm_array_push(c->vm, a, capture(c, pc, fn, v_nil(), fused));
        }
        for (int i = 0; i < e->u.call.n; i++)
            vm_array_push(c->vm, a, qnode(c, pc, e->u.call.args[i]));
        return v_obj(a);
    }
    case E_INDEX:
        return qop(c, pc, QOP_INDEX, e, e->u.index.obj, e->u.index.key);
    case E_IF: {
        VArray *a = qarr(c, QOP_IF, e, 3);
        vm_array_push(c->vm, a, qnode(c, pc, e->u.ifx.cond));
        vm_array_push(c->vm, a, qnode(c, pc, e->u.ifx.then));
        vm_array_push(c->vm, a, qnode(c, pc, e->u.ifx.els));
        return v_obj(a);
    }
    default:
        error(c, e->line, e->col, "a field cannot be used inside %s in a query",
              e->kind == E_FN ? "a function" : e->kind == E_PIPE ? "another pipeline" : "a literal");
        return v_nil();
    }
}

static Value qstage(Compiler *c, PipeC *pc, Verb *v)
{
    Expr at = {.line = v->line, .col = v->col};
    VArray *a = qarr(c, v->verb, &at, (size_t)v->n * 2 + 1);
    if (v->verb == QV_group)
        vm_array_push(c->vm, a, v_int(v->nkeys));
    for (int i = 0; i < v->n; i++) {
        VerbItem *it = &v->items[i];
        if (it->name.s)
            vm_array_push(c->vm, a, str_const(c, it->name.s, it->name.n));
        vm_array_push(c->vm, a, qnode(c, pc, it->e));
        if (v->verb == QV_sort)
            vm_array_push(c->vm, a, v_bool(it->desc));
    }
    return v_obj(a);
}

static void pipe_to(Compiler *c, Expr *e, int dst)
{
    PipeC pc = {0};
    int base = top_target(c, e, dst);
    EMIT(e, mk_abx(OP_GETNATIVE, base, vm_native_find("_pipe", 5)));
    expr_to(c, e->u.pipe.src, push_reg(c, e->line, e->col));
    int rplan = push_reg(c, e->line, e->col);
    VArray *plan = vm_array_new(c->vm, (size_t)e->u.pipe.n);
    Value pv = v_obj(plan);
    for (int i = 0; i < e->u.pipe.n; i++)
        vm_array_push(c->vm, plan, qstage(c, &pc, &e->u.pipe.verbs[i]));
    EMIT(e, mk_abx(OP_LOADK, rplan, add_const(c, pv, e->line, e->col)));
    if (pc.ncap > 253)
        error(c, e->line, e->col, "too many values from the program in one pipeline");
    EMIT(e, mk_abc(OP_CALL, base, 2 + (pc.ncap > 253 ? 253 : pc.ncap), 0));
    free_to(c, base + 1);
    finish_top(c, e, base, dst);
}

/* e's value into register dst. */
static void expr_to(Compiler *c, Expr *e, int dst)
{
    Value v;
    fold(c, e);
    switch (e->kind) {
    case E_NIL:
        EMIT(e, mk_abc(OP_LOADNIL, dst, 0, 0));
        return;
    case E_TRUE:
    case E_FALSE:
        EMIT(e, mk_abc(e->kind == E_TRUE ? OP_LOADTRUE : OP_LOADFALSE, dst, 0, 0));
        return;
    case E_INT:
    case E_FLOAT:
    case E_STRING:
        literal_value(c, e, &v);
        load_const(c, e, v, dst);
        return;
    case E_REGEX:
        regex_to(c, e, dst);
        return;
    case E_NAME:
        name_to(c, e, dst);
        return;
    case E_ARRAY:
        array_to(c, e, dst);
        return;
    case E_MAP:
        map_to(c, e, dst);
        return;
    case E_FN:
        fn_to(c, e, e->u.fn, dst);
        return;
    case E_CALL:
        call_to(c, e, dst);
        return;
    case E_INDEX:
        index_to(c, e, dst);
        return;
    case E_UNARY: {
        int save = c->fs->freereg;
        int ra = expr_in(c, e->u.op.a, dst);
        EMIT(e, mk_abc(e->u.op.op == T_NOT ? OP_NOT : OP_UNM, dst, ra, 0));
        free_to(c, save);
        return;
    }
    case E_BINARY:
        binary_to(c, e, dst);
        return;
    case E_AND:
    case E_OR:
        logic_to(c, e, dst);
        return;
    case E_SCHEMA:
        schema_to(c, e, dst);
        return;
    case E_PIPE:
        pipe_to(c, e, dst);
        return;
    case E_IF:
        if_to(c, e, dst);
        return;
    }
}

/* ---- statements ------------------------------------------------------- */

static void let_stmt(Compiler *c, Stmt *s)
{
    Expr *init = s->u.let.init;
    if (at_module_level(c)) {
        int slot = module_slot(c, &s->u.let.name, true);
        int r = push_reg(c, s->line, s->col);
        if (init)
            expr_to(c, init, r);
        else
            EMIT(s, mk_abc(OP_LOADNIL, r, 0, 0));
        EMIT(s, mk_abx(OP_SETMOD, r, slot));
        free_to(c, r);
        return;
    }
    /* The register is taken before the initialiser is compiled, so a call
     * can build there, but the name is visible only after it. */
    int r = push_reg(c, s->line, s->col);
    if (init)
        expr_to(c, init, r);
    else
        EMIT(s, mk_abc(OP_LOADNIL, r, 0, 0));
    free_to(c, r);
    declare_local(c, &s->u.let.name);
}

static void fn_stmt(Compiler *c, Stmt *s)
{
    FnLit *fn = s->u.fn;
    Expr at = {.line = s->line, .col = s->col};
    if (at_module_level(c)) {
        int slot = module_slot(c, &fn->name, true);
        int r = push_reg(c, s->line, s->col);
        fn_to(c, &at, fn, r);
        EMIT(s, mk_abx(OP_SETMOD, r, slot));
        free_to(c, r);
        return;
    }
    /* Declared first, so the function can call itself. */
    fn_to(c, &at, fn, declare_local(c, &fn->name));
}

/* value op= into the variable or index of target (op T_ASSIGN: plain). */
static void assign_stmt(Compiler *c, Stmt *s)
{
    Expr *t = s->u.assign.target, *val = s->u.assign.value;
    int op = s->u.assign.op, save = c->fs->freereg, i;
    Expr bin = {.kind = E_BINARY, .line = s->line, .col = s->col};
    bin.u.op.op = op;
    bin.u.op.a = t;
    bin.u.op.b = val;
    Expr *rhs = op == T_ASSIGN ? val : &bin;
    if (t->kind == E_NAME) {
        NameKind nk = resolve(c, &t->u.name, &i);
        if (nk == N_LOCAL) {
            expr_to(c, rhs, i);
        } else if (nk == N_UPVAL || nk == N_MODULE) {
            int r = push_reg(c, s->line, s->col);
            expr_to(c, rhs, r);
            EMIT(s, nk == N_UPVAL ? mk_abc(OP_SETUPV, r, i, 0) : mk_abx(OP_SETMOD, r, i));
        } else if (nk == N_NATIVE) {
            error(c, t->line, t->col, "cannot assign to the native '%s'", t->u.name.s);
        }
        free_to(c, save);
        return;
    }
    if (t->kind != E_INDEX)
        return;     /* reported by the parser */
    int ro = expr_any(c, t->u.index.obj), k = 256;
    Expr *key = t->u.index.key;
    fold(c, key);
    int rk = str_key(c, key, &k) ? -1 : expr_any(c, key);
    int rv;
    if (op == T_ASSIGN) {
        rv = expr_any(c, val);
    } else {
        /* obj and key are evaluated once: read, combine, write back. */
        rv = push_reg(c, s->line, s->col);
        EMIT(t, rk < 0 ? mk_abc(OP_GETINDEXK, rv, ro, k) : mk_abc(OP_GETINDEX, rv, ro, rk));
        static const VmOpcode rr[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD};
        EMIT(s, mk_abc(rr[arith_of(op)], rv, rv, expr_any(c, val)));
    }
    EMIT(s, rk < 0 ? mk_abc(OP_SETINDEXK, ro, k, rv) : mk_abc(OP_SETINDEX, ro, rk, rv));
    free_to(c, save);
}

static void if_stmt(Compiler *c, Stmt *s)
{
    int f = cond_jump(c, s->u.ifs.cond, false);
    begin_scope(c);
    statements(c, &s->u.ifs.then);
    end_scope(c, s->line, s->col);
    if (!s->u.ifs.els) {
        patch(c, f, here(c));
        return;
    }
    int end = emit_jump(c, s->line, s->col);
    patch(c, f, here(c));
    stmt(c, s->u.ifs.els);
    patch(c, end, here(c));
}

static void enter_loop(Compiler *c, Loop *l)
{
    l->prev = c->fs->loop;
    l->breaks = l->continues = NO_JUMP;
    l->nlocals = c->fs->nlocals;
    l->try_depth = c->fs->try_depth;
    c->fs->loop = l;
}

static void while_stmt(Compiler *c, Stmt *s)
{
    Loop l;
    int start = here(c);
    int exit = cond_jump(c, s->u.whiles.cond, false);
    enter_loop(c, &l);
    begin_scope(c);
    statements(c, &s->u.whiles.body);
    end_scope(c, s->line, s->col);
    patch(c, l.continues, here(c));
    jump_back(c, s, start);
    c->fs->loop = l.prev;
    patch(c, concat_jumps(c, exit, l.breaks), here(c));
}

/* FORLOOP and ITERLOOP at loop jump back by sBx to body. */
static void back_jump(Compiler *c, Stmt *s, int loop, int body)
{
    int back = loop + 1 - body;
    Instr *i = &c->fs->code[loop];
    if (back > MAX_sBx)
        error(c, s->line, s->col, "loop body too large");
    else
        *i = mk_abx(OP(*i), GA(*i), back + 32767);
}

/* for v in a..b: R[base] counter, R[base+1] limit, R[base+2] v. */
static void for_range(Compiler *c, Stmt *s)
{
    Loop l;
    int base = push_reg(c, s->line, s->col);
    push_reg(c, s->line, s->col);
    expr_to(c, s->u.fors.iter, base);
    expr_to(c, s->u.fors.limit, base + 1);
    c->fs->nactive = base + 2;  /* the hidden counter and limit stay put */
    int prep = EMIT(s, mk_abx(OP_FORPREP, base, 0));
    enter_loop(c, &l);
    begin_scope(c);
    int body = here(c);
    declare_local(c, &s->u.fors.var1);
    statements(c, &s->u.fors.body);
    end_scope(c, s->line, s->col);
    patch(c, l.continues, here(c));
    int loop = EMIT(s, mk_abx(OP_FORLOOP, base, 0));
    back_jump(c, s, loop, body);
    set_jump(c, prep, here(c));
    c->fs->loop = l.prev;
    patch(c, l.breaks, here(c));
    c->fs->nactive = base;
    free_to(c, base);
}

/* for v in x / for k, v in x: R[base] x, R[base+1] cursor, then the variables. */
static void for_iter(Compiler *c, Stmt *s)
{
    Loop l;
    bool two = s->u.fors.var2.s != NULL;
    int base = push_reg(c, s->line, s->col);
    push_reg(c, s->line, s->col);
    expr_to(c, s->u.fors.iter, base);
    c->fs->nactive = base + 2;
    int prep = EMIT(s, mk_abx(OP_ITERPREP, base, 0));
    enter_loop(c, &l);
    begin_scope(c);
    int body = here(c);
    declare_local(c, &s->u.fors.var1);
    if (two)
        declare_local(c, &s->u.fors.var2);
    statements(c, &s->u.fors.body);
    end_scope(c, s->line, s->col);
    patch(c, l.continues, here(c));
    set_jump(c, prep, here(c));
    int loop = EMIT(s, mk_abx(two ? OP_ITERLOOP2 : OP_ITERLOOP, base, 0));
    back_jump(c, s, loop, body);
    c->fs->loop = l.prev;
    patch(c, l.breaks, here(c));
    /* Done or broken out of: a cursor holding files (a query's) closes. */
    EMIT(s, mk_abc(OP_CLOSE, base, 0, 0));
    c->fs->nactive = base;
    free_to(c, base);
}

static void break_stmt(Compiler *c, Stmt *s)
{
    Loop *l = c->fs->loop;
    const char *what = s->kind == S_BREAK ? "break" : "continue";
    if (!l) {
        error(c, s->line, s->col, "'%s' outside a loop", what);
        return;
    }
    for (int i = l->try_depth; i < c->fs->try_depth; i++)
        EMIT(s, mk_abc(OP_ENDTRY, 0, 0, 0));
    drop_locals(c, l->nlocals, s->line, s->col);
    int j = emit_jump(c, s->line, s->col);
    if (s->kind == S_BREAK)
        l->breaks = concat_jumps(c, l->breaks, j);
    else
        l->continues = concat_jumps(c, l->continues, j);
}

static void return_stmt(Compiler *c, Stmt *s)
{
    if (!s->u.expr) {
        EMIT(s, mk_abc(OP_RETURN0, 0, 0, 0));
        return;
    }
    int save = c->fs->freereg;
    EMIT(s, mk_abc(OP_RETURN, expr_any(c, s->u.expr), 0, 0));
    free_to(c, save);
}

static void try_stmt(Compiler *c, Stmt *s)
{
    int reg = c->fs->freereg;
    int try = EMIT(s, mk_abx(OP_TRY, reg, 0));
    c->fs->try_depth++;
    begin_scope(c);
    statements(c, &s->u.trys.body);
    end_scope(c, s->line, s->col);
    c->fs->try_depth--;
    EMIT(s, mk_abc(OP_ENDTRY, 0, 0, 0));
    int end = emit_jump(c, s->line, s->col);
    set_jump(c, try, here(c));
    begin_scope(c);
    declare_local(c, &s->u.trys.var);
    statements(c, &s->u.trys.handler);
    end_scope(c, s->line, s->col);
    patch(c, end, here(c));
}

/* The name an import binds: its `as`, else b for `import "a/b.comb"`.
 * False if it has none (reported when the import is compiled). */
static bool import_name(Compiler *c, Stmt *s, Name *n)
{
    *n = s->u.import.as;
    if (n->s)
        return true;
    const char *p = s->u.import.path, *e = p + s->u.import.n, *b = p;
    for (const char *q = p; q < e; q++)
        if (*q == '/')
            b = q + 1;
    if (e - b > 5 && !memcmp(e - 5, ".comb", 5))
        e -= 5;
    bool ok = b < e && !(*b >= '0' && *b <= '9');
    for (const char *q = b; q < e; q++)
        ok &= (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_';
    if (ok)
        *n = (Name){arena_strndup(c->a, b, (size_t)(e - b)), (size_t)(e - b), s->line, s->col};
    return ok;
}

static void import_stmt(Compiler *c, Stmt *s)
{
    Name n;
    if (!import_name(c, s, &n)) {
        error(c, s->line, s->col, "cannot name the module \"%s\": write import \"...\" as NAME",
              arena_strndup(c->a, s->u.import.path, s->u.import.n));
        return;
    }
    int k = add_const(c, str_const(c, s->u.import.path, s->u.import.n), s->line, s->col);
    if (at_module_level(c)) {
        int slot = module_slot(c, &n, false);
        int r = push_reg(c, s->line, s->col);
        EMIT(s, mk_abx(OP_IMPORT, r, k));
        EMIT(s, mk_abx(OP_SETMOD, r, slot));
        free_to(c, r);
    } else {
        int r = push_reg(c, s->line, s->col);
        EMIT(s, mk_abx(OP_IMPORT, r, k));
        free_to(c, r);
        declare_local(c, &n);
    }
}

static void stmt(Compiler *c, Stmt *s)
{
    switch (s->kind) {
    case S_EXPR: {
        int r = push_reg(c, s->line, s->col);
        expr_to(c, s->u.expr, r);
        free_to(c, r);
        break;
    }
    case S_LET:
        let_stmt(c, s);
        break;
    case S_ASSIGN:
        assign_stmt(c, s);
        break;
    case S_FN:
        if (!at_module_level(c))    /* top-level ones are hoisted */
            fn_stmt(c, s);
        break;
    case S_IF:
        if_stmt(c, s);
        break;
    case S_WHILE:
        while_stmt(c, s);
        break;
    case S_FOR:
        if (s->u.fors.limit && s->u.fors.var2.s)
            error(c, s->u.fors.var2.line, s->u.fors.var2.col, "a range loop has one variable");
        else if (s->u.fors.limit)
            for_range(c, s);
        else
            for_iter(c, s);
        break;
    case S_RETURN:
        return_stmt(c, s);
        break;
    case S_BREAK:
    case S_CONTINUE:
        break_stmt(c, s);
        break;
    case S_TRY:
        try_stmt(c, s);
        break;
    case S_IMPORT:
        import_stmt(c, s);
        break;
    case S_BLOCK:
        begin_scope(c);
        statements(c, &s->u.block);
        end_scope(c, s->line, s->col);
        break;
    }
}

static void statements(Compiler *c, Block *b)
{
    for (int i = 0; i < b->n; i++)
        stmt(c, b->items[i]);
}

/* ---- functions -------------------------------------------------------- */

static void open_function(Compiler *c, FnState *fs)
{
    memset(fs, 0, sizeof *fs);
    fs->up = c->fs;
    fs->p = vm_proto_new(c->vm, c->mod);
    fs->kmap = vm_map_new(c->vm, 0);
    c->fs = fs;
}

/* Copies what was built in the arena into the proto, owned by the VM. */
static VProto *close_function(Compiler *c, int nparams)
{
    FnState *fs = c->fs;
    VProto *p = fs->p;
    VM *vm = c->vm;
    /* each count is set as soon as its block is had: if the next allocation
     * fails, freeing the proto frees what is there by its true size */
    p->code = vm_alloc(vm, fs->ncode * sizeof *p->code);
    memcpy(p->code, fs->code, fs->ncode * sizeof *p->code);
    p->ncode = fs->ncode;
    p->pos = vm_alloc(vm, fs->ncode * sizeof *p->pos);
    memcpy(p->pos, fs->pos, fs->ncode * sizeof *p->pos);
    if (fs->nk) {
        p->k = vm_alloc(vm, fs->nk * sizeof *p->k);
        memcpy(p->k, fs->k, fs->nk * sizeof *p->k);
        p->nk = fs->nk;
    }
    if (fs->nprotos) {
        p->protos = vm_alloc(vm, fs->nprotos * sizeof *p->protos);
        memcpy(p->protos, fs->protos, fs->nprotos * sizeof *p->protos);
        p->nprotos = fs->nprotos;
    }
    if (fs->nupvals) {
        p->upv_local = vm_alloc(vm, (size_t)fs->nupvals);
        memcpy(p->upv_local, fs->upv_local, (size_t)fs->nupvals);
        p->nupvals = (uint8_t)fs->nupvals;
        p->upv_index = vm_alloc(vm, (size_t)fs->nupvals);
        memcpy(p->upv_index, fs->upv_index, (size_t)fs->nupvals);
    }
    p->nparams = (uint8_t)nparams;
    p->maxregs = (uint8_t)(fs->maxregs > nparams ? fs->maxregs : nparams);
    c->fs = fs->up;
    return p;
}

static VProto *function(Compiler *c, FnLit *fn)
{
    FnState fs;
    open_function(c, &fs);
    fs.depth = 1;
    for (int i = 0; i < fn->nparams; i++) {
        for (int j = 0; j < i; j++)
            if (fn->params[j].n == fn->params[i].n &&
                !memcmp(fn->params[j].s, fn->params[i].s, fn->params[i].n))
                error(c, fn->params[i].line, fn->params[i].col, "parameter '%s' given twice",
                      fn->params[i].s);
        declare_local(c, &fn->params[i]);
    }
    statements(c, &fn->body);
    emit(c, fn->line, fn->col, mk_abc(OP_RETURN0, 0, 0, 0));
    VProto *p = close_function(c, fn->nparams);
    p->line = (uint32_t)fn->line;
    p->col = (uint32_t)fn->col;
    p->name = fn->name.s ? vm_str_new(c->vm, fn->name.s, fn->name.n) : NULL;
    return p;
}

/* Module-level names (imports too) are known before any code, so functions
 * may use the ones defined after them; and top-level functions are made
 * first (they capture no locals), so code may call one defined further
 * down. */
static void declare_top_level(Compiler *c, Block *prog)
{
    Name n;
    for (int i = 0; i < prog->n; i++) {
        Stmt *s = prog->items[i];
        if (s->kind == S_LET)
            module_slot(c, &s->u.let.name, true);
        else if (s->kind == S_FN)
            module_slot(c, &s->u.fn->name, true);
        else if (s->kind == S_IMPORT && import_name(c, s, &n))
            module_slot(c, &n, false);
    }
    for (int i = 0; i < prog->n; i++)
        if (prog->items[i]->kind == S_FN)
            fn_stmt(c, prog->items[i]);
}

VProto *lc_compile(VM *vm, VModule *mod, Block *prog, Arena *a, Diag *d)
{
    Compiler c = {.vm = vm, .a = a, .d = d, .mod = mod, .fs = NULL};
    FnState fs;
    int errors = d->nerrors;
    open_function(&c, &fs);
    declare_top_level(&c, prog);
    statements(&c, prog);
    emit(&c, 1, 1, mk_abc(OP_RETURN0, 0, 0, 0));
    VProto *p = close_function(&c, 0);
    p->line = p->col = 1;
    p->name = vm_str_cstr(vm, "<main>");
    return d->nerrors > errors ? NULL : p;
}
