/* harness/models/gpt2_internal.h: the GPT-2 model (Hugging Face names and shapes, Conv1D [in, out]
 * layout, LM head tied to wte) over the device interface; outside models/ it is the family
 * "gpt2" of models/model.h (gpt2_family.c). */
#ifndef GPT2_INTERNAL_H
#define GPT2_INTERNAL_H

#include <stdint.h>

#include "model.h"

typedef struct gpt2 gpt2;

/* Checks, in 64 bits and before anything is allocated, that c trained with batch B and sequence
 * T fits: 1 <= B, 2 <= T <= n_positions; the parameters, tokens per step (B*T), one MLP
 * activation (B*T*4*n_embd), one attention matrix (B*n_head*T*T) and the logits (B*T*vocab_size)
 * each within GPT2_MAX_ELEMENTS; parameters, gradients, AdamW state, activations and scratch
 * within d's memory when d knows it (mem_total). 0, or 1 with why naming the sizes. */
int gpt2_check_fit(const gpt2_config *c, int B, int T, const device *d, char *why, size_t len);

/* Allocates parameters, gradients, AdamW state and activations for batch B, sequence T on d.
 * Returns NULL after printing a message (gpt2_check_fit refused, device out of memory). */
gpt2 *gpt2_create(device *d, const gpt2_config *c, int B, int T);
void gpt2_free(gpt2 *m);

/* the parameter table and the four allocations, for the family-free code (model.c) */
void gpt2_state(const gpt2 *m, model_state *st);
/* bytes kept for backward (activations), as counted */
size_t gpt2_activation_bytes(const gpt2 *m);

/* transformers' _init_weights: normal(0, initializer_range) for matrices and embeddings,
 * c_proj weights normal(0, initializer_range / sqrt(2 n_layer)), biases 0, LayerNorm 1 and 0;
 * drawn on the host in parameter order from one seeded stream into host[param count]. 0. */
int gpt2_init_weights(const gpt2 *m, uint64_t seed, float *host);

/* forward on b (B and T as created; input_ids and labels, MODEL_IGNORE_INDEX where there is
 * none; GPT-2 reads no token types, and a causal model no attention mask). *loss = mean
 * cross-entropy over the labels that are not ignored (NaN when there are none: PyTorch's 0/0).
 * Dropout as HF GPT2LMHeadModel in training:
 * embd_pdrop after wte + wpe (site EMBED, layer 0), attn_pdrop on the attention probabilities,
 * resid_pdrop on each block's attn.c_proj (ATTN_OUT) and mlp.c_proj (MLP_OUT) output, layer l,
 * masks keyed by b->seed and b->step; a dropout of 0 runs no dropout code at all. Returns 0, or
 * 1 with the error printed. */
int gpt2_forward(gpt2 *m, const model_batch *b, double *loss);
/* zeroes the gradients and backpropagates the last forward's loss. 0 or 1. */
int gpt2_backward(gpt2 *m);

#endif
