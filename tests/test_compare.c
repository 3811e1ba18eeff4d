/* tests/test_compare.c: the tolerance arithmetic (edges, NaN, Inf, zero reference), per-metric
 * summaries, every verdict and its exit code, the throughput/memory gates and the history rule. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "judge/compare.h"
#include "judge/history.h"
#include "util/json_util.h"

static const tolerance T = {1e-4, 1e-6};

static void test_tolerance_edges(void **state)
{
    /* exactly on the band's edge passes, the next double beyond it fails (dyadic values, so
     * the arithmetic is exact): band = 0.125 + 0.25 * 2 = 0.625 */
    tolerance d = {0.25, 0.125};
    assert_true(within_tolerance(2.625, 2.0, d));
    assert_true(within_tolerance(1.375, 2.0, d));
    assert_false(within_tolerance(nextafter(2.625, 10), 2.0, d));
    assert_false(within_tolerance(nextafter(1.375, 0), 2.0, d));
    /* the fp32 defaults: 1e-6 + 1e-4 * 2 = 2.01e-4 */
    assert_true(within_tolerance(2.0002, 2.0, T));
    assert_false(within_tolerance(2.000202, 2.0, T));
    /* negative references use |ref| */
    assert_true(within_tolerance(-2.0002, -2.0, T));
    assert_false(within_tolerance(-2.00021, -2.0, T));
    /* equal values always pass, even with zero tolerances */
    assert_true(within_tolerance(3.5, 3.5, (tolerance){0, 0}));
    assert_false(within_tolerance(3.5, nextafter(3.5, 4), (tolerance){0, 0}));
}

static void test_tolerance_zero_reference(void **state)
{
    /* a zero reference leaves only atol */
    assert_true(within_tolerance(0.0, 0.0, T));
    assert_true(within_tolerance(1e-6, 0.0, T));
    assert_false(within_tolerance(1.1e-6, 0.0, T));
    assert_true(within_tolerance(-0.0, 0.0, (tolerance){1e-4, 0}));
    assert_false(within_tolerance(1e-300, 0.0, (tolerance){1e-4, 0}));
    assert_float_equal(rel_diff(0, 0), 0, 0);
    assert_true(isinf(rel_diff(1e-9, 0)));
    assert_float_equal(rel_diff(3, 2), 0.5, 1e-15);
    assert_float_equal(rel_diff(-3, -2), 0.5, 1e-15);
}

static void test_tolerance_nonfinite(void **state)
{
    assert_false(within_tolerance(NAN, 1.0, T));
    assert_false(within_tolerance(1.0, NAN, T));
    assert_false(within_tolerance(NAN, NAN, T));
    assert_false(within_tolerance(INFINITY, INFINITY, T));
    assert_false(within_tolerance(INFINITY, 1.0, T));
    assert_false(within_tolerance(-INFINITY, 1.0, T));
    /* a difference that overflows fails instead of comparing inf <= inf */
    assert_false(within_tolerance(1.7e308, -1.7e308, (tolerance){INFINITY, 0}));
    assert_true(isnan(rel_diff(NAN, 1)));
}

static void test_defaults_per_dtype(void **state)
{
    compare_config c;
    assert_int_equal(compare_defaults("fp32", &c), 0);
    assert_float_equal(c.loss.rtol, 1e-4, 0);
    assert_true(c.min_throughput_ratio < 0 && c.max_memory_ratio < 0 && c.warmup < 0);
    compare_config b, h, d;
    assert_int_equal(compare_defaults("bf16", &b), 0);
    assert_int_equal(compare_defaults("fp16", &h), 0);
    assert_int_equal(compare_defaults("fp64", &d), 0);
    assert_true(b.loss.rtol > h.loss.rtol && h.loss.rtol > c.loss.rtol && c.loss.rtol > d.loss.rtol);
    assert_int_equal(compare_defaults("fp8", &c), -1);
    assert_float_equal(c.loss.rtol, 1e-4, 0);
    assert_string_equal(looser_dtype("fp64", "fp32"), "fp32");
    assert_string_equal(looser_dtype("bf16", "fp32"), "bf16");
    assert_string_equal(looser_dtype("fp32", "fp16"), "fp16");
    assert_string_equal(looser_dtype("fp64", "fp64"), "fp64");
    assert_int_equal(default_warmup(0), 0);
    assert_int_equal(default_warmup(1), 0);
    assert_int_equal(default_warmup(5), 1);
    assert_int_equal(default_warmup(40), 4);
    assert_int_equal(default_warmup(10000), 10);
}

static void test_median(void **state)
{
    double a[] = {5, 1, 4, 2, 3};
    assert_float_equal(median_inplace(a, 5), 3, 0);
    double b[] = {10, 2, 8, 4};
    assert_float_equal(median_inplace(b, 4), 6, 0);
    double c[] = {7, 7, 7, 1, 7, 7};
    assert_float_equal(median_inplace(c, 6), 7, 0);
    double one[] = {42};
    assert_float_equal(median_inplace(one, 1), 42, 0);
    assert_true(isnan(median_inplace(NULL, 0)));
    /* against a sort on random data of every length up to 60 */
    uint64_t s = 12345;
    for (int n = 1; n <= 60; n++) {
        double x[60], y[60];
        for (int i = 0; i < n; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            x[i] = y[i] = (double)(s >> 40 & 15); /* many ties */
        }
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && y[j - 1] > y[j]; j--) {
                double t = y[j];
                y[j] = y[j - 1];
                y[j - 1] = t;
            }
        double want = n % 2 ? y[n / 2] : (y[n / 2 - 1] + y[n / 2]) / 2;
        assert_float_equal(median_inplace(x, n), want, 0);
    }
}

/* ---- whole comparisons on synthetic runs ---- */
#define N 20
static step_record run_steps[N], base_steps[N];

static void make_steps(step_record *s, int n, double tps, int64_t mem)
{
    for (int i = 0; i < n; i++) {
        memset(&s[i], 0, sizeof s[i]);
        s[i].step = i + 1;
        s[i].loss = 5.0 - 0.1 * i;
        s[i].grad_norm = 1.0 + 0.01 * i;
        s[i].lr = 1e-3;
        s[i].tokens = 512;
        s[i].tokens_per_s = i == 0 ? tps / 10 : tps; /* a slow first step */
        s[i].step_ms = 512 / s[i].tokens_per_s * 1e3;
        s[i].mem_peak_bytes = mem;
    }
}

static compare_config cfg(void)
{
    compare_config c;
    compare_defaults("fp32", &c);
    return c;
}

static verdict run_compare(int n_run, const char *status, compare_config c, compare_result *r)
{
    series run = {run_steps, n_run, status}, base = {base_steps, N, "ok"};
    compare_runs(&run, &base, &c, r);
    return r->v;
}

static int setup(void **state)
{
    make_steps(run_steps, N, 1000, 1 << 20);
    make_steps(base_steps, N, 2000, 1 << 20);
    return 0;
}

static void test_verdict_pass(void **state)
{
    compare_result r;
    run_steps[3].loss *= 1 + 5e-5; /* inside the band */
    assert_int_equal(run_compare(N, "ok", cfg(), &r), VERDICT_PASS);
    assert_int_equal(verdict_exit_code(r.v), 0);
    assert_string_equal(verdict_name(r.v), "pass");
    assert_int_equal(r.loss.compared, N);
    assert_int_equal(r.loss.failed, 0);
    assert_int_equal(r.loss.max_abs_step, 4);
    assert_float_equal(r.loss.max_rel, 5e-5, 1e-12);
    assert_int_equal(r.first_fail_step, 0);
    assert_string_equal(r.reason, "");
    /* throughput: the median after the warm-up (the slow first step left out) */
    assert_int_equal(r.run_warmup, 2);
    assert_float_equal(r.run_tokens_per_s, 1000, 0);
    assert_float_equal(r.throughput_ratio, 0.5, 1e-15);
    assert_float_equal(r.memory_ratio, 1.0, 0);
}

static void test_verdict_fail_first_step(void **state)
{
    compare_result r;
    run_steps[6].loss += 1e-2;
    run_steps[9].loss += 1.0;
    run_steps[4].grad_norm *= 1.01;
    assert_int_equal(run_compare(N, "ok", cfg(), &r), VERDICT_FAIL);
    assert_int_equal(verdict_exit_code(r.v), 1);
    assert_int_equal(r.loss.first_fail, 7);
    assert_int_equal(r.loss.failed, 2);
    assert_int_equal(r.loss.max_abs_step, 10);
    assert_float_equal(r.loss.max_abs, 1.0, 1e-12);
    assert_int_equal(r.grad_norm.first_fail, 5);
    assert_int_equal(r.first_fail_step, 5);
    assert_string_equal(r.first_fail_metric, "grad_norm");
    assert_non_null(strstr(r.reason, "grad_norm at step 5"));
}

static void test_verdict_diverged(void **state)
{
    compare_result r;
    run_steps[11].loss = NAN;
    run_steps[5].loss += 1; /* an earlier plain failure */
    assert_int_equal(run_compare(N, "diverged", cfg(), &r), VERDICT_DIVERGED);
    assert_int_equal(r.first_nonfinite_step, 12);
    assert_int_equal(r.first_fail_step, 6);
    assert_non_null(strstr(r.reason, "step 12"));
    setup(state);
    run_steps[2].grad_norm = INFINITY;
    assert_int_equal(run_compare(N, "ok", cfg(), &r), VERDICT_DIVERGED);
    assert_int_equal(r.first_fail_step, 3);
    assert_string_equal(r.first_fail_metric, "nonfinite");
    assert_int_equal(verdict_exit_code(r.v), 1);
    /* status diverged alone is enough */
    setup(state);
    assert_int_equal(run_compare(N, "diverged", cfg(), &r), VERDICT_DIVERGED);
}

static void test_verdict_incomplete(void **state)
{
    compare_result r;
    assert_int_equal(run_compare(7, "running", cfg(), &r), VERDICT_INCOMPLETE);
    assert_int_equal(r.loss.compared, 7);
    assert_int_equal(verdict_exit_code(r.v), 1);
    assert_string_equal(verdict_name(r.v), "incomplete");
    assert_int_equal(run_compare(7, "failed", cfg(), &r), VERDICT_INCOMPLETE);
    assert_int_equal(run_compare(0, "running", cfg(), &r), VERDICT_INCOMPLETE);
    /* what it did record already failed: fail beats incomplete */
    run_steps[2].loss += 1;
    assert_int_equal(run_compare(7, "running", cfg(), &r), VERDICT_FAIL);
    /* a finished run shorter than the baseline passes on the steps it has */
    setup(state);
    assert_int_equal(run_compare(7, "ok", cfg(), &r), VERDICT_PASS);
    assert_int_equal(r.loss.compared, 7);
    /* a finished run with no step in common fails */
    assert_int_equal(run_compare(0, "ok", cfg(), &r), VERDICT_FAIL);
    assert_non_null(strstr(r.reason, "no step in common"));
}

static void test_verdict_order(void **state)
{
    assert_true(VERDICT_PASS < VERDICT_INCOMPLETE && VERDICT_INCOMPLETE < VERDICT_FAIL &&
                VERDICT_FAIL < VERDICT_DIVERGED);
    assert_string_equal(verdict_name(VERDICT_DIVERGED), "diverged");
    assert_string_equal(verdict_name(VERDICT_FAIL), "fail");
}

static void test_gates(void **state)
{
    compare_result r;
    compare_config c = cfg();
    c.min_throughput_ratio = 0.4;
    assert_int_equal(run_compare(N, "ok", c, &r), VERDICT_PASS);
    c.min_throughput_ratio = 0.6;
    assert_int_equal(run_compare(N, "ok", c, &r), VERDICT_FAIL);
    assert_true(r.throughput_gate_failed);
    assert_non_null(strstr(r.reason, "throughput 0.500x"));
    /* a ratio that prints as its gate at 3 decimals gets the digits that tell them apart */
    c.min_throughput_ratio = 0.5000001;
    assert_int_equal(run_compare(N, "ok", c, &r), VERDICT_FAIL);
    assert_non_null(strstr(r.reason, "throughput 0.5000000x of the baseline < 0.5000001x"));
    c = cfg();
    for (int i = 0; i < N; i++)
        run_steps[i].mem_peak_bytes = 3 << 19; /* 1.5x */
    c.max_memory_ratio = 1.5;
    assert_int_equal(run_compare(N, "ok", c, &r), VERDICT_PASS);
    c.max_memory_ratio = 1.2;
    assert_int_equal(run_compare(N, "ok", c, &r), VERDICT_FAIL);
    assert_true(r.memory_gate_failed);
    /* a gate the baseline cannot answer (no throughput recorded) fails */
    c = cfg();
    c.min_throughput_ratio = 0.1;
    for (int i = 0; i < N; i++)
        base_steps[i].tokens_per_s = NAN;
    assert_int_equal(run_compare(N, "ok", c, &r), VERDICT_FAIL);
    assert_true(isnan(r.throughput_ratio));
    assert_non_null(strstr(r.reason, "records no tokens/s")); /* not "nanx of the baseline" */
    /* explicit warm-up */
    setup(state);
    c = cfg();
    c.warmup = 0;
    run_compare(N, "ok", c, &r);
    assert_int_equal(r.run_warmup, 0);
}

static void test_baseline_without_grad_norm(void **state)
{
    compare_result r;
    for (int i = 0; i < N; i++) {
        base_steps[i].grad_norm = NAN;
        base_steps[i].unrecorded |= STEP_NO_GRAD_NORM;
    }
    run_steps[3].grad_norm = 99; /* not compared */
    assert_int_equal(run_compare(N, "ok", cfg(), &r), VERDICT_PASS);
    assert_false(r.grad_norm.recorded);
    assert_int_equal(r.grad_norm.compared, 0);
    assert_string_equal(r.grad_norm.not_recorded, "the baseline does not record it");
    /* a baseline step whose loss was never recorded is skipped, not failed */
    base_steps[4].loss = NAN;
    base_steps[4].unrecorded |= STEP_NO_LOSS;
    assert_int_equal(run_compare(N, "ok", cfg(), &r), VERDICT_PASS);
    assert_int_equal(r.loss.compared, N - 1);
}

/* never recorded (a log without grad norms) against recorded NaN and Inf (a diverged value) */
static void test_unrecorded_against_nan(void **state)
{
    compare_result r;
    (void)state;
    /* the run records no grad norm: loss only, and the message names the run */
    for (int i = 0; i < N; i++) {
        run_steps[i].grad_norm = NAN;
        run_steps[i].unrecorded |= STEP_NO_GRAD_NORM;
    }
    assert_int_equal(run_compare(N, "ok", cfg(), &r), VERDICT_PASS);
    assert_false(r.grad_norm.recorded);
    assert_string_equal(r.grad_norm.not_recorded, "the run does not record it");
    /* the same NaN recorded at every step diverges */
    for (int i = 0; i < N; i++)
        run_steps[i].unrecorded = 0;
    assert_int_equal(run_compare(N, "ok", cfg(), &r), VERDICT_DIVERGED);
    assert_int_equal(r.first_nonfinite_step, 1);
    /* a recorded Inf or NaN in the baseline is compared and fails */
    setup(state);
    base_steps[2].loss = INFINITY;
    assert_int_equal(run_compare(N, "ok", cfg(), &r), VERDICT_FAIL);
    assert_int_equal(r.first_fail_step, 3);
    assert_int_equal(r.loss.compared, N);
    setup(state);
    base_steps[5].grad_norm = NAN;
    assert_int_equal(run_compare(N, "ok", cfg(), &r), VERDICT_FAIL);
    assert_int_equal(r.first_fail_step, 6);
}

static void test_step_alignment(void **state)
{
    /* the run's steps 1..20 against a baseline that has only every other step */
    step_record sparse[N / 2];
    for (int i = 0; i < N / 2; i++)
        sparse[i] = base_steps[2 * i + 1];
    series run = {run_steps, N, "ok"}, base = {sparse, N / 2, "ok"};
    compare_config c = cfg();
    compare_result r;
    run_steps[3].loss += 1; /* step 4: in the baseline */
    run_steps[4].loss += 1; /* step 5: not */
    compare_runs(&run, &base, &c, &r);
    assert_int_equal(r.loss.compared, N / 2);
    assert_int_equal(r.loss.failed, 1);
    assert_int_equal(r.loss.first_fail, 4);
}

/* ---- history ---- */
static void test_history(void **state)
{
    history_config c;
    history_defaults(&c);
    double prev[] = {1000, 1010, 990, 1005, 995, 400 /* one outlier */};
    history_result h;
    history_check(1000, prev, 6, &c, &h);
    assert_false(h.regressed);
    assert_false(h.insufficient);
    assert_int_equal(h.n, 6);
    assert_float_equal(h.median, 997.5, 1e-9);
    /* MAD is 7.5: sigma 11.1, 3 sigma 33 < 5% floor of 49.9 */
    assert_float_equal(h.mad, 7.5, 1e-9);
    assert_float_equal(h.threshold, 997.5 * 0.95, 1e-9);
    history_check(940, prev, 6, &c, &h);
    assert_true(h.regressed);
    history_check(950, prev, 6, &c, &h);
    assert_false(h.regressed);
    /* noisy history widens the band beyond the floor */
    double noisy[] = {1000, 800, 1200, 900, 1100};
    history_check(800, noisy, 5, &c, &h);
    assert_false(h.regressed);
    assert_float_equal(h.threshold, 1000 - 3 * 1.4826 * 100, 1e-9);
    history_check(500, noisy, 5, &c, &h);
    assert_true(h.regressed);
    /* too few runs: no verdict; non-finite entries do not count */
    double few[] = {1000, NAN, 0, 990};
    history_check(1, few, 4, &c, &h);
    assert_true(h.insufficient);
    assert_int_equal(h.n, 2);
    assert_false(h.regressed);
    history_check(1, NULL, 0, &c, &h);
    assert_true(h.insufficient);
    /* a run without throughput regresses when history exists */
    history_check(NAN, prev, 6, &c, &h);
    assert_true(h.regressed);
}

/* JSON output: every real in the fewest digits that read back exactly; integers, strings and
 * the shape untouched (issue 8: 0.0030000000000000001 in compare --json) */
static void test_json_shortest_reals(void **state)
{
    (void)state;
    json_t *o = json_pack("{s:f, s:f, s:f, s:f, s:f, s:i, s:s, s:[f, f]}", "a", 0.003, "b", 2.0,
                          "c", 1e300, "d", 0.1 + 0.2, "n", -1e-4, "i", 3, "s",
                          "0.0030000000000000001 -1.5e-7", "arr", 0.1, -7.25);
    assert_non_null(o);
    char *text = json_dumps_short(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(text);
    assert_string_equal(text, "{\"a\":0.003,\"arr\":[0.1,-7.25],\"b\":2.0,\"c\":1e+300,"
                              "\"d\":0.30000000000000004,\"i\":3,\"n\":-0.0001,"
                              "\"s\":\"0.0030000000000000001 -1.5e-7\"}");
    json_t *back = json_loads(text, 0, NULL); /* and every value reads back equal */
    assert_non_null(back);
    assert_true(json_equal(o, back));
    assert_true(json_is_real(json_object_get(back, "b")));
    json_decref(back);
    free(text);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_shortest_reals),
        cmocka_unit_test(test_tolerance_edges),
        cmocka_unit_test(test_tolerance_zero_reference),
        cmocka_unit_test(test_tolerance_nonfinite),
        cmocka_unit_test(test_defaults_per_dtype),
        cmocka_unit_test(test_median),
        cmocka_unit_test_setup(test_verdict_pass, setup),
        cmocka_unit_test_setup(test_verdict_fail_first_step, setup),
        cmocka_unit_test_setup(test_verdict_diverged, setup),
        cmocka_unit_test_setup(test_verdict_incomplete, setup),
        cmocka_unit_test(test_verdict_order),
        cmocka_unit_test_setup(test_gates, setup),
        cmocka_unit_test_setup(test_baseline_without_grad_norm, setup),
        cmocka_unit_test_setup(test_unrecorded_against_nan, setup),
        cmocka_unit_test_setup(test_step_alignment, setup),
        cmocka_unit_test(test_history),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
