/* harness/judge/compare.c: tolerance arithmetic, per-metric summaries, throughput and memory ratios
 * and the verdict of a run against a baseline. No store, no I/O: see compare.h. */
#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *verdict_name(verdict v)
{
    static const char *const names[] = {"pass", "incomplete", "fail", "diverged"};
    return v >= VERDICT_PASS && v <= VERDICT_DIVERGED ? names[v] : "?";
}

int verdict_exit_code(verdict v)
{
    return v == VERDICT_PASS ? 0 : 1;
}

int within_tolerance(double x, double ref, tolerance t)
{
    if (!isfinite(x) || !isfinite(ref))
        return 0;
    double diff = fabs(x - ref);
    return isfinite(diff) && diff <= t.atol + t.rtol * fabs(ref);
}

double rel_diff(double x, double ref)
{
    if (isnan(x) || isnan(ref))
        return NAN;
    double diff = fabs(x - ref);
    if (ref == 0)
        return diff == 0 ? 0 : INFINITY;
    return diff / fabs(ref);
}

/* defaults per dtype: {name, loss rtol, loss atol, grad norm rtol, grad norm atol} */
static const struct {
    const char *dtype;
    double loss_rtol, loss_atol, gn_rtol, gn_atol;
    int rank; /* precision rank: lower is less precise */
} defaults[] = {
    {"fp64", 1e-9, 1e-12, 1e-7, 1e-12, 3},
    {"fp32", 1e-4, 1e-6, 1e-3, 1e-6, 2},
    {"fp16", 5e-3, 1e-4, 5e-2, 1e-4, 1},
    {"bf16", 2e-2, 1e-3, 1e-1, 1e-3, 0},
};
#define N_DEFAULTS ((int)(sizeof defaults / sizeof defaults[0]))

static int dtype_index(const char *dtype)
{
    for (int i = 0; i < N_DEFAULTS; i++)
        if (dtype && strcmp(dtype, defaults[i].dtype) == 0)
            return i;
    return -1;
}

int compare_defaults(const char *dtype, compare_config *c)
{
    int i = dtype_index(dtype);
    int k = i < 0 ? 1 : i;
    c->loss = (tolerance){defaults[k].loss_rtol, defaults[k].loss_atol};
    c->grad_norm = (tolerance){defaults[k].gn_rtol, defaults[k].gn_atol};
    c->min_throughput_ratio = -1;
    c->max_memory_ratio = -1;
    c->warmup = -1;
    c->expert_tokens_rtol = -1;
    c->gate = GATE_BAND;
    c->error_ratio_k = ERROR_RATIO_DEFAULT_K;
    c->ensemble_k = ENSEMBLE_DEFAULT_K;
    c->error_ratio_floor = c->ensemble_floor = defaults[k].loss_atol;
    return i < 0 ? -1 : 0;
}

const char *looser_dtype(const char *a, const char *b)
{
    int ia = dtype_index(a), ib = dtype_index(b);
    int ra = ia < 0 ? 2 : defaults[ia].rank, rb = ib < 0 ? 2 : defaults[ib].rank;
    if (ra <= rb)
        return ia < 0 ? "fp32" : a;
    return ib < 0 ? "fp32" : b;
}

int default_warmup(int n)
{
    if (n < 2)
        return 0;
    int w = n / 10;
    return w < 1 ? 1 : w > 10 ? 10 : w;
}

static void swap(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* the k-th smallest of x[0..n) (Hoare's quickselect; reorders x) */
static double select_kth(double *x, int n, int k)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = x[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (x[i] < pivot)
                i++;
            while (x[j] > pivot)
                j--;
            if (i <= j)
                swap(&x[i++], &x[j--]);
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return x[k];
    }
    return x[k];
}

double median_inplace(double *x, int n)
{
    if (n <= 0)
        return NAN;
    double hi = select_kth(x, n, n / 2);
    if (n % 2)
        return hi;
    double lo = x[0];
    for (int i = 1; i < n / 2; i++) /* after selection x[0..n/2) holds the smaller half */
        if (x[i] > lo)
            lo = x[i];
    return (lo + hi) / 2;
}

int warmup_used(int n, int warmup)
{
    return warmup < 0 || warmup >= n ? 0 : warmup;
}

double median_tokens_per_s(const step_record *steps, int n, int warmup)
{
    warmup = warmup_used(n, warmup);
    double *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    if (!v)
        return NAN;
    int m = 0;
    for (int i = warmup; i < n; i++)
        if (isfinite(steps[i].tokens_per_s) && steps[i].tokens_per_s > 0)
            v[m++] = steps[i].tokens_per_s;
    double med = median_inplace(v, m);
    free(v);
    return med;
}

double peak_memory(const step_record *steps, int n)
{
    int64_t peak = 0;
    for (int i = 0; i < n; i++)
        if (steps[i].mem_peak_bytes > peak)
            peak = steps[i].mem_peak_bytes;
    return peak > 0 ? (double)peak : NAN;
}

/* one step of one metric: x from the run, ref from the baseline */
/* one matched step of a metric: a reference never recorded (ref_unrecorded: NULL in the store, '-'
 * in a file) is left out; a recorded NaN or Inf on either side is compared and fails */
static void metric_add(metric_summary *m, int step, double x, double ref, int ref_unrecorded,
                       tolerance t)
{
    if (ref_unrecorded)
        return;
    m->compared++;
    double abs = fabs(x - ref), rel = rel_diff(x, ref);
    if (isnan(abs))
        abs = INFINITY;
    if (isnan(rel))
        rel = INFINITY;
    if (m->compared == 1 || abs > m->max_abs) {
        m->max_abs = abs;
        m->max_abs_step = step;
    }
    if (m->compared == 1 || rel > m->max_rel) {
        m->max_rel = rel;
        m->max_rel_step = step;
    }
    if (!within_tolerance(x, ref, t)) {
        if (m->failed++ == 0) {
            m->first_fail = step;
            m->first_fail_value = x;
            m->first_fail_ref = ref;
        }
    }
}

/* 1 when some step records the grad norm (a baseline made elsewhere may not) */
/* 1 when some step of s has a grad norm: a number, or a NaN that was recorded (a diverged
 * step), not one never recorded (a log without grad norms) */
static int records_grad_norm(const series *s)
{
    for (int i = 0; i < s->n; i++)
        if (!isnan(s->steps[i].grad_norm) || !(s->steps[i].unrecorded & STEP_NO_GRAD_NORM))
            return 1;
    return 0;
}

static void compare_steps(const series *run, const series *base, const compare_config *c,
                          compare_result *o)
{
    int run_gn = records_grad_norm(run);
    int base_gn = records_grad_norm(base);
    o->grad_norm.recorded = base_gn && run_gn;
    o->grad_norm.not_recorded = run_gn    ? "the baseline does not record it"
                                : base_gn ? "the run does not record it"
                                          : "neither the run nor the baseline records it";
    o->loss.recorded = 1;
    for (int i = 0; i < run->n; i++) {
        const step_record *r = &run->steps[i];
        /* an fp16 step skipped for Inf/NaN gradients is loss scaling at work, not divergence */
        if (!o->first_nonfinite_step &&
            (!isfinite(r->loss) || (run_gn && !isfinite(r->grad_norm) && !r->skipped)))
            o->first_nonfinite_step = r->step;
    }
    for (int i = 0, j = 0; i < run->n && j < base->n;) {
        const step_record *r = &run->steps[i], *b = &base->steps[j];
        if (r->step < b->step) {
            i++;
        } else if (r->step > b->step) {
            j++;
        } else {
            o->common_steps++;
            metric_add(&o->loss, r->step, r->loss, b->loss, (b->unrecorded & STEP_NO_LOSS) != 0,
                       c->loss);
            /* skipped on both sides: both norms are the Inf/NaN found; skipped on one only is a
             * difference, and fails as Inf against a number */
            if (o->grad_norm.recorded && !(r->skipped && b->skipped))
                metric_add(&o->grad_norm, r->step, r->grad_norm, b->grad_norm,
                           (b->unrecorded & STEP_NO_GRAD_NORM) != 0, c->grad_norm);
            i++;
            j++;
        }
    }
}

static void compare_perf(const series *run, const series *base, const compare_config *c,
                         compare_result *o)
{
    /* the warm-ups used, so that what is printed is what was done (a --warmup as long as a
     * run leaves no step out) */
    o->run_warmup = warmup_used(run->n, c->warmup >= 0 ? c->warmup : default_warmup(run->n));
    o->base_warmup = warmup_used(base->n, c->warmup >= 0 ? c->warmup : default_warmup(base->n));
    o->run_tokens_per_s = median_tokens_per_s(run->steps, run->n, o->run_warmup);
    o->base_tokens_per_s = median_tokens_per_s(base->steps, base->n, o->base_warmup);
    o->throughput_ratio = o->run_tokens_per_s / o->base_tokens_per_s;
    o->run_mem_peak = peak_memory(run->steps, run->n);
    o->base_mem_peak = peak_memory(base->steps, base->n);
    o->memory_ratio = o->run_mem_peak / o->base_mem_peak;
    if (c->min_throughput_ratio >= 0)
        o->throughput_gate_failed =
            !(isfinite(o->throughput_ratio) && o->throughput_ratio >= c->min_throughput_ratio);
    if (c->max_memory_ratio >= 0)
        o->memory_gate_failed =
            !(isfinite(o->memory_ratio) && o->memory_ratio <= c->max_memory_ratio);
}

/* the earliest failing step over the gating checks: loss and grad norm in the band, the
 * ensemble's band; the error ratio judges the whole trajectory and names no step */
static void first_failure(compare_result *o)
{
    const metric_summary *l = &o->loss, *g = &o->grad_norm;
    if (o->gate == GATE_ENSEMBLE) {
        if (o->ensemble.first_fail) {
            o->first_fail_step = o->ensemble.first_fail;
            o->first_fail_metric = "loss";
        }
    } else if (o->gate != GATE_BAND) {
        /* the error ratio: no single step */
    } else if (l->first_fail && (!g->first_fail || l->first_fail <= g->first_fail)) {
        o->first_fail_step = l->first_fail;
        o->first_fail_metric = "loss";
    } else if (g->first_fail) {
        o->first_fail_step = g->first_fail;
        o->first_fail_metric = "grad_norm";
    }
    const routing_drift *rd = &o->routing;
    if (rd->first_fail_step && (!o->first_fail_step || rd->first_fail_step < o->first_fail_step)) {
        o->first_fail_step = rd->first_fail_step;
        o->first_fail_metric = "expert_tokens";
    }
    if (o->first_nonfinite_step &&
        (!o->first_fail_step || o->first_nonfinite_step <= o->first_fail_step)) {
        o->first_fail_step = o->first_nonfinite_step;
        o->first_fail_metric = "nonfinite";
    }
}

/* why the routing failed: the first count past the tolerance, or the shapes */
static void routing_reason(compare_result *o, const compare_config *c)
{
    const routing_drift *rd = &o->routing;
    if (rd->shape_differs)
        snprintf(o->reason, sizeof o->reason, "expert_tokens: the run routes over %d layers x %d "
                 "experts, the baseline over %d x %d", rd->layers, rd->experts, rd->base_layers,
                 rd->base_experts);
    else
        snprintf(o->reason, sizeof o->reason, "expert_tokens at step %d, layer %d, expert %d: %lld "
                 "vs %lld tokens, |diff| %lld > %.3g*ref", rd->first_fail_step,
                 rd->first_fail_layer, rd->first_fail_expert, (long long)rd->first_fail_value,
                 (long long)rd->first_fail_ref,
                 (long long)llabs(rd->first_fail_value - rd->first_fail_ref),
                 c->expert_tokens_rtol);
}

/* the gating verdict's own failure, when it is not the band: 1 when it wrote the reason */
static int gate_reason(compare_result *o)
{
    const error_ratio_result *e = &o->error_ratio;
    const ensemble_result *n = &o->ensemble;
    if (o->gate == GATE_ERROR_RATIO && !o->has_golden)
        snprintf(o->reason, sizeof o->reason, "error_ratio: no golden run to judge against");
    else if (o->gate == GATE_ERROR_RATIO && !e->compared)
        snprintf(o->reason, sizeof o->reason, "error_ratio: no step in common with the golden");
    else if (o->gate == GATE_ERROR_RATIO && !e->passed)
        snprintf(o->reason, sizeof o->reason, "error ratio %.3g: RMSE(run - golden) %.3g > "
                 "%.3g * RMSE(baseline - golden) %.3g + %.3g", e->ratio, e->rmse_run, e->k,
                 e->rmse_ref, e->floor);
    else if (o->gate == GATE_ENSEMBLE && !o->has_ensemble)
        snprintf(o->reason, sizeof o->reason, "ensemble: the baseline is not an ensemble "
                 "('harness baseline record --ensemble N')");
    else if (o->gate == GATE_ENSEMBLE && !n->compared)
        snprintf(o->reason, sizeof o->reason, "ensemble: no step in common with the baseline");
    else if (o->gate == GATE_ENSEMBLE && n->failed)
        snprintf(o->reason, sizeof o->reason, "loss at step %d: %.9g vs ensemble mean %.9g, "
                 "|diff| %.3g > %.3g * std %.3g + %.3g", n->first_fail, n->first_fail_value,
                 n->first_fail_mean, fabs(n->first_fail_value - n->first_fail_mean), n->k,
                 n->first_fail_std, n->floor);
    else
        return 0;
    return 1;
}

/* 1 when the gating verdict's own check fails (the band, the error ratio or the ensemble) */
static int gate_failed(const compare_result *o)
{
    if (o->gate == GATE_ERROR_RATIO)
        return !o->has_golden || !o->error_ratio.compared || !o->error_ratio.passed;
    if (o->gate == GATE_ENSEMBLE)
        return !o->has_ensemble || !o->ensemble.compared || o->ensemble.failed;
    return o->band_failed;
}

/* the significant digits (at least 3) that print a and b apart: a failed gate never reads
 * "0.950x < 0.950x" (a ratio of 0.94999999 against 0.95) */
static int digits_apart(double a, double b)
{
    char x[40], y[40];
    for (int p = 3; p < 17; p++) {
        snprintf(x, sizeof x, "%.*g", p, a);
        snprintf(y, sizeof y, "%.*g", p, b);
        if (strcmp(x, y) != 0)
            return p;
    }
    return 17;
}

/* a ratio and its gate as "%.3f", unless that prints them alike: then both with the
 * significant digits that tell them apart (trailing zeros kept) */
void compare_ratio_text(double v, double gate, char out[40], char g[40])
{
    snprintf(out, 40, "%.3f", v);
    snprintf(g, 40, "%.3f", gate);
    if (strcmp(out, g) == 0) {
        int p = digits_apart(v, gate);
        snprintf(out, 40, "%#.*g", p, v);
        snprintf(g, 40, "%#.*g", p, gate);
    }
}

static void fail_reason(compare_result *o, const series *run, const compare_config *c)
{
    if (o->gate != GATE_BAND && gate_failed(o) && gate_reason(o))
        return;
    if (o->routing.failed && o->first_fail_metric &&
        strcmp(o->first_fail_metric, "expert_tokens") == 0) {
        routing_reason(o, c);
        return;
    }
    const metric_summary *m = strcmp(o->first_fail_metric ? o->first_fail_metric : "", "grad_norm")
                                  ? &o->loss
                                  : &o->grad_norm;
    const tolerance *t = m == &o->loss ? &c->loss : &c->grad_norm;
    char ratio[40], gate[40];
    if (o->throughput_gate_failed)
        compare_ratio_text(o->throughput_ratio, c->min_throughput_ratio, ratio, gate);
    else
        compare_ratio_text(o->memory_ratio, c->max_memory_ratio, ratio, gate);
    double diff = fabs(m->first_fail_value - m->first_fail_ref);
    int dp = digits_apart(diff, t->atol + t->rtol * fabs(m->first_fail_ref));
    if (m->first_fail && o->gate == GATE_BAND)
        snprintf(o->reason, sizeof o->reason,
                 "%s at step %d: %.9g vs %.9g, |diff| %.*g > %.3g + %.3g*|ref|",
                 m == &o->loss ? "loss" : "grad_norm", m->first_fail, m->first_fail_value,
                 m->first_fail_ref, dp, diff, t->atol, t->rtol);
    else if (o->throughput_gate_failed && !isfinite(o->throughput_ratio))
        snprintf(o->reason, sizeof o->reason, "throughput is gated (>= %.3fx) but the run or "
                 "the baseline records no tokens/s", c->min_throughput_ratio);
    else if (o->throughput_gate_failed)
        snprintf(o->reason, sizeof o->reason, "throughput %sx of the baseline < %sx", ratio,
                 gate);
    else if (o->memory_gate_failed && !isfinite(o->memory_ratio))
        snprintf(o->reason, sizeof o->reason, "peak memory is gated (<= %.3fx) but the run or "
                 "the baseline records none", c->max_memory_ratio);
    else if (o->memory_gate_failed)
        snprintf(o->reason, sizeof o->reason, "peak memory %sx of the baseline > %sx", ratio,
                 gate);
    else if (o->loss.compared == 0 && o->common_steps == 0)
        snprintf(o->reason, sizeof o->reason, "no step in common with the baseline (%d run steps, "
                 "%d baseline steps)", run->n, o->base_steps);
    else if (o->loss.compared == 0)
        snprintf(o->reason, sizeof o->reason, "the baseline records no loss at any of the %d "
                 "steps it has in common with the run ('-' or nan): no loss was compared",
                 o->common_steps);
    else if (o->routing.failed)
        routing_reason(o, c);
}

static void decide(compare_result *o, const series *run, const compare_config *c)
{
    const char *st = run->status ? run->status : "ok";
    int unfinished = strcmp(st, "ok") != 0 && strcmp(st, "diverged") != 0;
    if (o->first_nonfinite_step || strcmp(st, "diverged") == 0) {
        o->v = VERDICT_DIVERGED;
        if (o->first_nonfinite_step)
            snprintf(o->reason, sizeof o->reason, "NaN/Inf at step %d", o->first_nonfinite_step);
        else
            snprintf(o->reason, sizeof o->reason, "the run's status is diverged");
    } else if (gate_failed(o) || o->routing.failed ||
               o->throughput_gate_failed ||
               o->memory_gate_failed || (o->loss.compared == 0 && !unfinished)) {
        o->v = VERDICT_FAIL;
        fail_reason(o, run, c);
    } else if (unfinished) {
        o->v = VERDICT_INCOMPLETE;
        snprintf(o->reason, sizeof o->reason, "the run did not finish (status %s, %d steps)", st,
                 run->n);
    } else {
        o->v = VERDICT_PASS;
        o->reason[0] = 0;
    }
}

/* the error ratio and the ensemble band, where their inputs are there */
static void compare_extra_verdicts(const series *run, const series *base,
                                   const compare_extras *x, const compare_config *c,
                                   compare_result *o)
{
    o->gate = c->gate;
    o->band_failed = o->loss.failed || o->grad_norm.failed;
    if (x && x->golden) {
        o->has_golden = 1;
        error_ratio(run->steps, run->n, base->steps, base->n, x->golden->steps, x->golden->n,
                    c->error_ratio_k, c->error_ratio_floor, &o->error_ratio, NULL);
    }
    if (x && x->base_loss_std) {
        o->has_ensemble = 1;
        ensemble_check(run->steps, run->n, base->steps, x->base_loss_std, base->n,
                       x->ensemble_runs, c->ensemble_k, c->ensemble_floor, &o->ensemble);
    }
}

void compare_runs_judged(const series *run, const series *base, const routing_table *run_rt,
                         const routing_table *base_rt, const compare_extras *x,
                         const compare_config *c, compare_result *out)
{
    static const routing_table none;
    memset(out, 0, sizeof *out);
    out->run_steps = run->n;
    out->base_steps = base->n;
    compare_steps(run, base, c, out);
    compare_extra_verdicts(run, base, x, c, out);
    compare_perf(run, base, c, out);
    compare_routing(run_rt ? run_rt : &none, base_rt ? base_rt : &none, c->expert_tokens_rtol,
                    &out->routing);
    first_failure(out);
    decide(out, run, c);
}

void compare_runs_routed(const series *run, const series *base, const routing_table *run_rt,
                         const routing_table *base_rt, const compare_config *c,
                         compare_result *out)
{
    compare_runs_judged(run, base, run_rt, base_rt, NULL, c, out);
}

void compare_runs(const series *run, const series *base, const compare_config *c,
                  compare_result *out)
{
    compare_runs_routed(run, base, NULL, NULL, c, out);
}
