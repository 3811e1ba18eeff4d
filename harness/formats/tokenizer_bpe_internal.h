/* harness/formats/tokenizer_bpe_internal.h: internals of the BPE tokenizer shared by its loaders
 * (tokenizer_load*.c) and its encoder (tokenizer_bpe.c): hash maps, the model, added tokens, steps. */
#ifndef TOKENIZER_BPE_H
#define TOKENIZER_BPE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <oniguruma.h>

#include "tokenizer.h"
#include "tokenizer_steps.h"

/* string -> id, open addressing */
typedef struct {
    char **keys;
    size_t *lens;
    int32_t *vals;
    size_t cap, n;
} strmap;

/* (left id, right id) -> (rank, merged id), open addressing */
typedef struct {
    uint64_t *keys; /* left << 32 | right, plus 1 so that 0 marks an empty slot */
    uint32_t *ranks;
    int32_t *vals;
    size_t cap, n;
} pairmap;

typedef struct {
    char *content;         /* as matched: a normalized token's content is normalized */
    size_t len;
    int32_t id;
    int normalized;        /* matched in the normalized text, not the raw one */
} added_token;

/* the most ids a TemplateProcessing may put around the text */
#define BPE_MAX_TEMPLATE 16

typedef struct {
    strmap vocab;
    char **tok;            /* id -> token string (byte-level characters), NULL for gaps */
    size_t *tok_len;
    int n_tok;             /* largest id + 1 */
    int tok_cap;           /* room in tok and tok_len */
    pairmap merges;
    added_token *added;
    int n_added;
    strmap added_ids;      /* content -> id of the first added token with it (linear loading) */
    /* the added tokens as a byte trie (bpe_finish builds it): node 0 is the root, the root's
     * children in added_root[byte] (0: none), deeper ones in added_edges (node, byte) -> node;
     * added_end[node] is the added token ending at node (its index in added), or -1 */
    int32_t added_root[256];
    pairmap added_edges;
    int32_t *added_end;
    int32_t n_nodes;
    norm_step *norm;       /* the normalizer, flattened */
    int n_norm;
    pre_step *pre;         /* the pre-tokenizer, flattened */
    int n_pre;
    int byte_level;        /* a ByteLevel pre-tokenizer: the model sees GPT-2's byte characters */
    int byte_fallback;     /* unknown characters as their <0xXX> tokens (fallback_id) */
    int32_t fallback_id[256];
    int has_normalized_added; /* some added token is matched in the normalized text */
    int32_t tpl_before[BPE_MAX_TEMPLATE], tpl_after[BPE_MAX_TEMPLATE]; /* TemplateProcessing */
    int n_before, n_after;
    /* by role, from tokenizer_config.json beside tokenizer.json: -1 when none */
    int32_t bos_id, eos_id, pad_id, role_unk_id;
    int add_bos_token, add_eos_token; /* 1, 0, or -1 when the config does not say */
    int ignore_merges;
    int32_t unk_id;        /* -1 when none */
    int fuse_unk;
} bpe;

int strmap_put(strmap *m, const char *key, size_t len, int32_t val); /* 0, or -1 out of memory */
int32_t strmap_get(const strmap *m, const char *key, size_t len);   /* -1 when absent */
void strmap_free(strmap *m);
int pairmap_put(pairmap *m, int32_t a, int32_t b, uint32_t rank, int32_t val);
int pairmap_get(const pairmap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *val);
void pairmap_free(pairmap *m);

/* GPT-2's byte-to-unicode table: the UTF-8 of byte b's character into out[3]; returns length */
int byte_level_char(unsigned b, char out[3]);
/* the byte a byte-level character (decoded code point) stands for, or -1 */
int byte_level_byte(uint32_t cp);

/* GPT-2's pre-tokenizer pattern, as the tokenizers library's ByteLevel uses it */
extern const char *const GPT2_SPLIT_PATTERN;
/* compiles pattern with Oniguruma (UTF-8, its default syntax, as the tokenizers library does);
 * returns 0 or 2 with a message naming where */
int bpe_compile_regex(OnigRegex *re, const char *pattern, size_t len, const char *where);

/* after vocab, merges and added tokens are in: the added-token trie; 0 or 2 with a message
 * naming where */
int bpe_finish(bpe *b, const char *where);
/* Oniguruma's backtracking limits for the pre-tokenizer split (docs/limits.md): retries while
 * matching at one position (Oniguruma's default, which the tokenizers library runs with), and
 * retries in one search: this many per byte of the text it may search, at least the first */
#define BPE_RETRY_LIMIT_IN_MATCH 10000000UL
#define BPE_RETRY_LIMIT_PER_BYTE 1000UL

/* tokenizer_added.c: the trie of the added tokens (0, or -1 out of memory); the longest added
 * token starting at text[pos] (its index in added) or -1; freeing the trie */
int bpe_build_added(bpe *b);
int bpe_added_at(const bpe *b, const char *text, size_t len, size_t pos);
/* the same among the added tokens whose `normalized` is as given */
int bpe_added_at_class(const bpe *b, const char *text, size_t len, size_t pos, int normalized);
void bpe_free_added(bpe *b);

/* bpe_encode's results */
enum { BPE_OK = 0, BPE_NO_MEMORY = -1, BPE_REGEX_LIMIT = -2, BPE_REGEX_ERROR = -3 };
/* appends the ids of text to out (with the template's special tokens when add_special); on a
 * regex failure *fail_at is about the byte where the search that failed began (exact when no
 * normalizer changed the text before) */
int bpe_encode(const bpe *b, const char *text, size_t len, int add_special, id_list *out,
               size_t *fail_at);
void bpe_free(bpe *b);

/* tokenizer_bpe.c: one pre-tokenized word through the model (byte mapping when byte-level,
 * characters, byte fallback or unk, merges), its ids appended to out; BPE_OK or
 * BPE_NO_MEMORY. k is scratch reused across words. */
typedef struct word_work word_work;
word_work *word_work_new(void); /* NULL: out of memory */
void word_work_free(word_work *k);
int bpe_encode_word(const bpe *b, const char *word, size_t len, word_work *k, id_list *out);
int bpe_list_push(id_list *l, int32_t id); /* 0, or -1 out of memory */

/* tokenizer.json, or vocab.json + merges.txt: 0 or 2 after printing a message */
int bpe_load_json(bpe *b, const char *path);
/* tokenizer_load_steps.c: the normalizer, pre-tokenizer and post-processor of tokenizer.json
 * (after the model and added tokens are read); 0 or 2 naming path and the JSON path */
int bpe_read_steps(bpe *b, json_t *root, const char *path);
/* tokenizer_roles.c: tokenizer_config.json beside path, when there is one: the special
 * tokens by role and add_bos_token/add_eos_token; 0 or 2 */
int bpe_read_roles(bpe *b, const char *path);
/* the id of an added token or vocabulary entry, -1 when neither */
int32_t bpe_token_id(const bpe *b, const char *s, size_t len);
int bpe_load_vocab_merges(bpe *b, const char *vocab_path, const char *merges_path);

#endif
