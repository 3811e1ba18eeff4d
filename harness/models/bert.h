/* harness/models/bert.h: BertForMaskedLM (Hugging Face names and shapes, Linear [out, in] layout, post-LN
 * encoder, MLM decoder tied to the word embeddings) over the device interface. */
#ifndef BERT_H
#define BERT_H

#include <stdint.h>

#include "bert_config.h"
#include "device.h"
#include "model.h" /* param_info, param_role, adamw_params: shared by every model family */

typedef struct bert bert;

/* Checks, in 64 bits and before anything is allocated, that c trained with batch B and sequence
 * T fits: 1 <= B, 1 <= T <= max_position_embeddings; the parameters, tokens per step (B*T), one
 * intermediate activation (B*T*intermediate_size), one attention matrix (B*heads*T*T) and the
 * logits (B*T*vocab_size) each within BERT_MAX_ELEMENTS; parameters, gradients, AdamW state,
 * activations and scratch within d's memory when d knows it (mem_total). 0, or 1 with why. */
int bert_check_fit(const bert_config *c, int B, int T, const device *d, char *why, size_t len);

/* Allocates parameters, gradients, AdamW state and activations for batch B, sequence T on d.
 * c must have passed bert_config_validate. Returns NULL after printing a message. */
bert *bert_create(device *d, const bert_config *c, int B, int T);
void bert_free(bert *m);

/* The parameter table, in memory order: transformers' named_parameters() order of
 * BertForMaskedLM, except that each layer's query, key and value weights come first and then
 * their three biases (so they form one [3C, C] matrix and one [3C] bias). Names are Hugging
 * Face's without BertForMaskedLM's "bert." prefix ("embeddings.word_embeddings.weight",
 * "encoder.layer.0.attention.self.query.weight"); the head's keep theirs ("cls.predictions.bias"),
 * as the model family interface (model.h: hf_prefix, unprefixed) spells them. */
int bert_n_params(const bert *m);
const param_info *bert_param(const bert *m, int i);
size_t bert_param_count(const bert *m); /* total elements */
dten bert_param_view(const bert *m, int i);
dten bert_grad_view(const bert *m, int i);
dten bert_all_params(const bert *m);
dten bert_all_grads(const bert *m);
size_t bert_activation_bytes(const bert *m);
/* the table and the four allocations, for the model interface (model.h) */
void bert_state(const bert *m, model_state *st);
size_t bert_state_bytes(const bert *m);

/* The table index a checkpoint tensor name maps to, or -1: the table's own names (with or
 * without "bert.", so BertForMaskedLM's and BertModel's checkpoints both match), the tied
 * aliases a BertForMaskedLM checkpoint may list ("cls.predictions.decoder.weight" is the word
 * embeddings, "cls.predictions.decoder.bias" is "cls.predictions.bias") and the old TF-converted
 * spellings "LayerNorm.gamma"/"LayerNorm.beta" for ".weight"/".bias". *alias (may be NULL) is
 * set to 1 when the name was one of those aliases. */
int bert_param_index(const bert *m, const char *name, int *alias);
/* 1 for checkpoint names BertForMaskedLM does not use and transformers skips on loading
 * (bert.pooler.*, cls.seq_relationship.*, the position_ids/token_type_ids buffers; "bert." may
 * be absent), else 0 */
int bert_name_unused(const char *name);

/* transformers' BertPreTrainedModel._init_weights: normal(0, std) for every Linear and Embedding
 * weight (std = initializer_range, or 0.02 when it is 0, as transformers does), the pad_token_id
 * row of the word embeddings then set to 0, biases (cls.predictions.bias too) 0, LayerNorm 1 and
 * 0. Drawn on the host from one seeded stream (rng.h) in parameter-table order, every element of
 * a weight drawn in row-major order (the padding row too, before it is zeroed); AdamW state
 * zeroed. 0 or 1. */
int bert_init_weights(bert *m, uint64_t seed);
/* the same initial weights into host[bert_param_count], nothing uploaded */
void bert_init_host(const bert *m, uint64_t seed, float *host);
/* weights from host[bert_param_count] (every parameter at its offset); AdamW state zeroed */
int bert_set_weights(bert *m, const float *host);
/* the weights (or, with grads set, the gradients) into host[bert_param_count]. 0 or 1. */
int bert_get_weights(bert *m, float *host, int grads);

/* The dropout counters (docs/ops.md, Philox layout) the next forward and its backward draw
 * with: seed (the scenario's train.seed) and step (the optimizer step, from 1); 0 and 0 until
 * set. Dropout as HF BertForMaskedLM in training: hidden_dropout_prob after the embeddings'
 * LayerNorm (site EMBED, layer 0) and on attention.output.dense's and output.dense's outputs
 * before their residual and LayerNorm (ATTN_OUT, MLP_OUT, layer l); attention_probs_dropout_prob
 * on the attention probabilities; none in the MLM head. A dropout of 0 runs no dropout code. */
void bert_set_dropout_counters(bert *m, uint64_t seed, uint32_t step);

/* forward on input_ids[B*T] with token_type_ids[B*T] (NULL: all 0, as transformers) and
 * attention_mask[B*T] (NULL: all 1; 0 = padding, a key no query attends to), position ids
 * 0..T-1; labels[B*T] (-100: no prediction). *loss = mean cross-entropy over the labels that are
 * not -100 (0 when there are none, where PyTorch gives 0/0 = NaN: docs/scenario.md). Ids out of
 * range are refused with their position. 0 or 1. */
int bert_forward(bert *m, const int32_t *input_ids, const int32_t *token_type_ids,
                 const int32_t *attention_mask, const int32_t *labels, double *loss);
/* zeroes the gradients and backpropagates the last forward's loss. As torch's nn.Embedding with
 * padding_idx, the word-embedding lookup of pad_token_id adds no gradient to that row (the tied
 * decoder still does). 0 or 1. */
int bert_backward(bert *m);
double bert_grad_norm(bert *m);
void bert_scale_grads(bert *m, double s);
/* one AdamW step t (from 1); without decay_all, biases and LayerNorm weights are not decayed
 * (transformers' Trainer). 0 or 1. */
int bert_adamw_step(bert *m, const adamw_params *p, int t);

#endif
