/* devices/opencl/ocl_ops_attention.c: the opencl backend's multi-head self-attention (causal or
 * not, optional key mask): forward (softmax rows, then att . v) and backward (softmax backward
 * into scratch, then dq, dk and dv), each kernel owning whole outputs so no atomics are needed. */
#include <math.h>

#include "ocl_internal.h"

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

static void attention_forward_op(device *d, const char *op, dten out, dten att, dten qkv,
                                 dten keymask, int B, int T, int C, int NH, int causal)
{
    if (!op_attention_ok(d, op, qkv, att, out, B, T, C, NH) ||
        !op_keymask_ok(d, op, keymask, B, T))
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
    if (ocl_launch(d, op, K_ATTENTION_SOFTMAX, &s, (size_t)B * NH * T) &&
        ocl_launch(d, op, K_ATTENTION_VALUE, &v, (size_t)B * T * C))
        ocl_fault(d, op, out, (size_t)B * T * C);
}

static void attention_backward_op(device *d, const char *op, dten dqkv, dten scratch, dten dout,
                                  dten qkv, dten att, dten keymask, int B, int T, int C, int NH,
                                  int causal)
{
    if (!op_attention_backward_ok(d, op, dqkv, scratch, dout, qkv, att, B, T, C, NH) ||
        !op_keymask_ok(d, op, keymask, B, T))
        return;
    ocl_op_begin(d);
    ocl_args p = {0}, q = {0}, kv = {0};
    oa_ten(&p, scratch);
    oa_ten(&p, dout);
    oa_ten(&p, qkv);
    oa_ten(&p, att);
    shape_args(&p, B, T, C, NH, causal);
    oa_float(&p, 1.0 / sqrt((double)(C / NH)));
    mask_args(d, &p, keymask);
    oa_ten(&q, dqkv);
    oa_ten(&q, scratch);
    oa_ten(&q, qkv);
    shape_args(&q, B, T, C, NH, causal);
    oa_ten(&kv, dqkv);
    oa_ten(&kv, scratch);
    oa_ten(&kv, dout);
    oa_ten(&kv, qkv);
    oa_ten(&kv, att);
    shape_args(&kv, B, T, C, NH, causal);
    mask_args(d, &kv, keymask);
    size_t btc = (size_t)B * T * C;
    if (ocl_launch(d, op, K_ATTENTION_BACKWARD_DPRE, &p, (size_t)B * NH * T) &&
        ocl_launch(d, op, K_ATTENTION_BACKWARD_DQ, &q, btc) &&
        ocl_launch(d, op, K_ATTENTION_BACKWARD_DKV, &kv, btc))
        ocl_fault(d, op, dqkv, 3 * btc);
}

static void ocl_attention_forward(device *d, dten out, dten att, dten qkv, int B, int T, int C,
                                  int NH, int causal)
{
    attention_forward_op(d, "attention_forward", out, att, qkv, (dten){0}, B, T, C, NH, causal);
}

static void ocl_attention_masked_forward(device *d, dten out, dten att, dten qkv, dten keymask,
                                         int B, int T, int C, int NH, int causal)
{
    attention_forward_op(d, "attention_masked_forward", out, att, qkv, keymask, B, T, C, NH,
                         causal);
}

static void ocl_attention_backward(device *d, dten dqkv, dten scratch, dten dout, dten qkv,
                                   dten att, int B, int T, int C, int NH, int causal)
{
    attention_backward_op(d, "attention_backward", dqkv, scratch, dout, qkv, att, (dten){0}, B,
                          T, C, NH, causal);
}

static void ocl_attention_masked_backward(device *d, dten dqkv, dten scratch, dten dout,
                                          dten qkv, dten att, dten keymask, int B, int T, int C,
                                          int NH, int causal)
{
    attention_backward_op(d, "attention_masked_backward", dqkv, scratch, dout, qkv, att, keymask,
                          B, T, C, NH, causal);
}

void ocl_fill_attention(device_i *ops)
{
    ops->attention_forward = ocl_attention_forward;
    ops->attention_backward = ocl_attention_backward;
    ops->attention_masked_forward = ocl_attention_masked_forward;
    ops->attention_masked_backward = ocl_attention_masked_backward;
}
