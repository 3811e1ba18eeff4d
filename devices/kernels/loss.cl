/* devices/kernels/loss.cl: softmax cross-entropy. Forward: one work-group per row (max
 * and sum through work-group reductions; probs may be the logits view itself: each element is
 * read before the item that owns it overwrites it). Backward: one item per element. */

KERNEL void softmax_xent_forward(GLOBAL float *losses, ulong loss_off, GLOBAL float *probs,
                                   ulong probs_off, GLOBAL const float *logits,
                                   ulong logits_off, GLOBAL const int *targets, ulong tg_off,
                                   int V, int ignore_index, GLOBAL int *flag)
{
    LOCAL_MEM float fbuf[WG_BUF];
    LOCAL_MEM acc_t abuf[WG_BUF];
    size_t n = GROUP_ID;
    int lid = LOCAL_ID;
    GLOBAL const float *x = logits + logits_off + n * V;
    GLOBAL float *p = probs + probs_off + n * V;
    int tg = targets[tg_off + n];
    int ignored = tg == ignore_index, bad = !ignored && (tg < 0 || tg >= V);
    float xt = ignored || bad ? 0.0f : x[tg]; /* read before any item writes p */
    float mx = -INFINITY;
    for (int i = lid; i < V; i += WG)
        mx = fmax(mx, x[i]);
    mx = wg_max(fbuf, mx);
    acc_t sum = 0;
    for (int i = lid; i < V; i += WG) {
        float e = exp(x[i] - mx);
        p[i] = e;
        sum += e;
    }
    sum = wg_sum(abuf, sum);
    float inv = (float)((acc_t)1 / sum);
    for (int i = lid; i < V; i += WG)
        p[i] *= inv;
    if (lid == 0) {
        losses[loss_off + n] = ignored || bad ? 0.0f : (float)(log(sum) - ((acc_t)xt - mx));
        if (bad)
            raise_error(flag, ERR_TARGET_FWD);
    }
}

/* dlogits[n,i] += scale * (probs[n,i] - (i == target)) for rows not ignored */
KERNEL void softmax_xent_backward(GLOBAL float *dlogits, ulong dl_off,
                                    GLOBAL const float *probs, ulong probs_off,
                                    GLOBAL const int *targets, ulong tg_off, int V,
                                    int ignore_index, float scale, ulong total,
                                    GLOBAL int *flag)
{
    size_t i = GLOBAL_ID;
    if (i >= total)
        return;
    size_t n = i / V;
    int v = i % V, tg = targets[tg_off + n];
    if (tg == ignore_index)
        return;
    if (tg < 0 || tg >= V) {
        raise_error(flag, ERR_TARGET_BWD);
        return;
    }
    dlogits[dl_off + i] += scale * (probs[probs_off + i] - (v == tg ? 1.0f : 0.0f));
}
