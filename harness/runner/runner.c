/* harness/runner/runner.c: one run of a scenario on a device: loads and prepares it, then opens
 * the store, records every step (one line each) and the run's final status; SIGINT/SIGTERM. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"
#include "runner_ranks_internal.h"
#include "store/store_logs.h"
#include "util/util.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    stop_requested = sig;
}

volatile sig_atomic_t *runner_stop_flag(void)
{
    return &stop_requested;
}

typedef struct {
    store *st;
    int64_t run_id;
    int quiet, total;
    int recorded; /* steps in the store: the run's last line counts these, not those trained */
    double last_loss; /* the loss of the last step the store took */
} step_sink;

/* with several ranks, rank 0 keeps every rank's figures (rank_steps: memory per rank) */
static int record_rank_step(int rank, const step_record *r, void *arg)
{
    step_sink *sink = arg;
    return store_put_rank_step(sink->st, sink->run_id, rank, r);
}

static int record_step(const step_record *r, void *arg)
{
    step_sink *sink = arg;
    if (!sink->quiet)
        printf("step %5d/%d  loss %.6f  grad_norm %.4f  lr %.3e  %8.1f ms  %9.0f tok/s  "
               "peak %.1f MiB\n",
               r->step, sink->total, printable_real(r->loss), printable_real(r->grad_norm), r->lr,
               r->step_ms, r->tokens_per_s,
               r->mem_peak_bytes / 1048576.0);
    if (!sink->quiet && r->loss_scale > 0 && r->skipped)
        printf("step %5d/%d  skipped: Inf/NaN gradients at loss scale %g\n", r->step,
               sink->total, r->loss_scale);
    fflush(stdout);
    int rc = store_add_step(sink->st, sink->run_id, r);
    sink->recorded += rc == 0;
    if (rc == 0)
        sink->last_loss = r->loss;
    return rc;
}

static int begin_run(store *st, const scenario *s, const device *d, int64_t *id)
{
    char host[256];
    host_name(host, sizeof host);
    run_meta m = {s->name, s->json, s->hash, d->backend, d->name, d->vendor, d->driver_version,
                  d->runtime_version, s->world_size, train_run_dtype(d), host, harness_git_commit,
                  HARNESS_VERSION, (int64_t)d->mem_total, host_threads(), host_load_avg()};
    int rc = store_begin_run(st, &m, id);
    /* a --steps run is another scenario than the file's: report shows it in a row of its own */
    char n[16];
    snprintf(n, sizeof n, "%d", s->steps_override);
    if (!rc && s->steps_override && store_add_extra(st, *id, STORE_STEPS_OVERRIDE_KEY, n)) {
        store_finish_run(st, *id, "failed", "recording the --steps override failed");
        rc = 1;
    }
    return rc;
}

static const char *status_name(train_status st)
{
    return st == TRAIN_OK ? "ok" : st == TRAIN_DIVERGED ? "diverged" : "failed";
}

static train_options run_options(const run_args *a)
{
    train_options o = {(int)a->steps, &stop_requested, NULL,    NULL, a->save, a->dump_batches,
                       a->comm,         NULL,          0};
    /* A golden run computes in the device's own precision (cpu64: fp64) whatever the scenario's
     * dtype says: no low-precision rounding and no loss scaling, so a bf16 scenario's golden has
     * none; the scenario's JSON and hash stay as they are (the golden is a run of the same
     * scenario) and the run records the device's dtype (fp64). */
    o.native_precision = a->golden;
    return o;
}

int runner_prepare(const scenario *s, device *d, const run_args *a, trainer **tr)
{
    train_options o = run_options(a);
    return train_prepare(s, d, &o, tr);
}

/* SIGINT, SIGTERM, SIGHUP (the terminal closed) and SIGPIPE (the output piped to a reader that
 * left, `harness run S | head`) end the run after its current step while a run row is open, so
 * that the row is finished ("interrupted"), never left "running"; before it exists (setup) and
 * after it is finished, their dispositions are the caller's (by default they end the process at
 * once: nothing of the run is recorded then, or all of it is). After a SIGPIPE the output is
 * gone, so SIGPIPE stays ignored: the last lines fail quietly and the exit code says how the run
 * ended. */
#define CAUGHT_SIGNALS 4
static void catch_signals(int on, struct sigaction old[CAUGHT_SIGNALS])
{
    static const int sigs[CAUGHT_SIGNALS] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* as signal() had it: the store's I/O is not cut short */
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < CAUGHT_SIGNALS; i++)
        if (on && sigaction(sigs[i], NULL, &old[i]) == 0 && old[i].sa_handler == SIG_IGN &&
            sigs[i] != SIGPIPE)
            continue; /* inherited as ignored (nohup: SIGHUP): it stays ignored */
        else if (on)
            sigaction(sigs[i], &sa, &old[i]);
        else if (sigs[i] == SIGPIPE && stop_requested == SIGPIPE)
            signal(SIGPIPE, SIG_IGN);
        else
            sigaction(sigs[i], &old[i], NULL);
}

/* runner_record with how the training ended (*status) */
static int record_run(trainer *tr, const scenario *s, device *d, store *st, const run_args *a,
                      int64_t *run_id, train_status *ended)
{
    step_sink sink = {st, 0, a->quiet, a->steps > 0 ? (int)a->steps : s->steps, 0, 0};
    *run_id = 0;
    *ended = TRAIN_FAILED;
    if (begin_run(st, s, d, &sink.run_id))
        return EXIT_FAIL;
    struct sigaction old[CAUGHT_SIGNALS];
    catch_signals(1, old);
    *run_id = sink.run_id;
    train_options o = run_options(a);
    o.on_step = record_step;
    o.on_rank_step = record_rank_step;
    o.arg = &sink;
    train_result res;
    int rc = train_loop(tr, &o, &res);
    *ended = res.status;
    const char *status = status_name(res.status);
    if (store_finish_run(st, sink.run_id, status, res.error[0] ? res.error : NULL))
        rc = EXIT_FAIL;
    catch_signals(0, old);
    char loss[48] = "-"; /* no step recorded: no final loss (runs shows '-' too) */
    if (sink.recorded > 0)
        snprintf(loss, sizeof loss, "%.6f", printable_real(sink.last_loss));
    printf("run %lld: %s, %d steps, final loss %s%s%s\n", (long long)sink.run_id, status,
           sink.recorded, loss, res.error[0] ? ": " : "", term_safe(res.error));
    return rc;
}

int runner_record(trainer *tr, const scenario *s, device *d, store *st, const run_args *a,
                  int64_t *run_id)
{
    train_status status;
    return record_run(tr, s, d, st, a, run_id, &status);
}

int ranks_follow(trainer *tr, const run_args *a, train_status *status)
{
    struct sigaction old[CAUGHT_SIGNALS];
    catch_signals(1, old);
    train_options o = run_options(a);
    train_result res;
    int rc = train_loop(tr, &o, &res);
    catch_signals(0, old);
    *status = res.status;
    if (rc && res.status == TRAIN_FAILED)
        log_error("rank %d: %s", a->comm->rank, res.error);
    return rc;
}

int runner_load_scenario(const run_args *a, const char *path, scenario *s)
{
    int rc = scenario_load(path, s);
    if (rc == 0 && a->steps > 0 && a->steps != s->steps)
        rc = scenario_override_steps(s, (int)a->steps);
    return rc;
}

/* the prepared run recorded into a.db, opened only now (st, or opened here when NULL): an input
 * error found while preparing leaves the store as it was (not even created) */
static int record_into_db(trainer *tr, const scenario *s, device *d, const run_args *a,
                          store *st, train_status *status)
{
    *status = TRAIN_FAILED;
    int rc = st ? 0 : store_open(a->db, &st);
    if (rc)
        return rc;
    if (!a->quiet && a->comm->size > 1)
        printf("scenario %s on %d ranks of %s (%s, %s), gradients over %s, recording into %s\n",
               term_safe(s->name), a->comm->size, d->backend, term_safe(d->name), d->dtype,
               a->comm->ops->name, term_safe(a->db));
    else if (!a->quiet)
        printf("scenario %s on %s (%s, %s), recording into %s\n", term_safe(s->name),
               d->backend, term_safe(d->name), train_run_dtype(d), term_safe(a->db));
    int64_t run_id = 0;
    rc = record_run(tr, s, d, st, a, &run_id, status);
    if (rc == 0 && a->golden && (rc = store_set_baseline(st, s->name, "golden", run_id)) == 0)
        printf("golden run of %s: run %lld (label 'golden')\n", term_safe(s->name),
               (long long)run_id);
    store_close(st);
    return rc;
}

int runner_run_one(const run_args *a)
{
    int rc;
    scenario s;
    if ((rc = runner_load_scenario(a, a->scenario, &s)) != 0) {
        scenario_free(&s);
        return ranks_fail_early(a, rc);
    }
    run_args ra = *a;
    if ((rc = ranks_open(&ra, &s)) != 0) {
        scenario_free(&s);
        return rc;
    }
    if (ra.comm->rank != 0)
        ra.quiet = 1;
    device *d = ranks_device(&ra);
    trainer *tr = NULL;
    train_status status = TRAIN_OK; /* until training: failures so far are agreed on */
    rc = ranks_attach(&ra, d);
    int same = ranks_same_device(ra.comm, d); /* a collective: on every rank */
    rc = rc ? rc : same;
    if (rc == 0)
        rc = runner_prepare(&s, d, &ra, &tr);
    if ((rc = ranks_agree(ra.comm, "setting up", rc, &status)) == 0)
        rc = ranks_agree(ra.comm, "checking the initial weights", train_check_replicas(tr),
                         &status);
    /* with several ranks, a --db that does not open (no store, no folder) stops every rank
     * with rank 0's exit 2 before the first step, not rank 0 alone while the others wait */
    store *st = NULL;
    if (rc == 0 && ra.comm->size > 1)
        rc = ranks_agree(ra.comm, "opening the store",
                         ra.comm->rank == 0 ? store_open(a->db, &st) : 0, &status);
    if (rc == 0)
        rc = ra.comm->rank == 0 ? record_into_db(tr, &s, d, &ra, st, &status)
                                : ranks_follow(tr, &ra, &status);
    else if (st)
        store_close(st);
    train_free(tr);
    scenario_free(&s);
    ranks_close(ra.comm, rc, status); /* an nccl communicator before the device it runs on */
    if (d)
        device_close(d);
    return rc;
}

int run_stop_requested(void)
{
    return stop_requested != 0;
}
