/* harness/judge/history.c: the throughput regression rule: flag a run whose median tokens/s lies below
 * median(previous) - max(k * 1.4826 * MAD(previous), min_drop * median(previous)). */
#include "history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

void history_defaults(history_config *c)
{
    c->k = 3.0;
    c->min_drop = 0.05;
    c->min_runs = 3;
}

/* median and MAD of the positive finite values of prev; returns how many there were */
static int robust_stats(const double *prev, int n, double *median, double *mad)
{
    double *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    if (!v)
        return 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(prev[i]) && prev[i] > 0)
            v[m++] = prev[i];
    *median = median_inplace(v, m);
    for (int i = 0; i < m; i++)
        v[i] = fabs(v[i] - *median);
    *mad = median_inplace(v, m);
    free(v);
    return m;
}

void history_check(double value, const double *prev, int n, const history_config *c,
                   history_result *out)
{
    memset(out, 0, sizeof *out);
    out->value = value;
    out->n = robust_stats(prev, n, &out->median, &out->mad);
    out->sigma = 1.4826 * out->mad;
    out->ratio = value / out->median;
    out->insufficient = out->n < c->min_runs;
    double margin = fmax(c->k * out->sigma, c->min_drop * out->median);
    out->threshold = out->median - margin;
    if (!out->insufficient)
        out->regressed = !(isfinite(value) && value >= out->threshold);
}
