/* devices/opencl/kernels/embedding.cl: token (+ token type) + position embedding. Forward: one
 * item per output element. Backward: one item per channel of dwte or dwtt (walking every (b,t) in
 * order) and one per (t, c) of dwpe (walking b), the cpu reference's order, with no atomics. */

__kernel void embedding_forward(__global float *out, ulong out_off, __global const int *tokens,
                                ulong tok_off, __global const float *wte, ulong wte_off,
                                __global const float *wpe, ulong wpe_off, int T, int C, int V,
                                ulong total, __global int *flag)
{
    size_t i = get_global_id(0);
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
__kernel void embedding_tt_forward(__global float *out, ulong out_off,
                                   __global const int *tokens, ulong tok_off,
                                   __global const int *types, ulong typ_off,
                                   __global const float *wte, ulong wte_off,
                                   __global const float *wpe, ulong wpe_off,
                                   __global const float *wtt, ulong wtt_off, int T, int C, int V,
                                   int NTT, ulong total, __global int *flag)
{
    size_t i = get_global_id(0);
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

/* dwte[ids[r]] += dout[r] (also dwtt with the type ids); a bad id raises err */
__kernel void embedding_backward_wte(__global float *dwte, ulong dwte_off,
                                     __global const float *dout, ulong dout_off,
                                     __global const int *tokens, ulong tok_off, int BT, int C,
                                     int V, __global int *flag, int err)
{
    size_t c = get_global_id(0);
    if (c >= (size_t)C)
        return;
    for (int r = 0; r < BT; r++) {
        int tok = tokens[tok_off + r];
        if (tok < 0 || tok >= V) {
            raise_error(flag, err);
            continue;
        }
        dwte[dwte_off + (size_t)tok * C + c] += dout[dout_off + (size_t)r * C + c];
    }
}

__kernel void embedding_backward_wpe(__global float *dwpe, ulong dwpe_off,
                                     __global const float *dout, ulong dout_off, int B, int T,
                                     int C)
{
    size_t i = get_global_id(0), tc = (size_t)T * C;
    if (i >= tc)
        return;
    float acc = dwpe[dwpe_off + i];
    for (int b = 0; b < B; b++)
        acc += dout[dout_off + b * tc + i];
    dwpe[dwpe_off + i] = acc;
}
