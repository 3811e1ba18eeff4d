/* devices/blas_core.c: OpenBLAS's kernel choice, checked when a program starts. OpenBLAS 0.3.21
 * picks its kernels from the CPU's family and model; on one it does not know (seen: a Sapphire
 * Rapids CPU in a Firecracker VM) it falls back to Prescott's SSE3 kernels: dgemm ran at 27
 * GFLOP/s there against 196 with OPENBLAS_CORETYPE=SkylakeX, so cpu64 trained 4.4x slower. */
#define _GNU_SOURCE /* execv, setenv */
#include "blas_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *openblas_get_corename(void); /* OpenBLAS's own (its cblas.h) */

/* what OpenBLAS had chosen before this process was executed again, "" when it was not */
static char fixed_from[64];

const char *blas_core_fixed_from(void)
{
    return fixed_from[0] ? fixed_from : NULL;
}

const char *blas_core_name(void)
{
    const char *name = openblas_get_corename();
    return name ? name : "unknown";
}

/* the kernel set this CPU can run best of those OpenBLAS offers, NULL when none above SSE3 */
static const char *core_for_this_cpu(void)
{
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) /* GCC checks the OS keeps the state too (XCR0) */
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
#endif
    return NULL;
}

void blas_core_fix(char **argv)
{
    const char *was = getenv("HARNESS_BLAS_CORE_WAS");
    if (was) { /* executed again: OpenBLAS has read the variable; the commands this process
                * starts (exec's training job, mpirun's ranks) get the environment as it was */
        snprintf(fixed_from, sizeof fixed_from, "%s", was);
        unsetenv("HARNESS_BLAS_CORE_WAS");
        unsetenv("OPENBLAS_CORETYPE");
        return;
    }
    if (getenv("OPENBLAS_CORETYPE"))
        return; /* the user's choice */
    const char *as = getenv("HARNESS_BLAS_CORE_AS"); /* tests: as if OpenBLAS had chosen it */
    const char *core = as && *as ? as : blas_core_name(), *want = core_for_this_cpu();
    if (strcmp(core, "Prescott") != 0 || !want)
        return;
    if (setenv("OPENBLAS_CORETYPE", want, 1) || setenv("HARNESS_BLAS_CORE_WAS", core, 1))
        return;
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE"); /* not executed: run on with the kernels loaded */
    unsetenv("HARNESS_BLAS_CORE_WAS");
}
