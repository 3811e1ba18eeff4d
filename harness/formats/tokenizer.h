/* harness/formats/tokenizer.h: the tokenizers a scenario can name: "byte" (one id per byte), Hugging Face
 * BPE (GPT-2's, Qwen2's byte-level; Llama's/Mistral's SentencePiece-style) and WordPiece (BERT's) from
 * tokenizer.json, vocab.json or vocab.txt. */
#ifndef TOKENIZER_H
#define TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer;

/* kind "byte" (path ignored) or "bpe": path is a tokenizer.json file, a vocab.json file (its
 * merges.txt beside it), or a directory holding tokenizer.json (preferred) or vocab.json and
 * merges.txt; or "wordpiece": a tokenizer.json, a vocab.txt (tokenizer_config.json beside it
 * read when present) or a directory holding either (tokenizer.json preferred). A tokenizer.json
 * is read by its model type (BPE or WordPiece) whichever of the two kinds is named; a BPE
 * tokenizer.json's tokenizer_config.json beside it, when there is one, gives the special tokens
 * by role (tokenizer_special_id). The components a BPE tokenizer.json may use are in
 * docs/tokenizers.md; any other is refused naming its JSON path.
 * Returns 0, or 2 after printing a message naming the file and what is wrong. */
int tokenizer_open(const char *kind, const char *path, tokenizer **out);
void tokenizer_free(tokenizer *t);

/* one more than the largest id the tokenizer can produce */
int tokenizer_vocab_size(const tokenizer *t);
/* "byte", "bpe:<file it was read from>" or "wordpiece:<file>" */
const char *tokenizer_name(const tokenizer *t);

/* the id of a special token by role, -1 when it has none (and for the byte tokenizer):
 * WordPiece: "cls", "sep", "pad", "mask", "unk";
 * BPE: "bos", "eos", "pad", "unk", from bos_token, eos_token, pad_token, unk_token of the
 * tokenizer_config.json beside the tokenizer.json (as transformers' AutoTokenizer reads them;
 * without that file every role is -1). */
int32_t tokenizer_special_id(const tokenizer *t, const char *role);
/* a BPE tokenizer's tokenizer_config.json flag "add_bos_token" or "add_eos_token": 1 or 0, -1
 * when the file does not say (or there is none; or another tokenizer). Reported only: the ids
 * tokenizer_encode gives follow tokenizer.json's post-processor, as the tokenizers library's. */
int tokenizer_config_flag(const tokenizer *t, const char *key);
/* how many ids the post-processor's template puts before and after the text's ids (WordPiece:
 * [CLS] and [SEP], 1 and 1; BPE: TemplateProcessing's special ids around $A, e.g. Llama's
 * <s>: 1 and 0; none: 0 and 0; byte: 0 and 0) */
void tokenizer_template_size(const tokenizer *t, int *before, int *after);

/* a growing array of ids */
typedef struct {
    int32_t *ids;
    size_t n, cap;
} id_list;

/* Appends the ids of text[len] to out, as the Hugging Face tokenizers library's
 * Tokenizer.encode(text).ids does (add_special_tokens true: added tokens split out first; BPE:
 * the normalizer, the pre-tokenizer, BPE merges, then the post-processor's special tokens;
 * WordPiece: normalizer, pre-tokenizer, WordPiece, then the [CLS] ... [SEP] template).
 * `where` names the text in messages. Returns 0, or 2 after printing a message (text that is
 * not valid UTF-8, with the byte offset; a split regex over its backtracking limit), or 1 out
 * of memory. */
int tokenizer_encode(tokenizer *t, const char *text, size_t len, const char *where, id_list *out);
/* The same, saying whether the post-processor's special tokens are added:
 * Tokenizer.encode(text, add_special_tokens=add_special_tokens).ids (added tokens in the text
 * are split out either way). tokenizer_encode is this with add_special_tokens 1. */
int tokenizer_encode_special(tokenizer *t, const char *text, size_t len, int add_special_tokens,
                             const char *where, id_list *out);
void id_list_free(id_list *l);

/* the bytes token `id` stands for into out (at most cap); returns their count, or -1 for an id
 * outside the vocabulary. SentencePiece-style BPE: a <0xXX> token's byte, any other token's
 * text as it is (with its metaspace characters: no decoder is run). */
int tokenizer_token_bytes(const tokenizer *t, int32_t id, unsigned char *out, size_t cap);

/* Index of the first byte of text[len] that does not start or continue a valid UTF-8 sequence
 * (overlong forms, surrogates and code points above U+10FFFF are invalid), or len. */
size_t utf8_invalid_at(const unsigned char *text, size_t len);

#endif
