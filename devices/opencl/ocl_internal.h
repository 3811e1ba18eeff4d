/* devices/opencl/ocl_internal.h: what the opencl backend's files share: the buffer and context
 * structs, the kernel ids, argument packing and launch, view checks, error and fault helpers. */
#ifndef OCL_INTERNAL_H
#define OCL_INTERNAL_H

#include <CL/cl.h>

#include "device.h"
#include "op_checks.h"

/* an opencl buffer: one cl_mem; views carry element offsets that kernels take as arguments */
struct dbuf {
    dbuf_head head;
    cl_mem mem;
};

/* the kernel ids (K_*), the reduce's group count and the error codes (KERR_*) the kernels of
 * devices/kernels/ share with the cuda backend */
#include "kernels/kernel_list.h"
typedef kernel_id ocl_kernel_id;
#define OCL_REDUCE_GROUPS KERNEL_REDUCE_GROUPS

typedef struct {
    cl_platform_id platform;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue queue;
    cl_program program;
    cl_kernel k[K_COUNT];
    size_t wg;          /* the work-group size of every launch (WG in the kernels) */
    int fp64;           /* the device has cl_khr_fp64: kernels accumulate in double */
    cl_ulong max_alloc; /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
    cl_mem flag;        /* one int: the first ERR_* code a kernel raised, 0 if none */
    cl_mem partial;     /* OCL_REDUCE_GROUPS accumulators of sum/sumsq */
    int timing;         /* record op spans (opencl_set_timing) */
    cl_event op_first, op_last;
} ocl_ctx;

#define OCL(d) ((ocl_ctx *)(d)->ctx)

/* ---- errors (ocl_runtime.c) ---- */
const char *ocl_err_name(cl_int err);
/* 1 if err is CL_SUCCESS, else device_fail("opencl: OP: CALL: CL_NAME") and 0 */
int ocl_ok(device *d, const char *op, const char *call, cl_int err);
/* reads the kernels' error flag; on a raised code fails the device naming the op. 0 or 1 */
int ocl_check_flag(device *d, const char *op);


/* ---- kernel arguments and launch ---- */
#define OCL_MAX_ARGS 24
typedef struct {
    int n;
    size_t size[OCL_MAX_ARGS];
    union {
        cl_mem m;
        cl_int i;
        cl_ulong u;
        cl_float f;
        cl_double d;
    } v[OCL_MAX_ARGS];
} ocl_args;

void oa_mem(ocl_args *a, cl_mem m);
void oa_ten(ocl_args *a, dten t); /* the view's buffer, then its element offset (ulong) */
void oa_int(ocl_args *a, int v);
void oa_ulong(ocl_args *a, size_t v);
void oa_float(ocl_args *a, double v);
void oa_acc(ocl_args *a, const ocl_ctx *c, double v); /* double or float as the kernels' acc_t */

/* enqueues kernel k over `items` work-items (rounded up to whole work-groups of c->wg; 0 items
 * enqueue nothing). Returns 1, or 0 after device_fail naming op and the failing call. */
int ocl_launch(device *d, const char *op, ocl_kernel_id k, const ocl_args *a, size_t items);
/* keeps ev as the latest command of the current op (for timing); takes ownership of ev */
void ocl_track_event(device *d, cl_event ev);
/* starts an op: forgets the previous op's events */
void ocl_op_begin(device *d);
/* a marker command that starts the op's span when timing is on (before CLBlast calls) */
void ocl_op_marker(device *d, const char *op);

/* ---- dropout (ocl_ops_dropout.c), also the attention ops' probability dropout ---- */
/* y (+)= dropout(x) over n elements (keep decisions as devices/philox.h draws them); mask, when
 * it has a buffer, gets them. Arguments checked by the caller. 1, or 0 after device_fail */
int ocl_dropout_launch(device *d, const char *op, dten y, dten mask, dten x, size_t n,
                       int accumulate, double p, uint64_t seed, uint32_t step, uint32_t layer,
                       uint32_t site);

/* ---- program (ocl_program.c) ---- */
/* builds the embedded kernels (dialect.h, devices/philox.h, common.cl first) for c->dev and
 * creates every kernel; 0, or 1 with err written */
int ocl_build_program(ocl_ctx *c, char *err, size_t errlen);
void ocl_release_program(ocl_ctx *c);

/* ---- device selection (ocl_select.c) ---- */
/* resolves an opencl device spec argument ("", "N", "P.D", name substring); 0 or 1 + err */
int ocl_select_device(const char *arg, cl_platform_id *platform, cl_device_id *dev, char *err,
                      size_t errlen);

/* ---- the op entries (ocl_ops_*.c) ---- */
void ocl_fill_elementwise(device_i *ops);
void ocl_fill_embedding(device_i *ops);
void ocl_fill_layernorm(device_i *ops);
void ocl_fill_gemm(device_i *ops);
void ocl_fill_attention(device_i *ops);
void ocl_fill_loss(device_i *ops);
void ocl_fill_optim(device_i *ops);
void ocl_fill_dropout(device_i *ops);
void ocl_fill_rmsnorm(device_i *ops);
void ocl_fill_silu_mul(device_i *ops);
void ocl_fill_rope(device_i *ops);
void ocl_fill_gqa(device_i *ops);
void ocl_fill_gather(device_i *ops);
void ocl_fill_topk(device_i *ops);
/* device.round_lowp (ocl_ops_lowp.c) */
void ocl_round_lowp(device *d, dten x, int n, int mode);

/* ---- fault injection (a test-only build: -DHARNESS_OPENCL_FAULT=op) ---- */
#ifdef HARNESS_OPENCL_FAULT
/* adds 1e-3 to the n elements of t when op is the faulty one */
void ocl_fault(device *d, const char *op, dten t, size_t n);
/* the faulty reduction returns v * (1 + 1e-3) */
double ocl_fault_scalar(const char *op, double v);
#else
static inline void ocl_fault(device *d, const char *op, dten t, size_t n)
{
    (void)d, (void)op, (void)t, (void)n;
}
static inline double ocl_fault_scalar(const char *op, double v)
{
    (void)op;
    return v;
}
#endif

#endif
