/* devices/cuda/cu_ops_loss.c: the cuda backend's softmax cross-entropy, forward (one
 * work-group per row) and backward (one item per logit). Targets are checked on the device. */
#include "cu_internal.h"

static void cu_softmax_xent_forward(device *d, dten losses, dten probs, dten logits,
                                    dten targets, int N, int V, int ignore_index)
{
    const char *op = "softmax_xent_forward";
    if (!op_xent_ok(d, op, probs, targets, N, V) ||
        !device_view_ok(d, op, "logits", logits, (size_t)N * (size_t)V, DT_REAL) ||
        !device_view_ok(d, op, "losses", losses, (size_t)N, DT_REAL))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, losses);
    ca_ten(&a, probs);
    ca_ten(&a, logits);
    ca_ten(&a, targets);
    ca_int(&a, V);
    ca_int(&a, ignore_index);
    ca_ptr(&a, CU(d)->flag);
    if (cu_launch(d, op, K_SOFTMAX_XENT_FORWARD, &a, (size_t)N * CU(d)->wg))
        cu_fault(d, op, losses, (size_t)N);
}

static void cu_softmax_xent_backward(device *d, dten dlogits, dten probs, dten targets, int N,
                                     int V, int ignore_index, double scale)
{
    const char *op = "softmax_xent_backward";
    if (!op_xent_ok(d, op, probs, targets, N, V) ||
        !device_view_ok(d, op, "dlogits", dlogits, (size_t)N * (size_t)V, DT_REAL))
        return;
    cu_op_begin(d);
    size_t total = (size_t)N * V;
    cu_args a = {0};
    ca_ten(&a, dlogits);
    ca_ten(&a, probs);
    ca_ten(&a, targets);
    ca_int(&a, V);
    ca_int(&a, ignore_index);
    ca_float(&a, scale);
    ca_ulong(&a, total);
    ca_ptr(&a, CU(d)->flag);
    if (cu_launch(d, op, K_SOFTMAX_XENT_BACKWARD, &a, total))
        cu_fault(d, op, dlogits, total);
}

void cu_fill_loss(device_i *ops)
{
    ops->softmax_xent_forward = cu_softmax_xent_forward;
    ops->softmax_xent_backward = cu_softmax_xent_backward;
}
