/* harness/ingest/logparse_seed.c: the seed DDP demo's line, `epoch[0/99], step[10/4999]: train_loss:
 * 2.31, train_tokens_throughput: 1234.5 tokens/s`. Its loss is the running mean since the epoch
 * began (step 0-based); the mean of the steps between two lines is recovered from two means. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "logparse.h"

static int detect(const char *line, size_t len)
{
    return lp_find_text(line, len, "epoch[") && lp_find_text(line, len, "train_loss:");
}

typedef struct {
    long epoch, epochs, step, steps;
    double mean, tps;
    int has_tps;
} seed_line;

/* the fields of one line; 0 when it is not whole */
static int read_line(const char *line, size_t len, seed_line *o)
{
    const char *p = lp_find_text(line, len, "epoch[");
    char buf[512];
    size_t n = len - (size_t)(p - line);
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    int used = 0;
    if (sscanf(buf, "epoch[%ld/%ld], step[%ld/%ld]: train_loss: %n", &o->epoch, &o->epochs,
               &o->step, &o->steps, &used) != 4 || used == 0)
        return 0;
    size_t k = lp_number(buf + used, n - (size_t)used, &o->mean);
    if (!k)
        return 0;
    /* the throughput's number after its label and any spaces, never past the line's end */
    const char *end = buf + n, *t = lp_find_text(buf + used, n - (size_t)used,
                                                 "train_tokens_throughput:");
    if (t)
        for (t += strlen("train_tokens_throughput:"); t < end && *t == ' '; t++)
            ;
    o->has_tps = t && lp_number(t, (size_t)(end - t), &o->tps) > 0;
    return o->epoch >= 0 && o->step >= 0 && o->step < 1000000000 && o->steps > 0 &&
           o->steps < 1000000000 && o->epoch < 1000000;
}

static int parse(const char *line, size_t len, lp_state *st, lp_event *ev)
{
    seed_line l;
    if (st->mem_rank >= LP_MAX_RANKS || /* no running mean of its own: never another rank's */
        !lp_find_text(line, len, "epoch[") || !read_line(line, len, &l))
        return 0;
    memset(ev, 0, sizeof *ev);
    ev->step.rank = st->line_rank;
    lp_seed_mem *prev = &st->seed[st->mem_rank]; /* the line's rank's, or its file's */
    int n = (int)l.step + 1; /* the mean covers steps 0..step of this epoch */
    double loss = l.mean;
    if (!prev->seen)
        lp_meta_add(ev, "loss_kind",
                    "seed running mean: each step's loss is the mean of the steps since the "
                    "previous line, recovered from two running means (exact where lines are "
                    "1 step apart)");
    if (prev->seen && prev->epoch == l.epoch && n > prev->n)
        loss = (l.mean * n - prev->mean * prev->n) / (n - prev->n);
    else if (prev->seen && prev->epoch == l.epoch)
        return ev->n_meta > 0; /* a step not after the last one: skipped */
    prev->seen = 1;
    prev->epoch = (int)l.epoch;
    prev->n = n;
    prev->mean = l.mean;
    ev->has_step = 1;
    double global = (double)l.epoch * (double)l.steps + (double)n;
    ev->step.step = global < 2e9 ? (int)global : 0;
    ev->has_step = ev->step.step > 0;
    lp_step_set(&ev->step, "loss", loss);
    if (l.has_tps)
        lp_step_set(&ev->step, "tokens_per_s", l.tps);
    return 1;
}

const log_parser lp_seed = {"seed", "the seed DDP demo's epoch[..], step[..]: train_loss: line "
                                    "(a running mean)", detect, parse};
