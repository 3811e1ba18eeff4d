/* devices/opencl/ocl_ops_lowp.c: the opencl backend's bf16/fp16 rounding (device.round_lowp): the
 * lowp_round kernel of devices/kernels/lowp.cl, the same bits as the cpu backend's. */
#include "ocl_internal.h"

void ocl_round_lowp(device *d, dten x, int n, int mode)
{
    const char *op = "round_lowp";
    if (!op_round_lowp_ok(d, x, n, mode))
        return;
    if (n <= 0)
        return;
    ocl_op_begin(d);
    ocl_args a = {0};
    oa_ten(&a, x);
    oa_int(&a, n);
    oa_int(&a, mode);
    if (ocl_launch(d, op, K_LOWP_ROUND, &a, (size_t)n))
        ocl_fault(d, op, x, (size_t)n);
}
