/* devices/op_checks.c: the argument checks of each op, shared by the backends; built on
 * device_view_ok and device_dims_ok, so messages name the backend as d->backend. */
#include "op_checks.h"
#include "lowp.h"
#include "topk_select.h"

int op_elementwise_ok(device *d, const char *op, int n, dten a, dten b, dten c)
{
    return !d->failed && device_dims_ok(d, op, &n, 1, 0) &&
           device_view_ok(d, op, "first tensor", a, (size_t)n, DT_REAL) &&
           device_view_ok(d, op, "second tensor", b, (size_t)n, DT_REAL) &&
           (!c.buf || device_view_ok(d, op, "third tensor", c, (size_t)n, DT_REAL));
}

int op_embedding_ok(device *d, const char *op, dten wte, dten wpe, dten act, dten tokens, int B,
                    int T, int C)
{
    size_t bt = (size_t)B * (size_t)T;
    return !d->failed && device_dims_ok(d, op, (int[]){B, T, C}, 3, 1) &&
           device_view_ok(d, op, "tokens", tokens, bt, DT_I32) &&
           device_view_ok(d, op, "wte", wte, (size_t)C, DT_REAL) &&
           device_view_ok(d, op, "wpe", wpe, (size_t)T * (size_t)C, DT_REAL) &&
           device_view_ok(d, op, "activations", act, bt * (size_t)C, DT_REAL);
}

int op_layernorm_ok(device *d, const char *op, dten x, dten y, dten w, dten b, dten mean,
                    dten rstd, int N, int C)
{
    size_t nc = (size_t)N * (size_t)C;
    return !d->failed && device_dims_ok(d, op, &N, 1, 0) && device_dims_ok(d, op, &C, 1, 1) &&
           device_view_ok(d, op, "inp", x, nc, DT_REAL) &&
           device_view_ok(d, op, "out/dout", y, nc, DT_REAL) &&
           device_view_ok(d, op, "w/dw", w, (size_t)C, DT_REAL) &&
           device_view_ok(d, op, "b/db", b, (size_t)C, DT_REAL) &&
           device_view_ok(d, op, "mean", mean, (size_t)N, DT_REAL) &&
           device_view_ok(d, op, "rstd", rstd, (size_t)N, DT_REAL);
}

int op_layernorm_backward_ok(device *d, dten dinp, dten dw, dten db, dten dout, dten inp, dten w,
                             dten mean, dten rstd, int N, int C)
{
    const char *op = "layernorm_backward";
    return op_layernorm_ok(d, op, inp, dout, dw, db, mean, rstd, N, C) &&
           device_view_ok(d, op, "dinp", dinp, (size_t)N * (size_t)C, DT_REAL) &&
           device_view_ok(d, op, "w", w, (size_t)C, DT_REAL);
}

int op_round_lowp_ok(device *d, dten x, int n, int mode)
{
    if (!device_view_ok(d, "round_lowp", "x", x, n > 0 ? (size_t)n : 0, DT_REAL))
        return 0;
    if (mode != LOWP_BF16 && mode != LOWP_FP16) {
        device_fail(d, "%s: round_lowp: mode %d is neither bf16 (1) nor fp16 (2)", d->backend,
                    mode);
        return 0;
    }
    return 1;
}

int op_bias_ok(device *d, const char *op, dten mat, dten bias, int N, int C)
{
    return !d->failed && device_dims_ok(d, op, (int[]){N, C}, 2, 0) &&
           device_view_ok(d, op, "matrix", mat, (size_t)N * (size_t)C, DT_REAL) &&
           device_view_ok(d, op, "bias", bias, (size_t)C, DT_REAL);
}

/* a gemm operand op(X), rows x cols: X stored row-major as rows x cols, or cols x rows when
 * trans, with leading dimension ld, batch of them stride apart */
static int gemm_operand_ok(device *d, const char *name, dten t, int trans, int rows, int cols,
                           int ld, long stride, int batch)
{
    int sr = trans ? cols : rows, sc = trans ? rows : cols;
    if (ld < (sc > 1 ? sc : 1) || stride < 0) {
        device_fail(d, "%s: gemm: %s: leading dimension %d (needs >= %d) or stride %ld (needs "
                    ">= 0) is invalid", d->backend, name, ld, sc > 1 ? sc : 1, stride);
        return 0;
    }
    size_t need = 0;
    if (sr > 0 && sc > 0 && batch > 0)
        need = (size_t)(batch - 1) * (size_t)stride + (size_t)(sr - 1) * (size_t)ld + (size_t)sc;
    return device_view_ok(d, "gemm", name, t, need, DT_REAL);
}

int op_gemm_ok(device *d, int transA, int transB, int M, int N, int K, dten A, int lda,
              long strideA, dten Bm, int ldb, long strideB, dten Cm, int ldc, long strideC,
              int batch)
{
    return !d->failed && device_dims_ok(d, "gemm", (int[]){M, N, K, batch}, 4, 0) &&
           gemm_operand_ok(d, "A", A, transA, M, K, lda, strideA, batch) &&
           gemm_operand_ok(d, "B", Bm, transB, K, N, ldb, strideB, batch) &&
           gemm_operand_ok(d, "C", Cm, 0, M, N, ldc, strideC, batch);
}

int op_attention_ok(device *d, const char *op, dten qkv, dten att, dten out, int B, int T, int C,
                    int NH)
{
    if (d->failed || !device_dims_ok(d, op, (int[]){B, T, C, NH}, 4, 1))
        return 0;
    if (C % NH != 0) {
        device_fail(d, "%s: %s: C=%d is not a multiple of NH=%d", d->backend, op, C, NH);
        return 0;
    }
    size_t btc = (size_t)B * (size_t)T * (size_t)C;
    return device_view_ok(d, op, "qkv", qkv, 3 * btc, DT_REAL) &&
           device_view_ok(d, op, "att", att, (size_t)B * NH * (size_t)T * T, DT_REAL) &&
           device_view_ok(d, op, "out/dout", out, btc, DT_REAL);
}

int op_attention_backward_ok(device *d, const char *op, dten dqkv, dten scratch, dten dout,
                             dten qkv, dten att, int B, int T, int C, int NH)
{
    return op_attention_ok(d, op, qkv, att, dout, B, T, C, NH) &&
           device_view_ok(d, op, "dqkv", dqkv, 3 * (size_t)B * T * C, DT_REAL) &&
           device_view_ok(d, op, "scratch", scratch, (size_t)B * NH * (size_t)T * T, DT_REAL);
}

int op_attn_dropout_ok(device *d, const char *op, const attn_dropout *drop, int B, int T, int NH)
{
    if (d->failed)
        return 0;
    if (!drop)
        return 1;
    if (!(drop->p >= 0 && drop->p <= 1)) {
        device_fail(d, "%s: %s: attention dropout probability %g is outside [0, 1]", d->backend,
                    op, drop->p);
        return 0;
    }
    uint64_t n = (uint64_t)B * (uint64_t)NH * (uint64_t)T * (uint64_t)T;
    if (n > (UINT64_C(1) << 34)) {
        device_fail(d, "%s: %s: attention dropout over %llu probabilities: the Philox block "
                    "counter reaches 2^34 elements at most", d->backend, op,
                    (unsigned long long)n);
        return 0;
    }
    return 1;
}

int op_xent_ok(device *d, const char *op, dten probs, dten targets, int N, int V)
{
    return !d->failed && device_dims_ok(d, op, &N, 1, 0) && device_dims_ok(d, op, &V, 1, 1) &&
           device_view_ok(d, op, "probs", probs, (size_t)N * (size_t)V, DT_REAL) &&
           device_view_ok(d, op, "targets", targets, (size_t)N, DT_I32);
}

int op_embedding_tt_ok(device *d, const char *op, dten wte, dten wpe, dten wtt, dten act,
                       dten tokens, dten types, int B, int T, int C)
{
    return op_embedding_ok(d, op, wte, wpe, act, tokens, B, T, C) &&
           device_view_ok(d, op, "types", types, (size_t)B * (size_t)T, DT_I32) &&
           device_view_ok(d, op, "wtt", wtt, (size_t)C, DT_REAL);
}

int op_keymask_ok(device *d, const char *op, dten keymask, int B, int T)
{
    return !d->failed &&
           (!keymask.buf || device_view_ok(d, op, "keymask", keymask, (size_t)B * (size_t)T,
                                           DT_I32));
}

int op_dropout_ok(device *d, const char *op, int n, double p, dten x, dten y, dten mask)
{
    if (d->failed)
        return 0;
    if (!(p >= 0 && p <= 1)) {
        device_fail(d, "%s: %s: drop probability %g is outside [0, 1]", d->backend, op, p);
        return 0;
    }
    return op_elementwise_ok(d, op, n, x, y, (dten){0}) &&
           (!mask.buf || device_view_ok(d, op, "mask", mask, (size_t)n, DT_I32));
}

int op_rmsnorm_ok(device *d, const char *op, dten x, dten y, dten w, dten rstd, int N, int C)
{
    size_t nc = (size_t)N * (size_t)C;
    return !d->failed && device_dims_ok(d, op, &N, 1, 0) && device_dims_ok(d, op, &C, 1, 1) &&
           device_view_ok(d, op, "inp", x, nc, DT_REAL) &&
           device_view_ok(d, op, "out/dout", y, nc, DT_REAL) &&
           device_view_ok(d, op, "w/dw", w, (size_t)C, DT_REAL) &&
           device_view_ok(d, op, "rstd", rstd, (size_t)N, DT_REAL);
}

int op_rope_ok(device *d, const char *op, dten x, dten y, dten cos_t, dten sin_t, int B, int T,
               int NH, int hs)
{
    if (d->failed || !device_dims_ok(d, op, (int[]){B, T, NH, hs}, 4, 1))
        return 0;
    if (hs % 2 != 0) {
        device_fail(d, "%s: %s: head size hs=%d is odd (rotate_half needs two halves)",
                    d->backend, op, hs);
        return 0;
    }
    size_t n = (size_t)B * (size_t)T * (size_t)NH * (size_t)hs, nt = (size_t)T * (size_t)(hs / 2);
    return device_view_ok(d, op, "inp/dinp", x, n, DT_REAL) &&
           device_view_ok(d, op, "out/dout", y, n, DT_REAL) &&
           device_view_ok(d, op, "cos", cos_t, nt, DT_REAL) &&
           device_view_ok(d, op, "sin", sin_t, nt, DT_REAL);
}

int op_gqa_ok(device *d, const char *op, dten q, dten k, dten v, dten out, dten att,
              dten keymask, int B, int T, int NH, int NKV, int hs)
{
    if (d->failed || !device_dims_ok(d, op, (int[]){B, T, NH, NKV, hs}, 5, 1))
        return 0;
    if (NH % NKV != 0) {
        device_fail(d, "%s: %s: NH=%d query heads is not a multiple of NKV=%d key/value heads",
                    d->backend, op, NH, NKV);
        return 0;
    }
    size_t bt = (size_t)B * (size_t)T;
    return device_view_ok(d, op, "q/dq", q, bt * NH * (size_t)hs, DT_REAL) &&
           device_view_ok(d, op, "k/dk", k, bt * NKV * (size_t)hs, DT_REAL) &&
           device_view_ok(d, op, "v/dv", v, bt * NKV * (size_t)hs, DT_REAL) &&
           device_view_ok(d, op, "out/dout", out, bt * NH * (size_t)hs, DT_REAL) &&
           device_view_ok(d, op, "att", att, bt * NH * (size_t)T, DT_REAL) &&
           op_keymask_ok(d, op, keymask, B, T);
}

int op_gather_rows_ok(device *d, const char *op, dten rows, dten picked, dten idx, int M, int R,
                      int C)
{
    return !d->failed && device_dims_ok(d, op, &M, 1, 0) &&
           device_dims_ok(d, op, (int[]){R, C}, 2, 1) &&
           device_view_ok(d, op, "inp/dinp", rows, (size_t)R * (size_t)C, DT_REAL) &&
           device_view_ok(d, op, "out/dout", picked, (size_t)M * (size_t)C, DT_REAL) &&
           device_view_ok(d, op, "idx", idx, (size_t)M, DT_I32);
}

int op_topk_ok(device *d, const char *op, dten weights, dten ids, dten probs, dten logits, int N,
               int E, int K)
{
    if (d->failed || !device_dims_ok(d, op, &N, 1, 0) ||
        !device_dims_ok(d, op, (int[]){E, K}, 2, 1))
        return 0;
    if (K > E) {
        device_fail(d, "%s: %s: K=%d experts per token is more than the E=%d experts",
                    d->backend, op, K, E);
        return 0;
    }
    if (E > TOPK_MAX_EXPERTS) {
        device_fail(d, "%s: %s: E=%d experts is more than the %d a row may hold",
                    d->backend, op, E, TOPK_MAX_EXPERTS);
        return 0;
    }
    size_t nk = (size_t)N * (size_t)K, ne = (size_t)N * (size_t)E;
    return device_view_ok(d, op, "weights/dweights", weights, nk, DT_REAL) &&
           device_view_ok(d, op, "ids", ids, nk, DT_I32) &&
           device_view_ok(d, op, "probs", probs, ne, DT_REAL) &&
           device_view_ok(d, op, "logits/dlogits", logits, ne, DT_REAL);
}

int op_attention_masked_ok(device *d, const char *op, dten qkv, dten att, dten out, dten keymask,
                           const attn_dropout *drop, int B, int T, int C, int NH)
{
    return op_attention_ok(d, op, qkv, att, out, B, T, C, NH) &&
           op_keymask_ok(d, op, keymask, B, T) && op_attn_dropout_ok(d, op, drop, B, T, NH);
}

int op_attention_masked_backward_ok(device *d, const char *op, dten dqkv, dten scratch,
                                    dten dout, dten qkv, dten att, dten keymask,
                                    const attn_dropout *drop, int B, int T, int C, int NH)
{
    return op_attention_backward_ok(d, op, dqkv, scratch, dout, qkv, att, B, T, C, NH) &&
           op_keymask_ok(d, op, keymask, B, T) && op_attn_dropout_ok(d, op, drop, B, T, NH);
}
