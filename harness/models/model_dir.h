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

/* 1 when something is at DIR/override_config.json (its reader refuses what is not a regular
 * file); its path into out either way */
int model_dir_overrides(const char *dir, char *out, size_t len);

/* The raw config.json object a scenario's model came from (new reference), or NULL when the
 * config was inline (config_path empty) or cannot be read. */
json_t *model_dir_raw_config(const char *config_path);

#endif
