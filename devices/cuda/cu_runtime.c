/* devices/cuda/cu_runtime.c: the cuda backend's plumbing: checked CUDA and cuBLAS calls naming the
 * op, kernel argument packing and launch (cudaLaunchKernel), the error flag, op timing, faults. */
#include <stdio.h>
#include <string.h>

#include "cu_internal.h"
#include "cuda.h"

/* the kernels' entry points in kernel_id order (cu_kernels.cu) */
extern const void *const cuda_kernel_table[K_COUNT];

int cu_ok(device *d, const char *op, const char *call, cudaError_t err)
{
    if (err == cudaSuccess)
        return 1;
    device_fail(d, "cuda: %s: %s: %s: %s", op, call, cudaGetErrorName(err),
                cudaGetErrorString(err));
    return 0;
}

int cu_blas_ok(device *d, const char *op, const char *call, cublasStatus_t s)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 1;
    device_fail(d, "cuda: %s: %s: %s (%d)", op, call, cu_blas.status_string(s), (int)s);
    return 0;
}

int cu_check_flag(device *d, const char *op)
{
    cu_ctx *c = CU(d);
    int code = 0;
    if (!cu_ok(d, op, "cudaMemcpyAsync (error flag)",
               cudaMemcpyAsync(&code, c->flag, sizeof code, cudaMemcpyDeviceToHost, c->stream)) ||
        !cu_ok(d, op, "cudaStreamSynchronize", cudaStreamSynchronize(c->stream)))
        return 0;
    if (code == 0)
        return 1;
    device_fail(d, "cuda: %s (found at %s)", kernel_error_message(code), op);
    return 0;
}

/* ---- arguments ---- */

void ca_ptr(cu_args *a, void *p)
{
    a->v[a->n++].p = p;
}

void ca_ten(cu_args *a, dten t)
{
    ca_ptr(a, t.buf->ptr);
    ca_ulong(a, t.off);
}

void ca_int(cu_args *a, int v)
{
    a->v[a->n++].i = v;
}

void ca_ulong(cu_args *a, size_t v)
{
    a->v[a->n++].u = v;
}

void ca_float(cu_args *a, double v)
{
    a->v[a->n++].f = (float)v;
}

void ca_acc(cu_args *a, const cu_ctx *c, double v)
{
    (void)c;
    a->v[a->n++].d = v;
}

/* ---- launch ---- */

int cu_launch(device *d, const char *op, cu_kernel_id k, const cu_args *a, size_t items)
{
    cu_ctx *c = CU(d);
    if (items == 0)
        return 1;
    size_t blocks = (items + CU_WG - 1) / CU_WG;
    if (blocks > 0x7fffffffu) {
        device_fail(d, "cuda: %s: %zu thread blocks exceed the grid's limit", op, blocks);
        return 0;
    }
    void *args[CU_MAX_ARGS];
    for (int i = 0; i < a->n; i++)
        args[i] = (void *)&a->v[i];
    dim3 grid = {(unsigned)blocks, 1, 1}, block = {CU_WG, 1, 1};
    return cu_ok(d, op, "cudaLaunchKernel",
                 cudaLaunchKernel(cuda_kernel_table[k], grid, block, args, 0, c->stream));
}

/* ---- op timing with CUDA events (harness ops --mode perf) ---- */

void cuda_timer_start(device *d)
{
    if (!d || strcmp(d->backend, HARNESS_CUDA_BACKEND) != 0 || d->failed)
        return;
    cu_ctx *c = CU(d);
    c->timing = cu_ok(d, "timer", "cudaEventRecord", cudaEventRecord(c->ev_start, c->stream));
}

double cuda_timer_stop_ns(device *d)
{
    if (!d || strcmp(d->backend, HARNESS_CUDA_BACKEND) != 0 || d->failed || !CU(d)->timing)
        return -1;
    cu_ctx *c = CU(d);
    c->timing = 0;
    float ms = 0;
    if (!cu_ok(d, "timer", "cudaEventRecord", cudaEventRecord(c->ev_stop, c->stream)) ||
        !cu_ok(d, "timer", "cudaEventSynchronize", cudaEventSynchronize(c->ev_stop)) ||
        !cu_ok(d, "timer", "cudaEventElapsedTime",
               cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop)))
        return -1;
    return (double)ms * 1e6;
}

/* ---- fault injection ---- */
#ifdef HARNESS_CUDA_FAULT
#define FAULT_DELTA 1e-3

void cu_fault(device *d, const char *op, dten t, size_t n)
{
    if (d->failed || strcmp(op, HARNESS_CUDA_FAULT) != 0)
        return;
    cu_args a = {0};
    ca_ten(&a, t);
    ca_ulong(&a, n);
    ca_float(&a, FAULT_DELTA);
    cu_launch(d, op, K_FAULT_ADD, &a, n);
}

double cu_fault_scalar(const char *op, double v)
{
    return strcmp(op, HARNESS_CUDA_FAULT) == 0 ? v * (1 + FAULT_DELTA) : v;
}
#endif
