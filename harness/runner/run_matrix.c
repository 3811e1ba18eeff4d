/* harness/runner/run_matrix.c: `harness run SCENARIO... --device A,B|all --compare`: every scenario on
 * every device, each run compared with its baseline, one summary table, the worst verdict. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "judge/baseline_args.h"
#include "judge/judge.h"
#include "runner.h"
#include "util/util.h"

#define MAX_DEVICES 32

typedef struct {
    char scenario[256], device[DEVICE_SPEC_MAX];
    int64_t run_id;
    int error;         /* an input error: no scenario, device or baseline (exit 2) */
    int setup_failed;  /* the device failed while the run was prepared: not recorded, a fail */
    char note[256];
    int judged;
    verdict v;
    int first_fail, steps;
    double max_abs, tokens_per_s, ratio;
    char status[16];
    /* what the throughput ratio means: gated by the scenario or informational, and where the
     * baseline ran (another host, other threads: then the ratio compares machines too) */
    char ratio_note[224];
} cell;

typedef struct {
    cell *cells;
    int n, cap;
} matrix;

static cell *add_cell(matrix *m, const char *scenario, const char *device)
{
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 16;
        cell *grown = realloc(m->cells, sizeof *grown * (size_t)cap);
        if (!grown)
            return NULL;
        m->cells = grown;
        m->cap = cap;
    }
    cell *c = &m->cells[m->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->scenario, sizeof c->scenario, "%s", scenario);
    snprintf(c->device, sizeof c->device, "%s", device);
    return c;
}

/* ---- the device list ---------------------------------------------------------------------- */

/* backends compiled in that have at least one device, cpu64 left out */
static int all_devices(char specs[][DEVICE_SPEC_MAX], int max)
{
    device_info info[64];
    int n_info = device_list(info, 64), n = 0;
    for (const char *const *b = device_backends(); *b && n < max; b++) {
        if (strcmp(*b, "cpu64") == 0)
            continue;
        size_t len = strlen(*b);
        for (int i = 0; i < n_info; i++)
            if (strncmp(info[i].spec, *b, len) == 0 &&
                (info[i].spec[len] == 0 || info[i].spec[len] == ':')) {
                snprintf(specs[n++], DEVICE_SPEC_MAX, "%s", *b);
                break;
            }
    }
    return n;
}

static int parse_devices(const char *list, char specs[][DEVICE_SPEC_MAX], int max, int *n)
{
    *n = 0;
    if (strcmp(list, "all") == 0) {
        *n = all_devices(specs, max);
        return *n ? 0 : (log_error("run: --device all: this build has no device"), EXIT_USAGE);
    }
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        if (len >= DEVICE_SPEC_MAX) {
            log_error("run: --device '%.60s...': longer than %d bytes", p, DEVICE_SPEC_MAX - 1);
            return EXIT_USAGE;
        }
        if (len == 0 || *n == max) {
            log_error("run: --device '%s': expected SPEC[,SPEC...] (at most %d, each non-empty) "
                      "or all", list, max);
            return EXIT_USAGE;
        }
        snprintf(specs[(*n)++], DEVICE_SPEC_MAX, "%.*s", (int)len, p);
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

/* ---- one cell ----------------------------------------------------------------------------- */

static void note_ratio(const judgement *j, cell *c)
{
    char base[128];
    run_host_text(&j->base_at, base, sizeof base);
    if (judge_throughput_gated(j))
        snprintf(c->ratio_note, sizeof c->ratio_note, "gated >= %gx; baseline: %s",
                 j->cfg.min_throughput_ratio, base);
    else
        snprintf(c->ratio_note, sizeof c->ratio_note, "not gated%s; baseline: %s",
                 j->same_host ? "" : ", another host", base);
}

/* how a cell's baseline is looked up: --baseline (or the scenario's label), --baselines, and
 * the committed files beside the scenario */
static baseline_query cell_query(const run_args *a, const scenario *s)
{
    return (baseline_query){a->baseline, s->path, a->baselines, 0, -1, NULL, NULL, NULL};
}

static void judge_cell(store *st, const run_args *a, const scenario *s, cell *c)
{
    baseline_query q = cell_query(a, s);
    judgement j;
    if (judge_run(st, c->run_id, &q, &j)) {
        c->error = 1;
        snprintf(c->note, sizeof c->note, "%s", judge_failure_text(j.failure));
    } else {
        if (judge_store(st, &j))
            c->error = 1;
        if (!a->quiet || j.res.v != VERDICT_PASS) /* CI logs show why, even when quiet */
            judge_print(stdout, &j);
        c->judged = 1;
        c->v = j.res.v;
        c->first_fail = j.res.first_fail_step;
        c->max_abs = j.res.loss.compared ? j.res.loss.max_abs : NAN;
        c->tokens_per_s = j.res.run_tokens_per_s;
        c->ratio = j.res.throughput_ratio;
        note_ratio(&j, c);
    }
    c->steps = j.run.n_steps;
    snprintf(c->status, sizeof c->status, "%s", j.run.status);
    judge_free(&j);
}

/* the store, opened when the first run is about to be recorded: a matrix whose cells all end
 * in input errors leaves it as it was (not even created) */
typedef struct {
    const run_args *a;
    store *st;
} recorder;

/* Whether the scenario's baseline (a label, a run id, the scenario's default) can be found,
 * finished and of the same scenario, and what its deciding verdict needs besides (a golden run
 * for error_ratio, an ensemble baseline for ensemble), before anything is trained: 0 (*why
 * JUDGE_OK when all is there), or store_open's code (the matrix stops). A store that does not
 * exist yet is not created here. */
static int baseline_ready(recorder *r, const scenario *s, judge_failure *why)
{
    const run_args *a = r->a;
    baseline_query q = cell_query(a, s);
    int rc = !r->st && store_file_has_data(a->db) ? store_open(a->db, &r->st) : 0;
    *why = JUDGE_OK;
    if (rc)
        return rc;
    judge_inputs_known(r->st, &q, s->name, s->json, s->hash, s->dtype, why);
    return 0;
}

/* the reason an entry's cells do not train, for the summary: the cause named */
static const char *unusable_why(judge_failure why)
{
    switch (why) {
    case JUDGE_NO_GOLDEN_FOR_VERDICT:
        return "no golden run, which the error_ratio verdict needs (see above); not trained";
    case JUDGE_NO_ENSEMBLE:
        return "the baseline is a single run, and the ensemble verdict needs an ensemble (see "
               "above); not trained";
    case JUDGE_NO_GOLDEN:
        return "no usable golden run (see above); not trained";
    default:
        return "no usable baseline (see above); not trained";
    }
}

/* prepares, records and judges one cell (its inputs checked before: check_matrix); 0, or
 * store_open's code when the store cannot open */
static int run_cell(recorder *r, const scenario *s, cell *c)
{
    const run_args *a = r->a;
    char err[512];
    device *d = device_open(c->device, err, sizeof err);
    if (!d) {
        log_error("run: --device %s: %s", c->device, err);
        c->error = 1;
        snprintf(c->note, sizeof c->note, "%.250s", err);
        return 0;
    }
    run_args one = *a;
    one.scenario = s->path;
    trainer *tr = NULL;
    int rc = runner_prepare(s, d, &one, &tr), store_rc = 0;
    if (rc) {
        c->error = rc == EXIT_USAGE;
        c->setup_failed = rc != EXIT_USAGE;
        snprintf(c->note, sizeof c->note, "the run could not start (see above); not recorded");
    } else if (r->st || (store_rc = store_open(a->db, &r->st)) == 0) {
        if (!a->quiet)
            printf("scenario %s on %s (%s, %s), recording into %s\n", term_safe(s->name),
                   d->backend, term_safe(d->name), train_run_dtype(d), term_safe(a->db));
        runner_record(tr, s, d, r->st, &one, &c->run_id);
    }
    train_free(tr);
    device_close(d);
    if (c->run_id)
        judge_cell(r->st, a, s, c);
    else if (!c->error && !c->setup_failed) { /* begin_run failed, or the store did not open */
        c->error = 1;
        snprintf(c->note, sizeof c->note, "the run could not be recorded (see above)");
    }
    return store_rc;
}

/* ---- what is checked before any cell trains ------------------------------------------------ */

/* one scenario file of the matrix, loaded and checked before anything trains */
typedef struct {
    scenario s;
    const char *why; /* NULL, or why its cells cannot run (an input error, message printed) */
} entry;

/* every listed device opened and closed again: why[i] says why spec i does not open ("" when
 * it does); returns how many do not */
static int check_devices(char specs[][DEVICE_SPEC_MAX], int n_dev, char why[][256])
{
    int bad = 0;
    for (int i = 0; i < n_dev; i++) {
        char err[512];
        device *d = device_open(specs[i], err, sizeof err);
        why[i][0] = 0;
        if (d) {
            device_close(d);
            continue;
        }
        log_error("run: --device %s: %s", specs[i], err);
        snprintf(why[i], 256, "%.250s", err);
        bad++;
    }
    return bad;
}

/* a trial preparation of s on device spec (its data, tokenizer and model files read and
 * checked), freed again: 0, or 2 on an input error (message printed). A device that fails is
 * left to the cell. */
static int trial_prepare(const run_args *a, const scenario *s, const char *spec)
{
    char err[512];
    device *d = device_open(spec, err, sizeof err);
    if (!d)
        return 0;
    run_args one = *a;
    one.scenario = s->path;
    trainer *tr = NULL;
    int rc = runner_prepare(s, d, &one, &tr);
    train_free(tr);
    device_close(d);
    return rc == EXIT_USAGE ? EXIT_USAGE : 0;
}

/* Loads scenario file path into e and checks what its cells need: the scenario, its baseline,
 * and (trial on spec, NULL for none) its data and model. 0, or store_open's code. */
static int check_scenario(recorder *r, const char *path, const char *trial, entry *e)
{
    judge_failure why = JUDGE_OK;
    int rc = 0;
    if (runner_load_scenario(r->a, path, &e->s)) {
        e->why = "the scenario file is not valid (see above)";
        return 0;
    }
    if (trial && trial_prepare(r->a, &e->s, trial)) /* and then its baseline: every error said */
        e->why = "the run could not start (see above); not recorded";
    if (!r->a->baseline && baseline_file_spec_check(e->s.baseline)) { /* its default */
        e->why = e->why ? e->why : "the scenario's baseline file is not valid (see above)";
    } else if ((rc = baseline_ready(r, &e->s, &why)) != 0 || why != JUDGE_OK) {
        e->why = e->why ? e->why : unusable_why(why);
    }
    return rc;
}

/* Every scenario and device of the matrix checked before any cell trains, so that an input
 * error anywhere leaves the store as it was. Returns how many inputs are unusable, or -1 when
 * the store does not open (*rc its code). */
static int check_matrix(recorder *r, entry *e, char specs[][DEVICE_SPEC_MAX], int n_dev, char dev_why[][256],
                        int *rc)
{
    const run_args *a = r->a;
    int bad = check_devices(specs, n_dev, dev_why);
    const char *trial = NULL; /* a single cell is prepared just before it is recorded anyway */
    for (int i = 0; i < n_dev && !trial && (long)a->n_scenarios * n_dev > 1; i++)
        if (!dev_why[i][0])
            trial = specs[i];
    for (int i = 0; i < a->n_scenarios && !run_stop_requested(); i++) {
        if ((*rc = check_scenario(r, a->scenarios[i], trial, &e[i])) != 0)
            return -1;
        bad += e[i].why != NULL;
    }
    return bad;
}

/* the cells of a matrix that does not run, each saying why: 0, or 2 when out of memory */
static int refuse_matrix(const run_args *a, const entry *e, char specs[][DEVICE_SPEC_MAX], int n_dev,
                         char dev_why[][256], matrix *m)
{
    for (int i = 0; i < a->n_scenarios; i++)
        for (int k = 0; k < n_dev; k++) {
            cell *c = add_cell(m, e[i].why ? a->scenarios[i] : e[i].s.name, specs[k]);
            if (!c) {
                log_error("run: out of memory for the summary");
                return EXIT_USAGE;
            }
            c->error = e[i].why || dev_why[k][0];
            snprintf(c->note, sizeof c->note, "%.250s",
                     e[i].why ? e[i].why
                     : dev_why[k][0] ? dev_why[k]
                                     : "not trained: an input of the matrix is not usable");
        }
    return 0;
}

/* every device for one checked scenario; 0, 2 when out of memory, or store_open's code */
static int run_scenario(recorder *r, const scenario *s, char specs[][DEVICE_SPEC_MAX], int n_dev, matrix *m)
{
    int rc = 0;
    for (int i = 0; i < n_dev && !rc && !run_stop_requested(); i++) {
        cell *c = add_cell(m, s->name, specs[i]);
        if (!c) {
            log_error("run: out of memory for the summary");
            return EXIT_USAGE;
        }
        rc = run_cell(r, s, c);
    }
    return rc;
}

/* ---- the summary -------------------------------------------------------------------------- */

static void print_cell(const cell *c)
{
    printf("%-24.24s %-10.10s ", term_safe(c->scenario), term_safe(c->device));
    if (c->run_id)
        printf("%5lld %-9s %6d ", (long long)c->run_id, c->status, c->steps);
    else
        printf("%5s %-9s %6s ", "-", "-", "-");
    if (!c->judged) {
        printf("%-11s %s\n", c->setup_failed ? "fail" : "error", term_safe(c->note));
        return;
    }
    printf("%-11s ", verdict_name(c->v));
    if (c->first_fail)
        printf("%10d ", c->first_fail);
    else
        printf("%10s ", "-");
    char ratio[32] = "-"; /* "-" where the baseline has no throughput (it printed "nanx") */
    if (isfinite(c->ratio))
        snprintf(ratio, sizeof ratio, "%.3fx", c->ratio);
    printf("%12.3e %10.0f %8s  %s\n", c->max_abs, c->tokens_per_s, ratio, term_safe(c->ratio_note));
}

/* prints the table; returns the exit code: 2 on any input error, else the worst verdict's */
static int summary(const matrix *m, int n_scenarios, int n_dev)
{
    verdict worst = VERDICT_PASS;
    int errors = 0;
    printf("\n== summary: %d scenario%s x %d device%s\n", n_scenarios, n_scenarios > 1 ? "s" : "",
           n_dev, n_dev > 1 ? "s" : "");
    printf("%-24s %-10s %5s %-9s %6s %-11s %10s %12s %10s %8s  %s\n", "scenario", "device",
           "run", "status", "steps", "verdict", "first fail", "max |dloss|", "tokens/s", "vs base",
           "(throughput ratio: gated or not, where the baseline ran)");
    for (int i = 0; i < m->n; i++) {
        const cell *c = &m->cells[i];
        print_cell(c);
        errors += c->error;
        if (c->judged && c->v > worst)
            worst = c->v;
        if (c->setup_failed && VERDICT_FAIL > worst)
            worst = VERDICT_FAIL;
    }
    if (run_stop_requested())
        printf("stopped by a signal: the cells not listed did not run\n");
    printf("worst verdict: %s%s\n", errors ? "error" : verdict_name(worst),
           errors ? " (a scenario, device or baseline could not be used)" : "");
    if (errors)
        return EXIT_USAGE;
    return run_stop_requested() ? EXIT_FAIL : verdict_exit_code(worst);
}

int run_matrix(const run_args *a)
{
    char specs[MAX_DEVICES][DEVICE_SPEC_MAX];
    comm_env env; /* every rank would run the whole matrix into one store */
    int n_dev = 0, rc = comm_env_read(&env);
    if (rc == 0 && env.world > 1) {
        log_error("run --compare: %s started %d ranks; the matrix runs one rank per run (train "
                  "data-parallel without --compare: docs/ranks.md)", env.launcher, env.world);
        rc = EXIT_USAGE;
    }
    if (rc || (rc = parse_devices(a->device, specs, MAX_DEVICES, &n_dev)) ||
        (rc = baseline_args_check("run", a->baseline, a->baselines)))
        return rc;
    recorder r = {a, NULL};
    matrix m = {NULL, 0, 0};
    char dev_why[MAX_DEVICES][256];
    entry *e = calloc((size_t)a->n_scenarios, sizeof *e);
    int bad = e ? check_matrix(&r, e, specs, n_dev, dev_why, &rc) : -1;
    if (!e) {
        log_error("run: out of memory for %d scenarios", a->n_scenarios);
        rc = EXIT_USAGE;
    } else if (bad > 0) {
        printf("\nnothing was trained or recorded: %d input%s of the matrix %s not usable (above)\n",
               bad, bad > 1 ? "s" : "", bad > 1 ? "are" : "is");
        rc = refuse_matrix(a, e, specs, n_dev, dev_why, &m);
    }
    for (int i = 0; bad == 0 && i < a->n_scenarios && !rc && !run_stop_requested(); i++)
        rc = run_scenario(&r, &e[i].s, specs, n_dev, &m);
    if (!rc)
        rc = summary(&m, a->n_scenarios, n_dev);
    for (int i = 0; e && i < a->n_scenarios; i++)
        scenario_free(&e[i].s);
    free(e);
    free(m.cells);
    if (r.st)
        store_close(r.st);
    return rc;
}
