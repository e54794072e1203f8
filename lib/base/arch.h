/* arch.h — PD_X86: whether x86-only code (intrinsics, __builtin_cpu_*,
 * the pause instruction) is built. Defined on x86 under GCC or clang unless
 * the build says -DPD_NO_X86, which builds the portable paths only, as on
 * any other CPU (test/scripts/no_x86.sh builds and runs the tree so). */
#ifndef PD_ARCH_H
#define PD_ARCH_H

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && !defined(PD_NO_X86)
#define PD_X86 1
#endif

#endif
