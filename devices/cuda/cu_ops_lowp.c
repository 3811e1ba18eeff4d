/* devices/cuda/cu_ops_lowp.c: the cuda backend's bf16/fp16 rounding (device.round_lowp): the
 * lowp_round kernel of devices/kernels/lowp.cl, the same bits as the cpu backend's. */
#include "cu_internal.h"

void cu_round_lowp(device *d, dten x, int n, int mode)
{
    const char *op = "round_lowp";
    if (!op_round_lowp_ok(d, x, n, mode))
        return;
    if (n <= 0)
        return;
    cu_op_begin(d);
    cu_args a = {0};
    ca_ten(&a, x);
    ca_int(&a, n);
    ca_int(&a, mode);
    if (cu_launch(d, op, K_LOWP_ROUND, &a, (size_t)n))
        cu_fault(d, op, x, (size_t)n);
}
