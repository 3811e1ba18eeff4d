/* harness/formats/data_preprocess.h: `harness preprocess`'s work: a text or JSON-lines file tokenized
 * into a Megatron binarized dataset (PREFIX_KEY_document.bin/.idx), as Megatron's preprocess_data.py
 * writes it. */
#ifndef DATA_PREPROCESS_H
#define DATA_PREPROCESS_H

struct tokenizer;

typedef struct {
    const char *input;         /* .txt: one document per line; anything else: JSON lines */
    const char *output_prefix; /* writes OUTPUT_PREFIX_<json_key>_document.{bin,idx} */
    const char *json_key;      /* the field of each JSON line holding the text ("text") */
    int append_eod;            /* append eod_id to every document */
    int eod_id;                /* with append_eod: the id appended */
} preprocess_options;

/* Reads and tokenizes the whole input (each document as Tokenizer.encode(text).ids; documents
 * with no ids skipped, as Megatron skips them), then writes the pair with Megatron's dtype for
 * the tokenizer's vocabulary (uint16 below 65500 ids, else int32). Nothing is written when the
 * input is malformed. *docs and *tokens (may be NULL) say what was written. Returns 0, 1 (a write
 * failed) or 2 (bad input; message naming file and line). */
int data_preprocess(const preprocess_options *o, struct tokenizer *t, long long *docs,
                    long long *tokens);

#endif
