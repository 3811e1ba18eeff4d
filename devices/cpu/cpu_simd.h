/* devices/cpu/cpu_simd.h: what lets the cpu backend's loops vectorize: a clone of a kernel per
 * x86-64 vector level chosen at load time, and exp (float; double for cpu64) as plain arithmetic. */
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
    int up = send + (CPU_LANES - send % CPU_LANES) % CPU_LANES;
    return up < T ? up : T;
}

#ifdef CPU_REAL_DOUBLE
/* 2^n for n in [-1022, 1023], by bits */
static inline double cpu_pow2(int64_t n)
{
    uint64_t bits = (uint64_t)(n + 1023) << 52;
    double p;
    memcpy(&p, &bits, sizeof p);
    return p;
}

/* exp(x) in double as plain arithmetic, so the golden device's loops vectorize: x = n ln2 + r,
 * ln2 in two parts (n ln2_hi exact, r's low part kept), e^r = 1 + r + r^2 p(r) with p the Taylor
 * terms to r^13/13! (truncation 4e-18), the sums carried exactly in two doubles (Fast2Sum) and
 * rounded once; then 2^n in two halves, each a normal number (a subnormal result is rounded a
 * second time there). Within 0.7 ulp, 1 ulp of a subnormal result (tests/test_cpu_exp.c measures
 * it against long double); inf above 709.7827, 0 below -745.1332, NaN stays NaN */
static inline double cpu_vexp(double x)
{
    const double top = 709.782712893384, bottom = -745.1332191019411;
    double xc = x > top ? top : x < bottom ? bottom : x == x ? x : 0.0; /* NaN: 0 */
    double n = xc * 1.4426950408889634074 + 6755399441055744.0; /* round to nearest */
    n -= 6755399441055744.0;
    double r1 = xc - n * 6.93145751953125E-1;    /* exact */
    double r2 = -(n * 1.42860682030941723212E-6); /* tiny */
    double r = r1 + r2, r_lo = r2 - (r - r1); /* r + r_lo = r1 + r2 exactly (|r1| >= |r2|) */
    double p = 1.6059043836821613e-10; /* sum of r^(k-2) / k! for k = 2..13, Horner */
    p = __builtin_fma(p, r, 2.08767569878681e-09);
    p = __builtin_fma(p, r, 2.505210838544172e-08);
    p = __builtin_fma(p, r, 2.755731922398589e-07);
    p = __builtin_fma(p, r, 2.7557319223985893e-06);
    p = __builtin_fma(p, r, 2.48015873015873e-05);
    p = __builtin_fma(p, r, 0.0001984126984126984);
    p = __builtin_fma(p, r, 0.001388888888888889);
    p = __builtin_fma(p, r, 0.008333333333333333);
    p = __builtin_fma(p, r, 0.041666666666666664);
    p = __builtin_fma(p, r, 0.16666666666666666);
    p = __builtin_fma(p, r, 0.5);
    double s = r * r * p, t = r + s, t_lo = s - (t - r);   /* t + t_lo = r + s (|r| >= |s|) */
    double hi = 1.0 + t, lo = (1.0 - hi) + t + (t_lo + r_lo); /* 1 + t exact as hi + lo */
    double e = hi + lo; /* one rounding of the whole: about 0.5 ulp */
    int64_t ni = (int64_t)n, half = ni / 2;
    e = e * cpu_pow2(half) * cpu_pow2(ni - half);
    return x > top ? INFINITY : x < bottom ? 0.0 : x == x ? e : x;
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
