/* devices/opencl/ocl_ops_elementwise.c: the opencl backend's elementwise ops (GELU, tanh and erf
 * forms, forward and backward; residual add, accumulate, scale): checks, then one kernel. */
#include "ocl_internal.h"

/* out = f(inp) over n elements with kernel k (n >= 0, both views n reals) */
static void unary_forward(device *d, const char *op, ocl_kernel_id k, dten out, dten inp, int n)
{
    if (!op_elementwise_ok(d, op, n, out, inp, (dten){0}))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, out);
    oa_ten(&a, inp);
    oa_int(&a, n);
    if (ocl_launch(d, op, k, &a, (size_t)n))
        ocl_fault(d, op, out, (size_t)n);
}

/* dinp += f'(inp) dout over n elements with kernel k */
static void unary_backward(device *d, const char *op, ocl_kernel_id k, dten dinp, dten inp,
                           dten dout, int n)
{
    if (!op_elementwise_ok(d, op, n, dinp, inp, dout))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, dinp);
    oa_ten(&a, inp);
    oa_ten(&a, dout);
    oa_int(&a, n);
    if (ocl_launch(d, op, k, &a, (size_t)n))
        ocl_fault(d, op, dinp, (size_t)n);
}

static void ocl_gelu_forward(device *d, dten out, dten inp, int n)
{
    unary_forward(d, "gelu_forward", K_GELU_FORWARD, out, inp, n);
}

static void ocl_gelu_backward(device *d, dten dinp, dten inp, dten dout, int n)
{
    unary_backward(d, "gelu_backward", K_GELU_BACKWARD, dinp, inp, dout, n);
}

static void ocl_gelu_erf_forward(device *d, dten out, dten inp, int n)
{
    unary_forward(d, "gelu_erf_forward", K_GELU_ERF_FORWARD, out, inp, n);
}

static void ocl_gelu_erf_backward(device *d, dten dinp, dten inp, dten dout, int n)
{
    unary_backward(d, "gelu_erf_backward", K_GELU_ERF_BACKWARD, dinp, inp, dout, n);
}

static void ocl_add(device *d, dten out, dten x, dten y, int n)
{
    const char *op = "add";
    if (!op_elementwise_ok(d, op, n, out, x, y))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, out);
    oa_ten(&a, x);
    oa_ten(&a, y);
    oa_int(&a, n);
    if (ocl_launch(d, op, K_ADD, &a, (size_t)n))
        ocl_fault(d, op, out, (size_t)n);
}

static void ocl_accumulate(device *d, dten dst, dten src, int n)
{
    const char *op = "accumulate";
    if (!op_elementwise_ok(d, op, n, dst, src, (dten){0}))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, dst);
    oa_ten(&a, src);
    oa_int(&a, n);
    if (ocl_launch(d, op, K_ACCUMULATE, &a, (size_t)n))
        ocl_fault(d, op, dst, (size_t)n);
}

static void ocl_scale(device *d, dten x, double s, int n)
{
    const char *op = "scale";
    if (!op_elementwise_ok(d, op, n, x, x, (dten){0}))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, x);
    oa_float(&a, s);
    oa_int(&a, n);
    if (ocl_launch(d, op, K_SCALE, &a, (size_t)n))
        ocl_fault(d, op, x, (size_t)n);
}

void ocl_fill_elementwise(device_i *ops)
{
    ops->gelu_forward = ocl_gelu_forward;
    ops->gelu_backward = ocl_gelu_backward;
    ops->gelu_erf_forward = ocl_gelu_erf_forward;
    ops->gelu_erf_backward = ocl_gelu_erf_backward;
    ops->add = ocl_add;
    ops->accumulate = ocl_accumulate;
    ops->scale = ocl_scale;
}
