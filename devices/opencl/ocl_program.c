/* devices/opencl/ocl_program.c: builds the kernels of devices/kernels/ embedded at build time
 * (dialect.h, devices/philox.h and common.cl first, then every other <name>.cl) into one program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"
#include "opencl_kernels.h"

/* names of the kernel functions, in kernel_id order */
#define KERNEL_NAME(id, name) #name,
static const char *const kernel_names[K_COUNT] = {KERNEL_LIST(KERNEL_NAME)};
#undef KERNEL_NAME

/* where a file goes in the build: the dialect's macros (devices/kernels/dialect.h) first, then
 * the headers shared with the C side (philox.h), then common.cl, then the kernel files */
static int source_rank(const char *name)
{
    size_t n = strlen(name);
    if (strcmp(name, "dialect.h") == 0)
        return 0;
    if (n > 2 && strcmp(name + n - 2, ".h") == 0)
        return 1;
    return strcmp(name, "common.cl") == 0 ? 2 : 3;
}

/* the sources in build order (by rank, then by name as embedded) */
static int source_order(const char **src, size_t *len)
{
    int n = 0;
    for (int rank = 0; rank < 4; rank++)
        for (int i = 0; i < opencl_kernel_file_count; i++) {
            if (source_rank(opencl_kernel_files[i].name) == rank) {
                src[n] = opencl_kernel_files[i].text;
                len[n++] = opencl_kernel_files[i].len;
            }
        }
    return n;
}

/* the compiler's log, trimmed to fit a message */
static void build_log(ocl_ctx *c, char *out, size_t len)
{
    size_t n = 0;
    out[0] = 0;
    if (clGetProgramBuildInfo(c->program, c->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS)
        return;
    char *log = malloc(n + 1);
    if (!log)
        return;
    if (clGetProgramBuildInfo(c->program, c->dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
        log[n] = 0;
        snprintf(out, len, "%s", log);
    }
    free(log);
}

static int create_kernels(ocl_ctx *c, char *err, size_t errlen)
{
    for (int i = 0; i < K_COUNT; i++) {
        cl_int e = CL_SUCCESS;
        c->k[i] = clCreateKernel(c->program, kernel_names[i], &e);
        if (e != CL_SUCCESS) {
            snprintf(err, errlen, "opencl: open: clCreateKernel(%s): %s", kernel_names[i],
                     ocl_err_name(e));
            return 1;
        }
        size_t most = 0;
        e = clGetKernelWorkGroupInfo(c->k[i], c->dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof most, &most,
                                     NULL);
        if (e == CL_SUCCESS && most < c->wg) {
            snprintf(err, errlen, "opencl: open: kernel %s allows work-groups of %zu, the backend "
                     "needs %zu", kernel_names[i], most, c->wg);
            return 1;
        }
    }
    return 0;
}

int ocl_build_program(ocl_ctx *c, char *err, size_t errlen)
{
    const char *src[64];
    size_t len[64];
    if (opencl_kernel_file_count > 64) {
        snprintf(err, errlen, "opencl: open: too many embedded kernel files");
        return 1;
    }
    int n = source_order(src, len);
    cl_int e = CL_SUCCESS;
    c->program = clCreateProgramWithSource(c->ctx, (cl_uint)n, src, len, &e);
    if (e != CL_SUCCESS) {
        snprintf(err, errlen, "opencl: open: clCreateProgramWithSource: %s", ocl_err_name(e));
        return 1;
    }
    char opts[256];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DWG=%zu -DHAVE_FP64=%d -DREDUCE_GROUPS=%d",
             c->wg, c->fp64, OCL_REDUCE_GROUPS);
    e = clBuildProgram(c->program, 1, &c->dev, opts, NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[384];
        build_log(c, log, sizeof log);
        snprintf(err, errlen, "opencl: open: clBuildProgram: %s%s%s", ocl_err_name(e),
                 log[0] ? "\n" : "", log);
        return 1;
    }
    return create_kernels(c, err, errlen);
}

void ocl_release_program(ocl_ctx *c)
{
    for (int i = 0; i < K_COUNT; i++)
        if (c->k[i])
            clReleaseKernel(c->k[i]);
    if (c->program)
        clReleaseProgram(c->program);
}
