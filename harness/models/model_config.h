/* harness/models/model_config.h: a GPT-2 model configuration with Hugging Face GPT2Config's keys and
 * defaults, read from a JSON object (config.json or a scenario's inline config) plus overrides. */
#ifndef MODEL_CONFIG_H
#define MODEL_CONFIG_H

#include <jansson.h>
#include <limits.h>
#include <stdint.h>

/* The most elements one tensor, and all parameters together, may have: the device interface
 * counts elements in int (AdamW, the gradient norm and scaling run over every parameter as one
 * tensor). docs/scenario.md lists the limits this implies. */
#define GPT2_MAX_ELEMENTS ((uint64_t)INT_MAX)

typedef struct {
    int vocab_size;             /* 50257 */
    int n_positions;            /* 1024 */
    int n_embd;                 /* 768 */
    int n_layer;                /* 12 */
    int n_head;                 /* 12 */
    double layer_norm_epsilon;  /* 1e-5 */
    double initializer_range;   /* 0.02 */
    char activation_function[32]; /* "gelu_new" (the only one the harness implements) */
    double resid_pdrop;         /* 0.1 */
    double embd_pdrop;          /* 0.1 */
    double attn_pdrop;          /* 0.1 */
    double summary_first_dropout; /* 0.1 (unused by the LM head, kept for override files) */
    char torch_dtype[16];       /* "float32" unless the config says otherwise */
} gpt2_config;

/* GPT2Config's defaults */
void gpt2_config_defaults(gpt2_config *c);

/* Reads GPT2Config keys from obj into c (keys absent keep their current value; keys the
 * harness does not model are ignored, as transformers keeps them as attributes). `where` names
 * the source in messages (a file path, or "scenario.json: model.config"). A key of the wrong
 * JSON type is an error. Returns 0, or 2 after printing a message. */
int gpt2_config_from_json(gpt2_config *c, json_t *obj, const char *where);

/* Applies override_config.json rules (the seed workflow's): a key the config does not have is
 * warned about and skipped; a key whose current value is null is warned about and skipped;
 * `torch_dtype` must name a dtype ("float32", "float16", "bfloat16", "float64"); a value of
 * another JSON type than the config's is an error. `config` is the raw config object (to see
 * which keys exist and which are null); the result lands in c. Returns 0, or 2. */
int gpt2_config_apply_overrides(gpt2_config *c, json_t *config, json_t *overrides,
                                const char *where);

/* a * b, or UINT64_MAX when the product does not fit in 64 bits */
uint64_t size_mul(uint64_t a, uint64_t b);
/* a + b, or UINT64_MAX when the sum does not fit in 64 bits */
uint64_t size_add(uint64_t a, uint64_t b);
/* the number of parameter elements of c, in 64 bits (UINT64_MAX when even that overflows):
 * wte V*C + wpe P*C + n_layer * (12 C^2 + 13 C) + ln_f 2C */
uint64_t gpt2_config_param_count(const gpt2_config *c);

/* Checks values the harness can train: positive sizes, n_embd % n_head == 0, every parameter
 * tensor and the parameter total within GPT2_MAX_ELEMENTS (refused by the field that makes them
 * too large), gelu_new, all dropouts 0 (dropout is not implemented yet: a non-zero one is
 * refused, with its name).
 * Returns 0, or 2 after printing a message naming `where` and the key. */
int gpt2_config_validate(const gpt2_config *c, const char *where);

#endif
