/* devices/kernels/rope.cl: rotary position embedding (HF Llama's rotate_half convention)
 * on [B,T,NH,hs] from cos/sin tables [T,hs/2]: one work-item per (row, i < hs/2) pair, so in
 * place is safe. Same expressions as the cpu reference. */

KERNEL void rope_forward(GLOBAL float *out, ulong out_off, GLOBAL const float *inp,
                           ulong inp_off, GLOBAL const float *cos_t, ulong cos_off,
                           GLOBAL const float *sin_t, ulong sin_off, int T, int NH, int hs,
                           ulong pairs)
{
    size_t p = GLOBAL_ID;
    if (p >= pairs)
        return;
    int hh = hs / 2;
    size_t r = p / hh, i = p % hh, t = (r / NH) % T;
    float c = cos_t[cos_off + t * hh + i], s = sin_t[sin_off + t * hh + i];
    size_t a = r * hs + i;
    float x1 = inp[inp_off + a], x2 = inp[inp_off + a + hh];
    out[out_off + a] = x1 * c - x2 * s;
    out[out_off + a + hh] = x2 * c + x1 * s;
}

/* the transpose: dinp[i] += dout[i] c + dout[i+h] s, dinp[i+h] += dout[i+h] c - dout[i] s */
KERNEL void rope_backward(GLOBAL float *dinp, ulong dinp_off, GLOBAL const float *dout,
                            ulong dout_off, GLOBAL const float *cos_t, ulong cos_off,
                            GLOBAL const float *sin_t, ulong sin_off, int T, int NH, int hs,
                            ulong pairs)
{
    size_t p = GLOBAL_ID;
    if (p >= pairs)
        return;
    int hh = hs / 2;
    size_t r = p / hh, i = p % hh, t = (r / NH) % T;
    float c = cos_t[cos_off + t * hh + i], s = sin_t[sin_off + t * hh + i];
    size_t a = r * hs + i;
    float g1 = dout[dout_off + a], g2 = dout[dout_off + a + hh];
    dinp[dinp_off + a] += g1 * c + g2 * s;
    dinp[dinp_off + a + hh] += g2 * c - g1 * s;
}
