/* devices/opencl/ocl_backend.c: the opencl device: opening (context, profiling queue, embedded
 * kernels), identity and memory figures, buffers, host transfers, zero, copy, synchronize. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "ocl_internal.h"
#include "opencl.h"

#define PREFERRED_WG 64

device *opencl_device_open(const char *arg, char *err, size_t errlen);

static void ocl_close(device *d)
{
    ocl_ctx *c = OCL(d);
    if (c) {
        if (c->queue)
            clFinish(c->queue);
        ocl_op_begin(d);
        if (c->flag)
            clReleaseMemObject(c->flag);
        if (c->partial)
            clReleaseMemObject(c->partial);
        ocl_release_program(c);
        if (c->queue)
            clReleaseCommandQueue(c->queue);
        if (c->ctx)
            clReleaseContext(c->ctx);
        free(c);
        /* CLBlast's program cache retains the context; let it go (a device opened later
         * rebuilds from PoCL's or the driver's own cache) */
        CLBlastClearCache();
    }
    free(d);
}

/* ---- buffers ---- */

static size_t esize(const device *d, dkind kind)
{
    return kind == DT_I32 ? sizeof(cl_int) : d->real_size;
}

static dbuf *ocl_alloc(device *d, size_t n, dkind kind)
{
    ocl_ctx *c = OCL(d);
    size_t bytes = (n ? n : 1) * esize(d, kind);
    if (bytes > c->max_alloc) {
        device_fail(d, "opencl: alloc: %zu bytes exceed the device's largest allocation "
                    "(CL_DEVICE_MAX_MEM_ALLOC_SIZE = %llu)", bytes, (unsigned long long)c->max_alloc);
        return NULL;
    }
    dbuf *b = calloc(1, sizeof *b);
    if (!b) {
        device_fail(d, "opencl: alloc: out of host memory");
        return NULL;
    }
    cl_int e = CL_SUCCESS;
    b->mem = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
    cl_int zero = 0;
    if (!ocl_ok(d, "alloc", "clCreateBuffer", e) ||
        !ocl_ok(d, "alloc", "clEnqueueFillBuffer",
                clEnqueueFillBuffer(c->queue, b->mem, &zero, sizeof zero, 0, bytes, 0, NULL, NULL))) {
        if (b->mem)
            clReleaseMemObject(b->mem);
        free(b);
        return NULL;
    }
    return b;
}

static void ocl_free(device *d, dbuf *b)
{
    (void)d;
    clReleaseMemObject(b->mem);
    free(b);
}

/* ---- host transfers: blocking, so the host array may be reused when they return ---- */

static void write_bytes(device *d, const char *op, dten t, const void *src)
{
    size_t es = esize(d, t.buf->head.kind);
    if (t.n)
        ocl_ok(d, op, "clEnqueueWriteBuffer",
               clEnqueueWriteBuffer(OCL(d)->queue, t.buf->mem, CL_TRUE, t.off * es, t.n * es, src,
                                    0, NULL, NULL));
}

static int read_bytes(device *d, const char *op, void *dst, dten t)
{
    size_t es = esize(d, t.buf->head.kind);
    if (t.n && !ocl_ok(d, op, "clEnqueueReadBuffer",
                       clEnqueueReadBuffer(OCL(d)->queue, t.buf->mem, CL_TRUE, t.off * es,
                                           t.n * es, dst, 0, NULL, NULL)))
        return 0;
    if (!d->failed) /* a bad token or target found by a kernel fails the device here */
        ocl_check_flag(d, op);
    return 1;
}

static void ocl_upload(device *d, dten dst, const float *src)
{
    if (!d->failed && device_view_ok(d, "upload", "dst", dst, 0, DT_REAL))
        write_bytes(d, "upload", dst, src);
}

static void ocl_upload_i32(device *d, dten dst, const int32_t *src)
{
    if (!d->failed && device_view_ok(d, "upload_i32", "dst", dst, 0, DT_I32))
        write_bytes(d, "upload_i32", dst, src);
}

static void ocl_upload_f64(device *d, dten dst, const double *src)
{
    if (d->failed || !device_view_ok(d, "upload_f64", "dst", dst, 0, DT_REAL))
        return;
    float *tmp = malloc((dst.n ? dst.n : 1) * sizeof *tmp);
    if (!tmp) {
        device_fail(d, "opencl: upload_f64: out of host memory for %zu elements", dst.n);
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

static void ocl_download(device *d, float *dst, dten src)
{
    if (!device_view_ok(d, "download", "src", src, 0, DT_REAL) ||
        !read_bytes(d, "download", dst, src))
        poison(dst, NULL, NULL, src.n);
}

static void ocl_download_i32(device *d, int32_t *dst, dten src)
{
    if (!device_view_ok(d, "download_i32", "src", src, 0, DT_I32) ||
        !read_bytes(d, "download_i32", dst, src))
        poison(NULL, NULL, dst, src.n);
}

static void ocl_download_f64(device *d, double *dst, dten src)
{
    float *tmp = malloc((src.n ? src.n : 1) * sizeof *tmp);
    if (!tmp)
        device_fail(d, "opencl: download_f64: out of host memory for %zu elements", src.n);
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

static void ocl_zero(device *d, dten t)
{
    if (d->failed || !t.buf || !device_view_ok(d, "zero", "t", t, 0, t.buf->head.kind) || !t.n)
        return;
    size_t es = esize(d, t.buf->head.kind);
    cl_int zero = 0;
    ocl_ok(d, "zero", "clEnqueueFillBuffer",
           clEnqueueFillBuffer(OCL(d)->queue, t.buf->mem, &zero, es, t.off * es, t.n * es, 0, NULL,
                               NULL));
}

/* overlapping ranges of one buffer go through a temporary buffer (clEnqueueCopyBuffer refuses) */
static void copy_overlapping(device *d, dten dst, dten src, size_t es)
{
    ocl_ctx *c = OCL(d);
    cl_int e = CL_SUCCESS;
    cl_mem tmp = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, src.n * es, NULL, &e);
    if (ocl_ok(d, "copy", "clCreateBuffer", e) &&
        ocl_ok(d, "copy", "clEnqueueCopyBuffer",
               clEnqueueCopyBuffer(c->queue, src.buf->mem, tmp, src.off * es, 0, src.n * es, 0, NULL,
                                   NULL)))
        ocl_ok(d, "copy", "clEnqueueCopyBuffer",
               clEnqueueCopyBuffer(c->queue, tmp, dst.buf->mem, 0, dst.off * es, dst.n * es, 0,
                                   NULL, NULL));
    if (tmp)
        clReleaseMemObject(tmp);
}

static void ocl_copy(device *d, dten dst, dten src)
{
    if (d->failed || !dst.buf || !device_view_ok(d, "copy", "dst", dst, 0, dst.buf->head.kind) ||
        !device_view_ok(d, "copy", "src", src, dst.n, dst.buf->head.kind) || !dst.n)
        return;
    size_t es = esize(d, dst.buf->head.kind);
    if (src.buf == dst.buf && src.off == dst.off)
        return;
    if (src.buf == dst.buf && src.off < dst.off + dst.n && dst.off < src.off + dst.n) {
        src.n = dst.n;
        copy_overlapping(d, dst, src, es);
        return;
    }
    ocl_ok(d, "copy", "clEnqueueCopyBuffer",
           clEnqueueCopyBuffer(OCL(d)->queue, src.buf->mem, dst.buf->mem, src.off * es,
                               dst.off * es, dst.n * es, 0, NULL, NULL));
}

static void ocl_synchronize(device *d)
{
    if (!d->failed && ocl_ok(d, "synchronize", "clFinish", clFinish(OCL(d)->queue)))
        ocl_check_flag(d, "synchronize");
}

/* OpenCL has no portable query of used device memory: the harness's own live bytes */
static size_t ocl_mem_used(device *d)
{
    return d->mem_current;
}

/* ---- opening ---- */

static void info_str(cl_device_id dev, cl_device_info what, char *out, size_t len)
{
    if (clGetDeviceInfo(dev, what, len, out, NULL) != CL_SUCCESS)
        snprintf(out, len, "unknown");
}

static int query_device(device *d, ocl_ctx *c)
{
    char plat[DEVICE_STR] = "";
    info_str(c->dev, CL_DEVICE_NAME, d->name, sizeof d->name);
    info_str(c->dev, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
    info_str(c->dev, CL_DRIVER_VERSION, d->driver_version, sizeof d->driver_version);
    if (clGetPlatformInfo(c->platform, CL_PLATFORM_VERSION, sizeof plat, plat, NULL) != CL_SUCCESS)
        snprintf(plat, sizeof plat, "unknown platform");
    snprintf(d->runtime_version, sizeof d->runtime_version, "%.80s; CLBlast%s", plat,
#ifdef HARNESS_OPENCL_FAULT
             "; FAULT INJECTED in " HARNESS_OPENCL_FAULT
#else
             ""
#endif
    );
    cl_ulong mem = 0;
    size_t wg = 0;
    cl_device_fp_config fp64 = 0;
    if (clGetDeviceInfo(c->dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL) ||
        clGetDeviceInfo(c->dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof c->max_alloc, &c->max_alloc,
                        NULL) ||
        clGetDeviceInfo(c->dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL))
        return 1;
    if (clGetDeviceInfo(c->dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL))
        fp64 = 0;
    d->mem_total = (size_t)mem;
    /* HARNESS_OPENCL_NO_FP64=1 takes the float-accumulator path of devices without fp64 */
    const char *no64 = getenv("HARNESS_OPENCL_NO_FP64");
    c->fp64 = fp64 != 0 && !(no64 && strcmp(no64, "1") == 0);
    for (c->wg = PREFERRED_WG; c->wg > wg; c->wg /= 2)
        ;
    return c->wg < 1;
}

static device_i ocl_table;

static void fill_table(void)
{
    if (ocl_table.alloc)
        return;
    ocl_table = (device_i){
        .close = ocl_close,
        .alloc = ocl_alloc,
        .free = ocl_free,
        .upload = ocl_upload,
        .upload_f64 = ocl_upload_f64,
        .upload_i32 = ocl_upload_i32,
        .download = ocl_download,
        .download_f64 = ocl_download_f64,
        .download_i32 = ocl_download_i32,
        .zero = ocl_zero,
        .copy = ocl_copy,
        .synchronize = ocl_synchronize,
        .mem_used = ocl_mem_used,
    };
    ocl_fill_elementwise(&ocl_table);
    ocl_fill_embedding(&ocl_table);
    ocl_fill_layernorm(&ocl_table);
    ocl_fill_gemm(&ocl_table);
    ocl_fill_attention(&ocl_table);
    ocl_fill_loss(&ocl_table);
    ocl_fill_optim(&ocl_table);
    ocl_fill_dropout(&ocl_table);
    ocl_fill_rmsnorm(&ocl_table);
    ocl_fill_silu_mul(&ocl_table);
    ocl_fill_rope(&ocl_table);
    ocl_fill_gqa(&ocl_table);
    ocl_fill_gather(&ocl_table);
    ocl_fill_topk(&ocl_table);
}

/* context, queue, program and the two small service buffers; 0, or 1 with err written */
static int setup(device *d, ocl_ctx *c, char *err, size_t errlen)
{
    cl_int e = CL_SUCCESS;
    c->ctx = clCreateContext(NULL, 1, &c->dev, NULL, NULL, &e);
    if (e == CL_SUCCESS)
        c->queue = clCreateCommandQueue(c->ctx, c->dev, CL_QUEUE_PROFILING_ENABLE, &e);
    if (e != CL_SUCCESS) {
        snprintf(err, errlen, "opencl: open: %s: %s", c->ctx ? "clCreateCommandQueue" :
                 "clCreateContext", ocl_err_name(e));
        return 1;
    }
    if (query_device(d, c)) {
        snprintf(err, errlen, "opencl: open: clGetDeviceInfo failed for %s", d->name);
        return 1;
    }
    if (ocl_build_program(c, err, errlen))
        return 1;
    size_t acc = c->fp64 ? sizeof(cl_double) : sizeof(cl_float);
    c->flag = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, sizeof(cl_int), NULL, &e);
    if (e == CL_SUCCESS)
        c->partial = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, OCL_REDUCE_GROUPS * acc, NULL, &e);
    cl_int zero = 0;
    if (e == CL_SUCCESS)
        e = clEnqueueWriteBuffer(c->queue, c->flag, CL_TRUE, 0, sizeof zero, &zero, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        snprintf(err, errlen, "opencl: open: service buffers: %s", ocl_err_name(e));
        return 1;
    }
    return 0;
}

device *opencl_device_open(const char *arg, char *err, size_t errlen)
{
    cl_platform_id platform;
    cl_device_id dev;
    if (ocl_select_device(arg, &platform, &dev, err, errlen))
        return NULL;
    device *d = calloc(1, sizeof *d);
    ocl_ctx *c = calloc(1, sizeof *c);
    if (!d || !c) {
        free(d);
        free(c);
        snprintf(err, errlen, "opencl: out of host memory opening the device");
        return NULL;
    }
    fill_table();
    d->ops = &ocl_table;
    d->ctx = c;
    c->platform = platform;
    c->dev = dev;
    snprintf(d->backend, sizeof d->backend, "opencl");
    snprintf(d->dtype, sizeof d->dtype, "fp32");
    d->real_size = sizeof(cl_float);
    d->round_lowp = ocl_round_lowp;
    if (setup(d, c, err, errlen)) {
        ocl_close(d);
        return NULL;
    }
#ifdef HARNESS_OPENCL_FAULT
    fprintf(stderr, "harness: warning: opencl: this is a fault-injection build: op %s is "
            "deliberately wrong\n", HARNESS_OPENCL_FAULT);
#endif
    return d;
}
