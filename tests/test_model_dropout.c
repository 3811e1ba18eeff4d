/* tests/test_model_dropout.c: dropout in the models is a function of its counters: the same seed
 * and step give identical losses and gradients, another seed or step other masks, p = 0 none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "device.h"
#include "models/bert.h"
#include "models/models.h"
#include "testutil.h"

enum { B = 2, T = 6, V = 17 };

typedef struct {
    double loss;
    float *grads;
} result;

static void make_batch(int32_t *in, int32_t *tg)
{
    uint64_t seed = 5;
    for (int i = 0; i < B * T; i++)
        in[i] = (int32_t)tu_uniform(&seed, 1, V);
    for (int i = 0; i < B * T; i++)
        tg[i] = (i % T == T - 1) ? -100 : in[i + 1];
}

/* GPT-2 on cpu with every dropout p: forward and backward under (seed, step) */
static result gpt2_run(double p, uint64_t seed, uint32_t step)
{
    char err[DEVICE_ERR];
    device *d = device_open("cpu", err, sizeof err);
    assert_non_null(d);
    model_config_u u;
    gpt2_config_defaults(&u.gpt2);
    u.gpt2.vocab_size = V;
    u.gpt2.n_positions = 8;
    u.gpt2.n_embd = 16;
    u.gpt2.n_layer = 2;
    u.gpt2.n_head = 2;
    u.gpt2.attn_pdrop = u.gpt2.embd_pdrop = u.gpt2.resid_pdrop = p;
    model *m = model_create(model_family_find("gpt2"), d, &u, B, T);
    assert_non_null(m);
    assert_int_equal(model_init_weights(m, 3), 0);
    int32_t in[B * T], tg[B * T];
    make_batch(in, tg);
    result r = {0, malloc(model_param_count(m) * sizeof(float))};
    assert_non_null(r.grads);
    model_batch b = {B, T, in, NULL, NULL, tg, seed, step};
    assert_int_equal(model_forward(m, &b, &r.loss), 0);
    assert_int_equal(model_backward(m), 0);
    assert_int_equal(model_get_weights(m, r.grads, 1), 0);
    model_free(m);
    device_close(d);
    return r;
}

/* BERT on cpu with both dropouts p, the same inputs as labels everywhere */
static result bert_run(double p, uint64_t seed, uint32_t step)
{
    char err[DEVICE_ERR];
    device *d = device_open("cpu", err, sizeof err);
    assert_non_null(d);
    bert_config c;
    bert_config_defaults(&c);
    c.vocab_size = V;
    c.hidden_size = 16;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 2;
    c.intermediate_size = 32;
    c.max_position_embeddings = 8;
    c.hidden_dropout_prob = c.attention_probs_dropout_prob = p;
    bert *m = bert_create(d, &c, B, T);
    assert_non_null(m);
    assert_int_equal(bert_init_weights(m, 3), 0);
    int32_t in[B * T], tg[B * T];
    make_batch(in, tg);
    result r = {0, malloc(bert_param_count(m) * sizeof(float))};
    assert_non_null(r.grads);
    bert_set_dropout_counters(m, seed, step);
    assert_int_equal(bert_forward(m, in, NULL, NULL, in, &r.loss), 0);
    assert_int_equal(bert_backward(m), 0);
    assert_int_equal(bert_get_weights(m, r.grads, 1), 0);
    bert_free(m);
    device_close(d);
    return r;
}

static int same(result a, result b, size_t n)
{
    return a.loss == b.loss && memcmp(a.grads, b.grads, n * sizeof(float)) == 0;
}

/* the checks for one model; n = its parameter count */
static void check_counters(result (*run)(double, uint64_t, uint32_t), size_t n, const char *what)
{
    result a = run(0.1, 42, 7), again = run(0.1, 42, 7);
    result seed2 = run(0.1, 43, 7), step2 = run(0.1, 42, 8);
    result off = run(0, 42, 7), off2 = run(0, 1, 1);
    if (!same(a, again, n))
        fail_msg("%s: the same counters gave loss %.17g then %.17g", what, a.loss, again.loss);
    if (a.loss == seed2.loss || a.loss == step2.loss)
        fail_msg("%s: another seed (%.17g) or step (%.17g) left the loss %.17g", what,
                 seed2.loss, step2.loss, a.loss);
    if (a.loss == off.loss)
        fail_msg("%s: dropout 0.1 left the loss as without dropout", what);
    if (!same(off, off2, n))
        fail_msg("%s: with dropout 0 the counters changed the results", what);
    printf("# %s: loss %.9f (seed 42, step 7), %.9f (seed 43), %.9f (step 8), %.9f (p = 0)\n",
           what, a.loss, seed2.loss, step2.loss, off.loss);
    result all[] = {a, again, seed2, step2, off, off2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i].grads);
}

static void test_gpt2_counters(void **state)
{
    model_config_u u;
    gpt2_config_defaults(&u.gpt2);
    u.gpt2.vocab_size = V;
    u.gpt2.n_positions = 8;
    u.gpt2.n_embd = 16;
    u.gpt2.n_layer = 2;
    check_counters(gpt2_run, (size_t)gpt2_config_param_count(&u.gpt2), "gpt2");
}

static void test_bert_counters(void **state)
{
    char err[DEVICE_ERR];
    device *d = device_open("cpu", err, sizeof err);
    assert_non_null(d);
    bert_config c;
    bert_config_defaults(&c);
    c.vocab_size = V;
    c.hidden_size = 16;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 2;
    c.intermediate_size = 32;
    c.max_position_embeddings = 8;
    bert *m = bert_create(d, &c, B, T);
    assert_non_null(m);
    size_t n = bert_param_count(m);
    bert_free(m);
    device_close(d);
    check_counters(bert_run, n, "bert");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gpt2_counters),
                                       cmocka_unit_test(test_bert_counters)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
