/* opcodes: the one list of VM instructions, from which the enum, the names
 * and the disassembler are generated.
 *
 * An instruction is 32 bits, the opcode in the low byte:
 *
 *     31      24 23      16 15       8 7        0
 *    +----------+----------+----------+----------+
 *    |    C     |    B     |    A     |    op    |   ABC
 *    |         Bx          |    A     |    op    |   ABx  (sBx = Bx - 32767)
 *    |              sJ                |    op    |   sJ   (sJ = J - 8388607)
 *    +----------+----------+----------+----------+
 *
 * R[x] is register x of the running function, K[x] its constant x, U[x]
 * its upvalue x, M[x] variable x of its module, N[x] native x. sB and sC
 * are B - 127 and C - 127. Jumps count from the next instruction.
 *
 * Notes on the irregular ones:
 * - Conditional tests (EQ ... TEST) are followed by a JMP, which is taken
 *   when the test's result equals k (the C field) and skipped otherwise; the
 *   loop reads the JMP at once instead of dispatching it.
 * - FORPREP/FORLOOP use R[A] (counter), R[A+1] (limit), R[A+2] (the loop
 *   variable the body sees); ITERPREP/ITERLOOP use R[A] (what is iterated),
 *   R[A+1] (cursor), R[A+2] and R[A+3] (the loop variables).
 * - CALL leaves its one result in R[A], where the function was.
 *
 * X(name, format, "what it does")
 */
#ifndef COMB_OPCODES_H
#define COMB_OPCODES_H

#include <stdint.h>
#include <stdio.h>

#define VM_OPCODES(X)                                                                \
    X(MOVE,       AB,   "R[A] := R[B]")                                              \
    X(LOADK,      AK,   "R[A] := K[Bx]")                                             \
    X(LOADI,      AsBx, "R[A] := sBx")                                               \
    X(LOADNIL,    AB,   "R[A .. A+B] := nil")                                        \
    X(LOADTRUE,   A,    "R[A] := true")                                              \
    X(LOADFALSE,  A,    "R[A] := false")                                             \
    X(LFALSESKIP, A,    "R[A] := false; skip the next instruction")                  \
    X(GETMOD,     ABx,  "R[A] := M[Bx] (error if not yet defined)")                  \
    X(SETMOD,     ABx,  "M[Bx] := R[A]")                                             \
    X(GETUPV,     AB,   "R[A] := U[B]")                                              \
    X(SETUPV,     AB,   "U[B] := R[A]")                                              \
    X(GETNATIVE,  ABx,  "R[A] := N[Bx]")                                             \
    X(CLOSURE,    ABx,  "R[A] := a closure of nested function Bx")                   \
    X(CLOSE,      A,    "close the upvalues and iterations of registers >= A")                      \
    X(NEWARRAY,   AB,   "R[A] := [] with room for B items")                          \
    X(NEWMAP,     AB,   "R[A] := {} with room for B entries")                        \
    X(APPEND,     AB,   "append R[A+1 .. A+B] to the array R[A]")                    \
    X(GETINDEX,   ABC,  "R[A] := R[B][R[C]]")                                        \
    X(GETINDEXK,  ABK,  "R[A] := R[B][K[C]]")                                        \
    X(GETINDEXI,  ABC,  "R[A] := R[B][C]")                                           \
    X(SETINDEX,   ABC,  "R[A][R[B]] := R[C]")                                        \
    X(SETINDEXK,  AKC,  "R[A][K[B]] := R[C]")                                        \
    X(ADD,        ABC,  "R[A] := R[B] + R[C]")                                       \
    X(SUB,        ABC,  "R[A] := R[B] - R[C]")                                       \
    X(MUL,        ABC,  "R[A] := R[B] * R[C]")                                       \
    X(DIV,        ABC,  "R[A] := R[B] / R[C]")                                       \
    X(MOD,        ABC,  "R[A] := R[B] % R[C]")                                       \
    X(ADDK,       ABK,  "R[A] := R[B] + K[C]")                                       \
    X(SUBK,       ABK,  "R[A] := R[B] - K[C]")                                       \
    X(MULK,       ABK,  "R[A] := R[B] * K[C]")                                       \
    X(DIVK,       ABK,  "R[A] := R[B] / K[C]")                                       \
    X(MODK,       ABK,  "R[A] := R[B] % K[C]")                                       \
    X(ADDI,       ABI,  "R[A] := R[B] + sC")                                         \
    X(UNM,        AB,   "R[A] := -R[B]")                                             \
    X(NOT,        AB,   "R[A] := !R[B]")                                             \
    X(LEN,        AB,   "R[A] := len(R[B])")                                         \
    X(MATCH,      ABC,  "R[A] := R[B] ~ R[C] (regex or pattern string)")             \
    X(MATCHK,     ABK,  "R[A] := R[B] ~ K[C] (a regex literal)")                     \
    X(EQ,         ABk,  "if (R[A] == R[B]) == k then take the next JMP")             \
    X(LT,         ABk,  "if (R[A] < R[B]) == k then take the next JMP")              \
    X(LE,         ABk,  "if (R[A] <= R[B]) == k then take the next JMP")             \
    X(EQK,        AKk,  "if (R[A] == K[B]) == k then take the next JMP")             \
    X(EQI,        AIk,  "if (R[A] == sB) == k then take the next JMP")               \
    X(LTI,        AIk,  "if (R[A] < sB) == k then take the next JMP")                \
    X(LEI,        AIk,  "if (R[A] <= sB) == k then take the next JMP")               \
    X(GTI,        AIk,  "if (R[A] > sB) == k then take the next JMP")                \
    X(GEI,        AIk,  "if (R[A] >= sB) == k then take the next JMP")               \
    X(TEST,       Ak,   "if truthy(R[A]) == k then take the next JMP")               \
    X(JMP,        sJ,   "pc += sJ")                                                  \
    X(FORPREP,    AsBx, "start a range loop; if empty, pc += sBx")                   \
    X(FORLOOP,    AsBx, "count; if R[A] < R[A+1], R[A+2] := R[A] and pc -= sBx")    \
    X(ITERPREP,   AsBx, "start iterating R[A]; pc += sBx (to its ITERLOOP)")         \
    X(ITERLOOP,   AsBx, "next element into R[A+2]; if any, pc -= sBx")              \
    X(ITERLOOP2,  AsBx, "next key and element into R[A+2], R[A+3]; if any, pc -= sBx") \
    X(CALL,       AB,   "R[A] := R[A](R[A+1 .. A+B])")                               \
    X(CALLN,      ABC,  "R[A] := N[C](R[A+1 .. A+B]): a native called by its name")  \
    X(RETURN,     A,    "return R[A]")                                               \
    X(RETURN0,    none, "return nil")                                                \
    X(TRY,        AsBx, "on an error until ENDTRY, R[A] := the error; pc += sBx")    \
    X(ENDTRY,     none, "leave the innermost try")                                   \
    X(IMPORT,     AK,   "R[A] := the module named K[Bx], loaded once")

typedef enum {
#define X(name, fmt, doc) OP_##name,
    VM_OPCODES(X)
#undef X
    OP__COUNT
} VmOpcode;

typedef uint32_t Instr;

#define OP(i)  ((VmOpcode)((i) & 0xffu))
#define GA(i)  ((int)(((i) >> 8) & 0xffu))
#define GB(i)  ((int)(((i) >> 16) & 0xffu))
#define GC(i)  ((int)((i) >> 24))
#define GBx(i) ((int)((i) >> 16))
#define GsBx(i) (GBx(i) - 32767)
#define GsB(i) (GB(i) - 127)
#define GsC(i) (GC(i) - 127)
#define GsJ(i) ((int)((i) >> 8) - 8388607)

#define MAX_A   255
#define MAX_Bx  65535
#define MAX_sBx 32768
#define MIN_sBx (-32767)
#define MAX_sJ  8388608
#define MIN_sJ  (-8388607)
#define MIN_sC  (-127)
#define MAX_sC  128

static inline Instr mk_abc(VmOpcode op, int a, int b, int c)
{
    return (Instr)op | (Instr)a << 8 | (Instr)b << 16 | (Instr)c << 24;
}
static inline Instr mk_abx(VmOpcode op, int a, int bx)
{
    return (Instr)op | (Instr)a << 8 | (Instr)bx << 16;
}
static inline Instr mk_sj(VmOpcode op, int sj)
{
    return (Instr)op | (Instr)(sj + 8388607) << 8;
}

extern const char *const vm_op_names[OP__COUNT];

struct VProto;
/* Print fn's code, constants and nested functions (`comb --dump`). */
void vm_disasm(const struct VProto *p, FILE *out);

#endif
