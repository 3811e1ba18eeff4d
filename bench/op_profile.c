/* bench/op_profile.c: a timing shim over a device's op table for bench_train --profile: each op
 * the models spend time in is timed (then synchronized: on cuda and opencl the times are the ops'
 * own, and the step is slower for it), and each GEMM shape on its own line. */
#include "op_profile.h"

#include <stdio.h>
#include <string.h>

#include "util/util.h"

enum { P_GEMM, P_ATT_F, P_ATT_B, P_GQA_F, P_GQA_B, P_GELU_F, P_GELU_B, P_LN_F, P_LN_B, P_RMS_F,
       P_RMS_B, P_SILU_F, P_SILU_B, P_ROPE_F, P_ROPE_B, P_BIAS_F, P_BIAS_B, P_EMB_F, P_EMB_B,
       P_XENT_F, P_XENT_B, P_ADD, P_ACC, P_SCALE, P_ZERO, P_ADAMW, P_SUMSQ, P_SUM, P_N };
static const char *const names[P_N] = {
    "gemm", "attention_masked_forward", "attention_masked_backward", "attention_gqa_forward",
    "attention_gqa_backward", "gelu_forward", "gelu_backward", "layernorm_forward",
    "layernorm_backward", "rmsnorm_forward", "rmsnorm_backward", "silu_mul_forward",
    "silu_mul_backward", "rope_forward", "rope_backward", "bias_add", "bias_backward",
    "embedding_forward", "embedding_backward", "softmax_xent_forward", "softmax_xent_backward",
    "add", "accumulate", "scale", "zero", "adamw", "sumsq", "sum"};

#define MAX_SHAPES 64
typedef struct {
    int ta, tb, m, n, k, batch;
    double beta, ms;
    long calls;
} gemm_shape;

static struct {
    const device_i *own;
    device_i shim;
    double ms[P_N];
    long calls[P_N];
    gemm_shape shapes[MAX_SHAPES];
    int n_shapes;
} prof;

/* runs call, synchronizes, and adds the time to op i */
#define TIMED(i, d, call)                                                                          \
    do {                                                                                           \
        double t0_ = now_ms();                                                                     \
        call;                                                                                      \
        prof.own->synchronize(d);                                                                  \
        prof.ms[i] += now_ms() - t0_;                                                              \
        prof.calls[i]++;                                                                           \
    } while (0)

static void note_shape(int ta, int tb, int m, int n, int k, int batch, double beta, double ms)
{
    int i = 0;
    while (i < prof.n_shapes &&
           !(prof.shapes[i].ta == ta && prof.shapes[i].tb == tb && prof.shapes[i].m == m &&
             prof.shapes[i].n == n && prof.shapes[i].k == k && prof.shapes[i].batch == batch &&
             prof.shapes[i].beta == beta))
        i++;
    if (i == MAX_SHAPES)
        return; /* counted in the gemm line only */
    if (i == prof.n_shapes)
        prof.shapes[prof.n_shapes++] = (gemm_shape){ta, tb, m, n, k, batch, beta, 0, 0};
    prof.shapes[i].ms += ms;
    prof.shapes[i].calls++;
}

static void s_gemm(device *d, int ta, int tb, int M, int N, int K, double alpha, dten A, int lda,
                   long sa, dten B, int ldb, long sb, double beta, dten C, int ldc, long sc,
                   int batch)
{
    double before = prof.ms[P_GEMM];
    TIMED(P_GEMM, d,
          prof.own->gemm(d, ta, tb, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                         batch));
    note_shape(ta, tb, M, N, K, batch, beta, prof.ms[P_GEMM] - before);
}
static void s_att_f(device *d, dten out, dten att, dten qkv, dten km, int B, int T, int C, int NH,
                    int causal, const attn_dropout *drop)
{
    TIMED(P_ATT_F, d, prof.own->attention_masked_forward(d, out, att, qkv, km, B, T, C, NH, causal,
                                                          drop));
}
static void s_att_b(device *d, dten dqkv, dten scratch, dten dout, dten qkv, dten att, dten km,
                    int B, int T, int C, int NH, int causal, const attn_dropout *drop)
{
    TIMED(P_ATT_B, d, prof.own->attention_masked_backward(d, dqkv, scratch, dout, qkv, att, km, B,
                                                           T, C, NH, causal, drop));
}
static void s_gqa_f(device *d, dten out, dten att, dten q, dten k, dten v, dten km, int B, int T,
                    int NH, int NKV, int hs, int causal)
{
    TIMED(P_GQA_F, d,
          prof.own->attention_gqa_forward(d, out, att, q, k, v, km, B, T, NH, NKV, hs, causal));
}
static void s_gqa_b(device *d, dten dq, dten dk, dten dv, dten scratch, dten dout, dten q, dten k,
                    dten v, dten att, dten km, int B, int T, int NH, int NKV, int hs, int causal)
{
    TIMED(P_GQA_B, d, prof.own->attention_gqa_backward(d, dq, dk, dv, scratch, dout, q, k, v, att,
                                                        km, B, T, NH, NKV, hs, causal));
}
static void s_gelu_f(device *d, dten out, dten inp, int n)
{
    TIMED(P_GELU_F, d, prof.own->gelu_forward(d, out, inp, n));
}
static void s_gelu_b(device *d, dten dinp, dten inp, dten dout, int n)
{
    TIMED(P_GELU_B, d, prof.own->gelu_backward(d, dinp, inp, dout, n));
}
static void s_ln_f(device *d, dten out, dten mean, dten rstd, dten inp, dten w, dten b, int N,
                   int C, double eps)
{
    TIMED(P_LN_F, d, prof.own->layernorm_forward(d, out, mean, rstd, inp, w, b, N, C, eps));
}
static void s_ln_b(device *d, dten dinp, dten dw, dten db, dten dout, dten inp, dten w, dten mean,
                   dten rstd, int N, int C)
{
    TIMED(P_LN_B, d,
          prof.own->layernorm_backward(d, dinp, dw, db, dout, inp, w, mean, rstd, N, C));
}
static void s_rms_f(device *d, dten out, dten rstd, dten inp, dten w, int N, int C, double eps)
{
    TIMED(P_RMS_F, d, prof.own->rmsnorm_forward(d, out, rstd, inp, w, N, C, eps));
}
static void s_rms_b(device *d, dten dinp, dten dw, dten dout, dten inp, dten w, dten rstd, int N,
                    int C)
{
    TIMED(P_RMS_B, d, prof.own->rmsnorm_backward(d, dinp, dw, dout, inp, w, rstd, N, C));
}
static void s_silu_f(device *d, dten out, dten gate, dten up, int n)
{
    TIMED(P_SILU_F, d, prof.own->silu_mul_forward(d, out, gate, up, n));
}
static void s_silu_b(device *d, dten dgate, dten dup, dten dout, dten gate, dten up, int n)
{
    TIMED(P_SILU_B, d, prof.own->silu_mul_backward(d, dgate, dup, dout, gate, up, n));
}
static void s_rope_f(device *d, dten out, dten inp, dten c, dten s, int B, int T, int NH, int hs)
{
    TIMED(P_ROPE_F, d, prof.own->rope_forward(d, out, inp, c, s, B, T, NH, hs));
}
static void s_rope_b(device *d, dten dinp, dten dout, dten c, dten s, int B, int T, int NH, int hs)
{
    TIMED(P_ROPE_B, d, prof.own->rope_backward(d, dinp, dout, c, s, B, T, NH, hs));
}
static void s_bias_f(device *d, dten out, dten bias, int N, int C)
{
    TIMED(P_BIAS_F, d, prof.own->bias_add(d, out, bias, N, C));
}
static void s_bias_b(device *d, dten dbias, dten dout, int N, int C)
{
    TIMED(P_BIAS_B, d, prof.own->bias_backward(d, dbias, dout, N, C));
}
static void s_emb_f(device *d, dten out, dten tok, dten wte, dten wpe, int B, int T, int C)
{
    TIMED(P_EMB_F, d, prof.own->embedding_forward(d, out, tok, wte, wpe, B, T, C));
}
static void s_emb_b(device *d, dten dwte, dten dwpe, dten dout, dten tok, int B, int T, int C)
{
    TIMED(P_EMB_B, d, prof.own->embedding_backward(d, dwte, dwpe, dout, tok, B, T, C));
}
static void s_xent_f(device *d, dten losses, dten probs, dten logits, dten tg, int N, int V,
                     int ignore)
{
    TIMED(P_XENT_F, d, prof.own->softmax_xent_forward(d, losses, probs, logits, tg, N, V, ignore));
}
static void s_xent_b(device *d, dten dlogits, dten probs, dten tg, int N, int V, int ignore,
                     double scale)
{
    TIMED(P_XENT_B, d,
          prof.own->softmax_xent_backward(d, dlogits, probs, tg, N, V, ignore, scale));
}
static void s_add(device *d, dten out, dten a, dten b, int n)
{
    TIMED(P_ADD, d, prof.own->add(d, out, a, b, n));
}
static void s_acc(device *d, dten dst, dten src, int n)
{
    TIMED(P_ACC, d, prof.own->accumulate(d, dst, src, n));
}
static void s_scale(device *d, dten x, double s, int n)
{
    TIMED(P_SCALE, d, prof.own->scale(d, x, s, n));
}
static void s_zero(device *d, dten t)
{
    TIMED(P_ZERO, d, prof.own->zero(d, t));
}
static void s_adamw(device *d, dten p, dten g, dten m, dten v, int n, double lr, double b1,
                    double b2, double eps, double wd, int t)
{
    TIMED(P_ADAMW, d, prof.own->adamw(d, p, g, m, v, n, lr, b1, b2, eps, wd, t));
}
static double s_sumsq(device *d, dten x, int n)
{
    double r = 0;
    TIMED(P_SUMSQ, d, r = prof.own->sumsq(d, x, n));
    return r;
}
static double s_sum(device *d, dten x, int n)
{
    double r = 0;
    TIMED(P_SUM, d, r = prof.own->sum(d, x, n));
    return r;
}

void op_profile_start(device *d)
{
    memset(&prof, 0, sizeof prof);
    prof.own = d->ops;
    device_i *s = &prof.shim;
    *s = *d->ops;
    s->gemm = s_gemm;
    s->attention_masked_forward = s_att_f;
    s->attention_masked_backward = s_att_b;
    s->attention_gqa_forward = s_gqa_f;
    s->attention_gqa_backward = s_gqa_b;
    s->gelu_forward = s_gelu_f;
    s->gelu_backward = s_gelu_b;
    s->layernorm_forward = s_ln_f;
    s->layernorm_backward = s_ln_b;
    s->rmsnorm_forward = s_rms_f;
    s->rmsnorm_backward = s_rms_b;
    s->silu_mul_forward = s_silu_f;
    s->silu_mul_backward = s_silu_b;
    s->rope_forward = s_rope_f;
    s->rope_backward = s_rope_b;
    s->bias_add = s_bias_f;
    s->bias_backward = s_bias_b;
    s->embedding_forward = s_emb_f;
    s->embedding_backward = s_emb_b;
    s->softmax_xent_forward = s_xent_f;
    s->softmax_xent_backward = s_xent_b;
    s->add = s_add;
    s->accumulate = s_acc;
    s->scale = s_scale;
    s->zero = s_zero;
    s->adamw = s_adamw;
    s->sumsq = s_sumsq;
    s->sum = s_sum;
    d->ops = s;
}

void op_profile_stop(device *d, int steps, double step_ms)
{
    d->ops = prof.own;
    double timed = 0;
    printf("  where a step goes (each op timed and synchronized; ms per step):\n");
    for (int i = 0; i < P_N; i++)
        if (prof.calls[i]) {
            printf("    %-28s %9.3f ms %5.1f %%  %6.1f calls\n", names[i], prof.ms[i] / steps,
                   100.0 * prof.ms[i] / steps / step_ms, (double)prof.calls[i] / steps);
            timed += prof.ms[i];
        }
    printf("    %-28s %9.3f ms %5.1f %%  (the other ops and the host)\n", "rest",
           step_ms - timed / steps, 100.0 * (1 - timed / steps / step_ms));
    printf("  gemm by shape (row-major C[M,N] = op(A) op(B) over K):\n");
    for (int i = 0; i < prof.n_shapes; i++) {
        const gemm_shape *g = &prof.shapes[i];
        double flop = 2.0 * g->m * g->n * (double)g->k * g->batch * g->calls;
        printf("    %c%c %6d x %6d x %6d batch %4d beta %g: %8.3f ms %6.1f calls %9.1f GFLOP/s\n",
               g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', g->m, g->n, g->k, g->batch, g->beta,
               g->ms / steps, (double)g->calls / steps, g->ms > 0 ? flop / g->ms / 1e6 : 0);
    }
}
