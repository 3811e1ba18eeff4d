/* devices/kernels/lowp.cl: bf16/fp16 rounding of fp32 elements in place, round to nearest even:
 * the same bit operations as devices/lowp.h's lowp_bf16_round and lowp_fp16_round (the cpu's). */

DEVICE_FN float lowp_round_bf16(float x)
{
    uint b = AS_UINT(x);
    if (x != x)
        return AS_FLOAT((b | 0x00400000u) & 0xffff0000u);
    return AS_FLOAT((b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u);
}

/* |x| >= 65520 overflows to Inf; below 2^-14 the quantum is 2^-24 (exact scalings in fp32) */
DEVICE_FN float lowp_round_fp16(float x)
{
    uint b = AS_UINT(x), sign = b & 0x80000000u, a = b & 0x7fffffffu;
    if (x != x)
        return AS_FLOAT((b | 0x00400000u) & 0xffffe000u);
    if (a >= 0x477ff000u)
        return AS_FLOAT(sign | 0x7f800000u);
    if (a < 0x38800000u) {
        float r = rint(AS_FLOAT(a) * 16777216.0f) * (1.0f / 16777216.0f);
        return AS_FLOAT(sign | AS_UINT(r));
    }
    return AS_FLOAT(sign | ((a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u));
}

/* mode 1 bf16, 2 fp16 (the host checks it) */
KERNEL void lowp_round(GLOBAL float *x, ulong x_off, int n, int mode)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)n)
        return;
    float v = x[x_off + i];
    x[x_off + i] = mode == 1 ? lowp_round_bf16(v) : lowp_round_fp16(v);
}
