/* devices/kernels/embedding.cl: token (+ token type) + position embedding. Forward: one
 * item per output element. Backward: one item per channel of dwte or dwtt (walking every (b,t) in
 * order) and one per (t, c) of dwpe (walking b), the cpu reference's order, with no atomics. */

KERNEL void embedding_forward(GLOBAL float *out, ulong out_off, GLOBAL const int *tokens,
                                ulong tok_off, GLOBAL const float *wte, ulong wte_off,
                                GLOBAL const float *wpe, ulong wpe_off, int T, int C, int V,
                                ulong total, GLOBAL int *flag)
{
    size_t i = GLOBAL_ID;
    if (i >= total)
        return;
    size_t r = i / C, c = i % C;
    int tok = tokens[tok_off + r];
    if (tok < 0 || tok >= V) {
        raise_error(flag, ERR_TOKEN_FWD);
        out[out_off + i] = NAN;
        return;
    }
    out[out_off + i] = wte[wte_off + (size_t)tok * C + c] + wpe[wpe_off + (r % T) * C + c];
}

/* (wte[token] + wtt[type]) + wpe[t], BertEmbeddings' order; a bad id raises its code */
KERNEL void embedding_tt_forward(GLOBAL float *out, ulong out_off,
                                   GLOBAL const int *tokens, ulong tok_off,
                                   GLOBAL const int *types, ulong typ_off,
                                   GLOBAL const float *wte, ulong wte_off,
                                   GLOBAL const float *wpe, ulong wpe_off,
                                   GLOBAL const float *wtt, ulong wtt_off, int T, int C, int V,
                                   int NTT, ulong total, GLOBAL int *flag)
{
    size_t i = GLOBAL_ID;
    if (i >= total)
        return;
    size_t r = i / C, c = i % C;
    int tok = tokens[tok_off + r], typ = types[typ_off + r];
    if (tok < 0 || tok >= V || typ < 0 || typ >= NTT) {
        raise_error(flag, tok < 0 || tok >= V ? ERR_TT_TOKEN_FWD : ERR_TT_TYPE_FWD);
        out[out_off + i] = NAN;
        return;
    }
    out[out_off + i] = (wte[wte_off + (size_t)tok * C + c] + wtt[wtt_off + (size_t)typ * C + c]) +
                       wpe[wpe_off + (r % T) * C + c];
}

/* dwte[ids[r]] += dout[r] (also dwtt with the type ids); a bad id raises err. Item i owns
 * channel c = i % C of the rows whose id % buckets == i / C, adding the r in order: the same
 * sums for any bucket count (1: one item per channel walks every row) */
KERNEL void embedding_backward_wte(GLOBAL float *dwte, ulong dwte_off,
                                     GLOBAL const float *dout, ulong dout_off,
                                     GLOBAL const int *tokens, ulong tok_off, int BT, int C,
                                     int V, GLOBAL int *flag, int err, int buckets)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)C * buckets)
        return;
    int c = (int)(i % C), bucket = (int)(i / C);
    for (int r = 0; r < BT; r++) {
        int tok = tokens[tok_off + r];
        if (tok < 0 || tok >= V) {
            if (bucket == 0)
                raise_error(flag, err);
            continue;
        }
        if (tok % buckets == bucket)
            dwte[dwte_off + (size_t)tok * C + c] += dout[dout_off + (size_t)r * C + c];
    }
}

KERNEL void embedding_backward_wpe(GLOBAL float *dwpe, ulong dwpe_off,
                                     GLOBAL const float *dout, ulong dout_off, int B, int T,
                                     int C)
{
    size_t i = GLOBAL_ID, tc = (size_t)T * C;
    if (i >= tc)
        return;
    float acc = dwpe[dwpe_off + i];
    for (int b = 0; b < B; b++)
        acc += dout[dout_off + b * tc + i];
    dwpe[dwpe_off + i] = acc;
}
