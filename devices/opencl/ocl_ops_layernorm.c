/* devices/opencl/ocl_ops_layernorm.c: the opencl backend's layernorm, forward (one work-group
 * per row) and backward (dinp per row; dw, db as column sums, one work-group per channel). */
#include "ocl_internal.h"

static void ocl_layernorm_forward(device *d, dten out, dten mean, dten rstd, dten inp, dten w,
                                  dten b, int N, int C, double eps)
{
    const char *op = "layernorm_forward";
    if (!op_layernorm_ok(d, op, inp, out, w, b, mean, rstd, N, C))
        return;
    ocl_ctx *c = OCL(d);
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, out);
    oa_ten(&a, mean);
    oa_ten(&a, rstd);
    oa_ten(&a, inp);
    oa_ten(&a, w);
    oa_ten(&a, b);
    oa_int(&a, C);
    oa_acc(&a, c, eps);
    if (ocl_launch(d, op, K_LAYERNORM_FORWARD, &a, (size_t)N * c->wg))
        ocl_fault(d, op, out, (size_t)N * C);
}

static void ocl_layernorm_backward(device *d, dten dinp, dten dw, dten db, dten dout, dten inp,
                                   dten w, dten mean, dten rstd, int N, int C)
{
    const char *op = "layernorm_backward";
    if (!op_layernorm_backward_ok(d, dinp, dw, db, dout, inp, w, mean, rstd, N, C))
        return;
    ocl_ctx *c = OCL(d);
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, dinp);
    oa_ten(&a, dout);
    oa_ten(&a, inp);
    oa_ten(&a, w);
    oa_ten(&a, mean);
    oa_ten(&a, rstd);
    oa_int(&a, C);
    ocl_args s = {0};
    oa_ten(&s, dw);
    oa_ten(&s, db);
    oa_ten(&s, dout);
    oa_ten(&s, inp);
    oa_ten(&s, mean);
    oa_ten(&s, rstd);
    oa_int(&s, N);
    oa_int(&s, C);
    if (ocl_launch(d, op, K_LAYERNORM_BACKWARD_INP, &a, (size_t)N * c->wg) &&
        (N == 0 || ocl_launch(d, op, K_LAYERNORM_BACKWARD_WB, &s, (size_t)C * c->wg)))
        ocl_fault(d, op, dinp, (size_t)N * C);
}

void ocl_fill_layernorm(device_i *ops)
{
    ops->layernorm_forward = ocl_layernorm_forward;
    ops->layernorm_backward = ocl_layernorm_backward;
}
