/* devices/opencl/ocl_ops_gather.c: the opencl backend's expert gather of rows by index and its
 * scatter-add; ids are checked on the device (the error flag names the op at the next sync). */
#include "ocl_internal.h"

static void ocl_gather_rows_forward(device *d, dten out, dten inp, dten idx, int M, int R, int C)
{
    const char *op = "gather_rows_forward";
    if (!op_gather_rows_ok(d, op, inp, out, idx, M, R, C))
        return;
    ocl_op_begin(d);
    size_t total = (size_t)M * C;
    ocl_args a = {0};
    oa_ten(&a, out);
    oa_ten(&a, inp);
    oa_ten(&a, idx);
    oa_int(&a, R);
    oa_int(&a, C);
    oa_ulong(&a, total);
    oa_mem(&a, OCL(d)->flag);
    if (ocl_launch(d, op, K_GATHER_ROWS_FORWARD, &a, total))
        ocl_fault(d, op, out, total);
}

/* one item per channel walking the M rows in order (embedding_backward_wte's kernel) */
static void ocl_gather_rows_backward(device *d, dten dinp, dten dout, dten idx, int M, int R,
                                     int C)
{
    const char *op = "gather_rows_backward";
    if (!op_gather_rows_ok(d, op, dinp, dout, idx, M, R, C))
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, dinp);
    oa_ten(&a, dout);
    oa_ten(&a, idx);
    oa_int(&a, M);
    oa_int(&a, C);
    oa_int(&a, R);
    oa_mem(&a, OCL(d)->flag);
    oa_int(&a, KERR_GATHER_BWD);
    oa_int(&a, 1); /* one item per channel, as embedding_backward */
    if (ocl_launch(d, op, K_EMBEDDING_BACKWARD_WTE, &a, (size_t)C))
        ocl_fault(d, op, dinp, (size_t)R * C);
}

void ocl_fill_gather(device_i *ops)
{
    ops->gather_rows_forward = ocl_gather_rows_forward;
    ops->gather_rows_backward = ocl_gather_rows_backward;
}
