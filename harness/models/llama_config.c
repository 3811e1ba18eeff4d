/* harness/models/llama_config.c: the Llama family's configuration: each variant's defaults by
 * model_type, reading config.json keys with messages naming the key, and the trainable checks. */
#define _POSIX_C_SOURCE 200809L
#include "llama_config.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "topk_select.h"
#include "util/util.h"

/* ---- variants ------------------------------------------------------------------------------- */

static const char *const VARIANT_NAMES[] = {"llama", "qwen2", "mistral", "mixtral"};

static void variant_defaults(llama_config *c, llama_variant v)
{
    llama_config_defaults(c);
    c->variant = v;
    snprintf(c->model_type, sizeof c->model_type, "%s", VARIANT_NAMES[v]);
    if (v == LLAMA_QWEN2) {
        c->vocab_size = 151936;
        c->intermediate_size = 22016;
        c->max_position_embeddings = 32768;
        c->num_key_value_heads = 32;
        c->sliding_window = 4096;
    } else if (v == LLAMA_MISTRAL || v == LLAMA_MIXTRAL) {
        c->intermediate_size = 14336;
        c->max_position_embeddings = 4096 * 32;
        c->num_key_value_heads = 8;
        c->sliding_window = v == LLAMA_MISTRAL ? 4096 : -1;
    }
    if (v == LLAMA_MIXTRAL) {
        c->rms_norm_eps = 1e-5;
        c->rope_theta = 1e6;
        c->num_local_experts = 8;
        c->num_experts_per_tok = 2;
        c->router_aux_loss_coef = 0.001;
    }
}

void llama_config_defaults(llama_config *c)
{
    memset(c, 0, sizeof *c);
    c->variant = LLAMA_LLAMA;
    snprintf(c->model_type, sizeof c->model_type, "llama");
    c->vocab_size = 32000;
    c->hidden_size = 4096;
    c->intermediate_size = 11008;
    c->num_hidden_layers = 32;
    c->num_attention_heads = 32;
    c->num_key_value_heads = -1;
    c->head_dim = -1;
    snprintf(c->hidden_act, sizeof c->hidden_act, "silu");
    c->max_position_embeddings = 2048;
    c->initializer_range = 0.02;
    c->rms_norm_eps = 1e-6;
    c->rope_theta = 10000.0;
    c->sliding_window = -1;
    c->max_window_layers = 28;
    c->layer_types_sliding = -1;
    c->pad_token_id = -1;
    snprintf(c->torch_dtype, sizeof c->torch_dtype, "float32");
}

/* model_type: one of the variants, or refused by name (Baichuan2 with what it lacks) */
static int set_model_type(llama_config *c, json_t *v, const char *where)
{
    if (!json_is_string(v))
        return config_error(where, "model_type", "must be a string, not %s", json_type_name(v));
    const char *t = json_string_value(v);
    if (strcmp(t, "baichuan") == 0)
        return config_error(where, "model_type",
                            "\"baichuan\" (BaichuanForCausalLM, Baichuan2) is not implemented: it "
                            "needs custom modelling code the llama family lacks: W_pack (one fused "
                            "q/k/v projection), NormHead (an L2-normalised LM head) and, for 13B, "
                            "ALiBi position biases instead of RoPE");
    for (int i = 0; i < 4; i++)
        if (strcmp(t, VARIANT_NAMES[i]) == 0) {
            if (strcmp(c->model_type, t) != 0)
                variant_defaults(c, (llama_variant)i);
            return 0;
        }
    return config_error(where, "model_type",
                        "\"%.64s\" is not a llama-family config (llama, qwen2, mistral, mixtral)",
                        t);
}

/* ---- keys ----------------------------------------------------------------------------------- */

typedef enum { F_INT, F_NINT, F_REAL, F_BOOL, F_ACT, F_DTYPE } field_type;

typedef struct {
    const char *key;
    field_type type;
    size_t off;
} field;

#define FIELD(k, t) {#k, t, offsetof(llama_config, k)}
static const field FIELDS[] = {
    FIELD(vocab_size, F_INT),
    FIELD(hidden_size, F_INT),
    FIELD(intermediate_size, F_INT),
    FIELD(num_hidden_layers, F_INT),
    FIELD(num_attention_heads, F_INT),
    FIELD(num_key_value_heads, F_NINT),
    FIELD(head_dim, F_NINT),
    FIELD(hidden_act, F_ACT),
    FIELD(max_position_embeddings, F_INT),
    FIELD(initializer_range, F_REAL),
    FIELD(rms_norm_eps, F_REAL),
    FIELD(rope_theta, F_REAL),
    FIELD(tie_word_embeddings, F_BOOL),
    FIELD(attention_bias, F_BOOL),
    FIELD(mlp_bias, F_BOOL),
    FIELD(attention_dropout, F_REAL),
    FIELD(sliding_window, F_NINT),
    FIELD(use_sliding_window, F_BOOL),
    FIELD(max_window_layers, F_NINT),
    FIELD(pad_token_id, F_NINT),
    FIELD(num_local_experts, F_INT),
    FIELD(num_experts_per_tok, F_INT),
    FIELD(router_aux_loss_coef, F_REAL),
    FIELD(output_router_logits, F_BOOL),
    FIELD(router_jitter_noise, F_REAL),
    FIELD(torch_dtype, F_DTYPE),
};
#define NFIELDS (sizeof FIELDS / sizeof FIELDS[0])

/* keys a config may hold that do not change the training computation */
static const char *const NO_EFFECT[] = {
    "model_type", "architectures", "transformers_version", "use_cache", "bos_token_id",
    "eos_token_id", "pretraining_tp", "rope_scaling", "rope_parameters", "layer_types",
    "dtype", "_name_or_path", "auto_map", "tokenizer_class", "return_dict",
    "output_hidden_states", "output_attentions", "torchscript", "is_encoder_decoder",
    "chunk_size_feed_forward", "id2label", "label2id", "problem_type", "quantization_config",
    "use_return_dict", "_attn_implementation_autoset", "initializer_factor", NULL};

static int set_int(int *out, json_t *v, const char *where, const char *key, int nullable)
{
    if (nullable && json_is_null(v)) {
        *out = -1;
        return 0;
    }
    if (!json_is_integer(v))
        return config_error(where, key, "must be an integer%s, not %s", nullable ? " or null" : "",
                            json_type_name(v));
    json_int_t i = json_integer_value(v);
    if (i < 0 && nullable)
        return config_error(where, key, "%lld: must be >= 0 (or null)", (long long)i);
    if (i < INT_MIN || i > INT_MAX)
        return config_error(where, key, "%lld does not fit in an int", (long long)i);
    *out = (int)i;
    return 0;
}

static int set_field(llama_config *c, const field *f, json_t *v, const char *where)
{
    char *at = (char *)c + f->off;
    switch (f->type) {
    case F_INT: return set_int((int *)at, v, where, f->key, 0);
    case F_NINT: return set_int((int *)at, v, where, f->key, 1);
    case F_REAL:
        if (!json_is_number(v))
            return config_error(where, f->key, "must be a number, not %s", json_type_name(v));
        *(double *)at = json_number_value(v);
        return 0;
    case F_BOOL:
        if (!json_is_boolean(v))
            return config_error(where, f->key, "must be true or false, not %s",
                                json_type_name(v));
        *(int *)at = json_is_true(v);
        return 0;
    case F_ACT:
        if (!json_is_string(v))
            return config_error(where, f->key, "must be a string, not %s", json_type_name(v));
        if (strlen(json_string_value(v)) >= sizeof c->hidden_act)
            return config_error(where, f->key, "\"%.40s...\" is too long", json_string_value(v));
        snprintf(c->hidden_act, sizeof c->hidden_act, "%s", json_string_value(v));
        return 0;
    case F_DTYPE: return config_set_dtype(c->torch_dtype, sizeof c->torch_dtype, v, where);
    }
    return config_error(where, f->key, "internal error: unknown field type");
}

/* rope_scaling / rope_parameters (transformers 5): only the default rope type; rope_theta read
 * from the one that counts when it gives one. An empty object is none, as Python's `or` takes
 * it (rope_parameters = rope_scaling or rope_parameters) */
static int read_rope(llama_config *c, json_t *obj, const char *key, const char *where)
{
    json_t *r = json_object_get(obj, key);
    if (!r || json_is_null(r) || (json_is_object(r) && json_object_size(r) == 0))
        return 0;
    if (!json_is_object(r))
        return config_error(where, key, "must be an object or null, not %s", json_type_name(r));
    json_t *type = json_object_get(r, "rope_type");
    if (!type)
        type = json_object_get(r, "type");
    if (type && !json_is_string(type))
        return config_error(where, key, "rope_type must be a string");
    if (type && strcmp(json_string_value(type), "default") != 0)
        return config_error(where, key, "rope type \"%.32s\" is not implemented (only the "
                            "default rotary embedding; rope_scaling is refused)",
                            json_string_value(type));
    if (!type && strcmp(key, "rope_scaling") == 0)
        return config_error(where, key, "rope_scaling is not implemented (only the default "
                            "rotary embedding)");
    json_t *theta = json_object_get(r, "rope_theta");
    if (theta && !json_is_number(theta))
        return config_error(where, key, "rope_theta must be a number, not %s",
                            json_type_name(theta));
    if (theta && (!(json_number_value(theta) > 0) || !isfinite(json_number_value(theta))))
        return config_error(where, key, "rope_theta must be > 0, got %g",
                            json_number_value(theta));
    if (theta)
        c->rope_theta = json_number_value(theta);
    return 0;
}

/* layer_types (Qwen2Config): whether any layer is "sliding_attention"; null: not given */
static int read_layer_types(llama_config *c, json_t *obj, const char *where)
{
    json_t *types = json_object_get(obj, "layer_types");
    if (!types || json_is_null(types)) {
        c->layer_types_sliding = -1;
        return 0;
    }
    if (!json_is_array(types))
        return config_error(where, "layer_types", "must be an array of strings or null, not %s",
                            json_type_name(types));
    if (json_array_size(types) != (size_t)c->num_hidden_layers) /* as Qwen2Config refuses it */
        return config_error(where, "layer_types", "has %zu entries for num_hidden_layers %d: "
                            "one per layer", json_array_size(types), c->num_hidden_layers);
    c->layer_types_sliding = 0;
    size_t i;
    json_t *t;
    json_array_foreach(types, i, t) {
        if (!json_is_string(t))
            return config_error(where, "layer_types", "entry %zu must be a string, not %s", i,
                                json_type_name(t));
        const char *lt = json_string_value(t);
        if (strcmp(lt, "full_attention") != 0 && strcmp(lt, "sliding_attention") != 0)
            return config_error(where, "layer_types", "entry %zu: \"%.32s\" is not "
                                "implemented (full_attention or sliding_attention)", i, lt);
        if (strcmp(lt, "sliding_attention") == 0)
            c->layer_types_sliding = 1;
    }
    return 0;
}

int llama_config_from_json(llama_config *c, json_t *obj, const char *where)
{
    if (!json_is_object(obj))
        return config_error(where, "", "a model config must be a JSON object, not %s",
                            obj ? json_type_name(obj) : "nothing");
    json_t *t = json_object_get(obj, "model_type");
    int rc = t ? set_model_type(c, t, where) : 0;
    for (size_t i = 0; i < NFIELDS && !rc; i++) {
        json_t *v = json_object_get(obj, FIELDS[i].key);
        if (v && FIELDS[i].type != F_DTYPE)
            rc = set_field(c, &FIELDS[i], v, where);
    }
    if (!rc)
        rc = read_layer_types(c, obj, where);
    /* Qwen2Config keeps a null head_dim, and Qwen2Attention's getattr then builds None: no
     * model (Mistral's config and Mixtral's attention derive it instead) */
    json_t *hd = json_object_get(obj, "head_dim");
    if (!rc && hd && json_is_null(hd) && c->variant == LLAMA_QWEN2)
        rc = config_error(where, "head_dim", "null is no head size for Qwen2 (transformers "
                          "builds Qwen2Attention with head_dim None): give a number or leave "
                          "the key out");
    /* a non-empty rope_scaling replaces rope_parameters whole, its rope_theta with it (as
     * transformers 5 resolves them: the top-level rope_theta, else the default, then) */
    json_t *scaling = json_object_get(obj, "rope_scaling");
    int scaling_counts = json_is_object(scaling) && json_object_size(scaling) > 0;
    if (!rc)
        rc = read_rope(c, obj, "rope_scaling", where);
    if (!rc && !scaling_counts)
        rc = read_rope(c, obj, "rope_parameters", where);
    return rc ? rc : config_read_dtype(c->torch_dtype, sizeof c->torch_dtype, obj, where);
}

static int llama_set_key(void *c, const char *key, json_t *v, const char *where)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (strcmp(FIELDS[i].key, key) == 0)
            return v ? set_field(c, &FIELDS[i], v, where) : 0;
    return -1;
}

int llama_config_apply_overrides(llama_config *c, json_t *config, json_t *overrides,
                                 const char *where)
{
    return config_apply_overrides(c, llama_set_key, config, overrides, where);
}

/* ---- sizes ---------------------------------------------------------------------------------- */

int llama_config_head_dim(const llama_config *c)
{
    return c->head_dim >= 0 ? c->head_dim
           : c->num_attention_heads > 0 ? c->hidden_size / c->num_attention_heads : 0;
}

static int kv_heads(const llama_config *c)
{
    return c->num_key_value_heads >= 0 ? c->num_key_value_heads : c->num_attention_heads;
}

int llama_config_window(const llama_config *c)
{
    if (c->variant == LLAMA_LLAMA)
        return -1; /* LlamaForCausalLM has no sliding window: the key changes nothing */
    if (c->variant != LLAMA_QWEN2)
        return c->sliding_window;
    if (!c->use_sliding_window || c->layer_types_sliding == 0)
        return -1;
    if (c->layer_types_sliding < 0 && c->max_window_layers >= 0 &&
        c->num_hidden_layers <= c->max_window_layers)
        return -1; /* every layer i < max_window_layers: full attention */
    return c->sliding_window;
}

uint64_t llama_config_param_count(const llama_config *c)
{
    uint64_t C = (uint64_t)c->hidden_size, I = (uint64_t)c->intermediate_size;
    uint64_t hd = (uint64_t)llama_config_head_dim(c), NH = (uint64_t)c->num_attention_heads;
    uint64_t NKV = (uint64_t)kv_heads(c), V = (uint64_t)c->vocab_size;
    uint64_t q = size_mul(NH, hd), kv = size_mul(NKV, hd);
    uint64_t attn = size_add(size_mul(size_add(q, size_mul(2, kv)), C), size_mul(q, C));
    if (c->variant == LLAMA_QWEN2 || c->attention_bias)
        attn = size_add(attn, size_add(q, size_mul(2, kv)));
    if (c->variant != LLAMA_QWEN2 && c->attention_bias)
        attn = size_add(attn, C);
    uint64_t mlp = size_mul(3, size_mul(C, I));
    if (c->variant == LLAMA_MIXTRAL)
        mlp = size_add(size_mul((uint64_t)c->num_local_experts, mlp),
                       size_mul((uint64_t)c->num_local_experts, C));
    uint64_t layer = size_add(size_add(attn, mlp), size_mul(2, C));
    uint64_t total = size_add(size_mul((uint64_t)c->num_hidden_layers, layer),
                              size_add(size_mul(V, C), C));
    return c->tie_word_embeddings ? total : size_add(total, size_mul(V, C));
}

/* ---- checks --------------------------------------------------------------------------------- */

static int check_sizes(const llama_config *c, const char *where)
{
    const struct {
        const char *key;
        int v;
    } sizes[] = {{"vocab_size", c->vocab_size},
                 {"hidden_size", c->hidden_size},
                 {"intermediate_size", c->intermediate_size},
                 {"num_hidden_layers", c->num_hidden_layers},
                 {"num_attention_heads", c->num_attention_heads},
                 {"max_position_embeddings", c->max_position_embeddings}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].v <= 0)
            return config_error(where, sizes[i].key, "must be > 0, got %d", sizes[i].v);
    if (c->num_key_value_heads == 0 || c->num_attention_heads % kv_heads(c) != 0)
        return config_error(where, "num_key_value_heads", "%d must be > 0 and divide "
                            "num_attention_heads (%d)", kv_heads(c), c->num_attention_heads);
    /* LlamaConfig refuses this (its validate_architecture), an explicit head_dim or not
     * (transformers 5.23); Qwen2, Mistral and Mixtral take head_dim = hidden_size //
     * num_attention_heads, as llama_config_head_dim does, or the head_dim given */
    if (c->variant == LLAMA_LLAMA && c->hidden_size % c->num_attention_heads != 0)
        return config_error(where, "hidden_size", "%d is not divisible by num_attention_heads "
                            "(%d)", c->hidden_size, c->num_attention_heads);
    int hd = llama_config_head_dim(c);
    if ((hd <= 0 || hd % 2 != 0) && c->head_dim >= 0) /* given, 0 too: never derived then */
        return config_error(where, "head_dim", "%d: the rotary embedding needs an even head "
                            "size > 0", hd);
    if (hd <= 0 || hd % 2 != 0) /* derived: name the keys it comes from */
        return config_error(where, "hidden_size", "%d / num_attention_heads %d gives a head "
                            "size of %d: the rotary embedding needs an even one > 0",
                            c->hidden_size, c->num_attention_heads, hd);
    if (c->pad_token_id >= c->vocab_size)
        return config_error(where, "pad_token_id", "%d is outside the vocabulary (vocab_size "
                            "%d)", c->pad_token_id, c->vocab_size);
    return 0;
}

/* a product of sizes over the limit, and the factors it is made of (key and value; at most
 * five; a factor that the config does not set, as a null head_dim, has a NULL key) */
typedef struct {
    uint64_t n;
    const char *what;
    const char *keys[5];
    int values[5];
} size_product;

/* the factor to name in the message: the largest one the config sets */
static int blamed_factor(const size_product *p)
{
    int best = -1;
    for (int k = 0; k < 5; k++)
        if (p->keys[k] && (best < 0 || p->values[k] > p->values[best]))
            best = k;
    return best < 0 ? 0 : best;
}

static int check_products(const llama_config *c, const char *where)
{
    uint64_t C = (uint64_t)c->hidden_size;
    uint64_t hd = (uint64_t)llama_config_head_dim(c);
    const char *hd_key = c->head_dim > 0 ? "head_dim" : NULL; /* null: derived, not given */
    const size_product t[] = {
        {size_mul((uint64_t)c->vocab_size, C), "embed_tokens.weight (vocab_size x hidden_size)",
         {"vocab_size", "hidden_size"}, {c->vocab_size, c->hidden_size}},
        {size_mul((uint64_t)c->intermediate_size, C),
         "mlp.gate_proj.weight (intermediate_size x hidden_size)",
         {"intermediate_size", "hidden_size"}, {c->intermediate_size, c->hidden_size}},
        {size_mul(size_mul((uint64_t)c->num_attention_heads, hd), C),
         "self_attn.q_proj.weight (num_attention_heads x head_dim x hidden_size)",
         {"num_attention_heads", hd_key, "hidden_size"},
         {c->num_attention_heads, (int)hd, c->hidden_size}},
        {llama_config_param_count(c), "the parameters in all",
         {"num_hidden_layers", c->num_local_experts > 0 ? "num_local_experts" : NULL,
          "intermediate_size", "hidden_size", "vocab_size"},
         {c->num_hidden_layers, c->num_local_experts, c->intermediate_size, c->hidden_size,
          c->vocab_size}}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (t[i].n <= LLAMA_MAX_ELEMENTS)
            continue;
        int k = blamed_factor(&t[i]);
        return config_error(where, t[i].keys[k], "%d is too large: %s would have %llu elements, "
                            "over the limit of %llu", t[i].values[k], t[i].what,
                            (unsigned long long)t[i].n, (unsigned long long)LLAMA_MAX_ELEMENTS);
    }
    return 0;
}

static int check_architecture(const llama_config *c, const char *where)
{
    if (strcmp(c->hidden_act, "silu") != 0)
        return config_error(where, "hidden_act", "\"%s\" is not implemented: use silu",
                            c->hidden_act);
    if (c->mlp_bias)
        return config_error(where, "mlp_bias", "true is not implemented (no MLP biases)");
    if (c->attention_dropout != 0)
        return config_error(where, "attention_dropout", "%g is not implemented: use 0",
                            c->attention_dropout);
    if (!(c->rms_norm_eps > 0) || !isfinite(c->rms_norm_eps))
        return config_error(where, "rms_norm_eps", "must be > 0, got %g", c->rms_norm_eps);
    if (!(c->rope_theta > 0) || !isfinite(c->rope_theta))
        return config_error(where, "rope_theta", "must be > 0, got %g", c->rope_theta);
    /* at most 1e30: the normal draws (a few sigma) times it stay finite in fp32 */
    if (!(c->initializer_range >= 0 && c->initializer_range <= 1e30))
        return config_error(where, "initializer_range", "must be in [0, 1e30], got %g",
                            c->initializer_range);
    if (c->attention_bias && c->variant != LLAMA_LLAMA)
        return config_error(where, "attention_bias", "true is a LlamaConfig key; %s does not "
                            "have it", c->model_type);
    return 0;
}

static int check_moe(const llama_config *c, const char *where)
{
    if (c->variant != LLAMA_MIXTRAL)
        return 0;
    if (c->num_local_experts < 1 || c->num_local_experts > TOPK_MAX_EXPERTS)
        return config_error(where, "num_local_experts", "must be in [1, %d] (the router's row "
                            "length), got %d", TOPK_MAX_EXPERTS, c->num_local_experts);
    if (c->num_experts_per_tok < 1 || c->num_experts_per_tok > c->num_local_experts)
        return config_error(where, "num_experts_per_tok", "%d must be in [1, num_local_experts "
                            "%d]", c->num_experts_per_tok, c->num_local_experts);
    if (c->router_jitter_noise != 0)
        return config_error(where, "router_jitter_noise", "%g is not implemented: use 0",
                            c->router_jitter_noise);
    if (!isfinite(c->router_aux_loss_coef))
        return config_error(where, "router_aux_loss_coef", "must be a finite number");
    return 0;
}

static int known_key(const char *key)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (strcmp(FIELDS[i].key, key) == 0)
            return 1;
    for (const char *const *k = NO_EFFECT; *k; k++)
        if (strcmp(*k, key) == 0)
            return 1;
    return 0;
}

static void warn_unknown(json_t *raw, const char *where)
{
    const char *key;
    json_t *v;
    json_object_foreach(raw, key, v)
    {
        if (!known_key(key))
            config_warn(where, key, "not a key of the llama family's configs: ignored");
    }
}

int llama_config_validate(const llama_config *c, json_t *raw_config, const char *where)
{
    int rc = check_sizes(c, where);
    if (!rc)
        rc = check_products(c, where);
    if (!rc)
        rc = check_architecture(c, where);
    if (!rc)
        rc = check_moe(c, where);
    if (!rc && json_is_object(raw_config))
        warn_unknown(raw_config, where);
    return rc;
}
