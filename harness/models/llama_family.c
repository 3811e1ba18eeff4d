/* harness/models/llama_family.c: the Llama family (models/model.h): LlamaForCausalLM,
 * Qwen2ForCausalLM, MistralForCausalLM and MixtralForCausalLM by config.json's model_type. */
#include <string.h>

#include "llama_internal.h"
#include "model.h"

static void config_defaults(model_config_u *c) { llama_config_defaults(&c->llama); }

static int config_from_json(model_config_u *c, json_t *obj, const char *where)
{
    return llama_config_from_json(&c->llama, obj, where);
}

static int apply_overrides(model_config_u *c, json_t *config, json_t *overrides,
                           const char *where)
{
    return llama_config_apply_overrides(&c->llama, config, overrides, where);
}

static int config_validate(const model_config_u *c, json_t *raw_config, const char *where)
{
    return llama_config_validate(&c->llama, raw_config, where);
}

static const char *architecture(const llama_config *c)
{
    static const char *const names[] = {"LlamaForCausalLM", "Qwen2ForCausalLM",
                                        "MistralForCausalLM", "MixtralForCausalLM"};
    return names[c->variant];
}

/* the keys every variant has */
static void set_common(json_t *j, const llama_config *c)
{
    json_object_set_new(j, "model_type", json_string(c->model_type));
    json_object_set_new(j, "architectures", json_pack("[s]", architecture(c)));
    json_object_set_new(j, "vocab_size", json_integer(c->vocab_size));
    json_object_set_new(j, "hidden_size", json_integer(c->hidden_size));
    json_object_set_new(j, "intermediate_size", json_integer(c->intermediate_size));
    json_object_set_new(j, "num_hidden_layers", json_integer(c->num_hidden_layers));
    json_object_set_new(j, "num_attention_heads", json_integer(c->num_attention_heads));
    json_object_set_new(j, "num_key_value_heads",
                        json_integer(c->num_key_value_heads >= 0 ? c->num_key_value_heads
                                                                 : c->num_attention_heads));
    json_object_set_new(j, "head_dim", json_integer(llama_config_head_dim(c)));
    json_object_set_new(j, "hidden_act", json_string(c->hidden_act));
    json_object_set_new(j, "max_position_embeddings", json_integer(c->max_position_embeddings));
    json_object_set_new(j, "initializer_range", json_real(c->initializer_range));
    json_object_set_new(j, "rms_norm_eps", json_real(c->rms_norm_eps));
    json_object_set_new(j, "rope_theta", json_real(c->rope_theta));
    json_object_set_new(j, "rope_parameters", json_pack("{s:s, s:f}", "rope_type", "default",
                                                        "rope_theta", c->rope_theta));
    json_object_del(j, "rope_scaling");
    json_object_set_new(j, "tie_word_embeddings", json_boolean(c->tie_word_embeddings));
    json_object_set_new(j, "attention_dropout", json_real(c->attention_dropout));
    json_object_set_new(j, "pad_token_id",
                        c->pad_token_id >= 0 ? json_integer(c->pad_token_id) : json_null());
}

/* qwen2's layer_types when the config gave them without a sliding layer: all full attention,
 * one per layer (num_hidden_layers may have been overridden); otherwise as the source had them,
 * or none, and transformers derives them from max_window_layers as the harness does */
static void set_layer_types(json_t *j, const llama_config *c)
{
    if (c->layer_types_sliding != 0)
        return;
    json_t *types = json_array();
    for (int i = 0; types && i < c->num_hidden_layers; i++)
        json_array_append_new(types, json_string("full_attention"));
    if (types)
        json_object_set_new(j, "layer_types", types);
}

/* the keys of one variant */
static void set_variant(json_t *j, const llama_config *c)
{
    if (c->variant == LLAMA_LLAMA) {
        json_object_set_new(j, "attention_bias", json_boolean(c->attention_bias));
        json_object_set_new(j, "mlp_bias", json_false());
    }
    if (c->variant != LLAMA_LLAMA)
        json_object_set_new(j, "sliding_window", c->sliding_window >= 0
                                                     ? json_integer(c->sliding_window)
                                                     : json_null());
    if (c->variant == LLAMA_QWEN2) {
        json_object_set_new(j, "use_sliding_window", json_boolean(c->use_sliding_window));
        json_object_set_new(j, "max_window_layers", c->max_window_layers >= 0
                                                        ? json_integer(c->max_window_layers)
                                                        : json_null());
        set_layer_types(j, c);
    }
    if (c->variant == LLAMA_MIXTRAL) {
        json_object_set_new(j, "num_local_experts", json_integer(c->num_local_experts));
        json_object_set_new(j, "num_experts_per_tok", json_integer(c->num_experts_per_tok));
        json_object_set_new(j, "router_aux_loss_coef", json_real(c->router_aux_loss_coef));
        json_object_set_new(j, "output_router_logits", json_boolean(c->output_router_logits));
        json_object_set_new(j, "router_jitter_noise", json_real(c->router_jitter_noise));
    }
}

static json_t *config_json(const model_config_u *u, json_t *src_config)
{
    const llama_config *c = &u->llama;
    json_t *j = src_config ? json_deep_copy(src_config) : json_object();
    set_common(j, c);
    set_variant(j, c);
    /* the weights are written as F32, whatever the source said */
    json_object_set_new(j, "torch_dtype", json_string("float32"));
    json_object_del(j, "dtype");
    if (!src_config) { /* the classes' bos/eos defaults may lie outside a tiny vocabulary */
        json_object_set_new(j, "bos_token_id", json_null());
        json_object_set_new(j, "eos_token_id", json_null());
    }
    return j;
}

static model_sizes config_sizes(const model_config_u *c)
{
    return (model_sizes){c->llama.vocab_size, c->llama.max_position_embeddings,
                         "max_position_embeddings"};
}

static int check_fit(const model_config_u *c, int B, int T, const device *d, char *why,
                     size_t len)
{
    return llama_check_fit(&c->llama, B, T, d, why, len);
}

static void *create(device *d, const model_config_u *c, int B, int T)
{
    return llama_create(d, &c->llama, B, T);
}

static void destroy(void *impl) { llama_free(impl); }
static void state(void *impl, model_state *st) { llama_state(impl, st); }

static int init_weights(void *impl, uint64_t seed, float *host)
{
    return llama_init_weights(impl, seed, host);
}

static int forward(void *impl, const model_batch *b, double *loss)
{
    return llama_forward(impl, b, loss);
}

static int backward(void *impl) { return llama_backward(impl); }
static size_t activation_bytes(const void *impl) { return llama_activation_bytes(impl); }

/* the rotary tables old checkpoints saved as buffers */
static int ignored_tensor(const char *name)
{
    size_t n = strlen(name), k = strlen("rotary_emb.inv_freq");
    return n >= k && strcmp(name + n - k, "rotary_emb.inv_freq") == 0;
}

static int checkpoint_index(const void *impl, const char *name, int *alias)
{
    return llama_param_index(impl, name, alias);
}

static void moe_shape(const void *impl, int *layers, int *experts)
{
    const llama *m = impl;
    *layers = m->z.moe ? m->z.L : 0;
    *experts = m->z.moe ? (int)m->z.E : 0;
}

static int expert_tokens(void *impl, int64_t *counts)
{
    const llama *m = impl;
    if (m->z.moe)
        memcpy(counts, m->counts, (size_t)m->z.L * m->z.E * sizeof *counts);
    return 0;
}

static const char *const unprefixed[] = {"lm_head.", NULL};
/* config.json model_types this family reads (baichuan: to refuse it by name) */
static const char *const model_types[] = {"llama", "qwen2", "mistral", "mixtral", "baichuan",
                                          NULL};

const model_family llama_family = {
    .name = "llama",
    .hf_architecture = "LlamaForCausalLM",
    .hf_prefix = "model.",
    .unprefixed = unprefixed,
    .model_types = model_types,
    .tied_head = NULL,
    .labels = LABELS_CAUSAL,
    .needs = MODEL_NEEDS_ATTENTION_MASK,
    .config_defaults = config_defaults,
    .config_from_json = config_from_json,
    .config_apply_overrides = apply_overrides,
    .config_validate = config_validate,
    .config_json = config_json,
    .config_sizes = config_sizes,
    .check_fit = check_fit,
    .create = create,
    .destroy = destroy,
    .state = state,
    .init_weights = init_weights,
    .forward = forward,
    .backward = backward,
    .activation_bytes = activation_bytes,
    .ignored_tensor = ignored_tensor,
    .checkpoint_index = checkpoint_index,
    .moe_shape = moe_shape,
    .expert_tokens = expert_tokens,
};
