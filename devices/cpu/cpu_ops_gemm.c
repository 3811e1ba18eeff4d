/* devices/cpu/cpu_ops_gemm.c: the cpu backend's strided-batched GEMM (OpenBLAS cblas_?gemm, one
 * or two calls per batch entry, OpenBLAS threads each call) and the bias add and gradient. */
#include "cpu_real.h"
#include "cpu_simd.h"

#include <cblas.h>

/* OpenBLAS (0.3.21) splits a K above its GEMM_Q (320 for sgemm, 384 for dgemm on this Zen) into
 * blocks, the last two by halving what is left, and its single-thread and threaded drivers round
 * that half differently: a gemm with, say, K = 333 (an expert's rows) gave other bits at 1 and 2
 * threads. So K is summed as a head of whole multiples of this many terms (GEMM_Q being a multiple
 * of 64, every block of the head, halves included, is a multiple of 32 that both drivers leave as
 * it is) and then the tail of fewer than this many (below GEMM_Q: one block in both): the same
 * bits at any thread count, for one more cblas call. */
#define CPU_GEMM_K_UNIT 256

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

/* one product C = beta C + alpha A B over the K terms [k0, k1) */
static void gemm_k_range(int transA, int transB, int M, int N, int k0, int k1, real alpha,
                         const real *a, int lda, const real *b, int ldb, real beta, real *c,
                         int ldc)
{
    enum CBLAS_TRANSPOSE ta = transA ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = transB ? CblasTrans : CblasNoTrans;
    const real *ak = a + (transA ? (size_t)k0 * lda : (size_t)k0);
    const real *bk = b + (transB ? (size_t)k0 : (size_t)k0 * ldb);
    cblas_real_gemm(CblasRowMajor, ta, tb, M, N, k1 - k0, alpha, ak, lda, bk, ldb, beta, c, ldc);
}

/* C = beta C + alpha A B as the head (whole units of K) and then the tail (the rest) */
static void gemm_head_tail(int transA, int transB, int M, int N, int K, real alpha,
                           const real *a, int lda, const real *b, int ldb, real beta, real *c,
                           int ldc)
{
    int head = K - K % CPU_GEMM_K_UNIT;
    if (head > 0)
        gemm_k_range(transA, transB, M, N, 0, head, alpha, a, lda, b, ldb, beta, c, ldc);
    if (head < K)
        gemm_k_range(transA, transB, M, N, head, K, alpha, a, lda, b, ldb,
                     head > 0 ? (real)1 : beta, c, ldc);
}

/* device.perturb p > 0 (an ensemble member, docs/compare.md): K summed in blocks of p times
 * this many terms, one call each, so C takes another rounding at each block: the same math in
 * another order. Every block is below GEMM_Q, so the bits stay the same at any thread count. */
#define CPU_GEMM_PERTURB_BLOCK 8

static void gemm_k_blocks(int transA, int transB, int M, int N, int K, int unit, real alpha,
                          const real *a, int lda, const real *b, int ldb, real beta, real *c,
                          int ldc)
{
    for (int k0 = 0; k0 < K; k0 += unit) {
        int k1 = K - k0 <= unit ? K : k0 + unit;
        gemm_k_range(transA, transB, M, N, k0, k1, alpha, a, lda, b, ldb, k0 ? (real)1 : beta,
                     c, ldc);
    }
}

static void cpu_gemm(device *d, int transA, int transB, int M, int N, int K, double alpha, dten A,
                     int lda, long strideA, dten Bm, int ldb, long strideB, double beta, dten Cm,
                     int ldc, long strideC, int batch)
{
    if (!op_gemm_ok(d, transA, transB, M, N, K, A, lda, strideA, Bm, ldb, strideB, Cm, ldc,
                    strideC, batch))
        return;
    real *c = RP(Cm);
    if (M == 0 || N == 0 || batch == 0)
        return;
    if (K == 0 || alpha == 0) {
        gemm_scale_only(c, M, N, ldc, strideC, batch, (real)beta);
        return;
    }
    const real *a = RP(A), *b = RP(Bm);
    for (int i = 0; i < batch; i++)
        if (d->perturb > 0)
            gemm_k_blocks(transA, transB, M, N, K, CPU_GEMM_PERTURB_BLOCK * d->perturb,
                          (real)alpha, a + (size_t)i * strideA, lda, b + (size_t)i * strideB, ldb,
                          (real)beta, c + (size_t)i * strideC, ldc);
        else
            gemm_head_tail(transA, transB, M, N, K, (real)alpha, a + (size_t)i * strideA, lda,
                           b + (size_t)i * strideB, ldb, (real)beta, c + (size_t)i * strideC,
                           ldc);
}

/* rows [0, n) of out[n, C] += bias */
CPU_CLONES static void bias_add_rows(real *restrict o, const real *restrict b, long n, int C)
{
    for (long r = 0; r < n; r++) {
        real *row = o + (size_t)r * C;
        for (int c = 0; c < C; c++)
            row[c] += b[c];
    }
}

/* rows per chunk of the bias loops */
#define BIAS_ROWS 16L

static void cpu_bias_add(device *d, dten out, dten bias, int N, int C)
{
    if (!op_bias_ok(d, "bias_add", out, bias, N, C))
        return;
    real *o = RP(out);
    const real *b = RP(bias);
    long chunks = ((long)N + BIAS_ROWS - 1) / BIAS_ROWS;
#pragma omp parallel for schedule(static)
    for (long ch = 0; ch < chunks; ch++) {
        long r0 = ch * BIAS_ROWS;
        bias_add_rows(o + (size_t)r0 * C, b, N - r0 < BIAS_ROWS ? N - r0 : BIAS_ROWS, C);
    }
}

/* channels per block of the column sums: each channel's sum runs over the rows in order, so
 * the width changes no bit; a wide block keeps the rows' reads long */
#define BIAS_COL_BLOCK 128

/* db[0..nc) += the sums over rows [0, N) of g's columns (rows ldg apart), each in double in
 * row order */
CPU_CLONES static void column_sums(real *restrict db, const real *restrict g, long N, int ldg,
                                   int nc)
{
    double acc[BIAS_COL_BLOCK] = {0};
    for (long n = 0; n < N; n++) {
        const real *row = g + (size_t)n * ldg;
        for (int j = 0; j < nc; j++)
            acc[j] += row[j];
    }
    for (int j = 0; j < nc; j++)
        db[j] += (real)acc[j];
}

/* column sums in double: channel blocks in parallel, rows in order within a block */
static void cpu_bias_backward(device *d, dten dbias, dten dout, int N, int C)
{
    if (!op_bias_ok(d, "bias_backward", dout, dbias, N, C))
        return;
    real *db = RP(dbias);
    const real *g = RP(dout);
    int nblocks = (C + BIAS_COL_BLOCK - 1) / BIAS_COL_BLOCK;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * BIAS_COL_BLOCK, nc = C - c0 < BIAS_COL_BLOCK ? C - c0 : BIAS_COL_BLOCK;
        column_sums(db + c0, g + c0, N, C, nc);
    }
}

void cpu_fill_gemm(device_i *ops)
{
    ops->gemm = cpu_gemm;
    ops->bias_add = cpu_bias_add;
    ops->bias_backward = cpu_bias_backward;
}
