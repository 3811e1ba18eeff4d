/* devices/cuda/cu_internal.h: what the cuda backend's files share: the buffer and context structs,
 * checked CUDA/cuBLAS calls, kernel argument packing and launch, the error flag, op timing. */
#ifndef CU_INTERNAL_H
#define CU_INTERNAL_H

#include "cu_api.h"
#include "cu_blas.h"
#include "device.h"
#include "kernels/kernel_list.h"
#include "op_checks.h"

/* a cuda buffer: one device allocation; views carry element offsets that kernels take */
struct dbuf {
    dbuf_head head;
    void *ptr;
};

/* items per block of every launch: WG in the kernels (dialect.h's default, the same value) */
#define CU_WG 256

typedef struct {
    int ordinal;             /* the CUDA device number */
    cudaStream_t stream;     /* every command of the device goes to this one stream, in order */
    cublasHandle_t blas;
    void *workspace;         /* cuBLAS's fixed workspace (deterministic kernel choice) */
    int *flag;               /* one int: the first KERR_* code a kernel raised, 0 if none */
    double *partial;         /* KERNEL_REDUCE_GROUPS accumulators of sum/sumsq */
    cudaEvent_t ev_start, ev_stop; /* op timing (cuda_timer_start/stop) */
    int timing;
    size_t wg;               /* CU_WG, named as the kernels' host code expects */
} cu_ctx;

#define CU(d) ((cu_ctx *)(d)->ctx)
typedef kernel_id cu_kernel_id;

/* ---- errors (cu_runtime.c) ---- */
/* 1 if err is cudaSuccess, else device_fail("cuda: OP: CALL: NAME: string") and 0 */
int cu_ok(device *d, const char *op, const char *call, cudaError_t err);
/* the same for cuBLAS statuses */
int cu_blas_ok(device *d, const char *op, const char *call, cublasStatus_t s);
/* reads the kernels' error flag; on a raised code fails the device naming the op. 0 or 1 */
int cu_check_flag(device *d, const char *op);

/* ---- kernel arguments and launch: each argument is stored with the kernel parameter's type ---- */
#define CU_MAX_ARGS 24
typedef struct {
    int n;
    union {
        void *p;
        int i;
        unsigned long u; /* the kernels' ulong (dialect.h) */
        float f;
        double d;
    } v[CU_MAX_ARGS];
} cu_args;

void ca_ptr(cu_args *a, void *p);
void ca_ten(cu_args *a, dten t); /* the view's buffer, then its element offset (ulong) */
void ca_int(cu_args *a, int v);
void ca_ulong(cu_args *a, size_t v);
void ca_float(cu_args *a, double v);
void ca_acc(cu_args *a, const cu_ctx *c, double v); /* the kernels' acc_t: double */

/* launches kernel k over `items` threads (whole blocks of CU_WG; 0 items launch nothing).
 * Returns 1, or 0 after device_fail naming op and the failing call. */
int cu_launch(device *d, const char *op, cu_kernel_id k, const cu_args *a, size_t items);
/* ops call these where the opencl backend tracks its events; timing is per call instead */
static inline void cu_op_begin(device *d)
{
    (void)d;
}

/* ---- row-major sgemm on device pointers (cu_ops_gemm.c), for ops built from products ---- */
/* C_i = alpha op(A_i) op(B_i) + beta C_i for i < batch (A_i = A + i * sA, likewise B and C) */
typedef struct {
    int transA, transB, M, N, K;
    float alpha, beta;
    const float *A, *B;
    float *C;
    int lda, ldb, ldc;
    long long sA, sB, sC;
    int batch;
} cu_sgemm_call;
/* one cuBLAS call (Sgemm, or SgemmStridedBatched when batch > 1); 1, or 0 after device_fail
 * naming op */
int cu_sgemm(device *d, const char *op, const cu_sgemm_call *g);
/* the same with the arguments spelled out: batch products, operand i at A + i*sA etc. (a stride
 * 0 operand is shared by the batch) */
int cu_sgemm_batch(device *d, const char *op, int tA, int tB, int M, int N, int K, float alpha,
                   const float *A, int lda, long long sA, const float *Bm, int ldb, long long sB,
                   float beta, float *Cm, int ldc, long long sC, int batch);
/* a view's first element on the device */
static inline float *cu_view_ptr(dten t)
{
    return (float *)t.buf->ptr + t.off;
}
/* the attention row kernels' arguments after their two buffers (cu_ops_attention.c): T, NH,
 * causal, the scale when with_scale, the key mask (km, km_off, has_mask) */
void cu_attn_row_args(device *d, cu_args *a, int T, int NH, int causal, int with_scale,
                      double scale, dten keymask);

/* ---- the row scatter of embedding and gather backward (cu_ops_embedding.c) ---- */
/* enqueues embedding_backward_wte's kernel: dtable[ids[r],:] += dout[r,:] over n rows of C
 * channels, table rows R, a bad id raising err; enough id buckets to fill the GPU. 1 or 0 */
int cu_scatter_rows(device *d, const char *op, dten dtable, dten dout, dten ids, int n, int C,
                    int R, int err);

/* ---- dropout (cu_ops_dropout.c), also the attention ops' probability dropout ---- */
int cu_dropout_launch(device *d, const char *op, dten y, dten mask, dten x, size_t n,
                      int accumulate, double p, uint64_t seed, uint32_t step, uint32_t layer,
                      uint32_t site);

/* ---- device selection (cu_select.c) ---- */
/* resolves a cuda device spec argument ("", "N", name substring) to an ordinal; 0 or 1 + err */
int cu_select_device(const char *arg, int *ordinal, char *err, size_t errlen);

/* ---- the op entries (cu_ops_*.c) ---- */
void cu_fill_elementwise(device_i *ops);
void cu_fill_embedding(device_i *ops);
void cu_fill_layernorm(device_i *ops);
void cu_fill_gemm(device_i *ops);
void cu_fill_attention(device_i *ops);
void cu_fill_loss(device_i *ops);
void cu_fill_optim(device_i *ops);
void cu_fill_dropout(device_i *ops);
void cu_fill_rmsnorm(device_i *ops);
void cu_fill_silu_mul(device_i *ops);
void cu_fill_rope(device_i *ops);
void cu_fill_gqa(device_i *ops);
void cu_fill_gather(device_i *ops);
void cu_fill_topk(device_i *ops);
/* device.round_lowp (cu_ops_lowp.c) */
void cu_round_lowp(device *d, dten x, int n, int mode);

/* ---- fault injection (a test-only build: -DHARNESS_CUDA_FAULT=op), as the opencl backend's ---- */
#ifdef HARNESS_CUDA_FAULT
void cu_fault(device *d, const char *op, dten t, size_t n);
double cu_fault_scalar(const char *op, double v);
#else
static inline void cu_fault(device *d, const char *op, dten t, size_t n)
{
    (void)d, (void)op, (void)t, (void)n;
}
static inline double cu_fault_scalar(const char *op, double v)
{
    (void)op;
    return v;
}
#endif

#endif
