/* devices/kernels/elementwise.cl: one work-item per element: GELU (tanh and erf forms)
 * forward and backward, residual add, accumulate, scale, bias add, the fault-injection add.
 * GELU uses 0.5(1 + tanh(u)) = sigmoid(2u), as the cpu reference: no cancellation for x < 0. */
#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_C 0.044715f

KERNEL void gelu_forward(GLOBAL float *out, ulong out_off, GLOBAL const float *inp,
                           ulong inp_off, int n)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)n)
        return;
    float x = inp[inp_off + i];
    out[out_off + i] = x / (1.0f + exp(-2.0f * GELU_K * (x + GELU_C * x * x * x)));
}

/* d/dx of 0.5x(1+tanh(u)), u = k(x + c x^3): 0.5(1+th) + 0.5x(1-th^2) k(1 + 3c x^2), with
 * 0.5(1+th) = sig and 0.5(1-th^2) = 2 sig (1-sig), sig = sigmoid(2u) */
KERNEL void gelu_backward(GLOBAL float *dinp, ulong dinp_off, GLOBAL const float *inp,
                            ulong inp_off, GLOBAL const float *dout, ulong dout_off, int n)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)n)
        return;
    float x = inp[inp_off + i];
    float sig = 1.0f / (1.0f + exp(-2.0f * GELU_K * (x + GELU_C * x * x * x)));
    float grad = sig + 2.0f * x * sig * (1.0f - sig) * GELU_K * (1.0f + 3.0f * GELU_C * x * x);
    dinp[dinp_off + i] += grad * dout[dout_off + i];
}

#define GELU_SQRT1_2 0.70710678118654752f      /* 1/sqrt(2) */
#define GELU_INV_SQRT_2PI 0.39894228040143268f /* 1/sqrt(2 pi) */

/* exact GELU, the cpu reference's expression: x * 0.5 * (1 + erf(x / sqrt(2))) */
KERNEL void gelu_erf_forward(GLOBAL float *out, ulong out_off, GLOBAL const float *inp,
                               ulong inp_off, int n)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)n)
        return;
    float x = inp[inp_off + i];
    out[out_off + i] = x * 0.5f * (1.0f + erf(x * GELU_SQRT1_2));
}

/* d/dx of x Phi(x): Phi(x) + x phi(x) */
KERNEL void gelu_erf_backward(GLOBAL float *dinp, ulong dinp_off, GLOBAL const float *inp,
                                ulong inp_off, GLOBAL const float *dout, ulong dout_off, int n)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)n)
        return;
    float x = inp[inp_off + i];
    float cdf = 0.5f * (1.0f + erf(x * GELU_SQRT1_2));
    float pdf = exp(-0.5f * x * x) * GELU_INV_SQRT_2PI;
    dinp[dinp_off + i] += dout[dout_off + i] * (cdf + x * pdf);
}

KERNEL void add(GLOBAL float *out, ulong out_off, GLOBAL const float *a, ulong a_off,
                  GLOBAL const float *b, ulong b_off, int n)
{
    size_t i = GLOBAL_ID;
    if (i < (size_t)n)
        out[out_off + i] = a[a_off + i] + b[b_off + i];
}

KERNEL void accumulate(GLOBAL float *dst, ulong dst_off, GLOBAL const float *src,
                         ulong src_off, int n)
{
    size_t i = GLOBAL_ID;
    if (i < (size_t)n)
        dst[dst_off + i] += src[src_off + i];
}

KERNEL void scale(GLOBAL float *x, ulong x_off, float s, int n)
{
    size_t i = GLOBAL_ID;
    if (i < (size_t)n)
        x[x_off + i] *= s;
}

/* out[n,c] += bias[c] over nc = N*C elements */
KERNEL void bias_add(GLOBAL float *out, ulong out_off, GLOBAL const float *bias,
                       ulong bias_off, ulong nc, int C)
{
    size_t i = GLOBAL_ID;
    if (i < nc)
        out[out_off + i] += bias[bias_off + i % (size_t)C];
}

/* only a fault-injection build (HARNESS_OPENCL_FAULT) enqueues this */
KERNEL void fault_add(GLOBAL float *x, ulong x_off, ulong n, float delta)
{
    size_t i = GLOBAL_ID;
    if (i < n)
        x[x_off + i] += delta;
}
