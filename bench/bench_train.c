/* bench/bench_train.c: GPT-2 (or BERT MLM) training throughput on one device (tokens/s, GFLOP/s)
 * beside the device's own gemm op on 2048^3 in the same run, peak memory beside its parts, and
 * with --profile where a step's time goes, op by op and GEMM shape by shape. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_core.h"
#include "device.h"
#include "models/models.h"
#include "op_profile.h"
#include "util/util.h"

typedef struct {
    const char *device, *family;
    int layers, embd, heads, seq, batch, vocab, steps, inter;
    double dropout; /* every dropout of the model; < 0: the family's default (0.1) */
    int profile;    /* --profile: as many steps again under the op timing shim (op_profile.c) */
} bench_cfg;

/* the device's GEMM ceiling: its own gemm op (oneDNN on cpu, cuBLAS on cuda, CLBlast on
 * opencl) on square matrices of size n, best of reps; -1 when the device fails */
static double gemm_gflops(device *d, int n, int reps)
{
    size_t nn = (size_t)n * n;
    float *h = malloc(sizeof(float) * nn);
    dten a = device_alloc(d, nn, DT_REAL), b = device_alloc(d, nn, DT_REAL);
    dten c = device_alloc(d, nn, DT_REAL);
    double best = -1;
    if (h && a.buf && b.buf && c.buf) {
        for (size_t i = 0; i < nn; i++)
            h[i] = (float)((int)(i % 17) - 8) / 8.0f;
        d->ops->upload(d, a, h);
        d->ops->upload(d, b, h);
        for (int r = 0; r <= reps && !device_error(d); r++) { /* r = 0: warm-up */
            double t0 = now_ms();
            d->ops->gemm(d, 0, 0, n, n, n, 1.0, a, n, 0, b, n, 0, 0.0, c, n, 0, 1);
            d->ops->synchronize(d);
            double s = (now_ms() - t0) / 1e3, g = 2.0 * n * n * (double)n / s / 1e9;
            if (r > 0 && g > best && !device_error(d))
                best = g;
        }
    }
    free(h);
    dten bufs[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (bufs[i].buf)
            device_free(d, bufs[i]);
    return best;
}

static int parse_args(int argc, char **argv, bench_cfg *c)
{
    *c = (bench_cfg){"cpu", "gpt2", 4, 256, 4, 128, 8, 256, 10, 0, -1, 0};
    for (int i = 1; i < argc; i += 2) {
        long v = 0;
        if (strcmp(argv[i], "--profile") == 0) {
            c->profile = 1;
            i--; /* no value */
            continue;
        }
        if (i + 1 == argc) {
            fprintf(stderr, "bench_train: %s has no value\n", argv[i]);
            return 2;
        }
        if (strcmp(argv[i], "--device") == 0) {
            c->device = argv[i + 1];
            continue;
        }
        if (strcmp(argv[i], "--family") == 0) {
            c->family = argv[i + 1];
            if (strcmp(c->family, "gpt2") != 0 && strcmp(c->family, "bert") != 0) {
                fprintf(stderr, "bench_train: --family '%s': gpt2 or bert\n", c->family);
                return 2;
            }
            continue;
        }
        if (strcmp(argv[i], "--dropout") == 0) {
            char *end = NULL;
            c->dropout = strtod(argv[i + 1], &end);
            if (!end || *end || end == argv[i + 1] || !(c->dropout >= 0 && c->dropout < 1)) {
                fprintf(stderr, "bench_train: --dropout '%s' is not in [0, 1)\n", argv[i + 1]);
                return 2;
            }
            continue;
        }
        if (parse_long(argv[i + 1], &v) || v < 1) {
            fprintf(stderr, "bench_train: %s: '%s' is not a positive number\n", argv[i], argv[i + 1]);
            return 2;
        }
        int *dst = strcmp(argv[i], "--layers") == 0 ? &c->layers
                   : strcmp(argv[i], "--embd") == 0 ? &c->embd
                   : strcmp(argv[i], "--heads") == 0 ? &c->heads
                   : strcmp(argv[i], "--seq") == 0 ? &c->seq
                   : strcmp(argv[i], "--batch") == 0 ? &c->batch
                   : strcmp(argv[i], "--vocab") == 0 ? &c->vocab
                   : strcmp(argv[i], "--inter") == 0 ? &c->inter
                   : strcmp(argv[i], "--steps") == 0 ? &c->steps : NULL;
        if (!dst) {
            fprintf(stderr, "usage: bench_train [--device SPEC] [--family gpt2|bert] [--layers N]"
                            " [--embd N] [--heads N] [--inter N] [--seq N] [--batch N] [--vocab N]"
                            " [--steps N] [--dropout P] [--profile]\n");
            return 2;
        }
        *dst = (int)v;
    }
    return 0;
}

/* random tokens; causal labels (the next token, none at the last position), or with mlm every
 * 7th position labelled with its own token (bert) */
static void random_batch(int32_t *in, int32_t *tg, int n, int T, int V, int mlm, unsigned *seed)
{
    for (int i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        in[i] = (int32_t)((*seed >> 8) % (unsigned)V);
    }
    for (int i = 0; i < n; i++)
        tg[i] = mlm ? (i % T % 7 == 0 ? in[i] : -100) : (i % T == T - 1) ? -100 : in[i + 1];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the median step time of `steps` steps (forward, backward, clip to 1, AdamW), -1 on failure */
static double time_steps(model *m, device *d, const bench_cfg *c, int steps, int32_t *in, int32_t *tg)
{
    adamw_params p = {1e-4, 0.9, 0.999, 1e-8, 0.1, 1};
    unsigned seed = 1;
    double loss, *ms = calloc((size_t)steps, sizeof *ms);
    if (!ms)
        return -1;
    int mlm = strcmp(c->family, "bert") == 0;
    for (int s = 1; s <= steps; s++) {
        double t0 = now_ms();
        random_batch(in, tg, c->batch * c->seq, c->seq, c->vocab, mlm, &seed);
        if (model_forward(m, &(model_batch){c->batch, c->seq, in, NULL, NULL, tg, 1, (uint32_t)s},
                          &loss) ||
            model_backward(m)) {
            free(ms);
            return -1;
        }
        double norm = model_grad_norm(m);
        if (norm > 1.0)
            model_scale_grads(m, 1.0 / (norm + 1e-6));
        if (model_adamw_step(m, &p, s)) {
            free(ms);
            return -1;
        }
        d->ops->synchronize(d);
        ms[s - 1] = now_ms() - t0;
    }
    qsort(ms, (size_t)steps, sizeof *ms, cmp_double);
    double median = steps % 2 ? ms[steps / 2] : (ms[steps / 2 - 1] + ms[steps / 2]) / 2;
    free(ms);
    return median;
}

/* the family's config from the bench's sizes; the parameters without flops (position and token
 * type embeddings) into *no_flop */
static model *create_model(const bench_cfg *c, device *d, double *no_flop)
{
    model_config_u u;
    memset(&u, 0, sizeof u);
    if (strcmp(c->family, "bert") == 0) {
        bert_config *b = &u.bert;
        bert_config_defaults(b);
        b->vocab_size = c->vocab;
        b->hidden_size = c->embd;
        b->num_hidden_layers = c->layers;
        b->num_attention_heads = c->heads;
        b->intermediate_size = c->inter ? c->inter : 4 * c->embd;
        b->max_position_embeddings = c->seq;
        if (c->dropout >= 0)
            b->hidden_dropout_prob = b->attention_probs_dropout_prob = c->dropout;
        *no_flop = (double)(c->seq + b->type_vocab_size) * c->embd;
    } else {
        gpt2_config *g = &u.gpt2;
        gpt2_config_defaults(g);
        g->vocab_size = c->vocab;
        g->n_positions = c->seq;
        g->n_embd = c->embd;
        g->n_layer = c->layers;
        g->n_head = c->heads;
        if (c->dropout >= 0)
            g->resid_pdrop = g->embd_pdrop = g->attn_pdrop = c->dropout;
        *no_flop = (double)c->seq * c->embd; /* wpe */
    }
    model *m = model_create(model_family_find(c->family), d, &u, c->batch, c->seq);
    if (m && model_init_weights(m, 1)) {
        model_free(m);
        return NULL;
    }
    return m;
}

int main(int argc, char **argv)
{
    blas_core_fix(argv); /* OpenBLAS's kernels for this CPU (devices/blas_core.c) */
    bench_cfg c;
    if (parse_args(argc, argv, &c))
        return 2;
    char err[512];
    device *d = device_open(c.device, err, sizeof err);
    if (!d) {
        fprintf(stderr, "bench_train: %s\n", err);
        return 2;
    }
    double no_flop_params = 0;
    model *m = create_model(&c, d, &no_flop_params);
    if (!m) {
        fprintf(stderr, "bench_train: cannot create the %s model on %s\n", c.family, c.device);
        return 1;
    }
    size_t n_tokens = (size_t)c.batch * (size_t)c.seq;
    int32_t *in = malloc(sizeof(int32_t) * n_tokens), *tg = malloc(sizeof(int32_t) * n_tokens);
    if (!in || !tg) {
        fprintf(stderr, "bench_train: out of memory for the token buffers\n");
        return 1;
    }
    time_steps(m, d, &c, 2, in, tg); /* warm-up: first-touch pages, thread pools */
    double ms = time_steps(m, d, &c, c.steps, in, tg);
    if (ms < 0) {
        fprintf(stderr, "bench_train: %s\n", device_error(d));
        return 1;
    }
    double ceiling = gemm_gflops(d, 2048, 5);
    double tokens = (double)c.batch * c.seq;
    double n_flop_params = (double)model_param_count(m) - no_flop_params;
    double flops = tokens * (6.0 * n_flop_params + 12.0 * c.layers * c.embd * c.seq);
    double gflops = flops / (ms / 1e3) / 1e9;
    printf("bench_train: device %s (%s), %s n_layer %d n_embd %d n_head %d seq %d batch %d vocab %d, "
           "%zu params\n", d->backend, d->name, c.family, c.layers, c.embd, c.heads, c.seq,
           c.batch, c.vocab, model_param_count(m));
    printf("  step time          %10.2f ms (median of %d steps)\n", ms, c.steps);
    printf("  tokens/s           %10.0f\n", tokens / (ms / 1e3));
    printf("  training GFLOP/s   %10.2f (6*params*tokens + attention)\n", gflops);
    printf("  gemm GFLOP/s       %10.2f (the device's gemm op, 2048^3, same run)\n", ceiling);
    printf("  ratio              %10.1f %% of the gemm ceiling\n", 100.0 * gflops / ceiling);
    if (c.profile) { /* after the figures above, which the shim's synchronizes would slow */
        op_profile_start(d);
        double t0 = now_ms(), pms = time_steps(m, d, &c, c.steps, in, tg);
        double per_step = (now_ms() - t0) / c.steps;
        op_profile_stop(d, c.steps, per_step);
        if (pms < 0) {
            fprintf(stderr, "bench_train: %s\n", device_error(d));
            return 1;
        }
    }
    double counted = (double)model_state_bytes(m) + (double)model_activation_bytes(m);
    printf("  peak memory        %10.1f MiB (harness accounting)\n", d->mem_peak / 1048576.0);
    printf("  counted need       %10.1f MiB (params+grads+AdamW m,v %.1f + activations %.1f)\n",
           counted / 1048576.0, model_state_bytes(m) / 1048576.0, model_activation_bytes(m) / 1048576.0);
    printf("  peak / counted     %10.3f\n", d->mem_peak / counted);
    free(in);
    free(tg);
    model_free(m);
    device_close(d);
    return 0;
}
