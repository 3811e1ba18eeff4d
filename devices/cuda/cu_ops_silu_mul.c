/* devices/cuda/cu_ops_silu_mul.c: the cuda backend's SwiGLU gating, out = silu(gate) * up,
 * forward and backward: checks, then one kernel over the elements. */
#include "cu_internal.h"

static void cu_silu_mul_forward(device *d, dten out, dten gate, dten up, int n)
{
    const char *op = "silu_mul_forward";
    if (!op_elementwise_ok(d, op, n, out, gate, up))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, out);
    ca_ten(&a, gate);
    ca_ten(&a, up);
    ca_int(&a, n);
    if (cu_launch(d, op, K_SILU_MUL_FORWARD, &a, (size_t)n))
        cu_fault(d, op, out, (size_t)n);
}

static void cu_silu_mul_backward(device *d, dten dgate, dten dup, dten dout, dten gate, dten up,
                                 int n)
{
    const char *op = "silu_mul_backward";
    if (!op_elementwise_ok(d, op, n, dgate, dup, dout) ||
        !op_elementwise_ok(d, op, n, gate, up, (dten){0}))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, dgate);
    ca_ten(&a, dup);
    ca_ten(&a, dout);
    ca_ten(&a, gate);
    ca_ten(&a, up);
    ca_int(&a, n);
    if (cu_launch(d, op, K_SILU_MUL_BACKWARD, &a, (size_t)n))
        cu_fault(d, op, dgate, (size_t)n);
}

void cu_fill_silu_mul(device_i *ops)
{
    ops->silu_mul_forward = cu_silu_mul_forward;
    ops->silu_mul_backward = cu_silu_mul_backward;
}
