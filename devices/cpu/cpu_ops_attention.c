/* devices/cpu/cpu_ops_attention.c: the cpu backend's multi-head self-attention: forward is
 * parallel over (b, h, t) query rows, backward over (b, h) heads; plain loops on the qkv slices. */
#include "cpu_real.h"

#include <math.h>

static real dot(const real *a, const real *b, int n)
{
    real s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static void axpy(real *y, real a, const real *x, int n)
{
#pragma omp simd
    for (int j = 0; j < n; j++)
        y[j] += a * x[j];
}

/* one query row: arow[s] = softmax_s(q.k_s * scale) (0 past send), y = sum_s arow[s] v_s */
static void att_row(real *y, real *arow, const real *q, const real *kv, int T, int send,
                    size_t C3, int C, int hs, real scale)
{
    double mx = -INFINITY, sum = 0;
    for (int s = 0; s < send; s++) {
        arow[s] = dot(q, kv + (size_t)s * C3, hs) * scale;
        mx = arow[s] > mx ? arow[s] : mx;
    }
    for (int s = 0; s < send; s++) {
        arow[s] = R_EXP(arow[s] - (real)mx);
        sum += arow[s];
    }
    real inv = (real)(1.0 / sum);
    for (int j = 0; j < hs; j++)
        y[j] = 0;
    for (int s = 0; s < send; s++) {
        arow[s] *= inv;
        axpy(y, arow[s], kv + (size_t)s * C3 + C, hs);
    }
    for (int s = send; s < T; s++)
        arow[s] = 0;
}

static void cpu_attention_forward(device *d, dten out, dten att, dten qkv, int B, int T, int C,
                                  int NH, int causal)
{
    if (!op_attention_ok(d, "attention_forward", qkv, att, out, B, T, C, NH))
        return;
    int hs = C / NH;
    size_t C3 = 3 * (size_t)C;
    real scale = (real)(1.0 / sqrt((double)hs));
    const real *x = RP(qkv);
    real *o = RP(out), *a = RP(att);
    long rows = (long)B * NH * T;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++) {
        long b = r / ((long)NH * T), h = (r / T) % NH, t = r % T;
        const real *base = x + (size_t)b * T * C3 + (size_t)h * hs;
        att_row(o + ((size_t)b * T + t) * C + (size_t)h * hs, a + (size_t)r * T,
                base + (size_t)t * C3, base + C, T, causal ? (int)t + 1 : T, C3, C, hs, scale);
    }
}

/* Backward of one head of one sequence, in three passes so each pass adds into one output row
 * at a time. x, dx point at the head's q channels of row 0 (k is +C, v is +2C, rows 3C apart);
 * g at its dout channels (rows C apart); a and w at its [T,T] att and scratch blocks.
 * Pass 1: datt[t,s] = dout_t . v_s, then the softmax backward, scaled by 1/sqrt(hs):
 * w[t,s] = scale * att[t,s] (datt[t,s] - sum_s' att[t,s'] datt[t,s']). */
static void att_back_scores(real *w, const real *x, const real *g, const real *a, int T, int C,
                            int hs, int causal, real scale)
{
    size_t C3 = 3 * (size_t)C;
    for (int t = 0; t < T; t++) {
        int send = causal ? t + 1 : T;
        const real *arow = a + (size_t)t * T, *go = g + (size_t)t * C;
        real *wr = w + (size_t)t * T;
        double dsum = 0;
        for (int s = 0; s < send; s++) {
            wr[s] = dot(go, x + (size_t)s * C3 + 2 * C, hs);
            dsum += (double)arow[s] * wr[s];
        }
        for (int s = 0; s < send; s++)
            wr[s] = (real)(arow[s] * (wr[s] - dsum)) * scale;
    }
}

/* pass 2: dq_t += sum_s w[t,s] k_s;
 * pass 3: dk_s += sum_t w[t,s] q_t and dv_s += sum_t att[t,s] dout_t */
static void att_head_backward(real *dx, real *w, const real *x, const real *g, const real *a,
                              int T, int C, int hs, int causal, real scale)
{
    size_t C3 = 3 * (size_t)C;
    att_back_scores(w, x, g, a, T, C, hs, causal, scale);
    for (int t = 0; t < T; t++)
        for (int s = 0; s < (causal ? t + 1 : T); s++)
            axpy(dx + (size_t)t * C3, w[(size_t)t * T + s], x + (size_t)s * C3 + C, hs);
    for (int s = 0; s < T; s++) {
        real *dk = dx + (size_t)s * C3 + C, *dv = dk + C;
        for (int t = causal ? s : 0; t < T; t++) {
            axpy(dk, w[(size_t)t * T + s], x + (size_t)t * C3, hs);
            axpy(dv, a[(size_t)t * T + s], g + (size_t)t * C, hs);
        }
    }
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
