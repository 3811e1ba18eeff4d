/* tests/test_bert_parity.c: BertForMaskedLM trains like transformers: step-0 loss and gradients
 * and 25 AdamW steps' losses against tests/fixtures/bert-a, and opencl against cpu (also with
 * dropout 0.1, whose masks every device draws alike). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <omp.h>

#include "models/bert.h"
#include "device.h"
#include "formats/safetensors.h"
#include "testutil.h"

/* the bounds of the GPT-2 parity test (tests/test_parity.c): do not loosen without figures */
#define MIN_COSINE 0.99999
#define MAX_REL_ERR 1e-3
#define REL_FLOOR 1e-6
#define MAX_LOSS_REL 1e-5
#define NOISE_FLOOR 1e-3   /* fp32: relative error counted above 1e-3 of the tensor's largest */
#define MAX_ERR_RATIO 3.0  /* fp32: error vs fp64 within 3x transformers' own fp32 error */
#define MAX_LOSS64_REL 1e-12 /* cpu64 against transformers in float64, same weights */
#define MAX_OPENCL_NMSE 1e-8 /* opencl vs cpu, every gradient tensor (docs/checkpoints.md) */
#define MAX_OPENCL_LOSS_REL 1e-5
/* opencl vs cpu training with dropout: test_opencl_train's fp32 bounds */
#define DROPOUT_STEPS 10
#define DROPOUT_LOSS_RTOL 1e-4
#define DROPOUT_NORM_RTOL 1e-3

#define FIXTURE "tests/fixtures/bert-a"

typedef struct {
    int B, T, n_steps;
    int32_t *ids, *types, *mask, *labels; /* [n_steps][B*T] each */
} batches;

typedef struct {
    bert_config c;
    batches b;
    json_t *ref;
    device *d;
    bert *m;
} fixture;

static char *fixture_path(const char *file)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_source_path(FIXTURE), file);
    return path;
}

static json_t *load_json(const char *file)
{
    json_error_t e;
    json_t *j = json_load_file(fixture_path(file), 0, &e);
    if (!j)
        fail_msg("%s: line %d: %s", fixture_path(file), e.line, e.text);
    return j;
}

static int32_t *int_column(json_t *steps, const char *key, int n_steps, int BT)
{
    int32_t *out = malloc((size_t)n_steps * BT * sizeof *out);
    assert_non_null(out);
    for (int s = 0; s < n_steps; s++) {
        json_t *a = json_object_get(json_array_get(steps, (size_t)s), key);
        assert_int_equal(json_array_size(a), BT);
        for (int i = 0; i < BT; i++)
            out[(size_t)s * BT + i] = (int32_t)json_integer_value(json_array_get(a, (size_t)i));
    }
    return out;
}

static void load_batches(batches *b)
{
    json_t *j = load_json("batches.json"), *steps = json_object_get(j, "steps");
    b->B = (int)json_integer_value(json_object_get(j, "batch_size"));
    b->T = (int)json_integer_value(json_object_get(j, "seq_len"));
    b->n_steps = (int)json_array_size(steps);
    assert_true(b->B > 0 && b->T > 0 && b->n_steps >= 1);
    int BT = b->B * b->T;
    b->ids = int_column(steps, "input_ids", b->n_steps, BT);
    b->types = int_column(steps, "token_type_ids", b->n_steps, BT);
    b->mask = int_column(steps, "attention_mask", b->n_steps, BT);
    b->labels = int_column(steps, "labels", b->n_steps, BT);
    json_decref(j);
}

/* the checkpoint's tensors by name into the model: every file tensor maps to a parameter (or is
 * one BertForMaskedLM does not use), every parameter is given exactly once, shapes agree */
static void load_weights(bert *m, const char *path)
{
    st_file f;
    assert_int_equal(st_open(path, &f), 0);
    float *host = calloc(bert_param_count(m), sizeof *host);
    int *given = calloc((size_t)bert_n_params(m), sizeof *given);
    assert_true(host && given);
    for (int i = 0; i < f.n; i++) {
        const st_tensor *t = &f.t[i];
        int alias, p = bert_param_index(m, t->name, &alias);
        if (p < 0 && bert_name_unused(t->name))
            continue;
        if (p < 0)
            fail_msg("%s: tensor %s is not a BertForMaskedLM parameter", path, t->name);
        const param_info *pi = bert_param(m, p);
        assert_int_equal(t->ndim, pi->ndim);
        for (int k = 0; k < pi->ndim; k++)
            assert_int_equal(t->shape[k], pi->shape[k]);
        assert_int_equal(st_read_f32(&f, t, host + pi->offset), 0);
        given[p]++;
    }
    for (int p = 0; p < bert_n_params(m); p++)
        if (given[p] != 1)
            fail_msg("%s: parameter %s given %d times", path, bert_param(m, p)->name, given[p]);
    assert_int_equal(bert_set_weights(m, host), 0);
    free(host);
    free(given);
    st_close(&f);
}

/* the fixture's model on dev, with both dropouts set to dropout (0: the fixture's own config) */
static void fixture_open(fixture *f, const char *dev, double dropout)
{
    memset(f, 0, sizeof *f);
    json_t *cfg = load_json("config.json");
    bert_config_defaults(&f->c);
    assert_int_equal(bert_config_from_json(&f->c, cfg, fixture_path("config.json")), 0);
    assert_int_equal(bert_config_validate(&f->c, fixture_path("config.json")), 0);
    json_decref(cfg);
    if (dropout > 0)
        f->c.hidden_dropout_prob = f->c.attention_probs_dropout_prob = dropout;
    load_batches(&f->b);
    f->ref = load_json("reference.json");
    char err[DEVICE_ERR];
    f->d = device_open(dev, err, sizeof err);
    if (!f->d) {
        if (strcmp(dev, "opencl") == 0) {
            fprintf(stderr, "skipping: no OpenCL device: %s\n", err);
            skip();
        }
        fail_msg("device %s: %s", dev, err);
    }
    f->m = bert_create(f->d, &f->c, f->b.B, f->b.T);
    assert_non_null(f->m);
    load_weights(f->m, fixture_path("model.safetensors"));
}

static void fixture_close(fixture *f)
{
    bert_free(f->m);
    device_close(f->d);
    json_decref(f->ref);
    free(f->b.ids);
    free(f->b.types);
    free(f->b.mask);
    free(f->b.labels);
}

static double forward_step(fixture *f, int s)
{
    size_t at = (size_t)s * f->b.B * f->b.T;
    double loss;
    assert_int_equal(bert_forward(f->m, f->b.ids + at, f->b.types + at, f->b.mask + at,
                                  f->b.labels + at, &loss), 0);
    return loss;
}

/* step-0 loss, and the gradients in double laid out like the model's gradient buffer */
static double *step0_grads(fixture *f, double *loss)
{
    *loss = forward_step(f, 0);
    assert_int_equal(bert_backward(f->m), 0);
    double *g = malloc(bert_param_count(f->m) * sizeof *g);
    assert_non_null(g);
    f->d->ops->download_f64(f->d, g, bert_all_grads(f->m));
    assert_null(device_error(f->d));
    return g;
}

/* a gradients file under the table's names, in double */
static double *read_ref(bert *m, const char *file)
{
    st_file ref;
    assert_int_equal(st_open(fixture_path(file), &ref), 0);
    assert_int_equal(ref.n, bert_n_params(m));
    double *out = malloc(bert_param_count(m) * sizeof *out);
    assert_non_null(out);
    for (int i = 0; i < bert_n_params(m); i++) {
        const param_info *p = bert_param(m, i);
        char name[96]; /* the table drops BertForMaskedLM's "bert." (not the head's "cls.") */
        snprintf(name, sizeof name, "%s%s", strncmp(p->name, "cls.", 4) ? "bert." : "", p->name);
        const st_tensor *t = st_find(&ref, name);
        if (!t || t->n != p->n)
            fail_msg("%s: tensor %s missing or of another size", file, name);
        assert_int_equal(st_read_f64(&ref, t, out + p->offset), 0);
    }
    st_close(&ref);
    return out;
}

/* ---- comparisons (tests/test_parity.c's) ---------------------------------------------------- */

typedef struct {
    double cosine, rel, abs;
} tensor_cmp;

static tensor_cmp compare(const double *got, const double *ref, size_t n, double floor)
{
    double dot = 0, ng = 0, nr = 0;
    tensor_cmp c = {1.0, 0.0, 0.0};
    for (size_t i = 0; i < n; i++) {
        dot += got[i] * ref[i];
        ng += got[i] * got[i];
        nr += ref[i] * ref[i];
        c.abs = fmax(c.abs, fabs(got[i] - ref[i]));
        if (fabs(ref[i]) > floor)
            c.rel = fmax(c.rel, fabs(got[i] - ref[i]) / fabs(ref[i]));
    }
    if (ng > 0 || nr > 0)
        c.cosine = dot / sqrt(ng * nr);
    return c;
}

static double max_abs(const double *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    return m;
}

typedef struct {
    double cosine, rel, rel_floor, ratio;
    const char *cos_at, *rel_at, *floor_at, *ratio_at;
    int zero; /* tensors whose gradient is 0 by construction on both sides */
} worst;

/* The key biases' gradient is 0 by construction (softmax ignores a shift of all scores): both
 * sides hold rounding noise there, with no direction to compare. A tensor is compared as zero
 * when every element is within REL_FLOOR on both sides. */
static int both_zero(const double *a, const double *b, size_t n)
{
    return max_abs(a, n) <= REL_FLOOR && max_abs(b, n) <= REL_FLOOR;
}

static void track(worst *w, const char *name, tensor_cmp raw, tensor_cmp floored, double ratio)
{
    if (raw.cosine < w->cosine)
        w->cosine = raw.cosine, w->cos_at = name;
    if (raw.rel > w->rel)
        w->rel = raw.rel, w->rel_at = name;
    if (floored.rel > w->rel_floor)
        w->rel_floor = floored.rel, w->floor_at = name;
    if (ratio > w->ratio)
        w->ratio = ratio, w->ratio_at = name;
}

static worst compare_all(bert *m, const double *g, const double *r32, const double *r64)
{
    worst w = {2.0, 0, 0, 0, "", "", "", "", 0};
    for (int i = 0; i < bert_n_params(m); i++) {
        const param_info *p = bert_param(m, i);
        const double *a = g + p->offset, *b = r32 + p->offset, *c = r64 + p->offset;
        if (both_zero(a, b, p->n)) {
            w.zero++;
            continue;
        }
        tensor_cmp raw = compare(a, b, p->n, REL_FLOOR);
        tensor_cmp fl = compare(a, b, p->n, fmax(REL_FLOOR, NOISE_FLOOR * max_abs(b, p->n)));
        double e_h = compare(a, c, p->n, REL_FLOOR).abs, e_t = compare(b, c, p->n, REL_FLOOR).abs;
        track(&w, p->name, raw, fl, e_h == 0 ? 0 : e_t == 0 ? INFINITY : e_h / e_t);
    }
    return w;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static double ref_number(const fixture *f, const char *key)
{
    json_t *v = json_object_get(f->ref, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

/* cpu64 against transformers in float64: loss, and the gradient bounds of the issue */
static void test_step0_cpu64(void **state)
{
    fixture f;
    fixture_open(&f, "cpu64", 0);
    double loss, *g = step0_grads(&f, &loss), ref = ref_number(&f, "step0_loss_fp64");
    double *r64 = read_ref(f.m, "grads0_fp64.safetensors");
    worst w = compare_all(f.m, g, r64, r64);
    print_message("bert-a step 0 on cpu64: loss %.15f, transformers fp64 %.15f (rel %.2e); "
                  "gradients: worst 1 - cosine %.2e (%s), worst max rel err %.3e above 1e-6 "
                  "(%s); %d tensors 0 on both sides\n", loss, ref, fabs(loss - ref) / ref,
                  1 - w.cosine, w.cos_at, w.rel, w.rel_at, w.zero);
    assert_true(w.zero <= f.c.num_hidden_layers); /* the key biases, no more */
    assert_true(fabs(loss - ref) / ref <= MAX_LOSS64_REL);
    assert_true(w.cosine >= MIN_COSINE);
    assert_true(w.rel <= MAX_REL_ERR);
    free(g);
    free(r64);
    fixture_close(&f);
}

/* cpu (fp32) against transformers fp32: loss within 1e-5, gradients as test_parity's fp32 */
static void test_step0_cpu(void **state)
{
    fixture f;
    fixture_open(&f, "cpu", 0);
    double loss, *g = step0_grads(&f, &loss), ref = ref_number(&f, "step0_loss_fp32");
    double *r32 = read_ref(f.m, "grads0.safetensors");
    double *r64 = read_ref(f.m, "grads0_fp64.safetensors");
    worst w = compare_all(f.m, g, r32, r64);
    print_message("bert-a step 0 on cpu: loss %.9f, transformers fp32 %.9f (rel %.2e); "
                  "gradients vs fp32: worst 1 - cosine %.2e (%s), max rel err %.3e above 1e-6 "
                  "(%s), "
                  "%.3e above the noise floor (%s); error vs fp64 at most %.2fx transformers' "
                  "own (%s); %d tensors 0 on both sides\n", loss, ref, fabs(loss - ref) / ref,
                  1 - w.cosine, w.cos_at, w.rel, w.rel_at, w.rel_floor, w.floor_at, w.ratio,
                  w.ratio_at, w.zero);
    assert_true(w.zero <= f.c.num_hidden_layers);
    assert_true(fabs(loss - ref) / ref <= MAX_LOSS_REL);
    assert_true(w.cosine >= MIN_COSINE);
    assert_true(w.rel_floor <= MAX_REL_ERR);
    assert_true(w.ratio <= MAX_ERR_RATIO);
    free(g);
    free(r32);
    free(r64);
    fixture_close(&f);
}

/* the reference's AdamW hyperparameters */
static adamw_params ref_adamw(const fixture *f)
{
    json_t *opt = json_object_get(f->ref, "optimizer");
    json_t *betas = json_object_get(opt, "betas");
    return (adamw_params){json_number_value(json_object_get(opt, "lr")),
                          json_number_value(json_array_get(betas, 0)),
                          json_number_value(json_array_get(betas, 1)),
                          json_number_value(json_object_get(opt, "eps")),
                          json_number_value(json_object_get(opt, "weight_decay")), 0};
}

/* every step: forward, backward, clip_grad_norm_, AdamW (Trainer's no-decay groups) */
static void run_steps(const char *dev)
{
    fixture f;
    fixture_open(&f, dev, 0);
    json_t *opt = json_object_get(f.ref, "optimizer"), *steps = json_object_get(f.ref, "steps");
    adamw_params p = ref_adamw(&f);
    double clip = json_number_value(json_object_get(opt, "clip")), worst = 0, worst_norm = 0;
    int n = (int)json_array_size(steps), worst_step = 0;
    assert_true(n >= 20 && n <= f.b.n_steps);
    for (int s = 0; s < n; s++) {
        json_t *row = json_array_get(steps, (size_t)s);
        double want = json_number_value(json_object_get(row, "loss"));
        double want_norm = json_number_value(json_object_get(row, "grad_norm"));
        double loss = forward_step(&f, s);
        assert_int_equal(bert_backward(f.m), 0);
        double norm = bert_grad_norm(f.m);
        if (clip > 0 && clip / (norm + 1e-6) < 1.0) /* torch's clip_grad_norm_ */
            bert_scale_grads(f.m, clip / (norm + 1e-6));
        assert_int_equal(bert_adamw_step(f.m, &p, s + 1), 0);
        double rel = fabs(loss - want) / fabs(want);
        if (rel > worst)
            worst = rel, worst_step = s + 1;
        worst_norm = fmax(worst_norm, fabs(norm - want_norm) / want_norm);
        if (rel > MAX_LOSS_REL)
            print_message("  step %d: loss %.9g, transformers %.9g (rel %.2e)\n", s + 1, loss,
                          want, rel);
    }
    print_message("bert-a on %s, %d steps: worst loss rel diff %.3e (step %d), worst grad norm "
                  "rel diff %.3e\n", dev, n, worst, worst_step, worst_norm);
    fixture_close(&f);
    assert_true(worst <= MAX_LOSS_REL);
}

static void test_steps_cpu(void **state) { run_steps("cpu"); }
static void test_steps_cpu64(void **state) { run_steps("cpu64"); }

/* opencl against cpu on the same step-0 forward and backward: loss, and every gradient
 * tensor's NMSE = sum (opencl - cpu)^2 / sum cpu^2 */
static void test_opencl_vs_cpu(void **state)
{
    fixture o, c;
    fixture_open(&o, "opencl", 0);
    fixture_open(&c, "cpu", 0);
    double lo, lc, *go = step0_grads(&o, &lo), *gc = step0_grads(&c, &lc), worst = 0;
    const char *worst_at = "";
    for (int i = 0; i < bert_n_params(c.m); i++) {
        const param_info *p = bert_param(c.m, i);
        double num = 0, den = 0;
        if (both_zero(go + p->offset, gc + p->offset, p->n))
            continue; /* the key biases: noise on both sides */
        for (size_t k = 0; k < p->n; k++) {
            double d = go[p->offset + k] - gc[p->offset + k];
            num += d * d;
            den += gc[p->offset + k] * gc[p->offset + k];
        }
        double nmse = den > 0 ? num / den : num;
        if (nmse > worst)
            worst = nmse, worst_at = p->name;
    }
    print_message("bert-a step 0, opencl vs cpu: loss %.9f vs %.9f (rel %.2e); worst gradient "
                  "NMSE %.3e (%s)\n", lo, lc, fabs(lo - lc) / lc, worst, worst_at);
    assert_true(fabs(lo - lc) / lc <= MAX_OPENCL_LOSS_REL);
    assert_true(worst <= MAX_OPENCL_NMSE);
    free(go);
    free(gc);
    fixture_close(&c);
    fixture_close(&o);
}

/* one training step s (0-based) with dropout counters (DROP_SEED, s + 1); its loss and grad norm */
#define DROP_SEED 1234
static double dropout_step(fixture *f, int s, double *norm)
{
    adamw_params p = ref_adamw(f);
    bert_set_dropout_counters(f->m, DROP_SEED, (uint32_t)s + 1);
    double loss = forward_step(f, s);
    assert_int_equal(bert_backward(f->m), 0);
    *norm = bert_grad_norm(f->m);
    assert_int_equal(bert_adamw_step(f->m, &p, s + 1), 0);
    return loss;
}

/* dropout 0.1 (hidden and attention probabilities): opencl draws cpu's masks, so 10 training
 * steps stay within the fp32 tolerance of cpu; and the dropout changes the loss */
static void test_opencl_vs_cpu_dropout(void **state)
{
    fixture o, c, plain;
    fixture_open(&o, "opencl", 0.1);
    fixture_open(&c, "cpu", 0.1);
    fixture_open(&plain, "cpu", 0);
    double worst = 0, worst_norm = 0, no, nc, l0 = forward_step(&plain, 0);
    for (int s = 0; s < DROPOUT_STEPS; s++) {
        double lo = dropout_step(&o, s, &no), lc = dropout_step(&c, s, &nc);
        if (s == 0 && !(fabs(lc - l0) > 1e-5 * l0)) /* 100x fp32 noise */
            fail_msg("dropout 0.1 did not change the step-1 loss: %.9g vs %.9g", lc, l0);
        double rel = fabs(lo - lc) / lc, nrel = fabs(no - nc) / nc;
        if (!(rel <= DROPOUT_LOSS_RTOL) || !(nrel <= DROPOUT_NORM_RTOL))
            fail_msg("step %d, dropout 0.1: opencl loss %.9g, cpu %.9g (rel %.2e); grad norm "
                     "%.9g vs %.9g (rel %.2e)", s + 1, lo, lc, rel, no, nc, nrel);
        worst = fmax(worst, rel);
        worst_norm = fmax(worst_norm, nrel);
    }
    print_message("bert-a, dropout 0.1, %d steps, opencl vs cpu: worst loss rel %.3e, worst grad "
                  "norm rel %.3e (step-1 loss without dropout %.6f)\n", DROPOUT_STEPS, worst,
                  worst_norm, l0);
    fixture_close(&plain);
    fixture_close(&c);
    fixture_close(&o);
}

int main(void)
{
    omp_set_num_threads(1); /* figures independent of the machine, and no spinning */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step0_cpu64), cmocka_unit_test(test_step0_cpu),
        cmocka_unit_test(test_steps_cpu),   cmocka_unit_test(test_steps_cpu64),
        cmocka_unit_test(test_opencl_vs_cpu),
        cmocka_unit_test(test_opencl_vs_cpu_dropout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
