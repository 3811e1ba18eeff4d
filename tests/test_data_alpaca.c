/* tests/test_data_alpaca.c: Alpaca SFT data against transformers (tools/make_alpaca_fixture.py): ids,
 * labels and masks per record and per padded batch, the label shift, JSON and JSONL, bad records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "formats/data_alpaca.h"
#include "formats/tokenizer.h"
#include "testutil.h"

#define SEQ_LEN 224 /* rows are padded past model_max_length: the harness pads to seq_len */

static json_t *expected(void)
{
    json_error_t e;
    json_t *x = json_load_file(tu_source_path("tests/data/sft/alpaca_expected.json"), 0, &e);
    assert_non_null(x);
    return x;
}

static tokenizer *open_bpe(void)
{
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("bpe", tu_source_path("tests/data/hf/bpe512/tokenizer.json"), &t), 0);
    return t;
}

static alpaca_options options(json_t *x)
{
    alpaca_options o = {SEQ_LEN, (int)json_integer_value(json_object_get(x, "model_max_length")),
                        (int32_t)json_integer_value(json_object_get(x, "eos_id")),
                        (int32_t)json_integer_value(json_object_get(x, "pad_id"))};
    return o;
}

static void load(const char *rel, alpaca_dataset *ds, json_t *x)
{
    tokenizer *t = open_bpe();
    alpaca_options o = options(x);
    assert_int_equal(alpaca_dataset_load(tu_source_path(rel), t, &o, ds), 0);
    tokenizer_free(t);
}

static int32_t at(json_t *arr, size_t r, size_t i)
{
    return (int32_t)json_integer_value(json_array_get(json_array_get(arr, r), i));
}

/* every row: train.py's ids and labels, then padding (pad id, label -100) up to seq_len, and
 * the collator's attention mask (ids != pad) */
static void check_rows(const alpaca_dataset *ds, json_t *x)
{
    json_t *recs = json_object_get(x, "records");
    int32_t pad = (int32_t)json_integer_value(json_object_get(x, "pad_id"));
    assert_int_equal(ds->n_rows, json_array_size(recs));
    for (size_t r = 0; r < ds->n_rows; r++) {
        json_t *ids = json_object_get(json_array_get(recs, r), "input_ids");
        json_t *lab = json_object_get(json_array_get(recs, r), "labels");
        size_t n = json_array_size(ids);
        for (size_t t = 0; t < SEQ_LEN; t++) {
            int32_t want_id = t < n ? (int32_t)json_integer_value(json_array_get(ids, t)) : pad;
            int32_t want_lab = t < n ? (int32_t)json_integer_value(json_array_get(lab, t)) : -100;
            assert_int_equal(ds->ids[r * SEQ_LEN + t], want_id);
            assert_int_equal(ds->labels[r * SEQ_LEN + t], want_lab);
            assert_int_equal(ds->attention[r * SEQ_LEN + t], want_id != pad);
        }
    }
}

static void test_json_array_matches_transformers(void **state)
{
    (void)state;
    json_t *x = expected();
    alpaca_dataset ds;
    load("tests/data/sft/alpaca.json", &ds, x);
    check_rows(&ds, x);
    alpaca_dataset_free(&ds);
    json_decref(x);
}

static void test_json_lines_match_transformers(void **state)
{
    (void)state;
    json_t *x = expected();
    alpaca_dataset ds;
    load("tests/data/sft/alpaca.jsonl", &ds, x);
    check_rows(&ds, x);
    alpaca_dataset_free(&ds);
    json_decref(x);
}

/* the batch of all rows: input_ids and attention_mask as the collator's batch (padded to the
 * longest) and then padding; targets the collator's labels shifted left by one, as
 * GPT2LMHeadModel shifts them (logits[:, :-1] against labels[:, 1:]) */
static void test_batch_is_the_collators_shifted(void **state)
{
    (void)state;
    json_t *x = expected(), *b = json_object_get(x, "batch");
    json_t *ids = json_object_get(b, "input_ids"), *lab = json_object_get(b, "labels"),
           *mask = json_object_get(b, "attention_mask");
    alpaca_dataset ds;
    load("tests/data/sft/alpaca.json", &ds, x);
    int B = (int)ds.n_rows;
    size_t longest = json_array_size(json_array_get(ids, 0)), T = SEQ_LEN;
    int32_t *in = malloc(B * T * sizeof *in), *am = malloc(B * T * sizeof *am),
            *tg = malloc(B * T * sizeof *tg);
    alpaca_batch(&ds, 0, B, 0, 1, in, am, tg);
    int32_t pad = (int32_t)json_integer_value(json_object_get(x, "pad_id"));
    for (int r = 0; r < B; r++)
        for (size_t t = 0; t < T; t++) {
            assert_int_equal(in[r * T + t], t < longest ? at(ids, r, t) : pad);
            assert_int_equal(am[r * T + t], t < longest ? at(mask, r, t) : 0);
            assert_int_equal(tg[r * T + t], t + 1 < longest ? at(lab, r, t + 1) : -100);
        }
    /* the next step starts again at row 0 after n_rows rows (no shuffling) */
    alpaca_batch(&ds, 1, B, 0, 1, in, am, tg);
    assert_int_equal(in[0], at(ids, 0, 0));
    free(in);
    free(am);
    free(tg);
    alpaca_dataset_free(&ds);
    json_decref(x);
}

/* the rows of 4 steps of batch 1 on each of 2 ranks over 5 records are
 * torch.utils.data.DistributedSampler(range(5), num_replicas=2, shuffle=False)'s: the indices
 * padded to 6 by repeating from the start (0 1 2 3 4 0), rank r taking every second from r, one
 * epoch after another (it took record 1 where the sampler repeats record 0) */
static void test_batches_follow_distributed_sampler(void **state)
{
    (void)state;
    enum { N = 5, T = 2 };
    int32_t ids[N * T], labels[N * T], att[N * T];
    for (int i = 0; i < N * T; i++)
        ids[i] = i / T, labels[i] = -100, att[i] = 1;
    alpaca_dataset ds = {ids, labels, att, N, T, 8};
    static const int sampler[2][4] = {{0, 2, 4, 0}, {1, 3, 0, 1}};
    for (int rank = 0; rank < 2; rank++)
        for (int step = 0; step < 4; step++) {
            int32_t in[T], am[T], tg[T];
            alpaca_batch(&ds, step, 1, rank, 2, in, am, tg);
            if (in[0] != sampler[rank][step])
                fail_msg("rank %d step %d: record %d, DistributedSampler gives %d", rank, step,
                         in[0], sampler[rank][step]);
        }
}

static const char *write_temp(const char *text, const char *suffix)
{
    const char *path = tu_temp_path(suffix);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_bad_records_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "[{\"instruction\": \"a\"}]",                              /* no output */
        "[{\"instruction\": 3, \"output\": \"b\"}]",               /* not a string */
        "[{\"instruction\": \"a\", \"input\": [], \"output\": \"b\"}]",
        "[\"text\"]",                                              /* not an object */
        "[{\"instruction\": \"a\", \"output\": \"b\"}",            /* truncated */
        "{\"instruction\": \"a\", \"output\": \"b\"}\n{\"instruction\": \"a\"\n",
        "{\"instruction\": \"a\", \"output\": \"b\"} trailing\n",
        "",                                                        /* no record */
        "[]",
        "\n  \n",
        "[{\"instruction\": \"a\\u0000b\", \"output\": \"b\"}]",    /* NUL */
        "\xef\xbb\xbf[{\"instruction\": \"a\", \"output\": \"b\"}]",   /* a BOM */
    };
    tokenizer *t = open_bpe();
    alpaca_options o = {64, 64, 0, 0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        alpaca_dataset ds;
        const char *p = write_temp(bad[i], ".json");
        assert_int_equal(alpaca_dataset_load(p, t, &o, &ds), 2);
        assert_null(ds.ids);
    }
    alpaca_options bad_len = {64, 65, 0, 0}, bad_id = {64, 64, 512, 0};
    alpaca_dataset ds;
    const char *ok = write_temp("{\"instruction\": \"a\", \"output\": \"b\"}\n", ".jsonl");
    assert_int_equal(alpaca_dataset_load(ok, t, &bad_len, &ds), 2);
    assert_int_equal(alpaca_dataset_load(ok, t, &bad_id, &ds), 2);
    assert_int_equal(alpaca_dataset_load(ok, t, &o, &ds), 0);
    assert_int_equal(ds.n_rows, 1);
    alpaca_dataset_free(&ds);
    tokenizer_free(t);
}

static void test_prompt_template(void **state)
{
    (void)state;
    alpaca_record with = {"Do {x}", "the in", "out"}, without = {"Do", "", "out"};
    char *a = alpaca_prompt(&with), *b = alpaca_prompt(&without);
    assert_string_equal(a, "Below is an instruction that describes a task, paired with an input that "
                           "provides further context. Write a response that appropriately completes "
                           "the request.\n\n### Instruction:\nDo {x}\n\n### Input:\nthe in\n\n"
                           "### Response:");
    assert_string_equal(b, "Below is an instruction that describes a task. Write a response that "
                           "appropriately completes the request.\n\n### Instruction:\nDo\n\n"
                           "### Response:");
    free(a);
    free(b);
}

static void test_special_ids(void **state)
{
    (void)state;
    tokenizer *t = open_bpe();
    int32_t id = -1;
    assert_int_equal(data_special_id(t, "eos", "<|endoftext|>", "test", &id), 0);
    assert_int_equal(id, 0);
    assert_int_equal(data_special_id(t, "eos", "two words", "test", &id), 2);
    /* the byte tokenizer has no special tokens */
    tokenizer *byte = NULL;
    assert_int_equal(tokenizer_open("byte", NULL, &byte), 0);
    assert_int_equal(data_special_id(byte, "eos", NULL, "test", &id), 2);
    assert_int_equal(data_special_id(byte, "pad", "", "test", &id), 2);
    assert_int_equal(data_special_id(byte, "pad", "\n", "test", &id), 0);
    assert_int_equal(id, '\n');
    tokenizer_free(byte);
    tokenizer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_array_matches_transformers),
        cmocka_unit_test(test_json_lines_match_transformers),
        cmocka_unit_test(test_batch_is_the_collators_shifted),
        cmocka_unit_test(test_batches_follow_distributed_sampler),
        cmocka_unit_test(test_bad_records_are_refused),
        cmocka_unit_test(test_prompt_template),
        cmocka_unit_test(test_special_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
