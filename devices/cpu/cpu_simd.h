/* devices/cpu/cpu_simd.h: what lets the cpu backend's loops vectorize: a clone of a kernel per
 * x86-64 vector level chosen at load time, and exp written as plain arithmetic (no libm call). */
#ifndef CPU_SIMD_H
#define CPU_SIMD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_real.h"

/* A kernel marked CPU_CLONES is compiled for AVX-512, AVX2 and the x86-64 baseline, and the
 * loader picks the widest the machine has. The clones give the same bits: the sources build
 * with -std=c11, so GCC contracts no a*b+c into an FMA (-ffp-contract=off), and a kernel's
 * reductions keep their order in every clone (GCC reorders none without -ffast-math). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CPU_CLONES
#endif

/* Lanes of the fixed-order partial sums in a vectorized reduction: element i goes to lane
 * i % CPU_LANES, the lanes are added in order at the end; the same result at any vector width
 * and thread count. */
#define CPU_LANES 16

/* sum of f(i) for i < n in double, lane by lane (CPU_LANES); f is an expression in i */
#define CPU_LANE_SUM(result, n, f)                                                              \
    do {                                                                                        \
        double lane_[CPU_LANES] = {0};                                                          \
        long whole_ = (long)(n) - (long)(n) % CPU_LANES, i;                                     \
        for (long base_ = 0; base_ < whole_; base_ += CPU_LANES)                                \
            for (int j_ = 0; j_ < CPU_LANES; j_++) {                                            \
                i = base_ + j_;                                                                 \
                lane_[j_] += (f);                                                               \
            }                                                                                   \
        for (i = whole_; i < (long)(n); i++)                                                    \
            lane_[i - whole_] += (f);                                                           \
        double sum_ = 0;                                                                        \
        for (int j_ = 0; j_ < CPU_LANES; j_++)                                                  \
            sum_ += lane_[j_];                                                                  \
        (result) = sum_;                                                                        \
    } while (0)

#ifdef CPU_REAL_DOUBLE
/* exp(x) in double: x = n ln2 + r, |r| <= ln2/2, Cephes' rational for e^r (under 2 ulp), the
 * exponent n put in by bits; inf above 709.78, 0 below -708.39, NaN stays NaN */
static inline double cpu_vexp(double x)
{
    double xc = x > 709.78 ? 709.78 : x < -708.39 ? -708.39 : x;
    double n = xc * 1.4426950408889634 + 6755399441055744.0; /* round to nearest */
    n -= 6755399441055744.0;
    double r = xc - n * 6.93145751953125E-1 - n * 1.42860682030941723212E-6;
    double rr = r * r;
    double px = r * ((1.26177193074810590878E-4 * rr + 3.02994407707441961300E-2) * rr +
                     9.99999999999999999910E-1);
    double qx = ((3.00198505138664455042E-6 * rr + 2.52448340349684104192E-3) * rr +
                 2.27265548208155028766E-1) * rr + 2.00000000000000000009E0;
    double e = 1.0 + 2.0 * (px / (qx - px));
    int64_t ni = (int64_t)n, top = ni > 1023; /* n = 1024: 2^1023 * 2 */
    int64_t bits = (ni - top + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    e *= scale;
    e = top ? e * 2.0 : e;
    return x > 709.78 ? INFINITY : x < -708.39 ? 0.0 : e;
}
#else
/* exp(x) in float: x = n ln2 + r, |r| <= ln2/2, Cephes' expf polynomial for e^r (about 1 ulp),
 * the exponent n put in by bits; inf above 88.72, 0 below -87.33, NaN stays NaN */
static inline float cpu_vexp(float x)
{
    float xc = x > 88.72f ? 88.72f : x < -87.33f ? -87.33f : x;
    float n = xc * 1.44269504088896341f + 12582912.0f; /* round to nearest */
    n -= 12582912.0f;
    float r = xc - n * 0.693359375f - n * -2.12194440e-4f;
    float p = 1.9875691500E-4f;
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    float e = p * r * r + r + 1.0f;
    int32_t ni = (int32_t)n, top = ni > 127; /* n = 128: 2^127 * 2 */
    int32_t bits = (ni - top + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    e *= scale;
    e = top ? e * 2.0f : e;
    return x > 88.72f ? INFINITY : x < -87.33f ? 0.0f : e;
}
#endif

#endif
