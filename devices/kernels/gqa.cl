/* devices/kernels/gqa.cl: grouped-query attention, naive: one work-item per query row
 * (forward; backward's dq), one per element of dk/dv (summing over the group's query heads and
 * the queries), no atomics. Same loops and order as the cpu reference, sums in acc_t. */

/* the dims every kernel takes: int T, int NH, int NKV, int hs, int causal, acc_t scale,
 * km, km_off, has_mask (a key mask as attention.cl's) */
#define GQA_Q(b, t, h, c) ((((size_t)(b) * T + (t)) * NH + (h)) * hs + (c))
#define GQA_K(b, s, j, c) ((((size_t)(b) * T + (s)) * NKV + (j)) * hs + (c))
#define GQA_A(b, h, t, s) ((((size_t)(b) * NH + (h)) * T + (t)) * T + (s))
#define GQA_SEES(b, t, s)                                                                        \
    ((!causal || (s) <= (t)) && (!has_mask || km[km_off + (size_t)(b) * T + (s)] != 0))

KERNEL void gqa_forward(GLOBAL float *out, ulong out_off, GLOBAL float *att, ulong att_off,
                          GLOBAL const float *q, ulong q_off, GLOBAL const float *k,
                          ulong k_off, GLOBAL const float *v, ulong v_off, int T, int NH,
                          int NKV, int hs, int causal, acc_t scale, GLOBAL const int *km,
                          ulong km_off, int has_mask, ulong rows)
{
    size_t r = GLOBAL_ID;
    if (r >= rows)
        return;
    size_t b = r / ((size_t)NH * T);
    int h = (int)(r / T % NH), t = (int)(r % T), j = h / (NH / NKV);
    q += q_off;
    k += k_off;
    v += v_off;
    GLOBAL float *ar = att + att_off + GQA_A(b, h, t, 0);
    float mx = -INFINITY;
    for (int s = 0; s < T; s++) {
        if (!GQA_SEES(b, t, s))
            continue;
        acc_t dot = 0;
        for (int c = 0; c < hs; c++)
            dot += (acc_t)q[GQA_Q(b, t, h, c)] * k[GQA_K(b, s, j, c)];
        ar[s] = (float)(dot * scale);
        mx = fmax(mx, ar[s]);
    }
    acc_t sum = 0;
    for (int s = 0; s < T; s++)
        if (GQA_SEES(b, t, s))
            sum += exp((acc_t)ar[s] - mx);
    for (int s = 0; s < T; s++)
        ar[s] = GQA_SEES(b, t, s) ? (float)(exp((acc_t)ar[s] - mx) / sum) : 0.0f;
    for (int c = 0; c < hs; c++) {
        acc_t acc = 0;
        for (int s = 0; s < T; s++)
            acc += (acc_t)ar[s] * v[GQA_K(b, s, j, c)];
        out[out_off + GQA_Q(b, t, h, c)] = (float)acc;
    }
}

/* p where the query sees the key, 0 elsewhere whatever att holds */
#define GQA_P(b, h, t, s) (GQA_SEES(b, t, s) ? (acc_t)att[att_off + GQA_A(b, h, t, s)] : 0)

DEVICE_FN acc_t gqa_dp(GLOBAL const float *dy, GLOBAL const float *v, size_t b, int h, int t, int s,
             int j, int T, int NH, int NKV, int hs)
{
    acc_t dp = 0;
    for (int c = 0; c < hs; c++)
        dp += (acc_t)dy[GQA_Q(b, t, h, c)] * v[GQA_K(b, s, j, c)];
    return dp;
}

/* row (b,h,t): D = sum_s p dp into scratch, dq += scale sum_s p (dp - D) k[s] */
KERNEL void gqa_backward_dq(GLOBAL float *dq, ulong dq_off, GLOBAL float *sc, ulong sc_off,
                              GLOBAL const float *dout, ulong dout_off,
                              GLOBAL const float *k, ulong k_off, GLOBAL const float *v,
                              ulong v_off, GLOBAL const float *att, ulong att_off, int T,
                              int NH, int NKV, int hs, int causal, acc_t scale,
                              GLOBAL const int *km, ulong km_off, int has_mask, ulong rows)
{
    size_t r = GLOBAL_ID;
    if (r >= rows)
        return;
    size_t b = r / ((size_t)NH * T);
    int h = (int)(r / T % NH), t = (int)(r % T), j = h / (NH / NKV);
    dout += dout_off;
    k += k_off;
    v += v_off;
    acc_t D = 0;
    for (int s = 0; s < T; s++)
        D += GQA_P(b, h, t, s) * gqa_dp(dout, v, b, h, t, s, j, T, NH, NKV, hs);
    sc[sc_off + ((size_t)b * NH + h) * T + t] = (float)D;
    for (int c = 0; c < hs; c++) {
        acc_t acc = 0;
        for (int s = 0; s < T; s++) {
            acc_t p = GQA_P(b, h, t, s);
            if (p != 0)
                acc += p * (gqa_dp(dout, v, b, h, t, s, j, T, NH, NKV, hs) - D) *
                       k[GQA_K(b, s, j, c)];
        }
        dq[dq_off + GQA_Q(b, t, h, c)] += (float)(acc * scale);
    }
}

/* element (b,s,j,c) of dk and dv */
KERNEL void gqa_backward_dkv(GLOBAL float *dk, ulong dk_off, GLOBAL float *dv, ulong dv_off,
                               GLOBAL const float *sc, ulong sc_off,
                               GLOBAL const float *dout, ulong dout_off,
                               GLOBAL const float *q, ulong q_off, GLOBAL const float *v,
                               ulong v_off, GLOBAL const float *att, ulong att_off, int T,
                               int NH, int NKV, int hs, int causal, acc_t scale,
                               GLOBAL const int *km, ulong km_off, int has_mask, ulong total)
{
    size_t i = GLOBAL_ID;
    if (i >= total)
        return;
    size_t b = i / ((size_t)T * NKV * hs);
    int s = (int)(i / ((size_t)NKV * hs) % T), j = (int)(i / hs % NKV), c = (int)(i % hs);
    int rep = NH / NKV;
    dout += dout_off;
    q += q_off;
    v += v_off;
    acc_t ak = 0, av = 0;
    for (int h = j * rep; h < (j + 1) * rep; h++)
        for (int t = 0; t < T; t++) {
            acc_t p = GQA_P(b, h, t, s);
            if (p == 0)
                continue;
            acc_t D = sc[sc_off + ((size_t)b * NH + h) * T + t];
            ak += p * (gqa_dp(dout, v, b, h, t, s, j, T, NH, NKV, hs) - D) * q[GQA_Q(b, t, h, c)];
            av += p * dout[GQA_Q(b, t, h, c)];
        }
    dk[dk_off + GQA_K(b, s, j, c)] += (float)(ak * scale);
    dv[dv_off + GQA_K(b, s, j, c)] += (float)av;
}
