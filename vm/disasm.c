/* disasm: the bytecode as text (`comb --dump`), generated from the opcode list. */
#include "config.h"

#include <stdio.h>

#include "vm/chunkio.h"
#include "vm/natives.h"
#include "vm/opcodes.h"
#include "vm/vm.h"

const char *const vm_op_names[OP__COUNT] = {
#define X(name, fmt, doc) #name,
    VM_OPCODES(X)
#undef X
};

/* The operand layout of each opcode, as named in the list. */
enum { F_none, F_A, F_AB, F_ABC, F_ABK, F_AKC, F_ABI, F_ABx, F_AK, F_AsBx, F_sJ, F_ABk, F_AKk,
       F_AIk, F_Ak };

static const unsigned char formats[OP__COUNT] = {
#define X(name, fmt, doc) F_##fmt,
    VM_OPCODES(X)
#undef X
};

static void show_const(Value v, FILE *out)
{
    char buf[32];
    switch (v.type) {
    case VT_INT:
        fprintf(out, "%lld", (long long)v.as.i);
        break;
    case VT_FLOAT:
        vm_format_float(v.as.f, buf);
        fputs(buf, out);
        break;
    case VT_STR: {
        const VStr *s = AS_STR(v);
        fputc('"', out);
        for (size_t i = 0; i < s->len && i < 40; i++) {
            unsigned char c = (unsigned char)s->data[i];
            if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f)
                fprintf(out, "\\x%02x", c);
            else
                fputc(c, out);
        }
        fputs(s->len > 40 ? "\"..." : "\"", out);
        break;
    }
    default:
        fprintf(out, "<%s>", v_type_name(v));
        break;
    }
}

static void show_instr(const VProto *p, size_t at, FILE *out)
{
    Instr i = p->code[at];
    VmOpcode op = OP(i);
    VmPos pos = vm_chunk_pos(p, at);
    fprintf(out, "%6zu  %4u:%-4u %-10s", at, pos.line, pos.col, vm_op_names[op]);
    switch (formats[op]) {
    case F_A:
        fprintf(out, " %d", GA(i));
        break;
    case F_AB:
        fprintf(out, " %d %d", GA(i), GB(i));
        break;
    case F_ABC:
        fprintf(out, " %d %d %d", GA(i), GB(i), GC(i));
        if (op == OP_CALLN)
            fprintf(out, "\t; %s", vm_natives[GC(i)].name);
        break;
    case F_ABK:
        fprintf(out, " %d %d K%d\t; ", GA(i), GB(i), GC(i));
        show_const(p->k[GC(i)], out);
        break;
    case F_AKC:
        fprintf(out, " %d K%d %d\t; ", GA(i), GB(i), GC(i));
        show_const(p->k[GB(i)], out);
        break;
    case F_ABI:
        fprintf(out, " %d %d %d", GA(i), GB(i), GsC(i));
        break;
    case F_ABx:
        fprintf(out, " %d %d", GA(i), GBx(i));
        if (op == OP_GETNATIVE)
            fprintf(out, "\t; %s", vm_natives[GBx(i)].name);
        break;
    case F_AK:
        fprintf(out, " %d K%d\t; ", GA(i), GBx(i));
        show_const(p->k[GBx(i)], out);
        break;
    case F_AsBx:
        if (op == OP_LOADI)
            fprintf(out, " %d %d", GA(i), GsBx(i));
        else
            fprintf(out, " %d %d\t; to %zu", GA(i), GsBx(i),
                    at + 1 + (size_t)((op == OP_FORLOOP || op == OP_ITERLOOP ||
                                       op == OP_ITERLOOP2) ? -GsBx(i) : GsBx(i)));
        break;
    case F_sJ:
        fprintf(out, " %d\t; to %zu", GsJ(i), at + 1 + (size_t)GsJ(i));
        break;
    case F_ABk:
        fprintf(out, " %d %d %d", GA(i), GB(i), GC(i));
        break;
    case F_AKk:
        fprintf(out, " %d K%d %d\t; ", GA(i), GB(i), GC(i));
        show_const(p->k[GB(i)], out);
        break;
    case F_AIk:
        fprintf(out, " %d %d %d", GA(i), GsB(i), GC(i));
        break;
    case F_Ak:
        fprintf(out, " %d %d", GA(i), GC(i));
        break;
    default:
        break;
    }
    fputc('\n', out);
}

void vm_disasm(const VProto *p, FILE *out)
{
    fprintf(out, "function %s (%s:%u:%u): %u params, %u registers, %zu constants, %u upvalues\n",
            p->name ? p->name->data : "fn", p->module->path->data, p->line, p->col,
            p->nparams, p->maxregs, p->nk, p->nupvals);
    for (size_t at = 0; at < p->ncode; at++)
        show_instr(p, at, out);
    for (size_t j = 0; j < p->nprotos; j++) {
        fputc('\n', out);
        vm_disasm(p->protos[j], out);
    }
}
