/* devices/opencl/ocl_program.c: builds the OpenCL C kernels embedded at build time (common.cl and
 * devices/philox.h first, then every other kernels/<name>.cl) into one program; creates kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"
#include "opencl_kernels.h"

/* names of the __kernel functions, in ocl_kernel_id order */
static const char *const kernel_names[K_COUNT] = {
    [K_GELU_FORWARD] = "gelu_forward",
    [K_GELU_BACKWARD] = "gelu_backward",
    [K_ADD] = "add",
    [K_ACCUMULATE] = "accumulate",
    [K_SCALE] = "scale",
    [K_FAULT_ADD] = "fault_add",
    [K_BIAS_ADD] = "bias_add",
    [K_BIAS_BACKWARD] = "bias_backward",
    [K_GEMM_SCALE] = "gemm_scale",
    [K_EMBEDDING_FORWARD] = "embedding_forward",
    [K_EMBEDDING_BACKWARD_WTE] = "embedding_backward_wte",
    [K_EMBEDDING_BACKWARD_WPE] = "embedding_backward_wpe",
    [K_LAYERNORM_FORWARD] = "layernorm_forward",
    [K_LAYERNORM_BACKWARD_INP] = "layernorm_backward_inp",
    [K_LAYERNORM_BACKWARD_WB] = "layernorm_backward_wb",
    [K_ATTENTION_SOFTMAX] = "attention_softmax",
    [K_ATTENTION_VALUE] = "attention_value",
    [K_ATTENTION_BACKWARD_DPRE] = "attention_backward_dpre",
    [K_ATTENTION_BACKWARD_DQ] = "attention_backward_dq",
    [K_ATTENTION_BACKWARD_DKV] = "attention_backward_dkv",
    [K_SOFTMAX_XENT_FORWARD] = "softmax_xent_forward",
    [K_SOFTMAX_XENT_BACKWARD] = "softmax_xent_backward",
    [K_ADAMW] = "adamw",
    [K_REDUCE] = "reduce_partial",
    [K_GELU_ERF_FORWARD] = "gelu_erf_forward",
    [K_GELU_ERF_BACKWARD] = "gelu_erf_backward",
    [K_EMBEDDING_TT_FORWARD] = "embedding_tt_forward",
    [K_DROPOUT_APPLY] = "dropout_apply",
    [K_RMSNORM_FORWARD] = "rmsnorm_forward",
    [K_RMSNORM_BACKWARD_INP] = "rmsnorm_backward_inp",
    [K_RMSNORM_BACKWARD_W] = "rmsnorm_backward_w",
    [K_SILU_MUL_FORWARD] = "silu_mul_forward",
    [K_SILU_MUL_BACKWARD] = "silu_mul_backward",
    [K_ROPE_FORWARD] = "rope_forward",
    [K_ROPE_BACKWARD] = "rope_backward",
    [K_GQA_FORWARD] = "gqa_forward",
    [K_GQA_BACKWARD_DQ] = "gqa_backward_dq",
    [K_GQA_BACKWARD_DKV] = "gqa_backward_dkv",
    [K_GATHER_ROWS_FORWARD] = "gather_rows_forward",
    [K_TOPK_ROUTER_FORWARD] = "topk_router_forward",
    [K_TOPK_ROUTER_BACKWARD] = "topk_router_backward",
};

/* a file the kernels build on: common.cl, or a header shared with the C side (philox.h) */
static int is_base_source(const char *name)
{
    size_t n = strlen(name);
    return strcmp(name, "common.cl") == 0 || (n > 2 && strcmp(name + n - 2, ".h") == 0);
}

/* the sources in build order: common.cl and the shared headers (types and helpers the others
 * use, in name order) first */
static int source_order(const char **src, size_t *len)
{
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < opencl_kernel_file_count; i++) {
            int common = is_base_source(opencl_kernel_files[i].name);
            if (common == (pass == 0)) {
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
