/* devices/kernels/dropout.cl: dropout forward and backward with the keep decisions of
 * devices/philox.h (embedded ahead of the kernels): one work-item per block of 4 elements. */

/* y[i] (+)= keep_i ? x[i] * scale : 0; mask[i] = keep_i when has_mask. The key is the seed's two
 * halves, the counter {block, site, layer, step} (docs/ops.md, "Philox layout"). */
KERNEL void dropout_apply(GLOBAL float *y, ulong y_off, GLOBAL int *mask, ulong mask_off,
                            int has_mask, GLOBAL const float *x, ulong x_off, ulong n,
                            int accumulate, ulong thr, float scale, ulong seed, ulong step,
                            ulong layer, ulong site)
{
    size_t blk = GLOBAL_ID;
    if (blk >= (n + 3) / 4)
        return;
    philox_ctr r = philox_dropout_block(seed, (uint)step, (uint)layer, (uint)site, (uint)blk);
    for (int j = 0; j < 4; j++) {
        size_t i = blk * 4 + j;
        if (i >= n)
            break;
        int keep = philox_keep(r.v[j], thr);
        float v = keep ? x[x_off + i] * scale : 0.0f;
        if (accumulate)
            y[y_off + i] += v;
        else
            y[y_off + i] = v;
        if (has_mask)
            mask[mask_off + i] = keep;
    }
}
