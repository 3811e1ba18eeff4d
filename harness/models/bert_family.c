/* harness/models/bert_family.c: BERT as a model family (models/model.h): BertConfig through
 * bert_config.c, the config.json a BertForMaskedLM directory holds, and the model (bert.c). */
#include <string.h>

#include "bert.h"
#include "model.h"

static void config_defaults(model_config_u *c) { bert_config_defaults(&c->bert); }

static int config_from_json(model_config_u *c, json_t *obj, const char *where)
{
    return bert_config_from_json(&c->bert, obj, where);
}

static int apply_overrides(model_config_u *c, json_t *config, json_t *overrides,
                           const char *where)
{
    return bert_config_apply_overrides(&c->bert, config, overrides, where);
}

/* the raw config's keys BertConfig models are read into c and checked there; the others
 * (use_cache, classifier_dropout, gradient_checkpointing, ...) do not change BertForMaskedLM's
 * training computation */
static int config_validate(const model_config_u *c, json_t *raw_config, const char *where)
{
    (void)raw_config;
    return bert_config_validate(&c->bert, where);
}

static json_t *config_json(const model_config_u *u, json_t *src_config)
{
    const bert_config *c = &u->bert;
    json_t *j = src_config ? json_deep_copy(src_config) : json_object();
    json_object_set_new(j, "model_type", json_string("bert"));
    json_object_set_new(j, "architectures", json_pack("[s]", "BertForMaskedLM"));
    json_object_set_new(j, "vocab_size", json_integer(c->vocab_size));
    json_object_set_new(j, "hidden_size", json_integer(c->hidden_size));
    json_object_set_new(j, "num_hidden_layers", json_integer(c->num_hidden_layers));
    json_object_set_new(j, "num_attention_heads", json_integer(c->num_attention_heads));
    json_object_set_new(j, "intermediate_size", json_integer(c->intermediate_size));
    json_object_set_new(j, "hidden_act", json_string(c->hidden_act));
    json_object_set_new(j, "hidden_dropout_prob", json_real(c->hidden_dropout_prob));
    json_object_set_new(j, "attention_probs_dropout_prob",
                        json_real(c->attention_probs_dropout_prob));
    json_object_set_new(j, "max_position_embeddings", json_integer(c->max_position_embeddings));
    json_object_set_new(j, "type_vocab_size", json_integer(c->type_vocab_size));
    json_object_set_new(j, "initializer_range", json_real(c->initializer_range));
    json_object_set_new(j, "layer_norm_eps", json_real(c->layer_norm_eps));
    json_object_set_new(j, "pad_token_id",
                        c->pad_token_id >= 0 ? json_integer(c->pad_token_id) : json_null());
    json_object_set_new(j, "position_embedding_type", json_string(c->position_embedding_type));
    json_object_set_new(j, "tie_word_embeddings", json_true());
    json_object_set_new(j, "is_decoder", json_false());
    json_object_set_new(j, "add_cross_attention", json_false());
    /* the weights are written as F32, whatever the source said */
    json_object_set_new(j, "torch_dtype", json_string("float32"));
    json_object_del(j, "dtype");
    return j;
}

static model_sizes config_sizes(const model_config_u *c)
{
    return (model_sizes){c->bert.vocab_size, c->bert.max_position_embeddings,
                         "max_position_embeddings"};
}

static int check_fit(const model_config_u *c, int B, int T, const device *d, char *why,
                     size_t len)
{
    return bert_check_fit(&c->bert, B, T, d, why, len);
}

static void *create(device *d, const model_config_u *c, int B, int T)
{
    return bert_create(d, &c->bert, B, T);
}

static void destroy(void *impl) { bert_free(impl); }

static void state(void *impl, model_state *st) { bert_state(impl, st); }

static int init_weights(void *impl, uint64_t seed, float *host)
{
    bert_init_host(impl, seed, host);
    return 0;
}

static int forward(void *impl, const model_batch *b, double *loss)
{
    bert_set_dropout_counters(impl, b->seed, b->step);
    return bert_forward(impl, b->input_ids, b->token_type_ids, b->attention_mask, b->labels,
                        loss);
}

static int backward(void *impl) { return bert_backward(impl); }
static size_t activation_bytes(const void *impl) { return bert_activation_bytes(impl); }

/* what a BertForMaskedLM checkpoint carries that the model does not use (the pooler, the
 * next-sentence head, the position_ids/token_type_ids buffers); from_pretrained skips them */
static int ignored_tensor(const char *name) { return bert_name_unused(name); }

static int checkpoint_index(const void *impl, const char *name, int *alias)
{
    return bert_param_index(impl, name, alias);
}

static const char *const unprefixed[] = {"cls.", NULL};

const model_family bert_family = {
    .name = "bert",
    .hf_architecture = "BertForMaskedLM",
    .hf_prefix = "bert.",
    .unprefixed = unprefixed,
    .tied_head = "cls.predictions.decoder.weight",
    .labels = LABELS_MLM,
    .needs = MODEL_NEEDS_TOKEN_TYPES | MODEL_NEEDS_ATTENTION_MASK,
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
};
