/* tests/test_gradcheck_bert.c: whole-model gradient check of a 2-layer BertForMaskedLM on the fp64
 * cpu device (padding, token types, ignored labels): every parameter tensor against central
 * finite differences, without and with dropout; absent token types / attention mask equal
 * transformers' defaults. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/bert.h"
#include "device.h"
#include "testutil.h"

enum { B = 2, T = 5, V = 13, PAD = 0 };

/* the test model with both dropouts p */
static void make_config(bert_config *c, double p)
{
    bert_config_defaults(c);
    c->vocab_size = V;
    c->hidden_size = 12;
    c->num_hidden_layers = 2;
    c->num_attention_heads = 3;
    c->intermediate_size = 20;
    c->max_position_embeddings = 8;
    c->type_vocab_size = 2;
    c->pad_token_id = PAD;
    c->initializer_range = 0.3; /* large weights so every path carries gradient */
    c->layer_norm_eps = 1e-5;
    c->hidden_dropout_prob = c->attention_probs_dropout_prob = p;
}

/* row 0 full, row 1 with its last two positions padding (id PAD, mask 0, label -100); real
 * tokens never PAD (nn.Embedding's padding_idx would make wte[PAD]'s gradient differ from the
 * true derivative there); labels on some real positions only */
typedef struct {
    int32_t ids[B * T], types[B * T], mask[B * T], labels[B * T];
} batch;

static void make_batch(batch *b, uint64_t *seed)
{
    static const int32_t types[B * T] = {0, 0, 0, 1, 1, 0, 1, 1, 0, 0};
    static const int32_t labelled[B * T] = {1, 0, 1, 1, 0, 1, 1, 0, 0, 0};
    for (int i = 0; i < B * T; i++) {
        int pad = i >= T + 3;
        b->ids[i] = pad ? PAD : (int32_t)tu_uniform(seed, 1, V);
        b->types[i] = types[i];
        b->mask[i] = !pad;
        b->labels[i] = labelled[i] ? (int32_t)tu_uniform(seed, 0, V) : -100;
    }
}

static double loss_at(bert *m, double *params, size_t idx, double value, const batch *b,
                      device *d)
{
    double saved = params[idx], loss = 0;
    params[idx] = value;
    d->ops->upload_f64(d, bert_all_params(m), params);
    assert_int_equal(bert_forward(m, b->ids, b->types, b->mask, b->labels, &loss), 0);
    params[idx] = saved;
    return loss;
}

/* a model on cpu64 with perturbed initial weights (LayerNorms and biases non-trivial too);
 * params gets the weights */
static bert *make_model(device *d, double **params, uint64_t *seed, double p)
{
    bert_config c;
    make_config(&c, p);
    assert_int_equal(bert_config_validate(&c, "test"), 0);
    bert *m = bert_create(d, &c, B, T);
    assert_non_null(m);
    assert_int_equal(bert_init_weights(m, 7), 0);
    size_t np = bert_param_count(m);
    *params = malloc(np * sizeof **params);
    assert_non_null(*params);
    d->ops->download_f64(d, *params, bert_all_params(m));
    for (size_t i = 0; i < np; i++)
        (*params)[i] += tu_uniform(seed, -0.1, 0.1);
    d->ops->upload_f64(d, bert_all_params(m), *params);
    bert_set_dropout_counters(m, 99, 3); /* fixed masks for every forward */
    return m;
}

/* an element of parameter p that the batch can reach: position rows < T only */
static size_t sample_index(const param_info *pi, uint64_t *seed)
{
    size_t n = pi->n;
    if (strcmp(pi->name, "embeddings.position_embeddings.weight") == 0)
        n = (size_t)T * (size_t)pi->shape[1];
    return pi->offset + (size_t)tu_uniform(seed, 0, (double)n);
}

/* checks 3 sampled elements of every parameter tensor, with dropout p */
static void check_gradients(double p)
{
    char err[256];
    device *d = device_open("cpu64", err, sizeof err);
    assert_non_null(d);
    uint64_t seed = 11;
    double *params;
    bert *m = make_model(d, &params, &seed, p);
    batch b;
    make_batch(&b, &seed);
    size_t np = bert_param_count(m);
    double *grads = malloc(np * sizeof *grads), loss;
    assert_non_null(grads);
    assert_int_equal(bert_forward(m, b.ids, b.types, b.mask, b.labels, &loss), 0);
    assert_int_equal(bert_backward(m), 0);
    d->ops->download_f64(d, grads, bert_all_grads(m));
    double h = 1e-5, worst = 0;
    for (int p = 0; p < bert_n_params(m); p++) {
        const param_info *pi = bert_param(m, p);
        for (int k = 0; k < 3; k++) {
            size_t idx = sample_index(pi, &seed);
            double up = loss_at(m, params, idx, params[idx] + h, &b, d);
            double dn = loss_at(m, params, idx, params[idx] - h, &b, d);
            double fd = (up - dn) / (2 * h);
            /* relative, with an absolute floor far above the differences' rounding (~1e-11):
             * the key biases' true gradient is 0 (softmax ignores a shift of every score) */
            double err_rel = fabs(fd - grads[idx]) / (fabs(fd) + 1e-4);
            worst = fmax(worst, err_rel);
            if (fabs(fd - grads[idx]) > 1e-5 * fabs(fd) + 1e-9)
                fail_msg("%s[%zu]: analytic %.12g, finite difference %.12g", pi->name,
                         idx - pi->offset, grads[idx], fd);
        }
    }
    printf("# dropout %g: loss %.9f; worst relative error over %d tensors: %.3g\n", p, loss,
           bert_n_params(m), worst);
    free(params);
    free(grads);
    bert_free(m);
    device_close(d);
}

/* NULL token types = all 0 and NULL attention mask = all 1, bit for bit */
static void test_default_inputs(void **state)
{
    char err[256];
    device *d = device_open("cpu64", err, sizeof err);
    assert_non_null(d);
    uint64_t seed = 5;
    double *params;
    bert *m = make_model(d, &params, &seed, 0);
    batch b;
    make_batch(&b, &seed);
    int32_t zeros[B * T] = {0}, ones[B * T];
    for (int i = 0; i < B * T; i++)
        ones[i] = 1;
    double with, without;
    assert_int_equal(bert_forward(m, b.ids, zeros, ones, b.labels, &with), 0);
    assert_int_equal(bert_forward(m, b.ids, NULL, NULL, b.labels, &without), 0);
    assert_true(with == without);
    assert_true(isfinite(with) && with > 0);
    free(params);
    bert_free(m);
    device_close(d);
}

/* ids outside their ranges are refused before anything runs */
static void test_bad_ids(void **state)
{
    char err[256];
    device *d = device_open("cpu64", err, sizeof err);
    assert_non_null(d);
    uint64_t seed = 3;
    double *params, loss;
    bert *m = make_model(d, &params, &seed, 0);
    batch b;
    make_batch(&b, &seed);
    b.ids[4] = V;
    assert_int_equal(bert_forward(m, b.ids, b.types, b.mask, b.labels, &loss), 1);
    b.ids[4] = 1;
    b.types[2] = 2;
    assert_int_equal(bert_forward(m, b.ids, b.types, b.mask, b.labels, &loss), 1);
    b.types[2] = 0;
    b.labels[0] = -1;
    assert_int_equal(bert_forward(m, b.ids, b.types, b.mask, b.labels, &loss), 1);
    b.labels[0] = -100;
    assert_int_equal(bert_forward(m, b.ids, b.types, b.mask, b.labels, &loss), 0);
    free(params);
    bert_free(m);
    device_close(d);
}

/* checkpoint names: the table's, the tied aliases, gamma/beta, the unused ones */
static void test_names(void **state)
{
    char err[256];
    device *d = device_open("cpu64", err, sizeof err);
    assert_non_null(d);
    uint64_t seed = 1;
    double *params;
    bert *m = make_model(d, &params, &seed, 0);
    int alias, word = bert_param_index(m, "bert.embeddings.word_embeddings.weight", &alias);
    assert_int_equal(word, 0);
    assert_int_equal(alias, 0);
    assert_int_equal(bert_param_index(m, "cls.predictions.decoder.weight", &alias), word);
    assert_int_equal(alias, 1);
    int bias = bert_param_index(m, "cls.predictions.bias", NULL);
    assert_true(bias > 0);
    assert_int_equal(bert_param_index(m, "cls.predictions.decoder.bias", NULL), bias);
    int ln = bert_param_index(m, "bert.encoder.layer.1.output.LayerNorm.weight", NULL);
    assert_true(ln > 0);
    assert_int_equal(bert_param_index(m, "bert.encoder.layer.1.output.LayerNorm.gamma", &alias),
                     ln);
    assert_int_equal(alias, 1);
    assert_int_equal(bert_param_index(m, "bert.encoder.layer.1.output.LayerNorm.beta", NULL),
                     ln + 1);
    assert_int_equal(bert_param_index(m, "bert.encoder.layer.2.output.LayerNorm.beta", NULL), -1);
    assert_int_equal(bert_param_index(m, "bert.pooler.dense.weight", NULL), -1);
    assert_true(bert_name_unused("bert.pooler.dense.weight"));
    assert_true(bert_name_unused("cls.seq_relationship.bias"));
    assert_false(bert_name_unused("cls.predictions.bias"));
    /* the shapes transformers gives */
    const param_info *q =
        bert_param(m, bert_param_index(m, "bert.encoder.layer.0.intermediate.dense.weight", NULL));
    assert_int_equal(q->shape[0], 20);
    assert_int_equal(q->shape[1], 12);
    free(params);
    bert_free(m);
    device_close(d);
}

/* _init_weights: weights normal(0, initializer_range), the pad row 0, biases 0, LayerNorm 1;
 * the same seed gives the same weights */
static void test_init(void **state)
{
    char err[256];
    device *d = device_open("cpu", err, sizeof err);
    assert_non_null(d);
    bert_config c;
    make_config(&c, 0);
    c.initializer_range = 0.02;
    bert *m = bert_create(d, &c, B, T);
    assert_non_null(m);
    size_t np = bert_param_count(m);
    float *w = malloc(np * sizeof *w), *again = malloc(np * sizeof *again);
    assert_true(w && again);
    assert_int_equal(bert_init_weights(m, 42), 0);
    assert_int_equal(bert_get_weights(m, w, 0), 0);
    assert_int_equal(bert_init_weights(m, 42), 0);
    assert_int_equal(bert_get_weights(m, again, 0), 0);
    assert_memory_equal(w, again, np * sizeof *w);
    double sum2 = 0;
    size_t n_normal = 0;
    for (int i = 0; i < bert_n_params(m); i++) {
        const param_info *p = bert_param(m, i);
        for (size_t k = 0; k < p->n; k++) {
            float v = w[p->offset + k];
            int pad_row = i == 0 && k / (size_t)c.hidden_size == (size_t)PAD;
            if (p->role == PARAM_NORM)
                assert_true(v == 1.0f);
            else if (p->role == PARAM_BIAS || pad_row)
                assert_true(v == 0.0f);
            else
                sum2 += (double)v * v, n_normal++;
        }
    }
    double std = sqrt(sum2 / (double)n_normal);
    printf("# %zu normal draws, std %.5f (initializer_range 0.02)\n", n_normal, std);
    assert_true(fabs(std - 0.02) < 0.002);
    free(w);
    free(again);
    bert_free(m);
    device_close(d);
}

static void test_model_gradients(void **state) { check_gradients(0); }
static void test_model_gradients_dropout(void **state) { check_gradients(0.1); }

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_model_gradients),
                                       cmocka_unit_test(test_model_gradients_dropout),
                                       cmocka_unit_test(test_default_inputs),
                                       cmocka_unit_test(test_bad_ids),
                                       cmocka_unit_test(test_names),
                                       cmocka_unit_test(test_init)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
