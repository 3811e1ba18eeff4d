/* devices/cpu/cpu_ops_attention.c: the cpu backend's multi-head self-attention: forward is
 * parallel over (b, h, t) query rows, backward over (b, h) heads; plain loops on the qkv slices. */
#include "cpu_real.h"

#include <math.h>

static int att_ok(device *d, const char *op, dten qkv, dten att, dten out, int B, int T, int C,
                  int NH)
{
    if (!cpu_dims_ok(d, op, (int[]){B, T, C, NH}, 4, 1))
        return 0;
    if (C % NH != 0) {
        device_fail(d, "%s: %s: C=%d is not a multiple of NH=%d", CPU_BACKEND_NAME, op, C, NH);
        return 0;
    }
    size_t btc = (size_t)B * (size_t)T * (size_t)C;
    return cpu_check(d, op, "qkv", qkv, 3 * btc, DT_REAL) &&
           cpu_check(d, op, "att", att, (size_t)B * NH * (size_t)T * T, DT_REAL) &&
           cpu_check(d, op, "out/dout", out, btc, DT_REAL);
}

static real dot(const real *a, const real *b, int n)
{
    real s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
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
        const real *v = kv + (size_t)s * C3 + C;
        for (int j = 0; j < hs; j++)
            y[j] += arow[s] * v[j];
    }
    for (int s = send; s < T; s++)
        arow[s] = 0;
}

static void cpu_attention_forward(device *d, dten out, dten att, dten qkv, int B, int T, int C,
                                  int NH, int causal)
{
    if (d->failed || !att_ok(d, "attention_forward", qkv, att, out, B, T, C, NH))
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

/* one head of one sequence. Per query row t: datt[s] = dout_t . v_s; the softmax backward
 * dpre[s] = att[s] (datt[s] - sum_s' att[s'] datt[s']) goes to the scratch row; then
 * dq_t += scale sum_s dpre[s] k_s, dk_s += scale dpre[s] q_t, dv_s += att[s] dout_t. */
static void att_head_backward(real *dx, real *work, const real *x, const real *g, const real *a,
                              int T, int C, int hs, int causal, real scale)
{
    size_t C3 = 3 * (size_t)C;
    for (int t = 0; t < T; t++) {
        int send = causal ? t + 1 : T;
        const real *arow = a + (size_t)t * T, *go = g + (size_t)t * C, *q = x + (size_t)t * C3;
        real *w = work + (size_t)t * T, *dq = dx + (size_t)t * C3;
        double dsum = 0;
        for (int s = 0; s < send; s++) {
            w[s] = dot(go, x + (size_t)s * C3 + 2 * C, hs);
            dsum += (double)arow[s] * w[s];
        }
        for (int s = 0; s < send; s++) {
            w[s] = (real)(arow[s] * (w[s] - dsum)) * scale;
            const real *k = x + (size_t)s * C3 + C;
            real *dk = dx + (size_t)s * C3 + C, *dv = dk + C;
            for (int j = 0; j < hs; j++) {
                dq[j] += w[s] * k[j];
                dk[j] += w[s] * q[j];
                dv[j] += arow[s] * go[j];
            }
        }
    }
}

static void cpu_attention_backward(device *d, dten dqkv, dten scratch, dten dout, dten qkv,
                                   dten att, int B, int T, int C, int NH, int causal)
{
    const char *op = "attention_backward";
    if (d->failed || !att_ok(d, op, qkv, att, dout, B, T, C, NH) ||
        !cpu_check(d, op, "dqkv", dqkv, 3 * (size_t)B * T * C, DT_REAL) ||
        !cpu_check(d, op, "scratch", scratch, (size_t)B * NH * (size_t)T * T, DT_REAL))
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
