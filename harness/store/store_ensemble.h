/* harness/store/store_ensemble.h: the ensemble_steps table (schema version 8): per step of a
 * stored ensemble baseline, the number of runs and the sample standard deviation of their loss. */
#ifndef STORE_ENSEMBLE_H
#define STORE_ENSEMBLE_H

#include <stdint.h>

#include "store.h"

/* Writes the spread of run_id's steps (steps[i].step with std[i]; runs members) in one
 * transaction. 0, or 1 after a message. */
int store_put_ensemble(store *st, int64_t run_id, int runs, const step_record *steps,
                       const double *std, int n);
/* Reads the spread of run_id for its n steps (in the order of steps) into a malloc'd *std
 * (NaN where a step has none) and *runs. 0 with *std NULL and *runs 0 when the run is no
 * ensemble, 0 with them set, or 2 after a message. */
int store_get_ensemble(store *st, int64_t run_id, const step_record *steps, int n, double **std,
                       int *runs);

#endif
