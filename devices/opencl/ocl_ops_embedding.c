/* devices/opencl/ocl_ops_embedding.c: the opencl backend's token + position embedding, forward
 * and backward. Token ids are checked on the device: a bad one raises the error flag, which the
 * next synchronize or download turns into a device error naming the op. */
#include "ocl_internal.h"

static void ocl_embedding_forward(device *d, dten out, dten tokens, dten wte, dten wpe, int B,
                                  int T, int C)
{
    const char *op = "embedding_forward";
    if (!op_embedding_ok(d, op, wte, wpe, out, tokens, B, T, C))
        return;
    ocl_op_begin(d);
    size_t total = (size_t)B * T * C;
    ocl_args a = {0};
    oa_ten(&a, out);
    oa_ten(&a, tokens);
    oa_ten(&a, wte);
    oa_ten(&a, wpe);
    oa_int(&a, T);
    oa_int(&a, C);
    oa_int(&a, (int)(wte.n / (size_t)C));
    oa_ulong(&a, total);
    oa_mem(&a, OCL(d)->flag);
    if (ocl_launch(d, op, K_EMBEDDING_FORWARD, &a, total))
        ocl_fault(d, op, out, total);
}

static void ocl_embedding_backward(device *d, dten dwte, dten dwpe, dten dout, dten tokens,
                                   int B, int T, int C)
{
    const char *op = "embedding_backward";
    if (!op_embedding_ok(d, op, dwte, dwpe, dout, tokens, B, T, C))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, dwte);
    oa_ten(&a, dout);
    oa_ten(&a, tokens);
    oa_int(&a, B * T);
    oa_int(&a, C);
    oa_int(&a, (int)(dwte.n / (size_t)C));
    oa_mem(&a, OCL(d)->flag);
    ocl_args p = {0};
    oa_ten(&p, dwpe);
    oa_ten(&p, dout);
    oa_int(&p, B);
    oa_int(&p, T);
    oa_int(&p, C);
    if (ocl_launch(d, op, K_EMBEDDING_BACKWARD_WTE, &a, (size_t)C) &&
        ocl_launch(d, op, K_EMBEDDING_BACKWARD_WPE, &p, (size_t)T * C))
        ocl_fault(d, op, dwpe, (size_t)T * C);
}

void ocl_fill_embedding(device_i *ops)
{
    ops->embedding_forward = ocl_embedding_forward;
    ops->embedding_backward = ocl_embedding_backward;
}
