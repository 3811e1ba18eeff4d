/* tests/test_readers.c: hostile input to the readers' shared parts: the checked file reader
 * (devices, FIFOs, directories, size caps), terminal escaping of messages, added-token
 * matching (100,000 tokens, leftmost-longest against a plain scan) and the regex limits. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/escape.h"
#include "util/input_file.h"
#include "testutil.h"
#include "formats/tokenizer.h"
#include "util/util.h"

/* ---- stderr capture ----------------------------------------------------------------------- */

static int saved_fd = -1;
static char captured[8192];

static void capture_begin(const char *path)
{
    fflush(stderr);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    saved_fd = dup(2);
    assert_true(saved_fd >= 0 && dup2(fd, 2) >= 0);
    close(fd);
}

static void capture_end(const char *path)
{
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    char *text = read_file(path, NULL);
    snprintf(captured, sizeof captured, "%s", text ? text : "");
    free(text);
    unlink(path);
}

/* ---- the checked reader ------------------------------------------------------------------ */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* input_read refuses path, and why says `want` */
static void refused(const char *path, input_kind kind, const char *want)
{
    char why[INPUT_WHY_LEN] = "";
    size_t len = 99;
    char *text = input_read(path, kind, &len, why, sizeof why);
    if (text || !strstr(why, want))
        fail_msg("%s: %s, why \"%s\", wanted \"%s\"", path, text ? "read" : "refused", why, want);
}

static void test_regular_file_and_symlink(void **state)
{
    (void)state;
    const char *file = tu_temp_path(".json"), *link = tu_temp_path(".link");
    write_text(file, "{\"a\": 1}");
    assert_int_equal(symlink(file, link), 0);
    char why[INPUT_WHY_LEN];
    size_t len = 0;
    char *text = input_read(link, INPUT_SCENARIO, &len, why, sizeof why);
    assert_non_null(text);
    assert_int_equal(len, 8);
    assert_string_equal(text, "{\"a\": 1}");
    free(text);
    unlink(link);
    unlink(file);
}

static void test_devices_refused(void **state)
{
    (void)state;
    refused("/dev/zero", INPUT_DATA, "it is a character device, not a regular file");
    const char *link = tu_temp_path(".zero");
    assert_int_equal(symlink("/dev/zero", link), 0);
    refused(link, INPUT_SCENARIO, "it is a character device, not a regular file");
    unlink(link);
    refused("/dev/null", INPUT_TOKENIZER, "character device");
}

static void test_fifo_refused_without_blocking(void **state)
{
    (void)state;
    const char *fifo = tu_temp_path(".fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(20); /* opening a FIFO with no writer blocks: a regression ends here, not in a hang */
    refused(fifo, INPUT_SCENARIO, "it is a FIFO (named pipe), not a regular file");
    uint64_t size;
    char why[INPUT_WHY_LEN];
    assert_int_equal(input_open(fifo, &size, why, sizeof why), -1);
    alarm(0);
    unlink(fifo);
}

static void test_directory_and_missing(void **state)
{
    (void)state;
    refused("/tmp", INPUT_MODEL_CONFIG, "it is a directory, not a regular file");
    refused("/nonexistent/x.json", INPUT_MODEL_CONFIG, "No such file or directory");
}

static void test_size_caps(void **state)
{
    (void)state;
    const char *file = tu_temp_path(".big");
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)input_cap(INPUT_SCENARIO)), 0);
    close(fd);
    char why[INPUT_WHY_LEN];
    size_t len = 0;
    char *text = input_read(file, INPUT_SCENARIO, &len, why, sizeof why);
    assert_non_null(text); /* exactly the cap is allowed */
    assert_int_equal(len, input_cap(INPUT_SCENARIO));
    free(text);
    assert_int_equal(truncate(file, (off_t)input_cap(INPUT_SCENARIO) + 1), 0);
    refused(file, INPUT_SCENARIO, "over the 4 MiB limit for a scenario file");
    text = input_read(file, INPUT_TOKENIZER, &len, why, sizeof why); /* a larger cap */
    assert_non_null(text);
    free(text);
    unlink(file);
    for (int k = 0; k < INPUT_KINDS; k++)
        assert_true(input_cap((input_kind)k) >= 4u << 20 && input_kind_name((input_kind)k)[0]);
}

/* ---- terminal escaping -------------------------------------------------------------------- */

static void test_esc_term(void **state)
{
    (void)state;
    char out[64];
    esc_term_buf(out, sizeof out, "a\x1b]0;t\x07z");
    assert_string_equal(out, "a\\e]0;t\\x07z");
    esc_term_buf(out, sizeof out, "tab\tnl\ncr\r del\x7f");
    assert_string_equal(out, "tab\\tnl\\ncr\\r del\\x7f");
    /* valid UTF-8 stays; C1 controls (U+009B, CSI) and stray bytes are escaped */
    esc_term_buf(out, sizeof out, "caf\xc3\xa9 \xe2\x82\xac \xc2\x9b[31m \x9b \xff");
    assert_string_equal(out, "caf\xc3\xa9 \xe2\x82\xac \\xc2\\x9b[31m \\x9b \\xff");
    /* cut short with dots, never inside an escape or a character */
    char small[10];
    esc_term_buf(small, sizeof small, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
    assert_string_equal(small, "\xc3\xa9\xc3\xa9\xc3\xa9...");
    esc_term_buf(small, sizeof small, "ab\x1b\x1b\x1b");
    assert_string_equal(small, "ab\\e\\e...");
    assert_string_equal(term_safe(NULL), "");
    assert_string_equal(term_safe("\x01"), "\\x01");
}

static void test_log_messages_escaped(void **state)
{
    (void)state;
    const char *path = tu_temp_path(".err");
    capture_begin(path);
    log_error("tensor \"%s\" in %s", "\x1b]0;pwned\x07", "caf\xc3\xa9.safetensors");
    log_warn("%s", "\x1b[2J");
    capture_end(path);
    assert_null(strchr(captured, 0x1b));
    assert_non_null(strstr(captured, "harness: error: tensor \"\\e]0;pwned\\x07\" in "
                                     "caf\xc3\xa9.safetensors\n"));
    assert_non_null(strstr(captured, "harness: warning: \\e[2J\n"));
}

/* ---- added tokens ------------------------------------------------------------------------- */

/* tests/data/hf/bpe512's tokenizer.json with `added` appended to its added tokens (and, when
 * pattern is given, a regex Split before its ByteLevel) written to a temporary file */
static const char *tokenizer_with(json_t *added, const char *pattern)
{
    json_error_t e;
    json_t *root = json_load_file(tu_source_path("tests/data/hf/bpe512/tokenizer.json"), 0, &e);
    assert_non_null(root);
    json_array_extend(json_object_get(root, "added_tokens"), added);
    if (pattern) {
        json_t *pre = json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b, s:b}]}",
                                "type", "Sequence", "pretokenizers", "type", "Split", "pattern",
                                "Regex", pattern, "behavior", "Isolated", "invert", 0, "type",
                                "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1,
                                "use_regex", 0);
        assert_non_null(pre);
        json_object_set_new(root, "pre_tokenizer", pre);
    }
    const char *path = tu_temp_path(".tokenizer.json");
    assert_int_equal(json_dump_file(root, path, JSON_COMPACT), 0);
    json_decref(root);
    return path;
}

static json_t *added_token(int id, const char *content)
{
    return json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", id, "content", content,
                     "single_word", 0, "lstrip", 0, "rstrip", 0, "normalized", 0, "special", 1);
}

static void append_ids(tokenizer *t, const char *text, size_t len, id_list *out)
{
    assert_int_equal(tokenizer_encode(t, text, len, "test", out), 0);
}

static void push_id(id_list *l, int32_t id)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->ids = realloc(l->ids, l->cap * sizeof *l->ids);
        assert_non_null(l->ids);
    }
    l->ids[l->n++] = id;
}

/* the longest of contents[] at text[pos] (the first of equal ones), or -1: the plain scan the
 * trie replaced */
static int scan_at(const char *text, size_t len, size_t pos, const char *const *contents, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(contents[i]);
        if (l <= len - pos && memcmp(text + pos, contents[i], l) == 0 &&
            (best < 0 || l > strlen(contents[best])))
            best = i;
    }
    return best;
}

/* ids of text through `with`, against: the plain tokenizer's ids of each gap between the added
 * tokens that a leftmost-longest scan over contents[] finds, and their ids */
static void check_against_scan(tokenizer *with, tokenizer *plain, const char *text,
                               const char *const *contents, const int *ids, int n)
{
    id_list got = {0}, want = {0};
    append_ids(with, text, strlen(text), &got);
    size_t len = strlen(text), gap = 0;
    for (size_t pos = 0; pos < len;) {
        int best = scan_at(text, len, pos, contents, n);
        if (best < 0) {
            pos++;
            continue;
        }
        append_ids(plain, text + gap, pos - gap, &want);
        push_id(&want, ids[best]);
        pos += strlen(contents[best]);
        gap = pos;
    }
    append_ids(plain, text + gap, len - gap, &want);
    assert_int_equal(got.n, want.n);
    for (size_t i = 0; i < got.n; i++)
        if (got.ids[i] != want.ids[i])
            fail_msg("\"%s\": id %zu is %d, the scan gives %d", text, i, got.ids[i], want.ids[i]);
    id_list_free(&got);
    id_list_free(&want);
}

static tokenizer *open_tok(const char *path)
{
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("bpe", path, &t), 0);
    return t;
}

/* overlapping contents, a duplicate (the first keeps it) and a prefix of another: random texts
 * over their letters split the same as the plain scan splits them */
static void test_added_leftmost_longest(void **state)
{
    (void)state;
    static const char *const contents[] = {"ab", "abc", "b", "bcd", "abc", "cda", "dd", "d d"};
    int ids[8], n = (int)(sizeof ids / sizeof ids[0]);
    json_t *added = json_array();
    for (int i = 0; i < n; i++) /* the file's ids: not used (the library gives its own) */
        json_array_append_new(added, added_token(600 + i, contents[i]));
    tokenizer *with = open_tok(tokenizer_with(added, NULL));
    tokenizer *plain = open_tok(tu_source_path("tests/data/hf/bpe512/tokenizer.json"));
    json_decref(added);
    for (int i = 0; i < n; i++) { /* each content alone is its one id; the same content, the same */
        id_list one = {0};
        append_ids(with, contents[i], strlen(contents[i]), &one);
        assert_int_equal(one.n, 1);
        ids[i] = one.ids[0];
        id_list_free(&one);
    }
    assert_int_equal(ids[1], ids[4]);
    uint64_t rng = 42;
    char text[64];
    for (int round = 0; round < 500; round++) {
        size_t len = (size_t)tu_uniform(&rng, 0, sizeof text - 1);
        for (size_t i = 0; i < len; i++)
            text[i] = "abcd x"[(int)tu_uniform(&rng, 0, 6)];
        text[len] = 0;
        check_against_scan(with, plain, text, contents, ids, n);
    }
    tokenizer_free(with);
    tokenizer_free(plain);
}

/* 100,000 added tokens (quadratic before: about 13 s for 44 KB of text): the ids of a small
 * text are still the plain scan's */
static void test_100k_added_tokens(void **state)
{
    (void)state;
    enum { N = 100000 };
    static char names[N][20];
    static const char *contents[N];
    static int ids[N];
    json_t *added = json_array();
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "<|extra_%d|>", i);
        contents[i] = names[i];
        ids[i] = 512 + i;
        json_array_append_new(added, added_token(ids[i], names[i]));
    }
    tokenizer *with = open_tok(tokenizer_with(added, NULL));
    tokenizer *plain = open_tok(tu_source_path("tests/data/hf/bpe512/tokenizer.json"));
    json_decref(added);
    assert_int_equal(tokenizer_vocab_size(with), 512 + N);
    check_against_scan(with, plain, "hello <|extra_5|> world<|extra_50|><|extra_99999|>x "
                       "<|extra_100000|> <|extra_|>", contents, ids, N);
    id_list got = {0};
    append_ids(with, "<|extra_7|>", strlen("<|extra_7|>"), &got);
    assert_int_equal(got.n, 1);
    assert_int_equal(got.ids[0], 519);
    id_list_free(&got);
    tokenizer_free(with);
    tokenizer_free(plain);
}

/* ---- the split regex's backtracking limit -------------------------------------------------- */

static void test_catastrophic_regex(void **state)
{
    (void)state;
    json_t *none = json_array();
    const char *path = tokenizer_with(none, "(\\p{L}+)+\\d");
    json_decref(none);
    tokenizer *t = open_tok(path);
    char text[5002];
    memset(text, 'a', 5000);
    text[5000] = '!';
    text[5001] = 0;
    id_list ids = {0};
    const char *err = tu_temp_path(".err");
    capture_begin(err);
    int rc = tokenizer_encode(t, text, strlen(text), "corpus.txt", &ids);
    capture_end(err);
    fputs(captured, stderr);
    assert_int_equal(rc, EXIT_USAGE);
    assert_non_null(strstr(captured, "corpus.txt: tokenizing stopped at byte 0"));
    assert_non_null(strstr(captured, path));
    assert_non_null(strstr(captured, "exceeded the backtracking limit (10000000 retries"));
    id_list_free(&ids);
    /* the same pattern on text it does not backtrack on is fine */
    assert_int_equal(tokenizer_encode(t, "abc1 de2", 8, "ok.txt", &ids), 0);
    assert_true(ids.n > 0);
    id_list_free(&ids);
    tokenizer_free(t);
}

/* GPT-2's own pattern over a long text stays far from the limits */
static void test_long_text_within_limits(void **state)
{
    (void)state;
    tokenizer *t = open_tok(tu_source_path("tests/data/hf/bpe512/tokenizer.json"));
    size_t len = 1 << 18;
    char *text = malloc(len + 1);
    assert_non_null(text);
    for (size_t i = 0; i < len; i++)
        text[i] = i % 4096 < 3000 ? ' ' : "word, 12 \n"[i % 10];
    text[len] = 0;
    id_list ids = {0};
    assert_int_equal(tokenizer_encode(t, text, len, "long.txt", &ids), 0);
    id_list_free(&ids);
    free(text);
    tokenizer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regular_file_and_symlink),
        cmocka_unit_test(test_devices_refused),
        cmocka_unit_test(test_fifo_refused_without_blocking),
        cmocka_unit_test(test_directory_and_missing),
        cmocka_unit_test(test_size_caps),
        cmocka_unit_test(test_esc_term),
        cmocka_unit_test(test_log_messages_escaped),
        cmocka_unit_test(test_added_leftmost_longest),
        cmocka_unit_test(test_100k_added_tokens),
        cmocka_unit_test(test_catastrophic_regex),
        cmocka_unit_test(test_long_text_within_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
