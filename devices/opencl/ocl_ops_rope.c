/* devices/opencl/ocl_ops_rope.c: the opencl backend's rotary position embedding, forward and
 * backward: checks, then one kernel with a work-item per rotated pair. */
#include "ocl_internal.h"

static void rope_launch(device *d, const char *op, ocl_kernel_id k, dten y, dten x, dten cos_t,
                        dten sin_t, int B, int T, int NH, int hs)
{
    if (!op_rope_ok(d, op, x, y, cos_t, sin_t, B, T, NH, hs))
        return;
    size_t pairs = (size_t)B * (size_t)T * (size_t)NH * (size_t)(hs / 2);
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, y);
    oa_ten(&a, x);
    oa_ten(&a, cos_t);
    oa_ten(&a, sin_t);
    oa_int(&a, T);
    oa_int(&a, NH);
    oa_int(&a, hs);
    oa_ulong(&a, pairs);
    if (ocl_launch(d, op, k, &a, pairs))
        ocl_fault(d, op, y, 2 * pairs);
}

static void ocl_rope_forward(device *d, dten out, dten inp, dten cos_t, dten sin_t, int B, int T,
                             int NH, int hs)
{
    rope_launch(d, "rope_forward", K_ROPE_FORWARD, out, inp, cos_t, sin_t, B, T, NH, hs);
}

static void ocl_rope_backward(device *d, dten dinp, dten dout, dten cos_t, dten sin_t, int B,
                              int T, int NH, int hs)
{
    rope_launch(d, "rope_backward", K_ROPE_BACKWARD, dinp, dout, cos_t, sin_t, B, T, NH, hs);
}

void ocl_fill_rope(device_i *ops)
{
    ops->rope_forward = ocl_rope_forward;
    ops->rope_backward = ocl_rope_backward;
}
