/* harness/models/gpt2.h: the GPT-2 model (Hugging Face names and shapes, Conv1D [in, out] layout, LM
 * head tied to wte) over the device interface: parameters, forward, backward, AdamW. */
#ifndef GPT2_H
#define GPT2_H

#include <stdint.h>

#include "device.h"
#include "model_config.h"

/* what a parameter is, for weight-decay groups (transformers' Trainer excludes biases and
 * LayerNorm weights) and for checkpoint files */
typedef enum { PARAM_MATRIX, PARAM_EMBEDDING, PARAM_BIAS, PARAM_NORM } param_role;

typedef struct {
    char name[64];       /* HF name without the "transformer." prefix, e.g. "h.0.attn.c_attn.weight" */
    int ndim;
    int shape[2];
    size_t offset, n;    /* elements within the parameter allocation */
    param_role role;
} param_info;

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

int gpt2_n_params(const gpt2 *m);
const param_info *gpt2_param(const gpt2 *m, int i);
size_t gpt2_param_count(const gpt2 *m);  /* total elements */
dten gpt2_param_view(const gpt2 *m, int i);
dten gpt2_grad_view(const gpt2 *m, int i);
dten gpt2_all_params(const gpt2 *m);
dten gpt2_all_grads(const gpt2 *m);
/* bytes kept for backward (activations) and of parameters+grads+AdamW state, as counted */
size_t gpt2_activation_bytes(const gpt2 *m);
size_t gpt2_state_bytes(const gpt2 *m);

/* transformers' _init_weights: normal(0, initializer_range) for matrices and embeddings,
 * c_proj weights normal(0, initializer_range / sqrt(2 n_layer)), biases 0, LayerNorm 1 and 0;
 * drawn on the host in parameter order from one seeded stream, then uploaded. 0 or 1. */
int gpt2_init_weights(gpt2 *m, uint64_t seed);
/* weights from the host: host[gpt2_param_count] holds every parameter at its param_info offset
 * (e.g. read from a checkpoint); the AdamW state is zeroed. 0 or 1. */
int gpt2_set_weights(gpt2 *m, const float *host);
/* the weights (or, with grads set, the gradients) into host[gpt2_param_count]. 0 or 1. */
int gpt2_get_weights(gpt2 *m, float *host, int grads);

/* forward on inputs[B*T]; targets[B*T] (ignore_index -100 where there is none). *loss = mean
 * cross-entropy over the targets that are not ignored. Returns 0, or 1 with the device error
 * printed. */
int gpt2_forward(gpt2 *m, const int32_t *inputs, const int32_t *targets, double *loss);
/* zeroes the gradients and backpropagates the last forward's loss. 0 or 1. */
int gpt2_backward(gpt2 *m);
/* global L2 norm of all gradients */
double gpt2_grad_norm(gpt2 *m);
/* multiplies every gradient by s */
void gpt2_scale_grads(gpt2 *m, double s);

typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
    int decay_all; /* 1: decay every parameter; 0: not biases and norm weights */
} adamw_params;
/* one AdamW step t (from 1). 0 or 1. */
int gpt2_adamw_step(gpt2 *m, const adamw_params *p, int t);

#endif
