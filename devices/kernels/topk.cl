/* devices/kernels/topk.cl: top-k expert routing, one work-item per token row, the cpu
 * reference's loops and order (softmax sums in acc_t, selection on the logits in torch.topk's
 * order through devices/topk_select.h, embedded ahead of the kernels). The
 * backward raises ERR_TOPK_BWD on an expert id outside [0, E). */

KERNEL void topk_router_forward(GLOBAL float *w, ulong w_off, GLOBAL int *ids,
                                  ulong ids_off, GLOBAL float *probs, ulong p_off,
                                  GLOBAL const float *logits, ulong x_off, int N, int E, int K,
                                  int norm)
{
    size_t n = GLOBAL_ID;
    if (n >= (size_t)N)
        return;
    GLOBAL const float *x = logits + x_off + n * E;
    GLOBAL float *p = probs + p_off + n * E;
    GLOBAL int *id = ids + ids_off + n * K;
    acc_t mx = -INFINITY, sum = 0, sel = 0;
    for (int e = 0; e < E; e++)
        mx = x[e] > mx ? x[e] : mx;
    for (int e = 0; e < E; e++)
        sum += exp((acc_t)x[e] - mx);
    for (int e = 0; e < E; e++)
        p[e] = (float)(exp((acc_t)x[e] - mx) / sum);
    topk_pair q[TOPK_MAX_EXPERTS];
    for (int e = 0; e < E; e++) {
        q[e].v = x[e];
        q[e].i = e;
    }
    topk_select(q, E, K);
    for (int k = 0; k < K; k++) {
        id[k] = q[k].i;
        sel += p[id[k]];
    }
    for (int k = 0; k < K; k++)
        w[w_off + n * K + k] = norm ? (float)(p[id[k]] / sel) : p[id[k]];
}

KERNEL void topk_router_backward(GLOBAL float *dlogits, ulong dx_off,
                                   GLOBAL const float *dweights, ulong dw_off,
                                   GLOBAL const float *weights, ulong w_off,
                                   GLOBAL const int *ids, ulong ids_off,
                                   GLOBAL const float *probs, ulong p_off, int N, int E, int K,
                                   int norm, GLOBAL int *flag)
{
    size_t n = GLOBAL_ID;
    if (n >= (size_t)N)
        return;
    GLOBAL const float *dw = dweights + dw_off + n * K, *w = weights + w_off + n * K;
    GLOBAL const float *p = probs + p_off + n * E;
    GLOBAL const int *id = ids + ids_off + n * K;
    for (int k = 0; k < K; k++)
        if (id[k] < 0 || id[k] >= E) {
            raise_error(flag, ERR_TOPK_BWD);
            return;
        }
    acc_t S = 0, wdw = 0, dot = 0;
    for (int k = 0; k < K; k++) {
        S += p[id[k]];
        wdw += (acc_t)dw[k] * w[k];
    }
    for (int k = 0; k < K; k++)
        dot += p[id[k]] * (norm ? ((acc_t)dw[k] - wdw) / S : (acc_t)dw[k]);
    GLOBAL float *dx = dlogits + dx_off + n * E;
    for (int e = 0; e < E; e++) {
        acc_t dp = 0;
        for (int k = 0; k < K; k++)
            if (id[k] == e)
                dp += norm ? ((acc_t)dw[k] - wdw) / S : (acc_t)dw[k];
        dx[e] += (float)(p[e] * (dp - dot));
    }
}
