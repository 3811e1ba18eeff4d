/* devices/opencl/kernels/silu_mul.cl: SwiGLU gating, out = silu(gate) * up, one work-item per
 * element, forward and backward; the cpu reference's expressions in float. */

__kernel void silu_mul_forward(__global float *out, ulong out_off, __global const float *gate,
                               ulong gate_off, __global const float *up, ulong up_off, int n)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)n)
        return;
    float g = gate[gate_off + i];
    float silu = g / (1.0f + exp(-g));
    out[out_off + i] = silu * up[up_off + i];
}

/* s = sigmoid(g): dgate += dout * up * s (1 + g (1 - s)); dup += dout * g s */
__kernel void silu_mul_backward(__global float *dgate, ulong dgate_off, __global float *dup,
                                ulong dup_off, __global const float *dout, ulong dout_off,
                                __global const float *gate, ulong gate_off,
                                __global const float *up, ulong up_off, int n)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)n)
        return;
    float g = gate[gate_off + i], u = up[up_off + i], dy = dout[dout_off + i];
    float s = 1.0f / (1.0f + exp(-g));
    dgate[dgate_off + i] += dy * u * (s * (1.0f + g * (1.0f - s)));
    dup[dup_off + i] += dy * (g * s);
}
