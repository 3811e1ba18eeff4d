/* devices/cuda/cu_ops_attention.c: the cuda backend's multi-head self-attention (causal or
 * not, optional key mask and probability dropout). Without dropout: cuBLAS products batched over
 * the heads with row kernels between them (the scores, softmax, att . v; backward the visible
 * probabilities for dv, dout . v^T, the softmax backward, dq, dk). With dropout: the
 * per-element kernels of attention.cl, each owning whole outputs, as the opencl backend runs
 * them. No atomics either way. */
#include <math.h>

#include "cu_internal.h"
#include "philox.h"

/* B, T, C, NH, causal: the shape arguments every attention kernel has */
static void shape_args(cu_args *a, int B, int T, int C, int NH, int causal)
{
    ca_int(a, B);
    ca_int(a, T);
    ca_int(a, C);
    ca_int(a, NH);
    ca_int(a, causal);
}

/* the key mask arguments (km, km_off, has_mask); without a mask any buffer stands in, unread */
static void mask_args(device *d, cu_args *a, dten keymask)
{
    if (keymask.buf) {
        ca_ten(a, keymask);
    } else {
        ca_ptr(a, CU(d)->flag);
        ca_ulong(a, 0);
    }
    ca_int(a, keymask.buf != NULL);
}

/* the probability dropout arguments (has_drop, thr, keep_scale, seed, step, layer, site);
 * drop NULL or p = 0: none (the kernels then read only has_drop) */
static void drop_args(cu_args *a, const attn_dropout *drop)
{
    int on = drop && drop->p != 0;
    ca_int(a, on);
    ca_ulong(a, on ? (size_t)philox_dropout_threshold(drop->p) : 0);
    ca_float(a, on && drop->p < 1 ? 1.0 / (1.0 - drop->p) : 0.0);
    ca_ulong(a, on ? (size_t)drop->seed : 0);
    ca_ulong(a, on ? drop->step : 0);
    ca_ulong(a, on ? drop->layer : 0);
    ca_ulong(a, DROPOUT_SITE_ATTN_PROBS);
}

void cu_attn_row_args(device *d, cu_args *a, int T, int NH, int causal, int with_scale,
                      double scale, dten keymask)
{
    ca_int(a, T);
    ca_int(a, NH);
    ca_int(a, causal);
    if (with_scale)
        ca_float(a, scale);
    mask_args(d, a, keymask);
}

/* forward without dropout: att = softmax(q k^T * scale) per head, out = att v */
static int forward_by_products(device *d, const char *op, dten out, dten att, dten qkv,
                               dten keymask, int B, int T, int C, int NH, int causal,
                               double scale)
{
    int hs = C / NH;
    long long tt = (long long)T * T;
    for (int b = 0; b < B; b++) {
        const float *q = cu_view_ptr(qkv) + (size_t)b * T * 3 * C;
        float *a = cu_view_ptr(att) + (size_t)b * NH * tt;
        if (!cu_sgemm_batch(d, op, 0, 1, T, T, hs, (float)scale, q, 3 * C, hs, q + C, 3 * C, hs,
                            0, a, T, tt, NH))
            return 0;
    }
    cu_args s = {0};
    ca_ten(&s, att);
    cu_attn_row_args(d, &s, T, NH, causal, 0, 0, keymask);
    if (!cu_launch(d, op, K_ATTENTION_SOFTMAX_ROWS, &s, (size_t)B * NH * T * CU(d)->wg))
        return 0;
    for (int b = 0; b < B; b++) {
        const float *v = cu_view_ptr(qkv) + (size_t)b * T * 3 * C + 2 * C;
        const float *a = cu_view_ptr(att) + (size_t)b * NH * tt;
        float *o = cu_view_ptr(out) + (size_t)b * T * C;
        if (!cu_sgemm_batch(d, op, 0, 0, T, hs, T, 1, a, T, tt, v, 3 * C, hs, 0, o, C, hs, NH))
            return 0;
    }
    return 1;
}

static void attention_forward_op(device *d, const char *op, dten out, dten att, dten qkv,
                                 dten keymask, int B, int T, int C, int NH, int causal,
                                 const attn_dropout *drop)
{
    if (!op_attention_masked_ok(d, op, qkv, att, out, keymask, drop, B, T, C, NH))
        return;
    cu_op_begin(d);
    double scale = 1.0 / sqrt((double)(C / NH));
    cu_args s = {0}, v = {0};
    ca_ten(&s, att);
    ca_ten(&s, qkv);
    shape_args(&s, B, T, C, NH, causal);
    ca_float(&s, scale);
    mask_args(d, &s, keymask);
    ca_ten(&v, out);
    ca_ten(&v, att);
    ca_ten(&v, qkv);
    shape_args(&v, B, T, C, NH, causal);
    drop_args(&v, drop);
    int ok = drop && drop->p != 0
                 ? cu_launch(d, op, K_ATTENTION_SOFTMAX, &s, (size_t)B * NH * T) &&
                       cu_launch(d, op, K_ATTENTION_VALUE, &v, (size_t)B * T * C)
                 : forward_by_products(d, op, out, att, qkv, keymask, B, T, C, NH, causal, scale);
    if (ok)
        cu_fault(d, op, out, (size_t)B * T * C);
}

/* the arguments of attention_backward_dkv: dk (from scratch) when do_dk, dv (from probs) when
 * do_dv */
static void dkv_args(device *d, cu_args *kv, dten dqkv, dten scratch, dten dout, dten qkv,
                     dten probs, dten keymask, int B, int T, int C, int NH, int causal, int do_dk,
                     int do_dv)
{
    ca_ten(kv, dqkv);
    ca_ten(kv, scratch);
    ca_ten(kv, dout);
    ca_ten(kv, qkv);
    ca_ten(kv, probs);
    shape_args(kv, B, T, C, NH, causal);
    mask_args(d, kv, keymask);
    ca_int(kv, do_dk);
    ca_int(kv, do_dv);
}

/* with dropout: dk from the softmax backward in scratch, then scratch = dropout(att) (the
 * forward's att_d) and dv from it */
static int launch_dkv_dropped(device *d, const char *op, dten dqkv, dten scratch, dten dout,
                              dten qkv, dten att, dten keymask, int B, int T, int C, int NH,
                              int causal, const attn_dropout *drop)
{
    cu_args k = {0}, v = {0};
    size_t btc = (size_t)B * T * C, n = (size_t)B * NH * T * T;
    dkv_args(d, &k, dqkv, scratch, dout, qkv, att, keymask, B, T, C, NH, causal, 1, 0);
    dkv_args(d, &v, dqkv, scratch, dout, qkv, dten_view(scratch, 0, n), keymask, B, T, C, NH,
             causal, 0, 1);
    return cu_launch(d, op, K_ATTENTION_BACKWARD_DKV, &k, btc) &&
           cu_dropout_launch(d, op, dten_view(scratch, 0, n), (dten){0}, dten_view(att, 0, n),
                              n, 0, drop->p, drop->seed, drop->step, drop->layer,
                              DROPOUT_SITE_ATTN_PROBS) &&
           cu_launch(d, op, K_ATTENTION_BACKWARD_DKV, &v, btc);
}

/* backward without dropout, per head: scratch = att at the visible keys and dv += scratch^T
 * dout; scratch = dout v^T, then the softmax backward in place (dpre), dq += dpre k, dk +=
 * dpre^T q */
static int backward_by_products(device *d, const char *op, dten dqkv, dten scratch, dten dout,
                                dten qkv, dten att, dten keymask, int B, int T, int C, int NH,
                                int causal)
{
    int hs = C / NH, c3 = 3 * C;
    long long tt = (long long)T * T;
    size_t rows = (size_t)B * NH * T * CU(d)->wg;
    cu_args pr = {0}, dp = {0};
    ca_ten(&pr, scratch);
    ca_ten(&pr, att);
    cu_attn_row_args(d, &pr, T, NH, causal, 0, 0, keymask);
    ca_ten(&dp, scratch);
    ca_ten(&dp, att);
    cu_attn_row_args(d, &dp, T, NH, causal, 1, 1.0 / sqrt((double)hs), keymask);
    if (!cu_launch(d, op, K_ATTENTION_PROBS_ROWS, &pr, rows))
        return 0;
    for (int b = 0; b < B; b++) {
        const float *g = cu_view_ptr(dout) + (size_t)b * T * C;
        const float *w = cu_view_ptr(scratch) + (size_t)b * NH * tt;
        float *dv = cu_view_ptr(dqkv) + (size_t)b * T * c3 + 2 * C;
        if (!cu_sgemm_batch(d, op, 1, 0, T, hs, T, 1, w, T, tt, g, C, hs, 1, dv, c3, hs, NH))
            return 0;
    }
    for (int b = 0; b < B; b++) {
        const float *v = cu_view_ptr(qkv) + (size_t)b * T * c3 + 2 * C;
        const float *g = cu_view_ptr(dout) + (size_t)b * T * C;
        float *w = cu_view_ptr(scratch) + (size_t)b * NH * tt;
        if (!cu_sgemm_batch(d, op, 0, 1, T, T, hs, 1, g, C, hs, v, c3, hs, 0, w, T, tt, NH))
            return 0;
    }
    if (!cu_launch(d, op, K_ATTENTION_DPRE_ROWS, &dp, rows))
        return 0;
    for (int b = 0; b < B; b++) {
        const float *q = cu_view_ptr(qkv) + (size_t)b * T * c3, *k = q + C;
        const float *w = cu_view_ptr(scratch) + (size_t)b * NH * tt;
        float *dq = cu_view_ptr(dqkv) + (size_t)b * T * c3;
        if (!cu_sgemm_batch(d, op, 0, 0, T, hs, T, 1, w, T, tt, k, c3, hs, 1, dq, c3, hs, NH) ||
            !cu_sgemm_batch(d, op, 1, 0, T, hs, T, 1, w, T, tt, q, c3, hs, 1, dq + C, c3, hs,
                            NH))
            return 0;
    }
    return 1;
}

/* backward with dropout: the per-element kernels (dpre rows, dq, then dk and dv) */
static int backward_dropped(device *d, const char *op, dten dqkv, dten scratch, dten dout,
                            dten qkv, dten att, dten keymask, int B, int T, int C, int NH,
                            int causal, const attn_dropout *drop)
{
    cu_args p = {0}, q = {0};
    ca_ten(&p, scratch);
    ca_ten(&p, dout);
    ca_ten(&p, qkv);
    ca_ten(&p, att);
    shape_args(&p, B, T, C, NH, causal);
    ca_float(&p, 1.0 / sqrt((double)(C / NH)));
    mask_args(d, &p, keymask);
    drop_args(&p, drop);
    ca_ten(&q, dqkv);
    ca_ten(&q, scratch);
    ca_ten(&q, qkv);
    shape_args(&q, B, T, C, NH, causal);
    return cu_launch(d, op, K_ATTENTION_BACKWARD_DPRE, &p, (size_t)B * NH * T) &&
           cu_launch(d, op, K_ATTENTION_BACKWARD_DQ, &q, (size_t)B * T * C) &&
           launch_dkv_dropped(d, op, dqkv, scratch, dout, qkv, att, keymask, B, T, C, NH, causal,
                              drop);
}

static void attention_backward_op(device *d, const char *op, dten dqkv, dten scratch, dten dout,
                                  dten qkv, dten att, dten keymask, int B, int T, int C, int NH,
                                  int causal, const attn_dropout *drop)
{
    if (!op_attention_masked_backward_ok(d, op, dqkv, scratch, dout, qkv, att, keymask, drop, B,
                                         T, C, NH))
        return;
    cu_op_begin(d);
    int ok = drop && drop->p != 0
                 ? backward_dropped(d, op, dqkv, scratch, dout, qkv, att, keymask, B, T, C, NH,
                                    causal, drop)
                 : backward_by_products(d, op, dqkv, scratch, dout, qkv, att, keymask, B, T, C,
                                        NH, causal);
    if (ok)
        cu_fault(d, op, dqkv, (size_t)3 * B * T * C);
}

static void cu_attention_forward(device *d, dten out, dten att, dten qkv, int B, int T, int C,
                                 int NH, int causal)
{
    attention_forward_op(d, "attention_forward", out, att, qkv, (dten){0}, B, T, C, NH, causal,
                         NULL);
}

static void cu_attention_masked_forward(device *d, dten out, dten att, dten qkv, dten keymask,
                                        int B, int T, int C, int NH, int causal,
                                        const attn_dropout *drop)
{
    attention_forward_op(d, "attention_masked_forward", out, att, qkv, keymask, B, T, C, NH,
                         causal, drop);
}

static void cu_attention_backward(device *d, dten dqkv, dten scratch, dten dout, dten qkv,
                                  dten att, int B, int T, int C, int NH, int causal)
{
    attention_backward_op(d, "attention_backward", dqkv, scratch, dout, qkv, att, (dten){0}, B,
                          T, C, NH, causal, NULL);
}

static void cu_attention_masked_backward(device *d, dten dqkv, dten scratch, dten dout,
                                         dten qkv, dten att, dten keymask, int B, int T, int C,
                                         int NH, int causal, const attn_dropout *drop)
{
    attention_backward_op(d, "attention_masked_backward", dqkv, scratch, dout, qkv, att, keymask,
                          B, T, C, NH, causal, drop);
}

void cu_fill_attention(device_i *ops)
{
    ops->attention_forward = cu_attention_forward;
    ops->attention_backward = cu_attention_backward;
    ops->attention_masked_forward = cu_attention_masked_forward;
    ops->attention_masked_backward = cu_attention_masked_backward;
}
