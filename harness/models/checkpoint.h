/* harness/models/checkpoint.h: Hugging Face model directories for any family's weights: writing
 * what transformers' save_pretrained writes, reading what from_pretrained reads. */
#ifndef CHECKPOINT_H
#define CHECKPOINT_H

#include <jansson.h>
#include <stdint.h>

#include "model.h"

/* Writes DIR/config.json and DIR/model.safetensors (creating DIR): tensors named as the family
 * says (model_hf_name: GPT-2 "transformer.<name>") in F32, the family's tied head left out
 * (GPT-2 lm_head.weight, tied to transformer.wte.weight, as save_pretrained leaves it out), metadata {"format": "pt"}. config.json starts from src_config
 * (the directory's raw config.json, or NULL) with the keys the harness models set from c.
 * Each file is written afresh and renamed into place (checkpoint_write_file, st_write), never
 * through a link planted in DIR. Returns 0, or 1 after printing a message. */
int checkpoint_save(model *m, const model_config_u *c, json_t *src_config, const char *dir);

/* Checks, before any work, that checkpoint_save could create or fill DIR: DIR is not empty, and
 * DIR (or, when it does not exist yet, its nearest existing ancestor) is a writable directory;
 * a symbolic link whose target is missing on the way is refused (no directory can be made
 * there). Creates nothing. Returns 0, or 2 after printing a message naming DIR. */
int checkpoint_check_target(const char *dir);

/* The config.json object checkpoint_save writes (new reference). */
json_t *checkpoint_config_json(const model_family *f, const model_config_u *c, json_t *src_config);

/* Loads DIR's weights (model.safetensors or a sharded index) into m. Names may carry the
 * family's prefix ("transformer.") or not; its tied head (lm_head.weight) is accepted and
 * ignored (tied to parameter 0, wte, as from_pretrained ties it; a warning when it differs);
 * the family's ignored buffers (GPT-2 h.N.attn.bias / h.N.attn.masked_bias of old checkpoints)
 * are skipped. A missing, unexpected or misshapen tensor, one of a dtype other than
 * F32/F16/BF16/F64, or one holding a NaN or an infinity (after the conversion to fp32), is an
 * error naming it. Returns 0, or 2 after printing a message. */
int checkpoint_load(model *m, const char *dir);

/* checkpoint_load, except that when DIR lacks only head tensors (those outside the base model,
 * named under the family's `unprefixed`: BertForMaskedLM's cls.* in a BertModel checkpoint)
 * they take the family's seeded init from `seed` (the values model_init_weights gives them),
 * each with a warning naming it; a missing tensor of the base model is still an error. What
 * a scenario's "weights": "pretrained" loads. Returns 0, 1 or 2. */
int checkpoint_load_pretrained(model *m, const char *dir, uint64_t seed);

/* 1 when DIR holds model.safetensors or model.safetensors.index.json (anything by that name, a
 * symbolic link whose target is missing included: the reader then refuses it by name) */
int checkpoint_exists(const char *dir);

/* Writes data[len] as the file path the way every file of a saved model directory is written:
 * into path.tmp made afresh (whatever is there, a symbolic link planted included, is removed,
 * never written through), then renamed over path (a link at path is replaced, its target left
 * as it was). `what` names the file in messages ("the config"). 0, or 1 after a message. */
int checkpoint_write_file(const char *path, const void *data, size_t len, const char *what);

#endif
