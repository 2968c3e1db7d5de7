/* cpu: which x86 extensions this CPU offers, for code that picks a vector
 * loop at run time. */
#ifndef COMB_VM_CPU_H
#define COMB_VM_CPU_H

#include <stdbool.h>

typedef enum {
    VM_CPU_SSSE3,
    VM_CPU_SSE4_1,
    VM_CPU_AVX2,
    VM_CPU_AVX512F,
    VM_CPU_AVX512BW,
    VM_CPU_AVX512VBMI,
    VM_CPU_SHA,
} VmCpuFeature;

/* Whether the CPU has f and the OS enables it; false off x86-64. */
bool vm_cpu_has(VmCpuFeature f);

#endif
