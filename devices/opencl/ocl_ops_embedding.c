/* devices/opencl/ocl_ops_embedding.c: the opencl backend's token (+ token type) + position
 * embedding, forward and backward. Ids are checked on the device: a bad one raises the error
 * flag, which the next synchronize or download turns into a device error naming the op. */
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

static void ocl_embedding_tt_forward(device *d, dten out, dten tokens, dten types, dten wte,
                                     dten wpe, dten wtt, int B, int T, int C)
{
    const char *op = "embedding_tt_forward";
    if (!op_embedding_tt_ok(d, op, wte, wpe, wtt, out, tokens, types, B, T, C))
        return;
    ocl_op_begin(d);
    size_t total = (size_t)B * T * C;
    ocl_args a = {0};
    oa_ten(&a, out);
    oa_ten(&a, tokens);
    oa_ten(&a, types);
    oa_ten(&a, wte);
    oa_ten(&a, wpe);
    oa_ten(&a, wtt);
    oa_int(&a, T);
    oa_int(&a, C);
    oa_int(&a, (int)(wte.n / (size_t)C));
    oa_int(&a, (int)(wtt.n / (size_t)C));
    oa_ulong(&a, total);
    oa_mem(&a, OCL(d)->flag);
    if (ocl_launch(d, op, K_EMBEDDING_TT_FORWARD, &a, total))
        ocl_fault(d, op, out, total);
}

/* dtable[ids[r],:] += dout[r,:] over the B*T rows; a bad id raises err. 1 when enqueued */
static int scatter_rows(device *d, const char *op, dten dtable, dten dout, dten ids, int BT,
                        int C, int err)
{
    ocl_args a = {0};
    oa_ten(&a, dtable);
    oa_ten(&a, dout);
    oa_ten(&a, ids);
    oa_int(&a, BT);
    oa_int(&a, C);
    oa_int(&a, (int)(dtable.n / (size_t)C));
    oa_mem(&a, OCL(d)->flag);
    oa_int(&a, err);
    oa_int(&a, 1); /* one item per channel: a CPU device runs few items at once */
    return ocl_launch(d, op, K_EMBEDDING_BACKWARD_WTE, &a, (size_t)C);
}

/* dwpe[t,:] += sum_b dout[b,t,:]. 1 when enqueued */
static int position_grad(device *d, const char *op, dten dwpe, dten dout, int B, int T, int C)
{
    ocl_args p = {0};
    oa_ten(&p, dwpe);
    oa_ten(&p, dout);
    oa_int(&p, B);
    oa_int(&p, T);
    oa_int(&p, C);
    return ocl_launch(d, op, K_EMBEDDING_BACKWARD_WPE, &p, (size_t)T * C);
}

static void ocl_embedding_backward(device *d, dten dwte, dten dwpe, dten dout, dten tokens,
                                   int B, int T, int C)
{
    const char *op = "embedding_backward";
    if (!op_embedding_ok(d, op, dwte, dwpe, dout, tokens, B, T, C))
        return;
    ocl_op_begin(d);
    if (scatter_rows(d, op, dwte, dout, tokens, B * T, C, KERR_TOKEN_BWD) &&
        position_grad(d, op, dwpe, dout, B, T, C))
        ocl_fault(d, op, dwpe, (size_t)T * C);
}

static void ocl_embedding_tt_backward(device *d, dten dwte, dten dwpe, dten dwtt, dten dout,
                                      dten tokens, dten types, int B, int T, int C)
{
    const char *op = "embedding_tt_backward";
    if (!op_embedding_tt_ok(d, op, dwte, dwpe, dwtt, dout, tokens, types, B, T, C))
        return;
    ocl_op_begin(d);
    if (scatter_rows(d, op, dwte, dout, tokens, B * T, C, KERR_TT_TOKEN_BWD) &&
        scatter_rows(d, op, dwtt, dout, types, B * T, C, KERR_TT_TYPE_BWD) &&
        position_grad(d, op, dwpe, dout, B, T, C))
        ocl_fault(d, op, dwpe, (size_t)T * C);
}

void ocl_fill_embedding(device_i *ops)
{
    ops->embedding_forward = ocl_embedding_forward;
    ops->embedding_backward = ocl_embedding_backward;
    ops->embedding_tt_forward = ocl_embedding_tt_forward;
    ops->embedding_tt_backward = ocl_embedding_tt_backward;
}
