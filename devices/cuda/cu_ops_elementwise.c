/* devices/cuda/cu_ops_elementwise.c: the cuda backend's elementwise ops (GELU, tanh and erf
 * forms, forward and backward; residual add, accumulate, scale): checks, then one kernel. */
#include "cu_internal.h"

/* out = f(inp) over n elements with kernel k (n >= 0, both views n reals) */
static void unary_forward(device *d, const char *op, cu_kernel_id k, dten out, dten inp, int n)
{
    if (!op_elementwise_ok(d, op, n, out, inp, (dten){0}))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, out);
    ca_ten(&a, inp);
    ca_int(&a, n);
    if (cu_launch(d, op, k, &a, (size_t)n))
        cu_fault(d, op, out, (size_t)n);
}

/* dinp += f'(inp) dout over n elements with kernel k */
static void unary_backward(device *d, const char *op, cu_kernel_id k, dten dinp, dten inp,
                           dten dout, int n)
{
    if (!op_elementwise_ok(d, op, n, dinp, inp, dout))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, dinp);
    ca_ten(&a, inp);
    ca_ten(&a, dout);
    ca_int(&a, n);
    if (cu_launch(d, op, k, &a, (size_t)n))
        cu_fault(d, op, dinp, (size_t)n);
}

static void cu_gelu_forward(device *d, dten out, dten inp, int n)
{
    unary_forward(d, "gelu_forward", K_GELU_FORWARD, out, inp, n);
}

static void cu_gelu_backward(device *d, dten dinp, dten inp, dten dout, int n)
{
    unary_backward(d, "gelu_backward", K_GELU_BACKWARD, dinp, inp, dout, n);
}

static void cu_gelu_erf_forward(device *d, dten out, dten inp, int n)
{
    unary_forward(d, "gelu_erf_forward", K_GELU_ERF_FORWARD, out, inp, n);
}

static void cu_gelu_erf_backward(device *d, dten dinp, dten inp, dten dout, int n)
{
    unary_backward(d, "gelu_erf_backward", K_GELU_ERF_BACKWARD, dinp, inp, dout, n);
}

static void cu_add(device *d, dten out, dten x, dten y, int n)
{
    const char *op = "add";
    if (!op_elementwise_ok(d, op, n, out, x, y))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, out);
    ca_ten(&a, x);
    ca_ten(&a, y);
    ca_int(&a, n);
    if (cu_launch(d, op, K_ADD, &a, (size_t)n))
        cu_fault(d, op, out, (size_t)n);
}

static void cu_accumulate(device *d, dten dst, dten src, int n)
{
    const char *op = "accumulate";
    if (!op_elementwise_ok(d, op, n, dst, src, (dten){0}))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, dst);
    ca_ten(&a, src);
    ca_int(&a, n);
    if (cu_launch(d, op, K_ACCUMULATE, &a, (size_t)n))
        cu_fault(d, op, dst, (size_t)n);
}

static void cu_scale(device *d, dten x, double s, int n)
{
    const char *op = "scale";
    if (!op_elementwise_ok(d, op, n, x, x, (dten){0}))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, x);
    ca_float(&a, s);
    ca_int(&a, n);
    if (cu_launch(d, op, K_SCALE, &a, (size_t)n))
        cu_fault(d, op, x, (size_t)n);
}

void cu_fill_elementwise(device_i *ops)
{
    ops->gelu_forward = cu_gelu_forward;
    ops->gelu_backward = cu_gelu_backward;
    ops->gelu_erf_forward = cu_gelu_erf_forward;
    ops->gelu_erf_backward = cu_gelu_erf_backward;
    ops->add = cu_add;
    ops->accumulate = cu_accumulate;
    ops->scale = cu_scale;
}
