/* devices/cpu/cpu_ops_topk.c: the cpu backend's top-k expert routing (softmax over the experts,
 * the K largest in torch.topk's order, optional renormalization), forward and backward, one
 * row per token. */
#include "cpu_real.h"

#include <math.h>

#define TOPK_REAL real
#include "topk_select.h"

/* row n: softmax into p, the ids of the K largest logits in torch.topk's order (the order of the
 * probabilities, but free of each device's exp rounding: device.h) */
static void topk_row_forward(real *w, int32_t *id, real *p, const real *x, int E, int K,
                             int norm)
{
    double mx = -INFINITY, sum = 0, sel = 0;
    topk_pair q[TOPK_MAX_EXPERTS];
    for (int e = 0; e < E; e++)
        mx = x[e] > mx ? x[e] : mx;
    for (int e = 0; e < E; e++)
        sum += exp((double)x[e] - mx);
    for (int e = 0; e < E; e++) {
        p[e] = (real)(exp((double)x[e] - mx) / sum);
        q[e] = (topk_pair){x[e], e};
    }
    topk_select(q, E, K);
    for (int k = 0; k < K; k++) {
        id[k] = q[k].i;
        sel += p[id[k]];
    }
    for (int k = 0; k < K; k++)
        w[k] = norm ? (real)(p[id[k]] / sel) : p[id[k]];
}

static void cpu_topk_router_forward(device *d, dten weights, dten ids, dten probs, dten logits,
                                    int N, int E, int K, int norm)
{
    if (!op_topk_ok(d, "topk_router_forward", weights, ids, probs, logits, N, E, K))
        return;
    real *w = RP(weights), *p = RP(probs);
    int32_t *id = IP(ids);
    const real *x = RP(logits);
#pragma omp parallel for schedule(static)
    for (long n = 0; n < N; n++)
        topk_row_forward(w + (size_t)n * K, id + (size_t)n * K, p + (size_t)n * E,
                         x + (size_t)n * E, E, K, norm);
}

/* row n: dp of the selected (through the renormalization when norm), then the softmax */
static void topk_row_backward(real *dx, const real *dw, const real *w, const int32_t *id,
                              const real *p, int E, int K, int norm)
{
    double S = 0, wdw = 0, dot = 0;
    for (int k = 0; k < K; k++) {
        S += p[id[k]];
        wdw += (double)dw[k] * w[k];
    }
    for (int k = 0; k < K; k++)
        dot += p[id[k]] * (norm ? ((double)dw[k] - wdw) / S : (double)dw[k]);
    for (int e = 0; e < E; e++) {
        double dp = 0;
        for (int k = 0; k < K; k++)
            if (id[k] == e)
                dp += norm ? ((double)dw[k] - wdw) / S : (double)dw[k];
        dx[e] += (real)(p[e] * (dp - dot));
    }
}

static void cpu_topk_router_backward(device *d, dten dlogits, dten dweights, dten weights,
                                     dten ids, dten probs, int N, int E, int K, int norm)
{
    const char *op = "topk_router_backward";
    if (!op_topk_ok(d, op, dweights, ids, probs, dlogits, N, E, K) ||
        !device_view_ok(d, op, "weights", weights, (size_t)N * (size_t)K, DT_REAL))
        return;
    const int32_t *id = IP(ids);
    for (size_t i = 0; i < (size_t)N * (size_t)K; i++)
        if (id[i] < 0 || id[i] >= E) {
            device_fail(d, "%s: %s: expert id %d at position %zu is outside [0, %d)",
                        CPU_BACKEND_NAME, op, (int)id[i], i, E);
            return;
        }
    real *dx = RP(dlogits);
    const real *dw = RP(dweights), *w = RP(weights), *p = RP(probs);
#pragma omp parallel for schedule(static)
    for (long n = 0; n < N; n++)
        topk_row_backward(dx + (size_t)n * E, dw + (size_t)n * K, w + (size_t)n * K,
                          id + (size_t)n * K, p + (size_t)n * E, E, K, norm);
}

void cpu_fill_topk(device_i *ops)
{
    ops->topk_router_forward = cpu_topk_router_forward;
    ops->topk_router_backward = cpu_topk_router_backward;
}
