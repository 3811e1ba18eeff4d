/* harness/train/train.c: the training loop: batches in fixed order, forward, loss, backward, global
 * gradient-norm clipping, transformers' LR schedules, AdamW, one step_record per step. */
#define _POSIX_C_SOURCE 200809L /* lstat */
#include "train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "models/models.h"
#include "formats/formats.h"
#include "thread_policy_internal.h"
#include "train_dist_internal.h"
#include "train_lowp_internal.h"
#include "util/json_locate.h"
#include "util/output_target.h"
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
    comm *c;         /* train_options.comm: NULL for one rank */
    int rank;
    dist_state dist; /* gradients summed over micro-batches and ranks (train_dist.c) */
    int moe_layers, moe_experts; /* the model's sparse-MoE layers and experts; 0 none */
    int64_t *expert_tokens;      /* [moe_layers * moe_experts]: the step's counts, summed over
                                    its micro-batches */
    int64_t *expert_scratch;     /* the same shape: one forward's counts */
    int64_t *expert_ranks;       /* several ranks: [world * the same shape], every rank's
                                    counts gathered to sum them */
    train_lowp lowp;             /* bf16/fp16: the device's mode, fp16 loss scaling */
    int applied;                 /* optimizer steps applied so far: AdamW's t and the LR
                                    scheduler's count (an fp16 step skipped moves neither) */
    int unlabelled;              /* the step's first micro-batch (from 1) on this rank whose
                                    labels are all -100, 0 when none: its loss is NaN */
};

/* the buffers of the model's per-expert token counts, when it has MoE layers: their shape
 * within the store's limits, checked before anything is recorded */
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
    size_t world = tr->c ? (size_t)tr->c->size : 1;
    if (!(tr->expert_tokens = calloc(cells, sizeof *tr->expert_tokens)) ||
        !(tr->expert_scratch = calloc(cells, sizeof *tr->expert_scratch)) ||
        (world > 1 && !(tr->expert_ranks = calloc(world * cells, sizeof *tr->expert_ranks)))) {
        log_error("out of host memory for %zu expert counts (%zu rank%s)", cells, world,
                  world == 1 ? "" : "s");
        return EXIT_FAIL;
    }
    return 0;
}

/* adds the last forward's per-expert counts to the step's (reset at micro-batch 0); nothing for
 * a model without MoE layers. 0, or 1 after a device error */
static int routing_add(struct trainer *tr, int micro)
{
    if (!tr->expert_tokens)
        return 0;
    if (model_expert_tokens(tr->model, tr->expert_scratch))
        return 1;
    size_t cells = (size_t)tr->moe_layers * (size_t)tr->moe_experts;
    for (size_t i = 0; i < cells; i++)
        tr->expert_tokens[i] = (micro ? tr->expert_tokens[i] : 0) + tr->expert_scratch[i];
    return 0;
}

/* several ranks: the step's counts summed over the ranks, as its tokens are (a collective of
 * every rank's trainer). 0, or 1 after a communicator error (err) */
static int routing_reduce(struct trainer *tr, char *err, size_t len)
{
    if (!tr->expert_tokens)
        return 0;
    size_t cells = (size_t)tr->moe_layers * (size_t)tr->moe_experts;
    return dist_sum_counts(&tr->dist, tr->expert_tokens, cells, tr->expert_ranks, err, len);
}

/* the step's routing into r (every rank's micro-batches) */
static void routing_record(struct trainer *tr, step_record *r)
{
    if (!tr->expert_tokens)
        return;
    r->moe_layers = tr->moe_layers;
    r->moe_experts = tr->moe_experts;
    r->expert_tokens = tr->expert_tokens;
}

/* this rank's batch of loader step `load` (from 0; (step - 1) * accumulation + micro-batch),
 * with train.seed and load + 1 as its dropout counters: the optimizer step without accumulation,
 * and every micro-batch of a step its own masks with it (as PyTorch's generator moves on between
 * forwards; the ranks draw alike, as ranks seeded alike do); *tokens: the
 * tokens it counts (causal: every position, B*T; mlm and alpaca: the positions that are not
 * padding) */
static model_batch next_batch(struct trainer *tr, int load, int step, int64_t *tokens)
{
    const scenario *s = tr->s;
    int B = s->batch_size, T = s->seq_len, W = s->world_size;
    if (tr->from == FROM_TEXT || tr->from == FROM_MEGATRON) {
        if (tr->from == FROM_TEXT)
            dataset_batch(&tr->data, load, B, tr->rank, W, tr->inputs, tr->targets);
        else
            gpt_data_batch(&tr->gpt, load, B, tr->rank, W, tr->inputs, tr->targets, tr->sample);
        *tokens = (int64_t)B * T;
        return (model_batch){B, T, tr->inputs, NULL, NULL, tr->targets, s->seed,
                             (uint32_t)(load + 1)};
    }
    if (tr->from == FROM_ALPACA)
        alpaca_batch(&tr->sft, load, B, tr->rank, W, tr->inputs, tr->mask, tr->targets);
    else
        mlm_batch(&tr->mlm_data, s->seed, load, B, (mlm_place){tr->rank, W, s->grad_accum},
                  tr->inputs, tr->types, tr->mask, tr->targets);
    *tokens = 0;
    for (size_t i = 0; i < (size_t)B * (size_t)T; i++)
        *tokens += tr->mask[i] != 0;
    return (model_batch){B, T, tr->inputs, tr->mlm ? tr->types : NULL, tr->mask, tr->targets,
                         s->seed, (uint32_t)(load + 1)};
}

/* 1 when some label of b is not -100 */
static int has_label(const model_batch *b)
{
    for (size_t i = 0; i < (size_t)b->B * (size_t)b->T; i++)
        if (b->labels[i] != MODEL_IGNORE_INDEX)
            return 1;
    return 0;
}

/* forward and backward of the step's micro-batches (train.gradient_accumulation_steps), their
 * gradients summed and reduced over the ranks when there is more than one of either; *loss the
 * mean of the micro-batches' losses. 0, or 1 after a device or communicator error (err) */
static int micro_batches(struct trainer *tr, int step, double *loss, int64_t *tokens, char *err,
                         size_t len)
{
    int A = tr->s->grad_accum;
    *loss = 0;
    *tokens = 0;
    tr->unlabelled = 0;
    for (int a = 0; a < A; a++) {
        int64_t n;
        double l = 0;
        model_batch b = next_batch(tr, (step - 1) * A + a, step, &n);
        if (tr->dump && train_dump_batch(tr->dump, step, &b)) {
            snprintf(err, len, "%s: writing the batch of step %d failed", tr->dump_path, step);
            return 1;
        }
        if (model_forward(tr->model, &b, &l) || routing_add(tr, a) ||
            model_backward(tr->model) || dist_accumulate(&tr->dist, tr->model, a))
            return 1;
        if (!tr->unlabelled && !has_label(&b))
            tr->unlabelled = a + 1;
        *loss += l / A;
        *tokens += n;
    }
    return dist_reduce(&tr->dist, tr->model, err, len);
}

/* one optimizer step (1-based); fills r, returns 0, or 1 after a device error */
static int train_step(struct trainer *tr, int step, step_record *r, char *err, size_t len)
{
    const scenario *s = tr->s;
    device *d = tr->d;
    thread_policy_adapt();
    double t0 = now_ms();
    int64_t tokens;
    double loss = 0;
    train_lowp_begin_step(&tr->lowp);
    if (micro_batches(tr, step, &loss, &tokens, err, len) || routing_reduce(tr, err, len) ||
        train_lowp_inject(&tr->lowp, tr->model, step))
        return 1;
    int skipped; /* fp16: Inf/NaN gradients, no update (GradScaler.step) */
    double norm = train_lowp_unscale(&tr->lowp, tr->model, &skipped);
    /* torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), clamped to 1 */
    if (!skipped && s->clip > 0 && isfinite(norm) && s->clip / (norm + 1e-6) < 1.0)
        model_scale_grads(tr->model, s->clip / (norm + 1e-6));
    adamw_params p = {s->lr * lr_multiplier(s->schedule, tr->applied, s->warmup_steps,
                                            tr->steps),
                      s->beta1, s->beta2, s->eps, s->weight_decay, s->decay_all};
    if (!skipped && model_adamw_step(tr->model, &p, ++tr->applied))
        return 1;
    d->ops->synchronize(d);
    double ms = now_ms() - t0;
    memset(r, 0, sizeof *r);
    r->step = step;
    r->loss = loss;
    r->grad_norm = norm;
    r->lr = p.lr;
    r->tokens = tokens;
    r->step_ms = ms;
    r->tokens_per_s = ms > 0 ? r->tokens / (ms / 1e3) : 0;
    r->mem_peak_bytes = (int64_t)d->mem_peak;
    r->mem_used_bytes = (int64_t)d->ops->mem_used(d);
    r->mem_total_bytes = (int64_t)d->mem_total;
    r->threads = thread_policy_threads();
    routing_record(tr, r);
    train_lowp_end_step(&tr->lowp, r, skipped);
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

/* the alpaca format's EOS and pad ids (data.eos_token, data.pad_token) */
static int alpaca_ids(const scenario *s, tokenizer *tok, alpaca_options *o)
{
    char where[PATH_MAX + 48]; /* FILE:LINE: data.KEY, the line of the key (or of "data") */
    snprintf(where, sizeof where, "%s:%d: data.eos_token", s->path,
             json_locate_line(scenario_lines(s), "data.eos_token"));
    int rc = data_special_id(tok, "eos", s->eos_token, where, &o->eos_id);
    snprintf(where, sizeof where, "%s:%d: data.pad_token", s->path,
             json_locate_line(scenario_lines(s), "data.pad_token"));
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
    int before, after;
    tokenizer_template_size(tok, &before, &after);
    if (s->seq_len <= before + after) { /* a row holds the template and at least one token */
        log_error("%s:%d: data.seq_len: %d leaves no room for text: the tokenizer's template adds "
                  "%d special tokens ([CLS] ... [SEP]) to each row; give at least %d", s->path,
                  json_locate_line(scenario_lines(s), "data.seq_len"), s->seq_len, before + after,
                  before + after + 1);
        return EXIT_USAGE;
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
        int d = 0; /* the first dataset holding such an id: its file is named */
        while (d + 1 < tr->gpt.n && tr->gpt.sets[d].max_id < vocab)
            d++;
        int blend = strstr(scenario_lines(s), "\"blend\"") != NULL;
        char field[48]; /* data.path, or the blend's entry that names the file */
        snprintf(field, sizeof field, blend ? "data.blend[%d].path" : "data.path", d);
        log_error("%s:%d: %s: %s.bin holds token id %d, outside the model's vocab_size %d",
                  s->path, json_locate_line(scenario_lines(s), blend ? "data.blend" : "data.path"),
                  field, s->blend_path[d], tr->gpt.sets[d].max_id, vocab);
        return EXIT_USAGE;
    }
    if (ids > vocab) {
        log_error("%s:%d: data.tokenizer: the %s tokenizer has %d ids but the model's vocab_size "
                  "is %d", s->path, json_locate_line(scenario_lines(s), "data.tokenizer"), s->tokenizer,
                  ids, vocab);
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

int train_check_save_dir(const char *what, const char *dir)
{
    static const char *const names[] = {"config.json", "model.safetensors", "tokenizer.json",
                                        "vocab.json", "merges.txt", "vocab.txt",
                                        "tokenizer_config.json", "override_config.json"};
    char path[4200];
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        log_error("%s %s: it is not a directory", what, dir);
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (output_is_input(path)) {
            log_error("%s %s: %s is a file this run reads (its model directory): the "
                      "scenario would start from other weights next time; write elsewhere",
                      what, dir, path);
            return EXIT_USAGE;
        }
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            log_error("%s %s: %s is a directory, where the checkpoint writes a file", what, dir,
                      path);
            return EXIT_USAGE;
        }
        /* each file is written as NAME.tmp, then renamed: a directory there cannot be removed */
        snprintf(path, sizeof path, "%s/%s.tmp", dir, names[i]);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            log_error("%s %s: %s is a directory, where the checkpoint writes its temporary file",
                      what, dir, path);
            return EXIT_USAGE;
        }
    }
    return 0;
}

static int trainer_setup(struct trainer *tr, const scenario *s, device *d, const train_options *o)
{
    tr->s = s;
    tr->d = d;
    tr->steps = o && o->steps > 0 ? o->steps : s->steps;
    tr->c = o ? o->comm : NULL;
    tr->rank = tr->c ? tr->c->rank : 0;
    int world = tr->c ? tr->c->size : 1;
    if (s->world_size != world) {
        log_error("%s: world_size is %d but %d rank%s started (docs/ranks.md: mpirun -np, srun -n)",
                  s->path, s->world_size, world, world == 1 ? " was" : "s were");
        return EXIT_USAGE;
    }
    int rc = check_fit(s, d);
    if (!rc)
        rc = train_lowp_setup(&tr->lowp, s, d, o && o->native_precision);
    if (!rc && o && o->save_dir)
        rc = checkpoint_check_target(o->save_dir);
    if (!rc)
        rc = load_data(tr, s);
    if (rc)
        return rc;
    if ((rc = check_objective(tr, s)))
        return rc;
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
    if (!tr->model || dist_init(&tr->dist, tr->c, s->grad_accum, tr->model))
        return EXIT_FAIL;
    if ((rc = routing_setup(tr)) || (rc = train_initial_weights(tr->model, s)))
        return rc;
    if (o && o->save_dir && (rc = train_check_save_dir("--save", o->save_dir)))
        return rc;
    /* rank 0 dumps its own batches; the file is checked now, once every input has been read,
     * and created only when the run starts (train_loop): an input error leaves none behind */
    if (o && o->dump_batches && tr->rank == 0) {
        tr->dump_path = o->dump_batches;
        return output_check_target("the batch dump", tr->dump_path);
    }
    return 0;
}

void train_free(trainer *tr)
{
    if (!tr)
        return;
    model_free(tr->model);
    train_lowp_free(&tr->lowp);
    dist_free(&tr->dist);
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
    free(tr->expert_scratch);
    free(tr->expert_ranks);
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

int train_check_replicas(trainer *tr)
{
    return dist_check_replicas(tr->c, tr->model);
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
    return rc ? rc : model_dir_copy_tokenizer(s->tokenizer, s->tokenizer_path, dir);
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

/* several ranks: every rank's figures of the step to every rank, r becomes the run's record
 * (dist_gather_step), o->on_rank_step sees each rank's; *stop: some rank was asked to stop */
static int gather_ranks(struct trainer *tr, const train_options *o, step_record *r, int *stop,
                        char *err, size_t len)
{
    if (!tr->c || tr->c->size == 1)
        return 0;
    dist_rank_step mine = {r->loss,           r->step_ms,          r->tokens,
                           r->mem_peak_bytes, r->mem_used_bytes,   r->mem_total_bytes,
                           r->threads,        o && o->stop && *o->stop, tr->unlabelled, 0};
    if (dist_gather_step(&tr->dist, &mine, r, stop, err, len))
        return 1;
    for (int k = 0; o && o->on_rank_step && k < tr->c->size; k++) {
        const dist_rank_step *x = &tr->dist.ranks[k];
        step_record rk = *r;
        rk.loss = x->loss;
        rk.tokens = x->tokens;
        rk.step_ms = x->step_ms;
        rk.tokens_per_s = x->step_ms > 0 ? x->tokens / (x->step_ms / 1e3) : 0;
        rk.mem_peak_bytes = x->mem_peak;
        rk.mem_used_bytes = x->mem_used;
        rk.mem_total_bytes = x->mem_total;
        rk.threads = x->threads;
        if (o->on_rank_step(k, &rk, o->arg)) {
            snprintf(err, len, "recording rank %d's step failed", k);
            return 1;
        }
    }
    return 0;
}

/* the lowest rank whose step had a micro-batch without labels (every rank's, gathered with the
 * step's figures), *micro that micro-batch (from 1); -1 when none had */
static int unlabelled_rank(const struct trainer *tr, int *micro)
{
    *micro = 0;
    if (!tr->c || tr->c->size == 1) {
        *micro = tr->unlabelled;
        return tr->unlabelled ? tr->rank : -1;
    }
    for (int k = 0; k < tr->c->size; k++)
        if (tr->dist.ranks[k].unlabelled) {
            *micro = tr->dist.ranks[k].unlabelled;
            return k;
        }
    return -1;
}

/* why step r diverged; an unlabelled micro-batch of any rank named (docs/scenario.md, "A batch
 * without labels") */
static void diverged_error(const struct trainer *tr, int step, const step_record *r, char *out,
                           size_t n)
{
    int len = snprintf(out, n, "loss %g, grad norm %g at step %d", printable_real(r->loss),
                       printable_real(r->grad_norm), step);
    int micro, rank = unlabelled_rank(tr, &micro);
    if (rank >= 0 && len >= 0 && (size_t)len < n)
        snprintf(out + len, n - (size_t)len,
                 ": micro-batch %d of rank %d has every label -100 (ignore_index), and the "
                 "mean cross-entropy over no label is 0/0, NaN in PyTorch too",
                 micro, rank);
}

/* one rank stops only with all: with several, a signal on any rank counts at the next gather */
static int stop_now(const struct trainer *tr, const train_options *o, int stop_all)
{
    if (tr->c && tr->c->size > 1)
        return stop_all;
    return o && o->stop && *o->stop;
}

int train_loop(trainer *tr, const train_options *o, train_result *res)
{
    memset(res, 0, sizeof *res);
    device *d = tr->d;
    res->activation_bytes = model_activation_bytes(tr->model);
    res->state_bytes = model_state_bytes(tr->model);
    int rc = finish(res, TRAIN_OK, NULL, NULL), stop_all = 0;
    if (tr->dump_path && !tr->dump && !(tr->dump = fopen(tr->dump_path, "w"))) {
        snprintf(res->error, sizeof res->error, "%s: cannot write the batch dump: %s",
                 tr->dump_path, strerror(errno));
        return finish(res, TRAIN_FAILED, NULL, NULL);
    }
    for (int step = 1; step <= tr->steps; step++) {
        step_record r;
        char err[COMM_ERR] = "";
        if (stop_now(tr, o, stop_all)) {
            rc = finish(res, TRAIN_INTERRUPTED, "interrupted%s", " by a signal");
            break;
        }
        if (train_step(tr, step, &r, err, sizeof err) ||
            gather_ranks(tr, o, &r, &stop_all, err, sizeof err)) {
            rc = finish(res, TRAIN_FAILED, "%s",
                        device_error(d) ? device_error(d) : err[0] ? err : "step failed");
            break;
        }
        res->steps_done = step;
        res->final_loss = r.loss;
        if (o && o->on_step && o->on_step(&r, o->arg)) {
            rc = finish(res, TRAIN_FAILED, "%s", "recording the step failed");
            break;
        }
        if (!isfinite(r.loss) || (!isfinite(r.grad_norm) && !r.skipped)) {
            diverged_error(tr, step, &r, res->error, sizeof res->error);
            rc = finish(res, TRAIN_DIVERGED, NULL, NULL);
            break;
        }
    }
    int saves = o && o->save_dir && tr->rank == 0; /* the ranks' weights are the same */
    if (rc == EXIT_PASS && saves && train_save(tr->model, tr->s, o->save_dir))
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
