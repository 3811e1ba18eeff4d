/* devices/opencl/ocl_ops_dropout.c: the opencl backend's dropout, forward and backward: the
 * threshold and scale are made on the host, the Philox draws on the device (kernels/dropout.cl). */
#include "ocl_internal.h"
#include "philox.h"

int ocl_dropout_launch(device *d, const char *op, dten y, dten mask, dten x, size_t n,
                       int accumulate, double p, uint64_t seed, uint32_t step, uint32_t layer,
                       uint32_t site)
{
    ocl_args a = {0};
    oa_ten(&a, y);
    if (mask.buf) {
        oa_ten(&a, mask);
    } else {
        oa_mem(&a, OCL(d)->flag); /* stands in, unwritten */
        oa_ulong(&a, 0);
    }
    oa_int(&a, mask.buf != NULL);
    oa_ten(&a, x);
    oa_ulong(&a, n);
    oa_int(&a, accumulate);
    oa_ulong(&a, (size_t)philox_dropout_threshold(p));
    oa_float(&a, p < 1 ? 1.0 / (1.0 - p) : 0.0);
    oa_ulong(&a, (size_t)seed);
    oa_ulong(&a, step);
    oa_ulong(&a, layer);
    oa_ulong(&a, site);
    return ocl_launch(d, op, K_DROPOUT_APPLY, &a, (n + 3) / 4);
}

/* y (+)= dropout(x); mask (optional) gets the keep decisions */
static void dropout_op(device *d, const char *op, dten y, dten mask, dten x, int n,
                       int accumulate, double p, uint64_t seed, uint32_t step, uint32_t layer,
                       uint32_t site)
{
    if (!op_dropout_ok(d, op, n, p, y, x, mask))
        return;
    ocl_op_begin(d);
    if (ocl_dropout_launch(d, op, y, mask, x, (size_t)n, accumulate, p, seed, step, layer, site))
        ocl_fault(d, op, y, (size_t)n);
}

static void ocl_dropout_forward(device *d, dten out, dten mask, dten inp, int n, double p,
                                uint64_t seed, uint32_t step, uint32_t layer, uint32_t site)
{
    dropout_op(d, "dropout_forward", out, mask, inp, n, 0, p, seed, step, layer, site);
}

static void ocl_dropout_backward(device *d, dten dinp, dten dout, int n, double p, uint64_t seed,
                                 uint32_t step, uint32_t layer, uint32_t site)
{
    dropout_op(d, "dropout_backward", dinp, (dten){0}, dout, n, 1, p, seed, step, layer, site);
}

void ocl_fill_dropout(device_i *ops)
{
    ops->dropout_forward = ocl_dropout_forward;
    ops->dropout_backward = ocl_dropout_backward;
}
