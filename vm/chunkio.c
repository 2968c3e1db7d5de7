/* chunkio: a compiled module as bytes and back, for the module cache.
 *
 * Layout: "COMBCHK1", build fingerprint (8), key (8), the module, then an
 * XXH3 of everything before it (8). The module: its top-level names in slot
 * order (name, exported), then its main function. A function: code, source
 * positions, constants, nested functions, upvalue descriptors, line, col,
 * parameters, registers, name. Counts are u32, values tagged. */
#include "config.h"
#include "vm/chunkio.h"

#include <link.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY     /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "store/bytes.h"
#include "vm/natives.h"
#include "vm/opcodes.h"

#define MAGIC "COMBCHK1"
#define HEAD 24             /* magic, build, key */
#define MAX_DEPTH 64        /* nested arrays, nested functions */

enum { T_NIL, T_FALSE, T_TRUE, T_INT, T_FLOAT, T_STR, T_ARRAY };

/* ---- the build -------------------------------------------------------- */

/* The GNU build id note of the executable (the first object listed). */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *ud)
{
    (void)size;
    XXH3_state_t *h = ud;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
            const char *name = p + sizeof *nh;
            const char *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4))
                XXH3_64bits_update(h, desc, nh->n_descsz);
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 1;
}

uint64_t vm_chunk_build(void)
{
    static uint64_t build;
    if (build)
        return build;
    XXH3_state_t h;
    XXH3_64bits_reset(&h);
    XXH3_64bits_update(&h, MAGIC PACKAGE_VERSION, sizeof MAGIC PACKAGE_VERSION);
    dl_iterate_phdr(find_build_id, &h);
    for (int i = 0; i < OP__COUNT; i++)
        XXH3_64bits_update(&h, vm_op_names[i], strlen(vm_op_names[i]) + 1);
    for (size_t i = 0; i < vm_nnatives; i++)
        XXH3_64bits_update(&h, vm_natives[i].name, strlen(vm_natives[i].name) + 1);
    build = XXH3_64bits_digest(&h) | 1;
    return build;
}

/* ---- writing ---------------------------------------------------------- */

typedef struct Writer {
    VM *vm;
    VStrBuf sb;
} Writer;

static void put(Writer *w, const void *p, size_t n) { vm_sb_add(w->vm, &w->sb, p, n); }
static void put8(Writer *w, unsigned v)
{
    unsigned char b = (unsigned char)v;
    put(w, &b, 1);
}
static void put32(Writer *w, uint64_t v)
{
    unsigned char b[4];
    st_put32(b, (uint32_t)v);
    put(w, b, 4);
}
static void put64(Writer *w, uint64_t v)
{
    unsigned char b[8];
    st_put64(b, v);
    put(w, b, 8);
}
static void put_str(Writer *w, const VStr *s)
{
    put32(w, s->len);
    put(w, s->data, s->len);
}

static bool put_value(Writer *w, Value v, int depth)
{
    uint64_t bits;
    switch (v.type) {
    case VT_NIL: put8(w, T_NIL); return true;
    case VT_BOOL: put8(w, v.as.b ? T_TRUE : T_FALSE); return true;
    case VT_INT: put8(w, T_INT); put64(w, (uint64_t)v.as.i); return true;
    case VT_FLOAT:
        memcpy(&bits, &v.as.f, 8);
        put8(w, T_FLOAT);
        put64(w, bits);
        return true;
    case VT_STR: put8(w, T_STR); put_str(w, AS_STR(v)); return true;
    case VT_ARRAY:
        if (depth >= MAX_DEPTH)
            return false;
        put8(w, T_ARRAY);
        put32(w, AS_ARRAY(v)->len);
        for (size_t i = 0; i < AS_ARRAY(v)->len; i++)
            if (!put_value(w, AS_ARRAY(v)->items[i], depth + 1))
                return false;
        return true;
    default:
        return false;   /* handles (regex, schema literals), maps, functions */
    }
}

static bool put_proto(Writer *w, const VProto *p, int depth)
{
    if (depth >= MAX_DEPTH)
        return false;
    put32(w, p->ncode);
    for (size_t i = 0; i < p->ncode; i++)
        put32(w, p->code[i]);
    for (size_t i = 0; i < p->ncode; i++) {
        VmPos at = vm_chunk_pos(p, i);
        put32(w, at.line);
        put32(w, at.col);
    }
    put32(w, p->nk);
    for (size_t i = 0; i < p->nk; i++)
        if (!put_value(w, p->k[i], 0))
            return false;
    put32(w, p->nprotos);
    for (size_t i = 0; i < p->nprotos; i++)
        if (!put_proto(w, p->protos[i], depth + 1))
            return false;
    put8(w, p->nupvals);
    put(w, p->upv_local, p->nupvals);
    put(w, p->upv_index, p->nupvals);
    put32(w, p->line);
    put32(w, p->col);
    put8(w, p->nparams);
    put8(w, p->maxregs);
    put8(w, p->name != NULL);
    if (p->name)
        put_str(w, p->name);
    return true;
}

VStr *vm_chunk_save(VM *vm, VModule *m, uint64_t key)
{
    Writer w = {.vm = vm};
    vm_sb_init(vm, &w.sb, 4096);
    vm_push_root(vm, v_obj(w.sb.s));
    put(&w, MAGIC, 8);
    put64(&w, vm_chunk_build());
    put64(&w, key);
    /* the names by slot, which the symbol map gives in the order made */
    VArray *names = vm_array_new(vm, m->nvars);
    vm_push_root(vm, v_obj(names));
    size_t pos = 0;
    Value k, v;
    while (vm_map_next(m->symbols, &pos, &k, &v))
        vm_array_push(vm, names, k);
    bool ok = names->len == m->nvars;
    put32(&w, m->nvars);
    for (size_t i = 0; ok && i < m->nvars; i++) {
        Value *slot = vm_map_ref(m->symbols, names->items[i]);
        ok = IS_STR(names->items[i]) && slot && (size_t)slot->as.i == i;
        if (ok)
            put_str(&w, AS_STR(names->items[i]));
        put8(&w, m->exported[i]);
    }
    ok = ok && put_proto(&w, m->main, 0);
    vm_pop_root(vm, 2);
    if (!ok)
        return NULL;
    put64(&w, XXH3_64bits(w.sb.s->chars, w.sb.s->len));
    return vm_sb_done(vm, &w.sb);
}

/* ---- reading ---------------------------------------------------------- */

/* The strings read so far, by their bytes' hash: a module's functions
 * repeat their constants (gre's 500 are 247 strings), and each string is an
 * allocation at start-up. Strings are values: sharing one is safe. Full at
 * 3/4, later strings are made anew. */
#define STRS 1024

typedef struct OpCheck OpCheck;
typedef struct Reader {
    VM *vm;
    VModule *m;
    const unsigned char *base, *p, *end;
    bool bad;
    bool keep_pos;          /* positions left in the file (vm_chunk_pos) */
    VStr **strs;            /* STRS slots, open addressing */
    size_t nstrs;
} Reader;

/* The next n bytes, or NULL (and bad) past the end. */
static const unsigned char *take(Reader *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        return NULL;
    }
    const unsigned char *at = r->p;
    r->p += n;
    return at;
}
static unsigned get8(Reader *r)
{
    const unsigned char *b = take(r, 1);
    return b ? b[0] : 0;
}
static uint32_t get32(Reader *r)
{
    const unsigned char *b = take(r, 4);
    return b ? st_get32(b) : 0;
}
static uint64_t get64(Reader *r)
{
    const unsigned char *b = take(r, 8);
    return b ? st_get64(b) : 0;
}
_Static_assert(sizeof(VmPos) == 8, "a VmPos is two u32s");

/* n u32s into to[] (a VmPos array is one of 2n u32s). */
static void get_u32s(Reader *r, uint32_t *to, size_t n)
{
    const unsigned char *b = take(r, 4 * n);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (b)
        memcpy(to, b, 4 * n);
#else
    for (size_t i = 0; b && i < n; i++)
        to[i] = st_get32(b + 4 * i);
#endif
}
/* A count of items of at least size bytes each that the rest can hold. */
static uint32_t get_count(Reader *r, size_t size)
{
    uint32_t n = get32(r);
    if ((size_t)(r->end - r->p) / size < n)
        r->bad = true;
    return r->bad ? 0 : n;
}
static VStr *get_str(Reader *r)
{
    uint32_t n = get_count(r, 1);
    const unsigned char *b = take(r, n);
    if (!b)
        return NULL;
    size_t h = (size_t)XXH3_64bits(b, n) & (STRS - 1);
    for (VStr *s; (s = r->strs[h]); h = (h + 1) & (STRS - 1))
        if (s->len == n && !memcmp(s->data, b, n))
            return s;
    VStr *s = vm_str_new(r->vm, (const char *)b, n);
    if (r->nstrs < STRS / 4 * 3) {
        r->strs[h] = s;
        r->nstrs++;
    }
    return s;
}

static Value get_value(Reader *r, int depth)
{
    uint64_t bits;
    double f;
    switch (get8(r)) {
    case T_NIL: return v_nil();
    case T_FALSE: return v_bool(false);
    case T_TRUE: return v_bool(true);
    case T_INT: return v_int((int64_t)get64(r));
    case T_FLOAT:
        bits = get64(r);
        memcpy(&f, &bits, 8);
        return v_float(f);
    case T_STR: {
        VStr *s = get_str(r);
        return s ? v_obj(s) : v_nil();
    }
    case T_ARRAY: {
        uint32_t n = get_count(r, 1);
        if (depth >= MAX_DEPTH)
            r->bad = true;
        if (r->bad)
            return v_nil();
        VArray *a = vm_array_new(r->vm, n);
        for (uint32_t i = 0; i < n && !r->bad; i++)
            vm_array_push(r->vm, a, get_value(r, depth + 1));
        return v_obj(a);
    }
    default:
        r->bad = true;
        return v_nil();
    }
}

enum { F_none, F_A, F_AB, F_AK, F_AsBx, F_ABx, F_ABC, F_ABK, F_AKC, F_ABI, F_ABk, F_AKk, F_AIk,
       F_Ak, F_sJ };

static const uint8_t op_format[OP__COUNT] = {
#define X(name, fmt, doc) F_##fmt,
    VM_OPCODES(X)
#undef X
};

/* What code_ok checks of an instruction, by opcode: which operand (or jump
 * target) indexes what, and whether a JMP must follow it. Made once per
 * load from op_format, so that the check of each instruction is two table
 * reads and compares, without a branch on its opcode (an indirect jump per
 * instruction, mispredicted, was most of a load). */
enum { O_NONE, O_B, O_C, O_BX, O_FWD, O_BACK, O_J, O__COUNT };
enum { L_ANY, L_K, L_VARS, L_NATIVES, L_PROTOS, L_UPVALS, L_CODE, L_NONE, L__COUNT };
typedef struct OpCheck {
    uint8_t operand, bound;
    bool jmp_next;
    /* the operand as (in >> shift & mask) - bias, plus at when rel is 1,
     * at minus it when rel is -1 (a jump back): a few shifts and adds
     * where making every kind of operand and picking one cost three times
     * the instructions (code_ok was a sixth of `comb gre`'s start-up) */
    uint8_t shift;
    int8_t rel;
    uint32_t mask, bias;
} OpCheck;

static void op_extract(OpCheck *c)
{
    static const struct { uint8_t shift; int8_t rel; uint32_t mask, bias; } x[O__COUNT] = {
        [O_NONE] = {0, 0, 0, 0},           [O_B] = {16, 0, 0xff, 0},
        [O_C] = {24, 0, 0xff, 0},          [O_BX] = {16, 0, 0xffff, 0},
        [O_FWD] = {16, 1, 0xffff, 32767},  [O_BACK] = {16, -1, 0xffff, 32767},
        [O_J] = {8, 1, 0xffffff, 8388607},
    };
    c->shift = x[c->operand].shift;
    c->rel = x[c->operand].rel;
    c->mask = x[c->operand].mask;
    c->bias = x[c->operand].bias;
}

static OpCheck op_check(unsigned op)
{
    if (op >= OP__COUNT)
        return (OpCheck){.operand = O_NONE, .bound = L_NONE};
    unsigned f = op_format[op];
    /* a test is read with the JMP after it */
    OpCheck c = {.operand = O_NONE, .bound = L_ANY,
                 .jmp_next = f == F_ABk || f == F_AKk || f == F_AIk || f == F_Ak};
    switch (f) {
    case F_AK: c.operand = O_BX; c.bound = L_K; break;
    case F_ABK: c.operand = O_C; c.bound = L_K; break;
    case F_AKC: case F_AKk: c.operand = O_B; c.bound = L_K; break;
    case F_sJ: c.operand = O_J; c.bound = L_CODE; break;
    case F_AsBx:
        if (op == OP_FORLOOP || op == OP_ITERLOOP || op == OP_ITERLOOP2)
            c = (OpCheck){.operand = O_BACK, .bound = L_CODE};
        else if (op != OP_LOADI)
            c = (OpCheck){.operand = O_FWD, .bound = L_CODE};
        break;
    case F_ABx:
        if (op == OP_GETMOD || op == OP_SETMOD)
            c = (OpCheck){.operand = O_BX, .bound = L_VARS};
        else if (op == OP_GETNATIVE)
            c = (OpCheck){.operand = O_BX, .bound = L_NATIVES};
        else if (op == OP_CLOSURE)
            c = (OpCheck){.operand = O_BX, .bound = L_PROTOS};
        break;
    case F_AB:
        if (op == OP_GETUPV || op == OP_SETUPV)
            c = (OpCheck){.operand = O_B, .bound = L_UPVALS};
        break;
    case F_ABC:
        if (op == OP_CALLN)
            c = (OpCheck){.operand = O_C, .bound = L_NATIVES};
        break;
    default:
        break;
    }
    return c;
}

/* op_check of every opcode, made once a process */
static OpCheck op_checks[256];

static void op_checks_make(void)
{
    for (unsigned op = 0; op < 256; op++) {
        op_checks[op] = op_check(op);
        op_extract(&op_checks[op]);
    }
}

/* Every operand that indexes something in range: the loop trusts them. A
 * jump's target is unsigned, so one before the code is out of range too. */
static bool code_ok(const Reader *r, const VProto *p)
{
    size_t n = p->ncode;
    if (!n || OP(p->code[n - 1]) != OP_RETURN0)
        return false;
    const uint64_t bound[L__COUNT] = {1, p->nk, r->m->nvars, vm_nnatives, p->nprotos,
                                      p->nupvals, n, 0};
    bool ok = true;
    for (size_t i = 0; i + 1 < n; i++) {    /* the last, RETURN0, has none */
        Instr in = p->code[i];
        const OpCheck *c = &op_checks[OP(in)];
        uint64_t at = i + 1;
        uint64_t v = (uint64_t)(in >> c->shift & c->mask) - c->bias;
        uint64_t operand = c->rel ? at + (uint64_t)(int64_t)c->rel * v : v;
        ok &= operand < bound[c->bound];
        ok &= !c->jmp_next || OP(p->code[i + 1]) == OP_JMP;
    }
    return ok;
}

/* A nested function's upvalues name registers or upvalues of up. */
static bool upvals_ok(const VProto *p, const VProto *up)
{
    for (int i = 0; i < p->nupvals; i++)
        if (p->upv_local[i] > 1 ||
            p->upv_index[i] >= (p->upv_local[i] ? up->maxregs : up->nupvals))
            return false;
    return true;
}

static VProto *get_proto(Reader *r, int depth)
{
    if (depth >= MAX_DEPTH) {
        r->bad = true;
        return NULL;
    }
    VM *vm = r->vm;
    VProto *p = vm_proto_new(vm, r->m);
    /* each count is set once its block is had, as the compiler does */
    uint32_t n = get_count(r, 12);
    if (r->bad)
        return NULL;
    p->code = vm_alloc(vm, n * sizeof *p->code);
    get_u32s(r, p->code, n);
    p->ncode = n;
    if (r->keep_pos) {  /* a third of a module's heap, pages touched at each start */
        p->posat = (uint64_t)(r->p - r->base);
        take(r, 8 * (size_t)n);
    } else {
        p->pos = vm_alloc(vm, n * sizeof *p->pos);
        get_u32s(r, &p->pos[0].line, 2 * (size_t)n);
    }
    n = get_count(r, 1);
    if (n) {
        p->k = vm_alloc(vm, n * sizeof *p->k);
        for (uint32_t i = 0; i < n; i++)
            p->k[i] = v_nil();
        p->nk = n;
        for (uint32_t i = 0; i < n && !r->bad; i++)
            p->k[i] = get_value(r, 0);
    }
    n = get_count(r, 12);
    if (n) {
        p->protos = vm_alloc(vm, n * sizeof *p->protos);
        for (uint32_t i = 0; i < n && !r->bad; i++) {
            VProto *q = get_proto(r, depth + 1);
            if (!q)
                return NULL;
            p->protos[p->nprotos++] = q;
        }
    }
    unsigned nup = get8(r);
    const unsigned char *local = take(r, nup), *index = take(r, nup);
    if (r->bad)
        return NULL;
    if (nup) {
        p->upv_local = vm_alloc(vm, nup);
        memcpy(p->upv_local, local, nup);
        p->nupvals = (uint8_t)nup;
        p->upv_index = vm_alloc(vm, nup);
        memcpy(p->upv_index, index, nup);
    }
    p->line = get32(r);
    p->col = get32(r);
    p->nparams = (uint8_t)get8(r);
    p->maxregs = (uint8_t)get8(r);
    if (get8(r))
        p->name = get_str(r);
    /* nested functions are checked against their enclosing one, here */
    for (size_t i = 0; i < p->nprotos; i++)
        if (!upvals_ok(p->protos[i], p))
            r->bad = true;
    if (r->bad || p->nparams > p->maxregs || !code_ok(r, p))
        return NULL;
    return p;
}

VProto *vm_chunk_load(VM *vm, VModule *m, const unsigned char *p, size_t n, uint64_t key,
                      int fd)
{
    if (n < HEAD + 8 || memcmp(p, MAGIC, 8) || st_get64(p + 8) != vm_chunk_build() ||
        st_get64(p + 16) != key || st_get64(p + n - 8) != XXH3_64bits(p, n - 8))
        return NULL;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, op_checks_make);
    VStr *strs[STRS] = {NULL};
    Reader r = {.vm = vm, .m = m, .base = p, .p = p + HEAD, .end = p + n - 8,
                .keep_pos = fd >= 0, .strs = strs};
    uint32_t nvars = get_count(&r, 5);
    for (uint32_t i = 0; i < nvars && !r.bad; i++) {
        VStr *name = get_str(&r);
        unsigned exported = get8(&r);
        if (r.bad || exported > 1 || vm_module_slot(vm, m, name, exported) != i)
            r.bad = true;
    }
    if (r.bad)
        return NULL;
    VProto *main = get_proto(&r, 0);
    if (!main || r.p != r.end || main->nparams || main->nupvals)
        return NULL;
    if (fd >= 0)
        m->posfd = fd;
    return main;
}

VmPos vm_chunk_pos(const VProto *p, size_t at)
{
    if (p->pos)
        return p->pos[at];
    unsigned char b[8];
    int fd = p->module ? p->module->posfd : -1;
    if (fd >= 0 && pread(fd, b, 8, (off_t)(p->posat + 8 * at)) == 8)
        return (VmPos){st_get32(b), st_get32(b + 4)};
    return (VmPos){p->line, p->col};
}
