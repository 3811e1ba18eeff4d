/* harness/formats/data.c: tokenizing a text file (byte or BPE tokenizer, harness/formats/tokenizer.h), group_texts
 * blocks and the fixed, rank-strided sample order. */
#include "data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"
#include "util/util.h"

int dataset_load(const char *path, const char *tokenizer, int seq_len, dataset *ds)
{
    memset(ds, 0, sizeof *ds);
    if (strcmp(tokenizer, "byte") != 0) {
        log_error("%s: unknown tokenizer '%s' (known here: byte; bpe needs a path)", path,
                  tokenizer);
        return EXIT_USAGE;
    }
    struct tokenizer *t;
    int rc = tokenizer_open("byte", NULL, &t);
    if (!rc)
        rc = dataset_load_tok(path, t, seq_len, ds);
    tokenizer_free(t);
    return rc;
}

int dataset_load_tok(const char *path, struct tokenizer *t, int seq_len, dataset *ds)
{
    memset(ds, 0, sizeof *ds);
    if (seq_len < 2) {
        log_error("%s: seq_len %d is too short (at least 2)", path, seq_len);
        return EXIT_USAGE;
    }
    size_t len = 0;
    char why[INPUT_WHY_LEN];
    char *text = input_read(path, INPUT_DATA, &len, why, sizeof why);
    if (!text) {
        log_error("%s: cannot read the data file: %s", path, why);
        return EXIT_USAGE;
    }
    id_list ids = {0};
    int rc = tokenizer_encode(t, text, len, path, &ids);
    free(text);
    if (rc != 0) {
        id_list_free(&ids);
        return rc;
    }
    ds->tokens = ids.ids;
    ds->n_tokens = ids.n;
    ds->vocab_size = tokenizer_vocab_size(t);
    ds->seq_len = seq_len;
    ds->n_blocks = ds->n_tokens / (size_t)seq_len;
    if (ds->n_blocks == 0) {
        log_error("%s: %zu tokens do not fill one block of seq_len %d", path, ds->n_tokens,
                  seq_len);
        dataset_free(ds);
        return EXIT_USAGE;
    }
    return 0;
}

void dataset_free(dataset *ds)
{
    free(ds->tokens);
    memset(ds, 0, sizeof *ds);
}

size_t sampler_index(size_t k, int rank, int world, size_t n)
{
    size_t w = (size_t)world, per_epoch = (n + w - 1) / w;
    return ((size_t)rank + (k % per_epoch) * w) % n;
}

void dataset_batch(const dataset *ds, int step, int batch, int rank, int world, int32_t *inputs,
                   int32_t *targets)
{
    int T = ds->seq_len;
    for (int i = 0; i < batch; i++) {
        size_t k = (size_t)step * batch + i;
        size_t block = sampler_index(k, rank, world, ds->n_blocks);
        const int32_t *src = ds->tokens + block * T;
        memcpy(inputs + (size_t)i * T, src, T * sizeof *src);
        for (int t = 0; t < T; t++)
            targets[(size_t)i * T + t] = t + 1 < T ? src[t + 1] : -100;
    }
}
