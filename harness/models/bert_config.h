/* harness/models/bert_config.h: a BERT model configuration with Hugging Face BertConfig's keys and
 * defaults, read from a JSON object (config.json or a scenario's inline config), and its checks. */
#ifndef BERT_CONFIG_H
#define BERT_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "model_config.h" /* GPT2_MAX_ELEMENTS, size_mul, size_add: the same limits */

/* The most elements one tensor, and all parameters together, may have (the device interface
 * counts elements in int): the same limit as GPT-2's. */
#define BERT_MAX_ELEMENTS GPT2_MAX_ELEMENTS

typedef struct {
    int vocab_size;                      /* 30522 */
    int hidden_size;                     /* 768 */
    int num_hidden_layers;               /* 12 */
    int num_attention_heads;             /* 12 */
    int intermediate_size;               /* 3072 */
    char hidden_act[32];                 /* "gelu" (exact erf form; the only one implemented) */
    double hidden_dropout_prob;          /* 0.1 */
    double attention_probs_dropout_prob; /* 0.1 */
    int max_position_embeddings;         /* 512 */
    int type_vocab_size;                 /* 2 */
    double initializer_range;            /* 0.02 */
    double layer_norm_eps;               /* 1e-12 */
    int pad_token_id;                    /* 0; -1 when the config says null (no padding row) */
    char position_embedding_type[32];    /* "absolute" (transformers 4.x key; 5.x has only that) */
    int tie_word_embeddings;             /* 1 (the MLM decoder is the word embeddings) */
    int is_decoder;                      /* 0 (BertForMaskedLM is bidirectional) */
    int add_cross_attention;             /* 0 */
    char torch_dtype[16];                /* "float32" unless the config says otherwise */
} bert_config;

/* BertConfig's defaults (bert-base-uncased's sizes) */
void bert_config_defaults(bert_config *c);

/* Reads BertConfig keys from obj into c (keys absent keep their current value; keys the harness
 * does not model are ignored, as transformers keeps them as attributes). `where` names the
 * source in messages ("FILE" or "FILE: dotted.path"), as gpt2_config_from_json does. A key of
 * the wrong JSON type is an error naming the key. Returns 0, or 2 after printing a message. */
int bert_config_from_json(bert_config *c, json_t *obj, const char *where);

/* config_apply_overrides (model_config.h: the override_config.json rules) with BertConfig's
 * keys. Returns 0, or 2 after a message. */
int bert_config_apply_overrides(bert_config *c, json_t *config, json_t *overrides,
                                const char *where);

/* the number of parameter elements of c in 64 bits (UINT64_MAX when even that overflows):
 * embeddings (V + P + types) C + 2C; per layer 4 C^2 + 2 C I + 9 C + I; MLM head C^2 + 3C + V */
uint64_t bert_config_param_count(const bert_config *c);

/* Checks what the harness can train: positive sizes, hidden_size % num_attention_heads == 0,
 * every parameter tensor and the total within BERT_MAX_ELEMENTS (refused by the key that makes
 * them too large), hidden_act "gelu", position_embedding_type "absolute", tie_word_embeddings
 * true, is_decoder and add_cross_attention false, pad_token_id within the vocabulary (or null),
 * layer_norm_eps > 0, both dropouts in [0, 1). Returns 0, or 2 after printing a message naming
 * `where` and the key. */
int bert_config_validate(const bert_config *c, const char *where);

#endif
