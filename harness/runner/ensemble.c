/* harness/runner/ensemble.c: the runs of an ensemble baseline: one scenario trained N times on a
 * cpu backend, member p with device.perturb = p (another GEMM summation order), each recorded. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "runner.h"
#include "judge/judge.h"
#include "util/util.h"

/* the device of member `perturb`: a cpu backend, since only those read device.perturb */
static int open_member_device(const char *spec, int perturb, device **out)
{
    char err[512];
    device *d = device_open(spec, err, sizeof err);
    if (!d) {
        log_error("baseline record --ensemble: %s", err);
        return EXIT_USAGE;
    }
    if (strcmp(d->backend, "cpu") != 0 && strcmp(d->backend, "cpu64") != 0) {
        log_error("baseline record --ensemble: --device %s: the perturbations of an ensemble "
                  "live in the cpu backends (cpu, cpu64), not in %s", spec, d->backend);
        device_close(d);
        return EXIT_USAGE;
    }
    d->perturb = perturb;
    *out = d;
    return 0;
}

/* member `perturb` prepared (inputs read and checked, nothing recorded) */
static int prepare_member(const run_args *a, const scenario *s, int perturb, device **d,
                          trainer **tr)
{
    *tr = NULL;
    int rc = open_member_device(a->device, perturb, d);
    if (rc)
        return rc;
    if ((rc = runner_prepare(s, *d, a, tr)) != 0) {
        device_close(*d);
        *d = NULL;
    }
    return rc;
}

/* marks run id a member of an ensemble (run_extra STORE_ENSEMBLE_MEMBER_KEY = perturb), so that
 * report, --since and --history never take the perturbed run for the run under test: 0 or 1 */
static int mark_member(store *st, int64_t id, int perturb)
{
    char value[16];
    snprintf(value, sizeof value, "%d", perturb);
    if (store_add_extra(st, id, STORE_ENSEMBLE_MEMBER_KEY, value) == 0)
        return 0;
    log_error("baseline record --ensemble: run %lld (member %d) could not be marked an ensemble "
              "member", (long long)id, perturb + 1);
    return EXIT_FAIL;
}

/* trains and records member `perturb`; the run is marked a member however it ended (one that
 * failed or was interrupted is still a perturbed run) */
static int record_member(trainer *tr, const scenario *s, device *d, store *st,
                         const run_args *a, int perturb, int64_t *id)
{
    int rc = runner_record(tr, s, d, st, a, id);
    int marked = *id ? mark_member(st, *id, perturb) : 0;
    if (rc == 0 && marked == 0)
        printf("ensemble member %d (perturbation %d): run %lld\n", perturb + 1, perturb,
               (long long)*id);
    else if (rc)
        log_error("baseline record --ensemble: member %d (perturbation %d) did not finish ok",
                  perturb + 1, perturb);
    train_free(tr);
    device_close(d);
    return rc ? rc : marked;
}

static int check_ensemble_args(const scenario *s, int members)
{
    if (members < ENSEMBLE_MIN_RUNS || members > ENSEMBLE_MAX_RUNS) {
        log_error("baseline record: --ensemble %d: an ensemble has %d to %d runs", members,
                  ENSEMBLE_MIN_RUNS, ENSEMBLE_MAX_RUNS);
        return EXIT_USAGE;
    }
    if (s->world_size != 1) {
        log_error("baseline record --ensemble: scenario %s has world_size %d: an ensemble is "
                  "recorded with one rank", s->name, s->world_size);
        return EXIT_USAGE;
    }
    return 0;
}

int runner_run_ensemble(const run_args *a, int members, int64_t *ids)
{
    scenario s;
    int rc = runner_load_scenario(a, a->scenario, &s);
    device *d = NULL;
    trainer *tr = NULL;
    if (!rc)
        rc = check_ensemble_args(&s, members);
    if (!rc) /* the first member checks every input before the store is opened */
        rc = prepare_member(a, &s, 0, &d, &tr);
    store *st = NULL;
    if (!rc && (rc = store_open(a->db, &st)) != 0) {
        train_free(tr);
        device_close(d);
    }
    if (!rc)
        rc = record_member(tr, &s, d, st, a, 0, &ids[0]);
    for (int p = 1; p < members && !rc && !run_stop_requested(); p++)
        if ((rc = prepare_member(a, &s, p, &d, &tr)) == 0)
            rc = record_member(tr, &s, d, st, a, p, &ids[p]);
    if (!rc && run_stop_requested())
        rc = EXIT_FAIL;
    store_close(st);
    scenario_free(&s);
    return rc;
}
