/* devices/cpu/cpu_ops_rope.c: the cpu backend's rotary position embedding (HF Llama's
 * rotate_half convention) on [B,T,NH,hs] from cos/sin tables [T,hs/2], forward and backward. */
#include "cpu_real.h"

/* y[i] = x[i] c + sgn x[i+h] s, y[i+h] = x[i+h] c - sgn x[i] s over every (b,t,head) row:
 * sgn = -1 rotates (forward), +1 applies the transpose (backward, accumulated) */
static void rope_apply(real *y, const real *x, const real *cs, const real *sn, int B, int T,
                       int NH, int hs, int backward)
{
    int half = hs / 2;
    long rows = (long)B * T * NH;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++) {
        long t = (r / NH) % T;
        const real *xr = x + (size_t)r * hs, *c = cs + (size_t)t * half, *s = sn + (size_t)t * half;
        real *yr = y + (size_t)r * hs;
        for (int i = 0; i < half; i++) {
            real x1 = xr[i], x2 = xr[i + half]; /* read both first: y may be x */
            if (backward) {
                yr[i] += x1 * c[i] + x2 * s[i];
                yr[i + half] += x2 * c[i] - x1 * s[i];
            } else {
                yr[i] = x1 * c[i] - x2 * s[i];
                yr[i + half] = x2 * c[i] + x1 * s[i];
            }
        }
    }
}

static void cpu_rope_forward(device *d, dten out, dten inp, dten cos_t, dten sin_t, int B, int T,
                             int NH, int hs)
{
    if (!op_rope_ok(d, "rope_forward", inp, out, cos_t, sin_t, B, T, NH, hs))
        return;
    rope_apply(RP(out), RP(inp), RP(cos_t), RP(sin_t), B, T, NH, hs, 0);
}

static void cpu_rope_backward(device *d, dten dinp, dten dout, dten cos_t, dten sin_t, int B,
                              int T, int NH, int hs)
{
    if (!op_rope_ok(d, "rope_backward", dinp, dout, cos_t, sin_t, B, T, NH, hs))
        return;
    rope_apply(RP(dinp), RP(dout), RP(cos_t), RP(sin_t), B, T, NH, hs, 1);
}

void cpu_fill_rope(device_i *ops)
{
    ops->rope_forward = cpu_rope_forward;
    ops->rope_backward = cpu_rope_backward;
}
