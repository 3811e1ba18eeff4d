/* devices/cpu/cpu_ops_gemm.c: the cpu backend's strided-batched GEMM (OpenBLAS cblas_?gemm, one
 * call per batch entry, OpenBLAS threads each call) and the bias add and bias gradient. */
#include "cpu_real.h"

#include <cblas.h>

/* op(X) is rows x cols; X is stored row-major as rows x cols, or cols x rows when transposed */
static int gemm_operand_ok(device *d, const char *name, dten t, int trans, int rows, int cols,
                           int ld, long stride, int batch)
{
    int sr = trans ? cols : rows, sc = trans ? rows : cols;
    if (ld < (sc > 1 ? sc : 1) || stride < 0) {
        device_fail(d, "%s: gemm: %s: leading dimension %d (needs >= %d) or stride %ld (needs "
                    ">= 0) is invalid", CPU_BACKEND_NAME, name, ld, sc > 1 ? sc : 1, stride);
        return 0;
    }
    size_t need = 0;
    if (sr > 0 && sc > 0 && batch > 0)
        need = (size_t)(batch - 1) * (size_t)stride + (size_t)(sr - 1) * (size_t)ld + (size_t)sc;
    return cpu_check(d, "gemm", name, t, need, DT_REAL);
}

/* C = beta * C, for the cases BLAS is not called (no product terms) */
static void gemm_scale_only(real *c, int M, int N, int ldc, long strideC, int batch, real beta)
{
    for (int i = 0; i < batch; i++)
        for (int r = 0; r < M; r++) {
            real *row = c + (size_t)i * strideC + (size_t)r * ldc;
            for (int j = 0; j < N; j++)
                row[j] = beta == 0 ? 0 : beta * row[j];
        }
}

static void cpu_gemm(device *d, int transA, int transB, int M, int N, int K, double alpha, dten A,
                     int lda, long strideA, dten Bm, int ldb, long strideB, double beta, dten Cm,
                     int ldc, long strideC, int batch)
{
    if (d->failed || !cpu_dims_ok(d, "gemm", (int[]){M, N, K, batch}, 4, 0) ||
        !gemm_operand_ok(d, "A", A, transA, M, K, lda, strideA, batch) ||
        !gemm_operand_ok(d, "B", Bm, transB, K, N, ldb, strideB, batch) ||
        !gemm_operand_ok(d, "C", Cm, 0, M, N, ldc, strideC, batch))
        return;
    real *c = RP(Cm);
    if (M == 0 || N == 0 || batch == 0)
        return;
    if (K == 0 || alpha == 0) {
        gemm_scale_only(c, M, N, ldc, strideC, batch, (real)beta);
        return;
    }
    const real *a = RP(A), *b = RP(Bm);
    enum CBLAS_TRANSPOSE ta = transA ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = transB ? CblasTrans : CblasNoTrans;
    for (int i = 0; i < batch; i++)
        cblas_real_gemm(CblasRowMajor, ta, tb, M, N, K, (real)alpha, a + (size_t)i * strideA, lda,
                        b + (size_t)i * strideB, ldb, (real)beta, c + (size_t)i * strideC, ldc);
}

static int bias_ok(device *d, const char *op, dten mat, dten bias, int N, int C)
{
    return cpu_dims_ok(d, op, (int[]){N, C}, 2, 0) &&
           cpu_check(d, op, "matrix", mat, (size_t)N * (size_t)C, DT_REAL) &&
           cpu_check(d, op, "bias", bias, (size_t)C, DT_REAL);
}

static void cpu_bias_add(device *d, dten out, dten bias, int N, int C)
{
    if (d->failed || !bias_ok(d, "bias_add", out, bias, N, C))
        return;
    real *o = RP(out);
    const real *b = RP(bias);
#pragma omp parallel for schedule(static)
    for (long n = 0; n < N; n++) {
        real *row = o + (size_t)n * C;
        for (int c = 0; c < C; c++)
            row[c] += b[c];
    }
}

/* column sums in double: channel blocks in parallel, rows in order within a block */
static void cpu_bias_backward(device *d, dten dbias, dten dout, int N, int C)
{
    if (d->failed || !bias_ok(d, "bias_backward", dout, dbias, N, C))
        return;
    real *db = RP(dbias);
    const real *g = RP(dout);
    int nblocks = (C + CPU_COL_BLOCK - 1) / CPU_COL_BLOCK;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CPU_COL_BLOCK, nc = C - c0 < CPU_COL_BLOCK ? C - c0 : CPU_COL_BLOCK;
        double acc[CPU_COL_BLOCK] = {0};
        for (long n = 0; n < N; n++) {
            const real *row = g + (size_t)n * C + c0;
            for (int j = 0; j < nc; j++)
                acc[j] += row[j];
        }
        for (int j = 0; j < nc; j++)
            db[c0 + j] += (real)acc[j];
    }
}

void cpu_fill_gemm(device_i *ops)
{
    ops->gemm = cpu_gemm;
    ops->bias_add = cpu_bias_add;
    ops->bias_backward = cpu_bias_backward;
}
