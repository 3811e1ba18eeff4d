/* devices/kernels/layernorm.cl: layernorm over the last dim C. One work-group per row
 * (items stride over channels, statistics in acc_t through work-group sums); dw/db are column
 * sums with one work-group per channel. Same formulas as the cpu reference. */

KERNEL void layernorm_forward(GLOBAL float *out, ulong out_off, GLOBAL float *mean,
                                ulong mean_off, GLOBAL float *rstd, ulong rstd_off,
                                GLOBAL const float *inp, ulong inp_off,
                                GLOBAL const float *w, ulong w_off, GLOBAL const float *b,
                                ulong b_off, int C, acc_t eps)
{
    LOCAL_MEM acc_t buf[WG_BUF];
    size_t n = GROUP_ID;
    int lid = LOCAL_ID;
    GLOBAL const float *x = inp + inp_off + n * C;
    acc_t s = 0;
    for (int c = lid; c < C; c += WG)
        s += x[c];
    acc_t m = wg_sum(buf, s) / C;
    acc_t v = 0;
    for (int c = lid; c < C; c += WG)
        v += (x[c] - m) * (x[c] - m);
    v = wg_sum(buf, v);
    acc_t r = (acc_t)1 / sqrt(v / C + eps);
    GLOBAL float *y = out + out_off + n * C;
    for (int c = lid; c < C; c += WG)
        y[c] = (float)((x[c] - m) * r) * w[w_off + c] + b[b_off + c];
    if (lid == 0) {
        mean[mean_off + n] = (float)m;
        rstd[rstd_off + n] = (float)r;
    }
}

/* dinp += rstd * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat)), dnorm = dout * w */
KERNEL void layernorm_backward_inp(GLOBAL float *dinp, ulong dinp_off,
                                     GLOBAL const float *dout, ulong dout_off,
                                     GLOBAL const float *inp, ulong inp_off,
                                     GLOBAL const float *w, ulong w_off,
                                     GLOBAL const float *mean, ulong mean_off,
                                     GLOBAL const float *rstd, ulong rstd_off, int C)
{
    LOCAL_MEM acc_t buf[WG_BUF];
    size_t n = GROUP_ID;
    int lid = LOCAL_ID;
    GLOBAL const float *x = inp + inp_off + n * C, *g = dout + dout_off + n * C;
    w += w_off;
    acc_t m = mean[mean_off + n], r = rstd[rstd_off + n], m1 = 0, m2 = 0;
    for (int c = lid; c < C; c += WG) {
        acc_t dn = (acc_t)g[c] * w[c];
        m1 += dn;
        m2 += dn * (x[c] - m) * r;
    }
    m1 = wg_sum(buf, m1) / C;
    m2 = wg_sum(buf, m2) / C;
    GLOBAL float *dx = dinp + dinp_off + n * C;
    for (int c = lid; c < C; c += WG) {
        acc_t xhat = (x[c] - m) * r;
        dx[c] += (float)(((acc_t)g[c] * w[c] - m1 - xhat * m2) * r);
    }
}

/* dw[c] += sum_n dout * xhat, db[c] += sum_n dout: group c, items take rows lid, lid + WG, ... */
KERNEL void layernorm_backward_wb(GLOBAL float *dw, ulong dw_off, GLOBAL float *db,
                                    ulong db_off, GLOBAL const float *dout, ulong dout_off,
                                    GLOBAL const float *inp, ulong inp_off,
                                    GLOBAL const float *mean, ulong mean_off,
                                    GLOBAL const float *rstd, ulong rstd_off, int N, int C)
{
    LOCAL_MEM acc_t buf[WG_BUF];
    size_t c = GROUP_ID;
    acc_t sw = 0, sb = 0;
    for (int n = LOCAL_ID; n < N; n += WG) {
        size_t i = (size_t)n * C + c;
        acc_t g = dout[dout_off + i];
        acc_t xhat = (inp[inp_off + i] - (acc_t)mean[mean_off + n]) * rstd[rstd_off + n];
        sw += g * xhat;
        sb += g;
    }
    sw = wg_sum(buf, sw);
    sb = wg_sum(buf, sb);
    if (LOCAL_ID == 0) {
        dw[dw_off + c] += (float)sw;
        db[db_off + c] += (float)sb;
    }
}
