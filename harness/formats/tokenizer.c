/* harness/formats/tokenizer.c: opening a tokenizer by kind and path ("byte", BPE (byte-level or
 * SentencePiece-style) from a tokenizer.json, vocab.json + merges.txt, WordPiece from a tokenizer.json
 * or vocab.txt, or a directory), encoding, special ids by role, UTF-8 validation. */
#define _POSIX_C_SOURCE 200809L
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenizer_bpe_internal.h"
#include "tokenizer_wordpiece.h"
#include "util/util.h"

struct tokenizer {
    int is_bpe, is_wp;
    bpe b;
    wordpiece w;
    char name[4300];
};

/* path names a directory (dir), or anything at all, which the loader then reads or refuses
 * by what it is (a FIFO, a device, a directory: input_file.h); a symbolic link whose target
 * is missing is something too (lstat), refused by the loader, never taken for no file */
static int exists(const char *path, int dir)
{
    struct stat st;
    if (dir)
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    return lstat(path, &st) == 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* a tokenizer.json is read by its model type, whichever kind was named */
static int load_json_file(tokenizer *t, const char *path)
{
    char type[64];
    int rc = tokenizer_json_model_type(path, type, sizeof type);
    if (rc)
        return rc;
    if (strcmp(type, "WordPiece") == 0) {
        t->is_bpe = 0;
        t->is_wp = 1;
        snprintf(t->name, sizeof t->name, "wordpiece:%s", path);
        return wp_load_json(&t->w, path);
    }
    snprintf(t->name, sizeof t->name, "bpe:%s", path);
    return bpe_load_json(&t->b, path);
}

/* a path to a tokenizer.json or a vocab.txt (tokenizer_config.json beside it), or a directory
 * holding either (tokenizer.json preferred) */
static int open_wordpiece(tokenizer *t, const char *path)
{
    char a[4200];
    if (exists(path, 1)) {
        snprintf(a, sizeof a, "%s/tokenizer.json", path);
        if (exists(a, 0))
            return load_json_file(t, a);
        snprintf(a, sizeof a, "%s/vocab.txt", path);
        if (!exists(a, 0)) {
            log_error("%s: the directory holds neither tokenizer.json nor vocab.txt", path);
            return EXIT_USAGE;
        }
        path = a;
    } else if (!exists(path, 0)) {
        log_error("%s: no such tokenizer file or directory", path);
        return EXIT_USAGE;
    } else if (!ends_with(path, ".txt")) {
        return load_json_file(t, path);
    }
    snprintf(t->name, sizeof t->name, "wordpiece:%s", path);
    return wp_load_vocab_txt(&t->w, path);
}

static int load_vocab_merges(tokenizer *t, const char *vocab, const char *merges)
{
    snprintf(t->name, sizeof t->name, "bpe:%s", vocab);
    return bpe_load_vocab_merges(&t->b, vocab, merges);
}

/* a directory: its tokenizer.json, else its vocab.json + merges.txt */
static int open_dir(tokenizer *t, const char *dir)
{
    char a[4200], m[4200];
    snprintf(a, sizeof a, "%s/tokenizer.json", dir);
    if (exists(a, 0))
        return load_json_file(t, a);
    snprintf(a, sizeof a, "%s/vocab.json", dir);
    snprintf(m, sizeof m, "%s/merges.txt", dir);
    if (exists(a, 0) && exists(m, 0))
        return load_vocab_merges(t, a, m);
    log_error("%s: the directory holds neither tokenizer.json nor vocab.json and merges.txt", dir);
    return EXIT_USAGE;
}

/* a path to a tokenizer.json, a vocab.json (merges.txt beside it) or a directory */
static int open_bpe(tokenizer *t, const char *path)
{
    if (exists(path, 1))
        return open_dir(t, path);
    if (!exists(path, 0)) {
        log_error("%s: no such tokenizer file or directory", path);
        return EXIT_USAGE;
    }
    if (!ends_with(path, "vocab.json"))
        return load_json_file(t, path);
    char m[4200];
    path_dirname(path, m, sizeof m);
    size_t n = strlen(m);
    snprintf(m + n, sizeof m - n, "/merges.txt");
    return load_vocab_merges(t, path, m);
}

int tokenizer_open(const char *kind, const char *path, tokenizer **out)
{
    *out = NULL;
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        log_error("out of memory opening a tokenizer");
        return EXIT_FAIL;
    }
    int rc = 0;
    if (strcmp(kind, "byte") == 0) {
        snprintf(t->name, sizeof t->name, "byte");
    } else if (strcmp(kind, "bpe") == 0) {
        t->is_bpe = 1;
        if (!path || !path[0]) {
            log_error("the bpe tokenizer needs a path (tokenizer.json, vocab.json or a folder)");
            rc = EXIT_USAGE;
        } else {
            rc = open_bpe(t, path);
        }
    } else if (strcmp(kind, "wordpiece") == 0) {
        t->is_wp = 1;
        if (!path || !path[0]) {
            log_error("the wordpiece tokenizer needs a path (tokenizer.json, vocab.txt or a folder)");
            rc = EXIT_USAGE;
        } else {
            rc = open_wordpiece(t, path);
        }
    } else {
        log_error("unknown tokenizer '%s' (known: byte, bpe, wordpiece)", kind);
        rc = EXIT_USAGE;
    }
    if (rc) {
        free(t);
        return rc;
    }
    *out = t;
    return 0;
}

void tokenizer_free(tokenizer *t)
{
    if (!t)
        return;
    if (t->is_bpe)
        bpe_free(&t->b);
    if (t->is_wp)
        wp_free(&t->w);
    free(t);
}

int tokenizer_vocab_size(const tokenizer *t)
{
    return t->is_bpe ? t->b.n_tok : t->is_wp ? t->w.v.n_tok : 256;
}

int32_t tokenizer_special_id(const tokenizer *t, const char *role)
{
    if (t->is_bpe) {
        const bpe *b = &t->b;
        return !strcmp(role, "bos") ? b->bos_id : !strcmp(role, "eos") ? b->eos_id
             : !strcmp(role, "pad") ? b->pad_id : !strcmp(role, "unk") ? b->role_unk_id : -1;
    }
    if (!t->is_wp)
        return -1;
    const wordpiece *w = &t->w;
    return !strcmp(role, "cls") ? w->cls_id : !strcmp(role, "sep") ? w->sep_id
         : !strcmp(role, "pad") ? w->pad_id : !strcmp(role, "mask") ? w->mask_id
         : !strcmp(role, "unk") ? w->unk_id : -1;
}

int tokenizer_config_flag(const tokenizer *t, const char *key)
{
    if (!t->is_bpe)
        return -1;
    return !strcmp(key, "add_bos_token") ? t->b.add_bos_token
         : !strcmp(key, "add_eos_token") ? t->b.add_eos_token : -1;
}

void tokenizer_template_size(const tokenizer *t, int *before, int *after)
{
    *before = t->is_wp ? t->w.n_before : t->is_bpe ? t->b.n_before : 0;
    *after = t->is_wp ? t->w.n_after : t->is_bpe ? t->b.n_after : 0;
}

const char *tokenizer_name(const tokenizer *t)
{
    return t->name;
}

size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                                : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!n || i + n > len)
            return i;
        uint32_t cp = n == 1 ? c : c & (0x7F >> n);
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += n;
    }
    return len;
}

static int push_bytes(const char *text, size_t len, id_list *out)
{
    if (out->n + len > out->cap) {
        size_t cap = out->cap ? out->cap : 1024;
        while (cap < out->n + len)
            cap *= 2;
        int32_t *ids = realloc(out->ids, cap * sizeof *ids);
        if (!ids)
            return -1;
        out->ids = ids;
        out->cap = cap;
    }
    for (size_t i = 0; i < len; i++)
        out->ids[out->n++] = (unsigned char)text[i];
    return 0;
}

int tokenizer_encode(tokenizer *t, const char *text, size_t len, const char *where, id_list *out)
{
    return tokenizer_encode_special(t, text, len, 1, where, out);
}

int tokenizer_encode_special(tokenizer *t, const char *text, size_t len, int add_special_tokens,
                             const char *where, id_list *out)
{
    if (!t->is_bpe && !t->is_wp) {
        if (push_bytes(text, len, out) == 0)
            return 0;
        log_error("%s: out of memory tokenizing %zu bytes", where, len);
        return EXIT_FAIL;
    }
    size_t bad = utf8_invalid_at((const unsigned char *)text, len);
    if (bad < len) {
        log_error("%s: not valid UTF-8 at byte %zu (the %s tokenizer reads UTF-8 text)", where,
                  bad, t->is_wp ? "WordPiece" : "BPE");
        return EXIT_USAGE;
    }
    if (t->is_wp) {
        if (wp_encode(&t->w, text, len, add_special_tokens, out) == 0)
            return 0;
        log_error("%s: out of memory tokenizing %zu bytes", where, len);
        return EXIT_FAIL;
    }
    size_t at = 0;
    int rc = bpe_encode(&t->b, text, len, add_special_tokens, out, &at);
    if (rc == BPE_OK)
        return 0;
    const char *tok = t->name + strlen("bpe:");
    if (rc == BPE_REGEX_LIMIT)
        log_error("%s: tokenizing stopped at byte %zu: the pre-tokenizer split regex of %s "
                  "exceeded the backtracking limit (%lu retries matching at one position, %lu "
                  "per byte searched: docs/limits.md); the pattern backtracks catastrophically "
                  "on this text", where, at, tok, BPE_RETRY_LIMIT_IN_MATCH,
                  BPE_RETRY_LIMIT_PER_BYTE);
    else if (rc == BPE_REGEX_ERROR)
        log_error("%s: tokenizing stopped at byte %zu: the pre-tokenizer split regex of %s "
                  "failed (an Oniguruma search error)", where, at, tok);
    else
        log_error("%s: out of memory tokenizing %zu bytes", where, len);
    return rc == BPE_NO_MEMORY ? EXIT_FAIL : EXIT_USAGE;
}

void id_list_free(id_list *l)
{
    free(l->ids);
    memset(l, 0, sizeof *l);
}

/* decodes the UTF-8 code point at s (valid UTF-8 assumed: token strings come from JSON) */
static uint32_t next_cp(const unsigned char *s, size_t *i)
{
    unsigned c = s[*i];
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n && s[*i + k]; k++)
        cp = (cp << 6) | (s[*i + k] & 0x3F);
    *i += n;
    return cp;
}

/* a SentencePiece-style token: a byte-fallback token's byte, else the token's text as it is
 * (the metaspace character included: decoders are not run) */
static int sentencepiece_bytes(const bpe *b, int32_t id, unsigned char *out, size_t cap)
{
    for (int x = 0; b->byte_fallback && x < 256; x++)
        if (b->fallback_id[x] == id && cap) {
            out[0] = (unsigned char)x;
            return 1;
        }
    size_t n = b->tok_len[id] < cap ? b->tok_len[id] : cap;
    memcpy(out, b->tok[id], n);
    return (int)n;
}

int tokenizer_token_bytes(const tokenizer *t, int32_t id, unsigned char *out, size_t cap)
{
    if (t->is_wp) {
        if (id < 0 || id >= t->w.v.n_tok || !t->w.v.tok[id])
            return -1;
        size_t n = t->w.v.tok_len[id] < cap ? t->w.v.tok_len[id] : cap;
        memcpy(out, t->w.v.tok[id], n);
        return (int)n;
    }
    if (!t->is_bpe) {
        if (id < 0 || id > 255 || cap < 1)
            return -1;
        out[0] = (unsigned char)id;
        return 1;
    }
    if (id < 0 || id >= t->b.n_tok || !t->b.tok[id])
        return -1;
    if (!t->b.byte_level)
        return sentencepiece_bytes(&t->b, id, out, cap);
    for (int a = 0; a < t->b.n_added; a++)
        if (t->b.added[a].id == id) {
            size_t n = t->b.added[a].len < cap ? t->b.added[a].len : cap;
            memcpy(out, t->b.added[a].content, n);
            return (int)n;
        }
    const unsigned char *s = (const unsigned char *)t->b.tok[id];
    size_t i = 0, n = 0;
    while (i < t->b.tok_len[id] && n < cap) {
        int byte = byte_level_byte(next_cp(s, &i));
        if (byte >= 0)
            out[n++] = (unsigned char)byte;
    }
    return (int)n;
}
