/* devices/cuda/cu_ops_dropout.c: the cuda backend's dropout, forward and backward: the
 * threshold and scale are made on the host, the Philox draws on the device (kernels/dropout.cl). */
#include "cu_internal.h"
#include "philox.h"

int cu_dropout_launch(device *d, const char *op, dten y, dten mask, dten x, size_t n,
                      int accumulate, double p, uint64_t seed, uint32_t step, uint32_t layer,
                      uint32_t site)
{
    cu_args a = {0};
    ca_ten(&a, y);
    if (mask.buf) {
        ca_ten(&a, mask);
    } else {
        ca_ptr(&a, CU(d)->flag); /* stands in, unwritten */
        ca_ulong(&a, 0);
    }
    ca_int(&a, mask.buf != NULL);
    ca_ten(&a, x);
    ca_ulong(&a, n);
    ca_int(&a, accumulate);
    ca_ulong(&a, (size_t)philox_dropout_threshold(p));
    ca_float(&a, p < 1 ? 1.0 / (1.0 - p) : 0.0);
    ca_ulong(&a, (size_t)seed);
    ca_ulong(&a, step);
    ca_ulong(&a, layer);
    ca_ulong(&a, site);
    return cu_launch(d, op, K_DROPOUT_APPLY, &a, (n + 3) / 4);
}

/* y (+)= dropout(x); mask (optional) gets the keep decisions */
static void dropout_op(device *d, const char *op, dten y, dten mask, dten x, int n,
                       int accumulate, double p, uint64_t seed, uint32_t step, uint32_t layer,
                       uint32_t site)
{
    if (!op_dropout_ok(d, op, n, p, y, x, mask))
        return;
    cu_op_begin(d);
    if (cu_dropout_launch(d, op, y, mask, x, (size_t)n, accumulate, p, seed, step, layer, site))
        cu_fault(d, op, y, (size_t)n);
}

static void cu_dropout_forward(device *d, dten out, dten mask, dten inp, int n, double p,
                               uint64_t seed, uint32_t step, uint32_t layer, uint32_t site)
{
    dropout_op(d, "dropout_forward", out, mask, inp, n, 0, p, seed, step, layer, site);
}

static void cu_dropout_backward(device *d, dten dinp, dten dout, int n, double p, uint64_t seed,
                                uint32_t step, uint32_t layer, uint32_t site)
{
    dropout_op(d, "dropout_backward", dinp, (dten){0}, dout, n, 1, p, seed, step, layer, site);
}

void cu_fill_dropout(device_i *ops)
{
    ops->dropout_forward = cu_dropout_forward;
    ops->dropout_backward = cu_dropout_backward;
}
