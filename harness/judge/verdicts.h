/* harness/judge/verdicts.h: the arithmetic of the two verdicts beside the fixed band: the error
 * ratio against a golden (fp64) run and the ensemble band (per-step mean and spread). No I/O. */
#ifndef VERDICTS_H
#define VERDICTS_H

#include "store/store.h"

/* which verdict decides the exit code (tolerances.verdict, compare --verdict) */
typedef enum { GATE_BAND, GATE_ERROR_RATIO, GATE_ENSEMBLE } verdict_gate;
/* "band", "error_ratio", "ensemble" */
const char *gate_name(verdict_gate g);
/* 0 and *g set for a known name, -1 otherwise */
int gate_parse(const char *name, verdict_gate *g);

#define ERROR_RATIO_DEFAULT_K 3.0   /* PyTorch's factor for low precision */
#define ENSEMBLE_DEFAULT_K 3.0
#define ENSEMBLE_MIN_RUNS 2
#define ENSEMBLE_MAX_RUNS 8         /* distinct perturbations of the cpu backend (docs/compare.md) */

/* the error ratio of a run D and its reference R, both against the golden G, over the steps
 * the three share (matched by step number) */
typedef struct {
    int compared;              /* steps in all three with finite values; 0: not computed */
    double rmse_run, rmse_ref; /* RMSE_t(D - G), RMSE_t(R - G) */
    double ratio;              /* rmse_run / rmse_ref: 0 when rmse_run is 0, +Inf when only
                                  rmse_ref is 0, +Inf when D has a non-finite loss */
    double k, floor;           /* pass: rmse_run <= k * rmse_ref + floor */
    int passed;
    const char *msprobe;       /* "pass" (ratio <= 1), "warn" (<= 2), "fail" */
    int max_step;              /* the step of the largest per-step ratio; 0 none */
    double max_step_ratio;
} error_ratio_result;

/* sqrt(mean(x^2)) of n values; 0 for n == 0 */
double rmse(const double *x, int n);
/* the per-step ratio |d| / |r|: 0 when d is 0, +Inf when only r is 0, NaN when either is NaN */
double step_error_ratio(double d, double r);
/* the msprobe class of a ratio: "pass" <= 1, "warn" <= 2, else "fail" (NaN: "fail") */
const char *msprobe_class(double ratio);

/* Fills out from the losses of run, ref and golden (each n steps in increasing step order).
 * When step_ratio is not NULL it receives the per-step ratio of every step of run, NaN where
 * ref or golden lack the step. */
void error_ratio(const step_record *run, int n_run, const step_record *ref, int n_ref,
                 const step_record *golden, int n_golden, double k, double floor,
                 error_ratio_result *out, double *step_ratio);

/* per-step mean and sample standard deviation (n - 1 in the denominator) of the loss of
 * `members` runs; each run's steps in increasing order. Steps every member has are kept, in
 * order: steps[], mean[], std[] (each of room for the first member's steps); *n_out is how many.
 * Returns 0, or -1 when members is outside [ENSEMBLE_MIN_RUNS, ENSEMBLE_MAX_RUNS]. */
int ensemble_stats(const step_record *const *runs, const int *n_steps, int members, int *steps,
                   double *mean, double *std, int *n_out);

/* |x - mean| <= k * std + floor; false for non-finite x, mean or std */
int within_ensemble_band(double x, double mean, double std, double k, double floor);

typedef struct {
    int compared;         /* steps of the run with a finite mean and std; 0: no ensemble */
    int failed;
    int first_fail;       /* step; 0 none */
    double first_fail_value, first_fail_mean, first_fail_std;
    double max_z;         /* largest |x - mean| / std over the compared steps (+Inf: std 0) */
    int max_z_step;
    double k, floor;
    int members;          /* runs in the ensemble */
} ensemble_result;

/* Holds the run's losses against the ensemble's per-step mean (base[i].loss) and std[i],
 * matched by step. */
void ensemble_check(const step_record *run, int n_run, const step_record *base,
                    const double *std, int n_base, int members, double k, double floor,
                    ensemble_result *out);

#endif
