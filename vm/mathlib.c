/* mathlib: libm opened when a maths function is first used, not linked:
 * its mapping, binding and IFUNC resolution cost each run of comb about
 * 10 page faults and as much as loading any other library (docs/BENCH.md,
 * gre's start-up row), and most runs compute no sine. */
#include "config.h"
#include "vm/mathlib.h"

#if __has_include(<gnu/lib-names.h>)
#include <gnu/lib-names.h>  /* LIBM_SO: glibc's soname of libm */
#else
#define LIBM_SO "libm.so.6"
#endif

#include "store/dynlib.h"

ST_DYN_LIB(VM_MATH_FUNCS, LIBM_SO, "the maths library")

#define FORWARD(ret, name, params, args)                                       \
    ret vm_math_##name params                                                  \
    {                                                                          \
        load_once();                                                           \
        return lib.name args;                                                  \
    }
VM_MATH_FUNCS(FORWARD)
