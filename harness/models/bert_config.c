/* harness/models/bert_config.c: BERT model configuration: BertConfig's defaults, reading config.json
 * keys with messages that name the key (and its line), and the checks for what can be trained. */
#define _POSIX_C_SOURCE 200809L
#include "bert_config.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* ---- the keys the harness models ------------------------------------------------------------ */

typedef enum { F_INT, F_REAL, F_STRING, F_BOOL, F_PAD, F_DTYPE } field_type;

typedef struct {
    const char *key;
    field_type type;
    size_t off;
} field;

#define FIELD(k, t) {#k, t, offsetof(bert_config, k)}
static const field FIELDS[] = {
    FIELD(vocab_size, F_INT),
    FIELD(hidden_size, F_INT),
    FIELD(num_hidden_layers, F_INT),
    FIELD(num_attention_heads, F_INT),
    FIELD(intermediate_size, F_INT),
    FIELD(hidden_act, F_STRING),
    FIELD(hidden_dropout_prob, F_REAL),
    FIELD(attention_probs_dropout_prob, F_REAL),
    FIELD(max_position_embeddings, F_INT),
    FIELD(type_vocab_size, F_INT),
    FIELD(initializer_range, F_REAL),
    FIELD(layer_norm_eps, F_REAL),
    FIELD(pad_token_id, F_PAD),
    FIELD(position_embedding_type, F_STRING),
    FIELD(tie_word_embeddings, F_BOOL),
    FIELD(is_decoder, F_BOOL),
    FIELD(add_cross_attention, F_BOOL),
    FIELD(torch_dtype, F_DTYPE),
};
#define NFIELDS (sizeof FIELDS / sizeof FIELDS[0])
#define STRING_LEN 32 /* hidden_act and position_embedding_type */

void bert_config_defaults(bert_config *c)
{
    memset(c, 0, sizeof *c);
    c->vocab_size = 30522;
    c->hidden_size = 768;
    c->num_hidden_layers = 12;
    c->num_attention_heads = 12;
    c->intermediate_size = 3072;
    snprintf(c->hidden_act, sizeof c->hidden_act, "gelu");
    c->hidden_dropout_prob = 0.1;
    c->attention_probs_dropout_prob = 0.1;
    c->max_position_embeddings = 512;
    c->type_vocab_size = 2;
    c->initializer_range = 0.02;
    c->layer_norm_eps = 1e-12;
    c->pad_token_id = 0;
    snprintf(c->position_embedding_type, sizeof c->position_embedding_type, "absolute");
    c->tie_word_embeddings = 1;
    snprintf(c->torch_dtype, sizeof c->torch_dtype, "float32");
}

/* ---- reading one key ------------------------------------------------------------------------ */

static int set_int(int *out, json_t *v, const char *where, const char *key)
{
    if (!json_is_integer(v))
        return config_error(where, key, "must be an integer, not %s", json_type_name(v));
    json_int_t i = json_integer_value(v);
    if (i < INT_MIN || i > INT_MAX)
        return config_error(where, key, "%lld does not fit in an int", (long long)i);
    *out = (int)i;
    return 0;
}

static int set_field(bert_config *c, const field *f, json_t *v, const char *where)
{
    char *at = (char *)c + f->off;
    switch (f->type) {
    case F_INT: return set_int((int *)at, v, where, f->key);
    case F_PAD: /* null: no padding row (transformers: padding_idx None) */
        if (json_is_null(v)) {
            *(int *)at = -1;
            return 0;
        }
        if (json_is_integer(v) && json_integer_value(v) < 0) /* torch counts from the end */
            return config_error(where, f->key, "%lld: a negative padding index is not "
                             "implemented (use an id >= 0, or null)",
                             (long long)json_integer_value(v));
        return set_int((int *)at, v, where, f->key);
    case F_REAL:
        if (!json_is_number(v))
            return config_error(where, f->key, "must be a number, not %s", json_type_name(v));
        *(double *)at = json_number_value(v);
        return 0;
    case F_BOOL:
        if (!json_is_boolean(v))
            return config_error(where, f->key, "must be true or false, not %s", json_type_name(v));
        *(int *)at = json_is_true(v);
        return 0;
    case F_DTYPE: return config_set_dtype(at, sizeof ((bert_config *)0)->torch_dtype, v, where);
    case F_STRING:
        if (!json_is_string(v))
            return config_error(where, f->key, "must be a string, not %s", json_type_name(v));
        if (strlen(json_string_value(v)) >= STRING_LEN)
            return config_error(where, f->key, "\"%.40s...\" is too long", json_string_value(v));
        snprintf(at, STRING_LEN, "%s", json_string_value(v));
        return 0;
    }
    return config_error(where, f->key, "internal error: unknown field type");
}

int bert_config_from_json(bert_config *c, json_t *obj, const char *where)
{
    if (!json_is_object(obj))
        return config_error(where, "", "a model config must be a JSON object, not %s",
                         obj ? json_type_name(obj) : "nothing");
    for (size_t i = 0; i < NFIELDS; i++) {
        json_t *v = json_object_get(obj, FIELDS[i].key);
        if (!v || FIELDS[i].type == F_DTYPE)
            continue; /* absent; torch_dtype below */
        int rc = set_field(c, &FIELDS[i], v, where);
        if (rc)
            return rc;
    }
    return config_read_dtype(c->torch_dtype, sizeof c->torch_dtype, obj, where);
}

/* config_set_fn for BertConfig's keys */
static int bert_set_key(void *c, const char *key, json_t *v, const char *where)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (strcmp(FIELDS[i].key, key) == 0)
            return v ? set_field(c, &FIELDS[i], v, where) : 0;
    return -1;
}

int bert_config_apply_overrides(bert_config *c, json_t *config, json_t *overrides,
                                const char *where)
{
    return config_apply_overrides(c, bert_set_key, config, overrides, where);
}

/* ---- sizes ---------------------------------------------------------------------------------- */

uint64_t bert_config_param_count(const bert_config *c)
{
    uint64_t C = (uint64_t)c->hidden_size, I = (uint64_t)c->intermediate_size;
    uint64_t rows = size_add(size_add((uint64_t)c->vocab_size,
                                      (uint64_t)c->max_position_embeddings),
                             (uint64_t)c->type_vocab_size);
    uint64_t embeddings = size_add(size_mul(rows, C), size_mul(2, C));
    uint64_t matrices = size_add(size_mul(4, size_mul(C, C)), size_mul(2, size_mul(C, I)));
    uint64_t per_layer = size_add(matrices, size_add(size_mul(9, C), I));
    uint64_t head = size_add(size_add(size_mul(C, C), size_mul(3, C)), (uint64_t)c->vocab_size);
    return size_add(size_add(embeddings, size_mul((uint64_t)c->num_hidden_layers, per_layer)),
                    head);
}

/* one tensor's element count against the limit, refused by the key that makes it large */
static int check_tensor(const char *where, const char *key, int v, uint64_t n, const char *what)
{
    if (n <= BERT_MAX_ELEMENTS)
        return 0;
    return config_error(where, key, "%d is too large: %s would have %llu elements, over the limit "
                     "of %llu", v, what, (unsigned long long)n,
                     (unsigned long long)BERT_MAX_ELEMENTS);
}

/* the tensors and the parameter total within BERT_MAX_ELEMENTS, the sizes already > 0 */
static int check_products(const bert_config *c, const char *where)
{
    uint64_t C = (uint64_t)c->hidden_size;
    int rc = check_tensor(where, "hidden_size", c->hidden_size, size_mul(C, C),
                          "a hidden_size x hidden_size weight");
    if (!rc)
        rc = check_tensor(where, "intermediate_size", c->intermediate_size,
                          size_mul((uint64_t)c->intermediate_size, C),
                          "intermediate.dense.weight (intermediate_size x hidden_size)");
    if (!rc)
        rc = check_tensor(where, "vocab_size", c->vocab_size,
                          size_mul((uint64_t)c->vocab_size, C),
                          "word_embeddings.weight (vocab_size x hidden_size)");
    if (!rc)
        rc = check_tensor(where, "max_position_embeddings", c->max_position_embeddings,
                          size_mul((uint64_t)c->max_position_embeddings, C),
                          "position_embeddings.weight (max_position_embeddings x hidden_size)");
    if (!rc)
        rc = check_tensor(where, "type_vocab_size", c->type_vocab_size,
                          size_mul((uint64_t)c->type_vocab_size, C),
                          "token_type_embeddings.weight (type_vocab_size x hidden_size)");
    if (!rc)
        rc = check_tensor(where, "num_hidden_layers", c->num_hidden_layers,
                          bert_config_param_count(c), "the parameters in all");
    return rc;
}

static int check_sizes(const bert_config *c, const char *where)
{
    const struct {
        const char *key;
        int v;
    } sizes[] = {{"vocab_size", c->vocab_size},
                 {"hidden_size", c->hidden_size},
                 {"num_hidden_layers", c->num_hidden_layers},
                 {"num_attention_heads", c->num_attention_heads},
                 {"intermediate_size", c->intermediate_size},
                 {"max_position_embeddings", c->max_position_embeddings},
                 {"type_vocab_size", c->type_vocab_size}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].v <= 0)
            return config_error(where, sizes[i].key, "must be > 0, got %d", sizes[i].v);
    if (c->hidden_size % c->num_attention_heads != 0)
        return config_error(where, "hidden_size", "%d is not divisible by num_attention_heads (%d)",
                         c->hidden_size, c->num_attention_heads);
    if (c->pad_token_id < -1 || c->pad_token_id >= c->vocab_size)
        return config_error(where, "pad_token_id", "%d is outside the vocabulary (vocab_size %d)",
                         c->pad_token_id, c->vocab_size);
    return check_products(c, where);
}

/* what BertForMaskedLM does in the harness: one activation, absolute positions, a tied decoder,
 * a bidirectional encoder without cross-attention */
static int check_architecture(const bert_config *c, const char *where)
{
    if (strcmp(c->hidden_act, "gelu") != 0)
        return config_error(where, "hidden_act", "\"%s\" is not implemented: use gelu (exact erf)",
                         c->hidden_act);
    if (strcmp(c->position_embedding_type, "absolute") != 0)
        return config_error(where, "position_embedding_type",
                         "\"%s\" is not implemented: use absolute", c->position_embedding_type);
    if (!c->tie_word_embeddings)
        return config_error(where, "tie_word_embeddings",
                         "false is not implemented: the MLM decoder must be tied to the word "
                         "embeddings");
    if (c->is_decoder)
        return config_error(where, "is_decoder", "true is not implemented: BertForMaskedLM is a "
                         "bidirectional encoder");
    if (c->add_cross_attention)
        return config_error(where, "add_cross_attention", "true is not implemented");
    return 0;
}

/* range [0, 1) for both dropouts (bert.c applies them) */
static int check_dropouts(const bert_config *c, const char *where)
{
    const struct {
        const char *key;
        double p;
    } d[] = {{"hidden_dropout_prob", c->hidden_dropout_prob},
             {"attention_probs_dropout_prob", c->attention_probs_dropout_prob}};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (!(d[i].p >= 0 && d[i].p < 1))
            return config_error(where, d[i].key, "must be in [0, 1), got %g", d[i].p);
    return 0;
}

int bert_config_validate(const bert_config *c, const char *where)
{
    int rc = check_sizes(c, where);
    if (!rc)
        rc = check_architecture(c, where);
    if (rc)
        return rc;
    if (!(c->layer_norm_eps > 0) || !isfinite(c->layer_norm_eps))
        return config_error(where, "layer_norm_eps", "must be > 0, got %g", c->layer_norm_eps);
    /* at most 1e30: the normal draws (a few sigma) times it stay finite in fp32 */
    if (!(c->initializer_range >= 0 && c->initializer_range <= 1e30))
        return config_error(where, "initializer_range", "must be in [0, 1e30], got %g",
                         c->initializer_range);
    return check_dropouts(c, where);
}
