/* devices/opencl/ocl_ops_silu_mul.c: the opencl backend's SwiGLU gating, out = silu(gate) * up,
 * forward and backward: checks, then one kernel over the elements. */
#include "ocl_internal.h"

static void ocl_silu_mul_forward(device *d, dten out, dten gate, dten up, int n)
{
    const char *op = "silu_mul_forward";
    if (!op_elementwise_ok(d, op, n, out, gate, up))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, out);
    oa_ten(&a, gate);
    oa_ten(&a, up);
    oa_int(&a, n);
    if (ocl_launch(d, op, K_SILU_MUL_FORWARD, &a, (size_t)n))
        ocl_fault(d, op, out, (size_t)n);
}

static void ocl_silu_mul_backward(device *d, dten dgate, dten dup, dten dout, dten gate, dten up,
                                  int n)
{
    const char *op = "silu_mul_backward";
    if (!op_elementwise_ok(d, op, n, dgate, dup, dout) ||
        !op_elementwise_ok(d, op, n, gate, up, (dten){0}))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, dgate);
    oa_ten(&a, dup);
    oa_ten(&a, dout);
    oa_ten(&a, gate);
    oa_ten(&a, up);
    oa_int(&a, n);
    if (ocl_launch(d, op, K_SILU_MUL_BACKWARD, &a, (size_t)n))
        ocl_fault(d, op, dgate, (size_t)n);
}

void ocl_fill_silu_mul(device_i *ops)
{
    ops->silu_mul_forward = ocl_silu_mul_forward;
    ops->silu_mul_backward = ocl_silu_mul_backward;
}
