/* harness/formats/tokenizer_load.c: reads a BPE tokenizer: tokenizer.json (model BPE, byte-level or
 * SentencePiece-style with byte fallback; added tokens; its steps through tokenizer_load_steps.c) or
 * vocab.json + merges.txt. Anything that would change the ids and is not implemented is refused. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/util.h"
#include "tokenizer_bpe_internal.h"

#define MAX_TOKEN_ID (1 << 24)

/* the message into msg with its control bytes as '?' (token contents are quoted in them) */
static void clean_message(char *msg, size_t len, const char *fmt, va_list ap)
{
    vsnprintf(msg, len, fmt, ap);
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = '?';
}

__attribute__((format(printf, 2, 3))) static int bad(const char *where, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    clean_message(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_error("%s: %s", where, msg);
    return EXIT_USAGE;
}

static void bpe_init(bpe *b)
{
    memset(b, 0, sizeof *b);
    b->unk_id = b->bos_id = b->eos_id = b->pad_id = b->role_unk_id = -1;
    b->add_bos_token = b->add_eos_token = -1;
}

static json_t *load_json(const char *path, int *rc)
{
    char why[INPUT_WHY_LEN];
    size_t len = 0;
    char *text = input_read(path, INPUT_TOKENIZER, &len, why, sizeof why);
    if (!text) {
        *rc = bad(path, "cannot read the tokenizer file: %s", why);
        return NULL;
    }
    json_error_t e;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
    free(text);
    *rc = 0;
    if (!j) {
        for (char *p = e.text; *p; p++)
            if (*p < 0x20 || *p > 0x7e)
                *p = '?';
        *rc = bad(path, "line %d: %s", e.line, e.text);
    }
    return j;
}

/* id -> token string table, grown (doubling: ids often come one by one) to cover id */
static int set_token(bpe *b, int32_t id, const char *s, size_t len)
{
    if (id >= b->tok_cap) {
        int n = id + 1 > 2 * b->tok_cap ? id + 1 : 2 * b->tok_cap;
        char **tok = realloc(b->tok, (size_t)n * sizeof *tok);
        size_t *tl = tok ? realloc(b->tok_len, (size_t)n * sizeof *tl) : NULL;
        if (tok)
            b->tok = tok;
        if (!tl)
            return -1;
        b->tok_len = tl;
        for (int i = b->tok_cap; i < n; i++) {
            b->tok[i] = NULL;
            b->tok_len[i] = 0;
        }
        b->tok_cap = n;
    }
    if (id >= b->n_tok)
        b->n_tok = id + 1;
    free(b->tok[id]);
    if (!(b->tok[id] = malloc(len + 1)))
        return -1;
    memcpy(b->tok[id], s, len + 1);
    b->tok_len[id] = len;
    return 0;
}

static int read_vocab(bpe *b, json_t *vocab, const char *where)
{
    if (!json_is_object(vocab))
        return bad(where, "the vocabulary must be an object {token: id}");
    if (json_object_size(vocab) == 0)
        return bad(where, "the vocabulary is empty: a BPE tokenizer needs its tokens");
    if (json_object_get(vocab, "model") && json_is_object(json_object_get(vocab, "model")))
        return bad(where, "holds a \"model\" object, as a tokenizer.json does, but is read as a "
                          "vocab.json (its name ends in vocab.json): name it tokenizer.json");
    const char *k;
    json_t *v;
    json_object_foreach(vocab, k, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= MAX_TOKEN_ID)
            return bad(where, "vocabulary: the id of \"%.64s\" must be an integer in [0, %d)", k,
                       MAX_TOKEN_ID);
        int32_t id = (int32_t)json_integer_value(v);
        if (strmap_put(&b->vocab, k, strlen(k), id) || set_token(b, id, k, strlen(k)))
            return bad(where, "out of memory reading the vocabulary");
    }
    return 0;
}

static int add_merge(bpe *b, const char *l, size_t ll, const char *r, size_t rl, uint32_t rank,
                     const char *where)
{
    int32_t a = strmap_get(&b->vocab, l, ll), c = strmap_get(&b->vocab, r, rl);
    char *both = malloc(ll + rl + 1);
    if (!both)
        return bad(where, "out of memory");
    memcpy(both, l, ll);
    memcpy(both + ll, r, rl);
    both[ll + rl] = 0;
    int32_t m = strmap_get(&b->vocab, both, ll + rl);
    int rc = 0;
    if (a < 0 || c < 0 || m < 0)
        rc = bad(where, "merge %u \"%.*s %.*s\": \"%s\" is not in the vocabulary", rank + 1,
                 (int)(ll > 64 ? 64 : ll), l, (int)(rl > 64 ? 64 : rl), r,
                 a < 0 ? "left part" : c < 0 ? "right part" : "merged token");
    else if (pairmap_put(&b->merges, a, c, rank, m))
        rc = bad(where, "out of memory");
    free(both);
    return rc;
}

/* "a b" (exactly one space) as merges.txt and legacy tokenizer.json write them */
static int add_merge_line(bpe *b, const char *line, size_t len, uint32_t rank, const char *where)
{
    const char *sp = memchr(line, ' ', len);
    if (!sp || memchr(sp + 1, ' ', len - (size_t)(sp - line) - 1))
        return bad(where, "merge %u must be two tokens separated by one space", rank + 1);
    return add_merge(b, line, (size_t)(sp - line), sp + 1, len - (size_t)(sp - line) - 1, rank,
                     where);
}

/* 1 for a merge written as a string "a b", 0 for a pair ["a", "b"], -1 for anything else */
static int merge_form(json_t *m)
{
    if (json_is_string(m))
        return 1;
    return json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                   json_is_string(json_array_get(m, 1))
               ? 0
               : -1;
}

/* the merges, all "a b" strings (legacy) or all ["a", "b"] pairs: the tokenizers library reads
 * the array as one form or the other and refuses a mix */
static int read_merges_json(bpe *b, json_t *merges, const char *where)
{
    if (!json_is_array(merges))
        return bad(where, "model.merges must be an array");
    size_t i;
    json_t *m;
    json_array_foreach(merges, i, m)
    {
        int rc, form = merge_form(m);
        if (form < 0)
            return bad(where, "model.merges[%zu] must be \"a b\" or [\"a\", \"b\"]", i);
        if (form != merge_form(json_array_get(merges, 0)))
            return bad(where, "model.merges[%zu] is %s but model.merges[0] is %s: the merges "
                              "must all be \"a b\" strings or all [\"a\", \"b\"] pairs",
                       i, form ? "a string" : "a pair", form ? "a pair" : "a string");
        if (form)
            rc = add_merge_line(b, json_string_value(m), json_string_length(m), (uint32_t)i,
                                where);
        else
            rc = add_merge(b, json_string_value(json_array_get(m, 0)),
                           json_string_length(json_array_get(m, 0)),
                           json_string_value(json_array_get(m, 1)),
                           json_string_length(json_array_get(m, 1)), (uint32_t)i, where);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- tokenizer.json sections ------------------------------------------------------------------ */

static int is_off(json_t *v) { return !v || json_is_null(v) || json_is_false(v); }

static int empty_or_null(json_t *v)
{
    return !v || json_is_null(v) || (json_is_string(v) && !json_string_length(v));
}

/* byte_fallback needs every byte's token, <0x00> .. <0xFF> as the library spells them */
static int read_fallback_ids(bpe *b, const char *where)
{
    for (int x = 0; x < 256; x++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", x);
        if ((b->fallback_id[x] = strmap_get(&b->vocab, name, 6)) < 0)
            return bad(where, "model.byte_fallback is true but the vocabulary has no \"%s\" "
                              "(it needs all 256 byte tokens <0x00> .. <0xFF>)", name);
    }
    return 0;
}

static int read_model(bpe *b, json_t *model, const char *where)
{
    json_t *type = json_object_get(model, "type");
    if (!json_is_object(model) || (type && !(json_is_string(type) &&
                                             !strcmp(json_string_value(type), "BPE"))))
        return bad(where, "model: only a BPE model is supported (got %s)",
                   json_is_string(type) ? json_string_value(type) : "something else");
    json_t *dropout = json_object_get(model, "dropout");
    if (!is_off(dropout) && !(json_is_number(dropout) && json_number_value(dropout) == 0))
        return bad(where, "model.dropout must be null: BPE dropout makes ids random");
    if (!empty_or_null(json_object_get(model, "continuing_subword_prefix")) ||
        !empty_or_null(json_object_get(model, "end_of_word_suffix")))
        return bad(where, "model: continuing_subword_prefix and end_of_word_suffix are not "
                          "supported (byte-level BPE has neither)");
    json_t *fallback = json_object_get(model, "byte_fallback");
    if (!is_off(fallback) && !json_is_true(fallback))
        return bad(where, "model.byte_fallback must be true or false");
    b->byte_fallback = json_is_true(fallback);
    json_t *ignore = json_object_get(model, "ignore_merges"), *fuse = json_object_get(model, "fuse_unk");
    if ((!is_off(ignore) && !json_is_true(ignore)) || (!is_off(fuse) && !json_is_true(fuse)))
        return bad(where, "model.ignore_merges and model.fuse_unk must be true or false");
    b->ignore_merges = json_is_true(ignore);
    b->fuse_unk = json_is_true(fuse);
    int rc = read_vocab(b, json_object_get(model, "vocab"), where);
    if (!rc)
        rc = read_merges_json(b, json_object_get(model, "merges"), where);
    if (!rc && b->byte_fallback)
        rc = read_fallback_ids(b, where);
    json_t *unk = json_object_get(model, "unk_token");
    if (!rc && unk && !json_is_null(unk) && !json_is_string(unk))
        rc = bad(where, "model.unk_token must be a string or null");
    if (!rc && json_is_string(unk) &&
        (b->unk_id = strmap_get(&b->vocab, json_string_value(unk), json_string_length(unk))) < 0)
        rc = bad(where, "model.unk_token \"%.64s\" is not in the vocabulary",
                 json_string_value(unk));
    return rc;
}

__attribute__((format(printf, 2, 3))) static void warn(const char *where, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    clean_message(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_warn("%s: %s", where, msg);
}

/* The id the tokenizers library gives an added token on loading a tokenizer.json
 * (AddedVocabulary::add_tokens, tokenizers 0.23): an earlier added token's with the same content,
 * else the vocabulary's, else the next new id: the vocabulary's entry count (not its largest id)
 * plus the added tokens given a new id before it. The id the file writes is not used. */
static int64_t library_added_id(const bpe *b, const char *content, size_t len, int64_t *n_new)
{
    int32_t id = bpe_token_id(b, content, len);
    return id >= 0 ? id : (int64_t)b->vocab.n + (*n_new)++;
}

/* added_tokens[i]: its content and the id the file gives (any u32, as the library reads it) */
static int check_added(json_t *a, size_t i, const char *where)
{
    json_t *id = json_object_get(a, "id"), *content = json_object_get(a, "content");
    if (!json_is_integer(id) || json_integer_value(id) < 0 ||
        json_integer_value(id) > (json_int_t)UINT32_MAX || !json_is_string(content) ||
        !json_string_length(content))
        return bad(where, "added_tokens[%zu] needs an id in [0, 2^32) and a non-empty content",
                   i);
    if (!is_off(json_object_get(a, "single_word")) || !is_off(json_object_get(a, "lstrip")) ||
        !is_off(json_object_get(a, "rstrip")))
        return bad(where, "added_tokens[%zu]: single_word, lstrip and rstrip are not supported", i);
    json_t *norm = json_object_get(a, "normalized"), *special = json_object_get(a, "special");
    if ((norm && !json_is_boolean(norm)) || (special && !json_is_boolean(special)))
        return bad(where, "added_tokens[%zu].normalized and .special must be true or false", i);
    return 0;
}

static int read_added(bpe *b, json_t *added, const char *where)
{
    if (!added || json_is_null(added))
        return 0;
    if (!json_is_array(added))
        return bad(where, "added_tokens must be an array");
    b->added = calloc(json_array_size(added) + 1, sizeof *b->added);
    if (!b->added)
        return bad(where, "out of memory");
    size_t i;
    json_t *a;
    int64_t n_new = 0;
    json_array_foreach(added, i, a)
    {
        int rc = check_added(a, i, where);
        if (rc)
            return rc;
        const char *content = json_string_value(json_object_get(a, "content"));
        size_t len = json_string_length(json_object_get(a, "content"));
        json_int_t given = json_integer_value(json_object_get(a, "id"));
        added_token *t = &b->added[b->n_added];
        t->normalized = json_is_true(json_object_get(a, "normalized"));
        t->len = len;
        int64_t id = library_added_id(b, content, len, &n_new);
        if (id >= MAX_TOKEN_ID)
            return bad(where, "added_tokens[%zu]: the vocabulary and the added tokens before it "
                              "leave it no id below %d", i, MAX_TOKEN_ID);
        t->id = (int32_t)id;
        if (given != t->id)
            warn(where, "added_tokens[%zu] \"%.64s\": the file gives id %lld, the tokenizers "
                        "library gives it %d on loading (so does the harness)",
                 i, content, (long long)given, t->id);
        if (!(t->content = malloc(len + 1)) || set_token(b, t->id, content, len) ||
            (strmap_get(&b->added_ids, content, len) < 0 &&
             strmap_put(&b->added_ids, content, len, t->id)))
            return bad(where, "out of memory");
        memcpy(t->content, content, len + 1);
        b->n_added++;
    }
    return 0;
}

/* the decoder turns ids back into text, which training never does: it is not applied, but one
 * the tokenizers library would not load makes the file no tokenizer (null, or an object of a
 * decoder type the library knows; a Sequence's decoders each one) */
static int check_decoder(json_t *d, const char *where, int depth)
{
    static const char *const known[] = {"ByteLevel", "WordPiece", "Metaspace", "BPEDecoder",
                                        "CTC", "Sequence", "Replace", "Fuse", "Strip",
                                        "ByteFallback"};
    if (!d || json_is_null(d))
        return 0;
    json_t *type = json_object_get(d, "type");
    int ok = json_is_object(d) && json_is_string(type) && depth < 8;
    for (size_t k = 0; ok && k < sizeof known / sizeof known[0]; k++)
        if (strcmp(json_string_value(type), known[k]) == 0)
            ok = 2;
    if (ok != 2)
        return bad(where, "decoder: not a decoder the tokenizers library loads (null, or an "
                          "object whose type is ByteLevel, Metaspace, Sequence, ...)");
    if (strcmp(json_string_value(type), "Sequence") != 0)
        return 0;
    json_t *list = json_object_get(d, "decoders"), *each;
    size_t i;
    if (!json_is_array(list))
        return bad(where, "decoder: a Sequence needs an array of decoders");
    json_array_foreach(list, i, each) {
        int rc = check_decoder(each, where, depth + 1);
        if (rc)
            return rc;
    }
    return 0;
}

/* truncation and padding are left aside, as transformers' tokenizer call sets its own (the
 * harness tokenizes whole texts; the MLM data truncates and pads by the scenario): each is null
 * or an object */
static int read_rest(json_t *root, const char *where)
{
    static const char *const keys[] = {"truncation", "padding"};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(root, keys[i]);
        if (v && !json_is_null(v) && !json_is_object(v))
            return bad(where, "%s must be null or an object, not %s", keys[i],
                       json_type_name(v));
    }
    return check_decoder(json_object_get(root, "decoder"), where, 0);
}

/* the normalized added tokens are matched in normalized text: their content normalized too */
static int normalize_added(bpe *b, const char *where)
{
    step_work w;
    if (step_work_init(&w))
        return bad(where, "out of memory");
    int rc = 0;
    for (int i = 0; i < b->n_added && !rc; i++) {
        added_token *a = &b->added[i];
        b->has_normalized_added |= a->normalized;
        if (!a->normalized || !b->n_norm)
            continue;
        char *out = NULL;
        size_t len = 0;
        if (norm_run(b->norm, b->n_norm, a->content, a->len, &w, &out, &len) || !len)
            rc = bad(where, "added_tokens[%d]: its content cannot be normalized", i);
        if (out && !rc) {
            free(a->content);
            a->content = out;
            a->len = len;
        } else {
            free(out);
        }
    }
    step_work_free(&w);
    return rc;
}

int bpe_load_json(bpe *b, const char *path)
{
    bpe_init(b);
    int rc;
    json_t *root = load_json(path, &rc);
    if (rc)
        return rc;
    if (!json_is_object(root))
        rc = bad(path, "must be a JSON object");
    if (!rc)
        rc = read_rest(root, path);
    if (!rc)
        rc = read_model(b, json_object_get(root, "model"), path);
    if (!rc)
        rc = read_added(b, json_object_get(root, "added_tokens"), path);
    if (!rc)
        rc = bpe_read_steps(b, root, path);
    if (!rc)
        rc = normalize_added(b, path);
    if (!rc)
        rc = bpe_finish(b, path);
    if (!rc)
        rc = bpe_read_roles(b, path);
    json_decref(root);
    if (rc)
        bpe_free(b);
    return rc;
}

/* ---- vocab.json + merges.txt ------------------------------------------------------------------- */

static int read_merges_txt(bpe *b, const char *path)
{
    size_t len;
    char why[INPUT_WHY_LEN];
    char *text = input_read(path, INPUT_TOKENIZER, &len, why, sizeof why);
    if (!text)
        return bad(path, "cannot read the merges file: %s", why);
    int rc = 0;
    uint32_t rank = 0;
    for (size_t at = 0; at < len && !rc; rank++) {
        char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, ll = end - at;
        if (ll && text[at + ll - 1] == '\r')
            ll--;
        if (!(ll >= 8 && memcmp(text + at, "#version", 8) == 0))
            rc = add_merge_line(b, text + at, ll, rank, path);
        at = end + 1;
    }
    free(text);
    return rc;
}

/* ByteLevelBPETokenizer's pre-tokenizer: ByteLevel with GPT-2's split, no prefix space */
static int byte_level_with_regex(bpe *b, const char *where)
{
    if (!(b->pre = calloc(1, sizeof *b->pre)))
        return bad(where, "out of memory");
    b->n_pre = 1;
    b->pre[0].kind = PRE_BYTE_LEVEL;
    b->byte_level = 1;
    return bpe_compile_regex(&b->pre[0].re, GPT2_SPLIT_PATTERN, strlen(GPT2_SPLIT_PATTERN), where);
}

int bpe_load_vocab_merges(bpe *b, const char *vocab_path, const char *merges_path)
{
    bpe_init(b);
    int rc;
    json_t *vocab = load_json(vocab_path, &rc);
    if (!rc)
        rc = read_vocab(b, vocab, vocab_path);
    json_decref(vocab);
    if (!rc)
        rc = read_merges_txt(b, merges_path);
    if (!rc)
        rc = byte_level_with_regex(b, vocab_path);
    if (!rc)
        rc = bpe_finish(b, vocab_path);
    if (rc)
        bpe_free(b);
    return rc;
}
