/* harness/report/report_data.c: the rows of a report (model, overrides, batch, ranks, figures,
 * verdict), byte and verdict formatting, and opening/closing the files the writers write. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "util/output_target.h"
#include "util/util.h"

static long long json_int_at(json_t *o, const char *key, long long dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* the names the families give a config's sizes: Hugging Face's usual ones (BERT, Llama, Qwen2,
 * Mistral, Mixtral, and GPT2Config's aliases, which win over its own keys), then GPT-2's */
static const char *const LAYER_KEYS[] = {"num_hidden_layers", "n_layer", "num_layers", NULL};
static const char *const WIDTH_KEYS[] = {"hidden_size", "n_embd", "d_model", NULL};
static const char *const HEAD_KEYS[] = {"num_attention_heads", "n_head", NULL};

/* the first of keys that o gives as a whole number > 0; 0 when none */
static long long first_int(json_t *o, const char *const *keys)
{
    for (; *keys; keys++) {
        long long v = json_int_at(o, *keys, 0);
        if (v > 0)
            return v;
    }
    return 0;
}

/* a size of the model: model.overrides' value over model.config's; 0 when the scenario does
 * not say (the config is in a file or directory) */
static long long model_size(json_t *model, const char *const *keys)
{
    long long v = first_int(json_object_get(model, "overrides"), keys);
    return v ? v : first_int(json_object_get(model, "config"), keys);
}

/* appends ", N what" to out when n is known */
static void add_size(char *out, size_t len, long long n, const char *what)
{
    size_t used = strlen(out);
    if (n > 0 && used < len)
        snprintf(out + used, len - used, ", %lld %s", n, what);
}

/* "gpt2, 2 layers, 64 wide, 4 heads"; a config kept outside the scenario (model.path, repo or
 * config_path) is named, and only the sizes the scenario itself gives are shown, never 0 */
static void model_summary(json_t *model, report_row *row)
{
    json_t *family = json_object_get(model, "family");
    const char *fam = json_is_string(family) ? json_string_value(family) : "?";
    const char *source = NULL;
    static const char *const SOURCES[] = {"path", "repo", "config_path"};
    for (int i = 0; i < 3 && !source && !json_is_object(json_object_get(model, "config")); i++)
        if (json_is_string(json_object_get(model, SOURCES[i])))
            source = json_string_value(json_object_get(model, SOURCES[i]));
    snprintf(row->model, sizeof row->model, "%.60s", fam);
    if (source)
        snprintf(row->model + strlen(row->model), sizeof row->model - strlen(row->model),
                 " (config in %.60s)", source);
    add_size(row->model, sizeof row->model, model_size(model, LAYER_KEYS), "layers");
    add_size(row->model, sizeof row->model, model_size(model, WIDTH_KEYS), "wide");
    add_size(row->model, sizeof row->model, model_size(model, HEAD_KEYS), "heads");
    size_t used = strlen(row->model); /* an overrides file the scenario does not hold */
    if (json_is_string(json_object_get(model, "overrides_path")) && used < sizeof row->model)
        snprintf(row->model + used, sizeof row->model - used, " (before overrides_path)");
}

static void overrides_summary(json_t *model, report_row *row)
{
    json_t *ov = json_object_get(model, "overrides"), *v;
    json_t *ov_path = json_object_get(model, "overrides_path");
    const char *key;
    size_t used = 0;
    row->overrides[0] = 0;
    if (json_is_string(ov_path))
        snprintf(row->overrides, sizeof row->overrides, "in %.400s", json_string_value(ov_path));
    used = strlen(row->overrides);
    json_object_foreach(ov, key, v) {
        char *val = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        int n = snprintf(row->overrides + used, sizeof row->overrides - used, "%s%s=%s",
                         used ? ", " : "", key, val ? val : "?");
        free(val);
        if (n < 0 || (size_t)n >= sizeof row->overrides - used)
            break;
        used += (size_t)n;
    }
    if (!row->overrides[0])
        snprintf(row->overrides, sizeof row->overrides, "none");
}

void report_scenario_fields(const char *scenario_json, report_row *row)
{
    snprintf(row->model, sizeof row->model, "?");
    snprintf(row->overrides, sizeof row->overrides, "?");
    row->ranks = 1;
    json_error_t e;
    json_t *root = scenario_json ? json_loads(scenario_json, 0, &e) : NULL;
    if (!root)
        return;
    json_t *model = json_object_get(root, "model");
    model_summary(model, row);
    overrides_summary(model, row);
    row->batch_size = (int)json_int_at(json_object_get(root, "train"), "batch_size", 0);
    row->ranks = (int)json_int_at(root, "world_size", 1);
    json_decref(root);
}

static void run_figures(report_row *row, const baseline *run)
{
    row->seconds = 0;
    row->mem_total = NAN;
    for (int i = 0; i < run->n_steps; i++) {
        if (isfinite(run->steps[i].step_ms))
            row->seconds += run->steps[i].step_ms / 1e3;
        if (run->steps[i].mem_total_bytes > 0)
            row->mem_total = (double)run->steps[i].mem_total_bytes;
    }
    if (isnan(row->mem_total) && run->mem_total_bytes > 0)
        row->mem_total = (double)run->mem_total_bytes;
    row->mem_peak = peak_memory(run->steps, run->n_steps);
    row->tokens_per_s = median_tokens_per_s(run->steps, run->n_steps, default_warmup(run->n_steps));
}

static void baseline_figures(report_row *row, const judgement *j)
{
    const baseline *b = &j->base;
    row->has_baseline = 1;
    row->base_id = j->base_id;
    /* no label: say how it was named (a file without a label: line was shown as by run id) */
    const char *how = strncmp(j->origin, "run ", 4) == 0 ? "(by run id)" : "(by file)";
    snprintf(row->label, sizeof row->label, "%s", b->label[0] ? b->label : how);
    snprintf(row->base_device, sizeof row->base_device, "%s", b->device);
    snprintf(row->base_device_name, sizeof row->base_device_name, "%s", b->device_name);
    row->base_steps = b->n_steps;
    size_t used = 0;
    for (int i = 0; i < b->n_extra && used < sizeof row->base_extra; i++) {
        int n = snprintf(row->base_extra + used, sizeof row->base_extra - used, "%s%s: %s",
                         i ? "; " : "", b->extra[i].key, b->extra[i].value);
        used += n > 0 ? (size_t)n : 0;
    }
    row->base_at = j->base_at;
    row->same_host = j->same_host;
    row->cfg = j->cfg;
    row->res = j->res;
    row->forced = j->forced;
    snprintf(row->diff, sizeof row->diff, "%s", j->diff);
    row->tokens_per_s = j->res.run_tokens_per_s;
}

void report_fill_row(report_row *row, const judgement *j)
{
    const baseline *run = &j->run;
    row->run_id = j->run_id;
    snprintf(row->scenario, sizeof row->scenario, "%s", run->scenario);
    snprintf(row->device, sizeof row->device, "%s", run->device);
    snprintf(row->device_name, sizeof row->device_name, "%s", run->device_name);
    snprintf(row->dtype, sizeof row->dtype, "%s", run->dtype);
    snprintf(row->status, sizeof row->status, "%s", run->status);
    row->steps = run->n_steps;
    row->routing_steps = run->routing.n;
    row->routing_layers = run->routing.layers;
    row->routing_experts = run->routing.experts;
    row->run_at = j->run_at;
    report_scenario_fields(run->scenario_json, row);
    run_figures(row, run);
    if (j->base_id)
        baseline_figures(row, j);
}

void row_verdicts_text(const report_row *row, char *out, size_t len)
{
    const compare_result *r = &row->res;
    size_t used = 0;
    out[0] = 0;
    if (!row->has_baseline)
        return;
    if (r->has_golden && r->error_ratio.compared)
        used += (size_t)snprintf(out, len, "error ratio %.3g (RMSE %.3g vs %.3g; rule <= %.3g*ref "
                                 "+ %.3g: %s; msprobe %s); ", r->error_ratio.ratio,
                                 r->error_ratio.rmse_run, r->error_ratio.rmse_ref,
                                 r->error_ratio.k, r->error_ratio.floor,
                                 r->error_ratio.passed ? "pass" : "fail", r->error_ratio.msprobe);
    if (used < len && r->has_ensemble)
        used += (size_t)snprintf(out + used, len - used, "ensemble of %d runs: %d of %d steps "
                                 "outside mean +- %.3g*std + %.3g; ", r->ensemble.members,
                                 r->ensemble.failed, r->ensemble.compared, r->ensemble.k,
                                 r->ensemble.floor);
    if (used < len && (used || r->gate != GATE_BAND))
        snprintf(out + used, len - used, "decided by %s", gate_name(r->gate));
}

int row_counted_verdict(const report_row *row)
{
    if (row->has_baseline)
        return (int)row->res.v;
    if (strcmp(row->status, "ok") == 0)
        return -1;
    return strcmp(row->status, "diverged") == 0 ? VERDICT_DIVERGED : VERDICT_INCOMPLETE;
}

verdict report_worst(const report *r)
{
    verdict worst = VERDICT_PASS;
    for (int i = 0; i < r->n; i++)
        if (row_counted_verdict(&r->rows[i]) > (int)worst)
            worst = (verdict)row_counted_verdict(&r->rows[i]);
    return worst;
}

void format_bytes(double bytes, char *out, size_t len)
{
    if (!(bytes > 0) || !isfinite(bytes))
        snprintf(out, len, "-");
    else if (bytes >= 1024.0 * 1024 * 1024)
        snprintf(out, len, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    else
        snprintf(out, len, "%.1f MiB", bytes / (1024.0 * 1024));
}

const char *row_verdict(const report_row *row)
{
    int v = row_counted_verdict(row);
    if (row->has_baseline)
        return verdict_name(row->res.v);
    return v == VERDICT_DIVERGED     ? "diverged (no baseline)"
           : v == VERDICT_INCOMPLETE ? "incomplete (no baseline)"
                                     : "no baseline";
}

void row_ratio_text(const report_row *row, char *out, size_t len)
{
    if (!row->has_baseline || !isfinite(row->res.throughput_ratio)) {
        snprintf(out, len, "-");
        return;
    }
    char ratio[40], gate[40] = "";
    double g = row->cfg.min_throughput_ratio;
    if (g >= 0) /* the digits that tell it from its gate: "0.50x ... gated" failed at 0.497 */
        compare_ratio_text(row->res.throughput_ratio, g, ratio, gate);
    else
        snprintf(ratio, sizeof ratio, "%.2f", row->res.throughput_ratio);
    snprintf(out, len, "%sx of %.200s (run %lld; %s%s%s)", ratio,
             row->base_device_name[0] ? row->base_device_name : row->base_device,
             (long long)row->base_id, g >= 0 ? "gated >= " : "not gated", gate,
             row->same_host ? "" : "; other host");
}

void row_hosts_text(const report_row *row, char *out, size_t len)
{
    char run[400], base[400];
    run_host_text(&row->run_at, run, sizeof run);
    if (!row->has_baseline) {
        snprintf(out, len, "run: %s", run);
        return;
    }
    run_host_text(&row->base_at, base, sizeof base);
    snprintf(out, len, "run: %s; baseline: %s%s", run, base,
             row->same_host ? "" : "; different hosts: the throughput ratio compares two "
                                   "machines and is informational unless the scenario gates it");
}

/* the drift part of row_routing_text: where counts first differ, the largest difference, the
 * tolerance */
static void drift_text(const report_row *row, char *out, size_t len)
{
    const routing_drift *d = &row->res.routing;
    int n = snprintf(out, len, "first at step %d; max %.0f tokens (step %d, layer %d, expert %d), "
                     "rel %.3g", d->first_diff_step, d->max_abs, d->max_abs_step,
                     d->max_abs_layer, d->max_abs_expert, d->max_rel);
    if (n < 0 || (size_t)n >= len)
        return;
    if (d->gated && d->first_fail_step)
        snprintf(out + n, len - (size_t)n, "; past %.3g*ref from step %d",
                 row->cfg.expert_tokens_rtol, d->first_fail_step);
    else if (d->gated)
        snprintf(out + n, len - (size_t)n, "; within %.3g*ref", row->cfg.expert_tokens_rtol);
    else
        snprintf(out + n, len - (size_t)n, "; informational");
}

void row_routing_text(const report_row *row, char *out, size_t len)
{
    const routing_drift *d = &row->res.routing;
    if (!row->routing_steps)
        snprintf(out, len, "-");
    else if (!row->has_baseline || !d->base_steps)
        snprintf(out, len, "%d steps of %d x %d counts; none in the baseline", row->routing_steps,
                 row->routing_layers, row->routing_experts);
    else if (d->shape_differs)
        snprintf(out, len, "not compared: the baseline has another layers x experts%s",
                 d->gated ? " (fails)" : "");
    else if (!d->compared)
        snprintf(out, len, "not compared: no step has counts on both sides");
    else if (!d->first_diff_step)
        snprintf(out, len, "identical (%d steps)", d->compared);
    else
        drift_text(row, out, len);
}

/* made afresh: whatever is at path (a link planted there, a hard link to another file) is
 * removed, never written through */
FILE *report_open(const char *path)
{
    FILE *f = output_create_fresh(path);
    if (!f)
        log_error("report: cannot write %s: %s", path, strerror(errno));
    return f;
}

int report_close(FILE *f, const char *path)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        log_error("report: writing %s failed: %s", path, strerror(errno));
        return EXIT_FAIL;
    }
    return 0;
}
