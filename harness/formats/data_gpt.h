/* harness/formats/data_gpt.h: pre-training samples from Megatron binarized datasets as Megatron's
 * GPTDataset cuts them (no shuffling), and several datasets blended by weights (BlendableDataset). */
#ifndef DATA_GPT_H
#define DATA_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "data_mmidx.h"

typedef struct {
    int n;              /* datasets */
    mmidx *sets;        /* [n], opened */
    double *weights;    /* [n], normalised to sum 1 */
    int seq_len;
    int32_t max_id;     /* the largest id in any dataset */
    /* the blending rule's state: how many samples each dataset gave to global samples < next */
    int64_t *chosen;
    uint64_t next;
} gpt_data;

/* Opens n datasets (prefixes without .bin/.idx) with weights > 0 (normalised here) for samples
 * of seq_len + 1 tokens. Each must hold at least seq_len + 1 tokens. Returns 0, or 2 after a
 * message naming the file. */
int gpt_data_open(gpt_data *g, const char *const *prefixes, const double *weights, int n,
                  int seq_len);
void gpt_data_close(gpt_data *g);

/* Megatron's build_blending_indices for global sample i: the dataset d whose
 * weights[d] * max(i, 1) - chosen[d] is largest (ties to the lower index), and the sample of d it
 * takes (chosen[d], then counted). Sequential calls cost O(n) each; an earlier i restarts. */
void gpt_blend_pick(gpt_data *g, uint64_t i, int *dataset, uint64_t *sample);

/* sample j of dataset d: tokens j*seq_len .. j*seq_len + seq_len of the documents concatenated
 * in order (wrapping after the last: the next epoch, unshuffled), into out[seq_len + 1] */
void gpt_sample(const gpt_data *g, int d, uint64_t j, int32_t *out);

/* The batch of optimizer step `step` (from 0) for rank `rank` of `world`: row i is global sample
 * step*batch*world + rank*batch + i (Megatron's pretraining sampler), blended. inputs = the
 * sample's first seq_len tokens, targets = its last seq_len (labels already shifted: every
 * position has a next token). tmp holds seq_len + 1 ids. */
void gpt_data_batch(gpt_data *g, int step, int batch, int rank, int world, int32_t *inputs,
                    int32_t *targets, int32_t *tmp);

#endif
