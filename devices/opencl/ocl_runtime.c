/* devices/opencl/ocl_runtime.c: the opencl backend's plumbing: CL error names, checked calls,
 * view checks, kernel argument packing and launch, op timing events, the error flag, faults. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"
#include "opencl.h"

#define NAME(x) \
    case x:     \
        return #x

const char *ocl_err_name(cl_int err)
{
    switch (err) {
        NAME(CL_SUCCESS);
        NAME(CL_DEVICE_NOT_FOUND);
        NAME(CL_DEVICE_NOT_AVAILABLE);
        NAME(CL_COMPILER_NOT_AVAILABLE);
        NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE);
        NAME(CL_OUT_OF_RESOURCES);
        NAME(CL_OUT_OF_HOST_MEMORY);
        NAME(CL_PROFILING_INFO_NOT_AVAILABLE);
        NAME(CL_MEM_COPY_OVERLAP);
        NAME(CL_IMAGE_FORMAT_MISMATCH);
        NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED);
        NAME(CL_BUILD_PROGRAM_FAILURE);
        NAME(CL_MAP_FAILURE);
        NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET);
        NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
        NAME(CL_COMPILE_PROGRAM_FAILURE);
        NAME(CL_LINKER_NOT_AVAILABLE);
        NAME(CL_LINK_PROGRAM_FAILURE);
        NAME(CL_DEVICE_PARTITION_FAILED);
        NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
        NAME(CL_INVALID_VALUE);
        NAME(CL_INVALID_DEVICE_TYPE);
        NAME(CL_INVALID_PLATFORM);
        NAME(CL_INVALID_DEVICE);
        NAME(CL_INVALID_CONTEXT);
        NAME(CL_INVALID_QUEUE_PROPERTIES);
        NAME(CL_INVALID_COMMAND_QUEUE);
        NAME(CL_INVALID_HOST_PTR);
        NAME(CL_INVALID_MEM_OBJECT);
        NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
        NAME(CL_INVALID_IMAGE_SIZE);
        NAME(CL_INVALID_SAMPLER);
        NAME(CL_INVALID_BINARY);
        NAME(CL_INVALID_BUILD_OPTIONS);
        NAME(CL_INVALID_PROGRAM);
        NAME(CL_INVALID_PROGRAM_EXECUTABLE);
        NAME(CL_INVALID_KERNEL_NAME);
        NAME(CL_INVALID_KERNEL_DEFINITION);
        NAME(CL_INVALID_KERNEL);
        NAME(CL_INVALID_ARG_INDEX);
        NAME(CL_INVALID_ARG_VALUE);
        NAME(CL_INVALID_ARG_SIZE);
        NAME(CL_INVALID_KERNEL_ARGS);
        NAME(CL_INVALID_WORK_DIMENSION);
        NAME(CL_INVALID_WORK_GROUP_SIZE);
        NAME(CL_INVALID_WORK_ITEM_SIZE);
        NAME(CL_INVALID_GLOBAL_OFFSET);
        NAME(CL_INVALID_EVENT_WAIT_LIST);
        NAME(CL_INVALID_EVENT);
        NAME(CL_INVALID_OPERATION);
        NAME(CL_INVALID_GL_OBJECT);
        NAME(CL_INVALID_BUFFER_SIZE);
        NAME(CL_INVALID_MIP_LEVEL);
        NAME(CL_INVALID_GLOBAL_WORK_SIZE);
        NAME(CL_INVALID_PROPERTY);
        NAME(CL_INVALID_IMAGE_DESCRIPTOR);
        NAME(CL_INVALID_COMPILER_OPTIONS);
        NAME(CL_INVALID_LINKER_OPTIONS);
        NAME(CL_INVALID_DEVICE_PARTITION_COUNT);
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
        return "unknown OpenCL error";
    }
}

int ocl_ok(device *d, const char *op, const char *call, cl_int err)
{
    if (err == CL_SUCCESS)
        return 1;
    const char *name = ocl_err_name(err);
    if (strcmp(name, "unknown OpenCL error") != 0)
        device_fail(d, "opencl: %s: %s: %s", op, call, name);
    else
        device_fail(d, "opencl: %s: %s: OpenCL error %d", op, call, (int)err);
    return 0;
}

int ocl_check_flag(device *d, const char *op)
{
    ocl_ctx *c = OCL(d);
    cl_int code = 0;
    cl_int err = clEnqueueReadBuffer(c->queue, c->flag, CL_TRUE, 0, sizeof code, &code, 0, NULL,
                                     NULL);
    if (!ocl_ok(d, op, "clEnqueueReadBuffer (error flag)", err))
        return 0;
    if (code == 0)
        return 1;
    device_fail(d, "opencl: %s (found at %s)", kernel_error_message(code), op);
    return 0;
}

/* ---- arguments ---- */

void oa_mem(ocl_args *a, cl_mem m)
{
    a->v[a->n].m = m;
    a->size[a->n++] = sizeof(cl_mem);
}

void oa_ten(ocl_args *a, dten t)
{
    oa_mem(a, t.buf->mem);
    oa_ulong(a, t.off);
}

void oa_int(ocl_args *a, int v)
{
    a->v[a->n].i = v;
    a->size[a->n++] = sizeof(cl_int);
}

void oa_ulong(ocl_args *a, size_t v)
{
    a->v[a->n].u = v;
    a->size[a->n++] = sizeof(cl_ulong);
}

void oa_float(ocl_args *a, double v)
{
    a->v[a->n].f = (cl_float)v;
    a->size[a->n++] = sizeof(cl_float);
}

void oa_acc(ocl_args *a, const ocl_ctx *c, double v)
{
    if (c->fp64) {
        a->v[a->n].d = v;
        a->size[a->n++] = sizeof(cl_double);
    } else {
        oa_float(a, v);
    }
}

/* ---- launch and timing ---- */

void ocl_track_event(device *d, cl_event ev)
{
    ocl_ctx *c = OCL(d);
    if (!c->op_first) {
        clRetainEvent(ev);
        c->op_first = ev;
    }
    if (c->op_last)
        clReleaseEvent(c->op_last);
    c->op_last = ev;
}

void ocl_op_begin(device *d)
{
    ocl_ctx *c = OCL(d);
    if (c->op_first)
        clReleaseEvent(c->op_first);
    if (c->op_last)
        clReleaseEvent(c->op_last);
    c->op_first = c->op_last = NULL;
}

void ocl_op_marker(device *d, const char *op)
{
    ocl_ctx *c = OCL(d);
    if (!c->timing)
        return;
    cl_event ev = NULL;
    if (ocl_ok(d, op, "clEnqueueMarkerWithWaitList",
               clEnqueueMarkerWithWaitList(c->queue, 0, NULL, &ev)))
        ocl_track_event(d, ev);
}

int ocl_launch(device *d, const char *op, ocl_kernel_id k, const ocl_args *a, size_t items)
{
    ocl_ctx *c = OCL(d);
    if (items == 0)
        return 1;
    cl_kernel kern = c->k[k];
    for (int i = 0; i < a->n; i++) {
        if (!ocl_ok(d, op, "clSetKernelArg", clSetKernelArg(kern, (cl_uint)i, a->size[i], &a->v[i])))
            return 0;
    }
    size_t local = c->wg, global = (items + local - 1) / local * local;
    cl_event ev = NULL;
    cl_int err = clEnqueueNDRangeKernel(c->queue, kern, 1, NULL, &global, &local, 0, NULL, &ev);
    if (!ocl_ok(d, op, "clEnqueueNDRangeKernel", err))
        return 0;
    ocl_track_event(d, ev);
    return 1;
}

static cl_ulong event_time(cl_event ev, cl_profiling_info what)
{
    cl_ulong t = 0;
    if (clGetEventProfilingInfo(ev, what, sizeof t, &t, NULL) != CL_SUCCESS)
        return 0;
    return t;
}

void opencl_set_timing(device *d, int on)
{
    if (d && strcmp(d->backend, "opencl") == 0)
        OCL(d)->timing = on;
}

double opencl_last_op_ns(device *d)
{
    if (!d || strcmp(d->backend, "opencl") != 0 || d->failed)
        return -1;
    ocl_ctx *c = OCL(d);
    if (!c->op_first || !c->op_last || clWaitForEvents(1, &c->op_last) != CL_SUCCESS)
        return -1;
    cl_ulong start = event_time(c->op_first, CL_PROFILING_COMMAND_START);
    cl_ulong end = event_time(c->op_last, CL_PROFILING_COMMAND_END);
    return start && end >= start ? (double)(end - start) : -1;
}

/* ---- fault injection ---- */
#ifdef HARNESS_OPENCL_FAULT
/* what the wrong op adds (relative, for a scalar result): 1e-3, or HARNESS_OPENCL_FAULT_SIZE (a
 * finite number; tests use 1e-2, one bf16 ulp at 1, where 1e-3 drowns in bf16's rounding) */
static double fault_delta(void)
{
    const char *e = getenv("HARNESS_OPENCL_FAULT_SIZE");
    char *end;
    double v = e && *e ? strtod(e, &end) : 1e-3;
    return e && *e && (*end || !isfinite(v)) ? 1e-3 : v;
}
#define FAULT_DELTA fault_delta()

void ocl_fault(device *d, const char *op, dten t, size_t n)
{
    if (d->failed || strcmp(op, HARNESS_OPENCL_FAULT) != 0)
        return;
    ocl_args a = {0};
    oa_ten(&a, t);
    oa_ulong(&a, n);
    oa_float(&a, FAULT_DELTA);
    ocl_launch(d, op, K_FAULT_ADD, &a, n);
}

double ocl_fault_scalar(const char *op, double v)
{
    return strcmp(op, HARNESS_OPENCL_FAULT) == 0 ? v * (1 + FAULT_DELTA) : v;
}
#endif
