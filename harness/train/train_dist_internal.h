/* harness/train/train_dist_internal.h: private to train/: what a data-parallel step adds to the
 * training loop (train_dist.c): gradients summed over micro-batches and ranks, per-rank figures. */
/* With a device_buffers communicator (nccl) the sums stay in device memory: no host copy. */
#ifndef TRAIN_DIST_INTERNAL_H
#define TRAIN_DIST_INTERNAL_H

#include "comm/comm.h"
#include "models/models.h"
#include "store/store.h"

/* one rank's figures of one step, as every rank sends them to every rank */
typedef struct {
    double loss, step_ms;
    int64_t tokens, mem_peak, mem_used, mem_total;
    int32_t threads, stop;
    int32_t unlabelled; /* the step's first micro-batch (from 1) whose labels are all -100, or 0 */
    int32_t reserved;   /* 0: the record has no padding bytes */
} dist_rank_step;

typedef struct {
    comm *c;         /* NULL: one rank, nothing reduced */
    int accum;       /* micro-batches per optimizer step */
    size_t n;        /* parameters */
    float *grads;    /* [n] the micro-batch's gradients, downloaded */
    float *sum;      /* [n] their sum over the micro-batches, then over the ranks */
    double *grads64, *sum64; /* instead of grads, sum on an fp64 device (cpu64, --golden): its
                              * gradients never rounded to fp32 */
    double *ranks64; /* [size * n] every rank's sum64, gathered (several ranks, fp64) */
    int on_device;   /* c->ops->device_buffers: the sums below, in device memory, instead */
    device *dev;     /* the model's device */
    dten dsum;       /* [n] the micro-batches' sum when accum > 1 (else the gradients' own) */
    dist_rank_step *ranks; /* [size] the last step's figures of every rank */
} dist_state;

/* host buffers for m's gradients when the step sums anything (accum > 1 or a world > 1); with a
 * device_buffers communicator a device buffer instead (accum > 1 only). 0, or 1 after a message */
int dist_init(dist_state *ds, comm *c, int accum, model *m);
void dist_free(dist_state *ds);
/* 1 when gradients are summed (accum > 1 or several ranks): on the host, or on the device */
int dist_active(const dist_state *ds);
/* after micro-batch a's backward: its gradients added to the sum (the first one copied). 0/1 */
int dist_accumulate(dist_state *ds, model *m, int a);
/* after the last micro-batch: the sum over the ranks times 1 / (accum * size) (HF Trainer's
 * loss / accum, DDP's mean), uploaded as m's gradients. 0, or 1 with *err set */
int dist_reduce(dist_state *ds, model *m, char *err, size_t len);
/* every rank's figures of the step to every rank; mine in, the step record the run keeps out
 * (loss: mean over ranks; tokens: sum; step time: the slowest; memory: the largest), *stop: a
 * rank was asked to stop. 0, or 1 with *err set */
int dist_gather_step(dist_state *ds, const dist_rank_step *mine, step_record *r, int *stop,
                     char *err, size_t len);
/* counts[n] summed over the ranks in int64 (exact), the sum on every rank; all: [size * n]
 * scratch. Nothing for one rank. 0, or 1 with *err set */
int dist_sum_counts(dist_state *ds, int64_t *counts, size_t n, int64_t *all, char *err,
                    size_t len);
/* the initial weights are the same bits on every rank (sha256 of the host copy, gathered).
 * 0, 1 with a message naming the ranks that differ from rank 0, or after a comm failure */
int dist_check_replicas(comm *c, model *m);

#endif
