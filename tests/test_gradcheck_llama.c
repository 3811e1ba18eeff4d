/* tests/test_gradcheck_llama.c: whole-model gradient check of the llama family on the fp64 cpu
 * device (Llama with attention biases and an untied head, Qwen2 tied, Mixtral with the router aux
 * loss): analytic gradients of every parameter tensor against central finite differences. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "device.h"
#include "models/models.h"
#include "testutil.h"

enum { B = 2, T = 6, V = 13 };

/* a small config of the variant: GQA 4 query / 2 key-value heads of size 4 */
static void make_config(llama_config *c, const char *variant)
{
    json_t *j = json_pack("{s:s}", "model_type", variant);
    llama_config_defaults(c);
    assert_int_equal(llama_config_from_json(c, j, "test"), 0);
    json_decref(j);
    c->vocab_size = V;
    c->hidden_size = 16;
    c->intermediate_size = 12;
    c->num_hidden_layers = 2;
    c->num_attention_heads = 4;
    c->num_key_value_heads = 2;
    c->max_position_embeddings = 8;
    c->sliding_window = -1;
    c->initializer_range = 0.3; /* large weights so every path carries gradient */
    c->rope_theta = 100.0;
    if (strcmp(variant, "llama") == 0)
        c->attention_bias = 1;
    if (strcmp(variant, "qwen2") == 0)
        c->tie_word_embeddings = 1;
    if (strcmp(variant, "mixtral") == 0) {
        c->num_local_experts = 4;
        c->num_experts_per_tok = 2;
        c->output_router_logits = 1;
        c->router_aux_loss_coef = 0.5; /* large, so its gradient shows */
    }
    assert_int_equal(llama_config_validate(c, NULL, "test"), 0);
}

/* right-padded rows (the second shorter), labels the next token, -100 at the ends */
static void make_batch(int32_t *in, int32_t *mask, int32_t *tg, uint64_t *seed)
{
    for (int i = 0; i < B * T; i++) {
        in[i] = (int32_t)tu_uniform(seed, 0, V);
        mask[i] = !(i / T == 1 && i % T >= T - 2);
    }
    for (int i = 0; i < B * T; i++)
        tg[i] = (i % T == T - 1 || !mask[i] || !mask[i + 1]) ? -100 : in[i + 1];
}

typedef struct {
    model *m;
    device *d;
    int32_t in[B * T], mask[B * T], tg[B * T];
} setup;

static double loss_at(setup *s, double *params, size_t idx, double value)
{
    double saved = params[idx], loss = 0;
    params[idx] = value;
    s->d->ops->upload_f64(s->d, model_all_params(s->m), params);
    model_batch b = {B, T, s->in, NULL, s->mask, s->tg, 0, 0};
    assert_int_equal(model_forward(s->m, &b, &loss), 0);
    params[idx] = saved;
    return loss;
}

/* checks 3 sampled elements of every parameter tensor */
static void check_gradients(const char *variant)
{
    char err[256];
    setup s;
    s.d = device_open("cpu64", err, sizeof err);
    assert_non_null(s.d);
    model_config_u u;
    make_config(&u.llama, variant);
    s.m = model_create(model_family_find("llama"), s.d, &u, B, T);
    assert_non_null(s.m);
    assert_int_equal(model_init_weights(s.m, 7), 0);
    uint64_t seed = 11;
    make_batch(s.in, s.mask, s.tg, &seed);
    size_t np = model_param_count(s.m);
    double *params = malloc(np * sizeof *params), *grads = malloc(np * sizeof *grads);
    assert_true(params && grads);
    s.d->ops->download_f64(s.d, params, model_all_params(s.m));
    for (size_t i = 0; i < np; i++) /* non-trivial norm weights and biases too */
        params[i] += tu_uniform(&seed, -0.1, 0.1);
    s.d->ops->upload_f64(s.d, model_all_params(s.m), params);
    double loss;
    model_batch b = {B, T, s.in, NULL, s.mask, s.tg, 0, 0};
    assert_int_equal(model_forward(s.m, &b, &loss), 0);
    assert_int_equal(model_backward(s.m), 0);
    s.d->ops->download_f64(s.d, grads, model_all_grads(s.m));
    double h = 1e-5, worst = 0;
    for (int p = 0; p < model_n_params(s.m); p++) {
        const param_info *pi = model_param(s.m, p);
        for (int k = 0; k < 3; k++) {
            size_t idx = pi->offset + (size_t)tu_uniform(&seed, 0, (double)pi->n);
            double fd = (loss_at(&s, params, idx, params[idx] + h) -
                         loss_at(&s, params, idx, params[idx] - h)) / (2 * h);
            double err_rel = fabs(fd - grads[idx]) / (fabs(fd) + 1e-6);
            worst = fmax(worst, err_rel);
            /* the central difference of two losses each rounded within a few ulps of |loss|
             * carries noise up to about 8 eps |loss| / h (7e-10 here): a gradient of 1e-6 is
             * resolved no better than that, whatever the exp's last bit does */
            double noise = 8 * DBL_EPSILON * fabs(loss) / h;
            if (fabs(fd - grads[idx]) > 1e-5 * (fabs(fd) + 1e-6) + noise)
                fail_msg("%s %s[%zu]: analytic %.12g, finite difference %.12g", variant,
                         pi->name, idx - pi->offset, grads[idx], fd);
        }
    }
    printf("# %s: loss %.9f; worst relative error over %d tensors: %.3g\n", variant, loss,
           model_n_params(s.m), worst);
    free(params);
    free(grads);
    model_free(s.m);
    device_close(s.d);
}

static void test_llama(void **state) { check_gradients("llama"); }
static void test_qwen2(void **state) { check_gradients("qwen2"); }
static void test_mixtral(void **state) { check_gradients("mixtral"); }

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_llama), cmocka_unit_test(test_qwen2),
                                       cmocka_unit_test(test_mixtral)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
