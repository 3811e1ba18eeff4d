/* devices/cpu/cpu_ops_layernorm.c: the cpu backend's layernorm over the last dimension, forward
 * and backward. Row statistics and reductions accumulate in double (row sums lane by lane). */
#include "cpu_real.h"
#include "cpu_simd.h"

#include <math.h>

/* rows [0, n) of the forward: y = (x - mean) * rstd * w + b, mean and rstd summed in double,
 * then rounded to the element type and kept; y in the element type from them (16 lanes) */
CPU_CLONES static void ln_forward_rows(real *restrict y, real *restrict mu, real *restrict rs,
                                       const real *restrict x, const real *restrict wt,
                                       const real *restrict bs, long n, int C, double eps)
{
    for (long r = 0; r < n; r++) {
        const real *xr = x + (size_t)r * C;
        double m, v;
        CPU_LANE_SUM(m, C, (double)xr[i]);
        m /= C;
        CPU_LANE_SUM(v, C, ((double)xr[i] - m) * ((double)xr[i] - m));
        double s = 1.0 / sqrt(v / C + eps);
        real *yr = y + (size_t)r * C, mr = (real)m, sr = (real)s; /* as saved for the backward */
        for (int c = 0; c < C; c++)
            yr[c] = (xr[c] - mr) * sr * wt[c] + bs[c];
        mu[r] = mr;
        rs[r] = sr;
    }
}

/* rows per chunk of the row loops */
#define LN_ROWS 8L

static void cpu_layernorm_forward(device *d, dten out, dten mean, dten rstd, dten inp, dten w,
                                  dten b, int N, int C, double eps)
{
    if (!op_layernorm_ok(d, "layernorm_forward", inp, out, w, b, mean, rstd, N, C))
        return;
    const real *x = RP(inp), *wt = RP(w), *bs = RP(b);
    real *y = RP(out), *mu = RP(mean), *rs = RP(rstd);
    long chunks = ((long)N + LN_ROWS - 1) / LN_ROWS;
#pragma omp parallel for schedule(static)
    for (long ch = 0; ch < chunks; ch++) {
        long r0 = ch * LN_ROWS, n = N - r0 < LN_ROWS ? N - r0 : LN_ROWS;
        ln_forward_rows(y + (size_t)r0 * C, mu + r0, rs + r0, x + (size_t)r0 * C, wt, bs, n, C,
                        eps);
    }
}

/* rows [0, n) of dinp += rstd * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat)): the
 * products in the element type (as PyTorch's fp32 kernel; on 16 lanes, not 8), the two row
 * means summed in double */
CPU_CLONES static void ln_backward_rows(real *restrict dx, const real *restrict dy,
                                        const real *restrict x, const real *restrict w,
                                        const real *restrict mu, const real *restrict rs, long n,
                                        int C)
{
    for (long r = 0; r < n; r++) {
        const real *xr = x + (size_t)r * C, *gr = dy + (size_t)r * C;
        real m = mu[r], s = rs[r];
        double m1, m2;
        CPU_LANE_SUM(m1, C, (double)(gr[i] * w[i]));
        CPU_LANE_SUM(m2, C, (double)(gr[i] * w[i] * ((xr[i] - m) * s)));
        real a = (real)(m1 / C), b = (real)(m2 / C);
        real *dr = dx + (size_t)r * C;
        for (int c = 0; c < C; c++) {
            real xhat = (xr[c] - m) * s;
            dr[c] += (gr[c] * w[c] - a - xhat * b) * s;
        }
    }
}

/* dinp += rstd * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat)), dnorm = dout * w */
static void ln_backward_inp(real *dx, const real *dy, const real *x, const real *w,
                            const real *mu, const real *rs, int N, int C)
{
    long chunks = ((long)N + LN_ROWS - 1) / LN_ROWS;
#pragma omp parallel for schedule(static)
    for (long ch = 0; ch < chunks; ch++) {
        long r0 = ch * LN_ROWS, n = N - r0 < LN_ROWS ? N - r0 : LN_ROWS;
        ln_backward_rows(dx + (size_t)r0 * C, dy + (size_t)r0 * C, x + (size_t)r0 * C, w,
                         mu + r0, rs + r0, n, C);
    }
}

/* channels per block of the weight and bias gradients: each channel's sums run over the rows
 * in order, so the width changes no bit; a wide block keeps the rows' reads long */
#define LN_COL_BLOCK 64

/* one block of nc channels: dw += sum_n dout*xhat, db += sum_n dout (rows ld apart) */
CPU_CLONES static void ln_wb_block(real *restrict dw, real *restrict db, const real *restrict dy,
                                   const real *restrict x, const real *restrict mu,
                                   const real *restrict rs, long N, int ld, int nc)
{
    double aw[LN_COL_BLOCK] = {0}, ab[LN_COL_BLOCK] = {0};
    for (long n = 0; n < N; n++) {
        const real *xr = x + (size_t)n * ld, *gr = dy + (size_t)n * ld;
        double m = mu[n], s = rs[n];
        for (int j = 0; j < nc; j++) {
            aw[j] += (double)gr[j] * ((xr[j] - m) * s);
            ab[j] += gr[j];
        }
    }
    for (int j = 0; j < nc; j++) {
        dw[j] += (real)aw[j];
        db[j] += (real)ab[j];
    }
}

/* dw[c] += sum_n dout*xhat, db[c] += sum_n dout: channel blocks in parallel, rows in order */
static void ln_backward_wb(real *dw, real *db, const real *dy, const real *x, const real *mu,
                           const real *rs, int N, int C)
{
    int nblocks = (C + LN_COL_BLOCK - 1) / LN_COL_BLOCK;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * LN_COL_BLOCK, nc = C - c0 < LN_COL_BLOCK ? C - c0 : LN_COL_BLOCK;
        ln_wb_block(dw + c0, db + c0, dy + c0, x + c0, mu, rs, N, C, nc);
    }
}

static void cpu_layernorm_backward(device *d, dten dinp, dten dw, dten db, dten dout, dten inp,
                                   dten w, dten mean, dten rstd, int N, int C)
{
    if (!op_layernorm_backward_ok(d, dinp, dw, db, dout, inp, w, mean, rstd, N, C))
        return;
    const real *dy = RP(dout), *x = RP(inp), *mu = RP(mean), *rs = RP(rstd);
    ln_backward_inp(RP(dinp), dy, x, RP(w), mu, rs, N, C);
    ln_backward_wb(RP(dw), RP(db), dy, x, mu, rs, N, C);
}

void cpu_fill_layernorm(device_i *ops)
{
    ops->layernorm_forward = cpu_layernorm_forward;
    ops->layernorm_backward = cpu_layernorm_backward;
}
