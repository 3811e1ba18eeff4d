/* harness/ops/opcheck_ops.c: the table of `harness ops`: each device op's tensors, how to call it,
 * its test threshold, and the shapes of the test, grad and perf modes. Thresholds: docs/ops.md. */
#include <stdio.h>
#include <string.h>

#include "opcheck.h"

/* NMSE thresholds by how an op computes (fp32 unit roundoff u = 6e-8, so one rounding apart in
 * every element is NMSE ~ u^2 = 4e-15; a wrong index, term or offset is NMSE >= 1e-6):
 * EXACT: one rounding per element in the reference's order (add, copy-like scatters): equal up
 *   to contraction or ulp-level rounding, 1e-12 leaves 250x room over a last-bit difference;
 * ELEMENTWISE: exp/sqrt/div per element (GELU, AdamW, softmax grad): libm and OpenCL builtins
 *   differ by a few ulps, NMSE ~1e-14; 1e-10 allows 100x that in every element;
 * REDUCTION: row/column sums in a different order (layernorm, bias grads, softmax, sum):
 *   rounding grows like sqrt(n) u, still < 1e-12 at these sizes; 1e-9;
 * CONTRACTION: dot products of length K (GEMM, attention): NMSE up to ~K u^2 = 2e-12 at
 *   K = 512 however a vendor GEMM blocks and orders its sums; 1e-10 is 50x that (a 1e-3 error
 *   in every output of the K = 512 case, magnitude ~10, is NMSE 2e-8). */
#define NMSE_EXACT 1e-12
#define NMSE_ELEMENTWISE 1e-10
#define NMSE_REDUCTION 1e-9
#define NMSE_CONTRACTION 1e-10

#define OPS(d) ((d)->ops)
#define BT(s) ((size_t)(s)->B * (size_t)(s)->T)

static oc_tensor real_t(const char *name, oc_role role, size_t n, double lo, double hi)
{
    return (oc_tensor){name, role, DT_REAL, n, OC_UNIFORM, lo, hi};
}

static oc_tensor ids_t(const char *name, size_t n, int V, oc_gen gen)
{
    return (oc_tensor){name, OC_IN, DT_I32, n, gen, 0, V};
}

/* ---- shape descriptions ---- */

static void desc_n(const oc_shape *s, char *o, size_t l) { snprintf(o, l, "n=%d", s->n); }
static void desc_nc(const oc_shape *s, char *o, size_t l) { snprintf(o, l, "N=%d C=%d", s->N, s->C); }
static void desc_nv(const oc_shape *s, char *o, size_t l)
{
    snprintf(o, l, "N=%d V=%d%s", s->N, s->V, s->alias ? " in-place" : "");
}
static void desc_emb(const oc_shape *s, char *o, size_t l)
{
    snprintf(o, l, "B=%d T=%d C=%d V=%d", s->B, s->T, s->C, s->V);
}
static void desc_att(const oc_shape *s, char *o, size_t l)
{
    snprintf(o, l, "B=%d T=%d C=%d NH=%d %s", s->B, s->T, s->C, s->NH, s->causal ? "causal" : "full");
}
static void desc_emb_tt(const oc_shape *s, char *o, size_t l)
{
    snprintf(o, l, "B=%d T=%d C=%d V=%d types=%d", s->B, s->T, s->C, s->V, s->NTT);
}
static void desc_att_masked(const oc_shape *s, char *o, size_t l)
{
    int k = snprintf(o, l, "B=%d T=%d C=%d NH=%d %s%s", s->B, s->T, s->C, s->NH,
                     s->causal ? "causal" : "full", s->masked ? " key-masked" : " no mask");
    if (s->p > 0 && k >= 0 && (size_t)k < l)
        snprintf(o + k, l - (size_t)k, " dropout p=%g step=%d layer=%d", s->p, s->step,
                 s->layer);
}
static void desc_dropout(const oc_shape *s, char *o, size_t l)
{
    snprintf(o, l, "n=%d p=%g step=%d layer=%d site=%d%s", s->n, s->p, s->step, s->layer, s->site,
             s->alias ? " in-place, no mask" : "");
}
static void desc_gemm(const oc_shape *s, char *o, size_t l)
{
    int n = snprintf(o, l, "%dx%dx%d %c%c", s->M, s->N, s->K, s->ta ? 'T' : 'N', s->tb ? 'T' : 'N');
    if (s->batch > 1 && n > 0 && (size_t)n < l)
        n += snprintf(o + n, l - (size_t)n, " x%d", s->batch);
    if ((s->alpha != 1 || s->beta != 0) && n > 0 && (size_t)n < l)
        snprintf(o + n, l - (size_t)n, " a=%g b=%g", s->alpha, s->beta);
}
static void desc_adamw(const oc_shape *s, char *o, size_t l)
{
    snprintf(o, l, "n=%d t=%d wd=%g", s->n, s->t, s->beta);
}

/* ---- embedding ---- */

static int emb_fwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("out", OC_OUT, BT(s) * s->C, 0, 0);
    t[1] = ids_t("tokens", BT(s), s->V, OC_IDS);
    t[2] = real_t("wte", OC_IN, (size_t)s->V * s->C, -1, 1);
    t[3] = real_t("wpe", OC_IN, (size_t)s->T * s->C, -1, 1);
    return 4;
}
static double emb_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->embedding_forward(d, t[0], t[1], t[2], t[3], s->B, s->T, s->C);
    return 0;
}
static int emb_bwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("dwte", OC_ACC, (size_t)s->V * s->C, -1, 1);
    t[1] = real_t("dwpe", OC_ACC, (size_t)s->T * s->C, -1, 1);
    t[2] = real_t("dout", OC_IN, BT(s) * s->C, -1, 1);
    t[3] = ids_t("tokens", BT(s), s->V, OC_IDS);
    return 4;
}
static double emb_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->embedding_backward(d, t[0], t[1], t[2], t[3], s->B, s->T, s->C);
    return 0;
}

static int emb_tt_fwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("out", OC_OUT, BT(s) * s->C, 0, 0);
    t[1] = ids_t("tokens", BT(s), s->V, OC_IDS);
    t[2] = ids_t("types", BT(s), s->NTT, OC_IDS);
    t[3] = real_t("wte", OC_IN, (size_t)s->V * s->C, -1, 1);
    t[4] = real_t("wpe", OC_IN, (size_t)s->T * s->C, -1, 1);
    t[5] = real_t("wtt", OC_IN, (size_t)s->NTT * s->C, -1, 1);
    return 6;
}
static double emb_tt_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->embedding_tt_forward(d, t[0], t[1], t[2], t[3], t[4], t[5], s->B, s->T, s->C);
    return 0;
}
static int emb_tt_bwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("dwte", OC_ACC, (size_t)s->V * s->C, -1, 1);
    t[1] = real_t("dwpe", OC_ACC, (size_t)s->T * s->C, -1, 1);
    t[2] = real_t("dwtt", OC_ACC, (size_t)s->NTT * s->C, -1, 1);
    t[3] = real_t("dout", OC_IN, BT(s) * s->C, -1, 1);
    t[4] = ids_t("tokens", BT(s), s->V, OC_IDS);
    t[5] = ids_t("types", BT(s), s->NTT, OC_IDS);
    return 6;
}
static double emb_tt_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->embedding_tt_backward(d, t[0], t[1], t[2], t[3], t[4], t[5], s->B, s->T, s->C);
    return 0;
}

/* ---- layernorm ---- */

static int ln_fwd_t(const oc_shape *s, oc_tensor *t)
{
    size_t nc = (size_t)s->N * s->C;
    t[0] = real_t("out", OC_OUT, nc, 0, 0);
    t[1] = real_t("mean", OC_OUT, (size_t)s->N, 0, 0);
    t[2] = real_t("rstd", OC_OUT, (size_t)s->N, 0, 0);
    t[3] = real_t("inp", OC_IN, nc, -1, 3);
    t[4] = real_t("w", OC_IN, (size_t)s->C, 0.5, 1.5);
    t[5] = real_t("b", OC_IN, (size_t)s->C, -1, 1);
    return 6;
}
static double ln_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->layernorm_forward(d, t[0], t[1], t[2], t[3], t[4], t[5], s->N, s->C, 1e-5);
    return 0;
}
static int ln_bwd_t(const oc_shape *s, oc_tensor *t)
{
    size_t nc = (size_t)s->N * s->C;
    t[0] = real_t("dinp", OC_ACC, nc, -1, 1);
    t[1] = real_t("dw", OC_ACC, (size_t)s->C, -1, 1);
    t[2] = real_t("db", OC_ACC, (size_t)s->C, -1, 1);
    t[3] = real_t("dout", OC_IN, nc, -1, 1);
    t[4] = real_t("inp", OC_IN, nc, -1, 3);
    t[5] = real_t("w", OC_IN, (size_t)s->C, 0.5, 1.5);
    t[6] = real_t("mean", OC_IN, (size_t)s->N, 0, 2);
    t[7] = real_t("rstd", OC_IN, (size_t)s->N, 0.5, 2);
    return 8;
}
static double ln_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->layernorm_backward(d, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], s->N, s->C);
    return 0;
}
static double ln_flops(const oc_shape *s) { return 8.0 * s->N * s->C; }

/* ---- gemm, bias ---- */

/* elements operand X spans: op(X) is rows x cols, stored transposed when trans */
static size_t gemm_span(int trans, int rows, int cols, int ld, long stride, int batch)
{
    int sr = trans ? cols : rows, sc = trans ? rows : cols;
    if (sr <= 0 || sc <= 0 || batch <= 0)
        return 0;
    return (size_t)(batch - 1) * (size_t)stride + (size_t)(sr - 1) * (size_t)ld + (size_t)sc;
}
static int gemm_t(const oc_shape *s, oc_tensor *t)
{
    size_t nc = gemm_span(0, s->M, s->N, s->ldc, s->sC, s->batch);
    /* C is overwritten when beta == 0 and it has no gaps the op must leave alone */
    int dense = s->ldc == s->N && (s->batch == 1 || s->sC == (long)s->M * s->N);
    t[0] = real_t("A", OC_IN, gemm_span(s->ta, s->M, s->K, s->lda, s->sA, s->batch), -1, 1);
    t[1] = real_t("B", OC_IN, gemm_span(s->tb, s->K, s->N, s->ldb, s->sB, s->batch), -1, 1);
    t[2] = real_t("C", s->beta == 0 && dense ? OC_OUT : OC_ACC, nc, -1, 1);
    return 3;
}
static double gemm_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->gemm(d, s->ta, s->tb, s->M, s->N, s->K, s->alpha, t[0], s->lda, s->sA, t[1], s->ldb,
                 s->sB, s->beta, t[2], s->ldc, s->sC, s->batch);
    return 0;
}
static double gemm_flops(const oc_shape *s) { return 2.0 * s->M * s->N * s->K * s->batch; }

static int bias_add_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("out", OC_ACC, (size_t)s->N * s->C, -1, 1);
    t[1] = real_t("bias", OC_IN, (size_t)s->C, -1, 1);
    return 2;
}
static double bias_add_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->bias_add(d, t[0], t[1], s->N, s->C);
    return 0;
}
static int bias_bwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("dbias", OC_ACC, (size_t)s->C, -1, 1);
    t[1] = real_t("dout", OC_IN, (size_t)s->N * s->C, -1, 1);
    return 2;
}
static double bias_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->bias_backward(d, t[0], t[1], s->N, s->C);
    return 0;
}

/* ---- attention ---- */

static size_t att_n(const oc_shape *s) { return BT(s) * s->NH * s->T; }
static int att_fwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("out", OC_OUT, BT(s) * s->C, 0, 0);
    t[1] = real_t("att", OC_OUT, att_n(s), 0, 0);
    t[2] = real_t("qkv", OC_IN, 3 * BT(s) * s->C, -1, 1);
    return 3;
}
static double att_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->attention_forward(d, t[0], t[1], t[2], s->B, s->T, s->C, s->NH, s->causal);
    return 0;
}
static int att_bwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("dqkv", OC_ACC, 3 * BT(s) * s->C, -1, 1);
    t[1] = real_t("scratch", OC_SCRATCH, att_n(s), 0, 0);
    t[2] = real_t("dout", OC_IN, BT(s) * s->C, -1, 1);
    t[3] = real_t("qkv", OC_IN, 3 * BT(s) * s->C, -1, 1);
    t[4] = real_t("att", OC_IN, att_n(s), 0, 1);
    return 5;
}
static double att_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->attention_backward(d, t[0], t[1], t[2], t[3], t[4], s->B, s->T, s->C, s->NH,
                               s->causal);
    return 0;
}
/* the key mask of a masked case: [B,T] in rows of T; an unmasked case passes a view with no
 * buffer (one element of tensor list, so the table shape stays the same) */
static int att_masked_fwd_t(const oc_shape *s, oc_tensor *t)
{
    int k = att_fwd_t(s, t);
    if (s->masked)
        t[k++] = (oc_tensor){"keymask", OC_IN, DT_I32, BT(s), OC_KEYMASK, 0, s->T};
    return k;
}
static dten mask_view(const oc_shape *s, const dten *t, int i)
{
    return s->masked ? t[i] : (dten){0};
}
/* a case's probability dropout (seed OC_DROPOUT_SEED), or NULL when its p is 0 */
static const attn_dropout *att_drop(const oc_shape *s, attn_dropout *dr)
{
    *dr = (attn_dropout){s->p, OC_DROPOUT_SEED, (uint32_t)s->step, (uint32_t)s->layer};
    return s->p > 0 ? dr : NULL;
}
static double att_masked_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    attn_dropout dr;
    OPS(d)->attention_masked_forward(d, t[0], t[1], t[2], mask_view(s, t, 3), s->B, s->T, s->C,
                                     s->NH, s->causal, att_drop(s, &dr));
    return 0;
}
static int att_masked_bwd_t(const oc_shape *s, oc_tensor *t)
{
    int k = att_bwd_t(s, t);
    if (s->masked)
        t[k++] = (oc_tensor){"keymask", OC_IN, DT_I32, BT(s), OC_KEYMASK, 0, s->T};
    return k;
}
static double att_masked_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    attn_dropout dr;
    OPS(d)->attention_masked_backward(d, t[0], t[1], t[2], t[3], t[4], mask_view(s, t, 5), s->B,
                                      s->T, s->C, s->NH, s->causal, att_drop(s, &dr));
    return 0;
}

/* q.k and att.v over the rows each query sees (half of them when causal) */
static double att_fwd_flops(const oc_shape *s)
{
    return 4.0 * s->B * s->T * s->T * s->C * (s->causal ? 0.5 : 1.0);
}
static double att_bwd_flops(const oc_shape *s) { return 2.0 * att_fwd_flops(s); }

/* ---- elementwise ---- */

static int gelu_fwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("out", OC_OUT, (size_t)s->n, 0, 0);
    t[1] = real_t("inp", OC_IN, (size_t)s->n, -4, 4);
    return 2;
}
static double gelu_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->gelu_forward(d, t[0], t[1], s->n);
    return 0;
}
static int gelu_bwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("dinp", OC_ACC, (size_t)s->n, -1, 1);
    t[1] = real_t("inp", OC_IN, (size_t)s->n, -4, 4);
    t[2] = real_t("dout", OC_IN, (size_t)s->n, -1, 1);
    return 3;
}
static double gelu_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->gelu_backward(d, t[0], t[1], t[2], s->n);
    return 0;
}
static double gelu_erf_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->gelu_erf_forward(d, t[0], t[1], s->n);
    return 0;
}
static double gelu_erf_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->gelu_erf_backward(d, t[0], t[1], t[2], s->n);
    return 0;
}

/* ---- dropout ---- */

/* alias: in place and without a mask, as the models call it (gpt2's and bert's hidden states) */
static int dropout_fwd_t(const oc_shape *s, oc_tensor *t)
{
    if (s->alias) {
        t[0] = real_t("x (in place)", OC_ACC, (size_t)s->n, -2, 2);
        return 1;
    }
    t[0] = real_t("out", OC_OUT, (size_t)s->n, 0, 0);
    t[1] = (oc_tensor){"mask", OC_OUT, DT_I32, (size_t)s->n, OC_IDS, 0, 1};
    t[2] = real_t("inp", OC_IN, (size_t)s->n, -2, 2);
    return 3;
}
static double dropout_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->dropout_forward(d, t[0], s->alias ? (dten){0} : t[1], s->alias ? t[0] : t[2], s->n,
                            s->p, OC_DROPOUT_SEED, (uint32_t)s->step, (uint32_t)s->layer,
                            (uint32_t)s->site);
    return 0;
}
static int dropout_bwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("dinp", OC_ACC, (size_t)s->n, -1, 1);
    t[1] = real_t("dout", OC_IN, (size_t)s->n, -2, 2);
    return 2;
}
static double dropout_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->dropout_backward(d, t[0], t[1], s->n, s->p, OC_DROPOUT_SEED, (uint32_t)s->step,
                             (uint32_t)s->layer, (uint32_t)s->site);
    return 0;
}

static int add_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("out", OC_OUT, (size_t)s->n, 0, 0);
    t[1] = real_t("a", OC_IN, (size_t)s->n, -1, 1);
    t[2] = real_t("b", OC_IN, (size_t)s->n, -1, 1);
    return 3;
}
static double add_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->add(d, t[0], t[1], t[2], s->n);
    return 0;
}
static int acc_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("dst", OC_ACC, (size_t)s->n, -1, 1);
    t[1] = real_t("src", OC_IN, (size_t)s->n, -1, 1);
    return 2;
}
static double acc_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->accumulate(d, t[0], t[1], s->n);
    return 0;
}
static int scale_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("x", OC_ACC, (size_t)s->n, -1, 1);
    return 1;
}
static double scale_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->scale(d, t[0], s->scale, s->n);
    return 0;
}

/* ---- zero, copy, and round_lowp (the bf16/fp16 rounding of devices/lowp.h) ---- */

static int zero_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("out", OC_OUT, (size_t)s->n, 0, 0);
    return 1;
}
static double zero_run(device *d, const oc_shape *s, const dten *t)
{
    (void)s;
    OPS(d)->zero(d, t[0]);
    return 0;
}
static int copy_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("dst", OC_OUT, (size_t)s->n, 0, 0);
    t[1] = real_t("src", OC_IN, (size_t)s->n, -1, 1);
    return 2;
}
static double copy_run(device *d, const oc_shape *s, const dten *t)
{
    (void)s;
    OPS(d)->copy(d, t[0], t[1]);
    return 0;
}
/* values over most of fp16's range (its largest finite value is 65504; an Inf output is not
 * compared) and a wide range for bf16 */
static int round_t(const oc_shape *s, oc_tensor *t)
{
    double hi = s->lowp == 2 ? 60000 : 3e5;
    t[0] = real_t("x", OC_ACC, (size_t)s->n, -hi, hi);
    return 1;
}
static double round_run(device *d, const oc_shape *s, const dten *t)
{
    if (!d->round_lowp) /* cmd_ops leaves such a device out of this op; a caller that did not */
        device_fail(d, "%s: round_lowp: the device has none (bf16/fp16 are refused on it)",
                    d->backend);
    else
        d->round_lowp(d, t[0], s->n, s->lowp);
    return 0;
}
static void desc_round(const oc_shape *s, char *o, size_t l)
{
    snprintf(o, l, "n=%d %s", s->n, s->lowp == 2 ? "fp16" : "bf16");
}

/* ---- softmax cross-entropy ---- */

static int xent_fwd_t(const oc_shape *s, oc_tensor *t)
{
    size_t nv = (size_t)s->N * s->V;
    int k = 0;
    t[k++] = real_t("losses", OC_OUT, (size_t)s->N, 0, 0);
    if (!s->alias)
        t[k++] = real_t("probs", OC_OUT, nv, 0, 0);
    t[k++] = real_t(s->alias ? "logits/probs" : "logits", s->alias ? OC_ACC : OC_IN, nv, -4, 4);
    t[k++] = ids_t("targets", (size_t)s->N, s->V, OC_TARGETS);
    return k;
}
static double xent_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    int a = s->alias ? 1 : 0; /* in place: probs and logits are the same view */
    OPS(d)->softmax_xent_forward(d, t[0], t[1], t[2 - a], t[3 - a], s->N, s->V, OC_IGNORE_INDEX);
    return 0;
}
static int xent_bwd_t(const oc_shape *s, oc_tensor *t)
{
    size_t nv = (size_t)s->N * s->V;
    t[0] = real_t("dlogits", OC_ACC, nv, -1, 1);
    t[1] = real_t("probs", OC_IN, nv, 0, 1);
    t[2] = ids_t("targets", (size_t)s->N, s->V, OC_TARGETS);
    return 3;
}
static double xent_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->softmax_xent_backward(d, t[0], t[1], t[2], s->N, s->V, OC_IGNORE_INDEX, s->scale);
    return 0;
}

/* ---- decoder (Llama) ops ---- */

static int rms_fwd_t(const oc_shape *s, oc_tensor *t)
{
    size_t nc = (size_t)s->N * s->C;
    t[0] = real_t("out", OC_OUT, nc, 0, 0);
    t[1] = real_t("rstd", OC_OUT, (size_t)s->N, 0, 0);
    t[2] = real_t("inp", OC_IN, nc, -1, 3);
    t[3] = real_t("w", OC_IN, (size_t)s->C, 0.5, 1.5);
    return 4;
}
static double rms_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->rmsnorm_forward(d, t[0], t[1], t[2], t[3], s->N, s->C, 1e-6);
    return 0;
}
static int rms_bwd_t(const oc_shape *s, oc_tensor *t)
{
    size_t nc = (size_t)s->N * s->C;
    t[0] = real_t("dinp", OC_ACC, nc, -1, 1);
    t[1] = real_t("dw", OC_ACC, (size_t)s->C, -1, 1);
    t[2] = real_t("dout", OC_IN, nc, -1, 1);
    t[3] = real_t("inp", OC_IN, nc, -1, 3);
    t[4] = real_t("w", OC_IN, (size_t)s->C, 0.5, 1.5);
    t[5] = real_t("rstd", OC_IN, (size_t)s->N, 0.5, 2);
    return 6;
}
static double rms_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->rmsnorm_backward(d, t[0], t[1], t[2], t[3], t[4], t[5], s->N, s->C);
    return 0;
}
static double rms_flops(const oc_shape *s) { return 4.0 * s->N * s->C; }

static int silu_mul_fwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("out", OC_OUT, (size_t)s->n, 0, 0);
    t[1] = real_t("gate", OC_IN, (size_t)s->n, -6, 6);
    t[2] = real_t("up", OC_IN, (size_t)s->n, -2, 2);
    return 3;
}
static double silu_mul_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->silu_mul_forward(d, t[0], t[1], t[2], s->n);
    return 0;
}
static int silu_mul_bwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("dgate", OC_ACC, (size_t)s->n, -1, 1);
    t[1] = real_t("dup", OC_ACC, (size_t)s->n, -1, 1);
    t[2] = real_t("dout", OC_IN, (size_t)s->n, -1, 1);
    t[3] = real_t("gate", OC_IN, (size_t)s->n, -6, 6);
    t[4] = real_t("up", OC_IN, (size_t)s->n, -2, 2);
    return 5;
}
static double silu_mul_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->silu_mul_backward(d, t[0], t[1], t[2], t[3], t[4], s->n);
    return 0;
}

/* rope on x[B,T,NH,hs] with hs = C/NH; the cos/sin tables are drawn uniform in [-1, 1] (the op
 * is linear in each, so any values test its indexing and arithmetic) */
static size_t rope_n(const oc_shape *s) { return BT(s) * s->C; }
static size_t rope_tab(const oc_shape *s) { return (size_t)s->T * (s->C / s->NH / 2); }
/* alias: in place (out = inp), as the llama family rotates q and k */
static int rope_fwd_t(const oc_shape *s, oc_tensor *t)
{
    int k = 0;
    if (s->alias) {
        t[k++] = real_t("x (in place)", OC_ACC, rope_n(s), -2, 2);
    } else {
        t[k++] = real_t("out", OC_OUT, rope_n(s), 0, 0);
        t[k++] = real_t("inp", OC_IN, rope_n(s), -2, 2);
    }
    t[k++] = real_t("cos", OC_IN, rope_tab(s), -1, 1);
    t[k++] = real_t("sin", OC_IN, rope_tab(s), -1, 1);
    return k;
}
static double rope_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    int a = s->alias ? 1 : 0;
    OPS(d)->rope_forward(d, t[0], t[1 - a], t[2 - a], t[3 - a], s->B, s->T, s->NH, s->C / s->NH);
    return 0;
}
static int rope_bwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("dinp", OC_ACC, rope_n(s), -1, 1);
    t[1] = real_t("dout", OC_IN, rope_n(s), -1, 1);
    t[2] = real_t("cos", OC_IN, rope_tab(s), -1, 1);
    t[3] = real_t("sin", OC_IN, rope_tab(s), -1, 1);
    return 4;
}
static double rope_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->rope_backward(d, t[0], t[1], t[2], t[3], s->B, s->T, s->NH, s->C / s->NH);
    return 0;
}
static void desc_rope(const oc_shape *s, char *o, size_t l)
{
    snprintf(o, l, "B=%d T=%d NH=%d hs=%d%s", s->B, s->T, s->NH, s->C / s->NH,
             s->alias ? " in-place" : "");
}

/* grouped-query attention: q and out [B,T,NH,hs], k and v [B,T,NKV,hs], hs = C/NH */
static size_t gqa_kv(const oc_shape *s) { return BT(s) * s->NKV * (s->C / s->NH); }
static int gqa_fwd_t(const oc_shape *s, oc_tensor *t)
{
    int k = 0;
    t[k++] = real_t("out", OC_OUT, BT(s) * s->C, 0, 0);
    t[k++] = real_t("att", OC_OUT, att_n(s), 0, 0);
    t[k++] = real_t("q", OC_IN, BT(s) * s->C, -1, 1);
    t[k++] = real_t("k", OC_IN, gqa_kv(s), -1, 1);
    t[k++] = real_t("v", OC_IN, gqa_kv(s), -1, 1);
    if (s->masked)
        t[k++] = (oc_tensor){"keymask", OC_IN, DT_I32, BT(s), OC_KEYMASK, 0, s->T};
    return k;
}
static double gqa_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->attention_gqa_forward(d, t[0], t[1], t[2], t[3], t[4], mask_view(s, t, 5), s->B,
                                  s->T, s->NH, s->NKV, s->C / s->NH, s->causal);
    return 0;
}
static int gqa_bwd_t(const oc_shape *s, oc_tensor *t)
{
    int k = 0;
    t[k++] = real_t("dq", OC_ACC, BT(s) * s->C, -1, 1);
    t[k++] = real_t("dk", OC_ACC, gqa_kv(s), -1, 1);
    t[k++] = real_t("dv", OC_ACC, gqa_kv(s), -1, 1);
    t[k++] = real_t("scratch", OC_SCRATCH, BT(s) * s->NH, 0, 0);
    t[k++] = real_t("dout", OC_IN, BT(s) * s->C, -1, 1);
    t[k++] = real_t("q", OC_IN, BT(s) * s->C, -1, 1);
    t[k++] = real_t("k", OC_IN, gqa_kv(s), -1, 1);
    t[k++] = real_t("v", OC_IN, gqa_kv(s), -1, 1);
    t[k++] = real_t("att", OC_IN, att_n(s), 0, 1);
    if (s->masked)
        t[k++] = (oc_tensor){"keymask", OC_IN, DT_I32, BT(s), OC_KEYMASK, 0, s->T};
    return k;
}
static double gqa_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->attention_gqa_backward(d, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8],
                                   mask_view(s, t, 9), s->B, s->T, s->NH, s->NKV, s->C / s->NH,
                                   s->causal);
    return 0;
}
static void desc_gqa(const oc_shape *s, char *o, size_t l)
{
    snprintf(o, l, "B=%d T=%d NH=%d NKV=%d hs=%d %s%s", s->B, s->T, s->NH, s->NKV, s->C / s->NH,
             s->causal ? "causal" : "full", s->masked ? " key-masked" : "");
}

/* expert gather: M picked rows of a table of R (.V) rows of C; ids drawn in [0, R), so with
 * M > R some repeat and the backward sums them */
static int gather_fwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("out", OC_OUT, (size_t)s->M * s->C, 0, 0);
    t[1] = real_t("inp", OC_IN, (size_t)s->V * s->C, -1, 1);
    t[2] = ids_t("idx", (size_t)s->M, s->V, OC_IDS);
    return 3;
}
static double gather_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->gather_rows_forward(d, t[0], t[1], t[2], s->M, s->V, s->C);
    return 0;
}
static int gather_bwd_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("dinp", OC_ACC, (size_t)s->V * s->C, -1, 1);
    t[1] = real_t("dout", OC_IN, (size_t)s->M * s->C, -1, 1);
    t[2] = ids_t("idx", (size_t)s->M, s->V, OC_IDS);
    return 3;
}
static double gather_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->gather_rows_backward(d, t[0], t[1], t[2], s->M, s->V, s->C);
    return 0;
}
static void desc_gather(const oc_shape *s, char *o, size_t l)
{
    snprintf(o, l, "M=%d R=%d C=%d", s->M, s->V, s->C);
}

/* top-k routing: N tokens, E (.V) experts, K (.K) per token, renormalized when .norm */
static int topk_fwd_t(const oc_shape *s, oc_tensor *t)
{
    size_t nk = (size_t)s->N * s->K, ne = (size_t)s->N * s->V;
    t[0] = real_t("weights", OC_OUT, nk, 0, 0);
    t[1] = (oc_tensor){"ids", OC_OUT, DT_I32, nk, OC_IDS, 0, s->V};
    t[2] = real_t("probs", OC_OUT, ne, 0, 0);
    t[3] = real_t("logits", OC_IN, ne, -4, 4);
    return 4;
}
static double topk_fwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->topk_router_forward(d, t[0], t[1], t[2], t[3], s->N, s->V, s->K, s->norm);
    return 0;
}
/* the backward's ids: K distinct experts per row are not what OC_IDS draws, so the test
 * mode's inputs may repeat an expert in a row; the op handles that (each slot adds) */
static int topk_bwd_t(const oc_shape *s, oc_tensor *t)
{
    size_t nk = (size_t)s->N * s->K, ne = (size_t)s->N * s->V;
    t[0] = real_t("dlogits", OC_ACC, ne, -1, 1);
    t[1] = real_t("dweights", OC_IN, nk, -1, 1);
    t[2] = real_t("weights", OC_IN, nk, 0, 1);
    t[3] = ids_t("ids", nk, s->V, OC_IDS);
    t[4] = real_t("probs", OC_IN, ne, 0, 1);
    return 5;
}
static double topk_bwd_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->topk_router_backward(d, t[0], t[1], t[2], t[3], t[4], s->N, s->V, s->K, s->norm);
    return 0;
}
static void desc_topk(const oc_shape *s, char *o, size_t l)
{
    snprintf(o, l, "N=%d E=%d K=%d%s", s->N, s->V, s->K, s->norm ? " renormalized" : "");
}

/* ---- optimizer and reductions ---- */

static int adamw_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("p", OC_ACC, (size_t)s->n, -1, 1);
    t[1] = real_t("g", OC_IN, (size_t)s->n, -1, 1);
    t[2] = real_t("m", OC_ACC, (size_t)s->n, -0.1, 0.1);
    t[3] = real_t("v", OC_ACC, (size_t)s->n, 0, 0.01);
    return 4;
}
static double adamw_run(device *d, const oc_shape *s, const dten *t)
{
    OPS(d)->adamw(d, t[0], t[1], t[2], t[3], s->n, 1e-2, 0.9, 0.999, 1e-8, s->beta, s->t);
    return 0;
}
static int reduce_t(const oc_shape *s, oc_tensor *t)
{
    t[0] = real_t("x", OC_IN, (size_t)s->n, -1, 1);
    return 1;
}
static double sumsq_run(device *d, const oc_shape *s, const dten *t)
{
    return OPS(d)->sumsq(d, t[0], s->n);
}
static double sum_run(device *d, const oc_shape *s, const dten *t)
{
    return OPS(d)->sum(d, t[0], s->n);
}

/* ---- the table ---- */

enum {
    O_EMB_F, O_EMB_B, O_LN_F, O_LN_B, O_GEMM, O_BIAS_ADD, O_BIAS_B, O_ATT_F, O_ATT_B, O_GELU_F,
    O_GELU_B, O_ADD, O_ACC, O_SCALE, O_XENT_F, O_XENT_B, O_ADAMW, O_SUMSQ, O_SUM, O_EMB_TT_F,
    O_EMB_TT_B, O_ATT_M_F, O_ATT_M_B, O_GELU_ERF_F, O_GELU_ERF_B, O_DROP_F, O_DROP_B, O_RMS_F, O_RMS_B, O_SILU_F, O_SILU_B, O_ROPE_F, O_ROPE_B, O_GQA_F, O_GQA_B, O_GATHER_F, O_GATHER_B, O_TOPK_F, O_TOPK_B, O_ZERO, O_COPY, O_ROUND, O_COUNT
};

static const oc_op OPS_TABLE[O_COUNT] = {
    [O_EMB_F] = {"embedding_forward", NMSE_EXACT, emb_fwd_t, emb_fwd_run, 0, desc_emb, NULL},
    [O_EMB_B] = {"embedding_backward", NMSE_EXACT, emb_bwd_t, emb_bwd_run, 0, desc_emb, NULL},
    [O_LN_F] = {"layernorm_forward", NMSE_REDUCTION, ln_fwd_t, ln_fwd_run, 0, desc_nc, ln_flops},
    [O_LN_B] = {"layernorm_backward", NMSE_REDUCTION, ln_bwd_t, ln_bwd_run, 0, desc_nc, ln_flops},
    [O_GEMM] = {"gemm", NMSE_CONTRACTION, gemm_t, gemm_run, 0, desc_gemm, gemm_flops},
    [O_BIAS_ADD] = {"bias_add", NMSE_EXACT, bias_add_t, bias_add_run, 0, desc_nc, NULL},
    [O_BIAS_B] = {"bias_backward", NMSE_REDUCTION, bias_bwd_t, bias_bwd_run, 0, desc_nc, NULL},
    [O_ATT_F] = {"attention_forward", NMSE_CONTRACTION, att_fwd_t, att_fwd_run, 0, desc_att,
                 att_fwd_flops},
    [O_ATT_B] = {"attention_backward", NMSE_CONTRACTION, att_bwd_t, att_bwd_run, 0, desc_att,
                 att_bwd_flops},
    [O_GELU_F] = {"gelu_forward", NMSE_ELEMENTWISE, gelu_fwd_t, gelu_fwd_run, 0, desc_n, NULL},
    [O_GELU_B] = {"gelu_backward", NMSE_ELEMENTWISE, gelu_bwd_t, gelu_bwd_run, 0, desc_n, NULL},
    [O_ADD] = {"add", NMSE_EXACT, add_t, add_run, 0, desc_n, NULL},
    [O_ACC] = {"accumulate", NMSE_EXACT, acc_t, acc_run, 0, desc_n, NULL},
    [O_SCALE] = {"scale", NMSE_EXACT, scale_t, scale_run, 0, desc_n, NULL},
    [O_ZERO] = {"zero", NMSE_EXACT, zero_t, zero_run, 0, desc_n, NULL},
    [O_COPY] = {"copy", NMSE_EXACT, copy_t, copy_run, 0, desc_n, NULL},
    [O_ROUND] = {"round_lowp", NMSE_EXACT, round_t, round_run, 0, desc_round, NULL},
    [O_XENT_F] = {"softmax_xent_forward", NMSE_REDUCTION, xent_fwd_t, xent_fwd_run, 0, desc_nv,
                  NULL},
    [O_XENT_B] = {"softmax_xent_backward", NMSE_ELEMENTWISE, xent_bwd_t, xent_bwd_run, 0, desc_nv,
                  NULL},
    [O_ADAMW] = {"adamw", NMSE_ELEMENTWISE, adamw_t, adamw_run, 0, desc_adamw, NULL},
    [O_SUMSQ] = {"sumsq", NMSE_REDUCTION, reduce_t, sumsq_run, 1, desc_n, NULL},
    [O_SUM] = {"sum", NMSE_REDUCTION, reduce_t, sum_run, 1, desc_n, NULL},
    [O_EMB_TT_F] = {"embedding_tt_forward", NMSE_EXACT, emb_tt_fwd_t, emb_tt_fwd_run, 0,
                    desc_emb_tt, NULL},
    [O_EMB_TT_B] = {"embedding_tt_backward", NMSE_EXACT, emb_tt_bwd_t, emb_tt_bwd_run, 0,
                    desc_emb_tt, NULL},
    [O_ATT_M_F] = {"attention_masked_forward", NMSE_CONTRACTION, att_masked_fwd_t,
                   att_masked_fwd_run, 0, desc_att_masked, att_fwd_flops},
    [O_ATT_M_B] = {"attention_masked_backward", NMSE_CONTRACTION, att_masked_bwd_t,
                   att_masked_bwd_run, 0, desc_att_masked, att_bwd_flops},
    [O_GELU_ERF_F] = {"gelu_erf_forward", NMSE_ELEMENTWISE, gelu_fwd_t, gelu_erf_fwd_run, 0,
                      desc_n, NULL},
    [O_GELU_ERF_B] = {"gelu_erf_backward", NMSE_ELEMENTWISE, gelu_bwd_t, gelu_erf_bwd_run, 0,
                      desc_n, NULL},
    /* the same Philox bits everywhere: the mask is exact, kept values one rounding each */
    [O_DROP_F] = {"dropout_forward", NMSE_EXACT, dropout_fwd_t, dropout_fwd_run, 0, desc_dropout,
                  NULL},
    [O_DROP_B] = {"dropout_backward", NMSE_EXACT, dropout_bwd_t, dropout_bwd_run, 0,
                  desc_dropout, NULL},
    [O_RMS_F] = {"rmsnorm_forward", NMSE_REDUCTION, rms_fwd_t, rms_fwd_run, 0, desc_nc,
                 rms_flops},
    [O_RMS_B] = {"rmsnorm_backward", NMSE_REDUCTION, rms_bwd_t, rms_bwd_run, 0, desc_nc,
                 rms_flops},
    [O_SILU_F] = {"silu_mul_forward", NMSE_ELEMENTWISE, silu_mul_fwd_t, silu_mul_fwd_run, 0,
                  desc_n, NULL},
    [O_SILU_B] = {"silu_mul_backward", NMSE_ELEMENTWISE, silu_mul_bwd_t, silu_mul_bwd_run, 0,
                  desc_n, NULL},
    /* two products and a sum per element: contraction (FMA) is the only difference */
    [O_ROPE_F] = {"rope_forward", NMSE_ELEMENTWISE, rope_fwd_t, rope_fwd_run, 0, desc_rope, NULL},
    [O_ROPE_B] = {"rope_backward", NMSE_ELEMENTWISE, rope_bwd_t, rope_bwd_run, 0, desc_rope,
                  NULL},
    [O_GQA_F] = {"attention_gqa_forward", NMSE_CONTRACTION, gqa_fwd_t, gqa_fwd_run, 0, desc_gqa,
                 att_fwd_flops},
    [O_GQA_B] = {"attention_gqa_backward", NMSE_CONTRACTION, gqa_bwd_t, gqa_bwd_run, 0, desc_gqa,
                 att_bwd_flops},
    [O_GATHER_F] = {"gather_rows_forward", NMSE_EXACT, gather_fwd_t, gather_fwd_run, 0,
                    desc_gather, NULL},
    [O_GATHER_B] = {"gather_rows_backward", NMSE_EXACT, gather_bwd_t, gather_bwd_run, 0,
                    desc_gather, NULL},
    [O_TOPK_F] = {"topk_router_forward", NMSE_REDUCTION, topk_fwd_t, topk_fwd_run, 0, desc_topk,
                  NULL},
    [O_TOPK_B] = {"topk_router_backward", NMSE_REDUCTION, topk_bwd_t, topk_bwd_run, 0,
                  desc_topk, NULL},
};

int oc_op_count(void) { return O_COUNT; }
const oc_op *oc_op_at(int i) { return i >= 0 && i < O_COUNT ? &OPS_TABLE[i] : NULL; }

const oc_op *oc_find(const char *name)
{
    for (int i = 0; i < O_COUNT; i++)
        if (strcmp(OPS_TABLE[i].name, name) == 0)
            return &OPS_TABLE[i];
    return NULL;
}

/* ---- shapes ---- */

#define OP(o) (&OPS_TABLE[o])
/* a dense row-major GEMM: lda/ldb/ldc are the stored widths, one matrix */
#define GEMM(m, n, k, a_t, b_t, al, be)                                                          \
    {.M = m, .N = n, .K = k, .ta = a_t, .tb = b_t, .lda = (a_t) ? (m) : (k) > 0 ? (k) : 1,      \
     .ldb = (b_t) ? ((k) > 0 ? (k) : 1) : (n), .ldc = n, .batch = 1, .alpha = al, .beta = be}

/* odd sizes (not multiples of a work-group: 7, 13, 5, 11, 300) and gpt2-tiny's (B=8 T=64 C=64
 * NH=4 V=256, so N = B*T = 512 rows) */
static const oc_case TEST_CASES[] = {
    {OP(O_EMB_F), {.B = 2, .T = 5, .C = 13, .V = 11}},
    {OP(O_EMB_F), {.B = 8, .T = 64, .C = 64, .V = 256}},
    {OP(O_EMB_B), {.B = 2, .T = 5, .C = 13, .V = 11}},
    {OP(O_EMB_B), {.B = 8, .T = 64, .C = 64, .V = 256}},
    {OP(O_LN_F), {.N = 7, .C = 13}},
    {OP(O_LN_F), {.N = 1, .C = 1}},
    {OP(O_LN_F), {.N = 3, .C = 300}},
    {OP(O_LN_F), {.N = 512, .C = 64}},
    {OP(O_LN_B), {.N = 7, .C = 13}},
    {OP(O_LN_B), {.N = 3, .C = 300}},
    {OP(O_LN_B), {.N = 200, .C = 3}},
    {OP(O_LN_B), {.N = 512, .C = 64}},
    {OP(O_GEMM), GEMM(7, 13, 5, 0, 0, 1, 0)},
    {OP(O_GEMM), GEMM(7, 13, 5, 1, 0, 1, 0)},
    {OP(O_GEMM), GEMM(7, 13, 5, 0, 1, 1, 0)},
    {OP(O_GEMM), GEMM(7, 13, 5, 1, 1, 0.5, 0.75)},
    {OP(O_GEMM), GEMM(7, 13, 0, 0, 0, 1, 0.5)},
    {OP(O_GEMM), GEMM(7, 13, 5, 0, 0, 0, 2)},
    /* padded leading dimensions and a strided batch of 3 */
    {OP(O_GEMM), {.M = 5, .N = 6, .K = 7, .ta = 0, .tb = 1, .lda = 9, .ldb = 8, .ldc = 11,
                  .sA = 50, .sB = 60, .sC = 70, .batch = 3, .alpha = 1.5, .beta = 1}},
    {OP(O_GEMM), GEMM(512, 192, 64, 0, 0, 1, 0)},
    {OP(O_GEMM), GEMM(512, 256, 64, 0, 1, 1, 0)},
    {OP(O_GEMM), GEMM(64, 192, 512, 1, 0, 1, 1)},
    {OP(O_BIAS_ADD), {.N = 7, .C = 13}},
    {OP(O_BIAS_ADD), {.N = 512, .C = 192}},
    {OP(O_BIAS_B), {.N = 7, .C = 13}},
    {OP(O_BIAS_B), {.N = 100, .C = 3}},
    {OP(O_BIAS_B), {.N = 512, .C = 192}},
    {OP(O_ATT_F), {.B = 1, .T = 5, .C = 12, .NH = 3, .causal = 1}},
    {OP(O_ATT_F), {.B = 2, .T = 7, .C = 8, .NH = 2, .causal = 0}},
    {OP(O_ATT_F), {.B = 8, .T = 64, .C = 64, .NH = 4, .causal = 1}},
    {OP(O_ATT_B), {.B = 1, .T = 5, .C = 12, .NH = 3, .causal = 1}},
    {OP(O_ATT_B), {.B = 2, .T = 7, .C = 8, .NH = 2, .causal = 0}},
    {OP(O_ATT_B), {.B = 8, .T = 64, .C = 64, .NH = 4, .causal = 1}},
    {OP(O_GELU_F), {.n = 91}},
    {OP(O_GELU_F), {.n = 131072}},
    {OP(O_GELU_B), {.n = 91}},
    {OP(O_GELU_B), {.n = 131072}},
    {OP(O_ADD), {.n = 91}},
    {OP(O_ADD), {.n = 32768}},
    {OP(O_ACC), {.n = 91}},
    {OP(O_ACC), {.n = 32768}},
    {OP(O_SCALE), {.n = 91, .scale = 0.3}},
    {OP(O_SCALE), {.n = 124672, .scale = 0.7}},
    {OP(O_ZERO), {.n = 91}},
    {OP(O_ZERO), {.n = 124672}},
    {OP(O_COPY), {.n = 91}},
    {OP(O_COPY), {.n = 124672}},
    {OP(O_ROUND), {.n = 91, .lowp = 1}},
    {OP(O_ROUND), {.n = 4099, .lowp = 1}},
    {OP(O_ROUND), {.n = 91, .lowp = 2}},
    {OP(O_ROUND), {.n = 4099, .lowp = 2}},
    {OP(O_XENT_F), {.N = 7, .V = 11}},
    {OP(O_XENT_F), {.N = 3, .V = 1000}},
    {OP(O_XENT_F), {.N = 7, .V = 11, .alias = 1}},
    {OP(O_XENT_F), {.N = 512, .V = 256}},
    {OP(O_XENT_B), {.N = 7, .V = 11, .scale = 0.2}},
    {OP(O_XENT_B), {.N = 512, .V = 256, .scale = 1.0 / 384}},
    {OP(O_ADAMW), {.n = 91, .t = 1, .beta = 0.1}},
    {OP(O_ADAMW), {.n = 124672, .t = 7, .beta = 0}},
    {OP(O_SUMSQ), {.n = 1}},
    {OP(O_SUMSQ), {.n = 91}},
    {OP(O_SUMSQ), {.n = 1000003}},
    {OP(O_SUM), {.n = 1}},
    {OP(O_SUM), {.n = 512}},
    {OP(O_SUM), {.n = 1000003}},
    /* encoder ops: bert-tiny's shapes (B=8 T=64 C=64 NH=4, 2 token types) and odd ones */
    {OP(O_EMB_TT_F), {.B = 2, .T = 5, .C = 13, .V = 11, .NTT = 3}},
    {OP(O_EMB_TT_F), {.B = 8, .T = 64, .C = 64, .V = 256, .NTT = 2}},
    {OP(O_EMB_TT_B), {.B = 2, .T = 5, .C = 13, .V = 11, .NTT = 3}},
    {OP(O_EMB_TT_B), {.B = 8, .T = 64, .C = 64, .V = 256, .NTT = 2}},
    {OP(O_ATT_M_F), {.B = 3, .T = 7, .C = 8, .NH = 2, .causal = 0, .masked = 1}},
    {OP(O_ATT_M_F), {.B = 3, .T = 5, .C = 12, .NH = 3, .causal = 1, .masked = 1}},
    {OP(O_ATT_M_F), {.B = 2, .T = 7, .C = 8, .NH = 2, .causal = 0, .masked = 0}},
    {OP(O_ATT_M_F), {.B = 8, .T = 64, .C = 64, .NH = 4, .causal = 0, .masked = 1}},
    {OP(O_ATT_M_F), {.B = 3, .T = 7, .C = 8, .NH = 2, .masked = 1, .p = 0.1, .step = 5, .layer = 1}},
    {OP(O_ATT_M_F), {.B = 3, .T = 5, .C = 12, .NH = 3, .causal = 1, .masked = 1, .p = 0.5,
                     .step = 2, .layer = 3}},
    {OP(O_ATT_M_F), {.B = 8, .T = 64, .C = 64, .NH = 4, .masked = 1, .p = 0.1, .step = 9}},
    {OP(O_ATT_M_B), {.B = 3, .T = 7, .C = 8, .NH = 2, .causal = 0, .masked = 1}},
    {OP(O_ATT_M_B), {.B = 3, .T = 5, .C = 12, .NH = 3, .causal = 1, .masked = 1}},
    {OP(O_ATT_M_B), {.B = 2, .T = 7, .C = 8, .NH = 2, .causal = 0, .masked = 0}},
    {OP(O_ATT_M_B), {.B = 8, .T = 64, .C = 64, .NH = 4, .causal = 0, .masked = 1}},
    {OP(O_ATT_M_B), {.B = 3, .T = 7, .C = 8, .NH = 2, .masked = 1, .p = 0.1, .step = 5, .layer = 1}},
    {OP(O_ATT_M_B), {.B = 3, .T = 5, .C = 12, .NH = 3, .causal = 1, .masked = 1, .p = 0.5,
                     .step = 2, .layer = 3}},
    {OP(O_ATT_M_B), {.B = 8, .T = 64, .C = 64, .NH = 4, .masked = 1, .p = 0.1, .step = 9}},
    {OP(O_GELU_ERF_F), {.n = 91}},
    {OP(O_GELU_ERF_F), {.n = 131072}},
    {OP(O_GELU_ERF_B), {.n = 91}},
    {OP(O_GELU_ERF_B), {.n = 131072}},
    {OP(O_DROP_F), {.n = 91, .p = 0.1, .step = 3, .layer = 1, .site = 2}},
    {OP(O_DROP_F), {.n = 131072, .p = 0.1, .step = 7, .layer = 0, .site = 0}},
    {OP(O_DROP_F), {.n = 1001, .p = 0, .step = 1, .layer = 2, .site = 1}},
    {OP(O_DROP_F), {.n = 37, .p = 1, .step = 1, .layer = 2, .site = 1}},
    {OP(O_DROP_F), {.n = 4099, .p = 0.1, .step = 4, .layer = 1, .site = 2, .alias = 1}},
    {OP(O_DROP_B), {.n = 91, .p = 0.1, .step = 3, .layer = 1, .site = 2}},
    {OP(O_DROP_B), {.n = 131072, .p = 0.5, .step = 7, .layer = 3, .site = 4}},
    /* decoder ops: odd sizes and a Llama-tiny-like row count and width */
    {OP(O_RMS_F), {.N = 7, .C = 13}},
    {OP(O_RMS_F), {.N = 1, .C = 1}},
    {OP(O_RMS_F), {.N = 3, .C = 300}},
    {OP(O_RMS_F), {.N = 512, .C = 64}},
    {OP(O_RMS_B), {.N = 7, .C = 13}},
    {OP(O_RMS_B), {.N = 3, .C = 300}},
    {OP(O_RMS_B), {.N = 200, .C = 3}},
    {OP(O_RMS_B), {.N = 512, .C = 64}},
    {OP(O_SILU_F), {.n = 91}},
    {OP(O_SILU_F), {.n = 131072}},
    {OP(O_SILU_B), {.n = 91}},
    {OP(O_SILU_B), {.n = 131072}},
    {OP(O_ROPE_F), {.B = 2, .T = 5, .C = 18, .NH = 3}},
    {OP(O_ROPE_F), {.B = 1, .T = 7, .C = 2, .NH = 1}},
    {OP(O_ROPE_F), {.B = 8, .T = 64, .C = 64, .NH = 4}},
    {OP(O_ROPE_F), {.B = 2, .T = 5, .C = 18, .NH = 3, .alias = 1}},
    {OP(O_ROPE_F), {.B = 8, .T = 64, .C = 64, .NH = 4, .alias = 1}},
    {OP(O_ROPE_B), {.B = 2, .T = 5, .C = 18, .NH = 3}},
    {OP(O_ROPE_B), {.B = 1, .T = 7, .C = 2, .NH = 1}},
    {OP(O_ROPE_B), {.B = 8, .T = 64, .C = 64, .NH = 4}},
    {OP(O_GQA_F), {.B = 2, .T = 5, .C = 12, .NH = 4, .NKV = 2, .causal = 1}},
    {OP(O_GQA_F), {.B = 3, .T = 7, .C = 8, .NH = 2, .NKV = 1, .causal = 0, .masked = 1}},
    {OP(O_GQA_F), {.B = 3, .T = 5, .C = 18, .NH = 3, .NKV = 3, .causal = 1, .masked = 1}},
    {OP(O_GQA_F), {.B = 8, .T = 64, .C = 64, .NH = 4, .NKV = 2, .causal = 1}},
    {OP(O_GQA_B), {.B = 2, .T = 5, .C = 12, .NH = 4, .NKV = 2, .causal = 1}},
    {OP(O_GQA_B), {.B = 3, .T = 7, .C = 8, .NH = 2, .NKV = 1, .causal = 0, .masked = 1}},
    {OP(O_GQA_B), {.B = 3, .T = 5, .C = 18, .NH = 3, .NKV = 3, .causal = 1, .masked = 1}},
    {OP(O_GQA_B), {.B = 8, .T = 64, .C = 64, .NH = 4, .NKV = 2, .causal = 1}},
    {OP(O_GATHER_F), {.M = 13, .V = 5, .C = 7}},
    {OP(O_GATHER_F), {.M = 1024, .V = 512, .C = 64}},
    {OP(O_GATHER_B), {.M = 13, .V = 5, .C = 7}},
    {OP(O_GATHER_B), {.M = 1024, .V = 512, .C = 64}},
    {OP(O_TOPK_F), {.N = 7, .V = 8, .K = 2, .norm = 1}},
    {OP(O_TOPK_F), {.N = 13, .V = 5, .K = 5, .norm = 0}},
    {OP(O_TOPK_F), {.N = 512, .V = 64, .K = 8, .norm = 1}},
    {OP(O_TOPK_F), {.N = 512, .V = 8, .K = 1, .norm = 0}},
    {OP(O_TOPK_B), {.N = 7, .V = 8, .K = 2, .norm = 1}},
    {OP(O_TOPK_B), {.N = 13, .V = 5, .K = 5, .norm = 0}},
    {OP(O_TOPK_B), {.N = 512, .V = 64, .K = 8, .norm = 1}},
};

/* gpt2-tiny's shapes (one training step calls each of these), and a GPT-2-small-sized GEMM */
static const oc_case PERF_CASES[] = {
    {OP(O_EMB_F), {.B = 8, .T = 64, .C = 64, .V = 256}},
    {OP(O_EMB_B), {.B = 8, .T = 64, .C = 64, .V = 256}},
    {OP(O_LN_F), {.N = 512, .C = 64}},
    {OP(O_LN_B), {.N = 512, .C = 64}},
    {OP(O_GEMM), GEMM(512, 192, 64, 0, 0, 1, 0)},
    {OP(O_GEMM), GEMM(512, 256, 64, 0, 0, 1, 0)},
    {OP(O_GEMM), GEMM(512, 64, 256, 0, 0, 1, 0)},
    {OP(O_GEMM), GEMM(512, 256, 64, 0, 1, 1, 0)},
    {OP(O_GEMM), GEMM(64, 192, 512, 1, 0, 1, 1)},
    {OP(O_GEMM), GEMM(512, 768, 768, 0, 0, 1, 0)},
    {OP(O_BIAS_ADD), {.N = 512, .C = 192}},
    {OP(O_BIAS_B), {.N = 512, .C = 192}},
    {OP(O_ATT_F), {.B = 8, .T = 64, .C = 64, .NH = 4, .causal = 1}},
    {OP(O_ATT_B), {.B = 8, .T = 64, .C = 64, .NH = 4, .causal = 1}},
    {OP(O_GELU_F), {.n = 131072}},
    {OP(O_GELU_B), {.n = 131072}},
    {OP(O_ADD), {.n = 32768}},
    {OP(O_ACC), {.n = 32768}},
    {OP(O_SCALE), {.n = 124672, .scale = 0.7}},
    {OP(O_ZERO), {.n = 124672}},
    {OP(O_COPY), {.n = 124672}},
    {OP(O_ROUND), {.n = 124672, .lowp = 1}},
    {OP(O_XENT_F), {.N = 512, .V = 256}},
    {OP(O_XENT_B), {.N = 512, .V = 256, .scale = 1.0 / 512}},
    {OP(O_ADAMW), {.n = 124672, .t = 7, .beta = 0.1}},
    {OP(O_SUMSQ), {.n = 124672}},
    {OP(O_SUM), {.n = 512}},
    {OP(O_EMB_TT_F), {.B = 8, .T = 64, .C = 64, .V = 256, .NTT = 2}},
    {OP(O_EMB_TT_B), {.B = 8, .T = 64, .C = 64, .V = 256, .NTT = 2}},
    {OP(O_ATT_M_F), {.B = 8, .T = 64, .C = 64, .NH = 4, .causal = 0, .masked = 1}},
    {OP(O_ATT_M_B), {.B = 8, .T = 64, .C = 64, .NH = 4, .causal = 0, .masked = 1}},
    {OP(O_GELU_ERF_F), {.n = 131072}},
    {OP(O_GELU_ERF_B), {.n = 131072}},
    {OP(O_DROP_F), {.n = 131072, .p = 0.1, .step = 7}},
    {OP(O_DROP_B), {.n = 131072, .p = 0.1, .step = 7}},
    {OP(O_RMS_F), {.N = 512, .C = 64}},
    {OP(O_RMS_B), {.N = 512, .C = 64}},
    {OP(O_SILU_F), {.n = 131072}},
    {OP(O_SILU_B), {.n = 131072}},
    {OP(O_ROPE_F), {.B = 8, .T = 64, .C = 64, .NH = 4}},
    {OP(O_ROPE_B), {.B = 8, .T = 64, .C = 64, .NH = 4}},
    {OP(O_GQA_F), {.B = 8, .T = 64, .C = 64, .NH = 4, .NKV = 2, .causal = 1}},
    {OP(O_GQA_B), {.B = 8, .T = 64, .C = 64, .NH = 4, .NKV = 2, .causal = 1}},
    {OP(O_GATHER_F), {.M = 1024, .V = 512, .C = 64}},
    {OP(O_GATHER_B), {.M = 1024, .V = 512, .C = 64}},
    {OP(O_TOPK_F), {.N = 512, .V = 64, .K = 8, .norm = 1}},
    {OP(O_TOPK_B), {.N = 512, .V = 64, .K = 8, .norm = 1}},
};

int oc_test_cases(const oc_case **out)
{
    *out = TEST_CASES;
    return (int)(sizeof TEST_CASES / sizeof TEST_CASES[0]);
}

int oc_perf_cases(const oc_case **out)
{
    *out = PERF_CASES;
    return (int)(sizeof PERF_CASES / sizeof PERF_CASES[0]);
}

/* ---- gradient cases: small shapes, every input element within reach of the check ---- */

#define FWD(i) {SRC_FWD, i}
#define DOUT(i) {SRC_DOUT, i}
#define ZERO {SRC_ZERO, 0}
#define SCRATCH {SRC_SCRATCH, 0}

static const oc_grad_case GRAD_CASES[] = {
    {"embedding_forward", "embedding_backward", {.B = 2, .T = 3, .C = 4, .V = 5},
     {W_RANDOM}, {ZERO, ZERO, DOUT(0), FWD(1)}, {{0, 2}, {1, 3}}, 2},
    {"layernorm_forward", "layernorm_backward", {.N = 3, .C = 7},
     {W_RANDOM}, {ZERO, ZERO, ZERO, DOUT(0), FWD(3), FWD(4), FWD(1), FWD(2)},
     {{0, 3}, {1, 4}, {2, 5}}, 3},
    {"bias_add", "bias_backward", {.N = 5, .C = 7}, {W_RANDOM}, {ZERO, DOUT(0)}, {{0, 1}}, 1},
    {"attention_forward", "attention_backward", {.B = 1, .T = 4, .C = 8, .NH = 2, .causal = 1},
     {W_RANDOM}, {ZERO, SCRATCH, DOUT(0), FWD(2), FWD(1)}, {{0, 2}}, 1},
    {"attention_forward", "attention_backward", {.B = 2, .T = 3, .C = 6, .NH = 3, .causal = 0},
     {W_RANDOM}, {ZERO, SCRATCH, DOUT(0), FWD(2), FWD(1)}, {{0, 2}}, 1},
    {"gelu_forward", "gelu_backward", {.n = 37}, {W_RANDOM}, {ZERO, FWD(1), DOUT(0)}, {{0, 1}}, 1},
    {"softmax_xent_forward", "softmax_xent_backward", {.N = 5, .V = 7, .scale = 0.25},
     {W_SCALE}, {ZERO, FWD(1), FWD(3)}, {{0, 2}}, 1},
    {"embedding_tt_forward", "embedding_tt_backward", {.B = 2, .T = 3, .C = 4, .V = 5, .NTT = 2},
     {W_RANDOM}, {ZERO, ZERO, ZERO, DOUT(0), FWD(1), FWD(2)}, {{0, 3}, {1, 4}, {2, 5}}, 3},
    {"attention_masked_forward", "attention_masked_backward",
     {.B = 3, .T = 4, .C = 8, .NH = 2, .causal = 0, .masked = 1},
     {W_RANDOM}, {ZERO, SCRATCH, DOUT(0), FWD(2), FWD(1), FWD(3)}, {{0, 2}}, 1},
    {"attention_masked_forward", "attention_masked_backward",
     {.B = 2, .T = 5, .C = 6, .NH = 3, .causal = 1, .masked = 1},
     {W_RANDOM}, {ZERO, SCRATCH, DOUT(0), FWD(2), FWD(1), FWD(3)}, {{0, 2}}, 1},
    {"attention_masked_forward", "attention_masked_backward",
     {.B = 3, .T = 5, .C = 8, .NH = 2, .causal = 0, .masked = 1, .p = 0.25, .step = 4, .layer = 2},
     {W_RANDOM}, {ZERO, SCRATCH, DOUT(0), FWD(2), FWD(1), FWD(3)}, {{0, 2}}, 1},
    {"attention_masked_forward", "attention_masked_backward",
     {.B = 2, .T = 5, .C = 6, .NH = 3, .causal = 1, .masked = 0, .p = 0.25, .step = 1, .layer = 0},
     {W_RANDOM}, {ZERO, SCRATCH, DOUT(0), FWD(2), FWD(1)}, {{0, 2}}, 1},
    {"gelu_erf_forward", "gelu_erf_backward", {.n = 37}, {W_RANDOM}, {ZERO, FWD(1), DOUT(0)},
     {{0, 1}}, 1},
    {"dropout_forward", "dropout_backward", {.n = 37, .p = 0.25, .step = 2, .layer = 1},
     {W_RANDOM, W_NONE}, {ZERO, DOUT(0)}, {{0, 2}}, 1},
    {"rmsnorm_forward", "rmsnorm_backward", {.N = 3, .C = 7},
     {W_RANDOM}, {ZERO, ZERO, DOUT(0), FWD(2), FWD(3), FWD(1)}, {{0, 2}, {1, 3}}, 2},
    {"silu_mul_forward", "silu_mul_backward", {.n = 37},
     {W_RANDOM}, {ZERO, ZERO, DOUT(0), FWD(1), FWD(2)}, {{0, 1}, {1, 2}}, 2},
    {"rope_forward", "rope_backward", {.B = 2, .T = 3, .C = 8, .NH = 2},
     {W_RANDOM}, {ZERO, DOUT(0), FWD(2), FWD(3)}, {{0, 1}}, 1},
    {"attention_gqa_forward", "attention_gqa_backward",
     {.B = 1, .T = 4, .C = 8, .NH = 4, .NKV = 2, .causal = 1},
     {W_RANDOM}, {ZERO, ZERO, ZERO, SCRATCH, DOUT(0), FWD(2), FWD(3), FWD(4), FWD(1)},
     {{0, 2}, {1, 3}, {2, 4}}, 3},
    {"attention_gqa_forward", "attention_gqa_backward",
     {.B = 3, .T = 4, .C = 6, .NH = 2, .NKV = 1, .causal = 0, .masked = 1},
     {W_RANDOM}, {ZERO, ZERO, ZERO, SCRATCH, DOUT(0), FWD(2), FWD(3), FWD(4), FWD(1), FWD(5)},
     {{0, 2}, {1, 3}, {2, 4}}, 3},
    {"gather_rows_forward", "gather_rows_backward", {.M = 9, .V = 4, .C = 3},
     {W_RANDOM}, {ZERO, DOUT(0), FWD(2)}, {{0, 1}}, 1},
    {"topk_router_forward", "topk_router_backward", {.N = 5, .V = 6, .K = 2, .norm = 1},
     {W_RANDOM, W_NONE, W_NONE}, {ZERO, DOUT(0), FWD(0), FWD(1), FWD(2)}, {{0, 3}}, 1},
    {"topk_router_forward", "topk_router_backward", {.N = 5, .V = 6, .K = 3, .norm = 0},
     {W_RANDOM, W_NONE, W_NONE}, {ZERO, DOUT(0), FWD(0), FWD(1), FWD(2)}, {{0, 3}}, 1},
};

int oc_grad_cases(const oc_grad_case **out)
{
    *out = GRAD_CASES;
    return (int)(sizeof GRAD_CASES / sizeof GRAD_CASES[0]);
}
