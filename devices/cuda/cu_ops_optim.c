/* devices/cuda/cu_ops_optim.c: the cuda backend's fused AdamW (one item per parameter) and
 * the sum / sum-of-squares reductions (fixed per-group partials on the device, added in double
 * on the host in a fixed order, so the result repeats bit for bit). */
#include <math.h>
#include <stdio.h>

#include "cu_internal.h"

static void cu_adamw(device *d, dten p, dten g, dten m, dten v, int n, double lr, double beta1,
                     double beta2, double eps, double weight_decay, int t)
{
    const char *op = "adamw";
    if (d->failed || !device_dims_ok(d, op, &n, 1, 0) || !device_dims_ok(d, op, &t, 1, 1) ||
        !device_view_ok(d, op, "p", p, (size_t)n, DT_REAL) ||
        !device_view_ok(d, op, "g", g, (size_t)n, DT_REAL) ||
        !device_view_ok(d, op, "m", m, (size_t)n, DT_REAL) ||
        !device_view_ok(d, op, "v", v, (size_t)n, DT_REAL))
        return;
    cu_ctx *c = CU(d);
    cu_op_begin(d);
    double bc1 = 1 - pow(beta1, t), bc2_sqrt = sqrt(1 - pow(beta2, t));
    cu_args a = {0};
    ca_ten(&a, p);
    ca_ten(&a, g);
    ca_ten(&a, m);
    ca_ten(&a, v);
    ca_int(&a, n);
    ca_acc(&a, c, beta1);
    ca_acc(&a, c, beta2);
    ca_acc(&a, c, eps);
    ca_acc(&a, c, lr / bc1);
    ca_acc(&a, c, 1 - lr * weight_decay);
    ca_acc(&a, c, bc2_sqrt);
    if (cu_launch(d, op, K_ADAMW, &a, (size_t)n))
        cu_fault(d, op, p, (size_t)n);
}

static double reduce(device *d, const char *op, dten x, int n, int squares)
{
    if (d->failed || !device_dims_ok(d, op, &n, 1, 0) ||
        !device_view_ok(d, op, "x", x, (size_t)n, DT_REAL))
        return 0;
    cu_ctx *c = CU(d);
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, x);
    ca_int(&a, n);
    ca_int(&a, squares);
    ca_ptr(&a, c->partial);
    if (!cu_launch(d, op, K_REDUCE, &a, KERNEL_REDUCE_GROUPS * c->wg))
        return 0;
    double part[KERNEL_REDUCE_GROUPS];
    if (!cu_ok(d, op, "cudaMemcpyAsync",
               cudaMemcpyAsync(part, c->partial, sizeof part, cudaMemcpyDeviceToHost, c->stream)) ||
        !cu_ok(d, op, "cudaStreamSynchronize", cudaStreamSynchronize(c->stream)) ||
        !cu_check_flag(d, op))
        return 0;
    double s = 0;
    for (int i = 0; i < KERNEL_REDUCE_GROUPS; i++)
        s += part[i];
    return cu_fault_scalar(op, s);
}

static double cu_sumsq(device *d, dten x, int n)
{
    return reduce(d, "sumsq", x, n, 1);
}

static double cu_sum(device *d, dten x, int n)
{
    return reduce(d, "sum", x, n, 0);
}

void cu_fill_optim(device_i *ops)
{
    ops->adamw = cu_adamw;
    ops->sumsq = cu_sumsq;
    ops->sum = cu_sum;
}
