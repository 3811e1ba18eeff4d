/* harness/cmd_run.c: `harness run SCENARIO`: opens the device, prepares everything the run needs,
 * then opens the store, records every step (one line each) and the run's final status. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "commands.h"
#include "device.h"
#include "hostinfo.h"
#include "runner.h"
#include "scenario.h"
#include "store.h"
#include "train.h"
#include "escape.h"
#include "util.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    stop_requested = sig;
}

static void run_usage(FILE *f)
{
    fprintf(f,
            "usage: harness run SCENARIO [--device SPEC] [--db FILE] [--steps N] [--save DIR]\n"
            "                            [--quiet]\n"
            "       harness run SCENARIO... --compare [--device SPEC,SPEC...|all]\n"
            "                  [--baseline LABEL|RUN|FILE] [--baselines DIR] [--db FILE] [--quiet]\n\n"
            "Trains the scenario on one device and records every step in the store. The\n"
            "scenario, model, weights, tokenizer, data and device are read and checked\n"
            "first: an input error records nothing (the store is opened only after).\n"
            "With --compare: trains every scenario on every listed device, compares each run\n"
            "with its baseline (the scenario's \"baseline\" label unless --baseline; see\n"
            "'harness compare --help'), prints one summary table and exits with the worst\n"
            "verdict. 'all' is every backend compiled in that has a device, except cpu64\n"
            "(name it to include it).\n\n"
            "  --device SPEC  device to train on (default cpu; see 'harness devices')\n"
            "  --db FILE      SQLite store (default %s; created if missing)\n"
            "  --steps N      train N steps instead of the scenario's train.steps\n"
            "  --save DIR     write the final weights as a Hugging Face model directory\n"
            "                 (config.json + model.safetensors) when the run ends ok; DIR (or\n"
            "                 its nearest existing parent) must be a writable directory\n"
            "  --quiet        print only the final line\n"
            "  --compare      compare each run with its baseline (docs/compare.md)\n"
            "  --baseline B   with --compare: the baseline of every run instead of the default\n"
            "  --baselines D  with --compare: look for committed baseline files in D first\n\n"
            "Exit codes: 0 the run finished ok (with --compare: every verdict is pass), 1 it\n"
            "failed or diverged (NaN/Inf loss) or was interrupted (with --compare: a verdict\n"
            "is not pass), 2 usage or input error.\n",
            DEFAULT_DB);
}

/* every path, name and list given is non-empty: "" is a usage error, before any work */
static int check_nonempty(const run_args *a)
{
    const struct {
        const char *what, *value;
    } given[] = {{"--db", a->db},           {"--device", a->device},
                 {"--save", a->save},       {"--baseline", a->baseline},
                 {"--baselines", a->baselines}};
    for (size_t i = 0; i < sizeof given / sizeof given[0]; i++)
        if (given[i].value && cmd_nonempty("run", given[i].what, given[i].value))
            return EXIT_USAGE;
    for (int i = 0; i < a->n_scenarios; i++)
        if (cmd_nonempty("run", "SCENARIO", a->scenarios[i]))
            return EXIT_USAGE;
    return 0;
}

static int parse_run_args(int argc, char **argv, run_args *a)
{
    memset(a, 0, sizeof *a);
    a->device = "cpu";
    a->db = DEFAULT_DB;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            run_usage(stdout);
            return -1;
        } else if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
            a->quiet = 1;
        } else if (strcmp(arg, "--compare") == 0) {
            a->compare = 1;
        } else if (strcmp(arg, "--baseline") == 0 && has_value) {
            a->baseline = argv[++i];
        } else if (strcmp(arg, "--baselines") == 0 && has_value) {
            a->baselines = argv[++i];
        } else if (strcmp(arg, "--device") == 0 && has_value) {
            a->device = argv[++i];
        } else if (strcmp(arg, "--db") == 0 && has_value) {
            a->db = argv[++i];
        } else if (strcmp(arg, "--save") == 0 && has_value) {
            a->save = argv[++i];
        } else if (strcmp(arg, "--steps") == 0 && has_value) {
            if (parse_long(argv[++i], &a->steps) || a->steps < 1 || a->steps > 100000000) {
                log_error("run: --steps: '%s' is not a number of steps >= 1", argv[i]);
                return EXIT_USAGE;
            }
        } else if (arg[0] == '-' && arg[1]) {
            return cmd_usage_error("run", "unknown option or missing value: %s", arg);
        } else if (a->n_scenarios < RUN_MAX_SCENARIOS) {
            a->scenarios[a->n_scenarios++] = arg;
            if (!a->scenario)
                a->scenario = arg;
        } else {
            log_error("run: more than %d scenario files", RUN_MAX_SCENARIOS);
            return EXIT_USAGE;
        }
    }
    if (!a->scenario)
        return cmd_usage_error("run", "no scenario file given");
    if (check_nonempty(a))
        return EXIT_USAGE;
    if (a->n_scenarios > 1 && !a->compare) {
        log_error("run: one scenario file expected, got another: %s (several need --compare)",
                  a->scenarios[1]);
        return EXIT_USAGE;
    }
    if (a->compare && a->save) {
        log_error("run: --save goes with one run, not with --compare");
        return EXIT_USAGE;
    }
    if (!a->compare && (a->baseline || a->baselines)) {
        log_error("run: --baseline and --baselines go with --compare");
        return EXIT_USAGE;
    }
    return 0;
}

typedef struct {
    store *st;
    int64_t run_id;
    int quiet, total;
} step_sink;

static int record_step(const step_record *r, void *arg)
{
    step_sink *sink = arg;
    if (!sink->quiet)
        printf("step %5d/%d  loss %.6f  grad_norm %.4f  lr %.3e  %8.1f ms  %9.0f tok/s  "
               "peak %.1f MiB\n",
               r->step, sink->total, r->loss, r->grad_norm, r->lr, r->step_ms, r->tokens_per_s,
               r->mem_peak_bytes / 1048576.0);
    fflush(stdout);
    return store_add_step(sink->st, sink->run_id, r);
}

static int begin_run(store *st, const scenario *s, const device *d, int64_t *id)
{
    char host[256];
    host_name(host, sizeof host);
    run_meta m = {s->name, s->json, s->hash, d->backend, d->name, d->vendor, d->driver_version,
                  d->runtime_version, s->world_size, d->dtype, host, harness_git_commit,
                  HARNESS_VERSION, (int64_t)d->mem_total, host_threads(), host_load_avg()};
    return store_begin_run(st, &m, id);
}

static const char *status_name(train_status st)
{
    return st == TRAIN_OK ? "ok" : st == TRAIN_DIVERGED ? "diverged" : "failed";
}

static train_options run_options(const run_args *a)
{
    train_options o = {(int)a->steps, &stop_requested, NULL, NULL, a->save};
    return o;
}

int runner_prepare(const scenario *s, device *d, const run_args *a, trainer **tr)
{
    train_options o = run_options(a);
    return train_prepare(s, d, &o, tr);
}

/* SIGINT and SIGTERM end the run after its current step while a run row is open; before it
 * exists (setup) and after it is finished, their dispositions are the caller's (by default
 * they end the process at once: nothing of the run is recorded then, or all of it is). */
static void catch_signals(int on, struct sigaction old[2])
{
    static const int sigs[2] = {SIGINT, SIGTERM};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* as signal() had it: the store's I/O is not cut short */
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 2; i++)
        if (on)
            sigaction(sigs[i], &sa, &old[i]);
        else
            sigaction(sigs[i], &old[i], NULL);
}

int runner_record(trainer *tr, const scenario *s, device *d, store *st, const run_args *a,
                  int64_t *run_id)
{
    step_sink sink = {st, 0, a->quiet, a->steps > 0 ? (int)a->steps : s->steps};
    *run_id = 0;
    if (begin_run(st, s, d, &sink.run_id))
        return EXIT_FAIL;
    struct sigaction old[2];
    catch_signals(1, old);
    *run_id = sink.run_id;
    train_options o = run_options(a);
    o.on_step = record_step;
    o.arg = &sink;
    train_result res;
    int rc = train_loop(tr, &o, &res);
    const char *status = status_name(res.status);
    if (store_finish_run(st, sink.run_id, status, res.error[0] ? res.error : NULL))
        rc = EXIT_FAIL;
    catch_signals(0, old);
    printf("run %lld: %s, %d steps, final loss %.6f%s%s\n", (long long)sink.run_id, status,
           res.steps_done, res.final_loss, res.error[0] ? ": " : "", term_safe(res.error));
    return rc;
}

int runner_load_scenario(const run_args *a, const char *path, scenario *s)
{
    int rc = scenario_load(path, s);
    if (rc == 0 && a->steps > 0 && a->steps != s->steps)
        rc = scenario_override_steps(s, (int)a->steps);
    if (rc == 0 && s->world_size != 1) { /* refused before anything is recorded */
        log_error("%s: world_size %d needs a communicator (MPI), which this build does not have",
                  s->path, s->world_size);
        rc = EXIT_USAGE;
    }
    return rc;
}

/* the prepared run recorded into a.db, opened only now: an input error found while preparing
 * leaves the store as it was (not even created) */
static int record_into_db(trainer *tr, const scenario *s, device *d, const run_args *a)
{
    store *st = NULL;
    int rc = store_open(a->db, &st);
    if (rc)
        return rc;
    if (!a->quiet)
        printf("scenario %s on %s (%s, %s), recording into %s\n", term_safe(s->name),
               d->backend, term_safe(d->name), d->dtype, term_safe(a->db));
    int64_t run_id = 0;
    rc = runner_record(tr, s, d, st, a, &run_id);
    store_close(st);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    run_args a;
    int rc = parse_run_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? EXIT_PASS : rc;
    if (a.compare)
        return run_matrix(&a);
    scenario s;
    if ((rc = runner_load_scenario(&a, a.scenario, &s)) != 0) {
        scenario_free(&s);
        return rc;
    }
    char err[512];
    device *d = device_open(a.device, err, sizeof err);
    if (!d) {
        log_error("run: --device %s: %s", a.device, err);
        scenario_free(&s);
        return EXIT_USAGE;
    }
    trainer *tr = NULL;
    if ((rc = runner_prepare(&s, d, &a, &tr)) == 0)
        rc = record_into_db(tr, &s, d, &a);
    train_free(tr);
    device_close(d);
    scenario_free(&s);
    return rc;
}

int run_stop_requested(void)
{
    return stop_requested != 0;
}
