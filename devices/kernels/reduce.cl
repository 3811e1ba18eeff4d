/* devices/kernels/reduce.cl: reductions in a fixed order (no atomics, so results repeat
 * bit for bit): sum / sum of squares into per-group partials, and column sums for bias grads. */

/* REDUCE_GROUPS groups of WG items; item g sums its contiguous chunk of x in order, then each
 * group sums its items in a tree and writes one partial; the host adds the partials in double,
 * in order. (The tree, not wg_sum: after this loop PoCL ran wg_sum's serial form 60x slower.) */
KERNEL void reduce_partial(GLOBAL const float *x, ulong x_off, int n, int squares,
                             GLOBAL acc_t *partial)
{
    LOCAL_MEM acc_t buf[WG_BUF];
    size_t items = GLOBAL_SIZE, chunk = ((size_t)n + items - 1) / items;
    size_t lo = GLOBAL_ID * chunk, hi = min(lo + chunk, (size_t)n);
    acc_t s = 0;
#if !HAVE_FP64
    acc_t comp = 0; /* without fp64: Kahan-compensated float sums */
#endif
    for (size_t i = lo; i < hi; i++) {
        acc_t v = x[x_off + i];
        v = squares ? v * v : v;
#if HAVE_FP64
        s += v;
#else
        acc_t y = v - comp, t = s + y;
        comp = (t - s) - y;
        s = t;
#endif
    }
    s = wg_sum_tree(buf, s);
    if (LOCAL_ID == 0)
        partial[GROUP_ID] = s;
}

/* dbias[c] += sum_n dout[n,c]: group c, its items take rows lid, lid + WG, ... */
KERNEL void bias_backward(GLOBAL float *dbias, ulong db_off, GLOBAL const float *dout,
                            ulong dout_off, int N, int C)
{
    LOCAL_MEM acc_t buf[WG_BUF];
    size_t c = GROUP_ID;
    acc_t s = 0;
    for (int n = LOCAL_ID; n < N; n += WG)
        s += dout[dout_off + (size_t)n * C + c];
    s = wg_sum(buf, s);
    if (LOCAL_ID == 0)
        dbias[db_off + c] += (float)s;
}
