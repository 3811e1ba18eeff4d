/* harness/judge/compare.h: the arithmetic of a comparison, free of the store: tolerance checks, per-step
 * loss and grad-norm summaries, throughput and memory ratios, and the verdict (docs/compare.md). */
#ifndef COMPARE_H
#define COMPARE_H

#include "store/store.h"

/* ordered from best to worst: the worst verdict of a matrix decides its exit code */
typedef enum { VERDICT_PASS, VERDICT_INCOMPLETE, VERDICT_FAIL, VERDICT_DIVERGED } verdict;

const char *verdict_name(verdict v);   /* "pass", "incomplete", "fail", "diverged" */
int verdict_exit_code(verdict v);      /* 0 for pass, 1 otherwise */

typedef struct {
    double rtol, atol;
} tolerance;

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
} compare_config;

/* Default tolerances for a dtype ("fp64", "fp32", "bf16", "fp16"); the gates off, the default
 * warm-up. Returns 0, or -1 for an unknown dtype (c then holds the fp32 defaults). */
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
    int recorded;      /* 0 when the baseline does not record the metric (all NaN) */
    double max_abs, max_rel;
    int max_abs_step, max_rel_step;
    int first_fail;    /* step number; 0 when none */
    double first_fail_value, first_fail_ref;
} metric_summary;

typedef struct {
    verdict v;
    char reason[256];          /* one line: why the verdict is not pass, or "" */
    metric_summary loss, grad_norm;
    int run_steps, base_steps;
    int first_fail_step;       /* the first step that failed any check; 0 when none */
    const char *first_fail_metric; /* "loss", "grad_norm", "nonfinite" or NULL */
    int first_nonfinite_step;  /* 0 when none */
    int run_warmup, base_warmup;
    double run_tokens_per_s, base_tokens_per_s, throughput_ratio; /* NaN when unknown */
    double run_mem_peak, base_mem_peak, memory_ratio;             /* bytes; NaN when unknown */
    int throughput_gate_failed, memory_gate_failed;
} compare_result;

/* Compares a run with a baseline. Verdict, worst first: diverged (a NaN/Inf loss or grad norm,
 * or status diverged), fail (a step out of tolerance, a gate, or no step in common), incomplete
 * (status running or failed: the run did not finish), pass. */
void compare_runs(const series *run, const series *base, const compare_config *c,
                  compare_result *out);

/* median of tokens/s over the steps after the first `warmup` (all steps when there are no
 * more); NaN when no step has a positive finite value */
double median_tokens_per_s(const step_record *steps, int n, int warmup);
/* largest mem_peak_bytes, NaN when none is positive */
double peak_memory(const step_record *steps, int n);
/* median of x[0..n) (reorders x); NaN for n == 0 */
double median_inplace(double *x, int n);

#endif
