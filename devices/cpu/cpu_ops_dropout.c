/* devices/cpu/cpu_ops_dropout.c: the cpu backend's dropout, forward and backward, with the keep
 * decisions drawn from Philox4x32-10 (devices/philox.h), four elements per Philox block. */
#include "cpu_real.h"
#include "cpu_simd.h"

#include "philox.h"

/* the scale of kept elements, 1/(1-p) in double rounded once; 0 when p = 1 (nothing is kept) */
static real keep_scale(double p)
{
    return p < 1 ? (real)(1.0 / (1.0 - p)) : 0;
}

/* elements per chunk of the parallel loop (a multiple of 4 * CPU_PHILOX_GROUP) */
#define DROP_CHUNK 4096L

/* the group's counters are kept lane by lane (one array per counter word), so the ten rounds
 * run as vector multiplies over the group's blocks */
CPU_CLONES static void philox_group(philox_u32 *restrict words, philox_u32 b0, int nb,
                                    uint64_t seed, philox_u32 step, philox_u32 layer,
                                    philox_u32 site)
{
    philox_u32 c0[CPU_PHILOX_GROUP], c1[CPU_PHILOX_GROUP], c2[CPU_PHILOX_GROUP];
    philox_u32 c3[CPU_PHILOX_GROUP];
    for (int l = 0; l < nb; l++) {
        c0[l] = b0 + (philox_u32)l;
        c1[l] = site;
        c2[l] = layer;
        c3[l] = step;
    }
    philox_u32 k0 = (philox_u32)seed, k1 = (philox_u32)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        for (int l = 0; l < nb; l++) {
            philox_u64 p0 = (philox_u64)PHILOX_M0 * c0[l], p1 = (philox_u64)PHILOX_M1 * c2[l];
            philox_u32 n0 = (philox_u32)(p1 >> 32) ^ c1[l] ^ k0;
            philox_u32 n2 = (philox_u32)(p0 >> 32) ^ c3[l] ^ k1;
            c1[l] = (philox_u32)p1;
            c3[l] = (philox_u32)p0;
            c0[l] = n0;
            c2[l] = n2;
        }
    }
    for (int l = 0; l < nb; l++) {
        words[4 * l] = c0[l];
        words[4 * l + 1] = c1[l];
        words[4 * l + 2] = c2[l];
        words[4 * l + 3] = c3[l];
    }
}

void cpu_philox_words(uint32_t *words, uint32_t b0, int nb, uint64_t seed, uint32_t step,
                      uint32_t layer, uint32_t site)
{
    philox_group(words, b0, nb < CPU_PHILOX_GROUP ? nb : CPU_PHILOX_GROUP, seed, step, layer,
                 site);
}

typedef struct {
    uint64_t seed;
    uint32_t step, layer, site;
    philox_u64 thr;
    real scale;
} drop_key;

/* y[j] (+)= words[j] keeps ? x[j] * scale : 0, mask[j] = keep (mask may be NULL) for j < n */
CPU_CLONES static void drop_words(real *y, int32_t *mask, const real *x,
                                  const philox_u32 *restrict words, long n, int accumulate,
                                  philox_u64 thr, real scale)
{
    if (mask)
        for (long j = 0; j < n; j++)
            mask[j] = philox_keep(words[j], thr);
    if (accumulate)
        for (long j = 0; j < n; j++)
            y[j] += philox_keep(words[j], thr) ? x[j] * scale : 0;
    else if (y == x) /* in place: one pointer, so the loop vectorizes without an overlap test */
        for (long j = 0; j < n; j++)
            y[j] = philox_keep(words[j], thr) ? y[j] * scale : 0;
    else
        for (long j = 0; j < n; j++)
            y[j] = philox_keep(words[j], thr) ? x[j] * scale : 0;
}

/* elements [i0, i0 + n) of dropout_apply; i0 a multiple of 4 */
static void dropout_chunk(real *y, int32_t *mask, const real *x, long i0, long n, int accumulate,
                          const drop_key *k)
{
    philox_u32 words[4 * CPU_PHILOX_GROUP];
    for (long g = 0; g < n; g += 4 * CPU_PHILOX_GROUP) {
        long len = n - g < 4 * CPU_PHILOX_GROUP ? n - g : 4 * CPU_PHILOX_GROUP, i = i0 + g;
        philox_group(words, (philox_u32)(i >> 2), (int)((len + 3) / 4), k->seed, k->step,
                     k->layer, k->site);
        drop_words(y + i, mask ? mask + i : NULL, x + i, words, len, accumulate, k->thr,
                   k->scale);
    }
}

/* y[i] (+)= keep_i ? x[i] * scale : 0 for i < n; mask[i] = keep_i when mask is not NULL */
static void dropout_apply(real *y, int32_t *mask, const real *x, long n, int accumulate,
                          double p, uint64_t seed, uint32_t step, uint32_t layer, uint32_t site)
{
    drop_key k = {seed, step, layer, site, philox_dropout_threshold(p), keep_scale(p)};
    long chunks = (n + DROP_CHUNK - 1) / DROP_CHUNK;
#pragma omp parallel for schedule(static)
    for (long ch = 0; ch < chunks; ch++) {
        long i0 = ch * DROP_CHUNK;
        dropout_chunk(y, mask, x, i0, n - i0 < DROP_CHUNK ? n - i0 : DROP_CHUNK, accumulate, &k);
    }
}

static void cpu_dropout_forward(device *d, dten out, dten mask, dten inp, int n, double p,
                                uint64_t seed, uint32_t step, uint32_t layer, uint32_t site)
{
    if (!op_dropout_ok(d, "dropout_forward", n, p, out, inp, mask))
        return;
    dropout_apply(RP(out), mask.buf ? IP(mask) : NULL, RP(inp), n, 0, p, seed, step, layer,
                  site);
}

static void cpu_dropout_backward(device *d, dten dinp, dten dout, int n, double p, uint64_t seed,
                                 uint32_t step, uint32_t layer, uint32_t site)
{
    if (!op_dropout_ok(d, "dropout_backward", n, p, dinp, dout, (dten){0}))
        return;
    dropout_apply(RP(dinp), NULL, RP(dout), n, 1, p, seed, step, layer, site);
}

void cpu_fill_dropout(device_i *ops)
{
    ops->dropout_forward = cpu_dropout_forward;
    ops->dropout_backward = cpu_dropout_backward;
}
