/* tests/test_parity.c: the cpu backend trains exactly like transformers: step-0 gradients and
 * per-step losses against fixtures made by tools/reference/train_reference.py (tests/fixtures). */
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

#include "formats/data.h"
#include "device.h"
#include "models/models.h"
#include "formats/safetensors.h"
#include "train/scenario.h"
#include "testutil.h"
#include "formats/tokenizer.h"
#include "train/train.h"
#include "util/util.h"

/* the bounds of the issue: do not loosen without measured figures */
#define MIN_COSINE 0.99999
#define MAX_REL_ERR 1e-3
#define REL_FLOOR 1e-6
#define MAX_LOSS_REL 1e-5
/* fp32 noise: transformers' own fp32 gradients miss the fp64 ones by up to 3.4e-3 relative on
 * elements near 1e-6 (docs/checkpoints.md, "Parity"); the fp32 device is held to 1e-3 on the
 * elements above 1e-3 of the tensor's largest, and to at most 3x transformers' own error */
#define NOISE_FLOOR 1e-3
#define MAX_ERR_RATIO 3.0

typedef struct {
    scenario s;
    json_t *ref;
    device *d;
    char dir[512];
} fixture;

static void fixture_open(fixture *f, const char *name, const char *dev)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", tu_source_path(name));
    char path[600];
    snprintf(path, sizeof path, "%s/scenario.json", f->dir);
    assert_int_equal(scenario_load(path, &f->s), 0);
    snprintf(path, sizeof path, "%s/reference.json", f->dir);
    json_error_t e;
    f->ref = json_load_file(path, 0, &e);
    if (!f->ref)
        fail_msg("%s: %s", path, e.text);
    char err[256];
    f->d = device_open(dev, err, sizeof err);
    if (!f->d)
        fail_msg("device %s: %s", dev, err);
}

static void fixture_close(fixture *f)
{
    device_close(f->d);
    json_decref(f->ref);
    scenario_free(&f->s);
}

static void load_data(fixture *f, dataset *ds)
{
    tokenizer *t;
    assert_int_equal(tokenizer_open(f->s.tokenizer, f->s.tokenizer_path, &t), 0);
    assert_int_equal(dataset_load_tok(f->s.data_path, t, f->s.seq_len, ds), 0);
    tokenizer_free(t);
    json_t *tok = json_object_get(f->ref, "tokens");
    char sha[65];
    sha256_hex(ds->tokens, ds->n_tokens * sizeof *ds->tokens, sha);
    assert_int_equal(ds->n_tokens, json_integer_value(json_object_get(tok, "n")));
    assert_string_equal(sha, json_string_value(json_object_get(tok, "sha256")));
}

/* the harness's initial weights are the ones transformers started from */
static void check_initial_weights(fixture *f, model *m)
{
    float *w = malloc(model_param_count(m) * sizeof *w);
    assert_non_null(w);
    assert_int_equal(model_get_weights(m, w, 0), 0);
    char sha[65];
    sha256_hex(w, model_param_count(m) * sizeof *w, sha);
    assert_string_equal(sha, json_string_value(json_object_get(f->ref, "initial_weights_sha256")));
    free(w);
}

/* HARNESS_PARITY_DUMP=DIR writes the harness's step-0 gradients as
 * DIR/<fixture>.<device>.safetensors (F64), to study differences with the reference by hand */
static void dump_grads(fixture *f, model *m, const double *g)
{
    const char *dir = getenv("HARNESS_PARITY_DUMP");
    if (!dir)
        return;
    int n = model_n_params(m);
    st_entry *e = calloc((size_t)n, sizeof *e);
    assert_non_null(e);
    for (int i = 0; i < n; i++) {
        const param_info *p = model_param(m, i);
        e[i] = (st_entry){p->name, NULL, g + p->offset, p->ndim, {p->shape[0], p->shape[1]}};
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s.safetensors", dir, f->s.name, f->d->backend);
    assert_int_equal(st_write(path, e, n, NULL), 0);
    free(e);
}

/* the fixture's gradients file laid out like the model's gradient buffer, in double */
static double *read_ref(const fixture *f, model *m, const char *file)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", f->dir, file);
    st_file ref;
    assert_int_equal(st_open(path, &ref), 0);
    assert_int_equal(ref.n, model_n_params(m));
    double *out = malloc(model_param_count(m) * sizeof *out);
    assert_non_null(out);
    for (int i = 0; i < model_n_params(m); i++) {
        const param_info *p = model_param(m, i);
        const st_tensor *t = st_find(&ref, p->name);
        if (!t || t->n != p->n)
            fail_msg("%s: tensor %s missing or of another size", path, p->name);
        assert_int_equal(st_read_f64(&ref, t, out + p->offset), 0);
    }
    st_close(&ref);
    return out;
}

/* the harness's step-0 gradients (before clipping) on f's device, in double */
static double *harness_grads(fixture *f, model *m, const dataset *ds)
{
    int B = f->s.batch_size, T = f->s.seq_len;
    int32_t *in = malloc((size_t)B * T * sizeof *in), *tg = malloc((size_t)B * T * sizeof *tg);
    double *g = malloc(model_param_count(m) * sizeof *g), loss;
    assert_true(in && tg && g);
    dataset_batch(ds, 0, B, 0, 1, in, tg);
    assert_int_equal(model_forward(m, &(model_batch){B, T, in, NULL, NULL, tg, 0, 0}, &loss), 0);
    assert_int_equal(model_backward(m), 0);
    f->d->ops->download_f64(f->d, g, model_all_grads(m));
    assert_null(device_error(f->d));
    free(in);
    free(tg);
    return g;
}

/* one tensor against a reference: cosine, max relative error over |ref| > floor, max abs */
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

/* the worst figures over all tensors, with the tensor that gave each */
typedef struct {
    double cosine, rel, rel_floor, ratio;
    const char *cos_at, *rel_at, *floor_at, *ratio_at;
} worst;

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

static worst compare_all(model *m, const double *g, const double *r32, const double *r64)
{
    worst w = {2.0, 0, 0, 0, "", "", "", ""};
    for (int i = 0; i < model_n_params(m); i++) {
        const param_info *p = model_param(m, i);
        const double *a = g + p->offset, *b = r32 + p->offset, *c = r64 + p->offset;
        tensor_cmp raw = compare(a, b, p->n, REL_FLOOR);
        tensor_cmp fl = compare(a, b, p->n, fmax(REL_FLOOR, NOISE_FLOOR * max_abs(b, p->n)));
        /* err(harness) against err(transformers fp32), both measured from the fp64 gradients */
        double e_h = compare(a, c, p->n, REL_FLOOR).abs, e_t = compare(b, c, p->n, REL_FLOOR).abs;
        track(&w, p->name, raw, fl, e_h == 0 ? 0 : e_h / e_t);
    }
    return w;
}

/* fp32 device: cosine and the relative error above the fp32 noise floor against transformers'
 * fp32 gradients, and its own error against the fp64 gradients within 3x transformers' */
static void check_fp32(const char *name, model *m, const double *g, const double *r32,
                       const double *r64)
{
    worst w = compare_all(m, g, r32, r64);
    print_message("%s step-0 gradients, cpu vs transformers fp32: worst cosine %.9f (%s), worst "
                  "max rel err %.3e above 1e-6 (%s), %.3e above the noise floor (%s); error vs "
                  "fp64 at most %.2fx transformers' own (%s)\n",
                  name, w.cosine, w.cos_at, w.rel, w.rel_at, w.rel_floor, w.floor_at, w.ratio,
                  w.ratio_at);
    assert_true(w.cosine >= MIN_COSINE);
    assert_true(w.rel_floor <= MAX_REL_ERR);
    assert_true(w.ratio <= MAX_ERR_RATIO);
}

/* fp64 device against the fp64 gradients: the bounds of the issue, exactly */
static void check_fp64(const char *name, model *m, const double *g, const double *r64)
{
    worst w = compare_all(m, g, r64, r64);
    print_message("%s step-0 gradients, cpu64 vs transformers fp64: worst cosine %.12f (%s), "
                  "worst max rel err %.3e above 1e-6 (%s)\n",
                  name, w.cosine, w.cos_at, w.rel, w.rel_at);
    assert_true(w.cosine >= MIN_COSINE);
    assert_true(w.rel <= MAX_REL_ERR);
}

static void test_step0(const char *name, const char *dev)
{
    fixture f;
    fixture_open(&f, name, dev);
    dataset ds;
    load_data(&f, &ds);
    model *m = model_create(f.s.fam, f.d, &f.s.model, f.s.batch_size, f.s.seq_len);
    assert_non_null(m);
    assert_int_equal(train_initial_weights(m, &f.s), 0);
    check_initial_weights(&f, m);
    double *g = harness_grads(&f, m, &ds);
    double *r64 = read_ref(&f, m, "grads0_fp64.safetensors");
    if (strcmp(dev, "cpu64") == 0) {
        check_fp64(f.s.name, m, g, r64);
    } else {
        double *r32 = read_ref(&f, m, "grads0.safetensors");
        check_fp32(f.s.name, m, g, r32, r64);
        free(r32);
    }
    dump_grads(&f, m, g);
    free(g);
    free(r64);
    model_free(m);
    dataset_free(&ds);
    fixture_close(&f);
}

typedef struct {
    json_t *steps;
    double worst_loss, worst_norm;
    int worst_step;
} step_check;

static int on_step(const step_record *r, void *arg)
{
    step_check *c = arg;
    json_t *row = json_array_get(c->steps, (size_t)r->step - 1);
    double loss = json_number_value(json_object_get(row, "loss"));
    double norm = json_number_value(json_object_get(row, "grad_norm"));
    double dl = fabs(r->loss - loss) / fabs(loss), dn = fabs(r->grad_norm - norm) / fabs(norm);
    if (dl > c->worst_loss) {
        c->worst_loss = dl;
        c->worst_step = r->step;
    }
    c->worst_norm = fmax(c->worst_norm, dn);
    if (dl > MAX_LOSS_REL)
        print_message("  step %d: loss %.9g, transformers %.9g (rel %.2e)\n", r->step, r->loss,
                      loss, dl);
    return 0;
}

static void test_steps(const char *name, const char *dev)
{
    fixture f;
    fixture_open(&f, name, dev);
    step_check c = {json_object_get(f.ref, "steps"), 0, 0, 0};
    int n = (int)json_array_size(c.steps);
    assert_true(n >= 20);
    train_options o = {.steps = n, .on_step = on_step, .arg = &c};
    train_result res;
    assert_int_equal(train_run(&f.s, f.d, &o, &res), 0);
    assert_int_equal(res.steps_done, n);
    print_message("%s on %s, %d steps: worst loss rel diff %.3e (step %d), worst grad norm rel diff "
                  "%.3e\n", f.s.name, dev, n, c.worst_loss, c.worst_step, c.worst_norm);
    fixture_close(&f);
    assert_true(c.worst_loss <= MAX_LOSS_REL);
}

#define A "tests/fixtures/parity-a"
#define B "tests/fixtures/parity-b"
static void test_a_step0(void **state) { (void)state; test_step0(A, "cpu"); }
static void test_a_steps(void **state) { (void)state; test_steps(A, "cpu"); }
static void test_a_golden(void **state) { (void)state; test_step0(A, "cpu64"); }
static void test_a_golden_steps(void **state) { (void)state; test_steps(A, "cpu64"); }
static void test_b_step0(void **state) { (void)state; test_step0(B, "cpu"); }
static void test_b_steps(void **state) { (void)state; test_steps(B, "cpu"); }
static void test_b_golden(void **state) { (void)state; test_step0(B, "cpu64"); }
static void test_b_golden_steps(void **state) { (void)state; test_steps(B, "cpu64"); }

int main(void)
{
    /* one thread: the figures printed do not depend on the machine, and a busy machine's
     * OpenMP spinning does not stretch a numerics test to minutes */
    omp_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_step0),  cmocka_unit_test(test_a_steps),
        cmocka_unit_test(test_a_golden), cmocka_unit_test(test_a_golden_steps),
        cmocka_unit_test(test_b_step0),  cmocka_unit_test(test_b_steps),
        cmocka_unit_test(test_b_golden), cmocka_unit_test(test_b_golden_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
