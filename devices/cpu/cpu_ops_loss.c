/* devices/cpu/cpu_ops_loss.c: the cpu backend's softmax cross-entropy, forward (row max
 * subtracted, sums in double) and backward; both parallel over rows. */
#include "cpu_real.h"
#include "cpu_simd.h"

#include <math.h>

/* views, and every target is ignore_index or a class in [0, V) */
static int xent_ok(device *d, const char *op, dten probs, dten targets, int N, int V,
                   int ignore_index)
{
    if (!op_xent_ok(d, op, probs, targets, N, V))
        return 0;
    const int32_t *tg = IP(targets);
    for (int n = 0; n < N; n++) {
        if (tg[n] != ignore_index && (tg[n] < 0 || tg[n] >= V)) {
            device_fail(d, "%s: %s: target %d of row %d is outside [0, %d) and not the ignore "
                        "index %d", CPU_BACKEND_NAME, op, (int)tg[n], n, V, ignore_index);
            return 0;
        }
    }
    return 1;
}

/* the largest of x[0..V), lane by lane (the same value in any order; NaNs are passed over
 * here and come out of the exps) */
static inline real row_max(const real *restrict x, int V)
{
    real lane[CPU_LANES];
    for (int j = 0; j < CPU_LANES; j++)
        lane[j] = x[0];
    int whole = V - V % CPU_LANES;
    for (int base = 0; base < whole; base += CPU_LANES)
        for (int j = 0; j < CPU_LANES; j++)
            lane[j] = x[base + j] > lane[j] ? x[base + j] : lane[j];
    real mx = x[0];
    for (int i = whole; i < V; i++)
        mx = x[i] > mx ? x[i] : mx;
    for (int j = 0; j < CPU_LANES; j++)
        mx = lane[j] > mx ? lane[j] : mx;
    return mx;
}

/* one row: pr = softmax(xr), the loss -log pr[target] (0 when ignored) */
CPU_CLONES static real xent_row(real *pr, const real *xr, int V, int target,
                                int ignored)
{
    real mx = row_max(xr, V);
    double zt = ignored ? 0 : (double)xr[target] - mx, sum;
    /* the exps in a loop of their own: GCC vectorizes no store inside the lane sum */
    for (int i = 0; i < V; i++)
        pr[i] = cpu_vexp(xr[i] - mx);
    CPU_LANE_SUM(sum, V, (double)pr[i]);
    real inv = (real)(1.0 / sum);
    for (int i = 0; i < V; i++)
        pr[i] *= inv;
    return ignored ? 0 : (real)(log(sum) - zt);
}

/* probs may be the logits view itself: each row is read before it is overwritten */
static void cpu_softmax_xent_forward(device *d, dten losses, dten probs, dten logits,
                                     dten targets, int N, int V, int ignore_index)
{
    const char *op = "softmax_xent_forward";
    if (d->failed || !xent_ok(d, op, probs, targets, N, V, ignore_index) ||
        !device_view_ok(d, op, "logits", logits, (size_t)N * (size_t)V, DT_REAL) ||
        !device_view_ok(d, op, "losses", losses, (size_t)N, DT_REAL))
        return;
    const real *x = RP(logits);
    const int32_t *tg = IP(targets);
    real *p = RP(probs), *loss = RP(losses);
#pragma omp parallel for schedule(static)
    for (long n = 0; n < N; n++) {
        int ignored = tg[n] == ignore_index;
        loss[n] = xent_row(p + (size_t)n * V, x + (size_t)n * V, V, ignored ? 0 : tg[n], ignored);
    }
}

static void cpu_softmax_xent_backward(device *d, dten dlogits, dten probs, dten targets, int N,
                                      int V, int ignore_index, double scale)
{
    const char *op = "softmax_xent_backward";
    if (d->failed || !xent_ok(d, op, probs, targets, N, V, ignore_index) ||
        !device_view_ok(d, op, "dlogits", dlogits, (size_t)N * (size_t)V, DT_REAL))
        return;
    const real *p = RP(probs);
    const int32_t *tg = IP(targets);
    real *g = RP(dlogits);
    const real s = (real)scale;
#pragma omp parallel for schedule(static)
    for (long n = 0; n < N; n++) {
        if (tg[n] == ignore_index)
            continue;
        const real *pr = p + (size_t)n * V;
        real *gr = g + (size_t)n * V;
        for (int i = 0; i < V; i++)
            gr[i] += s * (pr[i] - (i == tg[n]));
    }
}

void cpu_fill_loss(device_i *ops)
{
    ops->softmax_xent_forward = cpu_softmax_xent_forward;
    ops->softmax_xent_backward = cpu_softmax_xent_backward;
}
