/* devices/cuda/cu_ops_embedding.c: the cuda backend's token (+ token type) + position
 * embedding, forward and backward. Ids are checked on the device: a bad one raises the error
 * flag, which the next synchronize or download turns into a device error naming the op. */
#include "cu_internal.h"

static void cu_embedding_forward(device *d, dten out, dten tokens, dten wte, dten wpe, int B,
                                 int T, int C)
{
    const char *op = "embedding_forward";
    if (!op_embedding_ok(d, op, wte, wpe, out, tokens, B, T, C))
        return;
    cu_op_begin(d);
    size_t total = (size_t)B * T * C;
    cu_args a = {0};
    ca_ten(&a, out);
    ca_ten(&a, tokens);
    ca_ten(&a, wte);
    ca_ten(&a, wpe);
    ca_int(&a, T);
    ca_int(&a, C);
    ca_int(&a, (int)(wte.n / (size_t)C));
    ca_ulong(&a, total);
    ca_ptr(&a, CU(d)->flag);
    if (cu_launch(d, op, K_EMBEDDING_FORWARD, &a, total))
        cu_fault(d, op, out, total);
}

static void cu_embedding_tt_forward(device *d, dten out, dten tokens, dten types, dten wte,
                                    dten wpe, dten wtt, int B, int T, int C)
{
    const char *op = "embedding_tt_forward";
    if (!op_embedding_tt_ok(d, op, wte, wpe, wtt, out, tokens, types, B, T, C))
        return;
    cu_op_begin(d);
    size_t total = (size_t)B * T * C;
    cu_args a = {0};
    ca_ten(&a, out);
    ca_ten(&a, tokens);
    ca_ten(&a, types);
    ca_ten(&a, wte);
    ca_ten(&a, wpe);
    ca_ten(&a, wtt);
    ca_int(&a, T);
    ca_int(&a, C);
    ca_int(&a, (int)(wte.n / (size_t)C));
    ca_int(&a, (int)(wtt.n / (size_t)C));
    ca_ulong(&a, total);
    ca_ptr(&a, CU(d)->flag);
    if (cu_launch(d, op, K_EMBEDDING_TT_FORWARD, &a, total))
        cu_fault(d, op, out, total);
}

/* about this many items, so the GPU runs the scatter wide: id buckets per channel */
#define SCATTER_ITEMS (1 << 16)

int cu_scatter_rows(device *d, const char *op, dten dtable, dten dout, dten ids, int n, int C,
                    int R, int err)
{
    int buckets = (SCATTER_ITEMS + C - 1) / C;
    if (buckets > R)
        buckets = R > 0 ? R : 1;
    cu_args a = {0};
    ca_ten(&a, dtable);
    ca_ten(&a, dout);
    ca_ten(&a, ids);
    ca_int(&a, n);
    ca_int(&a, C);
    ca_int(&a, R);
    ca_ptr(&a, CU(d)->flag);
    ca_int(&a, err);
    ca_int(&a, buckets);
    return cu_launch(d, op, K_EMBEDDING_BACKWARD_WTE, &a, (size_t)C * buckets);
}

/* dwpe[t,:] += sum_b dout[b,t,:]. 1 when enqueued */
static int position_grad(device *d, const char *op, dten dwpe, dten dout, int B, int T, int C)
{
    cu_args p = {0};
    ca_ten(&p, dwpe);
    ca_ten(&p, dout);
    ca_int(&p, B);
    ca_int(&p, T);
    ca_int(&p, C);
    return cu_launch(d, op, K_EMBEDDING_BACKWARD_WPE, &p, (size_t)T * C);
}

static void cu_embedding_backward(device *d, dten dwte, dten dwpe, dten dout, dten tokens,
                                  int B, int T, int C)
{
    const char *op = "embedding_backward";
    if (!op_embedding_ok(d, op, dwte, dwpe, dout, tokens, B, T, C))
        return;
    cu_op_begin(d);
    if (cu_scatter_rows(d, op, dwte, dout, tokens, B * T, C, (int)(dwte.n / (size_t)C),
                        KERR_TOKEN_BWD) &&
        position_grad(d, op, dwpe, dout, B, T, C))
        cu_fault(d, op, dwpe, (size_t)T * C);
}

static void cu_embedding_tt_backward(device *d, dten dwte, dten dwpe, dten dwtt, dten dout,
                                     dten tokens, dten types, int B, int T, int C)
{
    const char *op = "embedding_tt_backward";
    if (!op_embedding_tt_ok(d, op, dwte, dwpe, dwtt, dout, tokens, types, B, T, C))
        return;
    cu_op_begin(d);
    if (cu_scatter_rows(d, op, dwte, dout, tokens, B * T, C, (int)(dwte.n / (size_t)C),
                        KERR_TT_TOKEN_BWD) &&
        cu_scatter_rows(d, op, dwtt, dout, types, B * T, C, (int)(dwtt.n / (size_t)C),
                        KERR_TT_TYPE_BWD) &&
        position_grad(d, op, dwpe, dout, B, T, C))
        cu_fault(d, op, dwpe, (size_t)T * C);
}

void cu_fill_embedding(device_i *ops)
{
    ops->embedding_forward = cu_embedding_forward;
    ops->embedding_backward = cu_embedding_backward;
    ops->embedding_tt_forward = cu_embedding_tt_forward;
    ops->embedding_tt_backward = cu_embedding_tt_backward;
}
