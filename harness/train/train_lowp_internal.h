/* harness/train/train_lowp_internal.h: the trainer's bf16/fp16 part (train_lowp.c): device mode,
 * fp16 loss scaling around each step, and the Inf-gradient test hook. */
#ifndef TRAIN_LOWP_INTERNAL_H
#define TRAIN_LOWP_INTERNAL_H

#include "models/models.h"
#include "train.h"

/* test only: the optimizer step (from 1) whose gradients get one +Inf after the backward */
#define LOWP_INJECT_ENV "HARNESS_INJECT_INF_GRAD"

typedef struct {
    device *d;       /* set while the device is in a mode this trainer chose */
    int fp16;        /* loss scaling on */
    loss_scaler scaler;
    int inject_step; /* LOWP_INJECT_ENV, 0 none */
} train_lowp;

/* the device's mode from the scenario's dtype (LOWP_NONE when native), the scaler, the hook.
 * 0, or 2 after a message (a backend without rounding, a malformed hook value) */
int train_lowp_setup(train_lowp *tl, const scenario *s, device *d, int native);
/* the device back to its own table */
void train_lowp_free(train_lowp *tl);
/* before a step's forwards: the loss scale the backward seeds with */
void train_lowp_begin_step(train_lowp *tl);
/* after the step's backward: the hook's Inf when this is its step. 0 or 1 (device error) */
int train_lowp_inject(train_lowp *tl, model *m, int step);
/* the gradients unscaled (fp16) and their global norm; *skipped 1 when fp16 found Inf/NaN */
double train_lowp_unscale(train_lowp *tl, model *m, int *skipped);
/* records the step's scale and skip into r, then GradScaler.update */
void train_lowp_end_step(train_lowp *tl, step_record *r, int skipped);

#endif
