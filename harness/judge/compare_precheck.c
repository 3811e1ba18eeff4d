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
static int usable_for(const baseline *b, const char *where, const baseline_query *q,
                      const char *scenario, const char *hash, const char *json)
{
    if (strcmp(b->status, "ok") != 0) {
        log_error("baseline %s is %s: a baseline must be a finished run (status ok)", where,
                  b->status);
        return EXIT_USAGE;
    }
    char diff[1024];
    if (!hash || q->force || !scenarios_differ(hash, json, b->scenario_hash, b->scenario_json,
                                               diff, sizeof diff))
        return 0;
    log_error("scenario %s (hash %.12s) and baseline %s (scenario %s, hash %.12s) are different "
              "scenarios; they differ in %s. Record a baseline of this scenario, or run it "
              "without --compare and use 'harness compare RUN --force'",
              scenario, hash, where, b->scenario, b->scenario_hash, diff);
    return EXIT_USAGE;
}

int judge_baseline_known(store *st, const baseline_query *q, const char *scenario,
                         const char *scenario_json, const char *scenario_hash, const char *dtype)
{
    char label[256], where[PATH_MAX + 64];
    const char *spec = q->spec;
    if (!spec || !spec[0]) {
        if (names_baseline_url(scenario_json))
            return 0; /* fetched (and its digest checked) when the run is judged */
        if (default_label(scenario, scenario_json, dtype, label, sizeof label))
            return EXIT_USAGE;
        spec = label;
    }
    baseline b;
    int rc = read_named(st, q, scenario, spec, &b, where, sizeof where);
    if (!rc)
        rc = usable_for(&b, where, q, scenario, scenario_hash, scenario_json);
    baseline_free(&b);
    return rc;
}
