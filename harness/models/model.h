/* harness/models/model.h: the model interface: one table of functions per model family (as
 * devices/device.h is one per backend), the registry, and the family-free model operations. */
#ifndef MODEL_H
#define MODEL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "bert_config.h"
#include "llama_config.h"
#include "model_config.h"

/* the label value that adds nothing to the loss (PyTorch's CrossEntropyLoss ignore_index) */
#define MODEL_IGNORE_INDEX (-100)

/* what a parameter is, for weight-decay groups (transformers' Trainer excludes biases and
 * LayerNorm weights), for seeded init and for checkpoint files */
typedef enum { PARAM_MATRIX, PARAM_EMBEDDING, PARAM_BIAS, PARAM_NORM } param_role;

/* one row of a family's parameter table: every parameter lives at `offset` in one allocation
 * (and its gradient and AdamW moments at the same offset in theirs) */
typedef struct {
    char name[64];       /* HF name without the family's hf_prefix, e.g. "h.0.attn.c_attn.weight" */
    int ndim;
    int shape[2];
    size_t offset, n;    /* elements within the parameter allocation */
    param_role role;
} param_info;

/* A family's config: every family's config struct in one union, so a scenario holds any of
 * them. A new family adds its member here. */
typedef union {
    gpt2_config gpt2;
    bert_config bert;
    llama_config llama;
} model_config_u;

/* one batch, as a Hugging Face model takes it: [B*T] each, row-major by sequence */
typedef struct {
    int B, T;
    const int32_t *input_ids;
    const int32_t *token_type_ids;  /* NULL: all 0 (the family's needs say if it reads them) */
    const int32_t *attention_mask;  /* 1 attend, 0 padding; NULL: all 1 */
    const int32_t *labels;          /* the target at each position, MODEL_IGNORE_INDEX = none */
    /* dropout counters (docs/ops.md, Philox layout): the scenario's train.seed and the
     * micro-batch's place in the run, (step - 1) x accumulation + micro-batch + 1 (the optimizer
     * step when there is no accumulation); the model keeps them for its backward. Unused when
     * every dropout is 0 */
    uint64_t seed;
    uint32_t step;
} model_batch;

/* how a family's labels relate to its inputs, i.e. what the data must produce */
typedef enum {
    LABELS_CAUSAL, /* next-token: labels[t] = input_ids[t+1] (shifted by the data) */
    LABELS_MLM     /* masked LM: labels at the masked positions, MODEL_IGNORE_INDEX elsewhere */
} label_kind;

/* bits of model_family.needs: the batch fields the family reads besides input_ids, labels */
#define MODEL_NEEDS_TOKEN_TYPES 1u
#define MODEL_NEEDS_ATTENTION_MASK 2u

/* the sizes the rest of the harness checks data against */
typedef struct {
    int vocab_size;
    int max_positions; /* the longest sequence (GPT-2 n_positions, BERT max_position_embeddings) */
    const char *positions_key; /* its config key, for messages: "n_positions" */
} model_sizes;

/* what a created model exposes to the family-free code: the parameter table and the four
 * allocations (parameters, gradients, AdamW first and second moments), each param_count long */
typedef struct {
    int n_params;
    const param_info *params;
    dten param_mem, grad_mem, m_mem, v_mem;
} model_state;

typedef struct model_family {
    const char *name;             /* "gpt2": model.family in scenarios, model_type in config.json */
    const char *hf_architecture;  /* "GPT2LMHeadModel": config.json's architectures */
    /* checkpoint names: hf_prefix + param name ("transformer." + "h.0.ln_1.weight"), except
     * names starting with one of `unprefixed` (NULL-terminated, may be NULL): those are stored
     * as they are (BERT's "cls." head). A loader accepts names with or without the prefix. */
    const char *hf_prefix;
    const char *const *unprefixed;
    /* optional (NULL: only `name`): the config.json model_types the family reads,
     * NULL-terminated (the llama family: llama, qwen2, mistral, mixtral) */
    const char *const *model_types;
    /* a head tied to parameter 0 (GPT-2 "lm_head.weight"): left out when saving, accepted and
     * ignored (with a warning when it differs) when loading; NULL when none */
    const char *tied_head;
    label_kind labels;
    unsigned needs;               /* MODEL_NEEDS_* */

    /* ---- config: keys and defaults of the HF config class ---- */
    void (*config_defaults)(model_config_u *c);
    /* keys from obj (config.json or a scenario's inline config); absent keys keep their value */
    int (*config_from_json)(model_config_u *c, json_t *obj, const char *where);
    /* override_config.json rules (model_config.h) against the raw config object */
    int (*config_apply_overrides)(model_config_u *c, json_t *config, json_t *overrides,
                                  const char *where);
    /* values the harness can train, then keys of the raw config it does not implement. 0 or 2 */
    int (*config_validate)(const model_config_u *c, json_t *raw_config, const char *where);
    /* the config.json a checkpoint is saved with: src (or {}) with the keys the harness sets */
    json_t *(*config_json)(const model_config_u *c, json_t *src);
    model_sizes (*config_sizes)(const model_config_u *c);
    /* sizes in 64 bits against the limits and d's memory before anything is allocated: 0, or 1
     * with why */
    int (*check_fit)(const model_config_u *c, int B, int T, const device *d, char *why,
                     size_t len);

    /* ---- an instance on a device, for batches of B x T ---- */
    void *(*create)(device *d, const model_config_u *c, int B, int T); /* NULL after a message */
    void (*destroy)(void *impl);
    void (*state)(void *impl, model_state *st);
    /* transformers' _init_weights from seed into host (param_count floats, at the offsets) */
    int (*init_weights)(void *impl, uint64_t seed, float *host);
    /* forward to the mean loss over the labels that are not ignored (NaN when there are none,
     * as PyTorch's mean cross-entropy); 0, or 1 (device error) */
    int (*forward)(void *impl, const model_batch *b, double *loss);
    /* zeroes the gradients, backpropagates the last forward's loss; 0 or 1 */
    int (*backward)(void *impl);
    size_t (*activation_bytes)(const void *impl);
    /* 1 for a tensor of old checkpoints that is a buffer, not a parameter (GPT-2's attn.bias),
     * or one the model does not use and from_pretrained skips (BERT's pooler) */
    int (*ignored_tensor)(const char *name_without_prefix);
    /* optional (NULL: exact names only): the parameter index of a checkpoint name the table
     * spells otherwise (BERT's cls.predictions.decoder.bias, TF's LayerNorm.gamma/beta), with
     * *alias set to 1 for such a spelling; -1 when the name is no parameter */
    int (*checkpoint_index)(const void *impl, const char *name_without_prefix, int *alias);
    /* optional (NULL: no sparse-MoE layers): how many MoE layers and experts per layer this
     * instance has (0 and 0 when its config has none) */
    void (*moe_shape)(const void *impl, int *layers, int *experts);
    /* optional, with moe_shape: the tokens the last forward routed to each expert, layers x
     * experts counts row-major by layer (a token counts once for each of its top-k experts).
     * 0, or 1 (device error) */
    int (*expert_tokens)(void *impl, int64_t *counts);
} model_family;

/* ---- registry ---- */

/* the family named name ("gpt2"), or NULL */
const model_family *model_family_find(const char *name);
/* 1 when family f reads config.json files of model_type `type` (its name, or one of its
 * model_types) */
int model_family_reads_type(const model_family *f, const char *type);
/* the i-th registered family, NULL past the last (for listing them) */
const model_family *model_family_at(int i);

/* ---- an instance, and what works on any family ---- */

typedef struct model model;

/* check_fit, then create; NULL after a message */
model *model_create(const model_family *f, device *d, const model_config_u *c, int B, int T);
void model_free(model *m);
const model_family *model_family_of(const model *m);
device *model_device(const model *m);
void *model_impl(model *m); /* the family's own state, for its tests */

int model_n_params(const model *m);
const param_info *model_param(const model *m, int i);
int model_find_param(const model *m, const char *name); /* -1 when none */
size_t model_param_count(const model *m); /* total elements */
dten model_param_view(const model *m, int i);
dten model_grad_view(const model *m, int i);
dten model_all_params(const model *m);
dten model_all_grads(const model *m);
/* the name param i has in checkpoint files (hf_prefix applied) */
void model_hf_name(const model *m, int i, char *out, size_t len);
/* bytes kept for backward (activations), and of parameters+grads+AdamW state */
size_t model_activation_bytes(const model *m);
size_t model_state_bytes(const model *m);

/* the family's seeded init, uploaded; the AdamW state zeroed. 0 or 1 */
int model_init_weights(model *m, uint64_t seed);
/* the family's seeded init into host[model_param_count], nothing uploaded. 0 or 1 */
int model_init_host(model *m, uint64_t seed, float *host);
/* 1 when parameter i is part of the head outside the base model (its name starts with one of
 * the family's `unprefixed`: BERT's "cls."), which a base-model checkpoint lacks */
int model_param_is_head(const model *m, int i);
/* weights from host[model_param_count] (at the param offsets); AdamW state zeroed. 0 or 1 */
int model_set_weights(model *m, const float *host);
/* the weights (or, with grads set, the gradients) into host[model_param_count]. 0 or 1 */
int model_get_weights(model *m, float *host, int grads);

int model_forward(model *m, const model_batch *b, double *loss);
/* the family's MoE layers and experts (0 and 0 for a family or config without) */
void model_moe_shape(const model *m, int *layers, int *experts);
/* the last forward's per-expert token counts, layers x experts (model_moe_shape); 0 or 1 */
int model_expert_tokens(model *m, int64_t *counts);
int model_backward(model *m);
/* global L2 norm of all gradients */
double model_grad_norm(model *m);
/* multiplies every gradient by s */
void model_scale_grads(model *m, double s);

typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
    int decay_all; /* 1: decay every parameter; 0: not biases and norm weights */
} adamw_params;
/* one AdamW step t (from 1). 0 or 1 */
int model_adamw_step(model *m, const adamw_params *p, int t);

#endif
