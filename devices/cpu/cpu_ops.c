/* devices/cpu/cpu_ops.c: the cpu backend's op table (cpu_fill_ops, gathering each area's entries
 * from cpu_ops_<area>.c); the argument checks the ops share are devices/device.c's. */
#include "cpu_real.h"

void cpu_fill_ops(device_i *ops)
{
    cpu_fill_elementwise(ops);
    cpu_fill_embedding(ops);
    cpu_fill_layernorm(ops);
    cpu_fill_gemm(ops);
    cpu_fill_attention(ops);
    cpu_fill_loss(ops);
    cpu_fill_optim(ops);
    cpu_fill_dropout(ops);
    cpu_fill_rmsnorm(ops);
    cpu_fill_silu_mul(ops);
    cpu_fill_rope(ops);
    cpu_fill_gqa(ops);
    cpu_fill_gather(ops);
    cpu_fill_topk(ops);
}
