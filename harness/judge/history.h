/* harness/judge/history.h: throughput regression against a run's own history: the median tokens/s of
 * the previous runs and a drop threshold from their median absolute deviation (docs/compare.md). */
#ifndef HISTORY_H
#define HISTORY_H

typedef struct {
    double k;        /* drop threshold in robust standard deviations (1.4826 * MAD); default 3 */
    double min_drop; /* the smallest relative drop ever flagged; default 0.05 */
    int min_runs;    /* fewer previous runs than this: no verdict; default 3 */
} history_config;

void history_defaults(history_config *c);

typedef struct {
    int n;            /* previous runs used */
    double value;     /* the run's median tokens/s */
    double median;    /* median of the previous runs' medians */
    double mad;       /* median absolute deviation of those */
    double sigma;     /* 1.4826 * mad: a standard deviation that one outlier cannot inflate */
    double threshold; /* flagged below this tokens/s */
    double ratio;     /* value / median */
    int insufficient; /* 1 when n < min_runs: nothing is flagged */
    int regressed;    /* 1 when value < threshold */
} history_result;

/* value: the run's statistic; prev[0..n): the previous runs' (not reordered). Non-finite and
 * non-positive entries of prev are left out. */
void history_check(double value, const double *prev, int n, const history_config *c,
                   history_result *out);

#endif
