/* harness/judge/baseline_db.c: baselines and the store: a stored run read out as a baseline, a
 * baseline imported as a run, and the committed file name of a scenario's label. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "util/util.h"

static int copy_extra(const char *key, const char *value, void *arg)
{
    return baseline_set_extra(arg, key, value) ? 2 : 0;
}

static void copy_row(baseline *b, const run_row *r, const run_device *d)
{
    snprintf(b->scenario, sizeof b->scenario, "%s", r->scenario);
    snprintf(b->scenario_hash, sizeof b->scenario_hash, "%s", r->scenario_hash);
    snprintf(b->device, sizeof b->device, "%s", r->device);
    snprintf(b->device_name, sizeof b->device_name, "%s", r->device_name);
    snprintf(b->vendor, sizeof b->vendor, "%s", d->vendor);
    snprintf(b->driver_version, sizeof b->driver_version, "%s", d->driver_version);
    snprintf(b->runtime_version, sizeof b->runtime_version, "%s", d->runtime_version);
    snprintf(b->dtype, sizeof b->dtype, "%s", r->dtype);
    snprintf(b->host, sizeof b->host, "%s", r->host);
    snprintf(b->date, sizeof b->date, "%s", r->started_at);
    snprintf(b->finished_at, sizeof b->finished_at, "%s", r->finished_at);
    snprintf(b->harness_version, sizeof b->harness_version, "%s", r->harness_version);
    snprintf(b->git_commit, sizeof b->git_commit, "%s", r->git_commit);
    snprintf(b->status, sizeof b->status, "%s", r->status);
    b->world_size = r->world_size;
    b->mem_total_bytes = r->mem_total_bytes;
}

int baseline_from_run(store *st, int64_t run_id, const char *label, baseline *b)
{
    memset(b, 0, sizeof *b);
    run_row r;
    run_device d;
    int rc = store_get_run(st, run_id, &r);
    if (!rc)
        rc = store_get_run_device(st, run_id, &d);
    if (rc)
        return rc;
    copy_row(b, &r, &d);
    snprintf(b->label, sizeof b->label, "%s", label ? label : "");
    char *json = store_get_run_json(st, run_id);
    b->scenario_json = scenario_canonical_json(json);
    free(json);
    rc = store_get_steps(st, run_id, &b->steps, &b->n_steps);
    if (!rc)
        rc = store_get_routing(st, run_id, &b->routing);
    if (!rc)
        rc = store_each_run_extra(st, run_id, copy_extra, b);
    if (!rc)
        rc = store_get_ensemble(st, run_id, b->steps, b->n_steps, &b->loss_std,
                                &b->ensemble_runs);
    if (rc)
        baseline_free(b);
    return rc ? 2 : 0;
}

/* the value of extra key `key` of b, NULL when absent */
static const char *extra_value(const baseline *b, const char *key)
{
    for (int i = 0; i < b->n_extra; i++)
        if (strcmp(b->extra[i].key, key) == 0)
            return b->extra[i].value;
    return NULL;
}

/* the host facts of an imported file: its `threads` and `load_avg` header keys when present
 * and well formed (else unknown: 0 and NaN); they stay in the run's extra keys as well */
static void imported_host_facts(const baseline *b, run_meta *m)
{
    const char *threads = extra_value(b, "threads"), *load = extra_value(b, "load_avg");
    long t;
    double l;
    m->threads = threads && parse_long(threads, &t) == 0 && t > 0 && t <= 1 << 20 ? (int)t : 0;
    m->load_avg = load && parse_double(load, &l) == 0 && l >= 0 ? l : NAN;
}

int baseline_add_host_facts(store *st, int64_t run_id, baseline *b)
{
    run_row r;
    if (store_get_run(st, run_id, &r))
        return 2;
    char text[64];
    if (r.threads > 0 && !extra_value(b, "threads")) {
        snprintf(text, sizeof text, "%d", r.threads);
        if (baseline_set_extra(b, "threads", text))
            return 2;
    }
    if (isfinite(r.load_avg) && !extra_value(b, "load_avg")) {
        snprintf(text, sizeof text, "%.2f", r.load_avg);
        if (baseline_set_extra(b, "load_avg", text))
            return 2;
    }
    return 0;
}

/* b's steps, each with its expert counts when b has them (malloc'd; the counts stay b's) */
static step_record *steps_with_routing(const baseline *b)
{
    step_record *steps = malloc(sizeof *steps * (size_t)(b->n_steps ? b->n_steps : 1));
    if (!steps)
        return NULL;
    for (int i = 0; i < b->n_steps; i++) {
        steps[i] = b->steps[i];
        int k = routing_find_step(&b->routing, steps[i].step);
        steps[i].moe_layers = k >= 0 ? b->routing.layers : 0;
        steps[i].moe_experts = k >= 0 ? b->routing.experts : 0;
        steps[i].expert_tokens = k >= 0 ? routing_counts(&b->routing, k) : NULL;
    }
    return steps;
}

int baseline_import(store *st, const baseline *b, int64_t *run_id)
{
    const char **kv = calloc((size_t)(2 * b->n_extra + 1), sizeof *kv);
    step_record *steps = steps_with_routing(b);
    if (!kv || !steps) {
        log_error("out of memory importing a baseline");
        free(kv);
        free(steps);
        return 1;
    }
    for (int i = 0; i < b->n_extra; i++) {
        kv[2 * i] = b->extra[i].key;
        kv[2 * i + 1] = b->extra[i].value;
    }
    run_import in = {
        .meta = {b->scenario, b->scenario_json, b->scenario_hash, b->device, b->device_name,
                 b->vendor, b->driver_version, b->runtime_version, b->world_size, b->dtype,
                 b->host, b->git_commit, b->harness_version, b->mem_total_bytes, 0, NAN},
        .started_at = b->date,
        .finished_at = b->finished_at,
        .steps = steps,
        .n_steps = b->n_steps,
        .extra = kv,
        .n_extra = b->n_extra,
    };
    imported_host_facts(b, &in.meta);
    int rc = store_import_run(st, &in, run_id);
    if (!rc && b->loss_std && b->n_steps)
        rc = store_put_ensemble(st, *run_id, b->ensemble_runs, b->steps, b->loss_std,
                                b->n_steps);
    free(kv);
    free(steps);
    return rc;
}

void baseline_file_name(const char *dir, const char *scenario, const char *label, char *out,
                        size_t len)
{
    char s[256], l[256];
    esc_filename(scenario, s, sizeof s);
    esc_filename(label, l, sizeof l);
    snprintf(out, len, "%s/%s.%s.baseline", dir && dir[0] ? dir : ".", s, l);
}
