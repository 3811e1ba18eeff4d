/* devices/kernels/silu_mul.cl: SwiGLU gating, out = silu(gate) * up, one work-item per
 * element, forward and backward; the cpu reference's expressions in float. */

KERNEL void silu_mul_forward(GLOBAL float *out, ulong out_off, GLOBAL const float *gate,
                               ulong gate_off, GLOBAL const float *up, ulong up_off, int n)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)n)
        return;
    float g = gate[gate_off + i];
    float silu = g / (1.0f + exp(-g));
    out[out_off + i] = silu * up[up_off + i];
}

/* s = sigmoid(g): dgate += dout * up * s (1 + g (1 - s)); dup += dout * g s */
KERNEL void silu_mul_backward(GLOBAL float *dgate, ulong dgate_off, GLOBAL float *dup,
                                ulong dup_off, GLOBAL const float *dout, ulong dout_off,
                                GLOBAL const float *gate, ulong gate_off,
                                GLOBAL const float *up, ulong up_off, int n)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)n)
        return;
    float g = gate[gate_off + i], u = up[up_off + i], dy = dout[dout_off + i];
    float s = 1.0f / (1.0f + exp(-g));
    dgate[dgate_off + i] += dy * u * (s * (1.0f + g * (1.0f - s)));
    dup[dup_off + i] += dy * (g * s);
}
