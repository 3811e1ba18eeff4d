/* devices/lowp.c: a device's bf16/fp16 mode, for every backend with a round_lowp op: a GEMM that
 * rounds its inputs and its product (autocast's matmul rule) and the loss-scaled loss gradient. */
#include "lowp.h"

#include "op_checks.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

lowp_mode lowp_mode_of(const char *dtype)
{
    if (dtype && strcmp(dtype, "bf16") == 0)
        return LOWP_BF16;
    if (dtype && strcmp(dtype, "fp16") == 0)
        return LOWP_FP16;
    return LOWP_NONE;
}

const char *lowp_mode_name(lowp_mode mode)
{
    return mode == LOWP_BF16 ? "bf16" : mode == LOWP_FP16 ? "fp16" : "none";
}

/* elements a strided batch of a rows x cols row-major matrix (leading dimension ld) spans */
static size_t batch_span(int rows, int cols, int ld, long stride, int batch)
{
    if (rows == 0 || cols == 0 || batch == 0)
        return 0;
    size_t one = (size_t)(rows - 1) * (size_t)ld + (size_t)cols;
    return (size_t)(batch - 1) * (size_t)(stride > 0 ? stride : 0) + one;
}

/* the len elements of t's buffer from t.off + at, or .buf NULL after a device error when they
 * run past the buffer (the operand `what` of the gemm) */
static dten buffer_span(device *d, const char *what, dten t, size_t at, size_t len)
{
    size_t have = ((const dbuf_head *)t.buf)->n;
    if (t.off > have || at > have - t.off || len > have - t.off - at) {
        device_fail(d, "%s: gemm (%s): the %s operand runs past its buffer (%zu + %zu + %zu > "
                    "%zu elements)", d->backend, lowp_mode_name(d->lowp), what, t.off, at, len,
                    have);
        return (dten){0};
    }
    return (dten){t.buf, t.off + at, len};
}

/* a scratch copy of span elements of src rounded to the mode; .buf NULL on failure */
static dten rounded_copy(device *d, const char *what, dten src, size_t span)
{
    dten from = buffer_span(d, what, src, 0, span);
    dten t = from.buf ? device_alloc(d, span, DT_REAL) : (dten){0};
    if (!t.buf)
        return t;
    d->native_ops->copy(d, t, from);
    d->round_lowp(d, t, (int)span, d->lowp);
    return t;
}

/* C = beta C + P for a product P laid out [batch, M, N]: whole when C is too, else row by row */
static void merge_product(device *d, dten P, dten Cm, int M, int N, int ldc, long strideC,
                          int batch, double beta)
{
    const device_i *o = d->native_ops;
    int whole = ldc == N && (batch == 1 || strideC == (long)M * N);
    int rows = whole ? 1 : M * batch, len = whole ? M * N * batch : N;
    for (int r = 0; r < rows; r++) {
        size_t at = whole ? 0 : (size_t)(r / M) * (size_t)strideC + (size_t)(r % M) * ldc;
        dten c = buffer_span(d, "C", Cm, at, (size_t)len);
        dten p = {P.buf, P.off + (size_t)r * (size_t)len, (size_t)len};
        if (!c.buf)
            return;
        if (beta == 0) {
            o->copy(d, c, p);
            continue;
        }
        if (beta != 1)
            o->scale(d, c, beta, len);
        o->accumulate(d, c, p, len);
    }
}

/* the check every size must pass before the scratch is sized: ints and spans within int */
static int lowp_sizes_ok(device *d, size_t sa, size_t sb, size_t sp)
{
    if (sa <= INT_MAX && sb <= INT_MAX && sp <= INT_MAX)
        return 1;
    device_fail(d, "%s: gemm (%s): operands of more than %d elements", d->backend,
                lowp_mode_name(d->lowp), INT_MAX);
    return 0;
}

/* autocast's matmul: C = beta C + round(alpha round(A) round(B)), the product accumulated in
 * the element type by the backend's own gemm (docs/precision.md) */
static void lowp_gemm(device *d, int transA, int transB, int M, int N, int K, double alpha,
                      dten A, int lda, long strideA, dten Bm, int ldb, long strideB, double beta,
                      dten Cm, int ldc, long strideC, int batch)
{
    const device_i *o = d->native_ops;
    if (d->failed || M <= 0 || N <= 0 || batch <= 0 || K <= 0 || alpha == 0 || !A.buf ||
        !Bm.buf || !Cm.buf) { /* nothing to round: the backend's gemm checks and scales */
        o->gemm(d, transA, transB, M, N, K, alpha, A, lda, strideA, Bm, ldb, strideB, beta, Cm,
                ldc, strideC, batch);
        return;
    }
    if (!op_gemm_ok(d, transA, transB, M, N, K, A, lda, strideA, Bm, ldb, strideB, Cm, ldc,
                    strideC, batch)) /* the backend's checks and messages, before any scratch */
        return;
    size_t sa = batch_span(transA ? K : M, transA ? M : K, lda, strideA, batch);
    size_t sb = batch_span(transB ? N : K, transB ? K : N, ldb, strideB, batch);
    size_t sp = (size_t)M * (size_t)N * (size_t)batch;
    if (!lowp_sizes_ok(d, sa, sb, sp))
        return;
    dten ra = rounded_copy(d, "A", A, sa);
    dten rb = ra.buf ? rounded_copy(d, "B", Bm, sb) : (dten){0};
    dten prod = rb.buf ? device_alloc(d, sp, DT_REAL) : (dten){0};
    if (prod.buf) {
        o->gemm(d, transA, transB, M, N, K, alpha, ra, lda, strideA, rb, ldb, strideB, 0.0, prod,
                N, (long)M * N, batch);
        d->round_lowp(d, prod, (int)sp, d->lowp);
        merge_product(d, prod, Cm, M, N, ldc, strideC, batch, beta);
    }
    device_free(d, prod);
    device_free(d, rb);
    device_free(d, ra);
}

/* the loss's gradient seeds the backward: scaled by the loss scale (GradScaler.scale(loss)) */
static void lowp_xent_backward(device *d, dten dlogits, dten probs, dten targets, int N, int V,
                               int ignore_index, double scale)
{
    d->native_ops->softmax_xent_backward(d, dlogits, probs, targets, N, V, ignore_index,
                                         scale * d->loss_scale);
}

int device_set_lowp(device *d, lowp_mode mode, char *why, size_t len)
{
    if (d->native_ops) { /* back to the backend's table first */
        d->ops = d->native_ops;
        d->native_ops = NULL;
    }
    d->lowp = LOWP_NONE;
    d->loss_scale = 1.0;
    if (mode == LOWP_NONE)
        return 0;
    if (!d->round_lowp) {
        snprintf(why, len, "the %s backend has no bf16/fp16 rounding (round_lowp): %s cannot run "
                 "there", d->backend, lowp_mode_name(mode));
        return 1;
    }
    d->native_ops = d->ops;
    d->lowp_ops = *d->ops;
    d->lowp_ops.gemm = lowp_gemm;
    d->lowp_ops.softmax_xent_backward = lowp_xent_backward;
    d->ops = &d->lowp_ops;
    d->lowp = mode;
    return 0;
}
