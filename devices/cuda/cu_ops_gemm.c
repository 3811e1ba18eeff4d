/* devices/cuda/cu_ops_gemm.c: the cuda backend's strided-batched GEMM through cuBLAS (row-major
 * through the column-major transpose identity), and the bias add and bias gradient kernels. */
#include "cu_internal.h"

/* C_i = beta * C_i, when there is no product (K == 0 or alpha == 0) */
static void scale_only(device *d, dten Cm, int M, int N, int ldc, long strideC, int batch,
                       double beta)
{
    cu_args a = {0};
    ca_ten(&a, Cm);
    ca_int(&a, M);
    ca_int(&a, N);
    ca_int(&a, ldc);
    ca_ulong(&a, (size_t)strideC);
    ca_int(&a, batch);
    ca_float(&a, beta);
    cu_launch(d, "gemm", K_GEMM_SCALE, &a, (size_t)batch * M * N);
}

typedef struct {
    int transA, transB, M, N, K;
    float alpha, beta;
    dten A, B, C;
    int lda, ldb, ldc;
    long sA, sB, sC;
} gemm_args;

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the operands go in swapped,
 * M and N too. */
int cu_sgemm(device *d, const char *op, const cu_sgemm_call *g)
{
    cu_ctx *c = CU(d);
    cublasOperation_t ta = g->transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = g->transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (g->batch == 1)
        return cu_blas_ok(d, op, "cublasSgemm",
                          cu_blas.sgemm(c->blas, tb, ta, g->N, g->M, g->K, &g->alpha, g->B, g->ldb,
                                      g->A, g->lda, &g->beta, g->C, g->ldc));
    return cu_blas_ok(d, op, "cublasSgemmStridedBatched",
                      cu_blas.sgemm_strided_batched(c->blas, tb, ta, g->N, g->M, g->K, &g->alpha,
                                                g->B, g->ldb, g->sB, g->A, g->lda, g->sA,
                                                &g->beta, g->C, g->ldc, g->sC, g->batch));
}

int cu_sgemm_batch(device *d, const char *op, int tA, int tB, int M, int N, int K, float alpha,
                   const float *A, int lda, long long sA, const float *Bm, int ldb, long long sB,
                   float beta, float *Cm, int ldc, long long sC, int batch)
{
    cu_sgemm_call g = {.transA = tA, .transB = tB, .M = M, .N = N, .K = K, .alpha = alpha,
                       .beta = beta, .A = A, .B = Bm, .C = Cm, .lda = lda, .ldb = ldb,
                       .ldc = ldc, .sA = sA, .sB = sB, .sC = sC, .batch = batch};
    return cu_sgemm(d, op, &g);
}

/* the gemm op's call on its views at element offsets off_a, off_b, off_c */
static int cublas_call(device *d, const gemm_args *g, size_t off_a, size_t off_b, size_t off_c,
                       int batch)
{
    cu_sgemm_call s = {.transA = g->transA, .transB = g->transB, .M = g->M, .N = g->N,
                       .K = g->K, .alpha = g->alpha, .beta = g->beta, .lda = g->lda,
                       .ldb = g->ldb, .ldc = g->ldc, .sA = g->sA, .sB = g->sB, .sC = g->sC,
                       .batch = batch};
    s.A = (const float *)g->A.buf->ptr + off_a;
    s.B = (const float *)g->B.buf->ptr + off_b;
    s.C = (float *)g->C.buf->ptr + off_c;
    return cu_sgemm(d, "gemm", &s);
}

static void cu_gemm(device *d, int transA, int transB, int M, int N, int K, double alpha, dten A,
                    int lda, long strideA, dten Bm, int ldb, long strideB, double beta, dten Cm,
                    int ldc, long strideC, int batch)
{
    if (!op_gemm_ok(d, transA, transB, M, N, K, A, lda, strideA, Bm, ldb, strideB, Cm, ldc,
                    strideC, batch))
        return;
    cu_op_begin(d);
    if (M == 0 || N == 0 || batch == 0)
        return;
    if (K == 0 || alpha == 0) {
        scale_only(d, Cm, M, N, ldc, strideC, batch, beta);
        cu_fault(d, "gemm", Cm, (size_t)(batch - 1) * strideC + (size_t)(M - 1) * ldc + N);
        return;
    }
    gemm_args g = {transA, transB, M, N, K, (float)alpha, (float)beta, A, Bm, Cm, lda, ldb, ldc,
                   strideA, strideB, strideC};
    /* batches writing one C (stride 0) run one after another, as the cpu reference does */
    int ok = 1;
    if (strideC == 0 && batch > 1)
        for (int i = 0; i < batch && ok; i++)
            ok = cublas_call(d, &g, A.off + (size_t)i * strideA, Bm.off + (size_t)i * strideB,
                              Cm.off, 1);
    else
        ok = cublas_call(d, &g, A.off, Bm.off, Cm.off, batch);
    if (ok)
        cu_fault(d, "gemm", Cm, (size_t)(batch - 1) * strideC + (size_t)(M - 1) * ldc + N);
}

static void cu_bias_add(device *d, dten out, dten bias, int N, int C)
{
    const char *op = "bias_add";
    if (!op_bias_ok(d, op, out, bias, N, C))
        return;
    cu_op_begin(d);
    size_t nc = (size_t)N * C;
    cu_args a = {0};
    ca_ten(&a, out);
    ca_ten(&a, bias);
    ca_ulong(&a, nc);
    ca_int(&a, C);
    if (cu_launch(d, op, K_BIAS_ADD, &a, nc))
        cu_fault(d, op, out, nc);
}

static void cu_bias_backward(device *d, dten dbias, dten dout, int N, int C)
{
    const char *op = "bias_backward";
    if (!op_bias_ok(d, op, dout, dbias, N, C))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, dbias);
    ca_ten(&a, dout);
    ca_int(&a, N);
    ca_int(&a, C);
    if (cu_launch(d, op, K_BIAS_BACKWARD, &a, (size_t)C * CU(d)->wg))
        cu_fault(d, op, dbias, (size_t)C);
}

void cu_fill_gemm(device_i *ops)
{
    ops->gemm = cu_gemm;
    ops->bias_add = cu_bias_add;
    ops->bias_backward = cu_bias_backward;
}
