/* test_cpu: vm_cpu_has, read from glibc's record of the CPU, against GCC's
 * own CPUID probe (__builtin_cpu_supports) for every feature. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "vm/cpu.h"

static void agrees_with_cpuid(void **state)
{
    (void)state;
#if defined(__x86_64__) && defined(__GNUC__) && defined(HAVE_SYS_PLATFORM_X86_H)
    __builtin_cpu_init();
    assert_int_equal(vm_cpu_has(VM_CPU_SSSE3), !!__builtin_cpu_supports("ssse3"));
    assert_int_equal(vm_cpu_has(VM_CPU_SSE4_1), !!__builtin_cpu_supports("sse4.1"));
    assert_int_equal(vm_cpu_has(VM_CPU_AVX2), !!__builtin_cpu_supports("avx2"));
    assert_int_equal(vm_cpu_has(VM_CPU_AVX512F), !!__builtin_cpu_supports("avx512f"));
    assert_int_equal(vm_cpu_has(VM_CPU_AVX512BW), !!__builtin_cpu_supports("avx512bw"));
    assert_int_equal(vm_cpu_has(VM_CPU_AVX512VBMI), !!__builtin_cpu_supports("avx512vbmi"));
    assert_int_equal(vm_cpu_has(VM_CPU_SHA), !!__builtin_cpu_supports("sha"));
    /* every x86-64 this runs on has SSSE3 (since 2006): a probe that says
     * none at all is broken, not old */
    assert_true(vm_cpu_has(VM_CPU_SSSE3));
#else
    /* loudly: no x86-64 CPUID to compare against, or no glibc record (then
     * vm_cpu_has is GCC's probe itself, and comparing proves nothing) */
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(agrees_with_cpuid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
