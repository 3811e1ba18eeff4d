/* harness/train.h: the training loop of a scenario on one device: data, forward, backward,
 * gradient clipping, LR schedule, AdamW, and a callback per recorded step. */
#ifndef TRAIN_H
#define TRAIN_H

#include <signal.h>

#include "device.h"
#include "scenario.h"
#include "store.h"

/* transformers' get_scheduler multipliers for scheduler step `step` (0 for the first optimizer
 * step): linear warmup over `warmup` steps, then constant, linear decay to 0 or half-cosine
 * decay to 0 at `total`. schedule: "constant", "linear", "cosine". */
double lr_multiplier(const char *schedule, int step, int warmup, int total);

typedef struct {
    int steps;                          /* > 0 overrides the scenario's train.steps */
    volatile sig_atomic_t *stop;        /* set (e.g. by a signal) to end the run early */
    /* called after every step; a non-zero return ends the run as failed */
    int (*on_step)(const step_record *r, void *arg);
    void *arg;
} train_options;

typedef enum { TRAIN_OK, TRAIN_FAILED, TRAIN_DIVERGED, TRAIN_INTERRUPTED } train_status;

typedef struct {
    train_status status;
    int steps_done;
    double final_loss;
    char error[512];
    size_t activation_bytes, state_bytes; /* as counted by the model */
} train_result;

/* Trains scenario s on device d. Returns 0 when the run ends ok, 1 when it failed, diverged
 * or was interrupted (res says which), 2 on an input error (data file, model config). */
int train_run(const scenario *s, device *d, const train_options *o, train_result *res);

#endif
