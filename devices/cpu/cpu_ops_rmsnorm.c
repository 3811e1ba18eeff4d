/* devices/cpu/cpu_ops_rmsnorm.c: the cpu backend's RMSNorm (HF LlamaRMSNorm) over the last
 * dimension, forward and backward. Row (lane by lane) and column sums accumulate in double. */
#include "cpu_real.h"
#include "cpu_simd.h"

#include <math.h>

static void cpu_rmsnorm_forward(device *d, dten out, dten rstd, dten inp, dten w, int N, int C,
                                double eps)
{
    if (!op_rmsnorm_ok(d, "rmsnorm_forward", inp, out, w, rstd, N, C))
        return;
    const real *x = RP(inp), *wt = RP(w);
    real *y = RP(out), *rs = RP(rstd);
#pragma omp parallel for schedule(static)
    for (long n = 0; n < N; n++) {
        const real *xr = x + (size_t)n * C;
        double ss;
        CPU_LANE_SUM(ss, C, (double)xr[i] * xr[i]);
        real r = (real)(1.0 / sqrt(ss / C + eps));
        real *yr = y + (size_t)n * C;
        for (int c = 0; c < C; c++) {
            real xhat = xr[c] * r; /* rounded, as HF's hidden_states * rsqrt(...) */
            yr[c] = xhat * wt[c];
        }
        rs[n] = r;
    }
}

/* dinp += rstd * (dout w - xhat * mean(dout w xhat)) */
static void rms_backward_inp(real *dx, const real *dy, const real *x, const real *w,
                             const real *rs, int N, int C)
{
#pragma omp parallel for schedule(static)
    for (long n = 0; n < N; n++) {
        const real *xr = x + (size_t)n * C, *gr = dy + (size_t)n * C;
        double r = rs[n], m;
        CPU_LANE_SUM(m, C, (double)gr[i] * w[i] * xr[i] * r);
        m /= C;
        real *dr = dx + (size_t)n * C;
        for (int c = 0; c < C; c++)
            dr[c] += (real)(((double)gr[c] * w[c] - xr[c] * r * m) * r);
    }
}

/* dw[c] += sum_n dout * xhat: channel blocks in parallel, rows in order */
static void rms_backward_w(real *dw, const real *dy, const real *x, const real *rs, int N, int C)
{
    int nblocks = (C + CPU_COL_BLOCK - 1) / CPU_COL_BLOCK;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CPU_COL_BLOCK, nc = C - c0 < CPU_COL_BLOCK ? C - c0 : CPU_COL_BLOCK;
        double aw[CPU_COL_BLOCK] = {0};
        for (long n = 0; n < N; n++) {
            const real *xr = x + (size_t)n * C + c0, *gr = dy + (size_t)n * C + c0;
            double r = rs[n];
            for (int j = 0; j < nc; j++)
                aw[j] += (double)gr[j] * xr[j] * r;
        }
        for (int j = 0; j < nc; j++)
            dw[c0 + j] += (real)aw[j];
    }
}

static void cpu_rmsnorm_backward(device *d, dten dinp, dten dw, dten dout, dten inp, dten w,
                                 dten rstd, int N, int C)
{
    const char *op = "rmsnorm_backward";
    if (!op_rmsnorm_ok(d, op, inp, dout, w, rstd, N, C) ||
        !device_view_ok(d, op, "dinp", dinp, (size_t)N * (size_t)C, DT_REAL) ||
        !device_view_ok(d, op, "dw", dw, (size_t)C, DT_REAL))
        return;
    const real *dy = RP(dout), *x = RP(inp), *rs = RP(rstd);
    rms_backward_inp(RP(dinp), dy, x, RP(w), rs, N, C);
    rms_backward_w(RP(dw), dy, x, rs, N, C);
}

void cpu_fill_rmsnorm(device_i *ops)
{
    ops->rmsnorm_forward = cpu_rmsnorm_forward;
    ops->rmsnorm_backward = cpu_rmsnorm_backward;
}
