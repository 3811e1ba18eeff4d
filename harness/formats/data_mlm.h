/* harness/formats/data_mlm.h: masked-LM training data: lines tokenized with the [CLS] ... [SEP] template,
 * as padded line-by-line examples or grouped blocks, masked as DataCollatorForLanguageModeling. */
#ifndef DATA_MLM_H
#define DATA_MLM_H

#include <stddef.h>
#include <stdint.h>

struct tokenizer;

typedef struct {
    int seq_len;            /* the length of every row (transformers' max_length / block_size) */
    int line_by_line;       /* 1: one row per non-blank line, truncated and padded; 0: grouped */
    double mlm_probability; /* the share of non-special tokens chosen for prediction, (0, 1] */
} mlm_options;

typedef struct {
    int32_t *ids;           /* n_rows * seq_len, before masking */
    uint8_t *special;       /* 1: a template token ([CLS], [SEP]) or padding: never chosen */
    uint8_t *attention;     /* 1: a token, 0: padding */
    size_t n_rows;
    int seq_len;
    int vocab_size;         /* random replacements are drawn from [0, vocab_size) */
    int32_t mask_id;
    double mlm_probability;
} mlm_dataset;

/* Reads path (lines split at "\n", a "\r" before it dropped) and tokenizes each line with the
 * template. line_by_line: lines that are empty or only ASCII whitespace are skipped (as run_mlm.py
 * does); each row is the line's ids cut to seq_len (the last kept id replaced by [SEP], as
 * truncation keeps the template) and padded with [PAD] (attention 0). Grouped: every line's ids
 * concatenated, cut into rows of seq_len, the remainder dropped (group_texts). Returns 0, or 2
 * after printing a message naming the file (unreadable, not UTF-8, no row, a tokenizer without
 * [MASK] or, line by line, [PAD]). */
int mlm_dataset_load(const char *path, struct tokenizer *t, const mlm_options *o, mlm_dataset *ds);
void mlm_dataset_free(mlm_dataset *ds);

/* Where a rank's batches sit in the run's global batch: rank `rank` of `world`, each optimizer
 * step made of `accum` micro-batches (train.gradient_accumulation_steps) */
typedef struct {
    int rank, world, accum;
} mlm_place;

/* The batch of loader step `step` (from 0: optimizer step x accum + micro-batch) for p.rank of
 * p.world: row i is dataset row sampler_index(k, rank, world, n_rows) with k = step*batch + i
 * (data.h: the order of dataset_batch), the sample at g = rank + k*world of the global sample
 * stream. It is masked by mlm_mask_row with global row j = g mod G and step g div G, where
 * G = batch * world * accum is the global batch of an optimizer step: j is the sample's row in
 * that global batch and g div G the optimizer step (from 0). So a sample gets the same mask at
 * every world size and accumulation of the same global batch (one rank with batch G, or W
 * ranks with accumulation A and batch G / (W A)), and at accumulation 1 the counters are those
 * of earlier versions (j = rank + i*world, the loader step). Every array holds batch * seq_len;
 * token_type_ids are 0. */
void mlm_batch(const mlm_dataset *ds, uint64_t seed, int step, int batch, mlm_place p,
               int32_t *input_ids, int32_t *token_type_ids, int32_t *attention_mask,
               int32_t *labels);

/* The masking of one row (DataCollatorForLanguageModeling.torch_mask_tokens): position t draws
 * Philox4x32-10 (devices/philox.h) at counter {t, j, MLM_PHILOX_SITE, step}, key seed, giving
 * words w0..w3 (mlm_batch's j and step: the row in the optimizer step's global batch and that
 * step from 0). It is chosen when it is not special and w0 < ceil(p * 2^32); a chosen position
 * keeps its id as label (others -100) and becomes [MASK] when w1 < ceil(0.8 * 2^32), else a
 * random id (w3 * vocab_size) >> 32 when w2 < 2^31, else stays. ids are changed in place. */
#define MLM_PHILOX_SITE 0x4D4C4D00u /* "MLM\0": far above any layer index dropout uses */
void mlm_mask_row(const mlm_dataset *ds, uint64_t seed, int step, uint32_t j, int32_t *ids,
                  const uint8_t *special, int32_t *labels);

#endif
