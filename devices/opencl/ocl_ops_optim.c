/* devices/opencl/ocl_ops_optim.c: the opencl backend's fused AdamW (one item per parameter) and
 * the sum / sum-of-squares reductions (fixed per-group partials on the device, added in double
 * on the host in a fixed order, so the result repeats bit for bit). */
#include <math.h>
#include <stdio.h>

#include "ocl_internal.h"

static void ocl_adamw(device *d, dten p, dten g, dten m, dten v, int n, double lr, double beta1,
                      double beta2, double eps, double weight_decay, int t)
{
    const char *op = "adamw";
    if (d->failed || !device_dims_ok(d, op, &n, 1, 0) || !device_dims_ok(d, op, &t, 1, 1) ||
        !device_view_ok(d, op, "p", p, (size_t)n, DT_REAL) ||
        !device_view_ok(d, op, "g", g, (size_t)n, DT_REAL) ||
        !device_view_ok(d, op, "m", m, (size_t)n, DT_REAL) ||
        !device_view_ok(d, op, "v", v, (size_t)n, DT_REAL))
        return;
    ocl_ctx *c = OCL(d);
    ocl_op_begin(d);
    double bc1 = 1 - pow(beta1, t), bc2_sqrt = sqrt(1 - pow(beta2, t));
    ocl_args a = {0};
    oa_ten(&a, p);
    oa_ten(&a, g);
    oa_ten(&a, m);
    oa_ten(&a, v);
    oa_int(&a, n);
    oa_acc(&a, c, beta1);
    oa_acc(&a, c, beta2);
    oa_acc(&a, c, eps);
    oa_acc(&a, c, lr / bc1);
    oa_acc(&a, c, 1 - lr * weight_decay);
    oa_acc(&a, c, bc2_sqrt);
    if (ocl_launch(d, op, K_ADAMW, &a, (size_t)n))
        ocl_fault(d, op, p, (size_t)n);
}

static double reduce(device *d, const char *op, dten x, int n, int squares)
{
    if (d->failed || !device_dims_ok(d, op, &n, 1, 0) ||
        !device_view_ok(d, op, "x", x, (size_t)n, DT_REAL))
        return 0;
    ocl_ctx *c = OCL(d);
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, x);
    oa_int(&a, n);
    oa_int(&a, squares);
    oa_mem(&a, c->partial);
    if (!ocl_launch(d, op, K_REDUCE, &a, OCL_REDUCE_GROUPS * c->wg))
        return 0;
    double part[OCL_REDUCE_GROUPS];
    float partf[OCL_REDUCE_GROUPS];
    void *dst = c->fp64 ? (void *)part : (void *)partf;
    size_t bytes = OCL_REDUCE_GROUPS * (c->fp64 ? sizeof(double) : sizeof(float));
    if (!ocl_ok(d, op, "clEnqueueReadBuffer",
                clEnqueueReadBuffer(c->queue, c->partial, CL_TRUE, 0, bytes, dst, 0, NULL, NULL)) ||
        !ocl_check_flag(d, op))
        return 0;
    double s = 0;
    for (int i = 0; i < OCL_REDUCE_GROUPS; i++)
        s += c->fp64 ? part[i] : (double)partf[i];
    return ocl_fault_scalar(op, s);
}

static double ocl_sumsq(device *d, dten x, int n)
{
    return reduce(d, "sumsq", x, n, 1);
}

static double ocl_sum(device *d, dten x, int n)
{
    return reduce(d, "sum", x, n, 0);
}

void ocl_fill_optim(device_i *ops)
{
    ops->adamw = ocl_adamw;
    ops->sumsq = ocl_sumsq;
    ops->sum = ocl_sum;
}
