/* devices/blas_core.h: OpenBLAS's kernel choice, checked when a program starts: a CPU OpenBLAS
 * does not know gets its generic kernels (about 7x slower dgemm), unless OPENBLAS_CORETYPE says. */
#ifndef BLAS_CORE_H
#define BLAS_CORE_H

/* Call first in main, before any thread or file is opened. When OpenBLAS chose its generic
 * fallback (Prescott: SSE3 kernels) on a CPU with AVX-512F or AVX2 and FMA, and
 * OPENBLAS_CORETYPE is unset, sets it (SkylakeX, Haswell) and executes the program again with
 * the same arguments (the same process id: execve), which OpenBLAS reads at load time; the
 * process executed again takes both variables out of its environment, so the commands it starts
 * see the environment the user gave. Returns
 * when nothing is to be done, or when the execution failed (the program then runs on as it was).
 * HARNESS_BLAS_CORE_AS=NAME (tests) acts as if OpenBLAS had chosen NAME. */
void blas_core_fix(char **argv);

/* the kernel set OpenBLAS had chosen when blas_core_fix replaced it ("Prescott"), else NULL */
const char *blas_core_fixed_from(void);

/* OpenBLAS's kernel set ("SkylakeX", "Haswell", "Prescott"...) */
const char *blas_core_name(void);

#endif
