/* devices/opencl/ocl_ops_attention.c: the opencl backend's multi-head self-attention (causal or
 * not, optional key mask and probability dropout): forward (softmax rows, then att . v) and
 * backward (softmax backward into scratch, then dq, dk and dv), each kernel owning whole outputs
 * so no atomics are needed. */
#include <math.h>

#include "ocl_internal.h"
#include "philox.h"

/* B, T, C, NH, causal: the shape arguments every attention kernel has */
static void shape_args(ocl_args *a, int B, int T, int C, int NH, int causal)
{
    oa_int(a, B);
    oa_int(a, T);
    oa_int(a, C);
    oa_int(a, NH);
    oa_int(a, causal);
}

/* the key mask arguments (km, km_off, has_mask); without a mask any buffer stands in, unread */
static void mask_args(device *d, ocl_args *a, dten keymask)
{
    if (keymask.buf) {
        oa_ten(a, keymask);
    } else {
        oa_mem(a, OCL(d)->flag);
        oa_ulong(a, 0);
    }
    oa_int(a, keymask.buf != NULL);
}

/* the probability dropout arguments (has_drop, thr, keep_scale, seed, step, layer, site);
 * drop NULL or p = 0: none (the kernels then read only has_drop) */
static void drop_args(ocl_args *a, const attn_dropout *drop)
{
    int on = drop && drop->p != 0;
    oa_int(a, on);
    oa_ulong(a, on ? (size_t)philox_dropout_threshold(drop->p) : 0);
    oa_float(a, on && drop->p < 1 ? 1.0 / (1.0 - drop->p) : 0.0);
    oa_ulong(a, on ? (size_t)drop->seed : 0);
    oa_ulong(a, on ? drop->step : 0);
    oa_ulong(a, on ? drop->layer : 0);
    oa_ulong(a, DROPOUT_SITE_ATTN_PROBS);
}

static void attention_forward_op(device *d, const char *op, dten out, dten att, dten qkv,
                                 dten keymask, int B, int T, int C, int NH, int causal,
                                 const attn_dropout *drop)
{
    if (!op_attention_masked_ok(d, op, qkv, att, out, keymask, drop, B, T, C, NH))
        return;
    ocl_op_begin(d);
    double scale = 1.0 / sqrt((double)(C / NH));
    ocl_args s = {0}, v = {0};
    oa_ten(&s, att);
    oa_ten(&s, qkv);
    shape_args(&s, B, T, C, NH, causal);
    oa_float(&s, scale);
    mask_args(d, &s, keymask);
    oa_ten(&v, out);
    oa_ten(&v, att);
    oa_ten(&v, qkv);
    shape_args(&v, B, T, C, NH, causal);
    drop_args(&v, drop);
    if (ocl_launch(d, op, K_ATTENTION_SOFTMAX, &s, (size_t)B * NH * T) &&
        ocl_launch(d, op, K_ATTENTION_VALUE, &v, (size_t)B * T * C))
        ocl_fault(d, op, out, (size_t)B * T * C);
}

/* the arguments of attention_backward_dkv: dk (from scratch) when do_dk, dv (from probs) when
 * do_dv */
static void dkv_args(device *d, ocl_args *kv, dten dqkv, dten scratch, dten dout, dten qkv,
                     dten probs, dten keymask, int B, int T, int C, int NH, int causal, int do_dk,
                     int do_dv)
{
    oa_ten(kv, dqkv);
    oa_ten(kv, scratch);
    oa_ten(kv, dout);
    oa_ten(kv, qkv);
    oa_ten(kv, probs);
    shape_args(kv, B, T, C, NH, causal);
    mask_args(d, kv, keymask);
    oa_int(kv, do_dk);
    oa_int(kv, do_dv);
}

/* with dropout: dk from the softmax backward in scratch, then scratch = dropout(att) (the
 * forward's att_d) and dv from it */
static int launch_dkv_dropped(device *d, const char *op, dten dqkv, dten scratch, dten dout,
                              dten qkv, dten att, dten keymask, int B, int T, int C, int NH,
                              int causal, const attn_dropout *drop)
{
    ocl_args k = {0}, v = {0};
    size_t btc = (size_t)B * T * C, n = (size_t)B * NH * T * T;
    dkv_args(d, &k, dqkv, scratch, dout, qkv, att, keymask, B, T, C, NH, causal, 1, 0);
    dkv_args(d, &v, dqkv, scratch, dout, qkv, dten_view(scratch, 0, n), keymask, B, T, C, NH,
             causal, 0, 1);
    return ocl_launch(d, op, K_ATTENTION_BACKWARD_DKV, &k, btc) &&
           ocl_dropout_launch(d, op, dten_view(scratch, 0, n), (dten){0}, dten_view(att, 0, n),
                              n, 0, drop->p, drop->seed, drop->step, drop->layer,
                              DROPOUT_SITE_ATTN_PROBS) &&
           ocl_launch(d, op, K_ATTENTION_BACKWARD_DKV, &v, btc);
}

static void attention_backward_op(device *d, const char *op, dten dqkv, dten scratch, dten dout,
                                  dten qkv, dten att, dten keymask, int B, int T, int C, int NH,
                                  int causal, const attn_dropout *drop)
{
    if (!op_attention_masked_backward_ok(d, op, dqkv, scratch, dout, qkv, att, keymask, drop, B,
                                         T, C, NH))
        return;
    ocl_op_begin(d);
    int dropped = drop && drop->p != 0;
    ocl_args p = {0}, q = {0}, kv = {0};
    oa_ten(&p, scratch);
    oa_ten(&p, dout);
    oa_ten(&p, qkv);
    oa_ten(&p, att);
    shape_args(&p, B, T, C, NH, causal);
    oa_float(&p, 1.0 / sqrt((double)(C / NH)));
    mask_args(d, &p, keymask);
    drop_args(&p, drop);
    oa_ten(&q, dqkv);
    oa_ten(&q, scratch);
    oa_ten(&q, qkv);
    shape_args(&q, B, T, C, NH, causal);
    dkv_args(d, &kv, dqkv, scratch, dout, qkv, att, keymask, B, T, C, NH, causal, 1, 1);
    size_t btc = (size_t)B * T * C;
    if (ocl_launch(d, op, K_ATTENTION_BACKWARD_DPRE, &p, (size_t)B * NH * T) &&
        ocl_launch(d, op, K_ATTENTION_BACKWARD_DQ, &q, btc) &&
        (dropped ? launch_dkv_dropped(d, op, dqkv, scratch, dout, qkv, att, keymask, B, T, C,
                                      NH, causal, drop)
                 : ocl_launch(d, op, K_ATTENTION_BACKWARD_DKV, &kv, btc)))
        ocl_fault(d, op, dqkv, 3 * btc);
}

static void ocl_attention_forward(device *d, dten out, dten att, dten qkv, int B, int T, int C,
                                  int NH, int causal)
{
    attention_forward_op(d, "attention_forward", out, att, qkv, (dten){0}, B, T, C, NH, causal,
                         NULL);
}

static void ocl_attention_masked_forward(device *d, dten out, dten att, dten qkv, dten keymask,
                                         int B, int T, int C, int NH, int causal,
                                         const attn_dropout *drop)
{
    attention_forward_op(d, "attention_masked_forward", out, att, qkv, keymask, B, T, C, NH,
                         causal, drop);
}

static void ocl_attention_backward(device *d, dten dqkv, dten scratch, dten dout, dten qkv,
                                   dten att, int B, int T, int C, int NH, int causal)
{
    attention_backward_op(d, "attention_backward", dqkv, scratch, dout, qkv, att, (dten){0}, B,
                          T, C, NH, causal, NULL);
}

static void ocl_attention_masked_backward(device *d, dten dqkv, dten scratch, dten dout,
                                          dten qkv, dten att, dten keymask, int B, int T, int C,
                                          int NH, int causal, const attn_dropout *drop)
{
    attention_backward_op(d, "attention_masked_backward", dqkv, scratch, dout, qkv, att, keymask,
                          B, T, C, NH, causal, drop);
}

void ocl_fill_attention(device_i *ops)
{
    ops->attention_forward = ocl_attention_forward;
    ops->attention_backward = ocl_attention_backward;
    ops->attention_masked_forward = ocl_attention_masked_forward;
    ops->attention_masked_backward = ocl_attention_masked_backward;
}
