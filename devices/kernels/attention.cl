/* devices/kernels/attention.cl: multi-head self-attention on qkv[B,T,3C] ([q | k | v],
 * head h on channels [h*hs, (h+1)*hs)), causal or not, with an optional key mask and dropout of
 * the probabilities, forward and backward, without atomics. */

/* Forward: one item per query row (b,h,t) for the softmax row of att, then one per output
 * element for att . v. Backward: one item per query row for the softmax backward (into
 * scratch), per element of dq, and per element of dk/dv (walking the query rows in order).
 * Causal rows end at s = t. */

/* Key mask: kernels that need it take (km, km_off, has_mask); key s of sequence b is visible
 * unless has_mask and km[b*T + s] == 0. A row with no visible key gets att 0 (no NaN). */
#define VISIBLE(b, s) (!has_mask || km[km_off + (size_t)(b) * T + (s)] != 0)

/* the offset of (b, t) in qkv, without the view offset */
#define QKV_ROW(b, t) (((size_t)(b) * T + (t)) * 3 * (size_t)C)

/* Probability dropout: kernels that apply it take these (has_drop 0: none; else the threshold,
 * the keep scale 1/(1-p) and the Philox key and counter words of devices/philox.h); element i
 * is the flat index in att [B,NH,T,T]. */
#define DROP_PARAMS                                                                             \
    int has_drop, ulong thr, float keep_scale, ulong seed, ulong step, ulong layer, ulong site

/* one work-item's walk over keep decisions: a Philox block is drawn when i enters a new one */
typedef struct {
    uint blk;
    int have;
    philox_ctr r;
} drop_walk;

/* x kept and scaled, or 0, as element i's keep decision says */
DEVICE_FN float drop_apply(drop_walk *w, size_t i, float x, ulong thr, float keep_scale, ulong seed,
                 ulong step, ulong layer, ulong site)
{
    uint blk = (uint)(i >> 2);
    if (!w->have || blk != w->blk) {
        w->r = philox_dropout_block(seed, (uint)step, (uint)layer, (uint)site, blk);
        w->blk = blk;
        w->have = 1;
    }
    return philox_keep(w->r.v[i & 3], thr) ? x * keep_scale : 0.0f;
}
#define DROP(w, i, x) drop_apply(w, i, x, thr, keep_scale, seed, step, layer, site)

/* att[b,h,t,:] = softmax_s(q_t . k_s * scale) over the visible s < send, 0 at the others */
KERNEL void attention_softmax(GLOBAL float *att, ulong att_off, GLOBAL const float *qkv,
                                ulong qkv_off, int B, int T, int C, int NH, int causal,
                                float scale, GLOBAL const int *km, ulong km_off, int has_mask)
{
    size_t r = GLOBAL_ID;
    if (r >= (size_t)B * NH * T)
        return;
    int t = r % T, h = (r / T) % NH, hs = C / NH;
    size_t b = r / ((size_t)NH * T);
    GLOBAL const float *q = qkv + qkv_off + QKV_ROW(b, t) + h * hs;
    GLOBAL float *a = att + att_off + r * T;
    int send = causal ? t + 1 : T;
    float mx = -INFINITY;
    for (int s = 0; s < send; s++) {
        if (!VISIBLE(b, s))
            continue;
        GLOBAL const float *k = qkv + qkv_off + QKV_ROW(b, s) + C + h * hs;
        float dot = 0;
        for (int j = 0; j < hs; j++)
            dot += q[j] * k[j];
        a[s] = dot * scale;
        mx = fmax(mx, a[s]);
    }
    acc_t sum = 0;
    for (int s = 0; s < send; s++) {
        a[s] = VISIBLE(b, s) ? exp(a[s] - mx) : 0.0f;
        sum += a[s];
    }
    float inv = sum > 0 ? (float)((acc_t)1 / sum) : 0.0f;
    for (int s = 0; s < send; s++)
        a[s] *= inv;
    for (int s = send; s < T; s++)
        a[s] = 0;
}

/* out[b,t,h*hs+j] = sum_s att_d[b,h,t,s] v_s[j] (att_d = att without dropout): one item per
 * output element */
KERNEL void attention_value(GLOBAL float *out, ulong out_off, GLOBAL const float *att,
                              ulong att_off, GLOBAL const float *qkv, ulong qkv_off, int B,
                              int T, int C, int NH, int causal, DROP_PARAMS)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)B * T * C)
        return;
    int hs = C / NH, c = i % C, h = c / hs;
    size_t bt = i / C, b = bt / T;
    int t = bt % T, send = causal ? t + 1 : T;
    GLOBAL const float *a = att + att_off + ((b * NH + h) * T + t) * (size_t)T;
    GLOBAL const float *v = qkv + qkv_off + QKV_ROW(b, 0) + 2 * C + c;
    size_t base = ((b * NH + h) * T + t) * (size_t)T;
    drop_walk w = {0};
    float y = 0;
    for (int s = 0; s < send; s++) {
        float as = has_drop ? DROP(&w, base + s, a[s]) : a[s];
        y += as * v[(size_t)s * 3 * C];
    }
    out[out_off + i] = y;
}

/* per query row: datt[s] = dout_t . v_s (with dropout: dropped and scaled as att was);
 * dpre[s] = att[s] (datt[s] - sum_s' att datt) * scale into scratch over the visible s (0 past
 * send and at masked keys) */
KERNEL void attention_backward_dpre(GLOBAL float *scratch, ulong sc_off,
                                      GLOBAL const float *dout, ulong dout_off,
                                      GLOBAL const float *qkv, ulong qkv_off,
                                      GLOBAL const float *att, ulong att_off, int B, int T,
                                      int C, int NH, int causal, float scale,
                                      GLOBAL const int *km, ulong km_off, int has_mask,
                                      DROP_PARAMS)
{
    size_t r = GLOBAL_ID;
    if (r >= (size_t)B * NH * T)
        return;
    int t = r % T, h = (r / T) % NH, hs = C / NH;
    size_t b = r / ((size_t)NH * T);
    GLOBAL const float *go = dout + dout_off + (b * T + t) * (size_t)C + h * hs;
    GLOBAL const float *a = att + att_off + r * T;
    GLOBAL float *w = scratch + sc_off + r * T;
    int send = causal ? t + 1 : T;
    drop_walk dw = {0};
    acc_t dsum = 0;
    for (int s = 0; s < send; s++) {
        if (!VISIBLE(b, s))
            continue;
        GLOBAL const float *v = qkv + qkv_off + QKV_ROW(b, s) + 2 * C + h * hs;
        float dot = 0;
        for (int j = 0; j < hs; j++)
            dot += go[j] * v[j];
        if (has_drop)
            dot = DROP(&dw, r * T + s, dot);
        w[s] = dot;
        dsum += (acc_t)a[s] * dot;
    }
    for (int s = 0; s < send; s++)
        w[s] = VISIBLE(b, s) ? (float)(a[s] * (w[s] - dsum)) * scale : 0.0f;
    for (int s = send; s < T; s++)
        w[s] = 0;
}

/* dq_t[j] += sum_s dpre[t][s] k_s[j]: one item per element of dq */
KERNEL void attention_backward_dq(GLOBAL float *dqkv, ulong dqkv_off,
                                    GLOBAL const float *scratch, ulong sc_off,
                                    GLOBAL const float *qkv, ulong qkv_off, int B, int T, int C,
                                    int NH, int causal)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)B * T * C)
        return;
    int hs = C / NH, c = i % C, h = c / hs;
    size_t bt = i / C, b = bt / T;
    int t = bt % T, send = causal ? t + 1 : T;
    GLOBAL const float *w = scratch + sc_off + ((b * NH + h) * T + t) * (size_t)T;
    GLOBAL const float *k = qkv + qkv_off + QKV_ROW(b, 0) + C + c;
    float acc = 0;
    for (int s = 0; s < send; s++)
        acc += w[s] * k[(size_t)s * 3 * C];
    dqkv[dqkv_off + QKV_ROW(b, t) + c] += acc;
}

/* dk_s[j] += sum_t dpre[t][s] q_t[j] when do_dk; dv_s[j] += sum_t att[t][s] dout_t[j] when
 * do_dv, over the query rows t that see key s (t >= s when causal; none when s is masked): one
 * item per element of dk/dv. With dropout att is the dropped probabilities (in scratch). */
KERNEL void attention_backward_dkv(GLOBAL float *dqkv, ulong dqkv_off,
                                     GLOBAL const float *scratch, ulong sc_off,
                                     GLOBAL const float *dout, ulong dout_off,
                                     GLOBAL const float *qkv, ulong qkv_off,
                                     GLOBAL const float *att, ulong att_off, int B, int T,
                                     int C, int NH, int causal, GLOBAL const int *km,
                                     ulong km_off, int has_mask, int do_dk, int do_dv)
{
    size_t i = GLOBAL_ID;
    if (i >= (size_t)B * T * C)
        return;
    int hs = C / NH, c = i % C, h = c / hs;
    size_t bt = i / C, b = bt / T;
    int s = bt % T;
    size_t head = (b * NH + h) * (size_t)T * T;
    GLOBAL const float *q = qkv + qkv_off + QKV_ROW(b, 0) + c;
    GLOBAL const float *go = dout + dout_off + b * T * (size_t)C + c;
    float dk = 0, dv = 0;
    for (int t = causal ? s : 0; VISIBLE(b, s) && t < T; t++) {
        size_t ts = head + (size_t)t * T + s;
        if (do_dk)
            dk += scratch[sc_off + ts] * q[(size_t)t * 3 * C];
        if (do_dv)
            dv += att[att_off + ts] * go[(size_t)t * C];
    }
    GLOBAL float *row = dqkv + dqkv_off + QKV_ROW(b, s);
    if (do_dk)
        row[C + c] += dk;
    if (do_dv)
        row[2 * C + c] += dv;
}

/* The GEMM form (the cuda backend without dropout): batched GEMMs write q . k * scale into att
 * (and dout . v into scratch); these two kernels, one work-group per query row (b,h,t), do
 * what lies between the products. */

/* att[b,h,t,:] = softmax over the visible s < send of the scores the GEMM left there, in place;
 * 0 past send, at masked keys, and on a row without a visible key */
KERNEL void attention_softmax_rows(GLOBAL float *att, ulong att_off, int T, int NH, int causal,
                                   GLOBAL const int *km, ulong km_off, int has_mask)
{
    LOCAL_MEM float mbuf[WG_BUF];
    LOCAL_MEM acc_t sbuf[WG_BUF];
    size_t r = GROUP_ID;
    int t = r % T, lid = LOCAL_ID, send = causal ? t + 1 : T;
    size_t b = r / ((size_t)NH * T);
    GLOBAL float *a = att + att_off + r * T;
    float mx = -INFINITY;
    for (int s = lid; s < send; s += WG)
        if (VISIBLE(b, s))
            mx = fmax(mx, a[s]);
    mx = wg_max(mbuf, mx);
    acc_t sum = 0;
    for (int s = lid; s < send; s += WG) {
        float e = VISIBLE(b, s) ? exp(a[s] - mx) : 0.0f;
        a[s] = e;
        sum += e;
    }
    sum = wg_sum(sbuf, sum);
    float inv = sum > 0 ? (float)((acc_t)1 / sum) : 0.0f;
    for (int s = lid; s < T; s += WG)
        a[s] = s < send ? a[s] * inv : 0.0f;
}

/* scratch[b,h,t,:] holds datt[s] = dout_t . v_s; in place it becomes dpre[s] = att[s] (datt[s] -
 * sum_s' att datt) * scale over the visible s < send, 0 past send and at masked keys */
KERNEL void attention_dpre_rows(GLOBAL float *scratch, ulong sc_off, GLOBAL const float *att,
                                ulong att_off, int T, int NH, int causal, float scale,
                                GLOBAL const int *km, ulong km_off, int has_mask)
{
    LOCAL_MEM acc_t sbuf[WG_BUF];
    size_t r = GROUP_ID;
    int t = r % T, lid = LOCAL_ID, send = causal ? t + 1 : T;
    size_t b = r / ((size_t)NH * T);
    GLOBAL const float *a = att + att_off + r * T;
    GLOBAL float *w = scratch + sc_off + r * T;
    acc_t dsum = 0;
    for (int s = lid; s < send; s += WG)
        if (VISIBLE(b, s))
            dsum += (acc_t)a[s] * w[s];
    dsum = wg_sum(sbuf, dsum);
    for (int s = lid; s < T; s += WG)
        w[s] = s < send && VISIBLE(b, s) ? (float)(a[s] * (w[s] - dsum)) * scale : 0.0f;
}

/* scratch[b,h,t,:] = att[b,h,t,:] at the visible s < send, 0 elsewhere: the probabilities dv is
 * made of, whatever att holds where no key is seen */
KERNEL void attention_probs_rows(GLOBAL float *scratch, ulong sc_off, GLOBAL const float *att,
                                 ulong att_off, int T, int NH, int causal, GLOBAL const int *km,
                                 ulong km_off, int has_mask)
{
    size_t r = GROUP_ID;
    int t = r % T, send = causal ? t + 1 : T;
    size_t b = r / ((size_t)NH * T);
    GLOBAL const float *a = att + att_off + r * T;
    GLOBAL float *w = scratch + sc_off + r * T;
    for (int s = LOCAL_ID; s < T; s += WG)
        w[s] = s < send && VISIBLE(b, s) ? a[s] : 0.0f;
}
