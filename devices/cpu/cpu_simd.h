/* devices/cpu/cpu_simd.h: what lets the cpu backend's loops vectorize: a clone of a kernel per
 * x86-64 vector level chosen at load time, and an exp in float as plain arithmetic (no libm call). */
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
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&   \
    !defined(CPU_NO_CLONES) /* -DCPU_NO_CLONES: the baseline code only, to compare bits */
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

/* the end of the vector loops over a row's first send of T elements: send rounded up to whole
 * lanes (at most T), so no element goes through a scalar tail; the loops mask the elements past
 * send out (a max's -inf, a sum's +0 term: the same lanes, the same bits as stopping at send) */
static inline int cpu_padded_end(int send, int T)
{
#ifdef CPU_REAL_DOUBLE
    (void)T; /* cpu64's exp is libm's, its loops scalar: padding would only add exps */
    return send;
#else
    int up = send + (CPU_LANES - send % CPU_LANES) % CPU_LANES;
    return up < T ? up : T;
#endif
}

#ifdef CPU_REAL_DOUBLE
/* exp in double is libm's (correctly rounded or within 1 ulp): the golden device keeps it;
 * loops calling it stay scalar in cpu64 */
static inline double cpu_vexp(double x)
{
    return exp(x);
}
#else
/* exp(x) in float: x = n ln2 + r, |r| <= ln2/2, Cephes' expf polynomial for e^r (about 1 ulp),
 * the exponent n put in by bits; inf above 88.72, 0 below -87.33, NaN stays NaN */
static inline float cpu_vexp(float x)
{
    float xc = x > 88.72f ? 88.72f : x < -87.33f ? -87.33f : x == x ? x : 0.0f; /* NaN: 0 */
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
    uint32_t bits = (uint32_t)(ni - top + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    e *= scale;
    e = top ? e * 2.0f : e;
    return x > 88.72f ? INFINITY : x < -87.33f ? 0.0f : x == x ? e : x;
}
#endif

#endif
