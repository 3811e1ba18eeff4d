/* devices/lowp.h: bf16 and fp16 rounding on the host (round to nearest even, as IEEE 754 binary16
 * and bfloat16 define it) and the low-precision mode of a device (devices/lowp.c, docs/precision.md). */
#ifndef LOWP_H
#define LOWP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "device.h"

/* what a device's GEMMs round to (device.lowp); LOWP_NONE: the element type, no rounding */
typedef enum { LOWP_NONE = 0, LOWP_BF16 = 1, LOWP_FP16 = 2 } lowp_mode;

/* ---- the definition: any double rounded to a binary format -------------------------------
 * p significand bits (implicit bit included), normal exponents [emin, emax]; round to nearest,
 * ties to even; subnormals below 2^emin keep the quantum 2^(emin - p + 1); a result above the
 * largest finite value is +-Inf (IEEE: x >= max + half an ulp overflows); NaN, Inf and +-0 are
 * returned as they are. bf16: p 8, emin -126, emax 127; fp16: p 11, emin -14, emax 15. */
static inline double lowp_round_format(double x, int p, int emin, int emax)
{
    if (!isfinite(x) || x == 0)
        return x;
    int e = ilogb(x);
    if (e < emin)
        e = emin;
    double quantum = ldexp(1.0, e - (p - 1));
    double r = nearbyint(x / quantum) * quantum; /* the default rounding mode: to nearest even */
    double max_finite = ldexp(2.0 - ldexp(1.0, 1 - p), emax);
    return fabs(r) > max_finite ? copysign(INFINITY, x) : r;
}

/* x (a double, e.g. cpu64's element) rounded directly to the format of mode */
static inline double lowp_round_double(double x, lowp_mode mode)
{
    if (mode == LOWP_BF16)
        return lowp_round_format(x, 8, -126, 127);
    if (mode == LOWP_FP16)
        return lowp_round_format(x, 11, -14, 15);
    return x;
}

/* ---- fp32 inputs: the bit operations the kernels of devices/kernels/lowp.cl also use -------- */
static inline uint32_t lowp_bits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static inline float lowp_float(uint32_t b)
{
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* bf16: add 0x7fff plus the lowest kept bit, drop 16 bits (a carry into the exponent is the
 * correct rounding up, to Inf past the largest finite); a NaN stays a quiet NaN */
static inline float lowp_bf16_round(float x)
{
    uint32_t b = lowp_bits(x);
    if (x != x)
        return lowp_float((b | 0x00400000u) & 0xffff0000u);
    return lowp_float((b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u);
}

/* fp16: |x| >= 65520 (65504 plus half its ulp) is Inf; below 2^-14 the quantum is 2^-24 (the
 * scaling by 2^24 and back is exact in fp32); otherwise 13 of the 23 fraction bits dropped as
 * bf16 drops 16 */
static inline float lowp_fp16_round(float x)
{
    uint32_t b = lowp_bits(x), sign = b & 0x80000000u, a = b & 0x7fffffffu;
    if (x != x)
        return lowp_float((b | 0x00400000u) & 0xffffe000u);
    if (a >= 0x477ff000u) /* 65520 */
        return lowp_float(sign | 0x7f800000u);
    if (a < 0x38800000u) { /* 2^-14 */
        float r = nearbyintf(lowp_float(a) * 16777216.0f) * (1.0f / 16777216.0f);
        return lowp_float(sign | lowp_bits(r));
    }
    return lowp_float(sign | ((a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u));
}

static inline float lowp_round_float(float x, lowp_mode mode)
{
    return mode == LOWP_BF16 ? lowp_bf16_round(x) : mode == LOWP_FP16 ? lowp_fp16_round(x) : x;
}

/* ---- the device's mode (devices/lowp.c) --------------------------------------------------- */

/* the mode a scenario dtype names: "bf16", "fp16"; anything else (fp32, fp64) LOWP_NONE */
lowp_mode lowp_mode_of(const char *dtype);
const char *lowp_mode_name(lowp_mode mode); /* "bf16", "fp16", "none" */

/* Puts d in mode (before any op of a run): its table becomes a copy of the backend's whose gemm
 * rounds as docs/precision.md says (the backend's round_lowp on its inputs and product) and
 * whose softmax_xent_backward multiplies its scale by d->loss_scale. LOWP_NONE restores the
 * backend's table. Returns 0, or 1 with why (a backend without round_lowp, e.g. a plugin). */
int device_set_lowp(device *d, lowp_mode mode, char *why, size_t len);

#endif
