/* tests/test_train.c: the training pipeline: LR schedules against transformers' formulas, the
 * data order, bit-identical repeat runs, a falling loss on the tiny scenario, diverged runs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "formats/data.h"
#include "device.h"
#include "train/scenario.h"
#include "testutil.h"
#include "train/train.h"

/* formulas of transformers.optimization: get_{constant,linear,cosine}_schedule_with_warmup */
static void test_lr_schedules(void **state)
{
    assert_float_equal(lr_multiplier("cosine", 0, 5, 40), 0.0, 1e-15);
    assert_float_equal(lr_multiplier("cosine", 2, 5, 40), 0.4, 1e-15);
    assert_float_equal(lr_multiplier("cosine", 5, 5, 40), 1.0, 1e-15);
    /* a quarter and half of the 40 decay steps: 0.5 * (1 + cos(pi/4)), 0.5 * (1 + cos(pi/2)) */
    assert_float_equal(lr_multiplier("cosine", 15, 5, 45), 0.5 + 0.25 * sqrt(2.0), 1e-12);
    assert_float_equal(lr_multiplier("cosine", 25, 5, 45), 0.5, 1e-12);
    assert_float_equal(lr_multiplier("cosine", 40, 5, 40), 0.0, 1e-15);
    assert_float_equal(lr_multiplier("linear", 3, 4, 12), 0.75, 1e-15);
    assert_float_equal(lr_multiplier("linear", 8, 4, 12), 0.5, 1e-15);
    assert_float_equal(lr_multiplier("linear", 20, 4, 12), 0.0, 1e-15);
    assert_float_equal(lr_multiplier("constant", 0, 0, 10), 1.0, 1e-15);
    assert_float_equal(lr_multiplier("constant", 1, 2, 10), 0.5, 1e-15);
    assert_float_equal(lr_multiplier("constant", 9, 2, 10), 1.0, 1e-15);
}

static void test_data_order(void **state)
{
    const char *path = tu_temp_path(".txt");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("abcdefghijklmnopqrstuvwxyz", f); /* 26 bytes: 6 blocks of 4, remainder dropped */
    fclose(f);
    dataset ds;
    assert_int_equal(dataset_load(path, "byte", 4, &ds), 0);
    assert_int_equal(ds.n_blocks, 6);
    int32_t in[8], tg[8];
    /* rank 1 of 2, step 1, batch 2: samples k=2,3 -> global 1+2*2=5, 1+3*2=7 -> 7 % 6 = 1 */
    dataset_batch(&ds, 1, 2, 1, 2, in, tg);
    assert_int_equal(in[0], 'u');
    assert_int_equal(tg[0], 'v');
    assert_int_equal(tg[3], -100);
    assert_int_equal(in[4], 'e');
    dataset_free(&ds);
    assert_int_equal(dataset_load(path, "byte", 64, &ds), 2); /* shorter than one block */
    assert_int_equal(dataset_load(path, "nosuch", 4, &ds), 2);
    assert_int_equal(dataset_load("/nonexistent/file.txt", "byte", 4, &ds), 2);
    remove(path);
}

typedef struct {
    double loss[64], norm[64];
    int n;
} trace;

static int keep_step(const step_record *r, void *arg)
{
    trace *t = arg;
    if (t->n < 64) {
        t->loss[t->n] = r->loss;
        t->norm[t->n++] = r->grad_norm;
    }
    return 0;
}

static int train_tiny(const char *dev, int steps, trace *t, train_result *res)
{
    scenario s;
    assert_int_equal(scenario_load(tu_source_path("scenarios/gpt2-tiny.json"), &s), 0);
    char err[256];
    device *d = device_open(dev, err, sizeof err);
    assert_non_null(d);
    memset(t, 0, sizeof *t);
    train_options o = {.steps = steps, .on_step = keep_step, .arg = t};
    int rc = train_run(&s, d, &o, res);
    device_close(d);
    scenario_free(&s);
    return rc;
}

static void test_repeat_runs_identical(void **state)
{
    trace a, b;
    train_result ra, rb;
    assert_int_equal(train_tiny("cpu", 8, &a, &ra), 0);
    assert_int_equal(train_tiny("cpu", 8, &b, &rb), 0);
    assert_int_equal(a.n, 8);
    assert_memory_equal(a.loss, b.loss, sizeof a.loss);
    assert_memory_equal(a.norm, b.norm, sizeof a.norm);
}

static void test_tiny_loss_falls(void **state)
{
    trace t;
    train_result r;
    assert_int_equal(train_tiny("cpu", 0, &t, &r), 0);
    assert_int_equal(r.status, TRAIN_OK);
    /* the first loss is about ln(256) = 5.55 for small initial weights */
    assert_true(fabs(t.loss[0] - log(256.0)) < 0.1);
    double last = 0;
    for (int i = t.n - 5; i < t.n; i++)
        last += t.loss[i] / 5;
    printf("# first loss %.4f, mean of the last 5 %.4f over %d steps\n", t.loss[0], last, t.n);
    assert_true(last < t.loss[0] - 1.5);
}

/* the fp64 device trains the same scenario to the same losses within fp32 noise */
static void test_cpu64_agrees(void **state)
{
    trace a, b;
    train_result ra, rb;
    assert_int_equal(train_tiny("cpu", 5, &a, &ra), 0);
    assert_int_equal(train_tiny("cpu64", 5, &b, &rb), 0);
    for (int i = 0; i < 5; i++)
        assert_true(fabs(a.loss[i] - b.loss[i]) <= 1e-4 * fabs(b.loss[i]));
}

static int stop_at_three(const step_record *r, void *arg)
{
    return r->step == 3;
}

static void test_callback_failure_ends_run(void **state)
{
    scenario s;
    assert_int_equal(scenario_load(tu_source_path("scenarios/gpt2-tiny.json"), &s), 0);
    char err[256];
    device *d = device_open("cpu", err, sizeof err);
    train_options o = {.steps = 10, .on_step = stop_at_three};
    train_result r;
    assert_int_equal(train_run(&s, d, &o, &r), 1);
    assert_int_equal(r.status, TRAIN_FAILED);
    assert_int_equal(r.steps_done, 3);
    device_close(d);
    scenario_free(&s);
}

/* --steps N makes another scenario: the stored JSON and the hash change, other fields do not */
static void test_steps_override_changes_hash(void **state)
{
    scenario s;
    assert_int_equal(scenario_load(tu_source_path("scenarios/gpt2-tiny.json"), &s), 0);
    char original[65];
    memcpy(original, s.hash, sizeof original);
    int planned = s.steps;
    assert_int_equal(scenario_override_steps(&s, planned), 0);
    assert_string_equal(s.hash, original); /* same value: same canonical document */
    assert_int_equal(scenario_override_steps(&s, 3), 0);
    assert_int_equal(s.steps, 3);
    assert_string_not_equal(s.hash, original);
    assert_non_null(strstr(s.json, "\"steps\": 3"));
    scenario_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lr_schedules),
        cmocka_unit_test(test_data_order),
        cmocka_unit_test(test_repeat_runs_identical),
        cmocka_unit_test(test_tiny_loss_falls),
        cmocka_unit_test(test_cpu64_agrees),
        cmocka_unit_test(test_callback_failure_ends_run),
        cmocka_unit_test(test_steps_override_changes_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
