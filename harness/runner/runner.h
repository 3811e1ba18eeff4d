/* harness/runner/runner.h: the public face of runner/: running scenarios and recording them, one
 * run (runner.c) or the --compare matrix of scenarios x devices (run_matrix.c). */
#ifndef RUNNER_H
#define RUNNER_H

#include <stdint.h>

#include "device.h"
#include "train/train.h"
#include "store/store.h"

#define RUN_MAX_SCENARIOS 256

typedef struct {
    const char *scenario, *device, *db;
    long steps;
    int quiet;
    const char *save; /* --save DIR: the final weights as a Hugging Face model directory */
    const char *dump_batches; /* --dump-batches FILE: every step's batch as a JSON line */
    /* --compare */
    int compare;
    const char *scenarios[RUN_MAX_SCENARIOS];
    int n_scenarios;
    const char *baseline, *baselines;
    double comm_timeout; /* --comm-timeout S: the longest wait of any collective (0: default) */
    comm *comm;          /* the ranks of this run: set by runner_run_one, NULL for one rank */
    comm_kind comm_kind; /* --comm: what moves the gradients (COMM_AUTO by default) */
    int golden;          /* --golden: train on cpu64 in fp64 and label the run "golden" */
} run_args;

/* Everything the run of s on d needs, read and checked (train_prepare with --steps and --save):
 * nothing is recorded, so an input error leaves the store untouched. 0 with *tr ready, 1 when
 * the device failed, 2 on an input error (message printed, *tr NULL). */
int runner_prepare(const scenario *s, device *d, const run_args *a, trainer **tr);
/* Records and trains the prepared run: begins the run row, prints the step lines,
 * finishes the row and prints the `run ID: STATUS, N steps, ...` line; SIGINT/SIGTERM end the
 * run as failed after the current step while the row is open. *run_id is the new run (0 if
 * none was begun). Returns 0 when the run ended ok, 1 failed/diverged/interrupted. */
int runner_record(trainer *tr, const scenario *s, device *d, store *st, const run_args *a,
                  int64_t *run_id);
/* scenario_load plus the --steps override (which becomes part of the stored scenario and its
 * hash). 0, or 2 after a message; scenario_free(s) is safe either way. */
int runner_load_scenario(const run_args *a, const char *path, scenario *s);
/* 1 once SIGINT or SIGTERM asked the runs to stop */
int run_stop_requested(void);
/* one run of a->scenario on a->device recorded into a->db (`harness run SCENARIO`): the store
 * is opened only after everything was read and checked. 0, 1 failed, 2 input error. */
int runner_run_one(const run_args *a);
/* `harness run` stopped before its run (rc: a usage error after its message, or 0 after --help):
 * under a launcher with several ranks this rank still joins the job and tells the others, which
 * then stop with exit 2 instead of waiting for it in MPI_Init for ever (runner_ranks.c).
 * Returns rc */
int runner_leave_early(int rc);
/* The runs of an ensemble baseline (ensemble.c): a->scenario trained `members` times
 * (ENSEMBLE_MIN_RUNS..ENSEMBLE_MAX_RUNS) on a->device, a cpu backend, member p with
 * device.perturb = p, each recorded into a->db; ids[p] the run of member p. The first member is
 * prepared before the store is opened: an input error records nothing. 0, 1 a member failed, 2
 * an input error. */
int runner_run_ensemble(const run_args *a, int members, int64_t *ids);
/* the --compare mode (run_matrix.c) */
int run_matrix(const run_args *a);

#endif
