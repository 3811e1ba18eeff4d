/* devices/cpu/cpu_ops_elementwise.c: the cpu backend's elementwise ops: GELU (tanh and erf forms)
 * forward and backward, residual add, accumulate and scale. Each is one parallel loop. */

/* GELU's tanh form is evaluated through 0.5(1 + tanh(u)) = sigmoid(2u): the same function,
 * one exp instead of a (slower) tanh, and no cancellation in 1 + tanh(u) for negative x. The
 * exp is cpu_vexp (cpu_simd.h), so the loops vectorize. */
#include "cpu_real.h"
#include "cpu_simd.h"

#include <math.h>

#define GELU_K 0.7978845608028654 /* sqrt(2/pi) */
#define GELU_C 0.044715
#define GELU_SQRT1_2 0.7071067811865476      /* 1/sqrt(2) */
#define GELU_INV_SQRT_2PI 0.3989422804014327 /* 1/sqrt(2 pi) */

/* elements per chunk of the elementwise loops: a parallel loop runs over chunks, a chunk's
 * elements go through a vectorized kernel */
#define ELEM_CHUNK 4096L

static long chunks_of(long n)
{
    return (n + ELEM_CHUNK - 1) / ELEM_CHUNK;
}

static long chunk_len(long chunk, long n)
{
    return n - chunk * ELEM_CHUNK < ELEM_CHUNK ? n - chunk * ELEM_CHUNK : ELEM_CHUNK;
}

CPU_CLONES static void gelu_forward_kernel(real *restrict o, const real *restrict x, long n)
{
    const real k2 = (real)(-2 * GELU_K), c = (real)GELU_C;
    for (long i = 0; i < n; i++) {
        real xi = x[i];
        o[i] = xi / (1 + cpu_vexp(k2 * (xi + c * xi * xi * xi)));
    }
}

/* n >= 0 and every view holds n reals */
static void cpu_gelu_forward(device *d, dten out, dten inp, int n)
{
    if (!op_elementwise_ok(d, "gelu_forward", n, out, inp, (dten){0}))
        return;
    real *o = RP(out);
    const real *x = RP(inp);
    long chunks = chunks_of(n);
#pragma omp parallel for schedule(static)
    for (long ch = 0; ch < chunks; ch++)
        gelu_forward_kernel(o + ch * ELEM_CHUNK, x + ch * ELEM_CHUNK, chunk_len(ch, n));
}

CPU_CLONES static void gelu_backward_kernel(real *restrict dx, const real *restrict x,
                                            const real *restrict dy, long n)
{
    const real k = (real)GELU_K, k2 = (real)(-2 * GELU_K), c = (real)GELU_C;
    for (long i = 0; i < n; i++) {
        real xi = x[i];
        real sig = 1 / (1 + cpu_vexp(k2 * (xi + c * xi * xi * xi)));
        real grad = sig + 2 * xi * sig * (1 - sig) * k * (1 + 3 * c * xi * xi);
        dx[i] += grad * dy[i];
    }
}

/* d/dx of 0.5x(1+tanh(u)), u = k(x + c x^3): 0.5(1+th) + 0.5x(1-th^2) k(1 + 3c x^2), with
 * 0.5(1+th) = sig and 0.5(1-th^2) = 2 sig (1-sig), sig = sigmoid(2u) */
static void cpu_gelu_backward(device *d, dten dinp, dten inp, dten dout, int n)
{
    if (!op_elementwise_ok(d, "gelu_backward", n, dinp, inp, dout))
        return;
    real *dx = RP(dinp);
    const real *x = RP(inp), *dy = RP(dout);
    long chunks = chunks_of(n);
#pragma omp parallel for schedule(static)
    for (long ch = 0; ch < chunks; ch++)
        gelu_backward_kernel(dx + ch * ELEM_CHUNK, x + ch * ELEM_CHUNK, dy + ch * ELEM_CHUNK,
                             chunk_len(ch, n));
}

/* exact GELU as PyTorch's cpu kernel writes it: x * 0.5 * (1 + erf(x / sqrt(2))) */
static void cpu_gelu_erf_forward(device *d, dten out, dten inp, int n)
{
    if (!op_elementwise_ok(d, "gelu_erf_forward", n, out, inp, (dten){0}))
        return;
    real *o = RP(out);
    const real *x = RP(inp);
    const real a = (real)GELU_SQRT1_2;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        o[i] = x[i] * (real)0.5 * (1 + R_ERF(x[i] * a));
}

/* d/dx of x Phi(x): Phi(x) + x phi(x), with Phi = 0.5(1 + erf(x/sqrt(2))) and
 * phi = exp(-x^2/2)/sqrt(2pi), PyTorch's gelu backward */
static void cpu_gelu_erf_backward(device *d, dten dinp, dten inp, dten dout, int n)
{
    if (!op_elementwise_ok(d, "gelu_erf_backward", n, dinp, inp, dout))
        return;
    real *dx = RP(dinp);
    const real *x = RP(inp), *dy = RP(dout);
    const real a = (real)GELU_SQRT1_2, b = (real)GELU_INV_SQRT_2PI;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        real xi = x[i];
        real cdf = (real)0.5 * (1 + R_ERF(xi * a));
        real pdf = R_EXP((real)-0.5 * xi * xi) * b;
        dx[i] += dy[i] * (cdf + xi * pdf);
    }
}

static void cpu_add(device *d, dten out, dten a, dten b, int n)
{
    if (!op_elementwise_ok(d, "add", n, out, a, b))
        return;
    real *o = RP(out);
    const real *x = RP(a), *y = RP(b);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        o[i] = x[i] + y[i];
}

static void cpu_accumulate(device *d, dten dst, dten src, int n)
{
    if (!op_elementwise_ok(d, "accumulate", n, dst, src, (dten){0}))
        return;
    real *o = RP(dst);
    const real *x = RP(src);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        o[i] += x[i];
}

static void cpu_scale(device *d, dten x, double s, int n)
{
    if (!op_elementwise_ok(d, "scale", n, x, x, (dten){0}))
        return;
    real *p = RP(x);
    const real f = (real)s;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        p[i] *= f;
}

void cpu_fill_elementwise(device_i *ops)
{
    ops->gelu_forward = cpu_gelu_forward;
    ops->gelu_backward = cpu_gelu_backward;
    ops->gelu_erf_forward = cpu_gelu_erf_forward;
    ops->gelu_erf_backward = cpu_gelu_erf_backward;
    ops->add = cpu_add;
    ops->accumulate = cpu_accumulate;
    ops->scale = cpu_scale;
}
