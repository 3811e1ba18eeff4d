/* tests/test_gradcheck_model.c: whole-model gradient check of a 2-layer GPT-2 on the fp64 cpu
 * device: analytic gradients of every parameter tensor against central finite differences,
 * without and with dropout (fixed counters fix the masks, so the loss is differentiable). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "device.h"
#include "models/models.h"
#include "testutil.h"

enum { B = 2, T = 5, V = 13 };
#define DROP_SEED 99 /* dropout counters of every forward here */
#define DROP_STEP 3

/* the test model with embd, attn and resid dropout p */
static void make_config(gpt2_config *c, double p)
{
    gpt2_config_defaults(c);
    c->vocab_size = V;
    c->n_positions = 8;
    c->n_embd = 12;
    c->n_layer = 2;
    c->n_head = 3;
    c->initializer_range = 0.3; /* large weights so every path carries gradient */
    c->attn_pdrop = c->embd_pdrop = c->resid_pdrop = p;
}

static void make_batch(int32_t *in, int32_t *tg, uint64_t *seed)
{
    for (int i = 0; i < B * T; i++)
        in[i] = (int32_t)tu_uniform(seed, 0, V);
    for (int i = 0; i < B * T; i++)
        tg[i] = (i % T == T - 1) ? -100 : in[i + 1];
    tg[2] = -100; /* an ignored target in the middle too */
}

static double loss_at(model *m, double *params, size_t idx, double value, const int32_t *in,
                      const int32_t *tg, device *d)
{
    double saved = params[idx], loss = 0;
    params[idx] = value;
    d->ops->upload_f64(d, model_all_params(m), params);
    model_batch b = {B, T, in, NULL, NULL, tg, DROP_SEED, DROP_STEP};
    assert_int_equal(model_forward(m, &b, &loss), 0);
    params[idx] = saved;
    return loss;
}

/* checks 3 sampled elements of every parameter tensor, with dropout p */
static void check_gradients(double p)
{
    char err[256];
    device *d = device_open("cpu64", err, sizeof err);
    assert_non_null(d);
    model_config_u u;
    make_config(&u.gpt2, p);
    const gpt2_config c = u.gpt2;
    model *m = model_create(model_family_find("gpt2"), d, &u, B, T);
    assert_non_null(m);
    assert_int_equal(model_init_weights(m, 7), 0);
    uint64_t seed = 11;
    int32_t in[B * T], tg[B * T];
    make_batch(in, tg, &seed);
    size_t np = model_param_count(m);
    double *params = malloc(np * sizeof *params), *grads = malloc(np * sizeof *grads);
    /* make the LayerNorm weights and biases non-trivial too */
    d->ops->download_f64(d, params, model_all_params(m));
    for (size_t i = 0; i < np; i++)
        params[i] += tu_uniform(&seed, -0.1, 0.1);
    d->ops->upload_f64(d, model_all_params(m), params);
    double loss;
    model_batch b = {B, T, in, NULL, NULL, tg, DROP_SEED, DROP_STEP};
    assert_int_equal(model_forward(m, &b, &loss), 0);
    assert_int_equal(model_backward(m), 0);
    d->ops->download_f64(d, grads, model_all_grads(m));
    double h = 1e-5, worst = 0;
    for (int p = 0; p < model_n_params(m); p++) {
        const param_info *pi = model_param(m, p);
        for (int k = 0; k < 3; k++) {
            size_t idx = pi->offset + (size_t)tu_uniform(&seed, 0, (double)pi->n);
            if (p == 1) /* wpe: only rows < T receive gradient */
                idx = pi->offset + (size_t)tu_uniform(&seed, 0, (double)T * c.n_embd);
            double up = loss_at(m, params, idx, params[idx] + h, in, tg, d);
            double dn = loss_at(m, params, idx, params[idx] - h, in, tg, d);
            double fd = (up - dn) / (2 * h);
            double err_rel = fabs(fd - grads[idx]) / (fabs(fd) + 1e-6);
            if (err_rel > worst)
                worst = err_rel;
            if (err_rel > 1e-5)
                fail_msg("%s[%zu]: analytic %.12g, finite difference %.12g", pi->name,
                         idx - pi->offset, grads[idx], fd);
        }
    }
    printf("# dropout %g: loss %.9f; worst relative error over %d tensors: %.3g\n", p, loss,
           model_n_params(m), worst);
    free(params);
    free(grads);
    model_free(m);
    device_close(d);
}

static void test_model_gradients(void **state) { check_gradients(0); }
static void test_model_gradients_dropout(void **state) { check_gradients(0.1); }

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_model_gradients),
                                       cmocka_unit_test(test_model_gradients_dropout)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
