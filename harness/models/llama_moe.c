/* harness/models/llama_moe.c: Mixtral's sparse MoE block (router, top-k, per-expert SwiGLU,
 * weighted combine) forward and backward, and transformers' router load-balancing loss. */
#include <stdio.h>
#include <string.h>

#include "llama_internal.h"
#include "util/util.h"

/* each row m of out[M,C] = w[m] * x[m,:], as a batch of 1x1 by 1xC products */
static void row_scale(device *d, dten out, dten w, dten x, int M, int C)
{
    d->ops->gemm(d, 0, 0, 1, C, 1, 1.0, w, 1, 1, x, C, C, 0.0, out, C, C, M);
}

/* out[m] = dot(a[m,:], b[m,:]) for M rows of C */
static void row_dot(device *d, dten out, dten a, dten b, int M, int C)
{
    d->ops->gemm(d, 0, 1, 1, 1, C, 1.0, a, C, C, b, C, C, 0.0, out, 1, 1, M);
}

/* expert e's rows [seg[e], seg[e+1]) of a grouped [NK, width] tensor */
static dten rows(dten t, const size_t *seg, int e, size_t width)
{
    return dten_view(t, seg[e] * width, (seg[e + 1] - seg[e]) * width);
}

/* groups the routed (token, k) pairs by expert as HF's torch.where over expert_mask[e] ([K, N])
 * lists them: k-major, then token order; counts them, and adds them to the aux-loss sums */
static void group_rows(llama *m, int l)
{
    const llama_dims *z = &m->z;
    size_t E = z->E, K = z->K, N = z->BT, *seg = m->seg + (size_t)l * (E + 1);
    int64_t *count = m->counts + (size_t)l * E;
    memset(count, 0, E * sizeof *count);
    for (size_t i = 0; i < N * K; i++) {
        count[m->ids_host[i]]++;
        m->F[m->ids_host[i]] += m->mask_host[i / K];
    }
    seg[0] = 0;
    for (size_t e = 0; e < E; e++)
        seg[e + 1] = seg[e] + (size_t)count[e];
    size_t *fill = m->fill;
    memcpy(fill, seg, E * sizeof *fill);
    for (size_t e = 0; e < E; e++)
        for (size_t k = 0; k < K; k++)
            for (size_t n = 0; n < N; n++)
                if ((size_t)m->ids_host[n * K + k] == e) {
                    m->tok_host[fill[e]] = (int32_t)n;
                    m->slot_host[fill[e]++] = (int32_t)(n * K + k);
                }
    for (size_t n = 0; n < N; n++)
        m->aux_rows += m->mask_host[n];
}

/* the device's own ops, without low-precision rounding: the aux loss (HF's
 * load_balancing_loss_func) runs in fp32 under autocast, softmax and sums alike, so its sums and
 * gradient are not rounded to bf16/fp16 as the linear layers' GEMMs are */
static const device_i *fp32_ops(const device *d)
{
    return d->native_ops ? d->native_ops : d->ops;
}

/* the router's probabilities summed over the (unmasked) rows, into Psum */
static void add_prob_sums(llama *m, const llama_layer_acts *a)
{
    device *d = m->d;
    const llama_dims *z = &m->z;
    double *ps = m->hbuf;
    dten psum = dten_view(m->psum, 0, z->E);
    fp32_ops(d)->gemm(d, 0, 0, 1, (int)z->E, (int)z->BT, 1.0, m->maskw, (int)z->BT, 0, a->rprobs,
                 (int)z->E, 0, 0.0, psum, (int)z->E, 0, 1);
    d->ops->download_f64(d, ps, psum);
    for (size_t e = 0; e < z->E; e++)
        m->Psum[e] += ps[e];
}

void llama_moe_reset(llama *m)
{
    const llama_dims *z = &m->z;
    if (!z->moe)
        return;
    memset(m->F, 0, z->E * sizeof *m->F);
    memset(m->Psum, 0, z->E * sizeof *m->Psum);
    m->aux_rows = 0;
    double *w = m->hbuf;
    for (size_t i = 0; i < z->BT; i++)
        w[i] = m->mask_host[i];
    m->d->ops->upload_f64(m->d, m->maskw, w);
}

/* expert e of layer l on its rows: xe, g, u, a, y, then the weighted rows added into mlp_out */
static void expert_forward(llama *m, int l, int e, const size_t *seg)
{
    device *d = m->d;
    const llama_dims *z = &m->z;
    llama_layer_acts *a = &m->layers[l];
    int M = (int)(seg[e + 1] - seg[e]), C = (int)z->C, I = (int)z->I, N = (int)z->BT;
    int w1 = m->li[l].expert0 + 3 * e;
    dten tok = rows(a->tok_idx, seg, e, 1), slot = rows(a->slot_idx, seg, e, 1);
    dten xe = rows(a->xe, seg, e, z->C), g = rows(a->g, seg, e, z->I);
    dten u = rows(a->u, seg, e, z->I), act = rows(a->a, seg, e, z->I);
    dten y = rows(a->y, seg, e, z->C), we = rows(a->w_e, seg, e, 1);
    dten ys = rows(m->ys, seg, e, z->C);
    d->ops->gather_rows_forward(d, xe, a->h2, tok, M, N, C);
    d->ops->gather_rows_forward(d, we, a->rweights, slot, M, (int)z->NK, 1);
    llama_linear(d, g, xe, llama_p(m, w1), (dten){0}, M, C, I);
    llama_linear(d, u, xe, llama_p(m, w1 + 2), (dten){0}, M, C, I);
    d->ops->silu_mul_forward(d, act, g, u, M * I);
    llama_linear(d, y, act, llama_p(m, w1 + 1), (dten){0}, M, I, C);
    row_scale(d, ys, we, y, M, C);
    d->ops->gather_rows_backward(d, a->mlp_out, ys, tok, M, N, C);
}

int llama_moe_forward(llama *m, int l)
{
    device *d = m->d;
    const llama_dims *z = &m->z;
    llama_layer_acts *a = &m->layers[l];
    int N = (int)z->BT, E = (int)z->E, K = (int)z->K;
    size_t *seg = m->seg + (size_t)l * (z->E + 1);
    llama_linear(d, a->rlogits, a->h2, llama_p(m, m->li[l].router), (dten){0}, N, (int)z->C, E);
    d->ops->topk_router_forward(d, a->rweights, a->rids, a->rprobs, a->rlogits, N, E, K, 1);
    d->ops->download_i32(d, m->ids_host, a->rids);
    if (device_error(d)) {
        log_error("%s: llama: routing of layer %d: %s", d->backend, l, device_error(d));
        return 1;
    }
    for (size_t i = 0; i < z->NK; i++)
        if (m->ids_host[i] < 0 || m->ids_host[i] >= E) {
            log_error("%s: llama: layer %d: the router chose expert %d of %d", d->backend, l,
                      m->ids_host[i], E);
            return 1;
        }
    group_rows(m, l);
    d->ops->upload_i32(d, a->tok_idx, m->tok_host);
    d->ops->upload_i32(d, a->slot_idx, m->slot_host);
    if (m->c.output_router_logits)
        add_prob_sums(m, a);
    d->ops->zero(d, a->mlp_out);
    for (int e = 0; e < E; e++)
        if (seg[e + 1] > seg[e])
            expert_forward(m, l, e, seg);
    return 0;
}

/* HF load_balancing_loss_func: E * sum_e (F_e / rows) (Psum_e / rows) */
double llama_moe_aux_loss(const llama *m)
{
    double s = 0, R = m->aux_rows;
    if (R <= 0)
        return 0;
    for (size_t e = 0; e < m->z.E; e++)
        s += (m->F[e] / R) * (m->Psum[e] / R);
    return s * (double)m->z.E;
}

/* expert e's backward: dweights and dh (scattered) from dout = dL/d mlp_out */
static void expert_backward(llama *m, int l, int e, const size_t *seg, dten dout, dten dh)
{
    device *d = m->d;
    const llama_dims *z = &m->z;
    llama_layer_acts *a = &m->layers[l];
    int M = (int)(seg[e + 1] - seg[e]), C = (int)z->C, I = (int)z->I, N = (int)z->BT;
    int w1 = m->li[l].expert0 + 3 * e;
    dten tok = rows(a->tok_idx, seg, e, 1), slot = rows(a->slot_idx, seg, e, 1);
    dten xe = rows(a->xe, seg, e, z->C), g = rows(a->g, seg, e, z->I);
    dten u = rows(a->u, seg, e, z->I), act = rows(a->a, seg, e, z->I);
    dten y = rows(a->y, seg, e, z->C), we = rows(a->w_e, seg, e, 1);
    dten dys = rows(m->dys, seg, e, z->C), dy = rows(m->dy, seg, e, z->C);
    dten dxe = rows(m->dxe, seg, e, z->C), dw = rows(m->dwseg, seg, e, 1);
    dten dact = rows(m->dact, seg, e, z->I), dg = rows(m->dgate, seg, e, z->I);
    dten du = rows(m->dup, seg, e, z->I);
    d->ops->gather_rows_forward(d, dys, dout, tok, M, N, C);
    row_dot(d, dw, dys, y, M, C);
    d->ops->gather_rows_backward(d, m->dweights, dw, slot, M, (int)z->NK, 1);
    row_scale(d, dy, we, dys, M, C);
    llama_linear_back(d, dact, 0.0, llama_g(m, w1 + 1), (dten){0}, dy, act, llama_p(m, w1 + 1),
                      M, I, C);
    d->ops->zero(d, dg);
    d->ops->zero(d, du);
    d->ops->silu_mul_backward(d, dg, du, dact, g, u, M * I);
    llama_linear_back(d, dxe, 0.0, llama_g(m, w1), (dten){0}, dg, xe, llama_p(m, w1), M, C, I);
    llama_linear_back(d, dxe, 1.0, llama_g(m, w1 + 2), (dten){0}, du, xe, llama_p(m, w1 + 2), M,
                      C, I);
    d->ops->gather_rows_backward(d, dh, dxe, tok, M, N, C);
}

/* the aux loss's gradient into drl: dp[n,e] = coef E F_e mask_n / rows^2, through the softmax;
 * times the device's loss scale (fp16 loss scaling scales the whole loss, docs/precision.md) */
static void aux_backward(llama *m, const llama_layer_acts *a)
{
    device *d = m->d;
    const llama_dims *z = &m->z;
    double R = m->aux_rows, *f = m->hbuf;
    if (R <= 0)
        return;
    for (size_t e = 0; e < z->E; e++)
        f[e] = m->c.router_aux_loss_coef * (double)z->E * m->F[e] / (R * R) *
               (d->lowp ? d->loss_scale : 1.0);
    dten fvec = dten_view(m->fvec, 0, z->E);
    d->ops->upload_f64(d, fvec, f);
    int N = (int)z->BT, E = (int)z->E;
    fp32_ops(d)->gemm(d, 0, 0, N, E, 1, 1.0, m->maskw, 1, 0, fvec, E, 0, 0.0, m->dp, E, 0, 1);
    d->ops->topk_router_backward(d, m->drl, m->dp, a->rprobs, m->ids_all, a->rprobs, N, E, E, 0);
}

void llama_moe_backward(llama *m, int l, dten dout, dten dh)
{
    device *d = m->d;
    const llama_dims *z = &m->z;
    llama_layer_acts *a = &m->layers[l];
    int N = (int)z->BT, E = (int)z->E, K = (int)z->K;
    const size_t *seg = m->seg + (size_t)l * (z->E + 1);
    d->ops->zero(d, m->dweights);
    d->ops->zero(d, dh);
    for (int e = 0; e < E; e++)
        if (seg[e + 1] > seg[e])
            expert_backward(m, l, e, seg, dout, dh);
    d->ops->zero(d, m->drl);
    d->ops->topk_router_backward(d, m->drl, m->dweights, a->rweights, a->rids, a->rprobs, N, E,
                                 K, 1);
    if (m->c.output_router_logits)
        aux_backward(m, a);
    int router = m->li[l].router;
    llama_linear_back(d, dh, 1.0, llama_g(m, router), (dten){0}, m->drl, a->h2,
                      llama_p(m, router), N, (int)z->C, E);
}
