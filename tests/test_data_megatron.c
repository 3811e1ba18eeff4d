/* tests/test_data_megatron.c: Megatron binarized datasets against tools/make_megatron_fixture.py: the
 * numpy-written .bin/.idx read back, GPTDataset samples, blending indices, the batch, bad indexes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "formats/data_gpt.h"
#include "formats/data_mmidx.h"
#include "testutil.h"

static json_t *expected(void)
{
    json_error_t e;
    json_t *x = json_load_file(tu_source_path("tests/data/megatron/megatron_expected.json"), 0, &e);
    assert_non_null(x);
    return x;
}

static char *prefix(const char *name)
{
    static char buf[2][4200];
    static int k;
    char *p = buf[k++ % 2];
    snprintf(p, sizeof buf[0], "%s", tu_source_path(name));
    return p;
}

/* every document's ids, in order, in a dataset of the given dtype */
static void check_documents(const char *name, int dtype, int reversed, json_t *docs)
{
    mmidx m;
    assert_int_equal(mmidx_open(prefix(name), &m), 0);
    assert_int_equal(m.dtype, dtype);
    size_t n = json_array_size(docs);
    assert_int_equal(m.n_seqs, n);
    assert_int_equal(m.n_doc_idx, n + 1);
    uint64_t pos = 0;
    for (size_t d = 0; d < n; d++) {
        json_t *ids = json_array_get(docs, reversed ? n - 1 - d : d);
        assert_int_equal(m.sizes[d], json_array_size(ids));
        for (size_t t = 0; t < json_array_size(ids); t++, pos++)
            assert_int_equal(mmidx_token_at(&m, pos), json_integer_value(json_array_get(ids, t)));
    }
    assert_int_equal(pos, m.n_tokens);
    mmidx_close(&m);
}

static void test_numpy_written_files_read_back(void **state)
{
    (void)state;
    json_t *x = expected(), *docs = json_object_get(x, "documents");
    check_documents("tests/data/megatron/docs_text_document", MMIDX_U16, 0, docs);
    check_documents("tests/data/megatron/wide_text_document", MMIDX_I32, 1, docs);
    json_decref(x);
}

/* GPTDataset's samples (two epochs and more), each seq_len + 1 tokens */
static void check_samples(const char *name, json_t *samples, int seq_len)
{
    const char *p[1] = {prefix(name)};
    double w[1] = {1.0};
    gpt_data g;
    assert_int_equal(gpt_data_open(&g, p, w, 1, seq_len), 0);
    int32_t *out = malloc(((size_t)seq_len + 1) * sizeof *out);
    for (size_t j = 0; j < json_array_size(samples); j++) {
        gpt_sample(&g, 0, j, out);
        json_t *s = json_array_get(samples, j);
        for (int t = 0; t <= seq_len; t++)
            assert_int_equal(out[t], json_integer_value(json_array_get(s, (size_t)t)));
    }
    free(out);
    gpt_data_close(&g);
}

static void test_samples_match_gpt_dataset(void **state)
{
    (void)state;
    json_t *x = expected();
    int T = (int)json_integer_value(json_object_get(x, "seq_len"));
    check_samples("tests/data/megatron/docs_text_document", json_object_get(x, "samples"), T);
    check_samples("tests/data/megatron/wide_text_document", json_object_get(x, "wide_samples"), T);
    json_decref(x);
}

static void test_blending_matches_megatron_rule(void **state)
{
    (void)state;
    json_t *x = expected(), *b = json_object_get(x, "blend");
    json_t *idx = json_object_get(b, "dataset_index"), *smp = json_object_get(b, "dataset_sample_index");
    const char *p[3] = {prefix("tests/data/megatron/docs_text_document"),
                        prefix("tests/data/megatron/wide_text_document"), NULL};
    p[2] = p[0];
    double w[3];
    for (size_t d = 0; d < 3; d++)
        w[d] = json_number_value(json_array_get(json_object_get(b, "weights"), d));
    gpt_data g;
    assert_int_equal(gpt_data_open(&g, p, w, 3, 16), 0);
    for (size_t i = 0; i < json_array_size(idx); i++) {
        int d;
        uint64_t j;
        gpt_blend_pick(&g, i, &d, &j);
        assert_int_equal(d, json_integer_value(json_array_get(idx, i)));
        assert_int_equal(j, json_integer_value(json_array_get(smp, i)));
    }
    int d; /* an earlier sample replays from the start: the same answer */
    uint64_t j;
    gpt_blend_pick(&g, 57, &d, &j);
    assert_int_equal(d, json_integer_value(json_array_get(idx, 57)));
    assert_int_equal(j, json_integer_value(json_array_get(smp, 57)));
    gpt_data_close(&g);
    json_decref(x);
}

/* the batch: global sample step*B + i, inputs its first seq_len tokens, targets the rest */
static void test_batch_inputs_and_shifted_targets(void **state)
{
    (void)state;
    json_t *x = expected(), *samples = json_object_get(x, "samples");
    const char *p[1] = {prefix("tests/data/megatron/docs_text_document")};
    double w[1] = {2.0};
    gpt_data g;
    assert_int_equal(gpt_data_open(&g, p, w, 1, 16), 0);
    int32_t in[4 * 16], tg[4 * 16], tmp[17];
    gpt_data_batch(&g, 3, 4, 0, 1, in, tg, tmp);
    for (int i = 0; i < 4; i++) {
        json_t *s = json_array_get(samples, (size_t)(12 + i));
        for (int t = 0; t < 16; t++) {
            assert_int_equal(in[i * 16 + t], json_integer_value(json_array_get(s, (size_t)t)));
            assert_int_equal(tg[i * 16 + t], json_integer_value(json_array_get(s, (size_t)t + 1)));
        }
    }
    gpt_data_close(&g);
    json_decref(x);
}

/* a valid index of 2 sequences (sizes 3 and 2, uint16) to break in each test */
static size_t good_index(unsigned char *b)
{
    memset(b, 0, 128);
    memcpy(b, MMIDX_MAGIC, 9);
    b[9] = 1;
    b[17] = MMIDX_U16;
    b[18] = 2;
    b[26] = 3;
    b[34] = 3;       /* sizes */
    b[38] = 2;
    b[42 + 8] = 6;   /* pointers 0, 6 */
    b[58 + 8] = 1;   /* doc_idx 0, 1, 2 */
    b[58 + 16] = 2;
    return 58 + 24;
}

static int parse(const unsigned char *b, size_t len, uint64_t bin_len)
{
    mmidx m;
    char why[256];
    int rc = mmidx_parse(b, len, bin_len, &m, why, sizeof why);
    if (rc == 0) {
        assert_int_equal(m.n_tokens, 5);
        mmidx_close(&m); /* nothing mapped: frees the arrays */
    } else {
        assert_true(why[0] != 0);
    }
    return rc;
}

static void test_bad_indexes_are_refused(void **state)
{
    (void)state;
    unsigned char b[128];
    size_t n = good_index(b);
    assert_int_equal(parse(b, n, 10), 0);
    assert_int_equal(parse(b, n, 9), 2);              /* the second sequence past the .bin */
    assert_int_equal(parse(b, n - 1, 10), 2);         /* truncated */
    assert_int_equal(parse(b, n + 8, 10), 2);         /* trailing bytes */
    assert_int_equal(parse(b, 20, 10), 2);            /* shorter than the header */
    struct { size_t at; unsigned char v; } breaks[] = {
        {0, 'X'},          /* magic */
        {9, 2},            /* version */
        {17, MMIDX_F64},   /* a float dtype */
        {17, 9},           /* unknown dtype */
        {25, 0x40},        /* n_seqs overflows */
        {33, 0x80},        /* n_doc_idx overflows */
        {37, 0x80},        /* a negative size */
        {57, 0x80},        /* a negative pointer */
        {56, 0x7f},        /* a pointer far outside */
        {58, 1},           /* doc_idx not starting at 0 */
        {66, 3},           /* doc_idx decreasing */
        {74, 1},           /* doc_idx not ending at n_seqs */
    };
    for (size_t i = 0; i < sizeof breaks / sizeof breaks[0]; i++) {
        good_index(b);
        b[breaks[i].at] = breaks[i].v;
        assert_int_equal(parse(b, n, 10), 2);
    }
}

static void test_missing_and_short_datasets_are_refused(void **state)
{
    (void)state;
    mmidx m;
    assert_int_equal(mmidx_open(tu_source_path("tests/data/megatron/absent"), &m), 2);
    const char *p[1] = {prefix("tests/data/megatron/docs_text_document")};
    double w[1] = {1.0}, zero[1] = {0.0};
    gpt_data g;
    assert_int_equal(gpt_data_open(&g, p, w, 1, 259), 2); /* 259 tokens: no sample of 260 */
    assert_int_equal(gpt_data_open(&g, p, zero, 1, 16), 2);
    assert_int_equal(gpt_data_open(&g, p, w, 1, 258), 0);
    gpt_data_close(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numpy_written_files_read_back),
        cmocka_unit_test(test_samples_match_gpt_dataset),
        cmocka_unit_test(test_blending_matches_megatron_rule),
        cmocka_unit_test(test_batch_inputs_and_shifted_targets),
        cmocka_unit_test(test_bad_indexes_are_refused),
        cmocka_unit_test(test_missing_and_short_datasets_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
