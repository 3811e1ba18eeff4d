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
    /* when set, the final weights are written there as a Hugging Face model directory
     * (harness/checkpoint.h) after a run that ends ok */
    const char *save_dir;
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

struct gpt2;
/* the scenario's initial weights into m: seeded (gpt2_init_weights with train.seed) or the
 * model directory's safetensors (model.weights "pretrained"). 0, 1 or 2. */
int train_initial_weights(struct gpt2 *m, const scenario *s);
/* m's weights and the scenario's config as a Hugging Face model directory. 0 or 1. */
int train_save(struct gpt2 *m, const scenario *s, const char *dir);

#endif
