/* devices/cpu/cpu_ops_attention.c: the cpu backend's multi-head self-attention, parallel over
 * (b, h) heads, each head as single-threaded GEMMs on its q/k/v slices plus a softmax loop. */
#include "cpu_real.h"

#include <cblas.h>
#include <math.h>

#define NT CblasNoTrans
#define TR CblasTrans

/* row t of S (scores, already scaled) becomes softmax over s < send, zero past it */
static void softmax_row(real *row, int T, int send)
{
    double mx = -INFINITY, sum = 0;
    for (int s = 0; s < send; s++)
        mx = row[s] > mx ? row[s] : mx;
    for (int s = 0; s < send; s++) {
        row[s] = R_EXP(row[s] - (real)mx);
        sum += row[s];
    }
    real inv = (real)(1.0 / sum);
    for (int s = 0; s < send; s++)
        row[s] *= inv;
    for (int s = send; s < T; s++)
        row[s] = 0;
}

/* One head of one sequence: P = softmax(scale Q K^T) (causal mask), O = P V. x points at the
 * head's q channels of row 0 (k at +C, v at +2C, rows 3C apart), o at its output channels (rows
 * C apart), p at its [T,T] att block. The GEMMs run single-threaded inside the parallel loop. */
static void att_head_forward(real *o, real *p, const real *x, int T, int C, int hs, int causal,
                             real scale)
{
    int C3 = 3 * C;
    cblas_real_gemm(CblasRowMajor, NT, TR, T, T, hs, scale, x, C3, x + C, C3, 0, p, T);
    for (int t = 0; t < T; t++)
        softmax_row(p + (size_t)t * T, T, causal ? t + 1 : T);
    cblas_real_gemm(CblasRowMajor, NT, NT, T, hs, T, 1, p, T, x + 2 * C, C3, 0, o, C);
}

static void cpu_attention_forward(device *d, dten out, dten att, dten qkv, int B, int T, int C,
                                  int NH, int causal)
{
    if (!op_attention_ok(d, "attention_forward", qkv, att, out, B, T, C, NH))
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
                         scale);
    }
}

/* Backward of one head (pointers as in att_head_forward; g at its dout channels, w its [T,T]
 * scratch): w = dO V^T; the softmax backward scaled by 1/sqrt(hs):
 * w[t,s] = scale * P[t,s] (w[t,s] - sum_s' P[t,s'] w[t,s']); then dQ += w K, dK += w^T Q;
 * then w = P (masked) and dV += w^T dO. */
static void att_head_backward(real *dx, real *w, const real *x, const real *g, const real *p,
                              int T, int C, int hs, int causal, real scale)
{
    int C3 = 3 * C;
    cblas_real_gemm(CblasRowMajor, NT, TR, T, T, hs, 1, g, C, x + 2 * C, C3, 0, w, T);
    for (int t = 0; t < T; t++) {
        int send = causal ? t + 1 : T;
        const real *prow = p + (size_t)t * T;
        real *wr = w + (size_t)t * T;
        double dsum = 0;
        for (int s = 0; s < send; s++)
            dsum += (double)prow[s] * wr[s];
        for (int s = 0; s < send; s++)
            wr[s] = (real)(prow[s] * (wr[s] - dsum)) * scale;
        for (int s = send; s < T; s++)
            wr[s] = 0;
    }
    cblas_real_gemm(CblasRowMajor, NT, NT, T, hs, T, 1, w, T, x + C, C3, 1, dx, C3);
    cblas_real_gemm(CblasRowMajor, TR, NT, T, hs, T, 1, w, T, x, C3, 1, dx + C, C3);
    /* dV from P as the forward left it: zero past the causal edge whatever the buffer holds */
    for (int t = 0; t < T; t++) {
        int send = causal ? t + 1 : T;
        for (int s = 0; s < T; s++)
            w[(size_t)t * T + s] = s < send ? p[(size_t)t * T + s] : 0;
    }
    cblas_real_gemm(CblasRowMajor, TR, NT, T, hs, T, 1, w, T, g, C, 1, dx + 2 * C, C3);
}

static void cpu_attention_backward(device *d, dten dqkv, dten scratch, dten dout, dten qkv,
                                   dten att, int B, int T, int C, int NH, int causal)
{
    if (!op_attention_backward_ok(d, dqkv, scratch, dout, qkv, att, B, T, C, NH))
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
                          scale);
    }
}

void cpu_fill_attention(device_i *ops)
{
    ops->attention_forward = cpu_attention_forward;
    ops->attention_backward = cpu_attention_backward;
}
