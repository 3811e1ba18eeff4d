/* harness/formats/data_gpt.c: Megatron GPTDataset samples (seq_len + 1 tokens, consecutive samples
 * sharing one token, documents in order) and the BlendableDataset rule over several datasets. */
#include "data_gpt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static int check_weights(const double *weights, int n, double *sum)
{
    *sum = 0;
    for (int d = 0; d < n; d++) {
        if (!(weights[d] > 0) || !isfinite(weights[d])) {
            log_error("data.blend: weight %d is %g (each must be a finite number > 0)", d,
                      weights[d]);
            return EXIT_USAGE;
        }
        *sum += weights[d];
    }
    if (!isfinite(*sum)) {
        log_error("data.blend: the weights' sum overflows");
        return EXIT_USAGE;
    }
    return 0;
}

/* every dataset opened and long enough for one sample */
static int open_sets(gpt_data *g, const char *const *prefixes)
{
    g->max_id = -1;
    for (int d = 0; d < g->n; d++) {
        int rc = mmidx_open(prefixes[d], &g->sets[d]);
        if (rc)
            return rc;
        if (g->sets[d].n_tokens < (uint64_t)g->seq_len + 1) {
            log_error("%s.idx: %llu tokens do not fill one sample of seq_len + 1 = %d tokens",
                      prefixes[d], (unsigned long long)g->sets[d].n_tokens, g->seq_len + 1);
            return EXIT_USAGE;
        }
        if (g->sets[d].max_id > g->max_id)
            g->max_id = g->sets[d].max_id;
    }
    return 0;
}

int gpt_data_open(gpt_data *g, const char *const *prefixes, const double *weights, int n,
                  int seq_len)
{
    memset(g, 0, sizeof *g);
    double sum;
    if (n < 1 || seq_len < 1) {
        log_error("data: no dataset to read");
        return EXIT_USAGE;
    }
    int rc = check_weights(weights, n, &sum);
    if (rc)
        return rc;
    g->seq_len = seq_len;
    g->sets = calloc((size_t)n, sizeof *g->sets);
    g->weights = malloc((size_t)n * sizeof *g->weights);
    g->chosen = calloc((size_t)n, sizeof *g->chosen);
    if (!g->sets || !g->weights || !g->chosen) {
        log_error("out of memory for %d datasets", n);
        gpt_data_close(g);
        return EXIT_FAIL;
    }
    g->n = n;
    for (int d = 0; d < n; d++)
        g->weights[d] = weights[d] / sum;
    if ((rc = open_sets(g, prefixes)))
        gpt_data_close(g);
    return rc;
}

void gpt_data_close(gpt_data *g)
{
    for (int d = 0; g->sets && d < g->n; d++)
        mmidx_close(&g->sets[d]);
    free(g->sets);
    free(g->weights);
    free(g->chosen);
    memset(g, 0, sizeof *g);
}

/* one step of the rule at global sample i: the dataset with the largest error */
static int blend_step(gpt_data *g, uint64_t i)
{
    double x = i > 1 ? (double)i : 1.0;
    int best = 0;
    double best_err = g->weights[0] * x - (double)g->chosen[0];
    for (int d = 1; d < g->n; d++) {
        double err = g->weights[d] * x - (double)g->chosen[d];
        if (err > best_err) {
            best_err = err;
            best = d;
        }
    }
    return best;
}

void gpt_blend_pick(gpt_data *g, uint64_t i, int *dataset, uint64_t *sample)
{
    if (i < g->next) { /* an earlier sample: replay from the start */
        memset(g->chosen, 0, (size_t)g->n * sizeof *g->chosen);
        g->next = 0;
    }
    for (; g->next < i; g->next++)
        g->chosen[blend_step(g, g->next)]++;
    int d = blend_step(g, i);
    *dataset = d;
    *sample = (uint64_t)g->chosen[d];
    g->chosen[d]++;
    g->next = i + 1;
}

/* (a + b) mod n for a, b < n, without overflow */
static uint64_t addmod(uint64_t a, uint64_t b, uint64_t n)
{
    return a >= n - b ? a - (n - b) : a + b;
}

/* (a * b) mod n without overflow, by doubling */
static uint64_t mulmod(uint64_t a, uint64_t b, uint64_t n)
{
    uint64_t r = 0;
    for (a %= n; b; b >>= 1) {
        if (b & 1)
            r = addmod(r, a, n);
        a = addmod(a, a, n);
    }
    return r;
}

void gpt_sample(const gpt_data *g, int d, uint64_t j, int32_t *out)
{
    const mmidx *m = &g->sets[d];
    uint64_t start = mulmod(j, (uint64_t)g->seq_len, m->n_tokens);
    mmidx_tokens(m, start, (size_t)g->seq_len + 1, out);
}

void gpt_data_batch(gpt_data *g, int step, int batch, int rank, int world, int32_t *inputs,
                    int32_t *targets, int32_t *tmp)
{
    size_t T = (size_t)g->seq_len;
    for (int i = 0; i < batch; i++) {
        uint64_t k = ((uint64_t)step * (uint64_t)world + (uint64_t)rank) * (uint64_t)batch + i;
        int d;
        uint64_t j;
        gpt_blend_pick(g, k, &d, &j);
        gpt_sample(g, d, j, tmp);
        memcpy(inputs + (size_t)i * T, tmp, T * sizeof *tmp);
        memcpy(targets + (size_t)i * T, tmp + 1, T * sizeof *tmp);
    }
}
