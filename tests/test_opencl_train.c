/* tests/test_opencl_train.c: gpt2-tiny trained on opencl against cpu, without and with dropout 0.1:
 * every step's loss within rtol 1e-4 yet not bit-identical, and opencl repeats itself exactly
 * (skipped without OpenCL). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "device.h"
#include "train/scenario.h"
#include "testutil.h"
#include "train/train.h"

#define MAX_STEPS 64
#define LOSS_RTOL 1e-4
#define NORM_RTOL 1e-3

typedef struct {
    double loss[MAX_STEPS], norm[MAX_STEPS];
    int n;
} trace;

static int keep_step(const step_record *r, void *arg)
{
    trace *t = arg;
    if (t->n < MAX_STEPS) {
        t->loss[t->n] = r->loss;
        t->norm[t->n++] = r->grad_norm;
    }
    return 0;
}

/* the opencl device, or a cmocka skip saying why there is none */
static device *open_opencl(void)
{
    char err[DEVICE_ERR];
    device *d = device_open("opencl", err, sizeof err);
    if (!d) {
        fprintf(stderr, "skipping: no OpenCL device: %s\n", err);
        skip();
    }
    return d;
}

/* gpt2-tiny on d for `steps` (0: the scenario's), with embd, attn and resid dropout set to p
 * (0: the scenario's, i.e. none) */
static void train_on(device *d, int steps, double p, trace *t)
{
    scenario s;
    assert_int_equal(scenario_load(tu_source_path("scenarios/gpt2-tiny.json"), &s), 0);
    if (p > 0)
        s.model.gpt2.embd_pdrop = s.model.gpt2.attn_pdrop = s.model.gpt2.resid_pdrop = p;
    memset(t, 0, sizeof *t);
    train_options o = {.steps = steps, .on_step = keep_step, .arg = t};
    train_result res;
    int rc = train_run(&s, d, &o, &res);
    if (rc != 0)
        fail_msg("training on %s failed: %s", d->backend, res.error);
    assert_int_equal(t->n, steps > 0 ? steps : s.steps);
    scenario_free(&s);
}

/* every step of the whole scenario (40 steps) with dropout p against cpu */
static void losses_match_cpu(double p)
{
    device *ocl = open_opencl();
    char err[DEVICE_ERR];
    device *cpu = device_open("cpu", err, sizeof err);
    assert_non_null(cpu);
    static trace a, b;
    train_on(ocl, 0, p, &a);
    train_on(cpu, 0, p, &b);
    double max_abs = 0, max_rel = 0, max_norm_rel = 0;
    int differ = 0;
    for (int i = 0; i < a.n; i++) {
        double d = fabs(a.loss[i] - b.loss[i]), rel = d / fabs(b.loss[i]);
        double nrel = fabs(a.norm[i] - b.norm[i]) / fabs(b.norm[i]);
        if (!(rel <= LOSS_RTOL))
            fail_msg("step %d: opencl loss %.9g, cpu %.9g: relative difference %.3g > %g", i + 1,
                     a.loss[i], b.loss[i], rel, LOSS_RTOL);
        if (!(nrel <= NORM_RTOL))
            fail_msg("step %d: opencl grad norm %.9g, cpu %.9g: relative difference %.3g > %g",
                     i + 1, a.norm[i], b.norm[i], nrel, NORM_RTOL);
        differ += a.loss[i] != b.loss[i];
        max_abs = fmax(max_abs, d);
        max_rel = fmax(max_rel, rel);
        max_norm_rel = fmax(max_norm_rel, nrel);
    }
    printf("gpt2-tiny, dropout %g, %d steps: max |dloss| opencl - cpu = %.3g (relative %.3g), %d "
           "of %d steps differ; max relative grad-norm difference %.3g\n", p, a.n, max_abs,
           max_rel, differ, a.n, max_norm_rel);
    /* two real implementations round differently somewhere; all-equal would mean one ran twice */
    assert_true(differ > 0);
    device_close(cpu);
    device_close(ocl);
}

static void test_losses_match_cpu(void **state) { losses_match_cpu(0); }

/* dropout 0.1 everywhere: opencl draws cpu's masks (docs/ops.md), so it stays within the bounds;
 * and the dropout is on: the losses differ from a run without it */
static void test_dropout_losses_match_cpu(void **state)
{
    losses_match_cpu(0.1);
    char err[DEVICE_ERR];
    device *cpu = device_open("cpu", err, sizeof err);
    assert_non_null(cpu);
    static trace on, off;
    train_on(cpu, 3, 0.1, &on);
    train_on(cpu, 3, 0, &off);
    for (int i = 0; i < on.n; i++)
        if (!(fabs(on.loss[i] - off.loss[i]) > 1e-5 * fabs(off.loss[i])))
            fail_msg("step %d: loss with dropout 0.1 %.9g, without %.9g: dropout had no effect",
                     i + 1, on.loss[i], off.loss[i]);
    device_close(cpu);
}

/* same inputs, same outputs, with dropout on: no float atomics, fixed reduction orders, masks
 * drawn from the counters */
static void test_opencl_repeats_exactly(void **state)
{
    device *ocl = open_opencl();
    static trace a, b;
    train_on(ocl, 5, 0.1, &a);
    train_on(ocl, 5, 0.1, &b);
    for (int i = 0; i < a.n; i++) {
        if (memcmp(&a.loss[i], &b.loss[i], sizeof(double)) != 0 ||
            memcmp(&a.norm[i], &b.norm[i], sizeof(double)) != 0)
            fail_msg("step %d differs between two opencl runs: loss %.17g vs %.17g", i + 1,
                     a.loss[i], b.loss[i]);
    }
    device_close(ocl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_losses_match_cpu),
        cmocka_unit_test(test_dropout_losses_match_cpu),
        cmocka_unit_test(test_opencl_repeats_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
