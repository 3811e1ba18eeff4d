/* devices/philox.h: the counter-based generator Philox4x32-10 (Random123) and the dropout
 * decision built on it, one text compiled as C (cpu backends, host), as OpenCL C (embedded) and
 * as CUDA C (the cuda backend's kernels). */

/* Written in the subset C11 and OpenCL C 1.2 share, so every device draws the same bits: the
 * opencl backend embeds this file ahead of its kernels (devices/opencl/ocl_program.c). The
 * layout of counter and key for dropout is in docs/ops.md ("Philox layout"). */
#ifndef PHILOX_H
#define PHILOX_H

#ifdef __OPENCL_VERSION__
typedef uint philox_u32;
typedef ulong philox_u64;
#define PHILOX_FN
#elif defined(__CUDACC__) || defined(__MUSACC__)
#include <stdint.h>
typedef uint32_t philox_u32;
typedef uint64_t philox_u64;
#define PHILOX_FN static inline __host__ __device__
#else
#include <stdint.h>
typedef uint32_t philox_u32;
typedef uint64_t philox_u64;
#define PHILOX_FN static inline
#endif

/* Random123's constants: the round multipliers and the Weyl key increments */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

typedef struct {
    philox_u32 v[4];
} philox_ctr;

/* One Philox4x32 round: the two 32x32->64 products' halves mixed with the key (Random123's
 * philox4x32round: out = {hi1^c1^k0, lo1, hi0^c3^k1, lo0}) */
PHILOX_FN philox_ctr philox4x32_round(philox_ctr c, philox_u32 k0, philox_u32 k1)
{
    philox_u64 p0 = (philox_u64)PHILOX_M0 * c.v[0];
    philox_u64 p1 = (philox_u64)PHILOX_M1 * c.v[2];
    philox_ctr o;
    o.v[0] = (philox_u32)(p1 >> 32) ^ c.v[1] ^ k0;
    o.v[1] = (philox_u32)p1;
    o.v[2] = (philox_u32)(p0 >> 32) ^ c.v[3] ^ k1;
    o.v[3] = (philox_u32)p0;
    return o;
}

/* Philox4x32 with `rounds` rounds (10 is Philox4x32-10); the key is bumped before every round
 * after the first, as Random123 does */
PHILOX_FN philox_ctr philox4x32_rounds(philox_ctr c, philox_u32 k0, philox_u32 k1, int rounds)
{
    for (int r = 0; r < rounds; r++) {
        if (r > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        c = philox4x32_round(c, k0, k1);
    }
    return c;
}

PHILOX_FN philox_ctr philox4x32_10(philox_ctr c, philox_u32 k0, philox_u32 k1)
{
    return philox4x32_rounds(c, k0, k1, 10);
}

/* The counter of block `block` (4 elements) of one dropout site: {block, site, layer, step}.
 * Key: {seed low 32 bits, seed high 32 bits}. Element i uses word i % 4 of block i / 4. */
PHILOX_FN philox_ctr philox_dropout_block(philox_u64 seed, philox_u32 step, philox_u32 layer,
                                          philox_u32 site, philox_u32 block)
{
    philox_ctr c;
    c.v[0] = block;
    c.v[1] = site;
    c.v[2] = layer;
    c.v[3] = step;
    return philox4x32_10(c, (philox_u32)seed, (philox_u32)(seed >> 32));
}

/* Element i is dropped when its 32-bit word x is below the threshold thr = ceil(p * 2^32)
 * (philox_dropout_threshold): the same as "u = x * 2^-32 < p" with u in [0, 1), decided in
 * integers so every device agrees. thr = 0 keeps everything, 2^32 drops everything. */
PHILOX_FN int philox_keep(philox_u32 x, philox_u64 thr)
{
    return (philox_u64)x >= thr;
}

/* A uniform float in [0, 1) from one 32-bit word: its top 24 bits times 2^-24 (exact in fp32,
 * so every device gets the same float); and a double from all 32 bits, x * 2^-32. */
PHILOX_FN float philox_u01_f32(philox_u32 x)
{
    return (float)(x >> 8) * (1.0f / 16777216.0f);
}

#ifndef __OPENCL_VERSION__
#include <math.h>

PHILOX_FN double philox_u01_f64(philox_u32 x)
{
    return (double)x * (1.0 / 4294967296.0);
}

/* the host's threshold for drop probability p in [0, 1]: ceil(p * 2^32), exact in double */
PHILOX_FN philox_u64 philox_dropout_threshold(double p)
{
    return (philox_u64)ceil(p * 4294967296.0);
}

/* the keep decision of element i, as the devices make it (for references and tests) */
PHILOX_FN int philox_dropout_keep(philox_u64 seed, philox_u32 step, philox_u32 layer,
                                  philox_u32 site, philox_u64 i, philox_u64 thr)
{
    philox_ctr c = philox_dropout_block(seed, step, layer, site, (philox_u32)(i >> 2));
    return philox_keep(c.v[i & 3], thr);
}
#endif

#endif
