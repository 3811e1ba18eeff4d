/* devices/kernels/rmsnorm.cl: RMSNorm (HF LlamaRMSNorm) over the last dim C. One
 * work-group per row (sum of squares in acc_t through a work-group sum); dw is a column sum
 * with one work-group per channel. Same formulas as the cpu reference. */

KERNEL void rmsnorm_forward(GLOBAL float *out, ulong out_off, GLOBAL float *rstd,
                              ulong rstd_off, GLOBAL const float *inp, ulong inp_off,
                              GLOBAL const float *w, ulong w_off, int C, acc_t eps)
{
    LOCAL_MEM acc_t buf[WG_BUF];
    size_t n = GROUP_ID;
    int lid = LOCAL_ID;
    GLOBAL const float *x = inp + inp_off + n * C;
    acc_t ss = 0;
    for (int c = lid; c < C; c += WG)
        ss += (acc_t)x[c] * x[c];
    ss = wg_sum(buf, ss);
    float r = (float)((acc_t)1 / sqrt(ss / C + eps));
    GLOBAL float *y = out + out_off + n * C;
    for (int c = lid; c < C; c += WG) {
        float xhat = x[c] * r;
        y[c] = xhat * w[w_off + c];
    }
    if (lid == 0)
        rstd[rstd_off + n] = r;
}

/* dinp += rstd * (dout w - xhat * mean(dout w xhat)) */
KERNEL void rmsnorm_backward_inp(GLOBAL float *dinp, ulong dinp_off,
                                   GLOBAL const float *dout, ulong dout_off,
                                   GLOBAL const float *inp, ulong inp_off,
                                   GLOBAL const float *w, ulong w_off,
                                   GLOBAL const float *rstd, ulong rstd_off, int C)
{
    LOCAL_MEM acc_t buf[WG_BUF];
    size_t n = GROUP_ID;
    int lid = LOCAL_ID;
    GLOBAL const float *x = inp + inp_off + n * C, *g = dout + dout_off + n * C;
    w += w_off;
    acc_t r = rstd[rstd_off + n], m = 0;
    for (int c = lid; c < C; c += WG)
        m += (acc_t)g[c] * w[c] * x[c] * r;
    m = wg_sum(buf, m) / C;
    GLOBAL float *dx = dinp + dinp_off + n * C;
    for (int c = lid; c < C; c += WG)
        dx[c] += (float)(((acc_t)g[c] * w[c] - x[c] * r * m) * r);
}

/* dw[c] += sum_n dout * xhat: group c, items take rows lid, lid + WG, ... */
KERNEL void rmsnorm_backward_w(GLOBAL float *dw, ulong dw_off, GLOBAL const float *dout,
                                 ulong dout_off, GLOBAL const float *inp, ulong inp_off,
                                 GLOBAL const float *rstd, ulong rstd_off, int N, int C)
{
    LOCAL_MEM acc_t buf[WG_BUF];
    size_t c = GROUP_ID;
    acc_t sw = 0;
    for (int n = LOCAL_ID; n < N; n += WG) {
        size_t i = (size_t)n * C + c;
        sw += (acc_t)dout[dout_off + i] * inp[inp_off + i] * rstd[rstd_off + n];
    }
    sw = wg_sum(buf, sw);
    if (LOCAL_ID == 0)
        dw[dw_off + c] += (float)sw;
}
