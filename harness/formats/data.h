/* harness/formats/data.h: training data: a text file tokenized, concatenated and cut into blocks of
 * seq_len tokens (transformers' group_texts), read in a fixed order that wraps. */
#ifndef DATA_H
#define DATA_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int32_t *tokens;
    size_t n_tokens;
    int seq_len;
    size_t n_blocks;   /* n_tokens / seq_len, the remainder dropped */
    int vocab_size;    /* ids are in [0, vocab_size) */
} dataset;

/* Reads path and tokenizes it with the named tokenizer ("byte": one id per byte, 256 ids).
 * Returns 0, or 2 after printing a message naming the file (missing, empty, too short for one
 * block of seq_len tokens, unknown tokenizer). */
int dataset_load(const char *path, const char *tokenizer, int seq_len, dataset *ds);

struct tokenizer;
/* The same with an open tokenizer (harness/formats/tokenizer.h: byte or BPE): the whole file is one
 * text, encoded as the tokenizers library's Tokenizer.encode(text).ids does; vocab_size is the
 * tokenizer's. */
int dataset_load_tok(const char *path, struct tokenizer *t, int seq_len, dataset *ds);
void dataset_free(dataset *ds);

/* The k-th sample (from 0, epoch after epoch) that PyTorch's DistributedSampler without
 * shuffling (drop_last False) gives rank `rank` of `world` over n samples: each epoch pads the
 * n indices to a multiple of world by repeating them from the start, and the rank takes every
 * world-th from its own: index (rank + (k mod ceil(n/world)) * world) mod n. */
size_t sampler_index(size_t k, int rank, int world, size_t n);

/* The batch of loader step `step` (from 0) for rank `rank` of `world`: row i is the rank's
 * sample k = step*batch + i in sampler_index's order. inputs[b*T+t] is the
 * block; targets[b*T+t] is the next token (labels = inputs, shifted as GPT2LMHeadModel shifts
 * them), and -100 at the last position, which has no next token within the block. */
void dataset_batch(const dataset *ds, int step, int batch, int rank, int world, int32_t *inputs,
                   int32_t *targets);

#endif
