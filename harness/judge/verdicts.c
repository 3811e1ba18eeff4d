/* harness/judge/verdicts.c: the error ratio of a run and its reference to a golden run, the
 * ensemble statistics and band. Pure arithmetic: see verdicts.h and docs/compare.md. */
#include "verdicts.h"

#include <math.h>
#include <string.h>

const char *gate_name(verdict_gate g)
{
    static const char *const names[] = {"band", "error_ratio", "ensemble"};
    return g >= GATE_BAND && g <= GATE_ENSEMBLE ? names[g] : "?";
}

int gate_parse(const char *name, verdict_gate *g)
{
    for (int i = GATE_BAND; i <= GATE_ENSEMBLE; i++)
        if (name && strcmp(name, gate_name((verdict_gate)i)) == 0) {
            *g = (verdict_gate)i;
            return 0;
        }
    return -1;
}

double rmse(const double *x, int n)
{
    if (n <= 0)
        return 0;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += x[i] * x[i];
    return sqrt(sum / n);
}

double step_error_ratio(double d, double r)
{
    if (isnan(d) || isnan(r))
        return NAN;
    d = fabs(d);
    r = fabs(r);
    if (d == 0)
        return 0;
    return r == 0 ? INFINITY : d / r;
}

const char *msprobe_class(double ratio)
{
    if (ratio <= 1)
        return "pass";
    return ratio <= 2 ? "warn" : "fail";
}

/* the index of step in s[0..n) (increasing), from *from on; -1 when absent */
static int find_step(const step_record *s, int n, int step, int *from)
{
    while (*from < n && s[*from].step < step)
        (*from)++;
    return *from < n && s[*from].step == step ? *from : -1;
}

void error_ratio(const step_record *run, int n_run, const step_record *ref, int n_ref,
                 const step_record *golden, int n_golden, double k, double floor,
                 error_ratio_result *out, double *step_ratio)
{
    memset(out, 0, sizeof *out);
    out->k = k;
    out->floor = floor;
    double sum_run = 0, sum_ref = 0;
    int nonfinite = 0;
    for (int i = 0, jr = 0, jg = 0; i < n_run; i++) {
        int a = find_step(ref, n_ref, run[i].step, &jr);
        int g = find_step(golden, n_golden, run[i].step, &jg);
        if (step_ratio)
            step_ratio[i] = NAN;
        if (a < 0 || g < 0 || !isfinite(ref[a].loss) || !isfinite(golden[g].loss))
            continue;
        double d = run[i].loss - golden[g].loss, r = ref[a].loss - golden[g].loss;
        nonfinite |= !isfinite(d);
        sum_run += d * d;
        sum_ref += r * r;
        out->compared++;
        double sr = step_error_ratio(d, r);
        if (step_ratio)
            step_ratio[i] = sr;
        if (!out->max_step || !(sr <= out->max_step_ratio)) {
            out->max_step = run[i].step;
            out->max_step_ratio = isnan(sr) ? INFINITY : sr;
        }
    }
    if (!out->compared)
        return;
    out->rmse_run = nonfinite ? INFINITY : sqrt(sum_run / out->compared);
    out->rmse_ref = sqrt(sum_ref / out->compared);
    out->ratio = step_error_ratio(out->rmse_run, out->rmse_ref);
    out->passed = isfinite(out->rmse_run) && out->rmse_run <= k * out->rmse_ref + floor;
    out->msprobe = msprobe_class(out->ratio);
}

int ensemble_stats(const step_record *const *runs, const int *n_steps, int members, int *steps,
                   double *mean, double *std, int *n_out)
{
    *n_out = 0;
    if (members < ENSEMBLE_MIN_RUNS || members > ENSEMBLE_MAX_RUNS)
        return -1;
    int from[ENSEMBLE_MAX_RUNS] = {0};
    for (int i = 0; i < n_steps[0]; i++) {
        int step = runs[0][i].step, all = 1;
        double sum = 0;
        for (int m = 0; m < members && all; m++) {
            int at = find_step(runs[m], n_steps[m], step, &from[m]);
            all = at >= 0;
            if (all)
                sum += runs[m][at].loss;
        }
        if (!all)
            continue;
        double mu = sum / members, var = 0;
        for (int m = 0; m < members; m++) {
            int at = find_step(runs[m], n_steps[m], step, &from[m]);
            var += (runs[m][at].loss - mu) * (runs[m][at].loss - mu);
        }
        steps[*n_out] = step;
        mean[*n_out] = mu;
        std[*n_out] = sqrt(var / (members - 1));
        (*n_out)++;
    }
    return 0;
}

int within_ensemble_band(double x, double mean, double std, double k, double floor)
{
    if (!isfinite(x) || !isfinite(mean) || !isfinite(std))
        return 0;
    return fabs(x - mean) <= k * std + floor;
}

void ensemble_check(const step_record *run, int n_run, const step_record *base,
                    const double *std, int n_base, int members, double k, double floor,
                    ensemble_result *out)
{
    memset(out, 0, sizeof *out);
    out->k = k;
    out->floor = floor;
    out->members = members;
    for (int i = 0, j = 0; i < n_run; i++) {
        int b = find_step(base, n_base, run[i].step, &j);
        /* a mean never recorded is left out; a recorded NaN or Inf (members that diverged
         * there) is compared, and fails, as in the band */
        if (b < 0 || (base[b].unrecorded & STEP_NO_LOSS))
            continue;
        out->compared++;
        double dev = fabs(run[i].loss - base[b].loss);
        double z = dev == 0 && isfinite(std[b]) ? 0 : std[b] > 0 ? dev / std[b] : INFINITY;
        if (isnan(z))
            z = INFINITY;
        if (out->compared == 1 || z > out->max_z) {
            out->max_z = z;
            out->max_z_step = run[i].step;
        }
        if (!within_ensemble_band(run[i].loss, base[b].loss, std[b], k, floor) &&
            out->failed++ == 0) {
            out->first_fail = run[i].step;
            out->first_fail_value = run[i].loss;
            out->first_fail_mean = base[b].loss;
            out->first_fail_std = std[b];
        }
    }
}
