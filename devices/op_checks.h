/* devices/op_checks.h: the argument checks of each op, the same for every backend (shapes and
 * views; what a backend can only check on its own data, like token ranges, stays there). */
#ifndef OP_CHECKS_H
#define OP_CHECKS_H

#include "device.h"

/* Each returns 1 when the arguments are fine (and d has not failed); otherwise it records
 * "<d->backend>: <op>: ..." with device_fail (or finds d failed) and returns 0. */
int op_elementwise_ok(device *d, const char *op, int n, dten a, dten b, dten c); /* c optional */
int op_embedding_ok(device *d, const char *op, dten wte, dten wpe, dten act, dten tokens, int B,
                    int T, int C);
int op_layernorm_ok(device *d, const char *op, dten x, dten y, dten w, dten b, dten mean,
                    dten rstd, int N, int C);
int op_layernorm_backward_ok(device *d, dten dinp, dten dw, dten db, dten dout, dten inp, dten w,
                             dten mean, dten rstd, int N, int C);
int op_bias_ok(device *d, const char *op, dten mat, dten bias, int N, int C);
/* round_lowp's arguments: x a DT_REAL view of n elements, mode bf16 (1) or fp16 (2) */
int op_round_lowp_ok(device *d, dten x, int n, int mode);
/* A, B and C of a batched gemm: ld and strides valid, each view holding every element reached */
int op_gemm_ok(device *d, int transA, int transB, int M, int N, int K, dten A, int lda,
              long strideA, dten Bm, int ldb, long strideB, dten Cm, int ldc, long strideC,
              int batch);
int op_attention_ok(device *d, const char *op, dten qkv, dten att, dten out, int B, int T, int C,
                    int NH);
int op_attention_backward_ok(device *d, const char *op, dten dqkv, dten scratch, dten dout,
                             dten qkv, dten att, int B, int T, int C, int NH);
/* embedding_tt: op_embedding_ok plus types (DT_I32 [B,T]) and wtt (at least one row) */
int op_embedding_tt_ok(device *d, const char *op, dten wte, dten wpe, dten wtt, dten act,
                       dten tokens, dten types, int B, int T, int C);
/* an attention key mask: no buffer (no mask), or DT_I32 holding B*T */
int op_keymask_ok(device *d, const char *op, dten keymask, int B, int T);
/* dropout: n >= 0, 0 <= p <= 1, x and y n reals, mask absent or n DT_I32 */
int op_dropout_ok(device *d, const char *op, int n, double p, dten x, dten y, dten mask);
/* attention-probability dropout: drop NULL, or 0 <= p <= 1 and the B*NH*T*T probabilities
 * indexable by the 32-bit Philox block counter (fewer than 2^34) */
int op_attn_dropout_ok(device *d, const char *op, const attn_dropout *drop, int B, int T, int NH);
/* every check of attention_(masked_)forward and _backward: the shapes and views, the key mask
 * and the probability dropout, as the three checks above */
int op_attention_masked_ok(device *d, const char *op, dten qkv, dten att, dten out, dten keymask,
                           const attn_dropout *drop, int B, int T, int C, int NH);
int op_attention_masked_backward_ok(device *d, const char *op, dten dqkv, dten scratch,
                                    dten dout, dten qkv, dten att, dten keymask,
                                    const attn_dropout *drop, int B, int T, int C, int NH);
/* rmsnorm: x and y (out or dout) N*C reals, w (or dw) C, rstd N; C >= 1, N >= 0 */
int op_rmsnorm_ok(device *d, const char *op, dten x, dten y, dten w, dten rstd, int N, int C);
/* rope: B, T, NH, hs >= 1 and hs even; x and y B*T*NH*hs reals, cos and sin T*hs/2 */
int op_rope_ok(device *d, const char *op, dten x, dten y, dten cos_t, dten sin_t, int B, int T,
               int NH, int hs);
/* attention_gqa: B, T, NH, NKV, hs >= 1, NH a multiple of NKV; q and out (or dq, dout)
 * B*T*NH*hs, k and v B*T*NKV*hs, att B*NH*T*T, the key mask absent or B*T DT_I32 */
int op_gqa_ok(device *d, const char *op, dten q, dten k, dten v, dten out, dten att,
              dten keymask, int B, int T, int NH, int NKV, int hs);
/* gather_rows: M >= 0, R and C >= 1; rows (inp or dinp) R*C reals, picked (out or dout) M*C,
 * idx M DT_I32 (the ids' range is the backend's check) */
int op_gather_rows_ok(device *d, const char *op, dten rows, dten picked, dten idx, int M, int R,
                      int C);
/* topk_router: N >= 0, E >= 1, 1 <= K <= E; weights (or dweights) N*K reals, ids N*K DT_I32,
 * probs and logits (or dlogits) N*E reals */
int op_topk_ok(device *d, const char *op, dten weights, dten ids, dten probs, dten logits, int N,
               int E, int K);
int op_xent_ok(device *d, const char *op, dten probs, dten targets, int N, int V);

#endif
