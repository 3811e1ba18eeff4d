/* devices/cuda/cu_ops_topk.c: the cuda backend's top-k expert routing, forward and
 * backward: checks, then one kernel with a work-item per token row. */
#include "cu_internal.h"

static void cu_topk_router_forward(device *d, dten weights, dten ids, dten probs, dten logits,
                                   int N, int E, int K, int norm)
{
    const char *op = "topk_router_forward";
    if (!op_topk_ok(d, op, weights, ids, probs, logits, N, E, K))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, weights);
    ca_ten(&a, ids);
    ca_ten(&a, probs);
    ca_ten(&a, logits);
    ca_int(&a, N);
    ca_int(&a, E);
    ca_int(&a, K);
    ca_int(&a, norm != 0);
    if (cu_launch(d, op, K_TOPK_ROUTER_FORWARD, &a, (size_t)N))
        cu_fault(d, op, weights, (size_t)N * K);
}

static void cu_topk_router_backward(device *d, dten dlogits, dten dweights, dten weights,
                                    dten ids, dten probs, int N, int E, int K, int norm)
{
    const char *op = "topk_router_backward";
    if (!op_topk_ok(d, op, dweights, ids, probs, dlogits, N, E, K) ||
        !device_view_ok(d, op, "weights", weights, (size_t)N * (size_t)K, DT_REAL))
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, dlogits);
    ca_ten(&a, dweights);
    ca_ten(&a, weights);
    ca_ten(&a, ids);
    ca_ten(&a, probs);
    ca_int(&a, N);
    ca_int(&a, E);
    ca_int(&a, K);
    ca_int(&a, norm != 0);
    ca_ptr(&a, CU(d)->flag);
    if (cu_launch(d, op, K_TOPK_ROUTER_BACKWARD, &a, (size_t)N))
        cu_fault(d, op, dlogits, (size_t)N * E);
}

void cu_fill_topk(device_i *ops)
{
    ops->topk_router_forward = cu_topk_router_forward;
    ops->topk_router_backward = cu_topk_router_backward;
}
