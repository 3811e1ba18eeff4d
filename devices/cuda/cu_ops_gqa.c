/* devices/cuda/cu_ops_gqa.c: the cuda backend's grouped-query attention (causal, key mask):
 * cuBLAS products batched over sequences or query heads, attention.cl's row kernels. */
#include <math.h>

#include "cu_internal.h"

/* the backward's workspace holds the probabilities of this many bytes' worth of sequences */
#define GQA_WORK_BYTES (256u << 20)

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

/* the forward's product of one pass (0: att = q k^T / sqrt(hs), 1: out = att v) for query heads
 * h0..h0+n-1 of sequence b (n heads of one key/value head, k and v shared: stride 0), or for
 * head h0 of every sequence (n = B, strides a sequence apart) */
static int gqa_forward_product(device *d, const char *op, int pass, dten out, dten att, dten q,
                               dten k, dten v, const gqa_shape *g, int b, int h0, int by_seq)
{
    int T = g->T, hs = g->hs, n = by_seq ? g->B : g->G;
    long long sq = by_seq ? (long long)T * g->qld : hs, sk = by_seq ? (long long)T * g->kld : 0;
    long long sa = by_seq ? g->NH * g->tt : g->tt;
    size_t qo = (size_t)b * T * g->qld + (size_t)h0 * hs;
    size_t ko = (size_t)b * T * g->kld + (size_t)(h0 / g->G) * hs;
    float *a = cu_view_ptr(att) + ((size_t)b * g->NH + (size_t)h0) * g->tt;
    if (pass == 0)
        return cu_sgemm_batch(d, op, 0, 1, T, T, hs, (float)(1.0 / sqrt(hs)), cu_view_ptr(q) + qo,
                              g->qld, sq, cu_view_ptr(k) + ko, g->kld, sk, 0, a, T, sa, n);
    return cu_sgemm_batch(d, op, 0, 0, T, hs, T, 1, a, T, sa, cu_view_ptr(v) + ko, g->kld, sk, 0,
                          cu_view_ptr(out) + qo, g->qld, sq, n);
}

/* att = softmax(q k^T / sqrt(hs)) over the keys each query sees, out = att v: the products
 * batched over the sequences per query head when there are more sequences than query heads per
 * key/value head, else per sequence and key/value head over its query heads */
static int gqa_forward_by_products(device *d, const char *op, dten out, dten att, dten q, dten k,
                                   dten v, dten keymask, const gqa_shape *g)
{
    int by_seq = g->B > g->G;
    for (int pass = 0; pass < 2; pass++) {
        if (by_seq) {
            for (int h = 0; h < g->NH; h++)
                if (!gqa_forward_product(d, op, pass, out, att, q, k, v, g, 0, h, 1))
                    return 0;
        } else {
            for (int b = 0; b < g->B; b++)
                for (int j = 0; j < g->NKV; j++)
                    if (!gqa_forward_product(d, op, pass, out, att, q, k, v, g, b, j * g->G, 0))
                        return 0;
        }
        if (pass == 0) {
            cu_args s = {0};
            ca_ten(&s, att);
            cu_attn_row_args(d, &s, g->T, g->NH, g->causal, 0, 0, keymask);
            if (!cu_launch(d, op, K_ATTENTION_SOFTMAX_ROWS, &s,
                           (size_t)g->B * g->NH * g->T * CU(d)->wg))
                return 0;
        }
    }
    return 1;
}

/* row kernel k over the NH*T rows of sequences b0..b0+nb-1: w (their [nb,NH,T,T]) from att */
static int gqa_rows(device *d, const char *op, cu_kernel_id k, dten w, dten att, dten keymask,
                    const gqa_shape *g, int b0, int nb, int with_scale)
{
    size_t blk = (size_t)g->NH * g->tt;
    cu_args a = {0};
    ca_ten(&a, w);
    ca_ten(&a, dten_view(att, (size_t)b0 * blk, (size_t)nb * blk));
    cu_attn_row_args(d, &a, g->T, g->NH, g->causal, with_scale, 1.0 / sqrt(g->hs),
                     keymask.buf ? dten_view(keymask, (size_t)b0 * g->T, (size_t)nb * g->T)
                                 : keymask);
    return cu_launch(d, op, k, &a, (size_t)nb * g->NH * g->T * CU(d)->wg);
}

/* one product per query head h, batched over the nb sequences from b0 (w holds theirs,
 * [nb,NH,T,T]); the operands of head h: kind 0, dv_j += w_h^T dout_h; 1, w_h = dout_h v_j^T;
 * 2, dq_h += w_h k_j; 3, dk_j += w_h^T q_h (j = h / G; heads in order, so each key/value head
 * adds its query heads in a fixed order) */
static int gqa_head_products(device *d, const char *op, int kind, const float *x, const float *y,
                             float *wp, float *z, const gqa_shape *g, int b0, int nb)
{
    int T = g->T, hs = g->hs;
    long long sq = (long long)T * g->qld, sk = (long long)T * g->kld, sw = g->NH * g->tt;
    for (int h = 0; h < g->NH; h++) {
        size_t qo = (size_t)b0 * sq + (size_t)h * hs, ko = (size_t)b0 * sk + (size_t)(h / g->G) * hs;
        float *w = wp + (size_t)h * g->tt;
        int ok;
        if (kind == 0 || kind == 3) /* x: dout or q ([T,NH*hs] rows), z: dv or dk */
            ok = cu_sgemm_batch(d, op, 1, 0, T, hs, T, 1, w, T, sw, x + qo, g->qld, sq, 1,
                                z + ko, g->kld, sk, nb);
        else if (kind == 1) /* x: dout, y: v */
            ok = cu_sgemm_batch(d, op, 0, 1, T, T, hs, 1, x + qo, g->qld, sq, y + ko, g->kld, sk,
                                0, w, T, sw, nb);
        else /* y: k, z: dq */
            ok = cu_sgemm_batch(d, op, 0, 0, T, hs, T, 1, w, T, sw, y + ko, g->kld, sk, 1,
                                z + qo, g->qld, sq, nb);
        if (!ok)
            return 0;
    }
    return 1;
}

/* the backward of sequences b0..b0+nb-1 in w ([nb,NH,T,T]): w = the probabilities the queries
 * see, dv += w^T dout; w = dout v^T, then dpre in place; dq += dpre k, dk += dpre^T q */
static int gqa_backward_seqs(device *d, const char *op, dten dq, dten dk, dten dv, dten w,
                             dten dout, dten q, dten k, dten v, dten att, dten keymask,
                             const gqa_shape *g, int b0, int nb)
{
    float *wp = cu_view_ptr(w);
    return gqa_rows(d, op, K_ATTENTION_PROBS_ROWS, w, att, keymask, g, b0, nb, 0) &&
           gqa_head_products(d, op, 0, cu_view_ptr(dout), NULL, wp, cu_view_ptr(dv), g, b0, nb) &&
           gqa_head_products(d, op, 1, cu_view_ptr(dout), cu_view_ptr(v), wp, NULL, g, b0, nb) &&
           gqa_rows(d, op, K_ATTENTION_DPRE_ROWS, w, att, keymask, g, b0, nb, 1) &&
           gqa_head_products(d, op, 2, NULL, cu_view_ptr(k), wp, cu_view_ptr(dq), g, b0, nb) &&
           gqa_head_products(d, op, 3, cu_view_ptr(q), NULL, wp, cu_view_ptr(dk), g, b0, nb);
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
    /* scratch ([B,NH,T]) is too small for the products: a workspace of the call's own, [nb,NH,T,T]
     * for as many sequences nb as GQA_WORK_BYTES holds (at least one), batched together */
    gqa_shape g = gqa_shape_of(B, T, NH, NKV, hs, causal);
    size_t per_seq = (size_t)NH * g.tt;
    int nb = (int)(GQA_WORK_BYTES / (per_seq * sizeof(float)));
    nb = nb < 1 ? 1 : nb > B ? B : nb;
    dten w = device_alloc(d, (size_t)nb * per_seq, DT_REAL);
    if (!w.buf)
        return;
    int ok = 1;
    for (int b0 = 0; b0 < B && ok; b0 += nb) {
        int n = B - b0 < nb ? B - b0 : nb;
        ok = gqa_backward_seqs(d, op, dq, dk, dv, dten_view(w, 0, (size_t)n * per_seq), dout, q,
                               k, v, att, keymask, &g, b0, n);
    }
    device_free(d, w);
    if (ok)
        cu_fault(d, op, dq, rows * hs);
}

void cu_fill_gqa(device_i *ops)
{
    ops->attention_gqa_forward = cu_attention_gqa_forward;
    ops->attention_gqa_backward = cu_attention_gqa_backward;
}
