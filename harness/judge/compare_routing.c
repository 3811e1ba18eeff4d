/* harness/judge/compare_routing.c: routing drift of a sparse-MoE run against its baseline: per step
 * the largest absolute and relative difference of one expert's token count, the first step that
 * differs at all and the first past the scenario's expert_tokens_rtol (docs/compare.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

void routing_step_diff(const int64_t *run, const int64_t *base, size_t cells, double *max_abs,
                       double *max_rel, size_t *at)
{
    *max_abs = 0;
    *max_rel = 0;
    *at = 0;
    for (size_t i = 0; i < cells; i++) {
        /* counts are >= 0 (the store and the file reader check), so no overflow */
        double abs = (double)(run[i] > base[i] ? run[i] - base[i] : base[i] - run[i]);
        double rel = abs == 0 ? 0 : base[i] == 0 ? INFINITY : abs / (double)base[i];
        if (abs > *max_abs) {
            *max_abs = abs;
            *at = i;
        }
        if (rel > *max_rel)
            *max_rel = rel;
    }
}

/* the first cell of a step past |x - ref| <= rtol * ref; -1 when none */
static long first_past(const int64_t *run, const int64_t *base, size_t cells, double rtol)
{
    for (size_t i = 0; i < cells; i++) {
        double abs = (double)(run[i] > base[i] ? run[i] - base[i] : base[i] - run[i]);
        if (abs > rtol * (double)base[i])
            return (long)i;
    }
    return -1;
}

/* the largest relative difference's cell (the first cell with that value) */
static size_t rel_cell(const int64_t *run, const int64_t *base, size_t cells, double max_rel)
{
    for (size_t i = 0; i < cells; i++) {
        double abs = (double)(run[i] > base[i] ? run[i] - base[i] : base[i] - run[i]);
        double rel = abs == 0 ? 0 : base[i] == 0 ? INFINITY : abs / (double)base[i];
        if (rel == max_rel)
            return i;
    }
    return 0;
}

/* one step present on both sides */
static void add_step(routing_drift *o, int step, const int64_t *run, const int64_t *base,
                     double rtol)
{
    size_t cells = (size_t)o->layers * (size_t)o->experts, at;
    double abs, rel;
    routing_step_diff(run, base, cells, &abs, &rel, &at);
    o->compared++;
    if (abs > 0 && !o->first_diff_step)
        o->first_diff_step = step;
    if (abs > o->max_abs) {
        o->max_abs = abs;
        o->max_abs_step = step;
        o->max_abs_layer = (int)(at / (size_t)o->experts);
        o->max_abs_expert = (int)(at % (size_t)o->experts);
    }
    if (rel > o->max_rel) {
        size_t r = rel_cell(run, base, cells, rel);
        o->max_rel = rel;
        o->max_rel_step = step;
        o->max_rel_layer = (int)(r / (size_t)o->experts);
        o->max_rel_expert = (int)(r % (size_t)o->experts);
    }
    long past = o->gated && abs > 0 ? first_past(run, base, cells, rtol) : -1;
    if (past >= 0 && o->failed++ == 0) {
        o->first_fail_step = step;
        o->first_fail_layer = (int)(past / o->experts);
        o->first_fail_expert = (int)(past % o->experts);
        o->first_fail_value = run[past];
        o->first_fail_ref = base[past];
    }
}

void compare_routing(const routing_table *run, const routing_table *base, double rtol,
                     routing_drift *o)
{
    memset(o, 0, sizeof *o);
    o->run_steps = run->n;
    o->base_steps = base->n;
    o->layers = run->layers;
    o->experts = run->experts;
    o->base_layers = base->layers;
    o->base_experts = base->experts;
    o->gated = rtol >= 0;
    if (run->n == 0 || base->n == 0)
        return;
    if (run->layers != base->layers || run->experts != base->experts) {
        o->shape_differs = 1;
        o->failed = o->gated;
        return;
    }
    for (int i = 0; i < run->n; i++) {
        int k = routing_find_step(base, run->steps[i]);
        if (k >= 0)
            add_step(o, run->steps[i], routing_counts(run, i), routing_counts(base, k), rtol);
    }
}
