/* devices/opencl/ocl_ops_gqa.c: the opencl backend's grouped-query attention (causal, key mask):
 * forward one kernel; backward dq (and the row sums D in scratch), then dk and dv. */
#include <math.h>

#include "ocl_internal.h"

/* T, NH, NKV, hs, causal, scale, then the key mask (km, km_off, has_mask) */
static void gqa_dim_args(device *d, ocl_args *a, dten keymask, int T, int NH, int NKV, int hs,
                         int causal)
{
    oa_int(a, T);
    oa_int(a, NH);
    oa_int(a, NKV);
    oa_int(a, hs);
    oa_int(a, causal);
    oa_acc(a, OCL(d), 1.0 / sqrt((double)hs));
    if (keymask.buf) {
        oa_ten(a, keymask);
    } else { /* any buffer stands in, unread */
        oa_mem(a, OCL(d)->flag);
        oa_ulong(a, 0);
    }
    oa_int(a, keymask.buf != NULL);
}

static void ocl_attention_gqa_forward(device *d, dten out, dten att, dten q, dten k, dten v,
                                      dten keymask, int B, int T, int NH, int NKV, int hs,
                                      int causal)
{
    const char *op = "attention_gqa_forward";
    if (!op_gqa_ok(d, op, q, k, v, out, att, keymask, B, T, NH, NKV, hs))
        return;
    size_t rows = (size_t)B * NH * (size_t)T;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, out);
    oa_ten(&a, att);
    oa_ten(&a, q);
    oa_ten(&a, k);
    oa_ten(&a, v);
    gqa_dim_args(d, &a, keymask, T, NH, NKV, hs, causal);
    oa_ulong(&a, rows);
    if (ocl_launch(d, op, K_GQA_FORWARD, &a, rows))
        ocl_fault(d, op, out, rows * hs);
}

static void ocl_attention_gqa_backward(device *d, dten dq, dten dk, dten dv, dten scratch,
                                       dten dout, dten q, dten k, dten v, dten att, dten keymask,
                                       int B, int T, int NH, int NKV, int hs, int causal)
{
    const char *op = "attention_gqa_backward";
    size_t rows = (size_t)B * NH * (size_t)T, kv = (size_t)B * T * (size_t)NKV * hs;
    if (!op_gqa_ok(d, op, q, k, v, dout, att, keymask, B, T, NH, NKV, hs) ||
        !op_gqa_ok(d, op, dq, dk, dv, dout, att, keymask, B, T, NH, NKV, hs) ||
        !device_view_ok(d, op, "scratch", scratch, rows, DT_REAL))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, dq);
    oa_ten(&a, scratch);
    oa_ten(&a, dout);
    oa_ten(&a, k);
    oa_ten(&a, v);
    oa_ten(&a, att);
    gqa_dim_args(d, &a, keymask, T, NH, NKV, hs, causal);
    oa_ulong(&a, rows);
    ocl_args b = {0};
    oa_ten(&b, dk);
    oa_ten(&b, dv);
    oa_ten(&b, scratch);
    oa_ten(&b, dout);
    oa_ten(&b, q);
    oa_ten(&b, v);
    oa_ten(&b, att);
    gqa_dim_args(d, &b, keymask, T, NH, NKV, hs, causal);
    oa_ulong(&b, kv);
    if (ocl_launch(d, op, K_GQA_BACKWARD_DQ, &a, rows) &&
        ocl_launch(d, op, K_GQA_BACKWARD_DKV, &b, kv))
        ocl_fault(d, op, dq, rows * hs);
}

void ocl_fill_gqa(device_i *ops)
{
    ops->attention_gqa_forward = ocl_attention_gqa_forward;
    ops->attention_gqa_backward = ocl_attention_gqa_backward;
}
