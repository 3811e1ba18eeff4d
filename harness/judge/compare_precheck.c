/* harness/judge/compare_precheck.c: before a run is trained or a command started, whether its
 * --compare baseline will be found, is finished, and ran the same scenario; reading only. */
#define _POSIX_C_SOURCE 200809L
#include "compare_db.h"
#include "compare_db_internal.h"

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* 1 when the scenario text names its baseline by URL ("baseline": {...}) */
static int names_baseline_url(const char *scenario_json)
{
    json_t *root = scenario_json ? json_loads(scenario_json, 0, NULL) : NULL;
    int url = json_is_object(json_object_get(root, "baseline"));
    json_decref(root);
    return url;
}

/* the label the scenario names as its default baseline into label[len]: 0, or 2 after a
 * message when it names none */
static int default_label(const char *scenario, const char *scenario_json, const char *dtype,
                         char *label, size_t len)
{
    compare_config cfg;
    scenario_compare_config(scenario_json, dtype, dtype, &cfg, label, len);
    if (label[0])
        return 0;
    log_error("scenario '%s' names no default baseline (\"baseline\"); give --baseline "
              "LABEL|RUN|FILE", scenario);
    return EXIT_USAGE;
}

/* The baseline that spec names for scenario, read as judge_run would find it (a file, a stored
 * run, a label in the store, else the committed file of the label) into *b, where[len] saying
 * which. 0, or 2 after a message (*b then empty). */
static int read_named(store *st, const baseline_query *q, const char *scenario, const char *spec,
                      baseline *b, char *where, size_t len)
{
    memset(b, 0, sizeof *b);
    snprintf(where, len, "%s", spec);
    if (is_file_spec(spec))
        return baseline_read(spec, b) ? EXIT_USAGE : 0;
    int64_t id = 0;
    if (is_run_spec(spec)) {
        if (!st) {
            log_error("no run %s to compare with: the store does not exist yet", spec);
            return EXIT_USAGE;
        }
        snprintf(where, len, "run %s", spec);
        return baseline_from_run(st, strtoll(spec, NULL, 10), "", b) ? EXIT_USAGE : 0;
    }
    int rc = st ? store_find_baseline(st, scenario, spec, &id) : 1;
    if (rc == 0) {
        snprintf(where, len, "label '%.200s' (run %lld)", spec, (long long)id);
        return baseline_from_run(st, id, spec, b) ? EXIT_USAGE : 0;
    }
    if (rc != 1)
        return EXIT_USAGE;
    char path[PATH_MAX], tried[4 * PATH_MAX];
    if (!find_file(q, scenario, spec, path, sizeof path, tried, sizeof tried)) {
        log_error("no baseline '%s' for scenario '%s': not in the store, and no file at %s", spec,
                  scenario, tried);
        return EXIT_USAGE;
    }
    snprintf(where, len, "%s", path);
    return baseline_read(path, b) ? EXIT_USAGE : 0;
}

/* the baseline b is one a run of (hash, json) can be judged against: finished, same scenario */
/* 1 when the run to come (its scenario's hash and JSON; hash NULL: a run without a scenario, as
 * `exec` without --scenario records one) may be judged against b, as judge_run will decide:
 * a run without a scenario fits only a baseline without one */
static int scenario_fits(const baseline *b, const baseline_query *q, const char *hash,
                         const char *json, char *diff, size_t len)
{
    if (q->force)
        return 1;
    if (!hash) {
        snprintf(diff, len, "the run has no scenario (give --scenario)");
        return !b->scenario_hash[0];
    }
    return !scenarios_differ(hash, json, b->scenario_hash, b->scenario_json, diff, len);
}

static int usable_for(const baseline *b, const char *where, const baseline_query *q,
                      const char *scenario, const char *hash, const char *json)
{
    if (strcmp(b->status, "ok") != 0) {
        log_error("baseline %s is %s: a baseline must be a finished run (status ok)", where,
                  b->status);
        return EXIT_USAGE;
    }
    char diff[1024];
    if (scenario_fits(b, q, hash, json, diff, sizeof diff))
        return 0;
    if (!hash) {
        log_error("baseline %s ran scenario %s, and %s has none: nothing is run or recorded; "
                  "give --scenario FILE (the scenario the command trains)", where, b->scenario,
                  scenario);
        return EXIT_USAGE;
    }
    log_error("scenario %s (hash %.12s) and baseline %s (scenario %s, hash %.12s) are different "
              "scenarios; they differ in %s. Record a baseline of this scenario, or run it "
              "without --compare and use 'harness compare RUN --force'",
              scenario, hash, where, b->scenario, b->scenario_hash, diff);
    return EXIT_USAGE;
}

/* A judgement of a run not recorded yet, as judge_find_golden reads one: its scenario's name,
 * hash and JSON (hash and JSON may be NULL: not known). 0, or 2 out of memory. */
static int unrecorded_run(judgement *j, const char *scenario, const char *scenario_json,
                          const char *scenario_hash)
{
    memset(j, 0, sizeof *j);
    snprintf(j->run.scenario, sizeof j->run.scenario, "%s", scenario ? scenario : "");
    snprintf(j->run.scenario_hash, sizeof j->run.scenario_hash, "%s",
             scenario_hash ? scenario_hash : "");
    if (scenario_json && !(j->run.scenario_json = strdup(scenario_json))) {
        log_error("out of memory checking the golden of scenario %s", scenario);
        return EXIT_USAGE;
    }
    return 0;
}

/* the golden run: the one q->golden names must be there and fit, whatever decides; the
 * error_ratio verdict needs one (the default, when none is named). 0, or 2 with *why set. */
static int golden_known(store *st, const baseline_query *q, const char *scenario,
                        const char *scenario_json, const char *scenario_hash, verdict_gate gate,
                        judge_failure *why)
{
    int asked = q->golden && q->golden[0];
    if (!asked && gate != GATE_ERROR_RATIO)
        return 0;
    judgement j;
    int rc = unrecorded_run(&j, scenario, scenario_json, scenario_hash);
    if (!rc && judge_find_golden(st, &j, q)) {
        *why = JUDGE_NO_GOLDEN;
        rc = EXIT_USAGE;
    }
    if (!rc && gate == GATE_ERROR_RATIO && !j.has_golden) {
        char who[300];
        snprintf(who, sizeof who, "scenario %.250s", scenario);
        *why = JUDGE_NO_GOLDEN_FOR_VERDICT;
        rc = golden_missing_error(who, scenario);
    }
    judge_free(&j);
    return rc;
}

/* the ensemble verdict needs an ensemble baseline: b read from where */
static int ensemble_known(const baseline *b, const char *where, const char *scenario,
                          verdict_gate gate, judge_failure *why)
{
    if (gate != GATE_ENSEMBLE || b->loss_std)
        return 0;
    char who[300];
    snprintf(who, sizeof who, "scenario %.250s", scenario);
    *why = JUDGE_NO_ENSEMBLE;
    return ensemble_missing_error(who, where);
}

/* the spec of the baseline: q->spec, else the scenario's URL baseline fetched and verified (its
 * cached file's path into label[len]), else its default label into label; 2 after a message
 * when it names none or the URL's file cannot be had */
static int baseline_spec(const baseline_query *q, const char *scenario, const char *scenario_json,
                         const char *dtype, char *label, size_t len, const char **spec)
{
    *spec = q->spec;
    if (*spec && (*spec)[0])
        return 0;
    *spec = NULL;
    int by_url = scenario_baseline_url(scenario_json, label, len);
    if (by_url == 0)
        *spec = label; /* the verified file in the baseline cache */
    if (by_url != 1)
        return by_url ? EXIT_USAGE : 0;
    if (default_label(scenario, scenario_json, dtype, label, len))
        return EXIT_USAGE;
    *spec = label;
    return 0;
}

static int has_id(const run_row *r, void *arg)
{
    return r->id == *(const int64_t *)arg ? 1 : 0;
}

/* 1 when run id is in the store (asked without a message) */
static int run_exists(store *st, int64_t id)
{
    return st && store_each_run(st, 0, has_id, &id) == 1;
}

/* the baseline spec names, read as read_named reads it but with no message where it is not
 * there: 1 and *b read, else 0 (a file spec was checked before: baseline_args_check) */
static int read_quietly(store *st, const baseline_query *q, const char *scenario,
                        const char *spec, baseline *b)
{
    char path[PATH_MAX], tried[4 * PATH_MAX];
    int64_t id = 0;
    memset(b, 0, sizeof *b);
    if (is_file_spec(spec))
        return baseline_read(spec, b) == 0;
    if (is_run_spec(spec)) {
        id = strtoll(spec, NULL, 10);
        return run_exists(st, id) && baseline_from_run(st, id, "", b) == 0;
    }
    if (st && store_find_baseline(st, scenario, spec, &id) == 0)
        return baseline_from_run(st, id, spec, b) == 0;
    return find_file(q, scenario, spec, path, sizeof path, tried, sizeof tried) &&
           baseline_read(path, b) == 0;
}

/* The baseline spec names into *b when it is there, finished and of the same scenario: 0;
 * else 1 (b empty), with no message of its own (the run's judgement says why) */
static int read_usable_quietly(store *st, const baseline_query *q, const char *scenario,
                               const char *spec, const char *hash, const char *json,
                               baseline *b)
{
    char diff[1024];
    int usable = read_quietly(st, q, scenario, spec, b) && strcmp(b->status, "ok") == 0 &&
                 scenario_fits(b, q, hash, json, diff, sizeof diff);
    if (!usable)
        baseline_free(b);
    return usable ? 0 : 1;
}

int judge_inputs_known(store *st, const baseline_query *q, const char *scenario,
                       const char *scenario_json, const char *scenario_hash, const char *dtype,
                       judge_failure *why)
{
    char label[PATH_MAX], where[PATH_MAX + 64];
    const char *spec;
    verdict_gate gate = judge_gate_of(q, scenario_json);
    *why = JUDGE_NO_BASELINE;
    if (baseline_spec(q, scenario, scenario_json, dtype, label, sizeof label, &spec))
        return EXIT_USAGE;
    baseline b;
    memset(&b, 0, sizeof b);
    int rc = spec ? read_named(st, q, scenario, spec, &b, where, sizeof where) : 0;
    if (!rc && spec)
        rc = usable_for(&b, where, q, scenario, scenario_hash, scenario_json);
    if (!rc)
        rc = golden_known(st, q, scenario, scenario_json, scenario_hash, gate, why);
    if (!rc && spec)
        rc = ensemble_known(&b, where, scenario, gate, why);
    baseline_free(&b);
    if (!rc)
        *why = JUDGE_OK;
    return rc;
}

int judge_baseline_known(store *st, const baseline_query *q, const char *scenario,
                         const char *scenario_json, const char *scenario_hash, const char *dtype)
{
    judge_failure why;
    return judge_inputs_known(st, q, scenario, scenario_json, scenario_hash, dtype, &why);
}

int judge_verdict_inputs_known(store *st, const baseline_query *q, const char *scenario,
                               const char *scenario_json, const char *scenario_hash,
                               const char *dtype, judge_failure *why)
{
    char label[256];
    const char *spec;
    verdict_gate gate = judge_gate_of(q, scenario_json);
    *why = JUDGE_OK;
    int rc = golden_known(st, q, scenario, scenario_json, scenario_hash, gate, why);
    if (rc || gate != GATE_ENSEMBLE)
        return rc;
    /* the ensemble only where the baseline is there and usable: a row without one is no error,
     * and says why when it is judged */
    compare_config cfg;
    spec = q->spec;
    if ((!spec || !spec[0]) && !names_baseline_url(scenario_json) &&
        scenario_compare_config(scenario_json, dtype, dtype, &cfg, label, sizeof label) == 0)
        spec = label;
    if (!spec || !spec[0])
        return 0;
    baseline b;
    char where[300];
    snprintf(where, sizeof where, "baseline '%.250s'", spec);
    if (read_usable_quietly(st, q, scenario, spec, scenario_hash, scenario_json, &b) == 0)
        rc = ensemble_known(&b, where, scenario, gate, why);
    baseline_free(&b);
    return rc;
}
