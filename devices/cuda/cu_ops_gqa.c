/* devices/cuda/cu_ops_gqa.c: the cuda backend's grouped-query attention (causal, key mask):
 * forward one kernel; backward dq (and the row sums D in scratch), then dk and dv. */
#include <math.h>

#include "cu_internal.h"

/* T, NH, NKV, hs, causal, scale, then the key mask (km, km_off, has_mask) */
static void gqa_dim_args(device *d, cu_args *a, dten keymask, int T, int NH, int NKV, int hs,
                         int causal)
{
    ca_int(a, T);
    ca_int(a, NH);
    ca_int(a, NKV);
    ca_int(a, hs);
    ca_int(a, causal);
    ca_acc(a, CU(d), 1.0 / sqrt((double)hs));
    if (keymask.buf) {
        ca_ten(a, keymask);
    } else { /* any buffer stands in, unread */
        ca_ptr(a, CU(d)->flag);
        ca_ulong(a, 0);
    }
    ca_int(a, keymask.buf != NULL);
}

static void cu_attention_gqa_forward(device *d, dten out, dten att, dten q, dten k, dten v,
                                     dten keymask, int B, int T, int NH, int NKV, int hs,
                                     int causal)
{
    const char *op = "attention_gqa_forward";
    if (!op_gqa_ok(d, op, q, k, v, out, att, keymask, B, T, NH, NKV, hs))
        return;
    size_t rows = (size_t)B * NH * (size_t)T;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, out);
    ca_ten(&a, att);
    ca_ten(&a, q);
    ca_ten(&a, k);
    ca_ten(&a, v);
    gqa_dim_args(d, &a, keymask, T, NH, NKV, hs, causal);
    ca_ulong(&a, rows);
    if (cu_launch(d, op, K_GQA_FORWARD, &a, rows))
        cu_fault(d, op, out, rows * hs);
}

static void cu_attention_gqa_backward(device *d, dten dq, dten dk, dten dv, dten scratch,
                                      dten dout, dten q, dten k, dten v, dten att, dten keymask,
                                      int B, int T, int NH, int NKV, int hs, int causal)
{
    const char *op = "attention_gqa_backward";
    size_t rows = (size_t)B * NH * (size_t)T, kv = (size_t)B * T * (size_t)NKV * hs;
    if (!op_gqa_ok(d, op, q, k, v, dout, att, keymask, B, T, NH, NKV, hs) ||
        !op_gqa_ok(d, op, dq, dk, dv, dout, att, keymask, B, T, NH, NKV, hs) ||
        !device_view_ok(d, op, "scratch", scratch, rows, DT_REAL))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, dq);
    ca_ten(&a, scratch);
    ca_ten(&a, dout);
    ca_ten(&a, k);
    ca_ten(&a, v);
    ca_ten(&a, att);
    gqa_dim_args(d, &a, keymask, T, NH, NKV, hs, causal);
    ca_ulong(&a, rows);
    cu_args b = {0};
    ca_ten(&b, dk);
    ca_ten(&b, dv);
    ca_ten(&b, scratch);
    ca_ten(&b, dout);
    ca_ten(&b, q);
    ca_ten(&b, v);
    ca_ten(&b, att);
    gqa_dim_args(d, &b, keymask, T, NH, NKV, hs, causal);
    ca_ulong(&b, kv);
    if (cu_launch(d, op, K_GQA_BACKWARD_DQ, &a, rows) &&
        cu_launch(d, op, K_GQA_BACKWARD_DKV, &b, kv))
        cu_fault(d, op, dq, rows * hs);
}

void cu_fill_gqa(device_i *ops)
{
    ops->attention_gqa_forward = cu_attention_gqa_forward;
    ops->attention_gqa_backward = cu_attention_gqa_backward;
}
