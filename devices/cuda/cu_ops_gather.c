/* devices/cuda/cu_ops_gather.c: the cuda backend's expert gather of rows by index and its
 * scatter-add; ids are checked on the device (the error flag names the op at the next sync). */
#include "cu_internal.h"

static void cu_gather_rows_forward(device *d, dten out, dten inp, dten idx, int M, int R, int C)
{
    const char *op = "gather_rows_forward";
    if (!op_gather_rows_ok(d, op, inp, out, idx, M, R, C))
        return;
    cu_op_begin(d);
    size_t total = (size_t)M * C;
    cu_args a = {0};
    ca_ten(&a, out);
    ca_ten(&a, inp);
    ca_ten(&a, idx);
    ca_int(&a, R);
    ca_int(&a, C);
    ca_ulong(&a, total);
    ca_ptr(&a, CU(d)->flag);
    if (cu_launch(d, op, K_GATHER_ROWS_FORWARD, &a, total))
        cu_fault(d, op, out, total);
}

/* embedding_backward_wte's kernel, items per channel and id bucket (cu_scatter_rows) */
static void cu_gather_rows_backward(device *d, dten dinp, dten dout, dten idx, int M, int R,
                                    int C)
{
    const char *op = "gather_rows_backward";
    if (!op_gather_rows_ok(d, op, dinp, dout, idx, M, R, C))
        return;
    cu_op_begin(d);
    if (cu_scatter_rows(d, op, dinp, dout, idx, M, C, R, KERR_GATHER_BWD))
        cu_fault(d, op, dinp, (size_t)R * C);
}

void cu_fill_gather(device_i *ops)
{
    ops->gather_rows_forward = cu_gather_rows_forward;
    ops->gather_rows_backward = cu_gather_rows_backward;
}
