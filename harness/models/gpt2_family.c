/* harness/models/gpt2_family.c: GPT-2 as a model family (models/model.h): GPT2Config through
 * model_config.c, the config.json it saves with, and the model (gpt2.c) behind the table. */
#include <string.h>

#include "gpt2_internal.h"
#include "model.h"
#include "model_dir.h"

static void config_defaults(model_config_u *c) { gpt2_config_defaults(&c->gpt2); }

static int config_from_json(model_config_u *c, json_t *obj, const char *where)
{
    return gpt2_config_from_json(&c->gpt2, obj, where);
}

static int apply_overrides(model_config_u *c, json_t *config, json_t *overrides,
                           const char *where)
{
    return gpt2_config_apply_overrides(&c->gpt2, config, overrides, where);
}

static int config_validate(const model_config_u *c, json_t *raw_config, const char *where)
{
    int rc = gpt2_config_validate(&c->gpt2, where);
    return rc ? rc : model_dir_check_config(raw_config, &c->gpt2, where);
}

static json_t *config_json(const model_config_u *u, json_t *src_config)
{
    const gpt2_config *c = &u->gpt2;
    json_t *j = src_config ? json_deep_copy(src_config) : json_object();
    json_object_set_new(j, "model_type", json_string("gpt2"));
    json_object_set_new(j, "architectures", json_pack("[s]", "GPT2LMHeadModel"));
    json_object_set_new(j, "vocab_size", json_integer(c->vocab_size));
    json_object_set_new(j, "n_positions", json_integer(c->n_positions));
    json_object_set_new(j, "n_embd", json_integer(c->n_embd));
    json_object_set_new(j, "n_layer", json_integer(c->n_layer));
    json_object_set_new(j, "n_head", json_integer(c->n_head));
    for (size_t i = 0; GPT2_KEY_ALIASES[i][0]; i++) /* they would win over the keys above */
        json_object_del(j, GPT2_KEY_ALIASES[i][0]);
    json_object_set_new(j, "activation_function", json_string(c->activation_function));
    json_object_set_new(j, "layer_norm_epsilon", json_real(c->layer_norm_epsilon));
    json_object_set_new(j, "initializer_range", json_real(c->initializer_range));
    json_object_set_new(j, "resid_pdrop", json_real(c->resid_pdrop));
    json_object_set_new(j, "embd_pdrop", json_real(c->embd_pdrop));
    json_object_set_new(j, "attn_pdrop", json_real(c->attn_pdrop));
    json_object_set_new(j, "summary_first_dropout", json_real(c->summary_first_dropout));
    json_object_set_new(j, "tie_word_embeddings", json_true());
    /* the weights are written as F32, whatever the source said */
    json_object_set_new(j, "torch_dtype", json_string("float32"));
    json_object_del(j, "dtype");
    if (!src_config && c->vocab_size <= 50256) { /* GPT2Config's 50256 would be out of range */
        json_object_set_new(j, "bos_token_id", json_null());
        json_object_set_new(j, "eos_token_id", json_null());
    }
    return j;
}

static model_sizes config_sizes(const model_config_u *c)
{
    return (model_sizes){c->gpt2.vocab_size, c->gpt2.n_positions, "n_positions"};
}

static int check_fit(const model_config_u *c, int B, int T, const device *d, char *why,
                     size_t len)
{
    return gpt2_check_fit(&c->gpt2, B, T, d, why, len);
}

static void *create(device *d, const model_config_u *c, int B, int T)
{
    return gpt2_create(d, &c->gpt2, B, T);
}

static void destroy(void *impl) { gpt2_free(impl); }
static void state(void *impl, model_state *st) { gpt2_state(impl, st); }

static int init_weights(void *impl, uint64_t seed, float *host)
{
    return gpt2_init_weights(impl, seed, host);
}

static int forward(void *impl, const model_batch *b, double *loss)
{
    return gpt2_forward(impl, b, loss);
}

static int backward(void *impl) { return gpt2_backward(impl); }
static size_t activation_bytes(const void *impl) { return gpt2_activation_bytes(impl); }

/* h.N.attn.bias and h.N.attn.masked_bias: causal-mask buffers of old checkpoints */
static int ignored_tensor(const char *name)
{
    if (strncmp(name, "h.", 2) != 0)
        return 0;
    const char *p = name + 2;
    while (*p >= '0' && *p <= '9')
        p++;
    return p > name + 2 && (strcmp(p, ".attn.bias") == 0 || strcmp(p, ".attn.masked_bias") == 0);
}

const model_family gpt2_family = {
    .name = "gpt2",
    .hf_architecture = "GPT2LMHeadModel",
    .hf_prefix = "transformer.",
    .unprefixed = NULL,
    .tied_head = "lm_head.weight",
    .labels = LABELS_CAUSAL,
    .needs = 0,
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
};
