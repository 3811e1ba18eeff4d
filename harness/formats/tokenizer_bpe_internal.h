/* harness/formats/tokenizer_bpe_internal.h: internals of the byte-level BPE tokenizer shared by its loader
 * (tokenizer_load.c) and its encoder (tokenizer_bpe.c): hash maps, the model, added tokens. */
#ifndef TOKENIZER_BPE_H
#define TOKENIZER_BPE_H

#include <stddef.h>
#include <stdint.h>

#include <oniguruma.h>

#include "tokenizer.h"

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
    char *content;
    size_t len;
    int32_t id;
} added_token;

typedef struct {
    strmap vocab;
    char **tok;            /* id -> token string (byte-level characters), NULL for gaps */
    size_t *tok_len;
    int n_tok;             /* largest id + 1 */
    int tok_cap;           /* room in tok and tok_len */
    pairmap merges;
    int32_t byte_id[256];  /* id of each byte's character, -1 when the vocab lacks it */
    added_token *added;
    int n_added;
    /* the added tokens as a byte trie (bpe_finish builds it): node 0 is the root, the root's
     * children in added_root[byte] (0: none), deeper ones in added_edges (node, byte) -> node;
     * added_end[node] is the added token ending at node (its index in added), or -1 */
    int32_t added_root[256];
    pairmap added_edges;
    int32_t *added_end;
    int32_t n_nodes;
    OnigRegex re;          /* the pre-tokenizer's split pattern; NULL: no split */
    int add_prefix_space;
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
int bpe_compile_regex(bpe *b, const char *pattern, const char *where);

/* after vocab, merges and added tokens are in: byte ids, the added-token trie; 0 or 2 with a
 * message naming where */
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
void bpe_free_added(bpe *b);

/* bpe_encode's results */
enum { BPE_OK = 0, BPE_NO_MEMORY = -1, BPE_REGEX_LIMIT = -2, BPE_REGEX_ERROR = -3 };
/* appends the ids of text to out; on a regex failure *fail_at is the byte where the search
 * that failed began */
int bpe_encode(const bpe *b, const char *text, size_t len, id_list *out, size_t *fail_at);
void bpe_free(bpe *b);

/* tokenizer.json, or vocab.json + merges.txt: 0 or 2 after printing a message */
int bpe_load_json(bpe *b, const char *path);
int bpe_load_vocab_merges(bpe *b, const char *vocab_path, const char *merges_path);

#endif
