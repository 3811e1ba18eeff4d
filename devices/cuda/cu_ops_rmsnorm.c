/* devices/cuda/cu_ops_rmsnorm.c: the cuda backend's RMSNorm, forward (one work-group per
 * row) and backward (dinp per row; dw as column sums, one work-group per channel). */
#include "cu_internal.h"

static void cu_rmsnorm_forward(device *d, dten out, dten rstd, dten inp, dten w, int N, int C,
                               double eps)
{
    const char *op = "rmsnorm_forward";
    if (!op_rmsnorm_ok(d, op, inp, out, w, rstd, N, C))
        return;
    cu_ctx *c = CU(d);
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, out);
    ca_ten(&a, rstd);
    ca_ten(&a, inp);
    ca_ten(&a, w);
    ca_int(&a, C);
    ca_acc(&a, c, eps);
    if (cu_launch(d, op, K_RMSNORM_FORWARD, &a, (size_t)N * c->wg))
        cu_fault(d, op, out, (size_t)N * C);
}

static void cu_rmsnorm_backward(device *d, dten dinp, dten dw, dten dout, dten inp, dten w,
                                dten rstd, int N, int C)
{
    const char *op = "rmsnorm_backward";
    if (!op_rmsnorm_ok(d, op, inp, dout, w, rstd, N, C) ||
        !device_view_ok(d, op, "dinp", dinp, (size_t)N * (size_t)C, DT_REAL) ||
        !device_view_ok(d, op, "dw", dw, (size_t)C, DT_REAL))
        return;
    cu_ctx *c = CU(d);
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, dinp);
    ca_ten(&a, dout);
    ca_ten(&a, inp);
    ca_ten(&a, w);
    ca_ten(&a, rstd);
    ca_int(&a, C);
    cu_args s = {0};
    ca_ten(&s, dw);
    ca_ten(&s, dout);
    ca_ten(&s, inp);
    ca_ten(&s, rstd);
    ca_int(&s, N);
    ca_int(&s, C);
    if (cu_launch(d, op, K_RMSNORM_BACKWARD_INP, &a, (size_t)N * c->wg) &&
        (N == 0 || cu_launch(d, op, K_RMSNORM_BACKWARD_W, &s, (size_t)C * c->wg)))
        cu_fault(d, op, dinp, (size_t)N * C);
}

void cu_fill_rmsnorm(device_i *ops)
{
    ops->rmsnorm_forward = cu_rmsnorm_forward;
    ops->rmsnorm_backward = cu_rmsnorm_backward;
}
