/* devices/cuda/cu_ops_layernorm.c: the cuda backend's layernorm, forward (one work-group
 * per row) and backward (dinp per row; dw, db as column sums, one work-group per channel). */
#include "cu_internal.h"

static void cu_layernorm_forward(device *d, dten out, dten mean, dten rstd, dten inp, dten w,
                                 dten b, int N, int C, double eps)
{
    const char *op = "layernorm_forward";
    if (!op_layernorm_ok(d, op, inp, out, w, b, mean, rstd, N, C))
        return;
    cu_ctx *c = CU(d);
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, out);
    ca_ten(&a, mean);
    ca_ten(&a, rstd);
    ca_ten(&a, inp);
    ca_ten(&a, w);
    ca_ten(&a, b);
    ca_int(&a, C);
    ca_acc(&a, c, eps);
    if (cu_launch(d, op, K_LAYERNORM_FORWARD, &a, (size_t)N * c->wg))
        cu_fault(d, op, out, (size_t)N * C);
}

static void cu_layernorm_backward(device *d, dten dinp, dten dw, dten db, dten dout, dten inp,
                                  dten w, dten mean, dten rstd, int N, int C)
{
    const char *op = "layernorm_backward";
    if (!op_layernorm_backward_ok(d, dinp, dw, db, dout, inp, w, mean, rstd, N, C))
        return;
    cu_ctx *c = CU(d);
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, dinp);
    ca_ten(&a, dout);
    ca_ten(&a, inp);
    ca_ten(&a, w);
    ca_ten(&a, mean);
    ca_ten(&a, rstd);
    ca_int(&a, C);
    cu_args s = {0};
    ca_ten(&s, dw);
    ca_ten(&s, db);
    ca_ten(&s, dout);
    ca_ten(&s, inp);
    ca_ten(&s, mean);
    ca_ten(&s, rstd);
    ca_int(&s, N);
    ca_int(&s, C);
    if (cu_launch(d, op, K_LAYERNORM_BACKWARD_INP, &a, (size_t)N * c->wg) &&
        (N == 0 || cu_launch(d, op, K_LAYERNORM_BACKWARD_WB, &s, (size_t)C * c->wg)))
        cu_fault(d, op, dinp, (size_t)N * C);
}

void cu_fill_layernorm(device_i *ops)
{
    ops->layernorm_forward = cu_layernorm_forward;
    ops->layernorm_backward = cu_layernorm_backward;
}
