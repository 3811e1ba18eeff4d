/* harness/formats/tokenizer_wordpiece.h: BERT's WordPiece tokenizer (the tokenizers library's
 * BertNormalizer + BertPreTokenizer + WordPiece + TemplateProcessing), its loader and encoder. */
#ifndef TOKENIZER_WORDPIECE_H
#define TOKENIZER_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer_bpe_internal.h"

#define WP_MAX_TEMPLATE 8

typedef struct {
    bpe v;                 /* vocab (token -> id), id -> token, added tokens and their trie;
                              no merges, no regex */
    int clean_text, chinese_chars, strip_accents, lowercase; /* BertNormalizer's switches */
    char prefix[32];       /* continuing_subword_prefix, "##" */
    size_t prefix_len;
    size_t max_chars;      /* max_input_chars_per_word, 100 */
    int32_t unk_id, cls_id, sep_id, pad_id, mask_id; /* -1 when absent */
    int32_t before[WP_MAX_TEMPLATE], after[WP_MAX_TEMPLATE]; /* the template's ids around $A */
    int n_before, n_after;
} wordpiece;

/* a tokenizer.json whose model is WordPiece, or a vocab.txt (tokenizer_config.json beside it
 * read for do_lower_case, strip_accents, tokenize_chinese_chars and the special tokens' names).
 * 0, or 2 after printing a message naming the file (and line, field) */
int wp_load_json(wordpiece *w, const char *path);
int wp_load_vocab_txt(wordpiece *w, const char *path);

/* the model type of the tokenizer.json at path ("BPE", "WordPiece", ...) into type; 0, or 2
 * after printing a message */
int tokenizer_json_model_type(const char *path, char *type, size_t cap);

/* appends the ids of valid UTF-8 text as Tokenizer.encode(text).ids does: 0, or -1 out of memory */
int wp_encode(const wordpiece *w, const char *text, size_t len, int add_template, id_list *out);
void wp_free(wordpiece *w);

#endif
