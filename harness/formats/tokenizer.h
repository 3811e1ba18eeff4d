/* harness/formats/tokenizer.h: the tokenizers a scenario can name: "byte" (one id per byte) and
 * Hugging Face byte-level BPE (GPT-2's) from tokenizer.json or vocab.json + merges.txt. */
#ifndef TOKENIZER_H
#define TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer;

/* kind "byte" (path ignored) or "bpe": path is a tokenizer.json file, a vocab.json file (its
 * merges.txt beside it), or a directory holding tokenizer.json (preferred) or vocab.json and
 * merges.txt. Returns 0, or 2 after printing a message naming the file and what is wrong. */
int tokenizer_open(const char *kind, const char *path, tokenizer **out);
void tokenizer_free(tokenizer *t);

/* one more than the largest id the tokenizer can produce */
int tokenizer_vocab_size(const tokenizer *t);
/* "byte", or "bpe:<file it was read from>" */
const char *tokenizer_name(const tokenizer *t);

/* a growing array of ids */
typedef struct {
    int32_t *ids;
    size_t n, cap;
} id_list;

/* Appends the ids of text[len] to out, as the Hugging Face tokenizers library's
 * Tokenizer.encode(text).ids does (added tokens split out first, then the pre-tokenizer, then
 * BPE merges). `where` names the text in messages. Returns 0, or 2 after printing a message
 * (text that is not valid UTF-8, with the byte offset; out of memory). */
int tokenizer_encode(tokenizer *t, const char *text, size_t len, const char *where, id_list *out);
void id_list_free(id_list *l);

/* the bytes token `id` stands for into out (at most cap); returns their count, or -1 for an id
 * outside the vocabulary */
int tokenizer_token_bytes(const tokenizer *t, int32_t id, unsigned char *out, size_t cap);

/* Index of the first byte of text[len] that does not start or continue a valid UTF-8 sequence
 * (overlong forms, surrogates and code points above U+10FFFF are invalid), or len. */
size_t utf8_invalid_at(const unsigned char *text, size_t len);

#endif
