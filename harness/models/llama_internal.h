/* harness/models/llama_internal.h: the Llama family's model (LlamaForCausalLM, Qwen2, Mistral and
 * Mixtral's sparse MoE) over the device interface; its state shared by llama.c and llama_moe.c. */
#ifndef LLAMA_INTERNAL_H
#define LLAMA_INTERNAL_H

#include <stdint.h>

#include "llama_config.h"
#include "model.h"

/* the indexes of one layer's parameters in the table; -1 for one the config lacks */
typedef struct {
    int q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
    int gate_w, up_w, down_w; /* dense MLP */
    int router, expert0;      /* MoE: gate, then experts.{e}.w1, w2, w3 at expert0 + 3e */
    int ln1, ln2;             /* input_layernorm, post_attention_layernorm */
} llama_layer_idx;

/* one layer's activations kept for backward; x (its input) is the previous layer's out */
typedef struct {
    dten h1, rstd1, q, k, v, att, atty, res2, h2, rstd2, out;
    dten gate, up, act;                          /* dense MLP [BT, I] each */
    dten rlogits, rprobs, rweights, rids;        /* MoE router [BT,E], [BT,E], [BT,K], I32 [BT,K] */
    dten tok_idx, slot_idx;                      /* I32 [BT*K]: rows grouped by expert */
    dten w_e, xe, g, u, a, y, mlp_out;           /* the experts' rows, grouped by expert */
} llama_layer_acts;

/* sizes of one instance, in elements */
typedef struct {
    size_t B, T, BT, C, hd, Q, KV, I, E, K, NK, V, att;
    int NH, NKV, L, moe;
} llama_dims;

typedef struct llama {
    device *d;
    llama_config c;
    llama_dims z;
    int n_params;
    param_info *params;
    llama_layer_idx *li;
    int embed, norm, head; /* table indexes; head == embed when tied */
    dten param_mem, grad_mem, m_mem, v_mem;
    dten act_mem, scratch_mem, i32_mem;
    llama_layer_acts *layers;
    dten x0, hf, rstdf, logits, probs, losses, cos_t, sin_t, maskw, fvec, psum;
    dten tokens, labels, keymask, ids_all; /* I32 */
    /* backward scratch */
    dten dres, dh, dq, dk, dv, dqp, dkp, datty, attscr, dgate, dup, dact, dlogits, dpadrow;
    dten dys, dy, dxe, dwseg, dweights, drl, dp, ys;
    int has_mask, n_valid;
    /* MoE bookkeeping on the host: the last forward's routing */
    int32_t *ids_host, *tok_host, *slot_host, *mask_host;
    int64_t *counts;     /* [L*E] tokens routed to each expert */
    size_t *seg;         /* [L*(E+1)] each expert's first row in the grouped rows */
    double *F, *Psum;    /* [E] the aux loss's assignment and probability sums */
    double aux_rows;     /* its row count (sum of the mask over layers) */
    double *hbuf;        /* [BT + E] host staging */
    size_t *fill;        /* [E + 1] grouping cursor */
} llama;

/* 64-bit checks before anything is allocated: 0, or 1 with why */
int llama_check_fit(const llama_config *c, int B, int T, const device *d, char *why, size_t len);
llama *llama_create(device *d, const llama_config *c, int B, int T);
void llama_free(llama *m);
void llama_state(const llama *m, model_state *st);
size_t llama_activation_bytes(const llama *m);
/* transformers' _init_weights into host: normal(0, initializer_range) for every linear,
 * embedding, router and expert weight, the pad_token_id row of embed_tokens then 0, RMSNorm
 * weights 1, biases 0; drawn from one seeded stream in table order. 0. */
int llama_init_weights(const llama *m, uint64_t seed, float *host);
int llama_forward(llama *m, const model_batch *b, double *loss);
int llama_backward(llama *m);
/* checkpoint names: the tied head's lm_head.weight is embed_tokens (alias) */
int llama_param_index(const llama *m, const char *name, int *alias);

/* ---- shared by llama.c and llama_moe.c ---- */
dten llama_p(const llama *m, int i); /* parameter i's view; an empty view for i < 0 */
dten llama_g(const llama *m, int i); /* its gradient's */
/* out[N,OC] = inp[N,IC] W[OC,IC]^T (+ b when it has a buffer) */
void llama_linear(device *d, dten out, dten inp, dten w, dten b, int N, int IC, int OC);
/* dinp = (beta 0) or += (beta 1) dout W; dW += dout^T inp; db += column sums (with a buffer) */
void llama_linear_back(device *d, dten dinp, double beta, dten dw, dten db, dten dout, dten inp,
                       dten w, int N, int IC, int OC);
/* the MoE block on h2 into a->mlp_out, the routing kept; 0 or 1 (device error) */
int llama_moe_forward(llama *m, int l);
/* dh (overwritten) from dout = dL/d mlp_out */
void llama_moe_backward(llama *m, int l, dten dout, dten dh);
/* the load-balancing loss of the last forward (transformers' load_balancing_loss_func) */
double llama_moe_aux_loss(const llama *m);
/* zeroes the aux-loss sums before a forward */
void llama_moe_reset(llama *m);

#endif
