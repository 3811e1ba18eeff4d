/* harness/models/checkpoint.h: Hugging Face model directories for GPT-2 weights: writing what
 * transformers' save_pretrained writes for GPT2LMHeadModel, reading what from_pretrained reads. */
#ifndef CHECKPOINT_H
#define CHECKPOINT_H

#include <jansson.h>

#include "gpt2.h"
#include "model_config.h"

/* Writes DIR/config.json and DIR/model.safetensors (creating DIR): tensors named
 * "transformer.<name>" in F32, lm_head.weight left out (tied to transformer.wte.weight, as
 * save_pretrained leaves it out), metadata {"format": "pt"}. config.json starts from src_config
 * (the directory's raw config.json, or NULL) with the keys the harness models set from c.
 * Returns 0, or 1 after printing a message. */
int checkpoint_save(gpt2 *m, const gpt2_config *c, json_t *src_config, const char *dir);

/* Checks, before any work, that checkpoint_save could create or fill DIR: DIR is not empty, and
 * DIR (or, when it does not exist yet, its nearest existing ancestor) is a writable directory.
 * Creates nothing. Returns 0, or 2 after printing a message naming DIR. */
int checkpoint_check_target(const char *dir);

/* The config.json object checkpoint_save writes (new reference). */
json_t *checkpoint_config_json(const gpt2_config *c, json_t *src_config);

/* Loads DIR's weights (model.safetensors or a sharded index) into m. Names may carry the
 * "transformer." prefix or not; lm_head.weight is accepted and ignored (tied to wte, as
 * from_pretrained ties it; a warning when it differs); the attention-mask buffers
 * h.N.attn.bias / h.N.attn.masked_bias of old checkpoints are ignored. A missing, unexpected or
 * misshapen tensor, or one of a dtype other than F32/F16/BF16/F64, is an error naming it.
 * Returns 0, or 2 after printing a message. */
int checkpoint_load(gpt2 *m, const char *dir);

/* 1 when DIR holds model.safetensors or model.safetensors.index.json */
int checkpoint_exists(const char *dir);

#endif
