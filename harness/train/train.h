/* harness/train/train.h: the training loop of a scenario on one device: data, forward, backward,
 * gradient clipping, LR schedule, AdamW, and a callback per recorded step. */
#ifndef TRAIN_H
#define TRAIN_H

#include <signal.h>
#include <stdio.h>

#include "comm/comm.h"
#include "device.h"
#include "scenario.h"
#include "store/store.h"

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
     * (harness/models/checkpoint.h) after a run that ends ok */
    const char *save_dir;
    /* when set, every step's batch is written there as one JSON line (docs/checkpoints.md:
     * "Batch dumps"), so another implementation can train on the same batches */
    const char *dump_batches;
    /* the ranks of a data-parallel run (harness/comm/comm.h); NULL: one rank. Its size must be
     * the scenario's world_size. Each rank trains on its share of the data (DistributedSampler's
     * order), the gradients are averaged over the ranks before clipping, and only rank 0 saves
     * and dumps batches. */
    comm *comm;
    /* with several ranks, called (before on_step) with each rank's figures of the step: its
     * loss, tokens, step time and memory; on_step then gets the run's: the mean loss, every
     * rank's tokens, the slowest step time, the largest memory */
    int (*on_rank_step)(int rank, const step_record *r, void *arg);
    /* 1: train at the device's own element type whatever the scenario's dtype says (no bf16/fp16
     * rounding, no loss scaling): a golden run of a bf16/fp16 scenario on cpu64 */
    int native_precision;
} train_options;

typedef enum { TRAIN_OK, TRAIN_FAILED, TRAIN_DIVERGED, TRAIN_INTERRUPTED } train_status;

typedef struct {
    train_status status;
    int steps_done;
    double final_loss;
    char error[512];
    size_t activation_bytes, state_bytes; /* as counted by the model */
} train_result;

/* a scenario made ready to train on one device: data tokenized, model allocated, weights set */
typedef struct trainer trainer;

/* Reads and checks everything a run of s on d needs, in this order: world_size, the sizes
 * against the harness's limits and d's memory (the family's check_fit), o->save_dir (that it could be
 * written; nothing is created), the tokenizer and the data file (or the megatron datasets,
 * mapped and every token checked), then the model and its initial
 * weights (seeded, or the model directory's safetensors). Records nothing anywhere, so a caller
 * can open its store only after this succeeded. Returns 0 with *out ready for train_loop, 2 on
 * an input error or 1 when the device failed (message printed, *out NULL). o may be NULL. */
int train_prepare(const scenario *s, device *d, const train_options *o, trainer **out);
/* Trains the prepared scenario: res says how it ended. Returns 0 when the run ends ok (and
 * o->save_dir, when set, was written), 1 when it failed, diverged or was interrupted. */
int train_loop(trainer *tr, const train_options *o, train_result *res);
void train_free(trainer *tr);
/* a collective (every rank calls it after train_prepare): the initial weights are the same bits
 * on every rank. 0, or 1 after a message naming the rank that differs */
int train_check_replicas(trainer *tr);

/* the dtype a run of s on d trains in, for its runs row: the scenario's bf16 or fp16 when d was
 * put in that mode (train_prepare did), else the device's element type ("fp32", "fp64") */
const char *train_run_dtype(const device *d);

/* fp16 dynamic loss scaling, torch.amp.GradScaler's defaults and rules (docs/precision.md) */
#define LOSS_SCALE_INIT 65536.0
#define LOSS_SCALE_GROWTH 2.0
#define LOSS_SCALE_BACKOFF 0.5
#define LOSS_SCALE_INTERVAL 2000
typedef struct {
    double scale;
    int clean_steps; /* consecutive steps not skipped since the last change (growth tracker) */
} loss_scaler;
/* GradScaler.update after a step: found_inf halves the scale and resets the count, else
 * LOSS_SCALE_INTERVAL clean steps in a row double it */
void loss_scaler_update(loss_scaler *ls, int found_inf);

/* train_prepare, train_loop and train_free in one: 0, 1, or 2 on an input error (res->status
 * TRAIN_FAILED, res->steps_done 0). */
int train_run(const scenario *s, device *d, const train_options *o, train_result *res);

/* the scenario's initial weights into m: seeded (the family's init with train.seed) or the
 * model directory's safetensors (model.weights "pretrained"). 0, 1 or 2. */
int train_initial_weights(model *m, const scenario *s);
/* one JSON line {"step", "B", "T", "input_ids", "token_type_ids", "attention_mask", "labels"}
 * (each field [B*T] row-major; token_type_ids and attention_mask null when the batch has none)
 * to f. 0, or 1 after a message (a write failed). */
int train_dump_batch(FILE *f, int step, const model_batch *b);
/* m's weights and the scenario's config as a Hugging Face model directory, its tokenizer's
 * files beside them (model_dir_copy_tokenizer). 0, 1 (a write failed) or 2 (a tokenizer file
 * cannot be read). */
int train_save(model *m, const scenario *s, const char *dir);
/* Before anything is written into dir (what: "--save", "init: OUT_DIR"): it must be a directory
 * or not exist, and its config.json and model.safetensors no file this process has read (the
 * scenario's own model directory). 0, or 2 after a message. */
int train_check_save_dir(const char *what, const char *dir);

#endif
