/* devices/cpu/cpu_ops_loss.c: the cpu backend's softmax cross-entropy, forward (row max
 * subtracted, sums in double) and backward; both parallel over rows. */
#include "cpu_real.h"

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
        const real *xr = x + (size_t)n * V;
        real *pr = p + (size_t)n * V;
        real mx = xr[0];
        for (int i = 1; i < V; i++)
            mx = xr[i] > mx ? xr[i] : mx;
        int ignored = tg[n] == ignore_index;
        double zt = ignored ? 0 : (double)xr[tg[n]] - mx, sum = 0;
        for (int i = 0; i < V; i++) {
            pr[i] = R_EXP(xr[i] - mx);
            sum += pr[i];
        }
        real inv = (real)(1.0 / sum);
        for (int i = 0; i < V; i++)
            pr[i] *= inv;
        loss[n] = ignored ? 0 : (real)(log(sum) - zt);
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
