/* devices/cuda/cu_ops_gqa.c: the cuda backend's grouped-query attention (causal, key mask):
 * cuBLAS products per key/value head batched over its query heads, attention.cl's row kernels. */
#include <math.h>

#include "cu_internal.h"

/* the shape of one call: G = NH / NKV query heads per key/value head; row strides of q/out
 * (qld = NH*hs) and k/v (kld = NKV*hs) */
typedef struct {
    int B, T, NH, NKV, hs, G, qld, kld, causal;
    long long tt;
} gqa_shape;

static gqa_shape gqa_shape_of(int B, int T, int NH, int NKV, int hs, int causal)
{
    gqa_shape g = {B, T, NH, NKV, hs, NH / NKV, NH * hs, NKV * hs, causal, (long long)T * T};
    return g;
}

/* att = softmax(q k^T / sqrt(hs)) over the keys each query sees, out = att v: per sequence b
 * and key/value head j, products batched over its G query heads (k and v shared: stride 0) */
static int gqa_forward_by_products(device *d, const char *op, dten out, dten att, dten q, dten k,
                                   dten v, dten keymask, const gqa_shape *g)
{
    int T = g->T, hs = g->hs, G = g->G;
    for (int pass = 0; pass < 2; pass++) {
        for (int b = 0; b < g->B; b++)
            for (int j = 0; j < g->NKV; j++) {
                size_t qo = (size_t)b * T * g->qld + (size_t)j * G * hs;
                size_t ko = (size_t)b * T * g->kld + (size_t)j * hs;
                float *a = cu_view_ptr(att) + ((size_t)b * g->NH + (size_t)j * G) * g->tt;
                int ok = pass == 0
                             ? cu_sgemm_batch(d, op, 0, 1, T, T, hs, (float)(1.0 / sqrt(hs)),
                                              cu_view_ptr(q) + qo, g->qld, hs,
                                              cu_view_ptr(k) + ko, g->kld, 0, 0, a, T, g->tt, G)
                             : cu_sgemm_batch(d, op, 0, 0, T, hs, T, 1, a, T, g->tt,
                                              cu_view_ptr(v) + ko, g->kld, 0, 0,
                                              cu_view_ptr(out) + qo, g->qld, hs, G);
                if (!ok)
                    return 0;
            }
        if (pass == 0) {
            cu_args s = {0};
            ca_ten(&s, att);
            cu_attn_row_args(d, &s, T, g->NH, g->causal, 0, 0, keymask);
            if (!cu_launch(d, op, K_ATTENTION_SOFTMAX_ROWS, &s,
                           (size_t)g->B * g->NH * T * CU(d)->wg))
                return 0;
        }
    }
    return 1;
}

/* row kernel k over sequence b's NH*T rows: w (one sequence's [NH,T,T]) from att's block b */
static int gqa_rows(device *d, const char *op, cu_kernel_id k, dten w, dten att, dten keymask,
                    const gqa_shape *g, int b, int with_scale)
{
    size_t blk = (size_t)g->NH * g->tt;
    cu_args a = {0};
    ca_ten(&a, w);
    ca_ten(&a, dten_view(att, (size_t)b * blk, blk));
    cu_attn_row_args(d, &a, g->T, g->NH, g->causal, with_scale, 1.0 / sqrt(g->hs),
                     keymask.buf ? dten_view(keymask, (size_t)b * g->T, g->T) : keymask);
    return cu_launch(d, op, k, &a, (size_t)g->NH * g->T * CU(d)->wg);
}

/* dst_j += w_h^T src_h over the query heads h of sequence b, each into its key/value head
 * j = h / G, heads in order (src rows [T, NH*hs] at qb, dst rows [T, NKV*hs] at kb) */
static int add_head_products(device *d, const char *op, const float *wp, const float *src,
                             float *dst, const gqa_shape *g, size_t qb, size_t kb)
{
    for (int h = 0; h < g->NH; h++)
        if (!cu_sgemm_batch(d, op, 1, 0, g->T, g->hs, g->T, 1, wp + h * g->tt, g->T, 0,
                            src + qb + (size_t)h * g->hs, g->qld, 0, 1,
                            dst + kb + (size_t)(h / g->G) * g->hs, g->kld, 0, 1))
            return 0;
    return 1;
}

/* sequence b's backward in w ([NH,T,T]): w = the probabilities the queries see, dv_j +=
 * sum over j's heads of w_h^T dout_h; w = dout v^T, then dpre in place; dq_h += dpre_h k_j,
 * dk_j += sum over j's heads of dpre_h^T q_h (heads added in order) */
static int gqa_backward_seq(device *d, const char *op, dten dq, dten dk, dten dv, dten w,
                            dten dout, dten q, dten k, dten v, dten att, dten keymask,
                            const gqa_shape *g, int b)
{
    int T = g->T, hs = g->hs, G = g->G;
    float *wp = cu_view_ptr(w);
    size_t qb = (size_t)b * T * g->qld, kb = (size_t)b * T * g->kld;
    if (!gqa_rows(d, op, K_ATTENTION_PROBS_ROWS, w, att, keymask, g, b, 0))
        return 0;
    if (!add_head_products(d, op, wp, cu_view_ptr(dout), cu_view_ptr(dv), g, qb, kb))
        return 0;
    for (int j = 0; j < g->NKV; j++)
        if (!cu_sgemm_batch(d, op, 0, 1, T, T, hs, 1, cu_view_ptr(dout) + qb + (size_t)j * G * hs,
                            g->qld, hs, cu_view_ptr(v) + kb + (size_t)j * hs, g->kld, 0, 0,
                            wp + (size_t)j * G * g->tt, T, g->tt, G))
            return 0;
    if (!gqa_rows(d, op, K_ATTENTION_DPRE_ROWS, w, att, keymask, g, b, 1))
        return 0;
    for (int j = 0; j < g->NKV; j++)
        if (!cu_sgemm_batch(d, op, 0, 0, T, hs, T, 1, wp + (size_t)j * G * g->tt, T, g->tt,
                            cu_view_ptr(k) + kb + (size_t)j * hs, g->kld, 0, 1,
                            cu_view_ptr(dq) + qb + (size_t)j * G * hs, g->qld, hs, G))
            return 0;
    return add_head_products(d, op, wp, cu_view_ptr(q), cu_view_ptr(dk), g, qb, kb);
}

static void cu_attention_gqa_forward(device *d, dten out, dten att, dten q, dten k, dten v,
                                     dten keymask, int B, int T, int NH, int NKV, int hs,
                                     int causal)
{
    const char *op = "attention_gqa_forward";
    if (!op_gqa_ok(d, op, q, k, v, out, att, keymask, B, T, NH, NKV, hs))
        return;
    cu_op_begin(d);
    gqa_shape g = gqa_shape_of(B, T, NH, NKV, hs, causal);
    if (gqa_forward_by_products(d, op, out, att, q, k, v, keymask, &g))
        cu_fault(d, op, out, (size_t)B * NH * T * hs);
}

static void cu_attention_gqa_backward(device *d, dten dq, dten dk, dten dv, dten scratch,
                                      dten dout, dten q, dten k, dten v, dten att, dten keymask,
                                      int B, int T, int NH, int NKV, int hs, int causal)
{
    const char *op = "attention_gqa_backward";
    size_t rows = (size_t)B * NH * (size_t)T;
    if (!op_gqa_ok(d, op, q, k, v, dout, att, keymask, B, T, NH, NKV, hs) ||
        !op_gqa_ok(d, op, dq, dk, dv, dout, att, keymask, B, T, NH, NKV, hs) ||
        !device_view_ok(d, op, "scratch", scratch, rows, DT_REAL))
        return;
    cu_op_begin(d);
    /* scratch ([B,NH,T]) is too small for the products: a [NH,T,T] workspace of the call's own */
    gqa_shape g = gqa_shape_of(B, T, NH, NKV, hs, causal);
    dten w = device_alloc(d, (size_t)NH * g.tt, DT_REAL);
    if (!w.buf)
        return;
    int ok = 1;
    for (int b = 0; b < B && ok; b++)
        ok = gqa_backward_seq(d, op, dq, dk, dv, w, dout, q, k, v, att, keymask, &g, b);
    device_free(d, w);
    if (ok)
        cu_fault(d, op, dq, rows * hs);
}

void cu_fill_gqa(device_i *ops)
{
    ops->attention_gqa_forward = cu_attention_gqa_forward;
    ops->attention_gqa_backward = cu_attention_gqa_backward;
}
