/* devices/cpu/cpu_ops_optim.c: the cpu backend's fused AdamW step (PyTorch's order, in double
 * but for cpu's float sqrt and division) and the sum / sum-of-squares reductions (double, in a
 * fixed chunk order). */
#include "cpu_real.h"
#include "cpu_simd.h"

#include <math.h>

/* elements per chunk of the AdamW loop */
#define ADAMW_CHUNK 8192L

typedef struct {
    double beta1, beta2, eps, step_size, decay, bc2_sqrt;
} adamw_consts;

/* one chunk of the AdamW step, element by element in double, as the other devices' kernels
 * (acc_t) compute it. On cpu the sqrt and the division are in float (16 lanes, not 8; in double
 * they made the step compute-bound, 3.0 ms for gpt2-small's 3.3M parameters against 1.5): the
 * update m / denom to float's 2^-24 of itself, about 1e-10 of the parameter at AdamW's
 * learning rates, while every rounding of the parameter and the moments stays in double (all
 * of the step in float moved qwen2-tiny's grad norm out of its baseline's tolerance). cpu64
 * computes all of it in double. */
CPU_CLONES static void adamw_kernel(real *restrict pp, real *restrict mp, real *restrict vp,
                                    const real *restrict gp, long n, const adamw_consts *k)
{
    const double beta1 = k->beta1, beta2 = k->beta2, step_size = k->step_size, decay = k->decay;
#ifdef CPU_REAL_DOUBLE
    const double eps = k->eps, bc2_sqrt = k->bc2_sqrt;
#else
    const float eps = (float)k->eps, bc2_sqrt = (float)k->bc2_sqrt;
#endif
    for (long i = 0; i < n; i++) {
        double gi = gp[i];
        double mi = beta1 * mp[i] + (1 - beta1) * gi;
        double vi = beta2 * vp[i] + (1 - beta2) * gi * gi;
#ifdef CPU_REAL_DOUBLE
        double denom = sqrt(vi) / bc2_sqrt + eps;
        pp[i] = (real)(pp[i] * decay - step_size * mi / denom);
#else
        float q = (float)mi / (sqrtf((float)vi) / bc2_sqrt + eps);
        pp[i] = (real)(pp[i] * decay - step_size * q);
#endif
        mp[i] = (real)mi;
        vp[i] = (real)vi;
    }
}

/* As torch.optim.AdamW (single tensor, no amsgrad): param *= 1 - lr*wd; m, v updated;
 * step_size = lr / bc1; denom = sqrt(v) / sqrt(bc2) + eps; param -= step_size * m / denom. */
static void cpu_adamw(device *d, dten p, dten g, dten m, dten v, int n, double lr, double beta1,
                      double beta2, double eps, double weight_decay, int t)
{
    const char *op = "adamw";
    if (d->failed)
        return;
    if (t < 1) {
        device_fail(d, "%s: adamw: step t=%d must count from 1", CPU_BACKEND_NAME, t);
        return;
    }
    if (!device_dims_ok(d, op, &n, 1, 0) || !device_view_ok(d, op, "p", p, (size_t)n, DT_REAL) ||
        !device_view_ok(d, op, "g", g, (size_t)n, DT_REAL) ||
        !device_view_ok(d, op, "m", m, (size_t)n, DT_REAL) ||
        !device_view_ok(d, op, "v", v, (size_t)n, DT_REAL))
        return;
    double bc1 = 1 - pow(beta1, t), bc2_sqrt = sqrt(1 - pow(beta2, t));
    adamw_consts k = {beta1, beta2, eps, lr / bc1, 1 - lr * weight_decay, bc2_sqrt};
    real *pp = RP(p), *mp = RP(m), *vp = RP(v);
    const real *gp = RP(g);
    long chunks = ((long)n + ADAMW_CHUNK - 1) / ADAMW_CHUNK;
#pragma omp parallel for schedule(static)
    for (long ch = 0; ch < chunks; ch++) {
        long lo = ch * ADAMW_CHUNK, len = n - lo < ADAMW_CHUNK ? n - lo : ADAMW_CHUNK;
        adamw_kernel(pp + lo, mp + lo, vp + lo, gp + lo, len, &k);
    }
}

/* fixed chunks (not threads) so the sum is the same whatever the thread count */
#define REDUCE_CHUNKS 64

/* the sum (or the sum of squares) of one chunk, lane by lane */
CPU_CLONES static double reduce_chunk(const real *restrict x, long n, int squares)
{
    double s;
    if (squares)
        CPU_LANE_SUM(s, n, (double)x[i] * x[i]);
    else
        CPU_LANE_SUM(s, n, (double)x[i]);
    return s;
}

static double reduce(const real *x, long n, int squares)
{
    double part[REDUCE_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < REDUCE_CHUNKS; c++) {
        long lo = n * c / REDUCE_CHUNKS, hi = n * (c + 1) / REDUCE_CHUNKS;
        part[c] = reduce_chunk(x + lo, hi - lo, squares);
    }
    double s = 0;
    for (int c = 0; c < REDUCE_CHUNKS; c++)
        s += part[c];
    return s;
}

static double cpu_sumsq(device *d, dten x, int n)
{
    if (d->failed || !device_dims_ok(d, "sumsq", &n, 1, 0) ||
        !device_view_ok(d, "sumsq", "x", x, (size_t)n, DT_REAL))
        return 0;
    return reduce(RP(x), n, 1);
}

static double cpu_sum(device *d, dten x, int n)
{
    if (d->failed || !device_dims_ok(d, "sum", &n, 1, 0) ||
        !device_view_ok(d, "sum", "x", x, (size_t)n, DT_REAL))
        return 0;
    return reduce(RP(x), n, 0);
}

void cpu_fill_optim(device_i *ops)
{
    ops->adamw = cpu_adamw;
    ops->sumsq = cpu_sumsq;
    ops->sum = cpu_sum;
}
