/* cpu: the CPU's extensions as glibc's dynamic linker found them at start
 * (<sys/platform/x86.h>, glibc 2.33 on). GCC's __builtin_cpu_supports and
 * target_clones link libgcc's constructor, which asks the CPU again (CPUID:
 * a trap to the hypervisor in a VM) at every start of comb, used or not:
 * 2% of `comb gre`'s start-up. Without the header, GCC's builtins. */
#include "config.h"
#include "vm/cpu.h"

#if defined(__x86_64__) && defined(HAVE_SYS_PLATFORM_X86_H)
#include <sys/platform/x86.h>
#define HAS(glibc, gcc) CPU_FEATURE_ACTIVE(glibc)
#elif defined(__x86_64__) && defined(__GNUC__)
#define HAS(glibc, gcc) __builtin_cpu_supports(gcc)
#endif

bool vm_cpu_has(VmCpuFeature f)
{
#ifdef HAS
    switch (f) {
    case VM_CPU_SSSE3: return HAS(SSSE3, "ssse3");
    case VM_CPU_SSE4_1: return HAS(SSE4_1, "sse4.1");
    case VM_CPU_AVX2: return HAS(AVX2, "avx2");
    case VM_CPU_AVX512F: return HAS(AVX512F, "avx512f");
    case VM_CPU_AVX512BW: return HAS(AVX512BW, "avx512bw");
    case VM_CPU_AVX512VBMI: return HAS(AVX512_VBMI, "avx512vbmi");
    case VM_CPU_SHA: return HAS(SHA, "sha");
    }
#endif
    (void)f;
    return false;
}
