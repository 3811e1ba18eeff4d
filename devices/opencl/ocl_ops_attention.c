/* devices/opencl/ocl_ops_attention.c: the opencl backend's multi-head self-attention: forward
 * (softmax rows, then att . v) and backward (softmax backward into scratch, then dq, dk and dv),
 * each kernel owning whole output elements so no atomics are needed. */
#include <math.h>

#include "ocl_internal.h"

/* B, T, C, NH, causal: the shape arguments every attention kernel ends with */
static void shape_args(ocl_args *a, int B, int T, int C, int NH, int causal)
{
    oa_int(a, B);
    oa_int(a, T);
    oa_int(a, C);
    oa_int(a, NH);
    oa_int(a, causal);
}

static void ocl_attention_forward(device *d, dten out, dten att, dten qkv, int B, int T, int C,
                                  int NH, int causal)
{
    const char *op = "attention_forward";
    if (!op_attention_ok(d, op, qkv, att, out, B, T, C, NH))
        return;
    ocl_op_begin(d);
    double scale = 1.0 / sqrt((double)(C / NH));
    ocl_args s = {0}, v = {0};
    oa_ten(&s, att);
    oa_ten(&s, qkv);
    shape_args(&s, B, T, C, NH, causal);
    oa_float(&s, scale);
    oa_ten(&v, out);
    oa_ten(&v, att);
    oa_ten(&v, qkv);
    shape_args(&v, B, T, C, NH, causal);
    if (ocl_launch(d, op, K_ATTENTION_SOFTMAX, &s, (size_t)B * NH * T) &&
        ocl_launch(d, op, K_ATTENTION_VALUE, &v, (size_t)B * T * C))
        ocl_fault(d, op, out, (size_t)B * T * C);
}

static void ocl_attention_backward(device *d, dten dqkv, dten scratch, dten dout, dten qkv,
                                   dten att, int B, int T, int C, int NH, int causal)
{
    const char *op = "attention_backward";
    if (!op_attention_backward_ok(d, dqkv, scratch, dout, qkv, att, B, T, C, NH))
        return;
    ocl_op_begin(d);
    ocl_args p = {0}, q = {0}, kv = {0};
    oa_ten(&p, scratch);
    oa_ten(&p, dout);
    oa_ten(&p, qkv);
    oa_ten(&p, att);
    shape_args(&p, B, T, C, NH, causal);
    oa_float(&p, 1.0 / sqrt((double)(C / NH)));
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
    size_t btc = (size_t)B * T * C;
    if (ocl_launch(d, op, K_ATTENTION_BACKWARD_DPRE, &p, (size_t)B * NH * T) &&
        ocl_launch(d, op, K_ATTENTION_BACKWARD_DQ, &q, btc) &&
        ocl_launch(d, op, K_ATTENTION_BACKWARD_DKV, &kv, btc))
        ocl_fault(d, op, dqkv, 3 * btc);
}

void ocl_fill_attention(device_i *ops)
{
    ops->attention_forward = ocl_attention_forward;
    ops->attention_backward = ocl_attention_backward;
}
