/* harness/judge/compare_golden.c: finding the golden (fp64 cpu64) run of a compared run: a label
 * of the store ("golden" by default), a committed file, a run id or a file; its checks. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare_db_internal.h"
#include "util/util.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

#define GOLDEN_LABEL "golden"

static int golden_from_run(store *st, judgement *j, int64_t id, const char *how)
{
    if (!st) {
        log_error("no golden run %lld: the store does not exist yet", (long long)id);
        return EXIT_USAGE;
    }
    if (baseline_from_run(st, id, "", &j->golden)) {
        log_error("the golden run %lld (%s) could not be read", (long long)id, how);
        return EXIT_USAGE;
    }
    j->golden_id = id;
    j->has_golden = 1;
    snprintf(j->golden_origin, sizeof j->golden_origin, "%s (run %lld)", how, (long long)id);
    return 0;
}

static int golden_from_file(judgement *j, const char *path)
{
    if (baseline_read(path, &j->golden))
        return EXIT_USAGE;
    j->has_golden = 1;
    snprintf(j->golden_origin, sizeof j->golden_origin, "file %.400s", path);
    return 0;
}

/* a label: the store's, else the committed file; quiet is 1 for the default label, whose
 * absence only means there is no golden */
static int golden_by_label(store *st, judgement *j, const baseline_query *q, const char *label,
                           int quiet)
{
    int64_t id;
    int rc = st ? store_find_baseline(st, j->run.scenario, label, &id) : 1; /* no store yet */
    if (rc == 2)
        return EXIT_USAGE;
    char how[300], path[PATH_MAX], tried[4 * PATH_MAX];
    snprintf(how, sizeof how, "label '%.200s' in the store", label);
    if (rc == 0)
        return golden_from_run(st, j, id, how);
    if (find_file(q, j->run.scenario, label, path, sizeof path, tried, sizeof tried)) {
        /* imported and labelled on first use, as a committed baseline is: a later compare or
         * report that does not see the file (another folder) finds it in the store */
        if (!st || store_is_readonly(st))
            return golden_from_file(j, path);
        if (judge_store_file(st, path, &id))
            return EXIT_USAGE;
        snprintf(how, sizeof how, "%.200s (stored)", path);
        return golden_from_run(st, j, id, how);
    }
    if (quiet)
        return 0;
    log_error("no golden '%s' for scenario '%s': not in the store, and no file at %s", label,
              j->run.scenario, tried);
    return EXIT_USAGE;
}

/* why g cannot be the golden of j's run, into why (empty: it can); a run whose scenario is not
 * known yet (j->run.scenario_hash empty: an exec without a scenario) is not held to one */
static void golden_unfit(const judgement *j, char *why, size_t len)
{
    const baseline *g = &j->golden;
    char who[64];
    if (j->run_id)
        snprintf(who, sizeof who, "the run %lld", (long long)j->run_id);
    else
        snprintf(who, sizeof who, "the run");
    why[0] = 0;
    if (strcmp(g->status, "ok") != 0)
        snprintf(why, len, "golden %s is %s: a golden must be a finished run (status ok)",
                 j->golden_origin, g->status);
    else if (strcmp(g->dtype, "fp64") != 0)
        snprintf(why, len, "golden %s ran in %s on %s: a golden is an fp64 run ('harness run "
                 "SCENARIO --golden' trains it on cpu64)", j->golden_origin, g->dtype, g->device);
    else if (j->run.scenario_hash[0] && strcmp(g->scenario_hash, j->run.scenario_hash) != 0 &&
             !same_but_baseline(g->scenario_json, j->run.scenario_json))
        snprintf(why, len, "golden %s ran scenario %s (hash %.12s), %s scenario %s (hash %.12s): "
                 "a golden must be of the run's scenario", j->golden_origin, g->scenario,
                 g->scenario_hash, who, j->run.scenario, j->run.scenario_hash);
}

/* A golden must be a finished fp64 run of the run's scenario. One that was asked for (--golden)
 * and is not is an input error; the default one (the label 'golden' of the scenario's name, or
 * its committed file) that is not, say another length of the scenario, is left out with a
 * warning: the comparison goes on without an error ratio (a verdict that needs one then fails
 * for want of a golden). */
static int check_golden(judgement *j, int asked)
{
    char why[1400];
    golden_unfit(j, why, sizeof why);
    if (!why[0])
        return 0;
    if (asked) {
        log_error("%s", why);
        return EXIT_USAGE;
    }
    log_warn("%s; the default golden is left out: no error ratio", why);
    baseline_free(&j->golden);
    j->has_golden = 0;
    j->golden_id = 0;
    j->golden_origin[0] = 0;
    return 0;
}

int judge_find_golden(store *st, judgement *j, const baseline_query *q)
{
    const char *spec = q->golden;
    int rc;
    if (!spec || !spec[0])
        rc = golden_by_label(st, j, q, GOLDEN_LABEL, 1);
    else if (is_file_spec(spec))
        rc = golden_from_file(j, spec);
    else if (is_run_spec(spec))
        rc = golden_from_run(st, j, strtoll(spec, NULL, 10), "given");
    else
        rc = golden_by_label(st, j, q, spec, 0);
    if (!rc && j->has_golden)
        rc = check_golden(j, spec && spec[0]);
    return rc;
}

verdict_gate judge_gate_of(const baseline_query *q, const char *scenario_json)
{
    verdict_gate g = GATE_BAND;
    if (q->verdict && gate_parse(q->verdict, &g) == 0)
        return g;
    json_t *root = scenario_json ? json_loads(scenario_json, 0, NULL) : NULL;
    json_t *v = json_object_get(json_object_get(root, "tolerances"), "verdict");
    if (!json_is_string(v) || gate_parse(json_string_value(v), &g))
        g = GATE_BAND;
    json_decref(root);
    return g;
}

int golden_missing_error(const char *who, const char *scenario)
{
    log_error("%s: the error_ratio verdict needs a golden run of scenario %s, and there is none: "
              "record one with 'harness run SCENARIO --golden' (the label golden), commit "
              "SCENARIO.golden.baseline, or name one with compare's --golden LABEL|RUN|FILE",
              who, scenario);
    return EXIT_USAGE;
}

int ensemble_missing_error(const char *who, const char *origin)
{
    log_error("%s: the ensemble verdict needs an ensemble baseline, and %s is a single run: "
              "record one with 'harness baseline record --ensemble N'", who, origin);
    return EXIT_USAGE;
}
