/* devices/cpu/cpu_ops_attention.c: the cpu backend's multi-head self-attention (causal or not,
 * optional key mask and probability dropout), parallel over (b, h) heads: per-head GEMMs plus
 * a softmax loop. */
#include "cpu_real.h"
#include "cpu_simd.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "philox.h"

#define NT CblasNoTrans
#define TR CblasTrans

/* key s is seen by a query when the key mask row km (NULL: no mask) does not mark it padding */
#define VISIBLE(km, s) (!(km) || (km)[s] != 0)

/* The attention-probability dropout of one call: the Philox key and counter words, threshold
 * and keep scale; a walk draws keep decisions for rising flat indices of att, one Philox block
 * per 4 elements. */
typedef struct {
    uint64_t seed;
    uint32_t step, layer;
    philox_u64 thr;
    real keep_scale;
} att_drop;

/* drop (NULL or p = 0: none) as the op applies it into dr; returns dr, or NULL for no dropout */
static const att_drop *att_drop_make(att_drop *dr, const attn_dropout *drop)
{
    if (!drop || drop->p == 0)
        return NULL;
    dr->seed = drop->seed;
    dr->step = drop->step;
    dr->layer = drop->layer;
    dr->thr = philox_dropout_threshold(drop->p);
    dr->keep_scale = drop->p < 1 ? (real)(1.0 / (1.0 - drop->p)) : 0;
    return dr;
}

/* dst[j] = src[j] dropped or kept and scaled, as element i0 + j (flat index in att) of the
 * dropout decides, for j < n; dst may be src */
static void drop_span(real *dst, const real *src, size_t i0, size_t n, const att_drop *dr)
{
    uint32_t words[4 * CPU_PHILOX_GROUP];
    size_t first = i0 >> 2, last = (i0 + n + 3) >> 2; /* the Philox blocks [first, last) */
    for (size_t blk = first; blk < last; blk += CPU_PHILOX_GROUP) {
        int nb = last - blk < CPU_PHILOX_GROUP ? (int)(last - blk) : CPU_PHILOX_GROUP;
        cpu_philox_words(words, (uint32_t)blk, nb, dr->seed, dr->step, dr->layer,
                         DROPOUT_SITE_ATTN_PROBS);
        size_t lo = blk * 4 > i0 ? blk * 4 : i0, hi = (blk + (size_t)nb) * 4;
        hi = hi < i0 + n ? hi : i0 + n;
        for (size_t i = lo; i < hi; i++)
            dst[i - i0] = philox_keep(words[i - blk * 4], dr->thr) ? src[i - i0] * dr->keep_scale
                                                                   : 0;
    }
}

/* the softmax backward of one row, scaled: wr[s] = scale * P[s] (wr[s] - sum_s' P[s'] wr[s'])
 * over the visible s < send, zero at the others up to W (the row's width the caller reads).
 * wr is zeroed at the keys not seen first, so the sum takes every term without a branch
 * (GCC vectorizes no conditional term): those terms are P[s] * 0, zeros that change no lane. */
CPU_CLONES static void softmax_backward_row(real *restrict wr, const real *restrict prow, int W,
                                            int send, const int32_t *km, real scale)
{
    int vend = cpu_padded_end(send, W);
    if (km)
        for (int s = 0; s < vend; s++)
            wr[s] = (s < send) & (km[s] != 0) ? wr[s] : 0;
    else
        for (int s = 0; s < vend; s++)
            wr[s] = s < send ? wr[s] : 0;
    double dsum;
    CPU_LANE_SUM(dsum, vend, (double)prow[i] * wr[i]);
    for (int s = 0; s < vend; s++) {
        real g = (real)(prow[s] * (wr[s] - dsum)) * scale;
        wr[s] = (s < send) & (!km || km[s] != 0) ? g : 0;
    }
    for (int s = vend; s < W; s++)
        wr[s] = 0;
}

/* wr[s] = prow[s] at the visible s < send, zero at the others up to W */
CPU_CLONES static void visible_row(real *restrict wr, const real *restrict prow, int W, int send,
                                   const int32_t *km)
{
    for (int s = 0; s < W; s++)
        wr[s] = (s < send) & (!km || km[s] != 0) ? prow[s] : 0;
}

/* xt[d][s] = x[s][d] for the T rows (ld apart) of one head's hs channels: its keys (or values)
 * transposed, so the products with them are NN ones (OpenBLAS 0.3.21's small NT kernel ran
 * these 32 x keys x 64 shapes at 79-94 GFLOP/s, its NN kernel at 168-196) */
static void head_transposed(real *restrict xt, const real *restrict x, int T, int hs, int ld)
{
    for (int s = 0; s < T; s++)
        for (int d = 0; d < hs; d++)
            xt[(size_t)d * T + s] = x[(size_t)s * ld + d];
}

/* Queries per block of the per-head GEMMs. Causal, the queries of a block see only the keys up
 * to the block's last row, so the GEMMs leave out the blocks above the diagonal (about 3/8 of
 * the work at T = 128): the terms left out are the zeros of P, so each sum is the same. Not
 * causal, one block of all T rows. */
#define ATT_ROW_BLOCK 32

/* the queries [r0, r1) of block r0 and the keys [0, keys) they see */
typedef struct {
    int r0, r1, keys;
} att_block;

static att_block block_at(int r0, int T, int causal)
{
    int rb = causal ? ATT_ROW_BLOCK : T, r1 = r0 + rb < T ? r0 + rb : T;
    return (att_block){r0, r1, causal ? r1 : T};
}

/* One head of one sequence: P = softmax(scale Q K^T) (causal and key masks), O = P V, or with
 * dropout dr O = Pd V, Pd = dropout(P) made in pd ([T,T]; base: the flat index of P[0,0] in
 * att). x points at the head's q channels of row 0 (k at +C, v at +2C, rows 3C apart), o at
 * its output channels (rows C apart), p at its [T,T] att block, km at the sequence's key mask
 * row (or NULL), kt at the thread's [hs,T] buffer for the keys transposed. The GEMMs run
 * single-threaded inside the parallel loop, a block of queries (ATT_ROW_BLOCK) at a time. */
static void att_head_forward(real *o, real *p, const real *x, int T, int C, int hs, int causal,
                             real scale, const int32_t *km, const att_drop *dr, size_t base,
                             real *pd, real *kt)
{
    int C3 = 3 * C;
    head_transposed(kt, x + C, T, hs, C3);
    for (att_block k = block_at(0, T, causal); k.r0 < T; k = block_at(k.r1, T, causal)) {
        cblas_real_gemm(CblasRowMajor, NT, NT, k.r1 - k.r0, k.keys, hs, scale,
                        x + (size_t)k.r0 * C3, C3, kt, T, 0, p + (size_t)k.r0 * T, T);
        for (int t = k.r0; t < k.r1; t++)
            cpu_softmax_row(p + (size_t)t * T, T, causal ? t + 1 : T, km);
    }
    const real *pv = p;
    if (dr) {
        drop_span(pd, p, base, (size_t)T * T, dr);
        pv = pd;
    }
    for (att_block k = block_at(0, T, causal); k.r0 < T; k = block_at(k.r1, T, causal))
        cblas_real_gemm(CblasRowMajor, NT, NT, k.r1 - k.r0, hs, k.keys, 1, pv + (size_t)k.r0 * T,
                        T, x + 2 * C, C3, 0, o + (size_t)k.r0 * C, C);
}

/* the key mask row of sequence b, or NULL without a mask */
static const int32_t *mask_row(dten keymask, size_t b, int T)
{
    return keymask.buf ? IP(keymask) + b * (size_t)T : NULL;
}

static void attention_forward_op(device *d, const char *op, dten out, dten att, dten qkv,
                                 dten keymask, int B, int T, int C, int NH, int causal,
                                 const attn_dropout *drop)
{
    if (!op_attention_masked_ok(d, op, qkv, att, out, keymask, drop, B, T, C, NH))
        return;
    int hs = C / NH;
    real scale = (real)(1.0 / sqrt((double)hs));
    const real *x = RP(qkv);
    real *o = RP(out), *a = RP(att);
    long heads = (long)B * NH;
    size_t TT = (size_t)T * T;
    att_drop drs;
    const att_drop *dr = att_drop_make(&drs, drop);
    int short_of_memory = 0;
#pragma omp parallel
    {
        real *pd = dr ? malloc(TT * sizeof *pd) : NULL; /* this thread's dropped P */
        real *kt = malloc((size_t)hs * T * sizeof *kt); /* and its transposed keys */
        if ((dr && !pd) || !kt) {
#pragma omp atomic write
            short_of_memory = 1;
        }
#pragma omp for schedule(static)
        for (long bh = 0; bh < heads; bh++) {
            size_t b = (size_t)(bh / NH), h = (size_t)(bh % NH) * hs;
            if ((!dr || pd) && kt)
                att_head_forward(o + b * T * C + h, a + bh * TT, x + 3 * b * T * C + h, T, C,
                                 hs, causal, scale, mask_row(keymask, b, T), dr,
                                 (size_t)bh * TT, pd, kt);
        }
        free(pd);
        free(kt);
    }
    if (short_of_memory)
        device_fail(d, "%s: %s: no memory for a thread's working space (%dx%d transposed keys%s)",
                    d->backend, op, hs, T, dr ? ", a dropped attention block" : "");
}

static void cpu_attention_forward(device *d, dten out, dten att, dten qkv, int B, int T, int C,
                                  int NH, int causal)
{
    attention_forward_op(d, "attention_forward", out, att, qkv, (dten){0}, B, T, C, NH, causal,
                         NULL);
}

static void cpu_attention_masked_forward(device *d, dten out, dten att, dten qkv, dten keymask,
                                         int B, int T, int C, int NH, int causal,
                                         const attn_dropout *drop)
{
    attention_forward_op(d, "attention_masked_forward", out, att, qkv, keymask, B, T, C, NH,
                         causal, drop);
}

/* dst[c0:c1, :] += w[t0:T, c0:c1]^T src[t0:T, :] for every key block [c0, c1) (src rows lds
 * apart, dst rows C3 apart), t0 = c0 when causal (w is zero above the diagonal) */
static void att_key_blocks(real *dst, const real *w, const real *src, int lds, int T, int C3,
                           int hs, int causal)
{
    for (att_block k = block_at(0, T, causal); k.r0 < T; k = block_at(k.r1, T, causal)) {
        int t0 = causal ? k.r0 : 0;
        cblas_real_gemm(CblasRowMajor, TR, NT, k.r1 - k.r0, hs, T - t0, 1,
                        w + (size_t)t0 * T + k.r0, T, src + (size_t)t0 * lds, lds, 1,
                        dst + (size_t)k.r0 * C3, C3);
    }
}

/* Backward of one head (pointers as in att_head_forward; g at its dout channels, w its [T,T]
 * scratch, vt the thread's [hs,T] buffer for the values transposed), a block of queries at a
 * time: w = dO V^T (with dropout dr: w = dropout(w), the
 * forward's keep decisions); the softmax backward scaled by 1/sqrt(hs): w[t,s] = scale *
 * P[t,s] (w[t,s] - sum_s' P[t,s'] w[t,s']); dQ += w K; then dK += w^T Q; then w = P (masked;
 * with dr dropout(P)) and dV += w^T dO. Causal, w is written and read only left of each
 * block's last key. */
static void att_head_backward(real *dx, real *w, const real *x, const real *g, const real *p,
                              int T, int C, int hs, int causal, real scale, const int32_t *km,
                              const att_drop *dr, size_t base, real *vt)
{
    int C3 = 3 * C;
    head_transposed(vt, x + 2 * C, T, hs, C3);
    for (att_block k = block_at(0, T, causal); k.r0 < T; k = block_at(k.r1, T, causal)) {
        int rows = k.r1 - k.r0;
        real *wb = w + (size_t)k.r0 * T;
        cblas_real_gemm(CblasRowMajor, NT, NT, rows, k.keys, hs, 1, g + (size_t)k.r0 * C, C, vt,
                        T, 0, wb, T);
        for (int t = k.r0; t < k.r1; t++) {
            int send = causal ? t + 1 : T;
            real *wr = w + (size_t)t * T;
            if (dr)
                drop_span(wr, wr, base + (size_t)t * T, (size_t)send, dr);
            softmax_backward_row(wr, p + (size_t)t * T, k.keys, send, km, scale);
        }
        cblas_real_gemm(CblasRowMajor, NT, NT, rows, hs, k.keys, 1, wb, T, x + C, C3, 1,
                        dx + (size_t)k.r0 * C3, C3);
    }
    att_key_blocks(dx + C, w, x, C3, T, C3, hs, causal);
    /* dV from P as the forward left it: zero past the causal edge and at masked keys whatever
     * the buffer holds */
    for (att_block k = block_at(0, T, causal); k.r0 < T; k = block_at(k.r1, T, causal))
        for (int t = k.r0; t < k.r1; t++) {
            int send = causal ? t + 1 : T;
            real *wr = w + (size_t)t * T;
            visible_row(wr, p + (size_t)t * T, k.keys, send, km);
            if (dr)
                drop_span(wr, wr, base + (size_t)t * T, (size_t)send, dr);
        }
    att_key_blocks(dx + 2 * C, w, g, C, T, C3, hs, causal);
}

static void attention_backward_op(device *d, const char *op, dten dqkv, dten scratch, dten dout,
                                  dten qkv, dten att, dten keymask, int B, int T, int C, int NH,
                                  int causal, const attn_dropout *drop)
{
    if (!op_attention_masked_backward_ok(d, op, dqkv, scratch, dout, qkv, att, keymask, drop, B,
                                         T, C, NH))
        return;
    att_drop drs;
    const att_drop *dr = att_drop_make(&drs, drop);
    int hs = C / NH;
    real scale = (real)(1.0 / sqrt((double)hs));
    const real *x = RP(qkv), *g = RP(dout), *a = RP(att);
    real *dx = RP(dqkv), *work = RP(scratch);
    long heads = (long)B * NH;
    size_t TT = (size_t)T * T;
    int short_of_memory = 0;
#pragma omp parallel
    {
        real *vt = malloc((size_t)hs * T * sizeof *vt); /* this thread's transposed values */
        if (!vt) {
#pragma omp atomic write
            short_of_memory = 1;
        }
#pragma omp for schedule(static)
        for (long bh = 0; bh < heads; bh++) {
            size_t b = (size_t)(bh / NH), off = 3 * b * T * C + (size_t)(bh % NH) * hs;
            if (vt)
                att_head_backward(dx + off, work + bh * TT, x + off,
                                  g + b * T * C + (size_t)(bh % NH) * hs, a + bh * TT, T, C, hs,
                                  causal, scale, mask_row(keymask, b, T), dr, (size_t)bh * TT,
                                  vt);
        }
        free(vt);
    }
    if (short_of_memory)
        device_fail(d, "%s: %s: no memory for a thread's %dx%d transposed values", d->backend, op,
                    hs, T);
}

static void cpu_attention_backward(device *d, dten dqkv, dten scratch, dten dout, dten qkv,
                                   dten att, int B, int T, int C, int NH, int causal)
{
    attention_backward_op(d, "attention_backward", dqkv, scratch, dout, qkv, att, (dten){0}, B,
                          T, C, NH, causal, NULL);
}

static void cpu_attention_masked_backward(device *d, dten dqkv, dten scratch, dten dout,
                                          dten qkv, dten att, dten keymask, int B, int T, int C,
                                          int NH, int causal, const attn_dropout *drop)
{
    attention_backward_op(d, "attention_masked_backward", dqkv, scratch, dout, qkv, att, keymask,
                          B, T, C, NH, causal, drop);
}

void cpu_fill_attention(device_i *ops)
{
    ops->attention_forward = cpu_attention_forward;
    ops->attention_backward = cpu_attention_backward;
    ops->attention_masked_forward = cpu_attention_masked_forward;
    ops->attention_masked_backward = cpu_attention_masked_backward;
}
