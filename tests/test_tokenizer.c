/* tests/test_tokenizer.c: the byte-level BPE tokenizer against the ids of Hugging Face's
 * tokenizers library (tests/data/hf/tokenizer_expected.json, made by tools/make_tokenizer.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "testutil.h"
#include "formats/tokenizer.h"
#include "util/util.h"

static json_t *expected(void)
{
    static json_t *exp;
    if (!exp) {
        json_error_t e;
        exp = json_load_file(tu_source_path("tests/data/hf/tokenizer_expected.json"), 0, &e);
        if (!exp)
            fail_msg("tokenizer_expected.json: %s", e.text);
    }
    return exp;
}

static char *slurp(const char *rel, size_t *len)
{
    char *text = read_file(tu_source_path(rel), len);
    assert_non_null(text);
    return text;
}

static tokenizer *open_bpe(const char *rel)
{
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("bpe", tu_source_path(rel), &t), 0);
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
            fail_msg("id %zu: got %d, the tokenizers library gives %lld", i, got.ids[i],
                     (long long)json_integer_value(json_array_get(want, i)));
    assert_int_equal(got.n, n);
    id_list_free(&got);
}

static void test_cases_tokenizer_json(void **state)
{
    (void)state;
    size_t len;
    char *text = slurp("tests/data/hf/tokenizer_cases.txt", &len);
    tokenizer *t = open_bpe("tests/data/hf/bpe512/tokenizer.json");
    json_t *cases = json_object_get(expected(), "cases");
    check_ids(t, text, len, json_object_get(cases, "tokenizer_json_ids"));
    assert_int_equal(tokenizer_vocab_size(t),
                     json_integer_value(json_object_get(expected(), "vocab_size")));
    tokenizer_free(t);
    free(text);
}

static void test_cases_vocab_merges(void **state)
{
    (void)state;
    size_t len;
    char *text = slurp("tests/data/hf/tokenizer_cases.txt", &len);
    tokenizer *t = open_bpe("tests/data/hf/bpe512/vocab.json");
    json_t *cases = json_object_get(expected(), "cases");
    check_ids(t, text, len, json_object_get(cases, "vocab_merges_ids"));
    tokenizer_free(t);
    free(text);
}

static void test_directory_prefers_tokenizer_json(void **state)
{
    (void)state;
    tokenizer *t = open_bpe("tests/data/hf/bpe512");
    const char *name = tokenizer_name(t);
    assert_true(strlen(name) > 14 && strcmp(name + strlen(name) - 14, "tokenizer.json") == 0);
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
    char *text = slurp("scenarios/data/corpus.txt", &len);
    tokenizer *t = open_bpe("tests/data/hf/bpe512/tokenizer.json");
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
            fail_msg("corpus ids %zu..%zu differ from the tokenizers library's", i * chunk,
                     i * chunk + n);
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

/* probe_text() of tools/make_tokenizer.py: "x{c}x {c}9{c}{c} x\n" for each code point */
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

/* every code point's class (letter, number, whitespace, other) as Oniguruma in the tokenizers
 * library sees it, through the ids of a text that puts each one in a few contexts */
static void test_codepoint_probe(void **state)
{
    (void)state;
    tokenizer *t = open_bpe("tests/data/hf/bpe512/tokenizer.json");
    json_t *p = json_object_get(expected(), "probe");
    uint32_t size = (uint32_t)json_integer_value(json_object_get(p, "block"));
    json_t *sums = json_object_get(p, "block_sha256");
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
            print_message("code points U+%04X..U+%04X: ids differ from the tokenizers library's\n",
                          b * size, (b + 1) * size - 1);
            bad++;
        }
        id_list_free(&got);
    }
    free(text);
    tokenizer_free(t);
    assert_int_equal(bad, 0);
}

static void test_token_bytes_round_trip(void **state)
{
    (void)state;
    size_t len;
    char *text = slurp("tests/data/hf/tokenizer_cases.txt", &len);
    tokenizer *t = open_bpe("tests/data/hf/bpe512/tokenizer.json");
    id_list ids = {0};
    assert_int_equal(tokenizer_encode(t, text, len, "cases", &ids), 0);
    unsigned char *back = malloc(len + 64), buf[256];
    size_t n = 0;
    for (size_t i = 0; i < ids.n; i++) {
        int k = tokenizer_token_bytes(t, ids.ids[i], buf, sizeof buf);
        assert_true(k > 0 && n + (size_t)k <= len);
        memcpy(back + n, buf, (size_t)k);
        n += (size_t)k;
    }
    assert_int_equal(n, len);
    assert_memory_equal(back, text, len);
    assert_int_equal(tokenizer_token_bytes(t, 100000, buf, sizeof buf), -1);
    free(back);
    id_list_free(&ids);
    tokenizer_free(t);
    free(text);
}

static void test_byte_tokenizer(void **state)
{
    (void)state;
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("byte", NULL, &t), 0);
    id_list ids = {0};
    assert_int_equal(tokenizer_encode(t, "a\xff\n", 3, "x", &ids), 0);
    assert_int_equal(ids.n, 3);
    assert_int_equal(ids.ids[1], 255);
    assert_int_equal(tokenizer_vocab_size(t), 256);
    id_list_free(&ids);
    tokenizer_free(t);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    const struct {
        const char *s;
        size_t at;
    } cases[] = {{"ab\xff", 2},          {"\xc0\xaf", 0},      {"x\xe0\x80\x80", 1},
                 {"\xed\xa0\x80", 0},    {"\xf4\x90\x80\x80", 0}, {"ok\xe2\x82", 2},
                 {"\xe2\x82\xac ok", 6}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(utf8_invalid_at((const unsigned char *)cases[i].s, strlen(cases[i].s)),
                         cases[i].at);
    tokenizer *t = open_bpe("tests/data/hf/bpe512/tokenizer.json");
    id_list ids = {0};
    assert_int_equal(tokenizer_encode(t, "abc\xff", 4, "bad.txt", &ids), 2);
    id_list_free(&ids);
    tokenizer_free(t);
}

/* a malformed tokenizer file is refused with exit code 2 */
static void expect_bad_json(const char *json)
{
    const char *path = tu_temp_path(".json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("bpe", path, &t), 2);
    assert_null(t);
    remove(path);
}

#define PRE "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}"
#define VOCAB "\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}"

static void test_bad_tokenizer_files(void **state)
{
    (void)state;
    expect_bad_json("{\"model\": ");
    expect_bad_json("[1, 2]");
    expect_bad_json("{" PRE ", \"model\": {\"type\": \"Unigram\", " VOCAB ", \"merges\": []}}");
    expect_bad_json("{" PRE ", \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [\"a c\"]}}");
    expect_bad_json("{" PRE ", \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [\"a b c\"]}}");
    expect_bad_json("{" PRE ", \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [[\"a\"]]}}");
    /* the two forms mixed, which the tokenizers library refuses too */
    expect_bad_json("{" PRE ", \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [\"a b\", [\"a\", \"b\"]]}}");
    expect_bad_json("{" PRE ", \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [[\"a\", \"b\"], \"a b\"]}}");
    expect_bad_json("{" PRE ", \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}}");
    expect_bad_json("{" PRE ", \"model\": {\"type\": \"BPE\", \"vocab\": [], \"merges\": []}}");
    expect_bad_json("{" PRE ", \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [], \"dropout\": 0.1}}");
    expect_bad_json("{\"pre_tokenizer\": {\"type\": \"Whitespace\"}, \"model\": {\"type\": \"BPE\", " VOCAB
                    ", \"merges\": []}}");
    expect_bad_json("{" PRE ", \"normalizer\": {\"type\": \"Precompiled\"}, \"model\": {\"type\": \"BPE\", "
                    VOCAB ", \"merges\": []}}");
    expect_bad_json("{" PRE ", \"post_processor\": {\"type\": \"TemplateProcessing\"}, \"model\": "
                    "{\"type\": \"BPE\", " VOCAB ", \"merges\": []}}");
    expect_bad_json("{" PRE ", \"added_tokens\": [{\"id\": 5, \"content\": \"\"}], \"model\": {\"type\": "
                    "\"BPE\", " VOCAB ", \"merges\": []}}");
    expect_bad_json("{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
                    "\"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}, "
                    "{\"type\": \"ByteLevel\", \"use_regex\": false}]}, \"model\": {\"type\": \"BPE\", "
                    VOCAB ", \"merges\": []}}");
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("bpe", "/nonexistent/tokenizer.json", &t), 2);
    assert_int_equal(tokenizer_open("bpe", "", &t), 2);
    assert_int_equal(tokenizer_open("wordpiece", "x", &t), 2);
    assert_int_equal(tokenizer_open("bpe", tu_source_path("tests/data"), &t), 2);
}

static void test_bad_merges_txt(void **state)
{
    (void)state;
    char dir[256];
    snprintf(dir, sizeof dir, "%s", tu_temp_path(".d"));
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p %s && printf '{\"a\": 0, \"b\": 1, \"ab\": 2}' > %s/vocab.json"
             " && printf '#version: 0.2\\na b\\n\\na b\\n' > %s/merges.txt", dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("bpe", dir, &t), 2); /* an empty line is not a merge */
    snprintf(cmd, sizeof cmd, "printf '#version: 0.2\\r\\na b\\r\\n' > %s/merges.txt", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(tokenizer_open("bpe", dir, &t), 0); /* CRLF lines are fine */
    id_list ids = {0};
    assert_int_equal(tokenizer_encode(t, "abab", 4, "x", &ids), 0);
    assert_int_equal(ids.n, 2);
    assert_int_equal(ids.ids[0], 2);
    id_list_free(&ids);
    tokenizer_free(t);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases_tokenizer_json),
        cmocka_unit_test(test_cases_vocab_merges),
        cmocka_unit_test(test_directory_prefers_tokenizer_json),
        cmocka_unit_test(test_corpus_chunks),
        cmocka_unit_test(test_codepoint_probe),
        cmocka_unit_test(test_token_bytes_round_trip),
        cmocka_unit_test(test_byte_tokenizer),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_bad_tokenizer_files),
        cmocka_unit_test(test_bad_merges_txt),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    json_decref(expected());
    return rc;
}
