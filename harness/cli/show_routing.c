/* harness/cli/show_routing.c: `harness show`'s sparse-MoE routing: one line per step with the tokens
 * of each expert summed over the MoE layers and the worst layer's imbalance, then the last step
 * as a table per layer; the full counts as JSON. */
#include "show_routing.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

/* digits of the widest count of t, at least 4 (the width of a column) */
static int count_width(const routing_table *t)
{
    int64_t most = 0;
    size_t n = (size_t)t->n * (size_t)t->layers * (size_t)t->experts;
    for (size_t i = 0; i < n; i++)
        most = t->counts[i] > most ? t->counts[i] : most;
    int w = 1;
    for (; most >= 10; most /= 10)
        w++;
    return w < 4 ? 4 : w;
}

/* the busiest expert's count over the mean count of its layer, for the layer where that is
 * largest (*layer); 1 means perfectly balanced, experts means one expert took everything */
static double worst_imbalance(const routing_table *t, const int64_t *c, int *layer)
{
    double worst = 0;
    *layer = 0;
    for (int l = 0; l < t->layers; l++) {
        int64_t sum = 0, most = 0;
        for (int e = 0; e < t->experts; e++) {
            sum += c[(size_t)l * t->experts + e];
            most = c[(size_t)l * t->experts + e] > most ? c[(size_t)l * t->experts + e] : most;
        }
        double ratio = sum > 0 ? (double)most * t->experts / (double)sum : 0;
        if (ratio > worst) {
            worst = ratio;
            *layer = l;
        }
    }
    return worst;
}

/* " e0 e1 ..." right-aligned in columns of width w */
static void expert_header(FILE *f, int experts, int w)
{
    char label[16];
    for (int e = 0; e < experts; e++) {
        snprintf(label, sizeof label, "e%d", e);
        fprintf(f, " %*s", w, label);
    }
}

static void per_step_lines(FILE *f, const routing_table *t, int w)
{
    fprintf(f, "\nrouting: tokens per expert summed over %d MoE layer%s (%d experts each); "
               "max/mean: the busiest expert over its layer's mean, worst layer\n%6s",
            t->layers, t->layers == 1 ? "" : "s", t->experts, "step");
    expert_header(f, t->experts, w);
    fprintf(f, " %9s %6s\n", "max/mean", "layer");
    for (int i = 0; i < t->n; i++) {
        const int64_t *c = routing_counts(t, i);
        fprintf(f, "%6d", t->steps[i]);
        for (int e = 0; e < t->experts; e++) {
            int64_t sum = 0;
            for (int l = 0; l < t->layers; l++)
                sum += c[(size_t)l * t->experts + e];
            fprintf(f, " %*" PRId64, w, sum);
        }
        int layer;
        double worst = worst_imbalance(t, c, &layer);
        fprintf(f, " %9.3f %6d\n", worst, layer);
    }
}

static void last_step_table(FILE *f, const routing_table *t, int w)
{
    const int64_t *c = routing_counts(t, t->n - 1);
    fprintf(f, "\nrouting of step %d by layer (tokens per expert)\n%6s", t->steps[t->n - 1],
            "layer");
    expert_header(f, t->experts, w);
    fputc('\n', f);
    for (int l = 0; l < t->layers; l++) {
        fprintf(f, "%6d", l);
        for (int e = 0; e < t->experts; e++)
            fprintf(f, " %*" PRId64, w, c[(size_t)l * t->experts + e]);
        fputc('\n', f);
    }
}

void show_routing_text(FILE *f, const routing_table *t)
{
    if (t->n == 0)
        return;
    int w = count_width(t);
    per_step_lines(f, t, w);
    last_step_table(f, t, w);
}

json_t *show_routing_step_json(const routing_table *t, int i)
{
    const int64_t *c = routing_counts(t, i);
    json_t *layers = json_array();
    int bad = !layers;
    for (int l = 0; !bad && l < t->layers; l++) {
        json_t *row = json_array();
        bad = !row;
        for (int e = 0; !bad && e < t->experts; e++) /* append_new takes the value either way */
            bad = json_array_append_new(row, json_integer((json_int_t)c[(size_t)l * t->experts + e]));
        if (bad) {
            json_decref(row); /* NULL-safe */
            break;
        }
        bad = json_array_append_new(layers, row);
    }
    if (bad) {
        json_decref(layers);
        return NULL;
    }
    return layers;
}
