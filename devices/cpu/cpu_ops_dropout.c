/* devices/cpu/cpu_ops_dropout.c: the cpu backend's dropout, forward and backward, with the keep
 * decisions drawn from Philox4x32-10 (devices/philox.h), four elements per Philox block. */
#include "cpu_real.h"

#include "philox.h"

/* the scale of kept elements, 1/(1-p) in double rounded once; 0 when p = 1 (nothing is kept) */
static real keep_scale(double p)
{
    return p < 1 ? (real)(1.0 / (1.0 - p)) : 0;
}

/* y[i] (+)= keep_i ? x[i] * scale : 0 for i < n; mask[i] = keep_i when mask is not NULL */
static void dropout_apply(real *y, int32_t *mask, const real *x, long n, int accumulate,
                          double p, uint64_t seed, uint32_t step, uint32_t layer, uint32_t site)
{
    const philox_u64 thr = philox_dropout_threshold(p);
    const real scale = keep_scale(p);
    long blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static)
    for (long blk = 0; blk < blocks; blk++) {
        philox_ctr r = philox_dropout_block(seed, step, layer, site, (philox_u32)blk);
        for (long i = blk * 4, j = 0; j < 4 && i < n; i++, j++) {
            int keep = philox_keep(r.v[j], thr);
            real v = keep ? x[i] * scale : 0;
            if (accumulate)
                y[i] += v;
            else
                y[i] = v;
            if (mask)
                mask[i] = keep;
        }
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
