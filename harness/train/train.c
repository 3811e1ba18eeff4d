/* harness/train/train.c: the training loop: batches in fixed order, forward, loss, backward, global
 * gradient-norm clipping, transformers' LR schedules, AdamW, one step_record per step. */
#include "train.h"

#include <errno.h>
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

/* where a run's batches come from */
typedef enum { FROM_TEXT, FROM_MLM, FROM_ALPACA, FROM_MEGATRON } batch_source;

struct trainer {
    const scenario *s;
    device *d;
    model *model;
    int mlm;           /* data.objective "mlm": batches from mlm_data */
    batch_source from;
    dataset data;
    mlm_dataset mlm_data;
    alpaca_dataset sft;
    gpt_data gpt;
    int32_t *inputs, *targets, *types, *mask; /* [B*T] each; types only for mlm, mask for mlm
                                                 and alpaca */
    int32_t *sample;   /* megatron: one sample of seq_len + 1 ids */
    int steps;
    FILE *dump; /* train_options.dump_batches, open */
    const char *dump_path;
    int moe_layers, moe_experts; /* the model's sparse-MoE layers and experts; 0 none */
    int64_t *expert_tokens;      /* [moe_layers * moe_experts]: the last forward's counts */
};

/* the buffer of the model's per-expert token counts, when it has MoE layers: its shape within
 * the store's limits, checked before anything is recorded */
static int routing_setup(struct trainer *tr)
{
    char why[160];
    model_moe_shape(tr->model, &tr->moe_layers, &tr->moe_experts);
    if (tr->moe_layers <= 0 || tr->moe_experts <= 0) {
        tr->moe_layers = tr->moe_experts = 0;
        return 0;
    }
    if (routing_shape_check(tr->moe_layers, tr->moe_experts, why, sizeof why)) {
        log_error("%s: the model's expert counts cannot be recorded: %s", tr->s->path, why);
        return EXIT_USAGE;
    }
    size_t cells = (size_t)tr->moe_layers * (size_t)tr->moe_experts; /* <= STORE_MOE_MAX_CELLS */
    if (!(tr->expert_tokens = calloc(cells, sizeof *tr->expert_tokens))) {
        log_error("out of host memory for %zu expert counts", cells);
        return EXIT_FAIL;
    }
    return 0;
}

/* the step's routing into r: the tokens the step's forward (the model's last) sent to each
 * expert; nothing for a model without MoE layers. 0, or 1 after a device error */
static int routing_record(struct trainer *tr, step_record *r)
{
    if (!tr->expert_tokens)
        return 0;
    if (model_expert_tokens(tr->model, tr->expert_tokens))
        return 1;
    r->moe_layers = tr->moe_layers;
    r->moe_experts = tr->moe_experts;
    r->expert_tokens = tr->expert_tokens;
    return 0;
}

/* the batch of optimizer step `step` (1-based) for rank 0, with train.seed and step as its
 * dropout counters; *tokens: the tokens it counts (causal: every position, B*T; mlm: the
 * positions that are not padding) */
static model_batch next_batch(struct trainer *tr, int step, int64_t *tokens)
{
    const scenario *s = tr->s;
    int B = s->batch_size, T = s->seq_len;
    if (tr->from == FROM_TEXT || tr->from == FROM_MEGATRON) {
        if (tr->from == FROM_TEXT)
            dataset_batch(&tr->data, step - 1, B, 0, s->world_size, tr->inputs, tr->targets);
        else
            gpt_data_batch(&tr->gpt, step - 1, B, 0, s->world_size, tr->inputs, tr->targets,
                           tr->sample);
        *tokens = (int64_t)B * T;
        return (model_batch){B, T, tr->inputs, NULL, NULL, tr->targets, s->seed,
                             (uint32_t)step};
    }
    if (tr->from == FROM_ALPACA)
        alpaca_batch(&tr->sft, step - 1, B, 0, s->world_size, tr->inputs, tr->mask, tr->targets);
    else
        mlm_batch(&tr->mlm_data, s->seed, step - 1, B, 0, s->world_size, tr->inputs, tr->types,
                  tr->mask, tr->targets);
    *tokens = 0;
    for (size_t i = 0; i < (size_t)B * (size_t)T; i++)
        *tokens += tr->mask[i] != 0;
    return (model_batch){B, T, tr->inputs, tr->mlm ? tr->types : NULL, tr->mask, tr->targets,
                         s->seed, (uint32_t)step};
}

/* one optimizer step (1-based); fills r, returns 0, or 1 after a device error */
static int train_step(struct trainer *tr, int step, step_record *r)
{
    const scenario *s = tr->s;
    device *d = tr->d;
    thread_policy_adapt();
    double t0 = now_ms();
    int64_t tokens;
    model_batch b = next_batch(tr, step, &tokens);
    double loss = 0;
    if (tr->dump && train_dump_batch(tr->dump, step, &b)) {
        log_error("%s: writing the batch of step %d failed", tr->dump_path, step);
        return 1;
    }
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
    r->tokens = tokens * s->world_size; /* every rank's batch is as large as rank 0's */
    r->step_ms = ms;
    r->tokens_per_s = ms > 0 ? r->tokens / (ms / 1e3) : 0;
    r->mem_peak_bytes = (int64_t)d->mem_peak;
    r->mem_used_bytes = (int64_t)d->ops->mem_used(d);
    r->mem_total_bytes = (int64_t)d->mem_total;
    r->threads = thread_policy_threads();
    return routing_record(tr, r) || device_error(d) ? 1 : 0;
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

/* the alpaca format's EOS and pad ids (data.eos_token, data.pad_token) */
static int alpaca_ids(const scenario *s, tokenizer *tok, alpaca_options *o)
{
    char where[PATH_MAX + 32];
    snprintf(where, sizeof where, "%s: data.eos_token", s->path);
    int rc = data_special_id(tok, "eos", s->eos_token, where, &o->eos_id);
    snprintf(where, sizeof where, "%s: data.pad_token", s->path);
    if (!rc && strcmp(s->pad_token, "eos") == 0) /* the EOS as data.eos_token resolved it */
        o->pad_id = o->eos_id;
    else if (!rc)
        rc = data_special_id(tok, "pad", s->pad_token, where, &o->pad_id);
    return rc;
}

/* the data file, tokenized: causal blocks into tr->data, masked-LM rows into tr->mlm_data, or
 * Alpaca examples into tr->sft; *ids: the largest id the data holds plus one */
static int load_dataset(struct trainer *tr, const scenario *s, tokenizer *tok, int *ids)
{
    if (tr->from == FROM_ALPACA) {
        alpaca_options o = {s->seq_len, s->model_max_length, -1, -1};
        int rc = alpaca_ids(s, tok, &o);
        if (!rc)
            rc = alpaca_dataset_load(s->data_path, tok, &o, &tr->sft);
        *ids = tr->sft.vocab_size;
        return rc;
    }
    if (!tr->mlm) {
        int rc = dataset_load_tok(s->data_path, tok, s->seq_len, &tr->data);
        *ids = tr->data.vocab_size;
        return rc;
    }
    mlm_options o = {s->seq_len, s->line_by_line, s->mlm_probability};
    int rc = mlm_dataset_load(s->data_path, tok, &o, &tr->mlm_data);
    *ids = tr->mlm_data.vocab_size;
    return rc;
}

/* the megatron datasets, mapped; *ids: their largest id plus one */
static int load_megatron(struct trainer *tr, const scenario *s, int *ids)
{
    const char *prefixes[SCN_MAX_BLEND];
    for (int i = 0; i < s->n_blend; i++)
        prefixes[i] = s->blend_path[i];
    int rc = gpt_data_open(&tr->gpt, prefixes, s->blend_weight, s->n_blend, s->seq_len);
    *ids = rc ? 0 : tr->gpt.max_id + 1;
    return rc;
}

/* the tokenizer and the data file, tokenized (or the megatron files, mapped), within the
 * model's vocabulary */
static int load_data(struct trainer *tr, const scenario *s)
{
    tr->mlm = strcmp(s->objective, "mlm") == 0;
    tr->from = !strcmp(s->data_format, "alpaca")     ? FROM_ALPACA
               : !strcmp(s->data_format, "megatron") ? FROM_MEGATRON
               : tr->mlm                             ? FROM_MLM
                                                     : FROM_TEXT;
    int ids = 0, rc;
    if (tr->from == FROM_MEGATRON) {
        rc = load_megatron(tr, s, &ids);
    } else {
        tokenizer *tok;
        if ((rc = tokenizer_open(s->tokenizer, s->tokenizer_path, &tok)))
            return rc;
        rc = load_dataset(tr, s, tok, &ids);
        tokenizer_free(tok);
    }
    if (rc)
        return rc;
    int vocab = s->fam->config_sizes(&s->model).vocab_size;
    if (ids > vocab && tr->from == FROM_MEGATRON) {
        log_error("%s: the megatron data hold token id %d, outside the model's vocab_size %d",
                  s->path, ids - 1, vocab);
        return EXIT_USAGE;
    }
    if (ids > vocab) {
        log_error("%s: the %s tokenizer has %d ids but model vocab_size is %d", s->path,
                  s->tokenizer, ids, vocab);
        return EXIT_USAGE;
    }
    return 0;
}

/* the objective gives every batch field the family reads */
static int check_objective(struct trainer *tr, const scenario *s)
{
    int gives_mlm = tr->mlm;
    if ((s->fam->labels == LABELS_MLM) == gives_mlm)
        return 0;
    log_error("%s: the %s family needs %s labels, data.objective is \"%s\"", s->path,
              s->fam->name, s->fam->labels == LABELS_MLM ? "masked-LM" : "causal-LM",
              s->objective);
    return EXIT_USAGE;
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
    if ((rc = check_objective(tr, s)))
        return rc;
    if (o && o->dump_batches && !(tr->dump = fopen(tr->dump_path = o->dump_batches, "w"))) {
        log_error("%s: cannot write the batch dump: %s", o->dump_batches, strerror(errno));
        return EXIT_USAGE;
    }
    size_t bt = (size_t)s->batch_size * (size_t)s->seq_len; /* <= INT_MAX: check_fit */
    tr->inputs = malloc(bt * sizeof *tr->inputs);
    tr->targets = malloc(bt * sizeof *tr->targets);
    int masked = tr->mlm || tr->from == FROM_ALPACA;
    tr->types = tr->mlm ? malloc(bt * sizeof *tr->types) : NULL;
    tr->mask = masked ? malloc(bt * sizeof *tr->mask) : NULL;
    tr->sample = malloc(((size_t)s->seq_len + 1) * sizeof *tr->sample);
    if (!tr->inputs || !tr->targets || !tr->sample || (tr->mlm && !tr->types) ||
        (masked && !tr->mask)) {
        log_error("out of host memory for a batch of %zu tokens", bt);
        return EXIT_FAIL;
    }
    tr->model = model_create(s->fam, d, &s->model, s->batch_size, s->seq_len);
    if (!tr->model)
        return EXIT_FAIL;
    if ((rc = routing_setup(tr)))
        return rc;
    return train_initial_weights(tr->model, s);
}

void train_free(trainer *tr)
{
    if (!tr)
        return;
    model_free(tr->model);
    dataset_free(&tr->data);
    mlm_dataset_free(&tr->mlm_data);
    alpaca_dataset_free(&tr->sft);
    gpt_data_close(&tr->gpt);
    free(tr->sample);
    free(tr->inputs);
    free(tr->targets);
    free(tr->types);
    free(tr->mask);
    free(tr->expert_tokens);
    if (tr->dump)
        fclose(tr->dump);
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
        return checkpoint_load_pretrained(m, s->model_dir, s->seed);
    return model_init_weights(m, s->seed) ? EXIT_FAIL : 0;
}

int train_save(model *m, const scenario *s, const char *dir)
{
    json_t *src = model_dir_raw_config(s->config_path);
    int rc = checkpoint_save(m, &s->model, src, dir);
    json_decref(src);
    return rc;
}

/* one [n] array of ints, or null */
static void dump_ints(FILE *f, const char *key, const int32_t *v, size_t n)
{
    fprintf(f, ",\"%s\":", key);
    if (!v) {
        fputs("null", f);
        return;
    }
    fputc('[', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, i ? ",%d" : "%d", (int)v[i]);
    fputc(']', f);
}

int train_dump_batch(FILE *f, int step, const model_batch *b)
{
    size_t n = (size_t)b->B * (size_t)b->T;
    fprintf(f, "{\"step\":%d,\"B\":%d,\"T\":%d", step, b->B, b->T);
    dump_ints(f, "input_ids", b->input_ids, n);
    dump_ints(f, "token_type_ids", b->token_type_ids, n);
    dump_ints(f, "attention_mask", b->attention_mask, n);
    dump_ints(f, "labels", b->labels, n);
    fputs("}\n", f);
    return fflush(f) != 0 || ferror(f) ? 1 : 0;
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
