/* devices/opencl/kernels/rmsnorm.cl: RMSNorm (HF LlamaRMSNorm) over the last dim C. One
 * work-group per row (sum of squares in acc_t through a work-group sum); dw is a column sum
 * with one work-group per channel. Same formulas as the cpu reference. */

__kernel void rmsnorm_forward(__global float *out, ulong out_off, __global float *rstd,
                              ulong rstd_off, __global const float *inp, ulong inp_off,
                              __global const float *w, ulong w_off, int C, acc_t eps)
{
    __local acc_t buf[WG_BUF];
    size_t n = get_group_id(0);
    int lid = get_local_id(0);
    __global const float *x = inp + inp_off + n * C;
    acc_t ss = 0;
    for (int c = lid; c < C; c += WG)
        ss += (acc_t)x[c] * x[c];
    ss = wg_sum(buf, ss);
    float r = (float)((acc_t)1 / sqrt(ss / C + eps));
    __global float *y = out + out_off + n * C;
    for (int c = lid; c < C; c += WG) {
        float xhat = x[c] * r;
        y[c] = xhat * w[w_off + c];
    }
    if (lid == 0)
        rstd[rstd_off + n] = r;
}

/* dinp += rstd * (dout w - xhat * mean(dout w xhat)) */
__kernel void rmsnorm_backward_inp(__global float *dinp, ulong dinp_off,
                                   __global const float *dout, ulong dout_off,
                                   __global const float *inp, ulong inp_off,
                                   __global const float *w, ulong w_off,
                                   __global const float *rstd, ulong rstd_off, int C)
{
    __local acc_t buf[WG_BUF];
    size_t n = get_group_id(0);
    int lid = get_local_id(0);
    __global const float *x = inp + inp_off + n * C, *g = dout + dout_off + n * C;
    w += w_off;
    acc_t r = rstd[rstd_off + n], m = 0;
    for (int c = lid; c < C; c += WG)
        m += (acc_t)g[c] * w[c] * x[c] * r;
    m = wg_sum(buf, m) / C;
    __global float *dx = dinp + dinp_off + n * C;
    for (int c = lid; c < C; c += WG)
        dx[c] += (float)(((acc_t)g[c] * w[c] - x[c] * r * m) * r);
}

/* dw[c] += sum_n dout * xhat: group c, items take rows lid, lid + WG, ... */
__kernel void rmsnorm_backward_w(__global float *dw, ulong dw_off, __global const float *dout,
                                 ulong dout_off, __global const float *inp, ulong inp_off,
                                 __global const float *rstd, ulong rstd_off, int N, int C)
{
    __local acc_t buf[WG_BUF];
    size_t c = get_group_id(0);
    acc_t sw = 0;
    for (int n = get_local_id(0); n < N; n += WG) {
        size_t i = (size_t)n * C + c;
        sw += (acc_t)dout[dout_off + i] * inp[inp_off + i] * rstd[rstd_off + n];
    }
    sw = wg_sum(buf, sw);
    if (get_local_id(0) == 0)
        dw[dw_off + c] += (float)sw;
}
