/* harness/models/model_config.h: the config rules every family shares (override_config.json rules,
 * dtype names, messages naming file, line and key) and GPT-2's config with GPT2Config's keys. */
#ifndef MODEL_CONFIG_H
#define MODEL_CONFIG_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>
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

/* GPT2Config's attribute_map as {alias, key} pairs, ending in {NULL, NULL}: hidden_size,
 * max_position_embeddings, num_attention_heads, num_hidden_layers */
extern const char *const GPT2_KEY_ALIASES[][2];

/* Reads GPT2Config keys from obj into c (keys absent keep their current value; keys the
 * harness does not model are ignored, as transformers keeps them as attributes; an alias of
 * GPT2_KEY_ALIASES wins over the key it names, as in transformers). `where` names
 * the source in messages (a file path, or "scenario.json: model.config"). A key of the wrong
 * JSON type is an error. Returns 0, or 2 after printing a message. */
int gpt2_config_from_json(gpt2_config *c, json_t *obj, const char *where);

/* config_apply_overrides with GPT2Config's keys. Returns 0, or 2. */
int gpt2_config_apply_overrides(gpt2_config *c, json_t *config, json_t *overrides,
                                const char *where);

/* ---- shared by every family's config ---- */

/* Messages about config key `key` (may be ""), `where` being "FILE" or "FILE: dotted.path":
 * "FILE:LINE: dotted.path.key: message", the line found by re-reading FILE. config_error
 * returns 2 (an input error). */
__attribute__((format(printf, 3, 4))) int config_error(const char *where, const char *key,
                                                       const char *fmt, ...);
__attribute__((format(printf, 3, 4))) void config_warn(const char *where, const char *key,
                                                       const char *fmt, ...);

/* the dtype name the harness records for a torch dtype name ("torch.float" -> "float32"), or
 * NULL when it names none of float32, float16, bfloat16, float64 and their aliases */
const char *config_dtype_name(const char *name);
/* torch_dtype from value v into out (a dtype name, else an error naming the key): 0 or 2 */
int config_set_dtype(char *out, size_t len, json_t *v, const char *where);
/* the same, the key named in messages given (transformers 5's "dtype") */
int config_set_dtype_key(char *out, size_t len, json_t *v, const char *where, const char *key);
/* torch_dtype, or transformers 5's "dtype", from obj into out when present and not null; each
 * one given must name a dtype (an error names the key the file spells), torch_dtype wins when
 * both are */
int config_read_dtype(char *out, size_t len, json_t *obj, const char *where);

/* A family's setter for one config key: with v NULL, 0 when the family models `key` and -1 when
 * not; with v, sets the key (0, or 2 after a message: wrong JSON type, out of range). */
typedef int (*config_set_fn)(void *c, const char *key, json_t *v, const char *where);

/* Applies override_config.json rules (the seed workflow's) to any family's config c: a key that
 * neither the raw config nor the family has is warned about and skipped; a key whose value in
 * the raw config is null is warned about and skipped; a key the family models is set through
 * `set` (torch_dtype must name a dtype; so must transformers 5's "dtype", named so in messages,
 * which then sets torch_dtype); any other key must have the JSON type of the config's
 * value (an integer key takes only an integer, a real key any number) and has no effect.
 * `config` is the raw config object. Returns 0, or 2 after a message. */
int config_apply_overrides(void *c, config_set_fn set, json_t *config, json_t *overrides,
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
 * too large), gelu_new, every dropout in [0, 1).
 * Returns 0, or 2 after printing a message naming `where` and the key. */
int gpt2_config_validate(const gpt2_config *c, const char *where);

#endif
