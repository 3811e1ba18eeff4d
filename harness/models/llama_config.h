/* harness/models/llama_config.h: the Llama family's configuration (LlamaConfig, Qwen2Config,
 * MistralConfig, MixtralConfig keys and defaults by model_type), read from JSON, and its checks. */
#ifndef LLAMA_CONFIG_H
#define LLAMA_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "model_config.h" /* GPT2_MAX_ELEMENTS, size_mul, size_add: the same limits */

#define LLAMA_MAX_ELEMENTS GPT2_MAX_ELEMENTS

/* the variants model_type selects; each sets its HF config class's defaults */
typedef enum { LLAMA_LLAMA, LLAMA_QWEN2, LLAMA_MISTRAL, LLAMA_MIXTRAL } llama_variant;

typedef struct {
    llama_variant variant;
    char model_type[16];          /* "llama", "qwen2", "mistral", "mixtral" */
    int vocab_size;               /* 32000 (qwen2 151936) */
    int hidden_size;              /* 4096 */
    int intermediate_size;        /* 11008 (qwen2 22016, mistral/mixtral 14336) */
    int num_hidden_layers;        /* 32 */
    int num_attention_heads;      /* 32 */
    int num_key_value_heads;      /* null: num_attention_heads (mistral/mixtral 8) */
    int head_dim;                 /* null: hidden_size / num_attention_heads */
    char hidden_act[32];          /* "silu" (the only one implemented) */
    int max_position_embeddings;  /* 2048 (qwen2 32768, mistral/mixtral 131072) */
    double initializer_range;     /* 0.02 */
    double rms_norm_eps;          /* 1e-6 (mixtral 1e-5) */
    double rope_theta;            /* 10000 (mixtral 1e6); also rope_parameters.rope_theta */
    int tie_word_embeddings;      /* false */
    int attention_bias;           /* llama: false (q, k, v, o biases); qwen2: q, k, v always */
    int mlp_bias;                 /* false (true refused) */
    double attention_dropout;     /* 0 (other values refused) */
    int sliding_window;           /* -1 = null; mistral 4096; qwen2 4096 (with use_sliding_window) */
    int use_sliding_window;       /* qwen2: false */
    int max_window_layers;        /* qwen2 28: layers i >= it use the window; -1 = null */
    int layer_types_sliding;      /* layer_types: -1 not given, 0 no "sliding_attention", 1 some */
    int pad_token_id;             /* -1 = null: nn.Embedding's padding_idx when set */
    /* mixtral's sparse MoE block (num_local_experts 0 for the dense variants) */
    int num_local_experts;        /* mixtral 8 */
    int num_experts_per_tok;      /* mixtral 2 */
    double router_aux_loss_coef;  /* mixtral 0.001 */
    int output_router_logits;     /* mixtral false: the aux loss is added only when true */
    double router_jitter_noise;   /* mixtral 0 (other values refused) */
    char torch_dtype[16];         /* "float32" unless the config says otherwise */
} llama_config;

/* LlamaConfig's defaults (model_type "llama") */
void llama_config_defaults(llama_config *c);

/* Reads the keys from obj into c. A model_type other than c's resets c to that variant's
 * defaults first ("llama", "qwen2", "mistral", "mixtral"; "baichuan" and others refused by
 * name). Absent keys keep their value; a key of the wrong JSON type is an error naming it.
 * rope_scaling (or rope_parameters) with a rope type other than "default" is refused by name.
 * Returns 0, or 2 after a message naming `where` and the key. */
int llama_config_from_json(llama_config *c, json_t *obj, const char *where);

/* config_apply_overrides (model_config.h) with the family's keys. 0 or 2. */
int llama_config_apply_overrides(llama_config *c, json_t *config, json_t *overrides,
                                 const char *where);

/* the parameter elements of c in 64 bits (UINT64_MAX when even that overflows) */
uint64_t llama_config_param_count(const llama_config *c);

/* what the harness trains: positive sizes, heads dividing as GQA needs, an even head_dim,
 * silu, no mlp_bias, attention_dropout and router_jitter_noise 0, 1 <= num_experts_per_tok <=
 * num_local_experts, every tensor within LLAMA_MAX_ELEMENTS; then keys of raw_config (may be
 * NULL) that no variant knows are warned about. 0, or 2 after a message. */
int llama_config_validate(const llama_config *c, json_t *raw_config, const char *where);

/* the sliding window in effect, -1 when none: mistral's and mixtral's on every layer; qwen2's
 * with use_sliding_window on the layers layer_types names "sliding_attention", or without
 * layer_types on the layers i >= max_window_layers (Qwen2Config's rule) */
int llama_config_window(const llama_config *c);

/* the head size: head_dim, or hidden_size / num_attention_heads when null */
int llama_config_head_dim(const llama_config *c);

#endif
