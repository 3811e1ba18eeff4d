/* devices/opencl/ocl_ops_elementwise.c: the opencl backend's elementwise ops (GELU forward and
 * backward, residual add, accumulate, scale): checks, then one kernel over n elements. */
#include "ocl_internal.h"

/* n >= 0 and every given view holds n reals (c may be absent) */
static void ocl_gelu_forward(device *d, dten out, dten inp, int n)
{
    const char *op = "gelu_forward";
    if (!op_elementwise_ok(d, op, n, out, inp, (dten){0}))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, out);
    oa_ten(&a, inp);
    oa_int(&a, n);
    if (ocl_launch(d, op, K_GELU_FORWARD, &a, (size_t)n))
        ocl_fault(d, op, out, (size_t)n);
}

static void ocl_gelu_backward(device *d, dten dinp, dten inp, dten dout, int n)
{
    const char *op = "gelu_backward";
    if (!op_elementwise_ok(d, op, n, dinp, inp, dout))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, dinp);
    oa_ten(&a, inp);
    oa_ten(&a, dout);
    oa_int(&a, n);
    if (ocl_launch(d, op, K_GELU_BACKWARD, &a, (size_t)n))
        ocl_fault(d, op, dinp, (size_t)n);
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
    ops->add = ocl_add;
    ops->accumulate = ocl_accumulate;
    ops->scale = ocl_scale;
}
