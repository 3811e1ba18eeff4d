/* tests/test_bert_config.c: BertConfig keys and defaults, wrong JSON types refused by key, and the
 * checks that refuse what the harness cannot train (each by the key that causes it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "models/bert_config.h"

/* BertConfig's defaults (transformers 4.x and 5.x agree) */
static void test_defaults(void **state)
{
    bert_config c;
    bert_config_defaults(&c);
    assert_int_equal(c.vocab_size, 30522);
    assert_int_equal(c.hidden_size, 768);
    assert_int_equal(c.num_hidden_layers, 12);
    assert_int_equal(c.num_attention_heads, 12);
    assert_int_equal(c.intermediate_size, 3072);
    assert_string_equal(c.hidden_act, "gelu");
    assert_true(c.hidden_dropout_prob == 0.1 && c.attention_probs_dropout_prob == 0.1);
    assert_int_equal(c.max_position_embeddings, 512);
    assert_int_equal(c.type_vocab_size, 2);
    assert_true(c.initializer_range == 0.02 && c.layer_norm_eps == 1e-12);
    assert_int_equal(c.pad_token_id, 0);
    assert_string_equal(c.position_embedding_type, "absolute");
    assert_true(c.tie_word_embeddings && !c.is_decoder && !c.add_cross_attention);
    /* bert-base-uncased's parameter count (BertForMaskedLM, no pooler): 109,514,298 */
    assert_true(bert_config_param_count(&c) == 109514298ULL);
}

static int parse(bert_config *c, const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    assert_non_null(j);
    bert_config_defaults(c);
    int rc = bert_config_from_json(c, j, "test.json");
    json_decref(j);
    return rc;
}

static void test_reads_keys(void **state)
{
    bert_config c;
    assert_int_equal(parse(&c, "{\"vocab_size\": 512, \"hidden_size\": 64, \"hidden_act\": "
                               "\"gelu\", \"layer_norm_eps\": 1e-5, \"pad_token_id\": null, "
                               "\"tie_word_embeddings\": true, \"model_type\": \"bert\", "
                               "\"hidden_dropout_prob\": 0, \"attention_probs_dropout_prob\": 0, "
                               "\"num_attention_heads\": 4}"),
                     0);
    assert_int_equal(c.vocab_size, 512);
    assert_int_equal(c.hidden_size, 64);
    assert_true(c.layer_norm_eps == 1e-5);
    assert_int_equal(c.pad_token_id, -1);
    assert_int_equal(bert_config_validate(&c, "test.json"), 0);
}

static void test_wrong_types(void **state)
{
    bert_config c;
    assert_int_equal(parse(&c, "{\"hidden_size\": \"64\"}"), 2);
    assert_int_equal(parse(&c, "{\"layer_norm_eps\": \"x\"}"), 2);
    assert_int_equal(parse(&c, "{\"tie_word_embeddings\": 1}"), 2);
    assert_int_equal(parse(&c, "{\"hidden_act\": 3}"), 2);
    assert_int_equal(parse(&c, "{\"vocab_size\": 99999999999}"), 2);
    assert_int_equal(parse(&c, "{\"pad_token_id\": -1}"), 2);
    assert_int_equal(parse(&c, "{\"hidden_act\": \"a_name_that_is_far_too_long_to_keep\"}"), 2);
    json_t *arr = json_array();
    assert_int_equal(bert_config_from_json(&c, arr, "test.json"), 2);
    json_decref(arr);
}

/* each refusal separately, on an otherwise trainable config */
static void test_refusals(void **state)
{
    static const char *bad[] = {
        "{\"hidden_act\": \"gelu_new\"}",
        "{\"hidden_act\": \"relu\"}",
        "{\"position_embedding_type\": \"relative_key\"}",
        "{\"tie_word_embeddings\": false}",
        "{\"is_decoder\": true}",
        "{\"add_cross_attention\": true}",
        "{\"hidden_dropout_prob\": 1}",
        "{\"hidden_dropout_prob\": -0.1}",
        "{\"attention_probs_dropout_prob\": 1.5}",
        "{\"num_attention_heads\": 5}",
        "{\"hidden_size\": 0}",
        "{\"type_vocab_size\": 0}",
        "{\"pad_token_id\": 512}",
        "{\"layer_norm_eps\": 0}",
        "{\"initializer_range\": -1}",
        "{\"vocab_size\": 2000000000}",
        "{\"hidden_size\": 65536, \"num_attention_heads\": 1}",
        "{\"intermediate_size\": 2000000000}",
        "{\"num_hidden_layers\": 100000}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bert_config c;
        assert_int_equal(parse(&c, "{\"vocab_size\": 512, \"hidden_size\": 64, "
                                   "\"num_attention_heads\": 4, \"hidden_dropout_prob\": 0, "
                                   "\"attention_probs_dropout_prob\": 0}"),
                         0);
        assert_int_equal(bert_config_validate(&c, "test.json"), 0);
        json_t *j = json_loads(bad[i], 0, NULL);
        assert_non_null(j);
        assert_int_equal(bert_config_from_json(&c, j, "test.json"), 0);
        json_decref(j);
        if (bert_config_validate(&c, "test.json") != 2)
            fail_msg("%s was accepted", bad[i]);
    }
}

/* BertConfig's default dropouts (0.1), and any value in [0, 1), are accepted */
static void test_dropout_accepted(void **state)
{
    bert_config c;
    bert_config_defaults(&c);
    assert_int_equal(bert_config_validate(&c, "test.json"), 0);
    c.hidden_dropout_prob = 0.999;
    c.attention_probs_dropout_prob = 0.5;
    assert_int_equal(bert_config_validate(&c, "test.json"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults), cmocka_unit_test(test_reads_keys),
        cmocka_unit_test(test_wrong_types), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_dropout_accepted)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
