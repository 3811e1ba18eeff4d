/* harness/formats/tokenizer_wordpiece_load.c: reads a WordPiece tokenizer: a tokenizer.json (model
 * WordPiece, BertNormalizer, BertPreTokenizer, TemplateProcessing or BertProcessing, added tokens)
 * or a vocab.txt with an optional tokenizer_config.json beside it. Other components are refused
 * by name. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "util/input_file.h"
#include "tokenizer_wordpiece.h"
#include "util/util.h"

#define MAX_TOKEN_ID (1 << 24)
#define MAX_TOKEN_BYTES 1024

__attribute__((format(printf, 2, 3))) static int bad(const char *where, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    log_error("%s: %s", where, msg);
    return EXIT_USAGE;
}

/* flags: jansson decoding flags beyond JSON_REJECT_DUPLICATES */
static json_t *load_json(const char *path, int flags, int *rc)
{
    char why[INPUT_WHY_LEN];
    size_t len = 0;
    char *text = input_read(path, INPUT_TOKENIZER, &len, why, sizeof why);
    if (!text) {
        *rc = bad(path, "cannot read the tokenizer file: %s", why);
        return NULL;
    }
    json_error_t e;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES | flags, &e);
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

int tokenizer_json_model_type(const char *path, char *type, size_t cap)
{
    int rc;
    json_t *root = load_json(path, 0, &rc);
    if (rc)
        return rc;
    json_t *t = json_object_get(json_object_get(root, "model"), "type");
    snprintf(type, cap, "%s", json_is_string(t) ? json_string_value(t) : "");
    json_decref(root);
    return 0;
}

/* room in the id -> token table for id; 0, or 2 after a message */
static int grow_tokens(bpe *b, int32_t id, const char *where)
{
    if (id < b->tok_cap)
        return 0;
    int n = id + 1 > 2 * b->tok_cap ? id + 1 : 2 * b->tok_cap;
    char **tok = realloc(b->tok, (size_t)n * sizeof *tok);
    size_t *tl = tok ? realloc(b->tok_len, (size_t)n * sizeof *tl) : NULL;
    if (tok)
        b->tok = tok;
    if (!tl)
        return bad(where, "out of memory reading the vocabulary");
    b->tok_len = tl;
    memset(b->tok + b->tok_cap, 0, (size_t)(n - b->tok_cap) * sizeof *tok);
    memset(b->tok_len + b->tok_cap, 0, (size_t)(n - b->tok_cap) * sizeof *tl);
    b->tok_cap = n;
    return 0;
}

/* the text id stands for (replacing what was there: the library's id_to_token looks at the
 * added tokens first); 0, or 2 after a message */
static int set_text(bpe *b, int32_t id, const char *s, size_t len, const char *where)
{
    int rc = grow_tokens(b, id, where);
    if (rc)
        return rc;
    char *copy = malloc(len + 1);
    if (!copy)
        return bad(where, "out of memory reading the vocabulary");
    memcpy(copy, s, len);
    copy[len] = 0;
    free(b->tok[id]);
    b->tok[id] = copy;
    b->tok_len[id] = len;
    if (id >= b->n_tok)
        b->n_tok = id + 1;
    return 0;
}

/* token `s` gets id `id`: both directions; duplicates of a token or an id are refused */
static int set_token(wordpiece *w, const char *s, size_t len, int32_t id, const char *where,
                     const char *what)
{
    bpe *b = &w->v;
    if (len == 0 || len > MAX_TOKEN_BYTES)
        return bad(where, "%s: a token must have 1 to %d bytes", what, MAX_TOKEN_BYTES);
    int32_t before = strmap_get(&b->vocab, s, len);
    if (before >= 0)
        return bad(where, "%s: the token \"%.*s\" appears twice (its first id is %d)", what,
                   (int)(len > 64 ? 64 : len), s, before);
    int rc = grow_tokens(b, id, where);
    if (rc)
        return rc;
    if (b->tok[id])
        return bad(where, "%s: id %d is given to \"%.64s\" and \"%.*s\"", what, id, b->tok[id],
                   (int)(len > 64 ? 64 : len), s);
    if (strmap_put(&b->vocab, s, len, id))
        return bad(where, "out of memory reading the vocabulary");
    return set_text(b, id, s, len, where);
}

/* the id of a token as the library's token_to_id gives it: an added token's, else the
 * vocabulary's; -1 when neither */
static int32_t lookup(const wordpiece *w, const char *s)
{
    return bpe_token_id(&w->v, s, strlen(s));
}

/* an added (special) token matched in the raw text before normalization */
static int add_special(wordpiece *w, const char *content, int32_t id, const char *where)
{
    bpe *b = &w->v;
    added_token *a = realloc(b->added, (size_t)(b->n_added + 1) * sizeof *a);
    if (!a)
        return bad(where, "out of memory");
    b->added = a;
    a = &b->added[b->n_added];
    a->len = strlen(content);
    a->id = id;
    if (!(a->content = malloc(a->len + 1)))
        return bad(where, "out of memory");
    memcpy(a->content, content, a->len + 1);
    b->n_added++;
    if (strmap_get(&b->added_ids, content, a->len) < 0 &&
        strmap_put(&b->added_ids, content, a->len, id)) /* the first with that content counts */
        return bad(where, "out of memory");
    return 0;
}

static void defaults(wordpiece *w)
{
    memset(w, 0, sizeof *w);
    w->v.unk_id = -1;
    w->clean_text = w->chinese_chars = w->strip_accents = w->lowercase = 1;
    snprintf(w->prefix, sizeof w->prefix, "##");
    w->prefix_len = 2;
    w->max_chars = 100;
    w->unk_id = w->cls_id = w->sep_id = w->pad_id = w->mask_id = -1;
}

/* after the vocabulary and added tokens are in: the special ids, the template, the trie */
static int finish(wordpiece *w, const char *where)
{
    if (w->pad_id < 0)
        w->pad_id = lookup(w, "[PAD]");
    if (w->mask_id < 0)
        w->mask_id = lookup(w, "[MASK]");
    if (w->v.n_tok == 0)
        return bad(where, "the vocabulary is empty");
    if (w->unk_id < 0)
        return bad(where, "the vocabulary has no unknown token ([UNK] or the unk_token given)");
    if (bpe_build_added(&w->v))
        return bad(where, "out of memory indexing the added tokens");
    return 0;
}

/* ---- tokenizer.json -------------------------------------------------------------------------- */

static const char *type_of(json_t *o)
{
    json_t *t = json_object_get(o, "type");
    return json_is_string(t) ? json_string_value(t) : "(no type)";
}

static int is_off(json_t *v) { return !v || json_is_null(v) || json_is_false(v); }

static int read_flag(json_t *o, const char *key, int dflt, int *out, const char *where)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return *out = dflt, 0;
    if (!json_is_boolean(v))
        return bad(where, "normalizer.%s must be true, false or null", key);
    return *out = json_is_true(v), 0;
}

static int read_normalizer(wordpiece *w, json_t *n, const char *where)
{
    if (!n || json_is_null(n)) {
        w->clean_text = w->chinese_chars = w->strip_accents = w->lowercase = 0;
        return 0;
    }
    if (strcmp(type_of(n), "BertNormalizer") != 0)
        return bad(where, "normalizer %.32s is not supported with WordPiece (BertNormalizer or "
                          "null)", type_of(n));
    int rc = read_flag(n, "clean_text", 1, &w->clean_text, where);
    if (!rc)
        rc = read_flag(n, "handle_chinese_chars", 1, &w->chinese_chars, where);
    if (!rc)
        rc = read_flag(n, "lowercase", 1, &w->lowercase, where);
    if (!rc) /* strip_accents null follows lowercase */
        rc = read_flag(n, "strip_accents", w->lowercase, &w->strip_accents, where);
    return rc;
}

static int read_model(wordpiece *w, json_t *m, const char *where)
{
    if (!json_is_object(m) || strcmp(type_of(m), "WordPiece") != 0)
        return bad(where, "model: a WordPiece model is expected (got %.32s)", type_of(m));
    json_t *vocab = json_object_get(m, "vocab"), *v;
    if (!json_is_object(vocab))
        return bad(where, "model.vocab must be an object {token: id}");
    const char *k;
    json_object_foreach(vocab, k, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= MAX_TOKEN_ID)
            return bad(where, "model.vocab: the id of \"%.64s\" must be an integer in [0, %d)", k,
                       MAX_TOKEN_ID);
        int rc = set_token(w, k, strlen(k), (int32_t)json_integer_value(v), where, "model.vocab");
        if (rc)
            return rc;
    }
    json_t *unk = json_object_get(m, "unk_token"), *pre = json_object_get(m, "continuing_subword_prefix");
    json_t *max = json_object_get(m, "max_input_chars_per_word");
    if (!json_is_string(unk) || (w->unk_id = lookup(w, json_string_value(unk))) < 0)
        return bad(where, "model.unk_token must name a token of the vocabulary");
    if (pre && !(json_is_string(pre) && json_string_length(pre) < sizeof w->prefix))
        return bad(where, "model.continuing_subword_prefix must be a string of at most %zu bytes",
                   sizeof w->prefix - 1);
    if (pre)
        w->prefix_len = (size_t)snprintf(w->prefix, sizeof w->prefix, "%s", json_string_value(pre));
    if (max && !(json_is_integer(max) && json_integer_value(max) > 0 &&
                 json_integer_value(max) <= 1000000))
        return bad(where, "model.max_input_chars_per_word must be an integer in [1, 1000000]");
    if (max)
        w->max_chars = (size_t)json_integer_value(max);
    return 0;
}

/* added_tokens[i]: a non-empty content, an id (any u32, as the library reads it; the library
 * gives its own), and none of the options the harness does not implement */
static int check_added(json_t *a, size_t i, const char *where)
{
    json_t *id = json_object_get(a, "id"), *content = json_object_get(a, "content");
    if (!json_is_integer(id) || json_integer_value(id) < 0 ||
        json_integer_value(id) > (json_int_t)UINT32_MAX || !json_is_string(content) ||
        !json_string_length(content) || json_string_length(content) > MAX_TOKEN_BYTES)
        return bad(where, "added_tokens[%zu] needs an id in [0, 2^32) and a content of 1 to %d "
                          "bytes", i, MAX_TOKEN_BYTES);
    if (!is_off(json_object_get(a, "single_word")) || !is_off(json_object_get(a, "lstrip")) ||
        !is_off(json_object_get(a, "rstrip")) || !is_off(json_object_get(a, "normalized")))
        return bad(where, "added_tokens[%zu]: single_word, lstrip, rstrip and normalized are "
                          "not supported", i);
    return 0;
}

/* The ids the tokenizers library gives the added tokens on loading (AddedVocabulary::add_tokens,
 * tokenizers 0.23): an earlier added token's with the same content, else the vocabulary's, else
 * the next new id: the vocabulary's size plus the added tokens given a new id before it (a
 * special token added outside the vocabulary: BertWordPieceTokenizer.add_special_tokens). The id
 * the file writes is not used; a warning says when it differs. */
static int read_added(wordpiece *w, json_t *added, const char *where)
{
    if (!added || json_is_null(added))
        return 0;
    if (!json_is_array(added))
        return bad(where, "added_tokens must be an array");
    size_t i;
    json_t *a;
    int64_t n_new = 0;
    json_array_foreach(added, i, a)
    {
        int rc = check_added(a, i, where);
        if (rc)
            return rc;
        const char *content = json_string_value(json_object_get(a, "content"));
        json_int_t given = json_integer_value(json_object_get(a, "id"));
        int64_t id = lookup(w, content);
        if (id < 0 && (id = (int64_t)w->v.vocab.n + n_new++) >= MAX_TOKEN_ID)
            return bad(where, "added_tokens[%zu]: the vocabulary and the added tokens before it "
                              "leave it no id below %d", i, MAX_TOKEN_ID);
        if (given != id)
            log_warn("%s: added_tokens[%zu]: the file gives id %lld, the tokenizers library "
                     "gives it %lld on loading (so does the harness)", where, i,
                     (long long)given, (long long)id);
        rc = set_text(&w->v, (int32_t)id, content, strlen(content), where);
        if (!rc)
            rc = add_special(w, content, (int32_t)id, where);
        if (rc)
            return rc;
    }
    return 0;
}

/* one special token of a template: its ids appended to ids[*n] */
static int template_special(wordpiece *w, json_t *specials, const char *name, int32_t *ids, int *n,
                            const char *where)
{
    json_t *ids_j = json_object_get(json_object_get(specials, name), "ids"), *v;
    if (!json_is_array(ids_j))
        return bad(where, "post_processor: special token \"%.64s\" has no ids", name);
    size_t i;
    json_array_foreach(ids_j, i, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= w->v.n_tok ||
            *n >= WP_MAX_TEMPLATE)
            return bad(where, "post_processor: special token \"%.64s\": ids must be at most %d ids "
                              "of the vocabulary", name, WP_MAX_TEMPLATE);
        ids[(*n)++] = (int32_t)json_integer_value(v);
    }
    return 0;
}

/* TemplateProcessing's single template: special tokens, then $A, then special tokens; all with
 * type_id 0 */
static int read_template(wordpiece *w, json_t *post, const char *where)
{
    json_t *single = json_object_get(post, "single"), *item, *specials = json_object_get(post, "special_tokens");
    if (!json_is_array(single))
        return bad(where, "post_processor TemplateProcessing: single must be an array");
    int seen_a = 0;
    size_t i;
    json_array_foreach(single, i, item)
    {
        json_t *sp = json_object_get(item, "SpecialToken"), *seq = json_object_get(item, "Sequence");
        json_t *tid = json_object_get(sp ? sp : seq, "type_id"), *id = json_object_get(sp, "id");
        if (!json_is_integer(tid) || json_integer_value(tid) != 0)
            return bad(where, "post_processor: single[%zu] needs type_id 0", i);
        if (seq) {
            if (seen_a++ || !json_is_string(json_object_get(seq, "id")) ||
                strcmp(json_string_value(json_object_get(seq, "id")), "A") != 0)
                return bad(where, "post_processor: the single template must hold $A once");
            continue;
        }
        if (!json_is_string(id))
            return bad(where, "post_processor: single[%zu] must be a SpecialToken or $A", i);
        int rc = seen_a ? template_special(w, specials, json_string_value(id), w->after, &w->n_after, where)
                        : template_special(w, specials, json_string_value(id), w->before, &w->n_before, where);
        if (rc)
            return rc;
    }
    return seen_a ? 0 : bad(where, "post_processor: the single template has no $A");
}

/* BertProcessing: {"sep": ["[SEP]", 102], "cls": ["[CLS]", 101]} */
static int read_bert_processing(wordpiece *w, json_t *post, const char *where)
{
    json_t *cls = json_array_get(json_object_get(post, "cls"), 1);
    json_t *sep = json_array_get(json_object_get(post, "sep"), 1);
    if (!json_is_integer(cls) || !json_is_integer(sep) || json_integer_value(cls) < 0 ||
        json_integer_value(sep) < 0 || json_integer_value(cls) >= w->v.n_tok ||
        json_integer_value(sep) >= w->v.n_tok)
        return bad(where, "post_processor BertProcessing: cls and sep must be [token, id] with ids "
                          "of the vocabulary");
    w->before[w->n_before++] = (int32_t)json_integer_value(cls);
    w->after[w->n_after++] = (int32_t)json_integer_value(sep);
    return 0;
}

static int read_post(wordpiece *w, json_t *post, const char *where)
{
    int rc = 0;
    if (!post || json_is_null(post))
        return 0;
    if (strcmp(type_of(post), "TemplateProcessing") == 0)
        rc = read_template(w, post, where);
    else if (strcmp(type_of(post), "BertProcessing") == 0)
        rc = read_bert_processing(w, post, where);
    else
        return bad(where, "post_processor %.32s is not supported with WordPiece "
                          "(TemplateProcessing, BertProcessing or null)", type_of(post));
    if (!rc && w->n_before)
        w->cls_id = w->before[0];
    if (!rc && w->n_after)
        w->sep_id = w->after[w->n_after - 1];
    return rc;
}

static int read_json_root(wordpiece *w, json_t *root, const char *where)
{
    if (!json_is_object(root))
        return bad(where, "must be a JSON object");
    json_t *pre = json_object_get(root, "pre_tokenizer");
    if (!json_is_object(pre) || strcmp(type_of(pre), "BertPreTokenizer") != 0)
        return bad(where, "pre_tokenizer %.32s is not supported with WordPiece (BertPreTokenizer)",
                   json_is_object(pre) ? type_of(pre) : "null");
    /* truncation and padding are left aside, as transformers' tokenizer call sets its own: the
     * MLM data truncates and pads by the scenario (harness/data_mlm.h) */
    int rc = read_normalizer(w, json_object_get(root, "normalizer"), where);
    if (!rc)
        rc = read_model(w, json_object_get(root, "model"), where);
    if (!rc)
        rc = read_added(w, json_object_get(root, "added_tokens"), where);
    if (!rc)
        rc = read_post(w, json_object_get(root, "post_processor"), where);
    return rc;
}

int wp_load_json(wordpiece *w, const char *path)
{
    defaults(w);
    int rc;
    json_t *root = load_json(path, 0, &rc);
    if (rc)
        return rc;
    rc = read_json_root(w, root, path);
    json_decref(root);
    if (!rc)
        rc = finish(w, path);
    if (rc)
        wp_free(w);
    return rc;
}

/* ---- vocab.txt and tokenizer_config.json ------------------------------------------------------ */

/* a special token's name from tokenizer_config.json: a string or {"content": string} */
/* the special token tokenizer_config.json names under key (a string, or an AddedToken object's
 * "content"), dflt when it names none (absent or null); NULL when the key holds another type */
static const char *config_token(json_t *cfg, const char *key, const char *dflt)
{
    json_t *v = json_object_get(cfg, key);
    if (json_is_object(v))
        v = json_object_get(v, "content");
    if (!v || json_is_null(v))
        return dflt;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int config_flag(json_t *cfg, const char *key, int dflt, int *out, const char *where)
{
    json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v))
        return *out = dflt, 0;
    if (!json_is_boolean(v))
        return bad(where, "%s must be true, false or null", key);
    return *out = json_is_true(v), 0;
}

/* tokenizer_config.json beside vocab.txt, when there is one: the normalizer's switches and the
 * special tokens' names (as BertTokenizer takes them) */
static int read_config(wordpiece *w, const char *vocab_path, json_t **cfg)
{
    char path[4200];
    path_dirname(vocab_path, path, sizeof path);
    size_t n = strlen(path);
    snprintf(path + n, sizeof path - n, "/tokenizer_config.json");
    struct stat st;
    *cfg = NULL;
    if (lstat(path, &st) != 0)
        return 0; /* none (a dangling link is something: its reader refuses it) */
    int rc;
    /* integers as doubles: transformers writes "model_max_length":
     * 1000000000000000019884624838656 (its "no limit"), past a 64-bit integer; only booleans
     * and token names are read from this file */
    if (!(*cfg = load_json(path, JSON_DECODE_INT_AS_REAL, &rc)))
        return rc;
    if (!json_is_object(*cfg))
        return bad(path, "must be a JSON object, not %s", json_type_name(*cfg));
    rc = config_flag(*cfg, "do_lower_case", 1, &w->lowercase, path);
    if (!rc)
        rc = config_flag(*cfg, "strip_accents", w->lowercase, &w->strip_accents, path);
    if (!rc)
        rc = config_flag(*cfg, "tokenize_chinese_chars", 1, &w->chinese_chars, path);
    return rc;
}

/* one token a line, its id the line number from 0; "\n" or "\r\n" ends a line */
static int read_vocab_lines(wordpiece *w, const char *path, const char *text, size_t len)
{
    size_t line = 0;
    for (size_t at = 0; at < len; line++) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
        if (n && text[at + n - 1] == '\r')
            n--;
        char where[4300];
        snprintf(where, sizeof where, "%s:%zu", path, line + 1);
        if (line >= MAX_TOKEN_ID)
            return bad(where, "more than %d tokens", MAX_TOKEN_ID);
        if (memchr(text + at, 0, n) || utf8_invalid_at((const unsigned char *)text + at, n) < n)
            return bad(where, "the token is not UTF-8 text (a NUL byte or invalid UTF-8)");
        if (n == 0)
            return bad(where, "an empty line is not a token");
        int rc = set_token(w, text + at, n, (int32_t)line, where, "vocab.txt");
        if (rc)
            return rc;
        at = end + 1;
    }
    return 0;
}

/* the special tokens by name: unk must be there; cls and sep make the [CLS] $A [SEP] template;
 * each one present is an added token, matched in the raw text (as BertTokenizer does) */
static int vocab_specials(wordpiece *w, json_t *cfg, const char *path)
{
    static const char *const keys[5] = {"unk_token", "sep_token", "pad_token", "cls_token",
                                        "mask_token"};
    static const char *const dflt[5] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
    const char *names[5];
    int32_t *ids[5] = {&w->unk_id, &w->sep_id, &w->pad_id, &w->cls_id, &w->mask_id};
    for (int i = 0; i < 5; i++) {
        if (!(names[i] = config_token(cfg, keys[i], dflt[i])))
            return bad(path, "tokenizer_config.json beside it: %s must be a token (a string or "
                             "{\"content\": ...}) or null", keys[i]);
        *ids[i] = lookup(w, names[i]);
        /* a token the config names is the vocabulary's, or an error (a missing [PAD]/[MASK]
         * by default is no error: the MLM data says what it needs) */
        if (*ids[i] < 0 && cfg && json_object_get(cfg, keys[i]) && names[i] != dflt[i])
            return bad(path, "tokenizer_config.json beside it names %s \"%.64s\", which is not "
                             "in the vocabulary", keys[i], names[i]);
        int rc = *ids[i] >= 0 ? add_special(w, names[i], *ids[i], path) : 0;
        if (rc)
            return rc;
    }
    if (w->unk_id < 0)
        return bad(path, "the vocabulary has no unknown token \"%.64s\"", names[0]);
    if (w->cls_id < 0 || w->sep_id < 0)
        return bad(path, "the vocabulary lacks \"%.64s\" or \"%.64s\" (BERT's template needs both)",
                   names[3], names[1]);
    w->before[w->n_before++] = w->cls_id;
    w->after[w->n_after++] = w->sep_id;
    return 0;
}

int wp_load_vocab_txt(wordpiece *w, const char *path)
{
    defaults(w);
    json_t *cfg = NULL;
    int rc = read_config(w, path, &cfg);
    size_t len = 0;
    char why[INPUT_WHY_LEN];
    char *text = rc ? NULL : input_read(path, INPUT_TOKENIZER, &len, why, sizeof why);
    if (!rc && !text)
        rc = bad(path, "cannot read the vocabulary: %s", why);
    if (!rc && len == 0)
        rc = bad(path, "the vocabulary is empty");
    if (!rc)
        rc = read_vocab_lines(w, path, text, len);
    if (!rc)
        rc = vocab_specials(w, cfg, path);
    if (!rc)
        rc = finish(w, path);
    free(text);
    json_decref(cfg);
    if (rc)
        wp_free(w);
    return rc;
}
