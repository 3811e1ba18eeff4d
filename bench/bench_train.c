/* bench/bench_train.c: GPT-2 training throughput on one device (tokens/s, achieved GFLOP/s)
 * beside OpenBLAS sgemm's GFLOP/s measured in the same run, and peak memory beside its parts. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "models/models.h"
#include "util/util.h"

typedef struct {
    const char *device;
    int layers, embd, heads, seq, batch, vocab, steps;
} bench_cfg;

/* the machine's fp32 GEMM ceiling: square sgemm of size n, best of reps */
static double sgemm_gflops(int n, int reps)
{
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n);
    float *c = malloc(sizeof(float) * n * n);
    for (int i = 0; i < n * n; i++) {
        a[i] = (float)((i % 17) - 8) / 8.0f;
        b[i] = (float)((i % 13) - 6) / 6.0f;
    }
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double s = (now_ms() - t0) / 1e3, g = 2.0 * n * n * (double)n / s / 1e9;
        if (g > best)
            best = g;
    }
    free(a);
    free(b);
    free(c);
    return best;
}

static int parse_args(int argc, char **argv, bench_cfg *c)
{
    *c = (bench_cfg){"cpu", 4, 256, 4, 128, 8, 256, 10};
    for (int i = 1; i + 1 < argc; i += 2) {
        long v = 0;
        if (strcmp(argv[i], "--device") == 0) {
            c->device = argv[i + 1];
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
                   : strcmp(argv[i], "--steps") == 0 ? &c->steps : NULL;
        if (!dst) {
            fprintf(stderr, "usage: bench_train [--device SPEC] [--layers N] [--embd N] [--heads N]"
                            " [--seq N] [--batch N] [--vocab N] [--steps N]\n");
            return 2;
        }
        *dst = (int)v;
    }
    return 0;
}

static void random_batch(int32_t *in, int32_t *tg, int n, int T, int V, unsigned *seed)
{
    for (int i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        in[i] = (int32_t)((*seed >> 8) % (unsigned)V);
    }
    for (int i = 0; i < n; i++)
        tg[i] = (i % T == T - 1) ? -100 : in[i + 1];
}

static double time_steps(model *m, device *d, const bench_cfg *c, int steps, int32_t *in, int32_t *tg)
{
    adamw_params p = {1e-4, 0.9, 0.999, 1e-8, 0.1, 1};
    unsigned seed = 1;
    double t0 = now_ms(), loss;
    for (int s = 1; s <= steps; s++) {
        random_batch(in, tg, c->batch * c->seq, c->seq, c->vocab, &seed);
        if (model_forward(m, &(model_batch){c->batch, c->seq, in, NULL, NULL, tg, 0, 0}, &loss) ||
            model_backward(m))
            return -1;
        double norm = model_grad_norm(m);
        if (norm > 1.0)
            model_scale_grads(m, 1.0 / (norm + 1e-6));
        if (model_adamw_step(m, &p, s))
            return -1;
        d->ops->synchronize(d);
    }
    return (now_ms() - t0) / steps;
}

int main(int argc, char **argv)
{
    bench_cfg c;
    if (parse_args(argc, argv, &c))
        return 2;
    char err[512];
    device *d = device_open(c.device, err, sizeof err);
    if (!d) {
        fprintf(stderr, "bench_train: %s\n", err);
        return 2;
    }
    model_config_u u;
    gpt2_config cfg;
    gpt2_config_defaults(&cfg);
    cfg.vocab_size = c.vocab;
    cfg.n_positions = c.seq;
    cfg.n_embd = c.embd;
    cfg.n_layer = c.layers;
    cfg.n_head = c.heads;
    u.gpt2 = cfg;
    model *m = model_create(model_family_find("gpt2"), d, &u, c.batch, c.seq);
    if (!m || model_init_weights(m, 1))
        return 1;
    int32_t *in = malloc(sizeof(int32_t) * c.batch * c.seq), *tg = malloc(sizeof(int32_t) * c.batch * c.seq);
    time_steps(m, d, &c, 2, in, tg); /* warm-up: first-touch pages, thread pools */
    double ms = time_steps(m, d, &c, c.steps, in, tg);
    if (ms < 0) {
        fprintf(stderr, "bench_train: %s\n", device_error(d));
        return 1;
    }
    double ceiling = sgemm_gflops(1024, 5);
    double tokens = (double)c.batch * c.seq;
    double n_flop_params = (double)model_param_count(m) - (double)c.seq * c.embd; /* wpe: no flops */
    double flops = tokens * (6.0 * n_flop_params + 12.0 * c.layers * c.embd * c.seq);
    double gflops = flops / (ms / 1e3) / 1e9;
    printf("bench_train: device %s (%s), GPT-2 n_layer %d n_embd %d n_head %d seq %d batch %d vocab %d, "
           "%zu params\n", d->backend, d->name, c.layers, c.embd, c.heads, c.seq, c.batch, c.vocab,
           model_param_count(m));
    printf("  step time          %10.2f ms (mean of %d steps)\n", ms, c.steps);
    printf("  tokens/s           %10.0f\n", tokens / (ms / 1e3));
    printf("  training GFLOP/s   %10.2f (6*params*tokens + attention)\n", gflops);
    printf("  sgemm GFLOP/s      %10.2f (OpenBLAS, 1024^3, same run)\n", ceiling);
    printf("  ratio              %10.1f %% of the sgemm ceiling\n", 100.0 * gflops / ceiling);
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
