/* devices/opencl/ocl_ops_topk.c: the opencl backend's top-k expert routing, forward and
 * backward: checks, then one kernel with a work-item per token row. */
#include "ocl_internal.h"

static void ocl_topk_router_forward(device *d, dten weights, dten ids, dten probs, dten logits,
                                    int N, int E, int K, int norm)
{
    const char *op = "topk_router_forward";
    if (!op_topk_ok(d, op, weights, ids, probs, logits, N, E, K))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, weights);
    oa_ten(&a, ids);
    oa_ten(&a, probs);
    oa_ten(&a, logits);
    oa_int(&a, N);
    oa_int(&a, E);
    oa_int(&a, K);
    oa_int(&a, norm != 0);
    if (ocl_launch(d, op, K_TOPK_ROUTER_FORWARD, &a, (size_t)N))
        ocl_fault(d, op, weights, (size_t)N * K);
}

static void ocl_topk_router_backward(device *d, dten dlogits, dten dweights, dten weights,
                                     dten ids, dten probs, int N, int E, int K, int norm)
{
    const char *op = "topk_router_backward";
    if (!op_topk_ok(d, op, dweights, ids, probs, dlogits, N, E, K) ||
        !device_view_ok(d, op, "weights", weights, (size_t)N * (size_t)K, DT_REAL))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, dlogits);
    oa_ten(&a, dweights);
    oa_ten(&a, weights);
    oa_ten(&a, ids);
    oa_ten(&a, probs);
    oa_int(&a, N);
    oa_int(&a, E);
    oa_int(&a, K);
    oa_int(&a, norm != 0);
    oa_mem(&a, OCL(d)->flag);
    if (ocl_launch(d, op, K_TOPK_ROUTER_BACKWARD, &a, (size_t)N))
        ocl_fault(d, op, dlogits, (size_t)N * E);
}

void ocl_fill_topk(device_i *ops)
{
    ops->topk_router_forward = ocl_topk_router_forward;
    ops->topk_router_backward = ocl_topk_router_backward;
}
