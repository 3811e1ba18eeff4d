/* devices/cuda/cu_backend.c: the cuda device: opening (stream, cuBLAS with a fixed workspace,
 * service buffers), identity and memory figures, buffers, host transfers, zero, copy, sync. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_internal.h"

/* cuBLAS's workspace: given explicitly, so its kernel choice never depends on what memory
 * happens to be free (as PyTorch's deterministic mode fixes the cuBLAS workspace configuration) */
#define BLAS_WORKSPACE_BYTES ((size_t)32 << 20)

device *cuda_device_open(const char *arg, char *err, size_t errlen);

static void cu_close(device *d)
{
    cu_ctx *c = CU(d);
    if (c) {
        if (c->stream)
            cudaStreamSynchronize(c->stream);
        if (c->blas)
            cu_blas.destroy(c->blas);
        if (c->workspace)
            cudaFree(c->workspace);
        if (c->flag)
            cudaFree(c->flag);
        if (c->partial)
            cudaFree(c->partial);
        if (c->ev_start)
            cudaEventDestroy(c->ev_start);
        if (c->ev_stop)
            cudaEventDestroy(c->ev_stop);
        if (c->stream)
            cudaStreamDestroy(c->stream);
        free(c);
    }
    free(d);
}

/* ---- buffers ---- */

static size_t esize(const device *d, dkind kind)
{
    return kind == DT_I32 ? sizeof(int32_t) : d->real_size;
}

static dbuf *cu_alloc(device *d, size_t n, dkind kind)
{
    cu_ctx *c = CU(d);
    size_t es = esize(d, kind);
    if (n > SIZE_MAX / es - 1) {
        device_fail(d, "cuda: alloc: %zu elements overflow a byte count", n);
        return NULL;
    }
    size_t bytes = (n ? n : 1) * es;
    dbuf *b = calloc(1, sizeof *b);
    if (!b) {
        device_fail(d, "cuda: alloc: out of host memory");
        return NULL;
    }
    if (!cu_ok(d, "alloc", "cudaMalloc", cudaMalloc(&b->ptr, bytes)) ||
        !cu_ok(d, "alloc", "cudaMemsetAsync", cudaMemsetAsync(b->ptr, 0, bytes, c->stream))) {
        if (b->ptr)
            cudaFree(b->ptr);
        free(b);
        return NULL;
    }
    return b;
}

static void cu_free(device *d, dbuf *b)
{
    /* cudaFree waits for the device; the stream's work that used b is done by then */
    cu_ok(d, "free", "cudaFree", cudaFree(b->ptr));
    free(b);
}

/* ---- host transfers: synchronous, so the host array may be reused when they return ---- */

static void write_bytes(device *d, const char *op, dten t, const void *src)
{
    cu_ctx *c = CU(d);
    size_t es = esize(d, t.buf->head.kind);
    if (t.n && cu_ok(d, op, "cudaMemcpyAsync",
                     cudaMemcpyAsync((char *)t.buf->ptr + t.off * es, src, t.n * es,
                                     cudaMemcpyHostToDevice, c->stream)))
        cu_ok(d, op, "cudaStreamSynchronize", cudaStreamSynchronize(c->stream));
}

static int read_bytes(device *d, const char *op, void *dst, dten t)
{
    cu_ctx *c = CU(d);
    size_t es = esize(d, t.buf->head.kind);
    if (t.n && (!cu_ok(d, op, "cudaMemcpyAsync",
                       cudaMemcpyAsync(dst, (char *)t.buf->ptr + t.off * es, t.n * es,
                                       cudaMemcpyDeviceToHost, c->stream)) ||
                !cu_ok(d, op, "cudaStreamSynchronize", cudaStreamSynchronize(c->stream))))
        return 0;
    if (!d->failed) /* a bad token or target found by a kernel fails the device here */
        cu_check_flag(d, op);
    return 1;
}

static void cu_upload(device *d, dten dst, const float *src)
{
    if (!d->failed && device_view_ok(d, "upload", "dst", dst, 0, DT_REAL))
        write_bytes(d, "upload", dst, src);
}

static void cu_upload_i32(device *d, dten dst, const int32_t *src)
{
    if (!d->failed && device_view_ok(d, "upload_i32", "dst", dst, 0, DT_I32))
        write_bytes(d, "upload_i32", dst, src);
}

static void cu_upload_f64(device *d, dten dst, const double *src)
{
    if (d->failed || !device_view_ok(d, "upload_f64", "dst", dst, 0, DT_REAL))
        return;
    float *tmp = malloc((dst.n ? dst.n : 1) * sizeof *tmp);
    if (!tmp) {
        device_fail(d, "cuda: upload_f64: out of host memory for %zu elements", dst.n);
        return;
    }
    for (size_t i = 0; i < dst.n; i++)
        tmp[i] = (float)src[i];
    write_bytes(d, "upload_f64", dst, tmp);
    free(tmp);
}

/* downloads still read after a device error (for inspection); only when the read itself fails
 * do they leave NaN (or 0) rather than stale host memory */
static void poison(float *f, double *g, int32_t *i, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (f)
            f[k] = NAN;
        if (g)
            g[k] = NAN;
        if (i)
            i[k] = 0;
    }
}

static void cu_download(device *d, float *dst, dten src)
{
    if (!device_view_ok(d, "download", "src", src, 0, DT_REAL) ||
        !read_bytes(d, "download", dst, src))
        poison(dst, NULL, NULL, src.n);
}

static void cu_download_i32(device *d, int32_t *dst, dten src)
{
    if (!device_view_ok(d, "download_i32", "src", src, 0, DT_I32) ||
        !read_bytes(d, "download_i32", dst, src))
        poison(NULL, NULL, dst, src.n);
}

static void cu_download_f64(device *d, double *dst, dten src)
{
    float *tmp = malloc((src.n ? src.n : 1) * sizeof *tmp);
    if (!tmp)
        device_fail(d, "cuda: download_f64: out of host memory for %zu elements", src.n);
    if (!tmp || !device_view_ok(d, "download_f64", "src", src, 0, DT_REAL) ||
        !read_bytes(d, "download_f64", tmp, src)) {
        poison(NULL, dst, NULL, src.n);
    } else {
        for (size_t i = 0; i < src.n; i++)
            dst[i] = tmp[i];
    }
    free(tmp);
}

/* ---- device-side memory ops ---- */

static void cu_zero(device *d, dten t)
{
    if (d->failed || !t.buf || !device_view_ok(d, "zero", "t", t, 0, t.buf->head.kind) || !t.n)
        return;
    size_t es = esize(d, t.buf->head.kind);
    cu_ok(d, "zero", "cudaMemsetAsync",
          cudaMemsetAsync((char *)t.buf->ptr + t.off * es, 0, t.n * es, CU(d)->stream));
}

/* cudaMemcpyAsync device to device; overlapping ranges of one buffer go through a temporary */
static void cu_copy(device *d, dten dst, dten src)
{
    if (d->failed || !dst.buf || !device_view_ok(d, "copy", "dst", dst, 0, dst.buf->head.kind) ||
        !device_view_ok(d, "copy", "src", src, dst.n, dst.buf->head.kind) || !dst.n)
        return;
    cu_ctx *c = CU(d);
    size_t es = esize(d, dst.buf->head.kind), bytes = dst.n * es;
    char *to = (char *)dst.buf->ptr + dst.off * es, *from = (char *)src.buf->ptr + src.off * es;
    if (to == from)
        return;
    if (src.buf == dst.buf && src.off < dst.off + dst.n && dst.off < src.off + dst.n) {
        void *tmp = NULL;
        if (cu_ok(d, "copy", "cudaMalloc", cudaMalloc(&tmp, bytes)) &&
            cu_ok(d, "copy", "cudaMemcpyAsync",
                  cudaMemcpyAsync(tmp, from, bytes, cudaMemcpyDeviceToDevice, c->stream)))
            cu_ok(d, "copy", "cudaMemcpyAsync",
                  cudaMemcpyAsync(to, tmp, bytes, cudaMemcpyDeviceToDevice, c->stream));
        if (tmp)
            cu_ok(d, "copy", "cudaFree", cudaFree(tmp));
        return;
    }
    cu_ok(d, "copy", "cudaMemcpyAsync",
          cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, c->stream));
}

static void cu_synchronize(device *d)
{
    if (!d->failed &&
        cu_ok(d, "synchronize", "cudaStreamSynchronize", cudaStreamSynchronize(CU(d)->stream)))
        cu_check_flag(d, "synchronize");
}

/* what the driver reports in use on the device (every process's), 0 if unknown */
static size_t cu_mem_used(device *d)
{
    size_t free_b = 0, total = 0;
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess)
        return 0;
    (void)d;
    return total - free_b;
}

/* ---- opening ---- */

static device_i cu_table;

static void fill_table(void)
{
    if (cu_table.alloc)
        return;
    cu_table = (device_i){
        .close = cu_close,
        .alloc = cu_alloc,
        .free = cu_free,
        .upload = cu_upload,
        .upload_f64 = cu_upload_f64,
        .upload_i32 = cu_upload_i32,
        .download = cu_download,
        .download_f64 = cu_download_f64,
        .download_i32 = cu_download_i32,
        .zero = cu_zero,
        .copy = cu_copy,
        .synchronize = cu_synchronize,
        .mem_used = cu_mem_used,
    };
    cu_fill_elementwise(&cu_table);
    cu_fill_embedding(&cu_table);
    cu_fill_layernorm(&cu_table);
    cu_fill_gemm(&cu_table);
    cu_fill_attention(&cu_table);
    cu_fill_loss(&cu_table);
    cu_fill_optim(&cu_table);
    cu_fill_dropout(&cu_table);
    cu_fill_rmsnorm(&cu_table);
    cu_fill_silu_mul(&cu_table);
    cu_fill_rope(&cu_table);
    cu_fill_gqa(&cu_table);
    cu_fill_gather(&cu_table);
    cu_fill_topk(&cu_table);
}

static void version_str(int v, char *out, size_t len)
{
    snprintf(out, len, "%d.%d", v / 1000, v % 1000 / 10);
}

/* name, versions and memory of the opened device */
static int identify(device *d, cu_ctx *c, char *err, size_t errlen)
{
    struct cudaDeviceProp p;
    int drv = 0, rt = 0;
    size_t free_b = 0, total = 0;
    cudaError_t e = cudaGetDeviceProperties(&p, c->ordinal);
    if (e == cudaSuccess)
        e = cudaDriverGetVersion(&drv);
    if (e == cudaSuccess)
        e = cudaRuntimeGetVersion(&rt);
    if (e == cudaSuccess)
        e = cudaMemGetInfo(&free_b, &total);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cuda: open: device %d: %s: %s", c->ordinal, cudaGetErrorName(e),
                 cudaGetErrorString(e));
        return 1;
    }
    char dv[32], rv[32];
    version_str(drv, dv, sizeof dv);
    version_str(rt, rv, sizeof rv);
    snprintf(d->name, sizeof d->name, "%.127s", p.name);
    snprintf(d->vendor, sizeof d->vendor, "%s", HARNESS_CUDA_VENDOR);
    snprintf(d->driver_version, sizeof d->driver_version, "%s driver %s", HARNESS_CUDA_BACKEND, dv);
    snprintf(d->runtime_version, sizeof d->runtime_version, "runtime %s, sm_%d%d; %s%s", rv,
             p.major, p.minor, HARNESS_CUDA_BLAS,
#ifdef HARNESS_CUDA_FAULT
             "; FAULT INJECTED in " HARNESS_CUDA_FAULT
#else
             ""
#endif
    );
    d->mem_total = total;
    return 0;
}

/* the first failing setup call, named, into err; 0 when all succeed */
static int setup_failed(cudaError_t e, const char *call, char *err, size_t errlen)
{
    if (e == cudaSuccess)
        return 0;
    snprintf(err, errlen, "cuda: open: %s: %s: %s", call, cudaGetErrorName(e),
             cudaGetErrorString(e));
    return 1;
}

/* stream, events, service buffers and cuBLAS on its fixed workspace; 0, or 1 with err written */
static int setup(device *d, cu_ctx *c, char *err, size_t errlen)
{
    if (setup_failed(cudaSetDevice(c->ordinal), "cudaSetDevice", err, errlen) ||
        identify(d, c, err, errlen) ||
        setup_failed(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking),
                     "cudaStreamCreateWithFlags", err, errlen) ||
        setup_failed(cudaEventCreate(&c->ev_start), "cudaEventCreate", err, errlen) ||
        setup_failed(cudaEventCreate(&c->ev_stop), "cudaEventCreate", err, errlen) ||
        setup_failed(cudaMalloc((void **)&c->flag, sizeof(int)), "cudaMalloc", err, errlen) ||
        setup_failed(cudaMalloc((void **)&c->partial, KERNEL_REDUCE_GROUPS * sizeof(double)),
                     "cudaMalloc", err, errlen) ||
        setup_failed(cudaMalloc(&c->workspace, BLAS_WORKSPACE_BYTES), "cudaMalloc", err,
                     errlen) ||
        setup_failed(cudaMemsetAsync(c->flag, 0, sizeof(int), c->stream), "cudaMemsetAsync",
                     err, errlen) ||
        setup_failed(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize", err, errlen))
        return 1;
    char why[768];
    if (cu_blas_load(why, sizeof why)) {
        snprintf(err, errlen, "cuda: open: %s", why);
        return 1;
    }
    cublasStatus_t s = cu_blas.create(&c->blas);
    const char *call = "cublasCreate";
    if (s == CUBLAS_STATUS_SUCCESS && (call = "cublasSetStream", 1))
        s = cu_blas.set_stream(c->blas, c->stream);
    if (s == CUBLAS_STATUS_SUCCESS && (call = "cublasSetWorkspace", 1))
        s = cu_blas.set_workspace(c->blas, c->workspace, BLAS_WORKSPACE_BYTES);
    /* plain fp32 products (no TF32), as PyTorch's default for float32 matmul */
    if (s == CUBLAS_STATUS_SUCCESS && (call = "cublasSetMathMode", 1))
        s = cu_blas.set_math_mode(c->blas, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuda: open: %s: %s (%d)", call, cu_blas.status_string(s), (int)s);
        return 1;
    }
    return 0;
}

device *cuda_device_open(const char *arg, char *err, size_t errlen)
{
    int ordinal = 0;
    if (cu_select_device(arg, &ordinal, err, errlen))
        return NULL;
    device *d = calloc(1, sizeof *d);
    cu_ctx *c = calloc(1, sizeof *c);
    if (!d || !c) {
        free(d);
        free(c);
        snprintf(err, errlen, "cuda: out of host memory opening the device");
        return NULL;
    }
    fill_table();
    d->ops = &cu_table;
    d->ctx = c;
    c->ordinal = ordinal;
    c->wg = CU_WG;
    snprintf(d->backend, sizeof d->backend, "%s", HARNESS_CUDA_BACKEND);
    snprintf(d->dtype, sizeof d->dtype, "fp32");
    d->real_size = sizeof(float);
    d->round_lowp = cu_round_lowp;
    if (setup(d, c, err, errlen)) {
        cu_close(d);
        return NULL;
    }
#ifdef HARNESS_CUDA_FAULT
    fprintf(stderr, "harness: warning: cuda: this is a fault-injection build: op %s is "
            "deliberately wrong\n", HARNESS_CUDA_FAULT);
#endif
    return d;
}
