/* devices/cuda/cu_ops_rope.c: the cuda backend's rotary position embedding, forward and
 * backward: checks, then one kernel with a work-item per rotated pair. */
#include "cu_internal.h"

static void rope_launch(device *d, const char *op, cu_kernel_id k, dten y, dten x, dten cos_t,
                        dten sin_t, int B, int T, int NH, int hs)
{
    if (!op_rope_ok(d, op, x, y, cos_t, sin_t, B, T, NH, hs))
        return;
    size_t pairs = (size_t)B * (size_t)T * (size_t)NH * (size_t)(hs / 2);
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, y);
    ca_ten(&a, x);
    ca_ten(&a, cos_t);
    ca_ten(&a, sin_t);
    ca_int(&a, T);
    ca_int(&a, NH);
    ca_int(&a, hs);
    ca_ulong(&a, pairs);
    if (cu_launch(d, op, k, &a, pairs))
        cu_fault(d, op, y, 2 * pairs);
}

static void cu_rope_forward(device *d, dten out, dten inp, dten cos_t, dten sin_t, int B, int T,
                            int NH, int hs)
{
    rope_launch(d, "rope_forward", K_ROPE_FORWARD, out, inp, cos_t, sin_t, B, T, NH, hs);
}

static void cu_rope_backward(device *d, dten dinp, dten dout, dten cos_t, dten sin_t, int B,
                             int T, int NH, int hs)
{
    rope_launch(d, "rope_backward", K_ROPE_BACKWARD, dinp, dout, cos_t, sin_t, B, T, NH, hs);
}

void cu_fill_rope(device_i *ops)
{
    ops->rope_forward = cu_rope_forward;
    ops->rope_backward = cu_rope_backward;
}
