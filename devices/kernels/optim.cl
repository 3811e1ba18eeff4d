/* devices/kernels/optim.cl: fused AdamW, one item per parameter, in acc_t (double where
 * the device has it, as the cpu reference computes), PyTorch's order of operations. */

/* p = p * decay - step_size * m / (sqrt(v) / bc2_sqrt + eps), after the m and v updates */
KERNEL void adamw(GLOBAL float *p, ulong p_off, GLOBAL const float *g, ulong g_off,
                    GLOBAL float *m, ulong m_off, GLOBAL float *v, ulong v_off, int n,
                    acc_t beta1, acc_t beta2, acc_t eps, acc_t step_size, acc_t decay,
                    acc_t bc2_sqrt)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)n)
        return;
    acc_t gi = g[g_off + i];
    acc_t mi = beta1 * m[m_off + i] + (1 - beta1) * gi;
    acc_t vi = beta2 * v[v_off + i] + (1 - beta2) * gi * gi;
    acc_t denom = sqrt(vi) / bc2_sqrt + eps;
    p[p_off + i] = (float)(p[p_off + i] * decay - step_size * mi / denom);
    m[m_off + i] = (float)mi;
    v[v_off + i] = (float)vi;
}
