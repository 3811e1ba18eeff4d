/* bench/bench_llama.c: llama-family training throughput on one device (tokens/s, achieved
 * GFLOP/s of the active parameters and attention) for a Llama or Mixtral config given by flags. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_core.h"
#include "device.h"
#include "models/models.h"
#include "util/util.h"

typedef struct {
    const char *device;
    int layers, hidden, heads, kv_heads, inter, seq, batch, vocab, steps, experts, topk;
} bench_cfg;

static int usage(void)
{
    fprintf(stderr, "usage: bench_llama [--device SPEC] [--layers N] [--hidden N] [--heads N] "
                    "[--kv-heads N] [--inter N] [--seq N] [--batch N] [--vocab N] [--steps N] "
                    "[--experts N --topk K]\n");
    return 2;
}

static int *field(bench_cfg *c, const char *flag)
{
    static const struct {
        const char *flag;
        size_t off;
    } f[] = {{"--layers", offsetof(bench_cfg, layers)}, {"--hidden", offsetof(bench_cfg, hidden)},
             {"--heads", offsetof(bench_cfg, heads)},   {"--kv-heads", offsetof(bench_cfg, kv_heads)},
             {"--inter", offsetof(bench_cfg, inter)},   {"--seq", offsetof(bench_cfg, seq)},
             {"--batch", offsetof(bench_cfg, batch)},   {"--vocab", offsetof(bench_cfg, vocab)},
             {"--steps", offsetof(bench_cfg, steps)},   {"--experts", offsetof(bench_cfg, experts)},
             {"--topk", offsetof(bench_cfg, topk)}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (strcmp(flag, f[i].flag) == 0)
            return (int *)((char *)c + f[i].off);
    return NULL;
}

static int parse_args(int argc, char **argv, bench_cfg *c)
{
    *c = (bench_cfg){"cpu", 2, 64, 4, 2, 128, 64, 8, 256, 10, 0, 0};
    for (int i = 1; i < argc; i += 2) {
        long v = 0;
        if (i + 1 >= argc)
            return usage();
        if (strcmp(argv[i], "--device") == 0) {
            c->device = argv[i + 1];
            continue;
        }
        int *dst = field(c, argv[i]);
        if (!dst)
            return usage();
        if (parse_long(argv[i + 1], &v) || v < 0 || v > 1000000) {
            fprintf(stderr, "bench_llama: %s: '%s' is not a number in [0, 1e6]\n", argv[i],
                    argv[i + 1]);
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

/* the mean step time of `steps` steps (forward, backward, clip, AdamW), or -1 */
static double time_steps(model *m, device *d, const bench_cfg *c, int steps, int32_t *in,
                         int32_t *tg)
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

/* the matrix parameters one token runs through (the top-k experts only), head included */
static double active_params(const bench_cfg *c)
{
    double C = c->hidden, hd = (double)c->hidden / c->heads, Q = c->heads * hd;
    double KV = c->kv_heads * hd, mlp = 3.0 * C * c->inter;
    double layer = C * (Q + 2 * KV) + Q * C +
                   (c->experts ? c->experts * C + c->topk * mlp : mlp);
    return c->layers * layer + (double)c->vocab * C;
}

static void make_config(const bench_cfg *c, llama_config *cfg)
{
    json_t *j = json_pack("{s:s}", "model_type", c->experts ? "mixtral" : "llama");
    llama_config_defaults(cfg);
    llama_config_from_json(cfg, j, "bench_llama");
    json_decref(j);
    cfg->vocab_size = c->vocab;
    cfg->hidden_size = c->hidden;
    cfg->intermediate_size = c->inter;
    cfg->num_hidden_layers = c->layers;
    cfg->num_attention_heads = c->heads;
    cfg->num_key_value_heads = c->kv_heads;
    cfg->max_position_embeddings = c->seq;
    cfg->sliding_window = -1;
    if (c->experts) {
        cfg->num_local_experts = c->experts;
        cfg->num_experts_per_tok = c->topk;
        cfg->output_router_logits = 1;
    }
}

int main(int argc, char **argv)
{
    blas_core_fix(argv); /* OpenBLAS's kernels for this CPU (devices/blas_core.c) */
    bench_cfg c;
    if (parse_args(argc, argv, &c))
        return 2;
    model_config_u u;
    make_config(&c, &u.llama);
    if (llama_config_validate(&u.llama, NULL, "bench_llama"))
        return 2;
    char err[512];
    device *d = device_open(c.device, err, sizeof err);
    if (!d) {
        fprintf(stderr, "bench_llama: %s\n", err);
        return 2;
    }
    model *m = model_create(model_family_find("llama"), d, &u, c.batch, c.seq);
    if (!m || model_init_weights(m, 1))
        return 1;
    int32_t *in = malloc(sizeof(int32_t) * c.batch * c.seq);
    int32_t *tg = malloc(sizeof(int32_t) * c.batch * c.seq);
    if (!in || !tg)
        return 1;
    time_steps(m, d, &c, 2, in, tg); /* warm-up: first-touch pages, thread pools */
    double ms = time_steps(m, d, &c, c.steps, in, tg);
    if (ms < 0) {
        fprintf(stderr, "bench_llama: %s\n", device_error(d) ? device_error(d) : "step failed");
        return 1;
    }
    double tokens = (double)c.batch * c.seq, hd = (double)c.hidden / c.heads;
    double flops = tokens * (6.0 * active_params(&c) + 12.0 * c.layers * c.seq * c.heads * hd);
    printf("bench_llama: harness %s (%s), %s layers %d hidden %d heads %d/%d inter %d experts "
           "%d top-k %d seq %d batch %d vocab %d, %zu params\n", d->backend, d->name,
           c.experts ? "mixtral" : "llama", c.layers, c.hidden, c.heads, c.kv_heads, c.inter,
           c.experts, c.topk, c.seq, c.batch, c.vocab, model_param_count(m));
    printf("  harness  step %9.2f ms  tokens/s %9.0f  GFLOP/s %8.2f  (mean of %d steps)\n", ms,
           tokens / (ms / 1e3), flops / (ms / 1e3) / 1e9, c.steps);
    free(in);
    free(tg);
    model_free(m);
    device_close(d);
    return 0;
}
