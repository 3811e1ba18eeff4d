/* harness/judge/compare_db.c: judging a stored run: finding its baseline (store label, committed file,
 * run id or file), the scenario-hash check, the comparison, the stored verdict, text and JSON. */
#define _POSIX_C_SOURCE 200809L
#include "compare_db.h"
#include "compare_db_internal.h"
#include "baseline_url.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/util.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#ifndef HARNESS_SOURCE_DIR
#define HARNESS_SOURCE_DIR "."
#endif

/* ---- configuration from the scenario ------------------------------------------------------ */

static int tolerance_value(json_t *tol, const char *key, double *out)
{
    json_t *v = json_object_get(tol, key);
    if (!v)
        return 0;
    if (!json_is_number(v) || json_number_value(v) < 0) {
        log_error("the run's scenario: tolerances.%s is not a number >= 0", key);
        return EXIT_USAGE;
    }
    *out = json_number_value(v);
    return 0;
}

/* tolerances.verdict, the k factors (> 0) and floors (>= 0; default the loss atol in effect) */
static int verdict_fields(json_t *tol, compare_config *c)
{
    json_t *v = json_object_get(tol, "verdict");
    if (v && (!json_is_string(v) || gate_parse(json_string_value(v), &c->gate))) {
        log_error("the run's scenario: tolerances.verdict is not \"band\", \"error_ratio\" or "
                  "\"ensemble\"");
        return EXIT_USAGE;
    }
    c->error_ratio_floor = c->ensemble_floor = -1;
    if (tolerance_value(tol, "error_ratio_k", &c->error_ratio_k) ||
        tolerance_value(tol, "ensemble_k", &c->ensemble_k) ||
        tolerance_value(tol, "error_ratio_floor", &c->error_ratio_floor) ||
        tolerance_value(tol, "ensemble_floor", &c->ensemble_floor))
        return EXIT_USAGE;
    if (!(c->error_ratio_k > 0) || !(c->ensemble_k > 0)) {
        log_error("the run's scenario: tolerances.%s must be > 0",
                  c->error_ratio_k > 0 ? "ensemble_k" : "error_ratio_k");
        return EXIT_USAGE;
    }
    if (c->error_ratio_floor < 0)
        c->error_ratio_floor = c->loss.atol;
    if (c->ensemble_floor < 0)
        c->ensemble_floor = c->loss.atol;
    return 0;
}

/* tolerances.max_memory_ratio, when given, > 0 as the scenario reader wants it (a stored
 * scenario of an older harness may say 0, which would fail every run's memory gate) */
static int memory_gate_positive(json_t *tol, const compare_config *c)
{
    if (!json_object_get(tol, "max_memory_ratio") || c->max_memory_ratio > 0)
        return 0;
    log_error("the run's scenario: tolerances.max_memory_ratio must be > 0 (0 would fail every "
              "run's memory gate)");
    return EXIT_USAGE;
}

int scenario_compare_config(const char *scenario_json, const char *run_dtype,
                            const char *base_dtype, compare_config *c, char *label, size_t len)
{
    compare_defaults(looser_dtype(run_dtype, base_dtype), c);
    if (label && len)
        label[0] = 0;
    json_error_t e;
    json_t *root = scenario_json ? json_loads(scenario_json, 0, &e) : NULL;
    if (!root)
        return 0;
    json_t *tol = json_object_get(root, "tolerances"), *b = json_object_get(root, "baseline");
    int rc = 0;
    if (json_is_object(tol))
        rc = tolerance_value(tol, "loss_rtol", &c->loss.rtol) ||
                     tolerance_value(tol, "loss_atol", &c->loss.atol) ||
                     tolerance_value(tol, "grad_norm_rtol", &c->grad_norm.rtol) ||
                     tolerance_value(tol, "grad_norm_atol", &c->grad_norm.atol) ||
                     tolerance_value(tol, "min_throughput_ratio", &c->min_throughput_ratio) ||
                     tolerance_value(tol, "max_memory_ratio", &c->max_memory_ratio) ||
                     tolerance_value(tol, "expert_tokens_rtol", &c->expert_tokens_rtol) ||
                     verdict_fields(tol, c) || memory_gate_positive(tol, c)
                 ? EXIT_USAGE
                 : 0;
    if (label && json_is_string(b))
        snprintf(label, len, "%s", json_string_value(b));
    json_decref(root);
    return rc;
}

int scenario_train_steps(const char *scenario_json)
{
    json_t *root = scenario_json ? json_loads(scenario_json, 0, NULL) : NULL;
    json_t *steps = json_object_get(json_object_get(root, "train"), "steps");
    json_int_t n = json_is_integer(steps) ? json_integer_value(steps) : 0;
    json_decref(root);
    return n > 0 && n <= INT_MAX ? (int)n : 0;
}

/* A run recorded ok that stops before both its scenario's train.steps and the baseline's last
 * step (an exec'd script told --steps 3 of a 40-step scenario: the same hash, another schedule)
 * passed on the steps it has; it is incomplete. Against the baseline's last step too, since
 * some logs number their records, not their steps (Trainer dicts with logging_steps 10: a whole
 * 40-step run ends at 4) or leave the last step out (a log interval that does not divide it) */
static void check_whole_run(judgement *j)
{
    const baseline *r = &j->run, *b = &j->base;
    int want = scenario_train_steps(r->scenario_json);
    int last = r->n_steps ? r->steps[r->n_steps - 1].step : 0;
    int base_last = b->n_steps ? b->steps[b->n_steps - 1].step : 0;
    if (want <= 0 || last >= want || last >= base_last || j->res.v != VERDICT_PASS)
        return;
    j->res.v = VERDICT_INCOMPLETE;
    snprintf(j->res.reason, sizeof j->res.reason, "the run recorded steps up to %d of its "
             "scenario's %d (train.steps; the baseline's go to %d)", last, want, base_last);
}

/* ---- finding the baseline ----------------------------------------------------------------- */

int is_file_spec(const char *spec)
{
    size_t n = strlen(spec);
    return strchr(spec, '/') || (n > 9 && strcmp(spec + n - 9, ".baseline") == 0);
}

int is_run_spec(const char *spec)
{
    size_t n = strlen(spec); /* 19 digits and more would not fit a run id: taken as a label */
    return n && n <= 18 && strspn(spec, "0123456789") == n;
}

void baseline_cache_free(baseline_cache *c)
{
    baseline_free(&c->b);
    c->st = NULL;
    c->id = 0;
}

/* the stored run id as the baseline, through the cache when there is one */
static int read_base(store *st, baseline_cache *cache, int64_t id, const char *label,
                     baseline *b)
{
    if (cache && cache->st == st && cache->id == id) {
        if (baseline_copy(b, &cache->b))
            return EXIT_USAGE;
        snprintf(b->label, sizeof b->label, "%s", label);
        return 0;
    }
    if (baseline_from_run(st, id, label, b))
        return EXIT_USAGE;
    if (cache) {
        baseline_cache_free(cache);
        if (baseline_copy(&cache->b, b) == 0) {
            cache->st = st;
            cache->id = id;
        }
    }
    return 0;
}

static int load_base_run(store *st, judgement *j, int64_t id, const char *label,
                         baseline_cache *cache)
{
    baseline_free(&j->base);
    if (read_base(st, cache, id, label, &j->base))
        return EXIT_USAGE;
    if (strcmp(j->base.status, "ok") != 0) {
        log_error("run %lld is %s: a baseline must be a finished run (status ok)", (long long)id,
                  j->base.status);
        return EXIT_USAGE;
    }
    j->base_id = id;
    return 0;
}

/* the imported runs of file's scenario and hash: the candidates for a stored copy of it */
typedef struct {
    const baseline *file;
    int64_t *ids;
    int n, cap;
} import_candidates;

static int add_candidate(const run_row *r, void *arg)
{
    import_candidates *c = arg;
    if (!r->imported || strcmp(r->scenario, c->file->scenario) != 0 ||
        strcmp(r->scenario_hash, c->file->scenario_hash) != 0)
        return 0;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 8;
        int64_t *grown = realloc(c->ids, sizeof *grown * (size_t)cap);
        if (!grown) {
            log_error("out of memory listing the imported baselines");
            return EXIT_USAGE;
        }
        c->ids = grown;
        c->cap = cap;
    }
    c->ids[c->n++] = r->id;
    return 0;
}

/* 1 when stored run id, read under file's label, writes out as file does */
static int holds_file(store *st, int64_t id, const baseline *file)
{
    baseline stored;
    if (baseline_from_run(st, id, file->label, &stored))
        return 0;
    int same = baseline_same(&stored, file);
    baseline_free(&stored);
    return same;
}

/* An imported run whose content is file's, so that a file without a label, or one whose label
 * names other content, is imported once, not on every compare: 0 and *id set, 1 when there is
 * none, 2 on a store error. */
static int find_same_import(store *st, const baseline *file, int64_t *id)
{
    import_candidates c = {file, NULL, 0, 0};
    int rc = store_each_run(st, 0, add_candidate, &c) ? EXIT_USAGE : 1;
    for (int i = 0; i < c.n && rc == 1; i++)
        if (holds_file(st, c.ids[i], file)) {
            *id = c.ids[i];
            rc = 0;
        }
    free(c.ids);
    return rc;
}

/* the file's scenario JSON in the canonical form the store keeps (its hash is of that form), so
 * that the content of a file and of its stored copy compare equal: 0, or 2 out of memory */
static int canonical_scenario(baseline *file, const char *path)
{
    if (!file->scenario_json)
        return 0;
    char *canon = scenario_canonical_json(file->scenario_json);
    if (!canon) {
        log_error("%s: its scenario_json could not be put in canonical form", path);
        return EXIT_USAGE;
    }
    free(file->scenario_json);
    file->scenario_json = canon;
    return 0;
}

/* the stored copy of a file: found by its label, else by its content; 0 and *id, 1 none, 2 */
static int find_stored_copy(store *st, const baseline *file, int64_t *id)
{
    int found = file->label[0] ? store_find_baseline(st, file->scenario, file->label, id) : 1;
    if (found == 0 && holds_file(st, *id, file))
        return 0;
    return found == 2 ? EXIT_USAGE : find_same_import(st, file, id);
}

/* The committed file at path in the store: its stored copy (by label, else by content), else
 * imported (*imported 1). The file's label is set where it was free, or, with set_label (the
 * committed file of a label), moved to it; the label into label[256]. 0, or 2 after a message. */
static int store_file_copy(store *st, const char *path, int set_label, int64_t *id,
                           int *imported, char label[256])
{
    baseline file;
    int rc = baseline_read(path, &file);
    if (!rc)
        rc = canonical_scenario(&file, path);
    int found = rc ? 2 : find_stored_copy(st, &file, id);
    int64_t taken = 0;
    int label_rc = found != 2 && file.label[0]
                       ? store_find_baseline(st, file.scenario, file.label, &taken)
                       : 2;
    *imported = found == 1;
    if (found == 1)
        rc = baseline_import(st, &file, id);
    /* a copy found by its content takes the label as an import would */
    if (!rc && found != 2 && (label_rc == 1 || (set_label && label_rc == 0 && taken != *id)))
        rc = store_set_baseline(st, file.scenario, file.label, *id);
    snprintf(label, 256, "%s", found == 2 ? "" : file.label);
    baseline_free(&file);
    return rc || found == 2 ? EXIT_USAGE : 0;
}

/* a baseline file: reuse the stored import of the same content, or import it, as the base */
static int use_file(store *st, judgement *j, const char *path, int set_label)
{
    int64_t id = 0;
    int imported = 0;
    char label[256];
    if (store_file_copy(st, path, set_label, &id, &imported, label))
        return EXIT_USAGE;
    if (imported) {
        snprintf(j->origin, sizeof j->origin, "%s", path); /* "imported as" once committed */
        j->imported_id = id;
    }
    if (load_base_run(st, j, id, label, NULL))
        return EXIT_USAGE;
    if (!imported)
        snprintf(j->origin, sizeof j->origin, "%s (stored as run %lld)", path, (long long)id);
    return 0;
}

int judge_store_file(store *st, const char *path, int64_t *id)
{
    int imported;
    char label[256];
    return store_file_copy(st, path, 0, id, &imported, label);
}

/* anything at path but a folder (a FIFO, a device, a dangling link: found, and then refused by
 * the reader naming what it is, never passed over for a later place) */
static int file_exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0 && !(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode));
}

/* Lexically removes "." components and "NAME/.." pairs from path (in place): "scenarios/../
 * baselines" becomes "baselines". Leading ".." stay. */
static void lexical_clean(char *path)
{
    char *parts[512], copy[PATH_MAX];
    int n = 0, absolute = path[0] == '/';
    snprintf(copy, sizeof copy, "%s", path);
    for (char *save = NULL, *t = strtok_r(copy, "/", &save); t && n < 512;
         t = strtok_r(NULL, "/", &save)) {
        if (strcmp(t, ".") == 0)
            continue;
        if (strcmp(t, "..") == 0 && n > 0 && strcmp(parts[n - 1], "..") != 0)
            n--;
        else if (!(strcmp(t, "..") == 0 && absolute))
            parts[n++] = t;
    }
    size_t used = 0;
    path[0] = 0;
    if (absolute)
        path[used++] = '/', path[used] = 0;
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(path + used, PATH_MAX - used, "%s%s", i ? "/" : "", parts[i]);
    if (!path[0])
        snprintf(path, PATH_MAX, ".");
}

/* DIR/../baselines into out[PATH_MAX], with "NAME/.." cleaned away for people to read where
 * DIR/.. and its cleaned form are the same directory (a symlink DIR would make them differ:
 * then the path stays as it is) */
static void sibling_baselines(const char *dir, char *out)
{
    char parent[PATH_MAX], clean[PATH_MAX];
    snprintf(parent, sizeof parent, "%.4000s/..", dir);
    memcpy(clean, parent, sizeof clean);
    lexical_clean(clean);
    struct stat a, b;
    int same = stat(parent, &a) == 0 && stat(clean, &b) == 0 && a.st_dev == b.st_dev &&
               a.st_ino == b.st_ino;
    if (same && strcmp(clean, ".") == 0)
        snprintf(out, PATH_MAX, "baselines");
    else
        snprintf(out, PATH_MAX, "%.4000s/baselines", same ? clean : parent);
}

/* the committed file of scenario + label: the first of the places looked in */
int find_file(const baseline_query *q, const char *scenario, const char *label,
                     char *out, size_t len, char *tried, size_t tlen)
{
    char dirs[4][PATH_MAX], sdir[PATH_MAX];
    int n = 0;
    if (q->baselines_dir && q->baselines_dir[0])
        snprintf(dirs[n++], PATH_MAX, "%s", q->baselines_dir);
    if (q->scenario_path && q->scenario_path[0]) {
        path_dirname(q->scenario_path, sdir, sizeof sdir);
        sibling_baselines(sdir, dirs[n++]);
    }
    snprintf(dirs[n++], PATH_MAX, "baselines");
    snprintf(dirs[n++], PATH_MAX, "%.4000s/baselines", HARNESS_SOURCE_DIR);
    tried[0] = 0;
    for (int i = 0; i < n; i++) {
        baseline_file_name(dirs[i], scenario, label, out, len);
        if (file_exists(out))
            return 1;
        int again = 0; /* the same place reached twice (./baselines is the source tree's) */
        for (int k = 0; k < i && !again; k++) {
            char before[PATH_MAX + 256];
            baseline_file_name(dirs[k], scenario, label, before, sizeof before);
            again = strcmp(before, out) == 0;
        }
        size_t used = strlen(tried);
        if (!again)
            snprintf(tried + used, tlen - used, "%s%s", used ? ", " : "", out);
    }
    return 0;
}

static int use_label(store *st, judgement *j, const baseline_query *q, const char *label)
{
    int64_t id;
    int rc = store_find_baseline(st, j->run.scenario, label, &id);
    if (rc == 2)
        return EXIT_USAGE;
    if (rc == 0) {
        snprintf(j->origin, sizeof j->origin, "label '%.200s' in the store (run %lld)", label,
                 (long long)id);
        return load_base_run(st, j, id, label, q->cache);
    }
    char path[PATH_MAX], tried[4 * PATH_MAX];
    if (!find_file(q, j->run.scenario, label, path, sizeof path, tried, sizeof tried)) {
        log_error("no baseline '%s' for scenario '%s': not in the store, and no file at %s",
                  label, j->run.scenario, tried);
        return EXIT_USAGE;
    }
    return use_file(st, j, path, 1);
}

int scenario_baseline_url(const char *scenario_json, char *path, size_t len)
{
    json_t *root = scenario_json ? json_loads(scenario_json, 0, NULL) : NULL;
    json_t *b = json_object_get(root, "baseline");
    json_t *url = json_object_get(b, "url"), *sha = json_object_get(b, "sha256");
    int rc = 1;
    if (json_is_object(b))
        rc = json_is_string(url) && json_is_string(sha)
                 ? baseline_url_fetch(json_string_value(url), json_string_value(sha), path, len, NULL)
                 : (log_error("the scenario's baseline: needs \"url\" and \"sha256\""),
                    EXIT_USAGE);
    json_decref(root);
    return rc;
}

static int find_baseline(store *st, judgement *j, const baseline_query *q)
{
    char label[256], path[PATH_MAX];
    const char *spec = q->spec;
    int by_url = (!spec || !spec[0]) ? scenario_baseline_url(j->run.scenario_json, path,
                                                             sizeof path)
                                     : 1;
    if (by_url != 1) {
        snprintf(j->origin, sizeof j->origin, "the scenario's baseline URL (%.400s)", path);
        return by_url ? by_url : use_file(st, j, path, 1);
    }
    if (!spec || !spec[0]) {
        scenario_compare_config(j->run.scenario_json, j->run.dtype, j->run.dtype, &j->cfg, label,
                                sizeof label);
        if (!label[0]) {
            log_error("run %lld: its scenario names no default baseline (\"baseline\"); give "
                      "--baseline LABEL|RUN|FILE", (long long)j->run_id);
            return EXIT_USAGE;
        }
        spec = label;
    }
    if (is_file_spec(spec))
        return use_file(st, j, spec, 0);
    if (is_run_spec(spec)) {
        int64_t id = strtoll(spec, NULL, 10);
        snprintf(j->origin, sizeof j->origin, "run %lld", (long long)id);
        return load_base_run(st, j, id, "", q->cache);
    }
    return use_label(st, j, q, spec);
}

/* ---- judging ------------------------------------------------------------------------------ */

/* 1 when two scenario texts differ at most in "baseline" (which names the reference to compare
 * with, e.g. a URL the porting site added, not what is trained) */
int same_but_baseline(const char *a, const char *b)
{
    json_t *ja = a ? json_loads(a, 0, NULL) : NULL, *jb = b ? json_loads(b, 0, NULL) : NULL;
    int same = 0;
    if (json_is_object(ja) && json_is_object(jb)) {
        json_object_del(ja, "baseline");
        json_object_del(jb, "baseline");
        same = json_same_value(ja, jb); /* 1 and 1.0 are one number */
    }
    json_decref(ja);
    json_decref(jb);
    return same;
}

int scenarios_differ(const char *run_hash, const char *run_json, const char *base_hash,
                     const char *base_json, char *diff, size_t len)
{
    if (strcmp(run_hash, base_hash) == 0 || same_but_baseline(run_json, base_json))
        return 0;
    int n = scenario_json_diff(run_json, base_json, diff, len);
    if (n == 0) /* no field differs: the hashes differ by the spelling of a number (1 / 1.0) */
        return 0;
    if (n < 0)
        snprintf(diff, len, "unknown fields (the %s has no scenario JSON)",
                 run_json ? "baseline" : "run");
    return 1;
}

static int check_hashes(judgement *j, const baseline_query *q)
{
    if (!scenarios_differ(j->run.scenario_hash, j->run.scenario_json, j->base.scenario_hash,
                          j->base.scenario_json, j->diff, sizeof j->diff))
        return 0;
    if (q->force) {
        j->forced = 1;
        log_warn("run %lld and baseline %s have different scenarios (%s): compared anyway "
                 "(--force)", (long long)j->run_id, j->origin, j->diff);
        return 0;
    }
    log_error("run %lld (scenario %s, hash %.12s) and baseline %s (scenario %s, hash %.12s) ran "
              "different scenarios; they differ in %s. Record a new baseline, or pass --force "
              "to compare anyway", (long long)j->run_id, j->run.scenario, j->run.scenario_hash,
              j->origin, j->base.scenario, j->base.scenario_hash, j->diff);
    return EXIT_USAGE;
}

static int read_host(store *st, int64_t id, run_host *h)
{
    run_row r;
    if (store_get_run(st, id, &r))
        return EXIT_USAGE;
    snprintf(h->host, sizeof h->host, "%s", r.host);
    h->threads = r.threads;
    h->load_avg = r.load_avg;
    h->imported = r.imported;
    return 0;
}

void run_host_text(const run_host *h, char *out, size_t len)
{
    int n = snprintf(out, len, "%s", h->host[0] ? h->host : "unknown host");
    if (n > 0 && (size_t)n < len && h->threads > 0)
        n += snprintf(out + n, len - (size_t)n, ", %d threads", h->threads);
    if (n > 0 && (size_t)n < len && isfinite(h->load_avg))
        n += snprintf(out + n, len - (size_t)n, ", load %.2f", h->load_avg);
    if (n > 0 && (size_t)n < len && h->imported)
        snprintf(out + n, len - (size_t)n, ", imported");
}

int judge_throughput_gated(const judgement *j)
{
    return j->cfg.min_throughput_ratio >= 0;
}

/* the verdict that decides: --verdict over the scenario's; the ensemble's input must be there
 * (the golden's was checked before the baseline was looked for: golden_for_gate) */
static int choose_gate(judgement *j, const baseline_query *q)
{
    if (q->verdict && gate_parse(q->verdict, &j->cfg.gate)) {
        log_error("--verdict: '%s' is not band, error_ratio or ensemble", q->verdict);
        return EXIT_USAGE;
    }
    if (j->cfg.gate == GATE_ENSEMBLE && !j->base.loss_std) {
        char who[64];
        snprintf(who, sizeof who, "run %lld", (long long)j->run_id);
        return ensemble_missing_error(who, j->origin);
    }
    return 0;
}

/* the golden: the one named, else the default; the error_ratio verdict needs one */
static int golden_for_gate(store *st, judgement *j, const baseline_query *q)
{
    if (judge_find_golden(st, j, q)) {
        j->failure = JUDGE_NO_GOLDEN;
        return EXIT_USAGE;
    }
    if (judge_gate_of(q, j->run.scenario_json) != GATE_ERROR_RATIO || j->has_golden)
        return 0;
    char who[64];
    snprintf(who, sizeof who, "run %lld", (long long)j->run_id);
    j->failure = JUDGE_NO_GOLDEN_FOR_VERDICT;
    return golden_missing_error(who, j->run.scenario);
}

/* A baseline that recorded no loss at any of its steps ('-' or NULL in every row; a loss column
 * that is nan at every step reads the same, docs/baselines.md), or that has no step, cannot
 * judge a run, whose loss
 * is what every verdict holds against it: an input error, as a missing baseline is. 0 or 2. */
static int check_base_records_loss(const judgement *j)
{
    const baseline *b = &j->base;
    for (int i = 0; i < b->n_steps; i++)
        if (!(b->steps[i].unrecorded & STEP_NO_LOSS))
            return 0;
    if (b->n_steps == 0) {
        log_error("baseline %s: no steps ('steps: 0'): a baseline without losses cannot judge a "
                  "run", j->origin);
        return EXIT_USAGE;
    }
    log_error("baseline %s: loss: not recorded at any of its %d steps ('-' or nan in every row): "
              "a baseline without losses cannot judge a run", j->origin, b->n_steps);
    return EXIT_USAGE;
}

/* the baseline found, of the same scenario, and the configuration of the two */
/* an imported baseline judged against itself (its label names it) proves nothing: an input
 * error, as a baseline that cannot judge (docs/report.md: an imported baseline is never the run
 * under test). A run of this machine labelled as a baseline (baseline record) still compares
 * with its own label, trivially. */
static int check_not_itself(store *st, const judgement *j)
{
    run_row r;
    if (j->base_id == 0 || j->base_id != j->run_id || store_get_run(st, j->run_id, &r) ||
        !r.imported)
        return 0;
    log_error("run %lld is an imported baseline, and %s is that run itself: a baseline judged "
              "against itself proves nothing; name another baseline with --baseline",
              (long long)j->run_id, j->origin);
    return EXIT_USAGE;
}

static int baseline_for_run(store *st, judgement *j, const baseline_query *q)
{
    int rc = find_baseline(st, j, q);
    if (!rc)
        rc = check_not_itself(st, j);
    if (!rc)
        rc = check_hashes(j, q);
    if (!rc)
        rc = check_base_records_loss(j);
    if (!rc)
        rc = scenario_compare_config(j->run.scenario_json, j->run.dtype, j->base.dtype, &j->cfg,
                                     NULL, 0);
    if (!rc && ((rc = read_host(st, j->run_id, &j->run_at)) == 0))
        rc = read_host(st, j->base_id, &j->base_at);
    if (rc)
        j->failure = JUDGE_NO_BASELINE;
    return rc;
}

/* judge_run's work; what it writes (a committed baseline file imported on first use) is kept
 * only when it returns 0. The golden is looked for first: one named or needed that is missing
 * is an input error whether or not the baseline can be used. */
static int judge_run_in(store *st, int64_t run_id, const baseline_query *q, judgement *j)
{
    if (baseline_from_run(st, run_id, "", &j->run)) {
        j->failure = JUDGE_NO_RUN;
        return EXIT_USAGE;
    }
    int rc = golden_for_gate(st, j, q);
    if (!rc)
        rc = baseline_for_run(st, j, q);
    if (rc)
        return rc;
    /* an imported run was made on another machine, whatever its host name says ("vm",
     * "localhost" are common to many machines) */
    j->same_host = j->run_at.host[0] && strcmp(j->run_at.host, j->base_at.host) == 0 &&
                   !j->run_at.imported && !j->base_at.imported;
    if ((rc = choose_gate(j, q))) {
        j->failure = JUDGE_NO_ENSEMBLE;
        return rc;
    }
    j->cfg.warmup = q->warmup;
    series run = {j->run.steps, j->run.n_steps, j->run.status};
    series base = {j->base.steps, j->base.n_steps, j->base.status};
    series golden = {j->golden.steps, j->golden.n_steps, j->golden.status};
    compare_extras x = {j->has_golden ? &golden : NULL, j->base.loss_std, j->base.ensemble_runs};
    compare_runs_judged(&run, &base, &j->run.routing, &j->base.routing, &x, &j->cfg, &j->res);
    check_whole_run(j);
    return 0;
}

/* One write transaction around the whole judgement: a baseline file imported on first use and
 * then refused (another scenario, no golden, a verdict whose inputs are missing) is rolled
 * back, so an input error leaves the store as it was. A read-only store imports nothing. */
int judge_run(store *st, int64_t run_id, const baseline_query *q, judgement *j)
{
    memset(j, 0, sizeof *j);
    j->run_id = run_id;
    if (store_is_readonly(st))
        return judge_run_in(st, run_id, q, j);
    if (store_write_begin(st, "locking the store to judge a run")) {
        j->failure = JUDGE_STORE;
        return EXIT_FAIL;
    }
    int rc = judge_run_in(st, run_id, q, j);
    if (store_write_end(st, rc)) {
        j->failure = rc ? j->failure : JUDGE_STORE;
        return rc ? rc : EXIT_FAIL;
    }
    if (j->imported_id) {
        size_t used = strlen(j->origin);
        snprintf(j->origin + used, sizeof j->origin - used, " (imported as run %lld)",
                 (long long)j->imported_id);
    }
    return 0;
}

const char *judge_failure_text(judge_failure f)
{
    switch (f) {
    case JUDGE_OK: return "";
    case JUDGE_NO_RUN: return "the run could not be read";
    case JUDGE_NO_BASELINE: return "no usable baseline";
    case JUDGE_NO_GOLDEN: return "no usable golden run";
    case JUDGE_NO_GOLDEN_FOR_VERDICT: return "no golden run, which the error_ratio verdict needs";
    case JUDGE_NO_ENSEMBLE: return "a single-run baseline, and the ensemble verdict needs an "
                                   "ensemble";
    case JUDGE_STORE: return "the store could not be locked or written";
    }
    return "not judged";
}

int judge_failure_is_input_error(judge_failure f)
{
    return f == JUDGE_NO_GOLDEN || f == JUDGE_NO_GOLDEN_FOR_VERDICT || f == JUDGE_NO_ENSEMBLE ||
           f == JUDGE_STORE;
}

void judge_free(judgement *j)
{
    baseline_free(&j->run);
    baseline_free(&j->base);
    baseline_free(&j->golden);
}

int judge_store(store *st, const judgement *j)
{
    json_t *details = judge_json(j);
    char *text = json_dumps_short(details, JSON_COMPACT);
    json_decref(details);
    const metric_summary *loss = &j->res.loss; /* nothing compared: no difference (NULL) */
    int rc = store_add_comparison(st, j->run_id, j->base_id, verdict_name(j->res.v),
                                  j->res.first_fail_step, loss->compared ? loss->max_abs : NAN,
                                  loss->compared ? loss->max_rel : NAN, text);
    free(text);
    return rc;
}

/* ---- text --------------------------------------------------------------------------------- */

static void print_metric(FILE *f, const char *name, const metric_summary *m, tolerance t)
{
    if (!m->recorded) {
        fprintf(f, "%-11s not compared: %s\n", name,
                m->not_recorded ? m->not_recorded : "the baseline does not record it");
        return;
    }
    if (!m->compared) { /* no difference to speak of: not "0 (step 0)" */
        fprintf(f, "%-11s 0 steps compared; max |diff| none; tolerance %.3g + %.3g*|ref|\n", name,
                t.atol, t.rtol);
        return;
    }
    fprintf(f, "%-11s %d steps compared, %d out of tolerance; max |diff| %.3g (step %d), "
               "max rel %.3g (step %d); tolerance %.3g + %.3g*|ref|\n",
            name, m->compared, m->failed, m->max_abs, m->max_abs_step, m->max_rel,
            m->max_rel_step, t.atol, t.rtol);
}

static void print_ratio(FILE *f, const char *name, double run, double base, double ratio,
                        const char *unit, double scale, const char *gate, double limit)
{
    fprintf(f, "%-11s ", name);
    if (isnan(run) || isnan(base))
        fprintf(f, "%s", isnan(base) ? "not in the baseline" : "not recorded");
    else
        fprintf(f, "%.1f %s vs %.1f %s: %.3fx", run / scale, unit, base / scale, unit, ratio);
    if (limit >= 0)
        fprintf(f, " [gate %s %gx]", gate, limit);
    else
        fprintf(f, " (informational, not gated: the scenario sets no %s)",
                gate[0] == '>' ? "min_throughput_ratio" : "max_memory_ratio");
    fputc('\n', f);
}

/* the hosts of both sides, and what a ratio between different machines means */
static void print_hosts(FILE *f, const judgement *j)
{
    char run[400], base[400];
    run_host_text(&j->run_at, run, sizeof run);
    run_host_text(&j->base_at, base, sizeof base);
    fprintf(f, "%-10s run: %s; baseline: %s\n", "hosts", term_safe(run), term_safe(base));
    if (!j->same_host)
        fprintf(f, "           different hosts: the throughput and memory ratios compare two "
                   "machines, not just the port\n");
}

/* the routing drift: nothing when neither side has expert counts */
static void print_routing(FILE *f, const routing_drift *d, double rtol)
{
    if (!d->run_steps && !d->base_steps)
        return;
    fprintf(f, "%-11s ", "routing");
    if (!d->run_steps || !d->base_steps) {
        fprintf(f, "not compared: only the %s has expert counts\n",
                d->run_steps ? "run" : "baseline");
        return;
    }
    if (d->shape_differs) {
        fprintf(f, "not compared: the run has %d layers x %d experts, the baseline %d x %d%s\n",
                d->layers, d->experts, d->base_layers, d->base_experts,
                d->gated ? " [fails: expert_tokens_rtol is set]" : "");
        return;
    }
    if (!d->compared) {
        fprintf(f, "not compared: no step has counts on both sides (the run's %d, the "
                   "baseline's %d)\n", d->run_steps, d->base_steps);
        return;
    }
    fprintf(f, "%d steps compared (%d layers x %d experts); ", d->compared, d->layers,
            d->experts);
    if (!d->first_diff_step)
        fprintf(f, "identical counts");
    else
        fprintf(f, "first differing step %d; max |diff| %.0f tokens (step %d, layer %d, expert "
                   "%d), max rel %.3g (step %d, layer %d, expert %d)", d->first_diff_step,
                d->max_abs, d->max_abs_step, d->max_abs_layer, d->max_abs_expert, d->max_rel,
                d->max_rel_step, d->max_rel_layer, d->max_rel_expert);
    if (d->gated)
        fprintf(f, "; tolerance %.3g*ref: %d steps past it%s", rtol, d->failed,
                d->first_fail_step ? ", first " : "");
    else
        fprintf(f, " (informational: the scenario sets no expert_tokens_rtol)");
    if (d->gated && d->first_fail_step)
        fprintf(f, "%d", d->first_fail_step);
    fputc('\n', f);
}

/* the error ratio to the golden run: nothing when there is no golden */
static void print_error_ratio(FILE *f, const judgement *j)
{
    const error_ratio_result *e = &j->res.error_ratio;
    if (!j->has_golden)
        return;
    fprintf(f, "%-11s golden %s: %s on %s, %s\n", "golden", term_safe(j->golden_origin),
            term_safe(j->golden.scenario), term_safe(j->golden.device), term_safe(j->golden.dtype));
    if (!e->compared) {
        fprintf(f, "%-11s not computed: no step in all of run, baseline and golden\n",
                "error_ratio");
        return;
    }
    fprintf(f, "%-11s RMSE(run - golden) %.3g, RMSE(baseline - golden) %.3g over %d steps: "
               "ratio %.3g; rule <= %.3g * ref + %.3g: %s; msprobe %s; largest step ratio %.3g "
               "(step %d)%s\n", "error_ratio", e->rmse_run, e->rmse_ref, e->compared, e->ratio,
            e->k, e->floor, e->passed ? "pass" : "fail", e->msprobe, e->max_step_ratio,
            e->max_step, j->cfg.gate == GATE_ERROR_RATIO ? " [decides]" : "");
}

/* the ensemble band: nothing when the baseline is a single run */
static void print_ensemble(FILE *f, const judgement *j)
{
    const ensemble_result *n = &j->res.ensemble;
    if (!j->res.has_ensemble)
        return;
    fprintf(f, "%-11s %d runs; %d steps compared, %d outside mean +- %.3g * std + %.3g; largest "
               "|loss - mean| / std %.3g (step %d)%s\n", "ensemble", n->members, n->compared,
            n->failed, n->k, n->floor, n->max_z, n->max_z_step,
            j->cfg.gate == GATE_ENSEMBLE ? " [decides]" : "");
}

static void print_side(FILE *f, const char *what, const baseline *b, int64_t id)
{
    fprintf(f, "%-10s %lld: %s on %s (%s), %s, %d steps, %s\n", what, (long long)id,
            term_safe(b->scenario), term_safe(b->device), term_safe(b->device_name),
            term_safe(b->dtype), b->n_steps, term_safe(b->status));
}

/* the run's steps past the baseline's last: not compared, said (a baseline cut short passed a
 * run that drifted after its end without a word) */
static void print_uncompared_tail(FILE *f, const judgement *j)
{
    const baseline *r = &j->run, *b = &j->base;
    if (!r->n_steps || !b->n_steps)
        return;
    int run_last = r->steps[r->n_steps - 1].step, base_last = b->steps[b->n_steps - 1].step;
    if (run_last == base_last + 1)
        fprintf(f, "%-11s the baseline ends at step %d: the run's step %d is not compared\n",
                "note", base_last, run_last);
    else if (run_last > base_last)
        fprintf(f, "%-11s the baseline ends at step %d: the run's steps %d..%d are not compared\n",
                "note", base_last, base_last + 1, run_last);
}

void judge_print(FILE *f, const judgement *j)
{
    const compare_result *r = &j->res;
    print_side(f, "run", &j->run, j->run_id);
    print_side(f, "baseline", &j->base, j->base_id);
    fprintf(f, "%-10s %s\n", "  from", term_safe(j->origin));
    for (int i = 0; i < j->base.n_extra; i++)
        fprintf(f, "  %s: %s\n", term_safe(j->base.extra[i].key),
                term_safe(j->base.extra[i].value));
    print_hosts(f, j);
    if (j->forced)
        fprintf(f, "FORCED: the scenarios differ in %s\n", term_safe(j->diff));
    print_metric(f, "loss", &r->loss, j->cfg.loss);
    print_metric(f, "grad_norm", &r->grad_norm, j->cfg.grad_norm);
    print_uncompared_tail(f, j);
    print_error_ratio(f, j);
    print_ensemble(f, j);
    print_ratio(f, "throughput", r->run_tokens_per_s, r->base_tokens_per_s, r->throughput_ratio,
                "tok/s", 1, ">=", j->cfg.min_throughput_ratio);
    fprintf(f, "            (median tokens/s after %d and %d warm-up steps)\n", r->run_warmup,
            r->base_warmup);
    print_ratio(f, "memory", r->run_mem_peak, r->base_mem_peak, r->memory_ratio, "MiB",
                1048576.0, "<=", j->cfg.max_memory_ratio);
    print_routing(f, &r->routing, j->cfg.expert_tokens_rtol);
    if (r->first_fail_step)
        fprintf(f, "first failing step: %d (%s)\n", r->first_fail_step, r->first_fail_metric);
    if (j->cfg.gate != GATE_BAND)
        fprintf(f, "decided by: %s (the band's steps out of tolerance are shown, not gated)\n",
                gate_name(j->cfg.gate));
    fprintf(f, "verdict: %s%s%s\n", verdict_name(r->v), r->reason[0] ? ": " : "", r->reason);
}

/* ---- JSON --------------------------------------------------------------------------------- */

static json_t *side_json(const baseline *b, int64_t id)
{
    json_t *o = json_object();
    json_object_set_new(o, "run", json_integer(id));
    json_object_set_new(o, "scenario", json_text(b->scenario));
    json_object_set_new(o, "scenario_hash", json_text(b->scenario_hash));
    json_object_set_new(o, "device", json_text(b->device));
    json_object_set_new(o, "device_name", json_text(b->device_name));
    json_object_set_new(o, "dtype", json_text(b->dtype));
    json_object_set_new(o, "status", json_text(b->status));
    json_object_set_new(o, "steps", json_integer(b->n_steps));
    if (b->n_extra) {
        json_t *extra = json_object();
        for (int i = 0; i < b->n_extra; i++)
            json_object_set_new(extra, b->extra[i].key, json_text(b->extra[i].value));
        json_object_set_new(o, "extra", extra);
    }
    return o;
}

/* a figure that may be +Inf by its definition (a ratio over a zero reference): "inf" as runs
 * and show --json write it; a NaN (not computed) is null */
static json_t *json_num_inf(double v)
{
    return isinf(v) ? json_string(v > 0 ? "inf" : "-inf") : json_num(v);
}

/* a difference: a number, "inf" or "nan" as runs and show --json write them (a NaN or an
 * infinity was compared); null when nothing was compared */
static json_t *difference_json(const metric_summary *m, double v)
{
    if (!m->compared)
        return json_null();
    return isnan(v) ? json_string("nan") : json_num_inf(v);
}

static json_t *metric_json(const metric_summary *m, tolerance t)
{
    json_t *o = json_object();
    json_object_set_new(o, "recorded", json_boolean(m->recorded));
    json_object_set_new(o, "compared", json_integer(m->compared));
    json_object_set_new(o, "failed", json_integer(m->failed));
    json_object_set_new(o, "max_abs", difference_json(m, m->max_abs));
    json_object_set_new(o, "max_abs_step",
                        m->compared ? json_integer(m->max_abs_step) : json_null());
    json_object_set_new(o, "max_rel", difference_json(m, m->max_rel));
    json_object_set_new(o, "max_rel_step",
                        m->compared ? json_integer(m->max_rel_step) : json_null());
    json_object_set_new(o, "first_failing_step",
                        m->first_fail ? json_integer(m->first_fail) : json_null());
    json_object_set_new(o, "rtol", json_num(t.rtol));
    json_object_set_new(o, "atol", json_num(t.atol));
    return o;
}

static json_t *ratio_json(double run, double base, double ratio, double gate, int failed,
                          int same_host)
{
    json_t *o = json_object();
    json_object_set_new(o, "gated", json_boolean(gate >= 0));
    json_object_set_new(o, "note", json_string(
        gate >= 0 ? (same_host ? "gated by the scenario" : "gated by the scenario; the hosts "
                                                           "differ")
                  : same_host ? "informational, not gated (the scenario sets no gate)"
                              : "informational, not gated (the scenario sets no gate); the "
                                "hosts differ, so it compares two machines"));
    json_object_set_new(o, "run", json_num(run));
    json_object_set_new(o, "baseline", json_num(base));
    json_object_set_new(o, "ratio", json_num(ratio));
    json_object_set_new(o, "gate", gate >= 0 ? json_num(gate) : json_null());
    json_object_set_new(o, "gate_failed", json_boolean(failed));
    return o;
}

static void add_host_json(json_t *o, const run_host *h)
{
    json_object_set_new(o, "host", h->host[0] ? json_text(h->host) : json_null());
    json_object_set_new(o, "threads", h->threads > 0 ? json_integer(h->threads) : json_null());
    json_object_set_new(o, "load_avg", json_num(h->load_avg));
    json_object_set_new(o, "imported", json_boolean(h->imported));
}

/* per step of both sides: {"step", "max_abs", "max_rel", "layer", "expert"} (the cell of the
 * largest absolute difference) */
static json_t *routing_steps_json(const routing_table *run, const routing_table *base)
{
    json_t *a = json_array();
    size_t cells = (size_t)run->layers * (size_t)run->experts, at;
    for (int i = 0; a && i < run->n; i++) {
        int k = routing_find_step(base, run->steps[i]);
        if (k < 0)
            continue;
        double abs, rel;
        routing_step_diff(routing_counts(run, i), routing_counts(base, k), cells, &abs, &rel, &at);
        json_t *o = json_pack("{s:i, s:o, s:o, s:i, s:i}", "step", run->steps[i], "max_abs",
                              json_num(abs), "max_rel", json_num_inf(rel), "layer",
                              (int)(at / (size_t)run->experts), "expert",
                              (int)(at % (size_t)run->experts));
        if (json_array_append_new(a, o)) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

/* the routing drift ("expert_tokens"), null when neither side has counts */
static json_t *routing_json(const judgement *j)
{
    const routing_drift *d = &j->res.routing;
    if (!d->run_steps && !d->base_steps)
        return json_null();
    int both = d->run_steps && d->base_steps && !d->shape_differs;
    int any = both && d->compared > 0; /* figures only where a count was compared */
    json_t *o = json_pack("{s:i, s:i, s:i, s:i, s:b, s:i, s:b, s:o, s:i}", "run_steps",
                          d->run_steps, "baseline_steps", d->base_steps, "layers", d->layers,
                          "experts", d->experts, "shape_differs", d->shape_differs, "compared",
                          d->compared, "gated", d->gated, "rtol",
                          d->gated ? json_num(j->cfg.expert_tokens_rtol) : json_null(),
                          "failed", d->failed);
    if (!o)
        return NULL;
    json_object_set_new(o, "first_differing_step",
                        d->first_diff_step ? json_integer(d->first_diff_step) : json_null());
    json_object_set_new(o, "first_failing_step",
                        d->first_fail_step ? json_integer(d->first_fail_step) : json_null());
    json_object_set_new(o, "baseline_layers", json_integer(d->base_layers));
    json_object_set_new(o, "baseline_experts", json_integer(d->base_experts));
    json_object_set_new(o, "max_abs", any ? json_num(d->max_abs) : json_null());
    json_object_set_new(o, "max_abs_at",
                        any ? json_pack("{s:i, s:i, s:i}", "step", d->max_abs_step, "layer",
                                        d->max_abs_layer, "expert", d->max_abs_expert)
                            : json_null());
    json_object_set_new(o, "max_rel", any ? json_num_inf(d->max_rel) : json_null());
    json_object_set_new(o, "max_rel_at",
                        any ? json_pack("{s:i, s:i, s:i}", "step", d->max_rel_step, "layer",
                                        d->max_rel_layer, "expert", d->max_rel_expert)
                            : json_null());
    json_object_set_new(o, "steps", both ? routing_steps_json(&j->run.routing, &j->base.routing)
                                         : json_array());
    return o;
}

/* the per-step ratios |D - G| / |R - G|: [{"step", "ratio"}] (null where not computed) */
static json_t *error_ratio_steps_json(const judgement *j)
{
    const baseline *r = &j->run, *b = &j->base, *g = &j->golden;
    double *ratio = malloc(sizeof *ratio * (size_t)(r->n_steps ? r->n_steps : 1));
    json_t *a = json_array();
    if (!ratio || !a) {
        free(ratio);
        json_decref(a);
        return NULL;
    }
    error_ratio_result e;
    error_ratio(r->steps, r->n_steps, b->steps, b->n_steps, g->steps, g->n_steps, 1, 0, &e,
                ratio);
    for (int i = 0; i < r->n_steps; i++)
        json_array_append_new(a, json_pack("{s:i, s:o}", "step", r->steps[i].step, "ratio",
                                           json_num_inf(ratio[i])));
    free(ratio);
    return a;
}

static json_t *error_ratio_json(const judgement *j)
{
    const error_ratio_result *e = &j->res.error_ratio;
    if (!j->has_golden)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "golden_run", j->golden_id ? json_integer(j->golden_id) : json_null());
    json_object_set_new(o, "golden_origin", json_text(j->golden_origin));
    json_object_set_new(o, "compared", json_integer(e->compared));
    json_object_set_new(o, "rmse_run", json_num_inf(e->rmse_run));
    json_object_set_new(o, "rmse_baseline", json_num_inf(e->rmse_ref));
    json_object_set_new(o, "ratio", e->compared ? json_num_inf(e->ratio) : json_null());
    json_object_set_new(o, "k", json_num(e->k));
    json_object_set_new(o, "floor", json_num(e->floor));
    json_object_set_new(o, "passed", json_boolean(e->passed));
    json_object_set_new(o, "msprobe", e->msprobe ? json_string(e->msprobe) : json_null());
    json_object_set_new(o, "max_step", json_integer(e->max_step));
    json_object_set_new(o, "max_step_ratio", json_num_inf(e->max_step_ratio));
    json_object_set_new(o, "steps", error_ratio_steps_json(j));
    return o;
}

static json_t *ensemble_json(const judgement *j)
{
    const ensemble_result *n = &j->res.ensemble;
    if (!j->res.has_ensemble)
        return json_null();
    return json_pack("{s:i, s:i, s:i, s:o, s:o, s:o, s:i, s:o}", "runs", n->members, "compared",
                     n->compared, "failed", n->failed, "first_failing_step",
                     n->first_fail ? json_integer(n->first_fail) : json_null(), "k",
                     json_num(n->k), "floor", json_num(n->floor), "max_z_step", n->max_z_step,
                     "max_z", json_num_inf(n->max_z));
}

json_t *judge_json(const judgement *j)
{
    const compare_result *r = &j->res;
    json_t *o = json_object(), *base = side_json(&j->base, j->base_id);
    json_t *run = side_json(&j->run, j->run_id);
    add_host_json(run, &j->run_at);
    add_host_json(base, &j->base_at);
    json_object_set_new(base, "label", json_text(j->base.label));
    json_object_set_new(base, "origin", json_text(j->origin));
    json_object_set_new(o, "kind", json_string("baseline"));
    json_object_set_new(o, "run", run);
    json_object_set_new(o, "baseline", base);
    json_object_set_new(o, "same_host", json_boolean(j->same_host));
    json_object_set_new(o, "forced", json_boolean(j->forced));
    json_object_set_new(o, "scenario_diff", j->diff[0] ? json_text(j->diff) : json_null());
    json_object_set_new(o, "loss", metric_json(&r->loss, j->cfg.loss));
    json_object_set_new(o, "grad_norm", metric_json(&r->grad_norm, j->cfg.grad_norm));
    json_t *tp = ratio_json(r->run_tokens_per_s, r->base_tokens_per_s, r->throughput_ratio,
                            j->cfg.min_throughput_ratio, r->throughput_gate_failed,
                            j->same_host);
    json_object_set_new(tp, "run_warmup", json_integer(r->run_warmup));
    json_object_set_new(tp, "baseline_warmup", json_integer(r->base_warmup));
    json_object_set_new(o, "throughput", tp);
    json_object_set_new(o, "memory", ratio_json(r->run_mem_peak, r->base_mem_peak, r->memory_ratio,
                                                j->cfg.max_memory_ratio, r->memory_gate_failed,
                                                j->same_host));
    json_object_set_new(o, "expert_tokens", routing_json(j));
    json_object_set_new(o, "error_ratio", error_ratio_json(j));
    json_object_set_new(o, "ensemble", ensemble_json(j));
    json_object_set_new(o, "decided_by", json_string(gate_name(j->cfg.gate)));
    json_object_set_new(o, "first_failing_step",
                        r->first_fail_step ? json_integer(r->first_fail_step) : json_null());
    json_object_set_new(o, "first_failing_metric", r->first_fail_metric
                                                       ? json_string(r->first_fail_metric)
                                                       : json_null());
    json_object_set_new(o, "verdict", json_string(verdict_name(r->v)));
    json_object_set_new(o, "reason", json_text(r->reason));
    return o;
}

/* ---- history ------------------------------------------------------------------------------ */

#define HISTORY_WINDOW 20

static int previous_values(store *st, history_judgement *h)
{
    int rc = store_previous_runs(st, h->run_id, h->window, &h->prev_ids, &h->n_prev);
    if (rc)
        return rc;
    h->prev_values = calloc((size_t)(h->n_prev ? h->n_prev : 1), sizeof *h->prev_values);
    if (!h->prev_values) {
        log_error("out of memory reading the history of run %lld", (long long)h->run_id);
        return EXIT_USAGE;
    }
    for (int i = 0; i < h->n_prev && !rc; i++) {
        step_record *steps;
        int n;
        if ((rc = store_get_steps(st, h->prev_ids[i], &steps, &n)) == 0) {
            int w = h->warmup >= 0 ? h->warmup : default_warmup(n);
            h->prev_values[i] = median_tokens_per_s(steps, n, w);
            free(steps);
        }
    }
    return rc;
}

int judge_history(store *st, int64_t run_id, history_judgement *h)
{
    int warmup = h->warmup, window = h->window;
    history_config cfg = h->cfg;
    memset(h, 0, sizeof *h);
    h->run_id = run_id;
    h->warmup = warmup;
    h->window = window > 0 ? window : HISTORY_WINDOW;
    h->cfg = cfg;
    if (baseline_from_run(st, run_id, "", &h->run) || previous_values(st, h))
        return EXIT_USAGE;
    const baseline *b = &h->run;
    int w = warmup >= 0 ? warmup : default_warmup(b->n_steps);
    double value = median_tokens_per_s(b->steps, b->n_steps, w);
    history_check(value, h->prev_values, h->n_prev, &h->cfg, &h->res);
    h->v = h->res.regressed ? VERDICT_FAIL : VERDICT_PASS;
    if (strcmp(b->status, "diverged") == 0)
        h->v = VERDICT_DIVERGED;
    else if (strcmp(b->status, "ok") != 0)
        h->v = VERDICT_INCOMPLETE;
    return 0;
}

json_t *judge_history_json(const history_judgement *h)
{
    const history_result *r = &h->res;
    json_t *o = json_object(), *ids = json_array();
    for (int i = 0; i < h->n_prev; i++)
        json_array_append_new(ids, json_integer(h->prev_ids[i]));
    json_object_set_new(o, "kind", json_string("history"));
    json_object_set_new(o, "run", side_json(&h->run, h->run_id));
    json_object_set_new(o, "previous_runs", ids);
    json_object_set_new(o, "statistic", json_string("median tokens/s after warm-up; threshold "
                                                    "median - max(k*1.4826*MAD, min_drop*median)"));
    json_object_set_new(o, "value", json_num(r->value));
    json_object_set_new(o, "median", json_num(r->median));
    json_object_set_new(o, "mad", json_num(r->mad));
    json_object_set_new(o, "threshold", json_num(r->threshold));
    json_object_set_new(o, "ratio", json_num(r->ratio));
    json_object_set_new(o, "k", json_num(h->cfg.k));
    json_object_set_new(o, "min_drop", json_num(h->cfg.min_drop));
    json_object_set_new(o, "insufficient", json_boolean(r->insufficient));
    json_object_set_new(o, "regressed", json_boolean(r->regressed));
    json_object_set_new(o, "verdict", json_string(verdict_name(h->v)));
    return o;
}

void judge_history_print(FILE *f, const history_judgement *h)
{
    const history_result *r = &h->res;
    print_side(f, "run", &h->run, h->run_id);
    fprintf(f, "history    %d previous ok runs of this scenario on %s (window %d)\n", r->n,
            term_safe(h->run.device_name[0] ? h->run.device_name : h->run.device), h->window);
    if (isfinite(r->value))
        fprintf(f, "throughput %.1f tok/s", r->value);
    else
        fprintf(f, "throughput not recorded");
    if (r->n == 0)
        fprintf(f, "; no history: no previous ok run of this scenario on this device\n");
    else
        fprintf(f, "; previous median %.1f, MAD %.1f; flagged below %.1f "
                   "(median - max(%.3g*1.4826*MAD, %.3g*median))\n",
                r->median, r->mad, r->threshold, h->cfg.k, h->cfg.min_drop);
    if (r->insufficient)
        fprintf(f, "not enough history: %d previous runs, %d needed; nothing is flagged\n", r->n,
                h->cfg.min_runs);
    fprintf(f, "verdict: %s%s\n", verdict_name(h->v),
            r->regressed ? ": throughput regression" : h->v != VERDICT_PASS ? ": the run did "
                                                                              "not finish ok"
                                                                            : "");
}

int judge_history_store(store *st, const history_judgement *h)
{
    json_t *details = judge_history_json(h);
    char *text = json_dumps_short(details, JSON_COMPACT);
    json_decref(details);
    int rc = store_add_comparison(st, h->run_id, h->n_prev ? h->prev_ids[0] : h->run_id,
                                  verdict_name(h->v), 0, NAN, NAN, text);
    free(text);
    return rc;
}

void judge_history_free(history_judgement *h)
{
    baseline_free(&h->run);
    free(h->prev_ids);
    free(h->prev_values);
    h->prev_ids = NULL;
    h->prev_values = NULL;
}
