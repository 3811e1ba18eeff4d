/* devices/cpu/cpu_ops.c: the cpu backend's op table (cpu_fill_ops, gathering each area's entries
 * from cpu_ops_<area>.c) and the argument checks every op shares. */
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
}

int cpu_check(device *d, const char *op, const char *name, dten t, size_t need, dkind kind)
{
    if (!t.buf) {
        device_fail(d, "%s: %s: %s has no buffer", CPU_BACKEND_NAME, op, name);
        return 0;
    }
    if (t.buf->head.kind != kind) {
        device_fail(d, "%s: %s: %s must be %s", CPU_BACKEND_NAME, op, name,
                    kind == DT_I32 ? "DT_I32" : "DT_REAL");
        return 0;
    }
    if (t.off > t.buf->head.n || t.n > t.buf->head.n - t.off) {
        device_fail(d, "%s: %s: %s (offset %zu, %zu elements) runs past its buffer of %zu",
                    CPU_BACKEND_NAME, op, name, t.off, t.n, t.buf->head.n);
        return 0;
    }
    if (t.n < need) {
        device_fail(d, "%s: %s: %s has %zu elements, the op needs %zu", CPU_BACKEND_NAME, op,
                    name, t.n, need);
        return 0;
    }
    return 1;
}

int cpu_dims_ok(device *d, const char *op, const int *dims, int ndims, int min)
{
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < min) {
            device_fail(d, "%s: %s: size %d (argument %d of the shape) must be >= %d",
                        CPU_BACKEND_NAME, op, dims[i], i + 1, min);
            return 0;
        }
    }
    return 1;
}
