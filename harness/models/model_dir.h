/* harness/models/model_dir.h: local Hugging Face model directories (config.json, override_config.json,
 * safetensors weights): the config keys the harness cannot honour, and finding the files. */
#ifndef MODEL_DIR_H
#define MODEL_DIR_H

#include <jansson.h>

#include "model_config.h"

#define OVERRIDE_FILE "override_config.json"

/* Refuses GPT2Config keys whose non-default values change what the model computes and that
 * the harness does not implement: n_inner other than null or 4*n_embd, scale_attn_weights
 * false, scale_attn_by_inverse_layer_idx, reorder_and_upcast_attn, add_cross_attention true,
 * tie_word_embeddings false. `where` names the file. Returns 0, or 2 after printing a message. */
int model_dir_check_config(json_t *config, const gpt2_config *c, const char *where);

/* 1 when something is at DIR/override_config.json, a symbolic link whose target is missing
 * included (its reader refuses what is not a regular file: never skipped as absent); its path
 * into out either way */
int model_dir_overrides(const char *dir, char *out, size_t len);

/* Copies the files of a tokenizer (kind and path as the scenario's data.tokenizer and
 * data.tokenizer_path) into DIR under the names from_pretrained looks for, as the harness reads
 * them (formats/tokenizer.h), so that DIR trains as a model directory: a folder's tokenizer.json,
 * vocab.json, merges.txt (bpe) or vocab.txt (wordpiece) and tokenizer_config.json, those present;
 * a bpe file whose name ends in vocab.json as vocab.json with the merges.txt beside it, a
 * wordpiece file whose name ends in .txt as vocab.txt, any other file as tokenizer.json; and the
 * tokenizer_config.json beside a file. "byte" copies nothing. Each file is written with
 * checkpoint_write_file (never through a link planted in DIR). What `harness init` and
 * `run --save` write beside the weights. 0; 2 when a file cannot be read, 1 when one cannot be
 * written, after a message naming it. */
int model_dir_copy_tokenizer(const char *kind, const char *path, const char *dir);

/* The raw config.json object a scenario's model came from (new reference), or NULL when the
 * config was inline (config_path empty) or cannot be read. */
json_t *model_dir_raw_config(const char *config_path);

#endif
