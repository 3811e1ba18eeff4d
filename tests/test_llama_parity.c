/* tests/test_llama_parity.c: the llama family trains like transformers: step-0 loss, gradients and
 * (Mixtral) routing, and 25 AdamW steps' losses against tests/fixtures/{llama,qwen2,mixtral}-a. */
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

#include "device.h"
#include "formats/safetensors.h"
#include "models/llama_internal.h"
#include "models/models.h"
#include "testutil.h"

/* the bounds of the GPT-2 parity test (tests/test_parity.c): do not loosen without figures */
#define MIN_COSINE 0.99999
#define MAX_REL_ERR 1e-3
#define REL_FLOOR 1e-6
#define MAX_LOSS_REL 1e-5
#define NOISE_FLOOR 1e-3
#define MAX_ERR_RATIO 3.0
#define MAX_LOSS64_REL 1e-12
#define MAX_OPENCL_NMSE 1e-8
#define MAX_OPENCL_LOSS_REL 1e-5
/* opencl vs cpu training: test_opencl_train's fp32 bounds */
#define OPENCL_STEPS 10
#define OPENCL_LOSS_RTOL 1e-4
#define OPENCL_NORM_RTOL 1e-3

typedef struct {
    int B, T, n_steps;
    int32_t *ids, *mask, *labels; /* [n_steps][B*T] each */
} batches;

typedef struct {
    char dir[1024];
    model_config_u c;
    batches b;
    json_t *ref;
    device *d;
    model *m;
} fixture;

static const char *path_in(const fixture *f, const char *file)
{
    static char path[1200];
    snprintf(path, sizeof path, "%s/%s", f->dir, file);
    return path;
}

static json_t *load_json(const fixture *f, const char *file)
{
    json_error_t e;
    json_t *j = json_load_file(path_in(f, file), 0, &e);
    if (!j)
        fail_msg("%s: line %d: %s", path_in(f, file), e.line, e.text);
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

static void load_batches(fixture *f)
{
    batches *b = &f->b;
    json_t *j = load_json(f, "batches.json"), *steps = json_object_get(j, "steps");
    b->B = (int)json_integer_value(json_object_get(j, "batch_size"));
    b->T = (int)json_integer_value(json_object_get(j, "seq_len"));
    b->n_steps = (int)json_array_size(steps);
    assert_true(b->B > 0 && b->T > 0 && b->n_steps >= 1);
    int BT = b->B * b->T;
    b->ids = int_column(steps, "input_ids", b->n_steps, BT);
    b->mask = int_column(steps, "attention_mask", b->n_steps, BT);
    b->labels = int_column(steps, "labels", b->n_steps, BT);
    json_decref(j);
}

/* the fixture's config through the family's reader, and its initial weights through the
 * checkpoint loader (every tensor a parameter, every parameter given) */
static void fixture_open(fixture *f, const char *name, const char *dev)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", tu_source_path(name));
    const model_family *fam = model_family_find("llama");
    assert_non_null(fam);
    json_t *cfg = load_json(f, "config.json");
    fam->config_defaults(&f->c);
    assert_int_equal(fam->config_from_json(&f->c, cfg, path_in(f, "config.json")), 0);
    assert_int_equal(fam->config_validate(&f->c, cfg, path_in(f, "config.json")), 0);
    json_decref(cfg);
    load_batches(f);
    f->ref = load_json(f, "reference.json");
    char err[DEVICE_ERR];
    f->d = device_open(dev, err, sizeof err);
    if (!f->d) {
        if (strcmp(dev, "opencl") == 0) {
            fprintf(stderr, "skipping: no OpenCL device: %s\n", err);
            skip();
        }
        fail_msg("device %s: %s", dev, err);
    }
    f->m = model_create(fam, f->d, &f->c, f->b.B, f->b.T);
    assert_non_null(f->m);
    assert_int_equal(checkpoint_load(f->m, f->dir), 0);
}

static void fixture_close(fixture *f)
{
    model_free(f->m);
    device_close(f->d);
    json_decref(f->ref);
    free(f->b.ids);
    free(f->b.mask);
    free(f->b.labels);
}

static double forward_step(fixture *f, int s)
{
    size_t at = (size_t)s * f->b.B * f->b.T;
    model_batch b = {f->b.B, f->b.T, f->b.ids + at, NULL, f->b.mask + at, f->b.labels + at, 0, 0};
    double loss;
    assert_int_equal(model_forward(f->m, &b, &loss), 0);
    return loss;
}

static double *step0_grads(fixture *f, double *loss)
{
    *loss = forward_step(f, 0);
    assert_int_equal(model_backward(f->m), 0);
    double *g = malloc(model_param_count(f->m) * sizeof *g);
    assert_non_null(g);
    f->d->ops->download_f64(f->d, g, model_all_grads(f->m));
    assert_null(device_error(f->d));
    return g;
}

/* a gradients file under the checkpoint names, laid out like the gradient buffer */
static double *read_ref(fixture *f, const char *file)
{
    st_file ref;
    assert_int_equal(st_open(path_in(f, file), &ref), 0);
    assert_int_equal(ref.n, model_n_params(f->m));
    double *out = malloc(model_param_count(f->m) * sizeof *out);
    assert_non_null(out);
    for (int i = 0; i < model_n_params(f->m); i++) {
        const param_info *p = model_param(f->m, i);
        char name[128];
        model_hf_name(f->m, i, name, sizeof name);
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
    int zero;
} worst;

/* The key biases' gradient is 0 by construction (softmax ignores a shift of all scores) */
static int both_zero(const double *a, const double *b, size_t n)
{
    return max_abs(a, n) <= REL_FLOOR && max_abs(b, n) <= REL_FLOOR;
}

static worst compare_all(model *m, const double *g, const double *r32, const double *r64)
{
    worst w = {2.0, 0, 0, 0, "", "", "", "", 0};
    for (int i = 0; i < model_n_params(m); i++) {
        const param_info *p = model_param(m, i);
        const double *a = g + p->offset, *b = r32 + p->offset, *c = r64 + p->offset;
        if (both_zero(a, b, p->n)) {
            w.zero++;
            continue;
        }
        tensor_cmp raw = compare(a, b, p->n, REL_FLOOR);
        tensor_cmp fl = compare(a, b, p->n, fmax(REL_FLOOR, NOISE_FLOOR * max_abs(b, p->n)));
        double e_h = compare(a, c, p->n, REL_FLOOR).abs, e_t = compare(b, c, p->n, REL_FLOOR).abs;
        double ratio = e_h == 0 ? 0 : e_t == 0 ? INFINITY : e_h / e_t;
        if (raw.cosine < w.cosine)
            w.cosine = raw.cosine, w.cos_at = p->name;
        if (raw.rel > w.rel)
            w.rel = raw.rel, w.rel_at = p->name;
        if (fl.rel > w.rel_floor)
            w.rel_floor = fl.rel, w.floor_at = p->name;
        if (ratio > w.ratio)
            w.ratio = ratio, w.ratio_at = p->name;
    }
    return w;
}

static double ref_number(const fixture *f, const char *key)
{
    json_t *v = json_object_get(f->ref, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

/* key biases only (qwen2), none elsewhere */
static int max_zero(const fixture *f)
{
    return f->c.llama.variant == LLAMA_QWEN2 ? f->c.llama.num_hidden_layers : 0;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void step0_cpu64(const char *name)
{
    fixture f;
    fixture_open(&f, name, "cpu64");
    double loss, *g = step0_grads(&f, &loss), ref = ref_number(&f, "step0_loss_fp64");
    double *r64 = read_ref(&f, "grads0_fp64.safetensors");
    worst w = compare_all(f.m, g, r64, r64);
    print_message("%s step 0 on cpu64: loss %.15f, transformers fp64 %.15f (rel %.2e); "
                  "gradients: worst 1 - cosine %.2e (%s), worst max rel err %.3e above 1e-6 "
                  "(%s); %d tensors 0 on both sides\n", name, loss, ref, fabs(loss - ref) / ref,
                  1 - w.cosine, w.cos_at, w.rel, w.rel_at, w.zero);
    assert_true(w.zero <= max_zero(&f));
    assert_true(fabs(loss - ref) / ref <= MAX_LOSS64_REL);
    assert_true(w.cosine >= MIN_COSINE);
    assert_true(w.rel <= MAX_REL_ERR);
    free(g);
    free(r64);
    fixture_close(&f);
}

static void step0_cpu(const char *name)
{
    fixture f;
    fixture_open(&f, name, "cpu");
    double loss, *g = step0_grads(&f, &loss), ref = ref_number(&f, "step0_loss_fp32");
    double *r32 = read_ref(&f, "grads0.safetensors"), *r64 = read_ref(&f, "grads0_fp64.safetensors");
    worst w = compare_all(f.m, g, r32, r64);
    print_message("%s step 0 on cpu: loss %.9f, transformers fp32 %.9f (rel %.2e); gradients "
                  "vs fp32: worst 1 - cosine %.2e (%s), max rel err %.3e above 1e-6 (%s), %.3e "
                  "above the noise floor (%s); error vs fp64 at most %.2fx transformers' own "
                  "(%s); %d tensors 0 on both sides\n", name, loss, ref, fabs(loss - ref) / ref,
                  1 - w.cosine, w.cos_at, w.rel, w.rel_at, w.rel_floor, w.floor_at, w.ratio,
                  w.ratio_at, w.zero);
    assert_true(w.zero <= max_zero(&f));
    assert_true(fabs(loss - ref) / ref <= MAX_LOSS_REL);
    assert_true(w.cosine >= MIN_COSINE);
    assert_true(w.rel_floor <= MAX_REL_ERR);
    assert_true(w.ratio <= MAX_ERR_RATIO);
    free(g);
    free(r32);
    free(r64);
    fixture_close(&f);
}

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

/* one training step s: forward, backward, clip_grad_norm_, AdamW; its loss and grad norm */
static double train_step(fixture *f, int s, double *norm)
{
    adamw_params p = ref_adamw(f);
    double clip = json_number_value(json_object_get(json_object_get(f->ref, "optimizer"),
                                                    "clip"));
    double loss = forward_step(f, s);
    assert_int_equal(model_backward(f->m), 0);
    *norm = model_grad_norm(f->m);
    if (clip > 0 && clip / (*norm + 1e-6) < 1.0) /* torch's clip_grad_norm_ */
        model_scale_grads(f->m, clip / (*norm + 1e-6));
    assert_int_equal(model_adamw_step(f->m, &p, s + 1), 0);
    return loss;
}

static void run_steps(const char *name, const char *dev)
{
    fixture f;
    fixture_open(&f, name, dev);
    json_t *steps = json_object_get(f.ref, "steps");
    double worst = 0, worst_norm = 0;
    int n = (int)json_array_size(steps), worst_step = 0;
    assert_true(n >= 20 && n <= f.b.n_steps);
    for (int s = 0; s < n; s++) {
        json_t *row = json_array_get(steps, (size_t)s);
        double want = json_number_value(json_object_get(row, "loss"));
        double want_norm = json_number_value(json_object_get(row, "grad_norm")), norm;
        double loss = train_step(&f, s, &norm), rel = fabs(loss - want) / fabs(want);
        if (rel > worst)
            worst = rel, worst_step = s + 1;
        worst_norm = fmax(worst_norm, fabs(norm - want_norm) / want_norm);
        if (rel > MAX_LOSS_REL)
            print_message("  step %d: loss %.9g, transformers %.9g (rel %.2e)\n", s + 1, loss,
                          want, rel);
    }
    print_message("%s on %s, %d steps: worst loss rel diff %.3e (step %d), worst grad norm rel "
                  "diff %.3e\n", name, dev, n, worst, worst_step, worst_norm);
    fixture_close(&f);
    assert_true(worst <= MAX_LOSS_REL);
}

/* the experts each layer routed every token to at step 0, as transformers' router chose them */
static void routing_matches(const char *name, const char *dev)
{
    fixture f;
    fixture_open(&f, name, dev);
    forward_step(&f, 0);
    const llama *m = model_impl(f.m);
    json_t *want = json_object_get(f.ref, "step0_routing");
    int L = m->z.L, N = (int)m->z.BT, K = (int)m->z.K, differ = 0;
    assert_int_equal(json_array_size(want), L);
    int32_t *ids = malloc((size_t)N * K * sizeof *ids);
    assert_non_null(ids);
    for (int l = 0; l < L; l++) {
        f.d->ops->download_i32(f.d, ids, m->layers[l].rids);
        json_t *layer = json_array_get(want, (size_t)l);
        assert_int_equal(json_array_size(layer), N);
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++) {
                json_t *row = json_array_get(layer, (size_t)n);
                int w = (int)json_integer_value(json_array_get(row, (size_t)k));
                if (ids[(size_t)n * K + k] != w && differ++ < 5)
                    print_message("  layer %d token %d choice %d: expert %d, transformers %d\n",
                                  l, n, k, ids[(size_t)n * K + k], w);
            }
    }
    /* the per-expert counts the family reports add up to every token's K choices */
    int layers, experts;
    model_moe_shape(f.m, &layers, &experts);
    assert_int_equal(layers, L);
    int64_t *counts = calloc((size_t)layers * experts, sizeof *counts), total = 0;
    assert_non_null(counts);
    assert_int_equal(model_expert_tokens(f.m, counts), 0);
    for (int i = 0; i < layers * experts; i++)
        total += counts[i];
    for (int l = 0; l < L; l++) /* each expert's count is transformers' choices of it */
        for (int e = 0; e < experts; e++) {
            int64_t want_n = 0;
            json_t *layer = json_array_get(want, (size_t)l);
            for (int n = 0; n < N; n++)
                for (int k = 0; k < K; k++)
                    want_n += json_integer_value(json_array_get(json_array_get(layer, (size_t)n),
                                                                (size_t)k)) == e;
            if (counts[(size_t)l * experts + e] != want_n)
                fail_msg("layer %d expert %d: %lld tokens, transformers routed %lld", l, e,
                         (long long)counts[(size_t)l * experts + e], (long long)want_n);
        }
    print_message("%s on %s: %d of %d routing choices differ from transformers at step 0\n",
                  name, dev, differ, L * N * K);
    assert_int_equal(total, (int64_t)L * N * K);
    assert_int_equal(differ, 0);
    free(counts);
    free(ids);
    fixture_close(&f);
}

/* opencl against cpu: step-0 loss and every gradient's NMSE, then 10 training steps */
static void opencl_vs_cpu(const char *name)
{
    fixture o, c;
    fixture_open(&o, name, "opencl");
    fixture_open(&c, name, "cpu");
    double lo, lc, *go = step0_grads(&o, &lo), *gc = step0_grads(&c, &lc), worst = 0;
    const char *worst_at = "";
    for (int i = 0; i < model_n_params(c.m); i++) {
        const param_info *p = model_param(c.m, i);
        double num = 0, den = 0;
        if (both_zero(go + p->offset, gc + p->offset, p->n))
            continue;
        for (size_t k = 0; k < p->n; k++) {
            double d = go[p->offset + k] - gc[p->offset + k];
            num += d * d;
            den += gc[p->offset + k] * gc[p->offset + k];
        }
        double nmse = den > 0 ? num / den : num;
        if (nmse > worst)
            worst = nmse, worst_at = p->name;
    }
    print_message("%s step 0, opencl vs cpu: loss %.9f vs %.9f (rel %.2e); worst gradient NMSE "
                  "%.3e (%s)\n", name, lo, lc, fabs(lo - lc) / lc, worst, worst_at);
    assert_true(fabs(lo - lc) / lc <= MAX_OPENCL_LOSS_REL);
    assert_true(worst <= MAX_OPENCL_NMSE);
    free(go);
    free(gc);
    fixture_close(&c);
    fixture_close(&o);
    fixture_open(&o, name, "opencl");
    fixture_open(&c, name, "cpu");
    double wl = 0, wn = 0, no, nc;
    for (int s = 0; s < OPENCL_STEPS; s++) {
        double a = train_step(&o, s, &no), b = train_step(&c, s, &nc);
        wl = fmax(wl, fabs(a - b) / b);
        wn = fmax(wn, fabs(no - nc) / nc);
    }
    print_message("%s, %d steps, opencl vs cpu: worst loss rel %.3e, worst grad norm rel %.3e\n",
                  name, OPENCL_STEPS, wl, wn);
    assert_true(wl <= OPENCL_LOSS_RTOL);
    assert_true(wn <= OPENCL_NORM_RTOL);
    fixture_close(&c);
    fixture_close(&o);
}

#define FIXTURE_TESTS(tag, dir)                                                                    \
    static void tag##_step0_cpu64(void **state) { step0_cpu64(dir); }                              \
    static void tag##_step0_cpu(void **state) { step0_cpu(dir); }                                  \
    static void tag##_steps_cpu(void **state) { run_steps(dir, "cpu"); }                           \
    static void tag##_opencl(void **state) { opencl_vs_cpu(dir); }

FIXTURE_TESTS(llama, "tests/fixtures/llama-a")
FIXTURE_TESTS(qwen2, "tests/fixtures/qwen2-a")
FIXTURE_TESTS(mixtral, "tests/fixtures/mixtral-a")
static void mixtral_routing_cpu(void **state) { routing_matches("tests/fixtures/mixtral-a", "cpu"); }
static void mixtral_routing_cpu64(void **state)
{
    routing_matches("tests/fixtures/mixtral-a", "cpu64");
}
static void mixtral_routing_opencl(void **state)
{
    routing_matches("tests/fixtures/mixtral-a", "opencl");
}

int main(void)
{
    omp_set_num_threads(1); /* figures independent of the machine, and no spinning */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_step0_cpu64),   cmocka_unit_test(llama_step0_cpu),
        cmocka_unit_test(llama_steps_cpu),     cmocka_unit_test(qwen2_step0_cpu64),
        cmocka_unit_test(qwen2_step0_cpu),     cmocka_unit_test(qwen2_steps_cpu),
        cmocka_unit_test(mixtral_step0_cpu64), cmocka_unit_test(mixtral_step0_cpu),
        cmocka_unit_test(mixtral_steps_cpu),   cmocka_unit_test(mixtral_routing_cpu),
        cmocka_unit_test(mixtral_routing_cpu64), cmocka_unit_test(mixtral_routing_opencl),
        cmocka_unit_test(llama_opencl),        cmocka_unit_test(qwen2_opencl),
        cmocka_unit_test(mixtral_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
