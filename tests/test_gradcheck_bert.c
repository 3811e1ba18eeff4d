/* tests/test_gradcheck_bert.c: whole-model gradient check of a 2-layer BertForMaskedLM on the fp64
 * cpu device (padding, token types, ignored labels): every parameter tensor against central
 * finite differences; absent token types / attention mask equal transformers' defaults. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bert.h"
#include "device.h"
#include "testutil.h"

enum { B = 2, T = 5, V = 13, PAD = 0 };

static void make_config(bert_config *c)
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
    c->hidden_dropout_prob = c->attention_probs_dropout_prob = 0;
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
static bert *make_model(device *d, double **params, uint64_t *seed)
{
    bert_config c;
    make_config(&c);
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
    return m;
}

/* an element of parameter p that the batch can reach: position rows < T only */
static size_t sample_index(const param_info *pi, uint64_t *seed)
{
    size_t n = pi->n;
    if (strcmp(pi->name, "bert.embeddings.position_embeddings.weight") == 0)
        n = (size_t)T * (size_t)pi->shape[1];
    return pi->offset + (size_t)tu_uniform(seed, 0, (double)n);
}

/* checks 3 sampled elements of every parameter tensor */
static void test_model_gradients(void **state)
{
    char err[256];
    device *d = device_open("cpu64", err, sizeof err);
    assert_non_null(d);
    uint64_t seed = 11;
    double *params;
    bert *m = make_model(d, &params, &seed);
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
    printf("# loss %.9f; worst relative error over %d tensors: %.3g\n", loss, bert_n_params(m),
           worst);
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
    bert *m = make_model(d, &params, &seed);
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
    bert *m = make_model(d, &params, &seed);
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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_model_gradients),
                                       cmocka_unit_test(test_default_inputs),
                                       cmocka_unit_test(test_bad_ids)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
