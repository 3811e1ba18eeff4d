/* tests/test_verdicts.c: the error ratio (RMSE, per-step ratio, msprobe classes, k and floor), the
 * ensemble mean/std and band, and which verdict decides a comparison; values worked by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "judge/compare.h"
#include "judge/verdicts.h"

/* n steps numbered from 1 with the given losses (grad norm 1) */
static void fill(step_record *s, const double *loss, int n)
{
    memset(s, 0, sizeof *s * (size_t)n);
    for (int i = 0; i < n; i++) {
        s[i].step = i + 1;
        s[i].loss = loss[i];
        s[i].grad_norm = 1;
        s[i].tokens_per_s = NAN;
        s[i].step_ms = NAN;
        s[i].lr = NAN;
    }
}

static void test_rmse(void **state)
{
    (void)state;
    const double x[] = {3, 4};
    assert_float_equal(rmse(x, 2), sqrt(12.5), 1e-15); /* (9 + 16) / 2 */
    assert_float_equal(rmse(x, 0), 0, 0);
    const double y[] = {-2};
    assert_float_equal(rmse(y, 1), 2, 0);
}

static void test_step_ratio_and_classes(void **state)
{
    (void)state;
    assert_float_equal(step_error_ratio(1, 0.5), 2, 0);
    assert_float_equal(step_error_ratio(-1, 0.5), 2, 0);
    assert_float_equal(step_error_ratio(0, 0), 0, 0);
    assert_true(isinf(step_error_ratio(1e-300, 0)));
    assert_true(isnan(step_error_ratio(NAN, 1)));
    assert_string_equal(msprobe_class(1), "pass");
    assert_string_equal(msprobe_class(nextafter(1, 2)), "warn");
    assert_string_equal(msprobe_class(2), "warn");
    assert_string_equal(msprobe_class(nextafter(2, 3)), "fail");
    assert_string_equal(msprobe_class(NAN), "fail");
    assert_string_equal(msprobe_class(INFINITY), "fail");
}

/* G = 1 1 1, R = 1.5 0.5 1 (errors .5 -.5 0: RMSE sqrt(1/6)), D = 2 1 0 (errors 1 0 -1: RMSE
 * sqrt(2/3)): ratio sqrt(4) = 2; per step 2, 0, +Inf */
static void test_error_ratio(void **state)
{
    (void)state;
    step_record g[3], r[3], d[3];
    fill(g, (const double[]){1, 1, 1}, 3);
    fill(r, (const double[]){1.5, 0.5, 1}, 3);
    fill(d, (const double[]){2, 1, 0}, 3);
    error_ratio_result e;
    double per_step[3];
    error_ratio(d, 3, r, 3, g, 3, 3, 0, &e, per_step);
    assert_int_equal(e.compared, 3);
    assert_float_equal(e.rmse_run, sqrt(2.0 / 3), 1e-15);
    assert_float_equal(e.rmse_ref, sqrt(1.0 / 6), 1e-15);
    assert_float_equal(e.ratio, 2, 1e-12);
    assert_true(e.passed); /* sqrt(2/3) <= 3 sqrt(1/6) */
    assert_string_equal(e.msprobe, "warn");
    assert_float_equal(per_step[0], 2, 0);
    assert_float_equal(per_step[1], 0, 0);
    assert_true(isinf(per_step[2]));
    assert_int_equal(e.max_step, 3);
    /* k 1.5: 2 sqrt(1/6) > 1.5 sqrt(1/6), and a floor of 0.5 sqrt(1/6) brings it back to pass */
    error_ratio(d, 3, r, 3, g, 3, 1.5, 0, &e, NULL);
    assert_false(e.passed);
    error_ratio(d, 3, r, 3, g, 3, 1.5, 0.5 * sqrt(1.0 / 6) + 1e-15, &e, NULL);
    assert_true(e.passed);
    /* the golden lacks step 2: steps 1 and 3 only (errors 1, -1 and .5, 0) */
    step_record g2[2];
    fill(g2, (const double[]){1, 1}, 2);
    g2[1].step = 3;
    error_ratio(d, 3, r, 3, g2, 2, 3, 0, &e, per_step);
    assert_int_equal(e.compared, 2);
    assert_float_equal(e.rmse_run, 1, 1e-15);
    assert_float_equal(e.rmse_ref, sqrt(0.125), 1e-15);
    assert_true(isnan(per_step[1]));
    /* a run equal to the golden: ratio 0, pass even with a reference equal to it too */
    error_ratio(g, 3, g, 3, g, 3, 3, 0, &e, NULL);
    assert_float_equal(e.ratio, 0, 0);
    assert_true(e.passed);
    /* a NaN loss in the run: RMSE +Inf, fail */
    d[1].loss = NAN;
    error_ratio(d, 3, r, 3, g, 3, 3, 1, &e, NULL);
    assert_true(isinf(e.rmse_run));
    assert_false(e.passed);
    /* nothing in common */
    error_ratio(d, 3, r, 3, g, 0, 3, 0, &e, NULL);
    assert_int_equal(e.compared, 0);
    assert_false(e.passed);
}

/* three members: step 1 losses 1 2 3 (mean 2, sample std 1), step 2 all 4 (std 0); the third
 * lacks step 3, which is left out */
static void test_ensemble_stats(void **state)
{
    (void)state;
    step_record a[3], b[3], c[2];
    fill(a, (const double[]){1, 4, 7}, 3);
    fill(b, (const double[]){2, 4, 7}, 3);
    fill(c, (const double[]){3, 4}, 2);
    const step_record *runs[] = {a, b, c};
    int n[] = {3, 3, 2}, steps[3], kept;
    double mean[3], std[3];
    assert_int_equal(ensemble_stats(runs, n, 3, steps, mean, std, &kept), 0);
    assert_int_equal(kept, 2);
    assert_int_equal(steps[0], 1);
    assert_float_equal(mean[0], 2, 0);
    assert_float_equal(std[0], 1, 0); /* ((1-2)^2 + 0 + (3-2)^2) / (3 - 1) */
    assert_int_equal(steps[1], 2);
    assert_float_equal(mean[1], 4, 0);
    assert_float_equal(std[1], 0, 0);
    assert_int_equal(ensemble_stats(runs, n, 1, steps, mean, std, &kept), -1);
    assert_int_equal(ensemble_stats(runs, n, ENSEMBLE_MAX_RUNS + 1, steps, mean, std, &kept), -1);
}

static void test_ensemble_band(void **state)
{
    (void)state;
    /* mean 2, std 1, k 3: |x - 2| <= 3 */
    assert_true(within_ensemble_band(5, 2, 1, 3, 0));
    assert_true(within_ensemble_band(-1, 2, 1, 3, 0));
    assert_false(within_ensemble_band(nextafter(5, 6), 2, 1, 3, 0));
    /* std 0: only the floor */
    assert_true(within_ensemble_band(4.5, 4, 0, 3, 0.5));
    assert_false(within_ensemble_band(4.5, 4, 0, 3, 0.25));
    assert_false(within_ensemble_band(NAN, 4, 1, 3, 1));
    assert_false(within_ensemble_band(4, 4, NAN, 3, 1));

    step_record base[2], run[2];
    fill(base, (const double[]){2, 4}, 2);
    const double std[] = {1, 0};
    fill(run, (const double[]){4.5, 4}, 2); /* step 1: 2.5 std (z 2.5) */
    ensemble_result r;
    ensemble_check(run, 2, base, std, 2, 3, 3, 0, &r);
    assert_int_equal(r.compared, 2);
    assert_int_equal(r.failed, 0);
    assert_float_equal(r.max_z, 2.5, 0);
    assert_int_equal(r.max_z_step, 1);
    ensemble_check(run, 2, base, std, 2, 3, 2, 0, &r); /* k 2: step 1 out */
    assert_int_equal(r.failed, 1);
    assert_int_equal(r.first_fail, 1);
    assert_float_equal(r.first_fail_mean, 2, 0);
    run[1].loss = 4.25; /* std 0 at step 2: +Inf z, out unless the floor covers it */
    ensemble_check(run, 2, base, std, 2, 3, 3, 0, &r);
    assert_int_equal(r.failed, 1);
    assert_int_equal(r.first_fail, 2);
    assert_true(isinf(r.max_z));
    ensemble_check(run, 2, base, std, 2, 3, 3, 0.25, &r);
    assert_int_equal(r.failed, 0);
    /* a recorded NaN or Inf mean (members that diverged) is compared and fails; a mean never
     * recorded is left out */
    base[0].loss = NAN;
    ensemble_check(run, 2, base, std, 2, 3, 3, 0.25, &r);
    assert_int_equal(r.compared, 2);
    assert_int_equal(r.failed, 1);
    assert_int_equal(r.first_fail, 1);
    base[0].loss = INFINITY;
    ensemble_check(run, 2, base, std, 2, 3, 3, 0.25, &r);
    assert_int_equal(r.failed, 1);
    base[0].unrecorded |= STEP_NO_LOSS;
    ensemble_check(run, 2, base, std, 2, 3, 3, 0.25, &r);
    assert_int_equal(r.compared, 1);
    assert_int_equal(r.failed, 0);
}

static void test_gate_names(void **state)
{
    (void)state;
    verdict_gate g = GATE_BAND;
    assert_int_equal(gate_parse("error_ratio", &g), 0);
    assert_int_equal(g, GATE_ERROR_RATIO);
    assert_int_equal(gate_parse("ensemble", &g), 0);
    assert_int_equal(g, GATE_ENSEMBLE);
    assert_int_equal(gate_parse("Band", &g), -1);
    assert_int_equal(gate_parse("", &g), -1);
    assert_int_equal(gate_parse(NULL, &g), -1);
    assert_string_equal(gate_name(GATE_BAND), "band");
}

/* the same run judged three ways: it fails the fp32 band (|diff| .1 at step 1) but its error to
 * the golden is no worse than the baseline's, and it lies in the ensemble's band */
static void test_gate_decides(void **state)
{
    (void)state;
    step_record g[2], base[2], run[2];
    fill(g, (const double[]){2.0, 1.0}, 2);
    fill(base, (const double[]){2.1, 1.0}, 2);
    fill(run, (const double[]){2.0, 1.1}, 2);
    series rs = {run, 2, "ok"}, bs = {base, 2, "ok"}, gs = {g, 2, "ok"};
    const double std[] = {0.1, 0.1};
    compare_config c;
    compare_defaults("fp32", &c);
    compare_extras x = {&gs, std, 3};
    compare_result o;
    compare_runs_judged(&rs, &bs, NULL, NULL, &x, &c, &o);
    assert_int_equal(o.v, VERDICT_FAIL); /* the band decides by default */
    assert_true(o.band_failed);
    assert_true(o.has_golden);
    assert_float_equal(o.error_ratio.ratio, 1, 1e-12); /* errors 0, .1 vs .1, 0 */
    assert_true(o.error_ratio.passed);
    c.gate = GATE_ERROR_RATIO;
    compare_runs_judged(&rs, &bs, NULL, NULL, &x, &c, &o);
    assert_int_equal(o.v, VERDICT_PASS);
    assert_int_equal(o.first_fail_step, 0);
    c.gate = GATE_ENSEMBLE; /* |2.0 - 2.1| = 1 std, |1.1 - 1.0| = 1 std: within 3 */
    compare_runs_judged(&rs, &bs, NULL, NULL, &x, &c, &o);
    assert_int_equal(o.v, VERDICT_PASS);
    c.ensemble_k = 0.5; /* now out at step 1 */
    c.ensemble_floor = 0;
    compare_runs_judged(&rs, &bs, NULL, NULL, &x, &c, &o);
    assert_int_equal(o.v, VERDICT_FAIL);
    assert_int_equal(o.first_fail_step, 1);
    assert_non_null(strstr(o.reason, "ensemble mean"));
    /* a gate without its input fails, saying why */
    c.gate = GATE_ERROR_RATIO;
    compare_runs_judged(&rs, &bs, NULL, NULL, NULL, &c, &o);
    assert_int_equal(o.v, VERDICT_FAIL);
    assert_non_null(strstr(o.reason, "no golden"));
    c.gate = GATE_ENSEMBLE;
    compare_runs_judged(&rs, &bs, NULL, NULL, NULL, &c, &o);
    assert_int_equal(o.v, VERDICT_FAIL);
    assert_non_null(strstr(o.reason, "not an ensemble"));
    /* a NaN still makes it diverged, whichever gate */
    run[1].loss = NAN;
    c.gate = GATE_ERROR_RATIO;
    compare_runs_judged(&rs, &bs, NULL, NULL, &x, &c, &o);
    assert_int_equal(o.v, VERDICT_DIVERGED);
}

static void test_defaults(void **state)
{
    (void)state;
    compare_config c;
    compare_defaults("bf16", &c);
    assert_int_equal(c.gate, GATE_BAND);
    assert_float_equal(c.error_ratio_k, 3, 0);
    assert_float_equal(c.ensemble_k, 3, 0);
    assert_float_equal(c.error_ratio_floor, c.loss.atol, 0);
    assert_float_equal(c.ensemble_floor, c.loss.atol, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmse),
        cmocka_unit_test(test_step_ratio_and_classes),
        cmocka_unit_test(test_error_ratio),
        cmocka_unit_test(test_ensemble_stats),
        cmocka_unit_test(test_ensemble_band),
        cmocka_unit_test(test_gate_names),
        cmocka_unit_test(test_gate_decides),
        cmocka_unit_test(test_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
