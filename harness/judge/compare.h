/* harness/judge/compare.h: the arithmetic of a comparison, free of the store: tolerance checks, per-step
 * loss and grad-norm summaries, throughput and memory ratios, and the verdict (docs/compare.md). */
#ifndef COMPARE_H
#define COMPARE_H

#include "store/store.h"
#include "verdicts.h"

/* ordered from best to worst: the worst verdict of a matrix decides its exit code */
typedef enum { VERDICT_PASS, VERDICT_INCOMPLETE, VERDICT_FAIL, VERDICT_DIVERGED } verdict;

const char *verdict_name(verdict v);   /* "pass", "incomplete", "fail", "diverged" */
int verdict_exit_code(verdict v);      /* 0 for pass, 1 otherwise */

typedef struct {
    double rtol, atol;
} tolerance;

/* a ratio and its gate as "%.3f", unless that prints them alike: then both with the digits that
 * tell them apart (a failed gate never reads "0.950x < 0.950x") */
void compare_ratio_text(double v, double gate, char out[40], char g[40]);

/* |x - ref| <= atol + rtol * |ref|. False when x or ref is NaN or infinite, and when the
 * difference overflows. */
int within_tolerance(double x, double ref, tolerance t);
/* |x - ref| / |ref|; 0 when both are 0, +Inf when only ref is 0, NaN when either is NaN */
double rel_diff(double x, double ref);

typedef struct {
    tolerance loss, grad_norm;
    double min_throughput_ratio; /* fail below this ratio; < 0: not gated */
    double max_memory_ratio;     /* fail above this ratio; < 0: not gated */
    int warmup;                  /* steps left out of the median tokens/s; < 0: the default */
    double expert_tokens_rtol;   /* routing: fail past |x - ref| > rtol*ref; < 0: not gated */
    verdict_gate gate;           /* which verdict decides: the band (default), error ratio, ensemble */
    double error_ratio_k, error_ratio_floor; /* RMSE(D-G) <= k*RMSE(R-G) + floor */
    double ensemble_k, ensemble_floor;       /* |L - mean| <= k*std + floor */
} compare_config;

/* Default tolerances for a dtype ("fp64", "fp32", "bf16", "fp16"); the gates off, the default
 * warm-up; the band verdict decides; k 3 for the error ratio and the ensemble, whose floors are
 * the dtype's loss atol. Returns 0, or -1 for an unknown dtype (c then holds the fp32 defaults). */
int compare_defaults(const char *dtype, compare_config *c);
/* the less precise of two dtypes (the one whose defaults are looser); unknown counts as fp32 */
const char *looser_dtype(const char *a, const char *b);
/* the default warm-up for n steps: n/10, at least 1 (when n >= 2), at most 10 */
int default_warmup(int n);

/* A run's (or a baseline's) steps in increasing step order and its status ("ok", "running",
 * "failed", "diverged"). */
typedef struct {
    const step_record *steps;
    int n;
    const char *status;
} series;

typedef struct {
    int compared;      /* steps present in both with a finite reference value */
    int failed;        /* of those, how many are out of tolerance */
    int recorded;      /* 0 when the run or the baseline does not record the metric */
    const char *not_recorded; /* then why, in words: "the run does not record it", ... */
    double max_abs, max_rel;
    int max_abs_step, max_rel_step;
    int first_fail;    /* step number; 0 when none */
    double first_fail_value, first_fail_ref;
} metric_summary;

/* sparse-MoE routing drift: both sides' expert counts, step by step (compare_routing.c) */
typedef struct {
    int run_steps, base_steps; /* steps with counts on each side */
    int layers, experts;       /* the run's shape */
    int base_layers, base_experts; /* the baseline's */
    int shape_differs;         /* the baseline's layers x experts differ: nothing compared */
    int compared;              /* steps with counts on both sides */
    int first_diff_step;       /* the first compared step whose counts differ at all; 0 none */
    int gated;                 /* the scenario gives expert_tokens_rtol */
    int failed;                /* compared steps with a count past the tolerance */
    int first_fail_step;       /* the first of them; 0 none */
    int first_fail_layer, first_fail_expert;
    int64_t first_fail_value, first_fail_ref;
    double max_abs, max_rel;   /* over every compared count (rel +Inf: a count the baseline's 0) */
    int max_abs_step, max_abs_layer, max_abs_expert, max_rel_step, max_rel_layer, max_rel_expert;
} routing_drift;

/* the largest absolute and relative difference of one step's counts (cells of them), with the
 * cell of the largest absolute one */
void routing_step_diff(const int64_t *run, const int64_t *base, size_t cells, double *max_abs,
                       double *max_rel, size_t *at);

typedef struct {
    verdict v;
    char reason[256];          /* one line: why the verdict is not pass, or "" */
    metric_summary loss, grad_norm;
    int run_steps, base_steps;
    int common_steps;          /* step numbers in both, whether or not their values were recorded */
    int first_fail_step;       /* the first step that failed any check; 0 when none */
    const char *first_fail_metric; /* "loss", "grad_norm", "nonfinite" or NULL */
    int first_nonfinite_step;  /* 0 when none */
    int run_warmup, base_warmup;
    double run_tokens_per_s, base_tokens_per_s, throughput_ratio; /* NaN when unknown */
    double run_mem_peak, base_mem_peak, memory_ratio;             /* bytes; NaN when unknown */
    int throughput_gate_failed, memory_gate_failed;
    routing_drift routing;     /* all 0 when neither side has expert counts */
    verdict_gate gate;         /* the verdict that decided v */
    int band_failed;           /* the fixed band (loss, grad norm) has a step out of tolerance */
    int has_golden;            /* error_ratio was computed (a golden run was given) */
    error_ratio_result error_ratio;
    int has_ensemble;          /* the baseline is an ensemble: ensemble holds the band check */
    ensemble_result ensemble;
} compare_result;

/* what a comparison may have beside run and baseline */
typedef struct {
    const series *golden;         /* the golden (fp64) run of the scenario; NULL: none */
    const double *base_loss_std;  /* an ensemble baseline: std per step of base; NULL: none */
    int ensemble_runs;            /* the members of that ensemble */
} compare_extras;

/* Compares a run with a baseline. Verdict, worst first: diverged (a NaN/Inf loss or grad norm,
 * or status diverged), fail (a step out of tolerance, a gate, or no step in common), incomplete
 * (status running or failed: the run did not finish), pass. */
void compare_runs(const series *run, const series *base, const compare_config *c,
                  compare_result *out);
/* compare_runs, and the routing drift when run_rt and base_rt (either may be NULL) both have
 * expert counts: a count past c->expert_tokens_rtol fails the verdict (first_fail_metric
 * "expert_tokens"); without that tolerance the drift is informational. */
void compare_runs_routed(const series *run, const series *base, const routing_table *run_rt,
                         const routing_table *base_rt, const compare_config *c,
                         compare_result *out);
/* compare_runs_routed with the golden run and the ensemble spread (either may be absent; x may
 * be NULL): the error ratio and the ensemble band are computed when their inputs are there, and
 * c->gate picks the verdict that decides (a gate whose inputs are missing fails, saying so). */
void compare_runs_judged(const series *run, const series *base, const routing_table *run_rt,
                         const routing_table *base_rt, const compare_extras *x,
                         const compare_config *c, compare_result *out);
/* the routing part alone (compare_routing.c): fills out */
void compare_routing(const routing_table *run, const routing_table *base, double rtol,
                     routing_drift *out);

/* median of tokens/s over the steps after the first `warmup` (all steps when there are no
 * more); NaN when no step has a positive finite value */
double median_tokens_per_s(const step_record *steps, int n, int warmup);
/* the warm-up median_tokens_per_s uses for n steps: warmup, or 0 (every step) when it is
 * negative or would leave no step */
int warmup_used(int n, int warmup);
/* largest mem_peak_bytes, NaN when none is positive */
double peak_memory(const step_record *steps, int n);
/* median of x[0..n) (reorders x); NaN for n == 0 */
double median_inplace(double *x, int n);

#endif
