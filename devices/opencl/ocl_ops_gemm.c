/* devices/opencl/ocl_ops_gemm.c: the opencl backend's strided-batched GEMM through CLBlast
 * (row-major, buffer offsets = the views' offsets), and the bias add and bias gradient kernels. */
#include <clblast_c.h>
#include <stdio.h>

#include "ocl_internal.h"

#define CLB(x) \
    case CLBlast##x: \
        return "CLBlast" #x

static const char *clblast_name(CLBlastStatusCode s)
{
    switch (s) {
        CLB(NotImplemented);
        CLB(InvalidMatrixA);
        CLB(InvalidMatrixB);
        CLB(InvalidMatrixC);
        CLB(InvalidDimension);
        CLB(InvalidLeadDimA);
        CLB(InvalidLeadDimB);
        CLB(InvalidLeadDimC);
        CLB(InsufficientMemoryA);
        CLB(InsufficientMemoryB);
        CLB(InsufficientMemoryC);
        CLB(InsufficientMemoryTemp);
        CLB(InvalidBatchCount);
        CLB(InvalidLocalMemUsage);
        CLB(DatabaseError);
        CLB(UnknownError);
        CLB(UnexpectedError);
    default:
        return s > -1000 ? ocl_err_name((cl_int)s) : "CLBlast error";
    }
}

static int clblast_ok(device *d, const char *call, CLBlastStatusCode s)
{
    if (s == CLBlastSuccess)
        return 1;
    device_fail(d, "opencl: gemm: %s: %s (%d)", call, clblast_name(s), (int)s);
    return 0;
}

/* C_i = beta * C_i, when there is no product (K == 0 or alpha == 0) */
static void scale_only(device *d, dten Cm, int M, int N, int ldc, long strideC, int batch,
                       double beta)
{
    ocl_args a = {0};
    oa_ten(&a, Cm);
    oa_int(&a, M);
    oa_int(&a, N);
    oa_int(&a, ldc);
    oa_ulong(&a, (size_t)strideC);
    oa_int(&a, batch);
    oa_float(&a, beta);
    ocl_launch(d, "gemm", K_GEMM_SCALE, &a, (size_t)batch * M * N);
}

typedef struct {
    int transA, transB, M, N, K;
    float alpha, beta;
    dten A, B, C;
    int lda, ldb, ldc;
    long sA, sB, sC;
} gemm_args;

/* one CLBlast call: Sgemm for one matrix, SgemmStridedBatched for several */
static int clblast_call(device *d, const gemm_args *g, size_t off_a, size_t off_b, size_t off_c,
                        int batch)
{
    ocl_ctx *c = OCL(d);
    CLBlastTranspose ta = g->transA ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = g->transB ? CLBlastTransposeYes : CLBlastTransposeNo;
    cl_event ev = NULL;
    CLBlastStatusCode s;
    if (batch == 1)
        s = CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, g->M, g->N, g->K, g->alpha, g->A.buf->mem,
                         off_a, g->lda, g->B.buf->mem, off_b, g->ldb, g->beta, g->C.buf->mem, off_c,
                         g->ldc, &c->queue, &ev);
    else
        s = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, g->M, g->N, g->K, g->alpha,
                                       g->A.buf->mem, off_a, g->lda, g->sA, g->B.buf->mem, off_b,
                                       g->ldb, g->sB, g->beta, g->C.buf->mem, off_c, g->ldc, g->sC,
                                       batch, &c->queue, &ev);
    if (!clblast_ok(d, batch == 1 ? "CLBlastSgemm" : "CLBlastSgemmStridedBatched", s))
        return 0;
    if (ev)
        ocl_track_event(d, ev);
    return 1;
}

static void ocl_gemm(device *d, int transA, int transB, int M, int N, int K, double alpha, dten A,
                     int lda, long strideA, dten Bm, int ldb, long strideB, double beta, dten Cm,
                     int ldc, long strideC, int batch)
{
    if (!op_gemm_ok(d, transA, transB, M, N, K, A, lda, strideA, Bm, ldb, strideB, Cm, ldc,
                    strideC, batch))
        return;
    ocl_op_begin(d);
    if (M == 0 || N == 0 || batch == 0)
        return;
    if (K == 0 || alpha == 0) {
        scale_only(d, Cm, M, N, ldc, strideC, batch, beta);
        ocl_fault(d, "gemm", Cm, (size_t)(batch - 1) * strideC + (size_t)(M - 1) * ldc + N);
        return;
    }
    ocl_op_marker(d, "gemm");
    gemm_args g = {transA, transB, M, N, K, (float)alpha, (float)beta, A, Bm, Cm, lda, ldb, ldc,
                   strideA, strideB, strideC};
    /* batches writing one C (stride 0) run one after another, as the cpu reference does */
    int ok = 1;
    if (strideC == 0 && batch > 1)
        for (int i = 0; i < batch && ok; i++)
            ok = clblast_call(d, &g, A.off + (size_t)i * strideA, Bm.off + (size_t)i * strideB,
                              Cm.off, 1);
    else
        ok = clblast_call(d, &g, A.off, Bm.off, Cm.off, batch);
    if (ok)
        ocl_fault(d, "gemm", Cm, (size_t)(batch - 1) * strideC + (size_t)(M - 1) * ldc + N);
}

static void ocl_bias_add(device *d, dten out, dten bias, int N, int C)
{
    const char *op = "bias_add";
    if (!op_bias_ok(d, op, out, bias, N, C))
        return;
    ocl_op_begin(d);
    size_t nc = (size_t)N * C;
    ocl_args a = {0};
    oa_ten(&a, out);
    oa_ten(&a, bias);
    oa_ulong(&a, nc);
    oa_int(&a, C);
    if (ocl_launch(d, op, K_BIAS_ADD, &a, nc))
        ocl_fault(d, op, out, nc);
}

static void ocl_bias_backward(device *d, dten dbias, dten dout, int N, int C)
{
    const char *op = "bias_backward";
    if (!op_bias_ok(d, op, dout, dbias, N, C))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, dbias);
    oa_ten(&a, dout);
    oa_int(&a, N);
    oa_int(&a, C);
    if (ocl_launch(d, op, K_BIAS_BACKWARD, &a, (size_t)C * OCL(d)->wg))
        ocl_fault(d, op, dbias, (size_t)C);
}

void ocl_fill_gemm(device_i *ops)
{
    ops->gemm = ocl_gemm;
    ops->bias_add = ocl_bias_add;
    ops->bias_backward = ocl_bias_backward;
}
