/* harness/train/train.c: the training loop: batches in fixed order, forward, loss, backward, global
 * gradient-norm clipping, transformers' LR schedules, AdamW, one step_record per step. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/models.h"
#include "formats/formats.h"
#include "thread_policy_internal.h"
#include "util/util.h"

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

struct trainer {
    const scenario *s;
    device *d;
    model *model;
    dataset data;
    int32_t *inputs, *targets;
    int steps;
};

/* one optimizer step (1-based); fills r, returns 0, or 1 after a device error */
static int train_step(struct trainer *tr, int step, step_record *r)
{
    const scenario *s = tr->s;
    device *d = tr->d;
    thread_policy_adapt();
    double t0 = now_ms();
    dataset_batch(&tr->data, step - 1, s->batch_size, 0, s->world_size, tr->inputs, tr->targets);
    double loss = 0;
    model_batch b = {s->batch_size, s->seq_len, tr->inputs, NULL, NULL, tr->targets};
    if (model_forward(tr->model, &b, &loss) || model_backward(tr->model))
        return 1;
    double norm = model_grad_norm(tr->model);
    /* torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), clamped to 1 */
    if (s->clip > 0 && isfinite(norm) && s->clip / (norm + 1e-6) < 1.0)
        model_scale_grads(tr->model, s->clip / (norm + 1e-6));
    adamw_params p = {s->lr * lr_multiplier(s->schedule, step - 1, s->warmup_steps, tr->steps),
                      s->beta1, s->beta2, s->eps, s->weight_decay, s->decay_all};
    if (model_adamw_step(tr->model, &p, step))
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
    r->threads = thread_policy_threads();
    return device_error(d) ? 1 : 0;
}

/* what a scenario's model needs on d, refused before anything is read or allocated */
static int check_fit(const scenario *s, const device *d)
{
    char why[512];
    if (s->fam->check_fit(&s->model, s->batch_size, s->seq_len, d, why, sizeof why) == 0)
        return 0;
    log_error("%s: %s", s->path, why);
    return EXIT_USAGE;
}

/* the tokenizer and the data file, tokenized into tr->data */
static int load_data(struct trainer *tr, const scenario *s)
{
    tokenizer *tok;
    int rc = tokenizer_open(s->tokenizer, s->tokenizer_path, &tok);
    if (rc)
        return rc;
    rc = dataset_load_tok(s->data_path, tok, s->seq_len, &tr->data);
    tokenizer_free(tok);
    if (rc)
        return rc;
    int vocab = s->fam->config_sizes(&s->model).vocab_size;
    if (tr->data.vocab_size > vocab) {
        log_error("%s: the %s tokenizer has %d ids but model vocab_size is %d", s->path,
                  s->tokenizer, tr->data.vocab_size, vocab);
        return EXIT_USAGE;
    }
    return 0;
}

static int trainer_setup(struct trainer *tr, const scenario *s, device *d, const train_options *o)
{
    tr->s = s;
    tr->d = d;
    tr->steps = o && o->steps > 0 ? o->steps : s->steps;
    if (s->world_size != 1) {
        log_error("%s: world_size %d needs a communicator (MPI), which this build does not have",
                  s->path, s->world_size);
        return EXIT_USAGE;
    }
    int rc = check_fit(s, d);
    if (!rc && o && o->save_dir)
        rc = checkpoint_check_target(o->save_dir);
    if (!rc)
        rc = load_data(tr, s);
    if (rc)
        return rc;
    size_t bt = (size_t)s->batch_size * (size_t)s->seq_len; /* <= INT_MAX: check_fit */
    tr->inputs = malloc(bt * sizeof *tr->inputs);
    tr->targets = malloc(bt * sizeof *tr->targets);
    if (!tr->inputs || !tr->targets) {
        log_error("out of host memory for a batch of %zu tokens", bt);
        return EXIT_FAIL;
    }
    if (s->fam->labels != LABELS_CAUSAL || s->fam->needs) {
        log_error("%s: the %s family needs masked-LM labels, an attention mask or token types, "
                  "which the datasets of this build do not give yet", s->path, s->fam->name);
        return EXIT_USAGE;
    }
    tr->model = model_create(s->fam, d, &s->model, s->batch_size, s->seq_len);
    if (!tr->model)
        return EXIT_FAIL;
    return train_initial_weights(tr->model, s);
}

void train_free(trainer *tr)
{
    if (!tr)
        return;
    model_free(tr->model);
    dataset_free(&tr->data);
    free(tr->inputs);
    free(tr->targets);
    free(tr);
}

int train_prepare(const scenario *s, device *d, const train_options *o, trainer **out)
{
    *out = NULL;
    trainer *tr = calloc(1, sizeof *tr);
    if (!tr) {
        log_error("out of host memory for the trainer");
        return EXIT_FAIL;
    }
    thread_policy_init(); /* the first thread count, so the run row records it */
    int rc = trainer_setup(tr, s, d, o);
    if (rc) {
        if (rc != EXIT_USAGE && device_error(d))
            log_error("%s: setting up %s on %s failed: %s", s->path, s->name, d->backend,
                      device_error(d));
        train_free(tr);
        return rc;
    }
    *out = tr;
    return 0;
}

int train_initial_weights(model *m, const scenario *s)
{
    if (strcmp(s->weights, "pretrained") == 0)
        return checkpoint_load(m, s->model_dir);
    return model_init_weights(m, s->seed) ? EXIT_FAIL : 0;
}

int train_save(model *m, const scenario *s, const char *dir)
{
    json_t *src = model_dir_raw_config(s->config_path);
    int rc = checkpoint_save(m, &s->model, src, dir);
    json_decref(src);
    return rc;
}

static int finish(train_result *res, train_status st, const char *fmt, const char *arg)
{
    res->status = st;
    if (fmt)
        snprintf(res->error, sizeof res->error, fmt, arg);
    return st == TRAIN_OK ? EXIT_PASS : EXIT_FAIL;
}

int train_loop(trainer *tr, const train_options *o, train_result *res)
{
    memset(res, 0, sizeof *res);
    device *d = tr->d;
    res->activation_bytes = model_activation_bytes(tr->model);
    res->state_bytes = model_state_bytes(tr->model);
    int rc = finish(res, TRAIN_OK, NULL, NULL);
    for (int step = 1; step <= tr->steps; step++) {
        step_record r;
        if (o && o->stop && *o->stop) {
            rc = finish(res, TRAIN_INTERRUPTED, "interrupted%s", " by a signal");
            break;
        }
        if (train_step(tr, step, &r)) {
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
    if (rc == EXIT_PASS && o && o->save_dir && train_save(tr->model, tr->s, o->save_dir))
        rc = finish(res, TRAIN_FAILED, "saving the weights to %s failed", o->save_dir);
    return rc;
}

int train_run(const scenario *s, device *d, const train_options *o, train_result *res)
{
    memset(res, 0, sizeof *res);
    trainer *tr;
    int rc = train_prepare(s, d, o, &tr);
    if (rc) {
        finish(res, TRAIN_FAILED, "setup failed: %s",
               device_error(d) ? device_error(d) : "see the messages above");
        return rc;
    }
    rc = train_loop(tr, o, res);
    train_free(tr);
    return rc;
}
