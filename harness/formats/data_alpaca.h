/* harness/formats/data_alpaca.h: instruction data as Stanford Alpaca's SFT script (train.py) builds it:
 * records of instruction/input/output, the prompt template, prompt tokens labelled -100, EOS appended,
 * truncation to model_max_length, right padding with the pad id and attention mask 0. */
#ifndef DATA_ALPACA_H
#define DATA_ALPACA_H

#include <stddef.h>
#include <stdint.h>

struct tokenizer;

/* one record of the data file */
typedef struct {
    char *instruction, *input, *output; /* input "" when absent or null */
} alpaca_record;

typedef struct {
    alpaca_record *r;
    size_t n;
} alpaca_records;

/* Reads a JSON array of records (the file's first non-blank character is '[') or JSON lines (one
 * object per non-blank line). Each record is an object with string "instruction" and "output" and
 * an optional string (or null) "input"; other keys are ignored. Returns 0, or 2 after a message
 * naming the file and the record (JSON array: "record 3") or line (JSON lines: "FILE:12"). */
int alpaca_read(const char *path, alpaca_records *out);
void alpaca_records_free(alpaca_records *rs);

/* the prompt of a record: PROMPT_DICT's prompt_input when input is not empty, else
 * prompt_no_input, with the record's fields put in; a heap string, NULL when out of memory */
char *alpaca_prompt(const alpaca_record *r);

typedef struct {
    int seq_len;          /* every row is padded to it */
    int model_max_length; /* tokenizer truncation (max_length), 1 .. seq_len */
    int32_t eos_id;       /* appended after the output (train.py: output + tokenizer.eos_token) */
    int32_t pad_id;       /* padding; also what input_ids_lens and the attention mask compare to */
} alpaca_options;

typedef struct {
    int32_t *ids;       /* n_rows * seq_len: the example's ids, then pad_id */
    int32_t *labels;    /* the same, as train.py's labels: -100 over the prompt and the padding */
    int32_t *attention; /* ids != pad_id (DataCollatorForSupervisedDataset) */
    size_t n_rows;
    int seq_len;
    int vocab_size;     /* the tokenizer's */
} alpaca_dataset;

/* Tokenizes every record of path as train.py's preprocess does: example = prompt + output, encoded
 * as Tokenizer.encode gives it (template tokens such as BOS included), EOS inserted where the text
 * ends (before any template tokens after it: the ids of prompt + output + eos_token text, as the
 * added token splits out), truncated to model_max_length keeping the template's tokens; the prompt
 * encoded alone the same way gives source_len = its ids that are not pad_id, and labels[t] = -100
 * for t < source_len. Returns 0, or 2 after a message. */
int alpaca_dataset_load(const char *path, struct tokenizer *t, const alpaca_options *o,
                        alpaca_dataset *ds);
void alpaca_dataset_free(alpaca_dataset *ds);

/* The batch of loader step `step` (from 0) for rank `rank` of `world`: row i is dataset row
 * sampler_index(step*batch + i, rank, world, n_rows) (data.h: DistributedSampler's order and
 * padding without shuffling, as dataset_batch and mlm_batch take them). input_ids and
 * attention_mask as the row; targets[t] = labels[t + 1] (the shift Hugging Face's causal-LM loss
 * does inside the model), -100 at the last position. */
void alpaca_batch(const alpaca_dataset *ds, int step, int batch, int rank, int world,
                  int32_t *input_ids, int32_t *attention_mask, int32_t *targets);

/* The id of a special token for the data: text NULL or "" takes the tokenizer's token of that role
 * ("eos", "pad", "unk": tokenizer_special_id); "eos" or "unk" as the pad's text takes that role's
 * id; any other text must encode to exactly one id (besides the template's). Returns 0, or 2 after
 * a message naming `where` (the scenario field) and why. */
int data_special_id(struct tokenizer *t, const char *role, const char *text, const char *where,
                      int32_t *id);

#endif
