/* devices/cpu/cpu_ops_attention.c: the cpu backend's multi-head self-attention (causal or not,
 * with an optional key mask), parallel over (b, h) heads: per-head GEMMs plus a softmax loop. */
#include "cpu_real.h"

#include <cblas.h>
#include <math.h>

#define NT CblasNoTrans
#define TR CblasTrans

/* key s is seen by a query when the key mask row km (NULL: no mask) does not mark it padding */
#define VISIBLE(km, s) (!(km) || (km)[s] != 0)

/* row t of S (scores, already scaled) becomes softmax over the visible s < send, zero at the
 * others; a row with no visible key becomes all zero */
static void softmax_row(real *row, int T, int send, const int32_t *km)
{
    double mx = -INFINITY, sum = 0;
    for (int s = 0; s < send; s++)
        if (VISIBLE(km, s))
            mx = row[s] > mx ? row[s] : mx;
    for (int s = 0; s < send; s++) {
        row[s] = VISIBLE(km, s) ? R_EXP(row[s] - (real)mx) : 0;
        sum += row[s];
    }
    real inv = sum > 0 ? (real)(1.0 / sum) : 0;
    for (int s = 0; s < send; s++)
        row[s] *= inv;
    for (int s = send; s < T; s++)
        row[s] = 0;
}

/* One head of one sequence: P = softmax(scale Q K^T) (causal and key masks), O = P V. x points
 * at the head's q channels of row 0 (k at +C, v at +2C, rows 3C apart), o at its output channels
 * (rows C apart), p at its [T,T] att block, km at the sequence's key mask row (or NULL). The
 * GEMMs run single-threaded inside the parallel loop. */
static void att_head_forward(real *o, real *p, const real *x, int T, int C, int hs, int causal,
                             real scale, const int32_t *km)
{
    int C3 = 3 * C;
    cblas_real_gemm(CblasRowMajor, NT, TR, T, T, hs, scale, x, C3, x + C, C3, 0, p, T);
    for (int t = 0; t < T; t++)
        softmax_row(p + (size_t)t * T, T, causal ? t + 1 : T, km);
    cblas_real_gemm(CblasRowMajor, NT, NT, T, hs, T, 1, p, T, x + 2 * C, C3, 0, o, C);
}

/* the key mask row of sequence b, or NULL without a mask */
static const int32_t *mask_row(dten keymask, size_t b, int T)
{
    return keymask.buf ? IP(keymask) + b * (size_t)T : NULL;
}

static void attention_forward_op(device *d, const char *op, dten out, dten att, dten qkv,
                                 dten keymask, int B, int T, int C, int NH, int causal)
{
    if (!op_attention_ok(d, op, qkv, att, out, B, T, C, NH) ||
        !op_keymask_ok(d, op, keymask, B, T))
        return;
    int hs = C / NH;
    real scale = (real)(1.0 / sqrt((double)hs));
    const real *x = RP(qkv);
    real *o = RP(out), *a = RP(att);
    long heads = (long)B * NH;
    size_t TT = (size_t)T * T;
#pragma omp parallel for schedule(static)
    for (long bh = 0; bh < heads; bh++) {
        size_t b = (size_t)(bh / NH), h = (size_t)(bh % NH) * hs;
        att_head_forward(o + b * T * C + h, a + bh * TT, x + 3 * b * T * C + h, T, C, hs, causal,
                         scale, mask_row(keymask, b, T));
    }
}

static void cpu_attention_forward(device *d, dten out, dten att, dten qkv, int B, int T, int C,
                                  int NH, int causal)
{
    attention_forward_op(d, "attention_forward", out, att, qkv, (dten){0}, B, T, C, NH, causal);
}

static void cpu_attention_masked_forward(device *d, dten out, dten att, dten qkv, dten keymask,
                                         int B, int T, int C, int NH, int causal)
{
    attention_forward_op(d, "attention_masked_forward", out, att, qkv, keymask, B, T, C, NH,
                         causal);
}

/* Backward of one head (pointers as in att_head_forward; g at its dout channels, w its [T,T]
 * scratch): w = dO V^T; the softmax backward scaled by 1/sqrt(hs):
 * w[t,s] = scale * P[t,s] (w[t,s] - sum_s' P[t,s'] w[t,s']); then dQ += w K, dK += w^T Q;
 * then w = P (masked) and dV += w^T dO. */
static void att_head_backward(real *dx, real *w, const real *x, const real *g, const real *p,
                              int T, int C, int hs, int causal, real scale, const int32_t *km)
{
    int C3 = 3 * C;
    cblas_real_gemm(CblasRowMajor, NT, TR, T, T, hs, 1, g, C, x + 2 * C, C3, 0, w, T);
    for (int t = 0; t < T; t++) {
        int send = causal ? t + 1 : T;
        const real *prow = p + (size_t)t * T;
        real *wr = w + (size_t)t * T;
        double dsum = 0;
        for (int s = 0; s < send; s++)
            if (VISIBLE(km, s))
                dsum += (double)prow[s] * wr[s];
        for (int s = 0; s < send; s++)
            wr[s] = VISIBLE(km, s) ? (real)(prow[s] * (wr[s] - dsum)) * scale : 0;
        for (int s = send; s < T; s++)
            wr[s] = 0;
    }
    cblas_real_gemm(CblasRowMajor, NT, NT, T, hs, T, 1, w, T, x + C, C3, 1, dx, C3);
    cblas_real_gemm(CblasRowMajor, TR, NT, T, hs, T, 1, w, T, x, C3, 1, dx + C, C3);
    /* dV from P as the forward left it: zero past the causal edge and at masked keys whatever
     * the buffer holds */
    for (int t = 0; t < T; t++) {
        int send = causal ? t + 1 : T;
        for (int s = 0; s < T; s++)
            w[(size_t)t * T + s] = s < send && VISIBLE(km, s) ? p[(size_t)t * T + s] : 0;
    }
    cblas_real_gemm(CblasRowMajor, TR, NT, T, hs, T, 1, w, T, g, C, 1, dx + 2 * C, C3);
}

static void attention_backward_op(device *d, const char *op, dten dqkv, dten scratch, dten dout,
                                  dten qkv, dten att, dten keymask, int B, int T, int C, int NH,
                                  int causal)
{
    if (!op_attention_backward_ok(d, op, dqkv, scratch, dout, qkv, att, B, T, C, NH) ||
        !op_keymask_ok(d, op, keymask, B, T))
        return;
    int hs = C / NH;
    real scale = (real)(1.0 / sqrt((double)hs));
    const real *x = RP(qkv), *g = RP(dout), *a = RP(att);
    real *dx = RP(dqkv), *work = RP(scratch);
    long heads = (long)B * NH;
    size_t TT = (size_t)T * T;
#pragma omp parallel for schedule(static)
    for (long bh = 0; bh < heads; bh++) {
        size_t b = (size_t)(bh / NH), off = 3 * b * T * C + (size_t)(bh % NH) * hs;
        att_head_backward(dx + off, work + bh * TT, x + off,
                          g + b * T * C + (size_t)(bh % NH) * hs, a + bh * TT, T, C, hs, causal,
                          scale, mask_row(keymask, b, T));
    }
}

static void cpu_attention_backward(device *d, dten dqkv, dten scratch, dten dout, dten qkv,
                                   dten att, int B, int T, int C, int NH, int causal)
{
    attention_backward_op(d, "attention_backward", dqkv, scratch, dout, qkv, att, (dten){0}, B,
                          T, C, NH, causal);
}

static void cpu_attention_masked_backward(device *d, dten dqkv, dten scratch, dten dout,
                                          dten qkv, dten att, dten keymask, int B, int T, int C,
                                          int NH, int causal)
{
    attention_backward_op(d, "attention_masked_backward", dqkv, scratch, dout, qkv, att, keymask,
                          B, T, C, NH, causal);
}

void cpu_fill_attention(device_i *ops)
{
    ops->attention_forward = cpu_attention_forward;
    ops->attention_backward = cpu_attention_backward;
    ops->attention_masked_forward = cpu_attention_masked_forward;
    ops->attention_masked_backward = cpu_attention_masked_backward;
}
