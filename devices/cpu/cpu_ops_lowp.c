/* devices/cpu/cpu_ops_lowp.c: the cpu backends' bf16/fp16 rounding (devices/lowp.h): cpu rounds its
 * fp32 elements with the bit operations the kernels use, cpu64 its doubles directly to the format. */
#include "cpu_real.h"

#include "lowp.h"

void cpu_round_lowp(device *d, dten x, int n, int mode)
{
    if (!op_round_lowp_ok(d, x, n, mode))
        return;
    real *p = RP(x);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
#ifdef CPU_REAL_DOUBLE
        p[i] = lowp_round_double(p[i], (lowp_mode)mode);
#else
        p[i] = lowp_round_float(p[i], (lowp_mode)mode);
#endif
    }
}
