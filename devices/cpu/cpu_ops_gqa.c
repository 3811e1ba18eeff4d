/* devices/cpu/cpu_ops_gqa.c: the cpu backend's grouped-query attention (q with NH heads, k and
 * v with NKV), causal and key-masked, forward and backward: per-head GEMMs plus softmax rows. */
#include "cpu_real.h"
#include "cpu_simd.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#define NT CblasNoTrans
#define TR CblasTrans

typedef struct {
    int B, T, NH, NKV, hs, causal;
    real scale;
    const int32_t *km; /* [B,T] or NULL */
} gqa_dims;

/* the first element of query head h of sequence b (rows NH*hs apart), of key/value head j
 * (rows NKV*hs apart), of the [T,T] probability block of (b, h) */
static size_t q_at(const gqa_dims *g, long b, int h)
{
    return (size_t)b * g->T * g->NH * g->hs + (size_t)h * g->hs;
}

static size_t kv_at(const gqa_dims *g, long b, int j)
{
    return (size_t)b * g->T * g->NKV * g->hs + (size_t)j * g->hs;
}

static size_t att_at(const gqa_dims *g, long b, int h)
{
    return ((size_t)b * g->NH + (size_t)h) * g->T * g->T;
}

/* key s is seen by every query of a row ending at send when the key mask allows it */
#define SEEN(km, s) (!(km) || (km)[s] != 0)

/* the keys query t sees: s < send (causal: t + 1) */
static int row_end(const gqa_dims *g, int t)
{
    return g->causal ? t + 1 : g->T;
}

/* query head h of sequence b: att = softmax(scale q k^T), out = att v */
static void gqa_head_forward(const gqa_dims *g, real *o, real *a, const real *q, const real *k,
                             const real *v, long b, int h)
{
    int j = h / (g->NH / g->NKV), T = g->T, hs = g->hs;
    int ldq = g->NH * hs, ldk = g->NKV * hs;
    const int32_t *km = g->km ? g->km + (size_t)b * T : NULL;
    real *p = a + att_at(g, b, h);
    cblas_real_gemm(CblasRowMajor, NT, TR, T, T, hs, g->scale, q + q_at(g, b, h), ldq,
                    k + kv_at(g, b, j), ldk, 0, p, T);
    for (int t = 0; t < T; t++)
        cpu_softmax_row(p + (size_t)t * T, T, row_end(g, t), km);
    cblas_real_gemm(CblasRowMajor, NT, NT, T, hs, T, 1, p, T, v + kv_at(g, b, j), ldk, 0,
                    o + q_at(g, b, h), ldq);
}

static void cpu_attention_gqa_forward(device *d, dten out, dten att, dten q, dten k, dten v,
                                      dten keymask, int B, int T, int NH, int NKV, int hs,
                                      int causal)
{
    if (!op_gqa_ok(d, "attention_gqa_forward", q, k, v, out, att, keymask, B, T, NH, NKV, hs))
        return;
    gqa_dims g = {B, T, NH, NKV, hs, causal, (real)(1.0 / sqrt((double)hs)),
                  keymask.buf ? IP(keymask) : NULL};
    real *o = RP(out), *a = RP(att);
    const real *qp = RP(q), *kp = RP(k), *vp = RP(v);
    long heads = (long)B * NH;
    /* inside the parallel loop each GEMM runs on one thread: the same bits at any count */
#pragma omp parallel for schedule(static)
    for (long bh = 0; bh < heads; bh++)
        gqa_head_forward(&g, o, a, qp, kp, vp, bh / NH, (int)(bh % NH));
}

/* one row of the backward: p = att masked to the seen keys (0 elsewhere, whatever att holds);
 * w = dP on entry, dS = scale-free p (dP - D) on return, D = sum_s p dP returned */
CPU_CLONES static double gqa_softmax_backward_row(real *restrict w, real *restrict p,
                                                  const real *restrict arow, int T, int send,
                                                  const int32_t *km)
{
    for (int s = 0; s < T; s++)
        p[s] = (s < send) & (!km || km[s] != 0) ? arow[s] : 0;
    /* to a whole lane past send (p is 0 there: no lane changes) and no branch: vectorized */
    double D;
    CPU_LANE_SUM(D, cpu_padded_end(send, T), (double)p[i] * w[i]);
    for (int s = 0; s < T; s++)
        w[s] = (real)(p[s] * (w[s] - D));
    return D;
}

/* query head h of sequence b adds its part to dq, and to dk and dv of its key/value head;
 * w and pm are [T,T] scratch */
static void gqa_head_backward(const gqa_dims *g, real *dq, real *dk, real *dv, real *sc,
                              const real *dy, const real *q, const real *k, const real *v,
                              const real *a, long b, int h, real *w, real *pm)
{
    int j = h / (g->NH / g->NKV), T = g->T, hs = g->hs;
    int ldq = g->NH * hs, ldk = g->NKV * hs;
    const int32_t *km = g->km ? g->km + (size_t)b * T : NULL;
    const real *p = a + att_at(g, b, h), *dyh = dy + q_at(g, b, h), *qh = q + q_at(g, b, h);
    cblas_real_gemm(CblasRowMajor, NT, TR, T, T, hs, 1, dyh, ldq, v + kv_at(g, b, j), ldk, 0, w,
                    T);
    for (int t = 0; t < T; t++)
        sc[((size_t)b * g->NH + h) * T + t] = (real)gqa_softmax_backward_row(
            w + (size_t)t * T, pm + (size_t)t * T, p + (size_t)t * T, T, row_end(g, t), km);
    cblas_real_gemm(CblasRowMajor, NT, NT, T, hs, T, g->scale, w, T, k + kv_at(g, b, j), ldk, 1,
                    dq + q_at(g, b, h), ldq);
    cblas_real_gemm(CblasRowMajor, TR, NT, T, hs, T, g->scale, w, T, qh, ldq, 1,
                    dk + kv_at(g, b, j), ldk);
    cblas_real_gemm(CblasRowMajor, TR, NT, T, hs, T, 1, pm, T, dyh, ldq, 1, dv + kv_at(g, b, j),
                    ldk);
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
    gqa_dims g = {B, T, NH, NKV, hs, causal, (real)(1.0 / sqrt((double)hs)),
                  keymask.buf ? IP(keymask) : NULL};
    real *sc = RP(scratch);
    const real *dy = RP(dout), *qp = RP(q), *kp = RP(k), *vp = RP(v), *a = RP(att);
    long groups = (long)B * NKV;
    int rep = NH / NKV, short_of_memory = 0;
    size_t TT = (size_t)T * (size_t)T;
    /* one key/value head per item (its query heads in order: no two threads add into the same
     * dk, dv); the GEMMs run on one thread each */
#pragma omp parallel
    {
        real *w = malloc(2 * TT * sizeof *w); /* this thread's dP / dS and masked P */
        if (!w) {
#pragma omp atomic write
            short_of_memory = 1;
        }
#pragma omp for schedule(static)
        for (long bj = 0; bj < groups; bj++)
            for (int h = (int)(bj % NKV) * rep; w && h < (int)(bj % NKV + 1) * rep; h++)
                gqa_head_backward(&g, RP(dq), RP(dk), RP(dv), sc, dy, qp, kp, vp, a, bj / NKV,
                                  h, w, w + TT);
        free(w);
    }
    if (short_of_memory)
        device_fail(d, "%s: %s: no memory for two %dx%d scratch blocks", d->backend, op, T, T);
}

void cpu_fill_gqa(device_i *ops)
{
    ops->attention_gqa_forward = cpu_attention_gqa_forward;
    ops->attention_gqa_backward = cpu_attention_gqa_backward;
}
