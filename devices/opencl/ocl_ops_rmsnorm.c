/* devices/opencl/ocl_ops_rmsnorm.c: the opencl backend's RMSNorm, forward (one work-group per
 * row) and backward (dinp per row; dw as column sums, one work-group per channel). */
#include "ocl_internal.h"

static void ocl_rmsnorm_forward(device *d, dten out, dten rstd, dten inp, dten w, int N, int C,
                                double eps)
{
    const char *op = "rmsnorm_forward";
    if (!op_rmsnorm_ok(d, op, inp, out, w, rstd, N, C))
        return;
    ocl_ctx *c = OCL(d);
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, out);
    oa_ten(&a, rstd);
    oa_ten(&a, inp);
    oa_ten(&a, w);
    oa_int(&a, C);
    oa_acc(&a, c, eps);
    if (ocl_launch(d, op, K_RMSNORM_FORWARD, &a, (size_t)N * c->wg))
        ocl_fault(d, op, out, (size_t)N * C);
}

static void ocl_rmsnorm_backward(device *d, dten dinp, dten dw, dten dout, dten inp, dten w,
                                 dten rstd, int N, int C)
{
    const char *op = "rmsnorm_backward";
    if (!op_rmsnorm_ok(d, op, inp, dout, w, rstd, N, C) ||
        !device_view_ok(d, op, "dinp", dinp, (size_t)N * (size_t)C, DT_REAL) ||
        !device_view_ok(d, op, "dw", dw, (size_t)C, DT_REAL))
        return;
    ocl_ctx *c = OCL(d);
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, dinp);
    oa_ten(&a, dout);
    oa_ten(&a, inp);
    oa_ten(&a, w);
    oa_ten(&a, rstd);
    oa_int(&a, C);
    ocl_args s = {0};
    oa_ten(&s, dw);
    oa_ten(&s, dout);
    oa_ten(&s, inp);
    oa_ten(&s, rstd);
    oa_int(&s, N);
    oa_int(&s, C);
    if (ocl_launch(d, op, K_RMSNORM_BACKWARD_INP, &a, (size_t)N * c->wg) &&
        (N == 0 || ocl_launch(d, op, K_RMSNORM_BACKWARD_W, &s, (size_t)C * c->wg)))
        ocl_fault(d, op, dinp, (size_t)N * C);
}

void ocl_fill_rmsnorm(device_i *ops)
{
    ops->rmsnorm_forward = ocl_rmsnorm_forward;
    ops->rmsnorm_backward = ocl_rmsnorm_backward;
}
