/* mathlib: the C maths library (libm), opened when a maths function is
 * first used; see vm/mathlib.c. */
#ifndef COMB_VM_MATHLIB_H
#define COMB_VM_MATHLIB_H

/* return type, name, parameters, arguments: libm's functions comb calls,
 * each as vm_math_NAME. */
#define VM_MATH_FUNCS(X)                                                       \
    X(double, atan, (double x), (x))                                           \
    X(double, atan2, (double y, double x), (y, x))                             \
    X(double, ceil, (double x), (x))                                           \
    X(double, cos, (double x), (x))                                            \
    X(double, exp, (double x), (x))                                            \
    X(double, floor, (double x), (x))                                          \
    X(double, fma, (double x, double y, double z), (x, y, z))                  \
    X(double, fmod, (double x, double y), (x, y))                              \
    X(double, log, (double x), (x))                                            \
    X(double, log10, (double x), (x))                                          \
    X(double, log2, (double x), (x))                                           \
    X(double, pow, (double x, double y), (x, y))                               \
    X(double, round, (double x), (x))                                          \
    X(double, sin, (double x), (x))                                            \
    X(double, sqrt, (double x), (x))                                           \
    X(double, tan, (double x), (x))                                            \
    X(double, trunc, (double x), (x))

#define VM_MATH_DECL(ret, name, params, args) ret vm_math_##name params;
VM_MATH_FUNCS(VM_MATH_DECL)
#undef VM_MATH_DECL

#endif
