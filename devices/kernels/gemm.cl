/* devices/kernels/gemm.cl: the part of GEMM that CLBlast is not called for: with K == 0
 * or alpha == 0 there is no product, and C_i = beta * C_i (exact zeros for beta == 0). */
KERNEL void gemm_scale(GLOBAL float *c, ulong c_off, int M, int N, int ldc, ulong stride,
                         int batch, float beta)
{
    size_t i = GLOBAL_ID, mn = (size_t)M * N;
    if (i >= mn * (size_t)batch)
        return;
    size_t b = i / mn, r = (i % mn) / N, j = i % N;
    GLOBAL float *p = c + c_off + b * stride + r * (size_t)ldc + j;
    *p = beta == 0.0f ? 0.0f : beta * *p;
}
