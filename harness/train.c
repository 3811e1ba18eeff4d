/* harness/train.c: the training loop: batches in fixed order, forward, loss, backward, global
 * gradient-norm clipping, transformers' LR schedules, AdamW, one step_record per step. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "data.h"
#include "gpt2.h"
#include "model_dir.h"
#include "thread_policy.h"
#include "tokenizer.h"
#include "util.h"

double lr_multiplier(const char *schedule, int step, int warmup, int total)
{
    if (step < warmup)
        return (double)step / (double)(warmup > 1 ? warmup : 1);
    if (strcmp(schedule, "constant") == 0)
        return 1.0;
    int span = total - warmup > 1 ? total - warmup : 1;
    double progress = (double)(step - warmup) / span;
    if (strcmp(schedule, "linear") == 0)
        return fmax(0.0, 1.0 - progress);
    /* cosine with num_cycles = 0.5 */
    return fmax(0.0, 0.5 * (1.0 + cos(3.14159265358979323846 * progress)));
}

typedef struct {
    const scenario *s;
    device *d;
    gpt2 *model;
    dataset data;
    int32_t *inputs, *targets;
    int steps;
} trainer;

/* one optimizer step (1-based); fills r, returns 0, or 1 after a device error */
static int train_step(trainer *tr, int step, step_record *r)
{
    const scenario *s = tr->s;
    device *d = tr->d;
    thread_policy_adapt();
    double t0 = now_ms();
    dataset_batch(&tr->data, step - 1, s->batch_size, 0, s->world_size, tr->inputs, tr->targets);
    double loss = 0;
    if (gpt2_forward(tr->model, tr->inputs, tr->targets, &loss) || gpt2_backward(tr->model))
        return 1;
    double norm = gpt2_grad_norm(tr->model);
    /* torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), clamped to 1 */
    if (s->clip > 0 && isfinite(norm) && s->clip / (norm + 1e-6) < 1.0)
        gpt2_scale_grads(tr->model, s->clip / (norm + 1e-6));
    adamw_params p = {s->lr * lr_multiplier(s->schedule, step - 1, s->warmup_steps, tr->steps),
                      s->beta1, s->beta2, s->eps, s->weight_decay, s->decay_all};
    if (gpt2_adamw_step(tr->model, &p, step))
        return 1;
    d->ops->synchronize(d);
    double ms = now_ms() - t0;
    memset(r, 0, sizeof *r);
    r->step = step;
    r->loss = loss;
    r->grad_norm = norm;
    r->lr = p.lr;
    r->tokens = (int64_t)s->batch_size * s->seq_len * s->world_size;
    r->step_ms = ms;
    r->tokens_per_s = ms > 0 ? r->tokens / (ms / 1e3) : 0;
    r->mem_peak_bytes = (int64_t)d->mem_peak;
    r->mem_used_bytes = (int64_t)d->ops->mem_used(d);
    r->mem_total_bytes = (int64_t)d->mem_total;
    return device_error(d) ? 1 : 0;
}

static int trainer_setup(trainer *tr, const scenario *s, device *d, const train_options *o)
{
    memset(tr, 0, sizeof *tr);
    tr->s = s;
    tr->d = d;
    tr->steps = o && o->steps > 0 ? o->steps : s->steps;
    if (s->world_size != 1) {
        log_error("%s: world_size %d needs a communicator (MPI), which this build does not have",
                  s->path, s->world_size);
        return EXIT_USAGE;
    }
    tokenizer *tok;
    int rc = tokenizer_open(s->tokenizer, s->tokenizer_path, &tok);
    if (rc)
        return rc;
    rc = dataset_load_tok(s->data_path, tok, s->seq_len, &tr->data);
    tokenizer_free(tok);
    if (rc)
        return rc;
    if (tr->data.vocab_size > s->model.vocab_size) {
        log_error("%s: the %s tokenizer has %d ids but model vocab_size is %d", s->path,
                  s->tokenizer, tr->data.vocab_size, s->model.vocab_size);
        return EXIT_USAGE;
    }
    size_t bt = (size_t)s->batch_size * s->seq_len;
    tr->inputs = malloc(bt * sizeof *tr->inputs);
    tr->targets = malloc(bt * sizeof *tr->targets);
    if (!tr->inputs || !tr->targets) {
        log_error("out of host memory for a batch of %zu tokens", bt);
        return EXIT_FAIL;
    }
    tr->model = gpt2_create(d, &s->model, s->batch_size, s->seq_len);
    if (!tr->model)
        return EXIT_FAIL;
    return train_initial_weights(tr->model, s);
}

int train_initial_weights(gpt2 *m, const scenario *s)
{
    if (strcmp(s->weights, "pretrained") == 0)
        return checkpoint_load(m, s->model_dir);
    return gpt2_init_weights(m, s->seed) ? EXIT_FAIL : 0;
}

int train_save(gpt2 *m, const scenario *s, const char *dir)
{
    json_t *src = model_dir_raw_config(s->config_path);
    int rc = checkpoint_save(m, &s->model, src, dir);
    json_decref(src);
    return rc;
}

static void trainer_teardown(trainer *tr)
{
    gpt2_free(tr->model);
    dataset_free(&tr->data);
    free(tr->inputs);
    free(tr->targets);
}

static int finish(train_result *res, train_status st, const char *fmt, const char *arg)
{
    res->status = st;
    if (fmt)
        snprintf(res->error, sizeof res->error, fmt, arg);
    return st == TRAIN_OK ? EXIT_PASS : EXIT_FAIL;
}

int train_run(const scenario *s, device *d, const train_options *o, train_result *res)
{
    memset(res, 0, sizeof *res);
    trainer tr;
    int rc = trainer_setup(&tr, s, d, o);
    if (rc) {
        trainer_teardown(&tr);
        finish(res, TRAIN_FAILED, "setup failed: %s",
               device_error(d) ? device_error(d) : "see the messages above");
        return rc;
    }
    res->activation_bytes = gpt2_activation_bytes(tr.model);
    res->state_bytes = gpt2_state_bytes(tr.model);
    rc = finish(res, TRAIN_OK, NULL, NULL);
    for (int step = 1; step <= tr.steps; step++) {
        step_record r;
        if (o && o->stop && *o->stop) {
            rc = finish(res, TRAIN_INTERRUPTED, "interrupted%s", " by a signal");
            break;
        }
        if (train_step(&tr, step, &r)) {
            rc = finish(res, TRAIN_FAILED, "%s", device_error(d) ? device_error(d) : "step failed");
            break;
        }
        res->steps_done = step;
        res->final_loss = r.loss;
        if (o && o->on_step && o->on_step(&r, o->arg)) {
            rc = finish(res, TRAIN_FAILED, "%s", "recording the step failed");
            break;
        }
        if (!isfinite(r.loss) || !isfinite(r.grad_norm)) {
            snprintf(res->error, sizeof res->error, "loss %g, grad norm %g at step %d", r.loss,
                     r.grad_norm, step);
            rc = finish(res, TRAIN_DIVERGED, NULL, NULL);
            break;
        }
    }
    if (rc == EXIT_PASS && o && o->save_dir && train_save(tr.model, s, o->save_dir))
        rc = finish(res, TRAIN_FAILED, "saving the weights to %s failed", o->save_dir);
    trainer_teardown(&tr);
    return rc;
}
