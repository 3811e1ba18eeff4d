/* devices/cpu/cpu_ops_silu_mul.c: the cpu backend's SwiGLU gating, out = silu(gate) * up, forward
 * and backward: one parallel loop each, in the element type as PyTorch's fp32 kernels (exp:
 * cpu_vexp, so the loops vectorize). */
#include "cpu_real.h"
#include "cpu_simd.h"

#include <math.h>

static void cpu_silu_mul_forward(device *d, dten out, dten gate, dten up, int n)
{
    if (!op_elementwise_ok(d, "silu_mul_forward", n, out, gate, up))
        return;
    real *o = RP(out);
    const real *g = RP(gate), *u = RP(up);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        real silu = g[i] / (1 + cpu_vexp(-g[i])); /* rounded, as HF's act_fn(gate) */
        o[i] = silu * u[i];
    }
}

static void cpu_silu_mul_backward(device *d, dten dgate, dten dup, dten dout, dten gate, dten up,
                                  int n)
{
    const char *op = "silu_mul_backward";
    if (!op_elementwise_ok(d, op, n, dgate, dup, dout) ||
        !op_elementwise_ok(d, op, n, gate, up, (dten){0}))
        return;
    real *dg = RP(dgate), *du = RP(dup);
    const real *g = RP(gate), *u = RP(up), *dy = RP(dout);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        real s = 1 / (1 + cpu_vexp(-g[i]));
        dg[i] += dy[i] * u[i] * (s * (1 + g[i] * (1 - s)));
        du[i] += dy[i] * (g[i] * s);
    }
}

void cpu_fill_silu_mul(device_i *ops)
{
    ops->silu_mul_forward = cpu_silu_mul_forward;
    ops->silu_mul_backward = cpu_silu_mul_backward;
}
