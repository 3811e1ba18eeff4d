/* devices/cpu/cpu_ops_gqa.c: the cpu backend's grouped-query attention (q with NH heads, k and
 * v with NKV), causal and key-masked, forward and backward; naive loops, sums in double. */
#include "cpu_real.h"

#include <math.h>

typedef struct {
    int B, T, NH, NKV, hs, causal;
    double scale;
    const int32_t *km; /* [B,T] or NULL */
} gqa_dims;

#define QI(g, b, t, h, c) ((((size_t)(b) * (g)->T + (t)) * (g)->NH + (h)) * (g)->hs + (c))
#define KI(g, b, s, j, c) ((((size_t)(b) * (g)->T + (s)) * (g)->NKV + (j)) * (g)->hs + (c))
#define AI(g, b, h, t, s) ((((size_t)(b) * (g)->NH + (h)) * (g)->T + (t)) * (g)->T + (s))

/* query t of sequence b sees key s */
static int gqa_sees(const gqa_dims *g, long b, int t, int s)
{
    return (!g->causal || s <= t) && (!g->km || g->km[(size_t)b * g->T + s] != 0);
}

/* one query row (b, h, t): its att row and its out row */
static void gqa_row_forward(const gqa_dims *g, real *o, real *a, const real *q, const real *k,
                            const real *v, long b, int h, int t)
{
    int j = h / (g->NH / g->NKV), hs = g->hs;
    real *ar = a + AI(g, b, h, t, 0);
    double mx = -INFINITY, sum = 0;
    for (int s = 0; s < g->T; s++) {
        if (!gqa_sees(g, b, t, s))
            continue;
        double dot = 0;
        for (int c = 0; c < hs; c++)
            dot += (double)q[QI(g, b, t, h, c)] * k[KI(g, b, s, j, c)];
        ar[s] = (real)(dot * g->scale);
        mx = ar[s] > mx ? ar[s] : mx;
    }
    for (int s = 0; s < g->T; s++)
        if (gqa_sees(g, b, t, s))
            sum += exp((double)ar[s] - mx);
    for (int s = 0; s < g->T; s++)
        ar[s] = gqa_sees(g, b, t, s) ? (real)(exp((double)ar[s] - mx) / sum) : 0;
    for (int c = 0; c < hs; c++) {
        double acc = 0;
        for (int s = 0; s < g->T; s++)
            acc += (double)ar[s] * v[KI(g, b, s, j, c)];
        o[QI(g, b, t, h, c)] = (real)acc;
    }
}

static void cpu_attention_gqa_forward(device *d, dten out, dten att, dten q, dten k, dten v,
                                      dten keymask, int B, int T, int NH, int NKV, int hs,
                                      int causal)
{
    if (!op_gqa_ok(d, "attention_gqa_forward", q, k, v, out, att, keymask, B, T, NH, NKV, hs))
        return;
    gqa_dims g = {B, T, NH, NKV, hs, causal, 1.0 / sqrt((double)hs),
                  keymask.buf ? IP(keymask) : NULL};
    real *o = RP(out), *a = RP(att);
    const real *qp = RP(q), *kp = RP(k), *vp = RP(v);
    long rows = (long)B * NH * T;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++)
        gqa_row_forward(&g, o, a, qp, kp, vp, r / ((long)NH * T), (int)(r / T % NH),
                        (int)(r % T));
}

/* the probability of key s for query (b,h,t): att where seen, 0 elsewhere whatever att holds */
static double gqa_p(const gqa_dims *g, const real *a, long b, int h, int t, int s)
{
    return gqa_sees(g, b, t, s) ? (double)a[AI(g, b, h, t, s)] : 0;
}

/* dp = dout[b,t,h] . v[b,s,j] */
static double gqa_dp(const gqa_dims *g, const real *dy, const real *v, long b, int h, int t,
                     int s)
{
    int j = h / (g->NH / g->NKV);
    double dp = 0;
    for (int c = 0; c < g->hs; c++)
        dp += (double)dy[QI(g, b, t, h, c)] * v[KI(g, b, s, j, c)];
    return dp;
}

/* row (b,h,t): D = sum_s p dp into scratch, dq += scale sum_s p (dp - D) k[s] */
static void gqa_row_backward(const gqa_dims *g, real *dq, real *sc, const real *dy,
                             const real *k, const real *v, const real *a, long b, int h, int t)
{
    int j = h / (g->NH / g->NKV);
    double D = 0;
    for (int s = 0; s < g->T; s++)
        D += gqa_p(g, a, b, h, t, s) * gqa_dp(g, dy, v, b, h, t, s);
    sc[((size_t)b * g->NH + h) * g->T + t] = (real)D;
    for (int c = 0; c < g->hs; c++) {
        double acc = 0;
        for (int s = 0; s < g->T; s++) {
            double p = gqa_p(g, a, b, h, t, s);
            if (p != 0)
                acc += p * (gqa_dp(g, dy, v, b, h, t, s) - D) * k[KI(g, b, s, j, c)];
        }
        dq[QI(g, b, t, h, c)] += (real)(acc * g->scale);
    }
}

/* element (b,s,j,c) of dk and dv: sums over the group's query heads and every query */
static void gqa_kv_backward(const gqa_dims *g, real *dk, real *dv, const real *sc,
                            const real *dy, const real *q, const real *v, const real *a, long b,
                            int s, int j, int c)
{
    int rep = g->NH / g->NKV;
    double ak = 0, av = 0;
    for (int h = j * rep; h < (j + 1) * rep; h++)
        for (int t = 0; t < g->T; t++) {
            double p = gqa_p(g, a, b, h, t, s);
            if (p == 0)
                continue;
            double D = sc[((size_t)b * g->NH + h) * g->T + t];
            ak += p * (gqa_dp(g, dy, v, b, h, t, s) - D) * q[QI(g, b, t, h, c)];
            av += p * dy[QI(g, b, t, h, c)];
        }
    dk[KI(g, b, s, j, c)] += (real)(ak * g->scale);
    dv[KI(g, b, s, j, c)] += (real)av;
}

static void cpu_attention_gqa_backward(device *d, dten dq, dten dk, dten dv, dten scratch,
                                       dten dout, dten q, dten k, dten v, dten att, dten keymask,
                                       int B, int T, int NH, int NKV, int hs, int causal)
{
    const char *op = "attention_gqa_backward";
    if (!op_gqa_ok(d, op, q, k, v, dout, att, keymask, B, T, NH, NKV, hs) ||
        !op_gqa_ok(d, op, dq, dk, dv, dout, att, keymask, B, T, NH, NKV, hs) ||
        !device_view_ok(d, op, "scratch", scratch, (size_t)B * NH * (size_t)T, DT_REAL))
        return;
    gqa_dims g = {B, T, NH, NKV, hs, causal, 1.0 / sqrt((double)hs),
                  keymask.buf ? IP(keymask) : NULL};
    real *sc = RP(scratch);
    const real *dy = RP(dout), *qp = RP(q), *kp = RP(k), *vp = RP(v), *a = RP(att);
    long rows = (long)B * NH * T;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++)
        gqa_row_backward(&g, RP(dq), sc, dy, kp, vp, a, r / ((long)NH * T), (int)(r / T % NH),
                         (int)(r % T));
    long kv = (long)B * T * NKV * hs;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < kv; i++)
        gqa_kv_backward(&g, RP(dk), RP(dv), sc, dy, qp, vp, a, i / ((long)T * NKV * hs),
                        (int)(i / ((long)NKV * hs) % T), (int)(i / hs % NKV), (int)(i % hs));
}

void cpu_fill_gqa(device_i *ops)
{
    ops->attention_gqa_forward = cpu_attention_gqa_forward;
    ops->attention_gqa_backward = cpu_attention_gqa_backward;
}
