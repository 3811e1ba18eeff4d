/* devices/opencl/ocl_ops_loss.c: the opencl backend's softmax cross-entropy, forward (one
 * work-group per row) and backward (one item per logit). Targets are checked on the device. */
#include "ocl_internal.h"

static void ocl_softmax_xent_forward(device *d, dten losses, dten probs, dten logits,
                                     dten targets, int N, int V, int ignore_index)
{
    const char *op = "softmax_xent_forward";
    if (!op_xent_ok(d, op, probs, targets, N, V) ||
        !device_view_ok(d, op, "logits", logits, (size_t)N * (size_t)V, DT_REAL) ||
        !device_view_ok(d, op, "losses", losses, (size_t)N, DT_REAL))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, losses);
    oa_ten(&a, probs);
    oa_ten(&a, logits);
    oa_ten(&a, targets);
    oa_int(&a, V);
    oa_int(&a, ignore_index);
    oa_mem(&a, OCL(d)->flag);
    if (ocl_launch(d, op, K_SOFTMAX_XENT_FORWARD, &a, (size_t)N * OCL(d)->wg))
        ocl_fault(d, op, losses, (size_t)N);
}

static void ocl_softmax_xent_backward(device *d, dten dlogits, dten probs, dten targets, int N,
                                      int V, int ignore_index, double scale)
{
    const char *op = "softmax_xent_backward";
    if (!op_xent_ok(d, op, probs, targets, N, V) ||
        !device_view_ok(d, op, "dlogits", dlogits, (size_t)N * (size_t)V, DT_REAL))
        return;
    ocl_op_begin(d);
    size_t total = (size_t)N * V;
    ocl_args a = {0};
    oa_ten(&a, dlogits);
    oa_ten(&a, probs);
    oa_ten(&a, targets);
    oa_int(&a, V);
    oa_int(&a, ignore_index);
    oa_float(&a, scale);
    oa_ulong(&a, total);
    oa_mem(&a, OCL(d)->flag);
    if (ocl_launch(d, op, K_SOFTMAX_XENT_BACKWARD, &a, total))
        ocl_fault(d, op, dlogits, total);
}

void ocl_fill_loss(device_i *ops)
{
    ops->softmax_xent_forward = ocl_softmax_xent_forward;
    ops->softmax_xent_backward = ocl_softmax_xent_backward;
}
