/* fuzz/fuzz_tokenizer.c: libFuzzer target for the BPE tokenizers: arbitrary bytes as text through
 * UTF-8 validation, added-token splitting, the Oniguruma split and the merges of the test
 * tokenizer (tests/data/hf/bpe512), every id decoded back (the round trip must hold); then
 * through the Qwen2-style and Llama-style fixtures (tests/data/hf/llama/qwen2, llama2, and
 * meta_always_split for NFKC, Split, Digits, Metaspace): every id inside the vocabulary, the
 * ids without special tokens the ids with them less the template's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tokenizer *open_at(const char *rel)
{
    const char *src = getenv("HARNESS_SOURCE");
    char path[4096];
    tokenizer *t = NULL;
    snprintf(path, sizeof path, "%s/%s", src ? src : ".", rel);
    if (tokenizer_open("bpe", path, &t) != 0)
        abort();
    return t;
}

static tokenizer *open_once(void)
{
    static tokenizer *t;
    if (!t)
        t = open_at("tests/data/hf/bpe512/tokenizer.json");
    return t;
}

/* ids in range; with special tokens = the template's before + without + the template's after */
static void check_pipeline(tokenizer *t, const uint8_t *data, size_t size)
{
    id_list with = {0}, without = {0};
    if (tokenizer_encode_special(t, (const char *)data, size, 1, "fuzz", &with) != 0 ||
        tokenizer_encode_special(t, (const char *)data, size, 0, "fuzz", &without) != 0)
        abort();
    int before, after;
    tokenizer_template_size(t, &before, &after);
    if (with.n != without.n + (size_t)before + (size_t)after)
        abort();
    for (size_t i = 0; i < with.n; i++)
        if (with.ids[i] < 0 || with.ids[i] >= tokenizer_vocab_size(t) ||
            (i >= (size_t)before && i - (size_t)before < without.n &&
             with.ids[i] != without.ids[i - (size_t)before]))
            abort();
    id_list_free(&with);
    id_list_free(&without);
}

static void check_llama_style(const uint8_t *data, size_t size)
{
    static tokenizer *t[3];
    static const char *const rel[3] = {"tests/data/hf/llama/qwen2", "tests/data/hf/llama/llama2",
                                       "tests/data/hf/llama/meta_always_split"};
    for (int i = 0; i < 3; i++) {
        if (!t[i])
            t[i] = open_at(rel[i]);
        check_pipeline(t[i], data, size);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tokenizer *t = open_once();
    log_quiet = 1;
    if (utf8_invalid_at(data, size) < size)
        return 0; /* refused before tokenizing: nothing more to check */
    id_list ids = {0};
    if (tokenizer_encode(t, (const char *)data, size, "fuzz", &ids) != 0)
        abort();
    unsigned char buf[256];
    size_t n = 0;
    for (size_t i = 0; i < ids.n; i++) {
        int k = tokenizer_token_bytes(t, ids.ids[i], buf, sizeof buf);
        if (k <= 0 || n + (size_t)k > size || memcmp(data + n, buf, (size_t)k) != 0)
            abort(); /* the ids do not spell the text back */
        n += (size_t)k;
    }
    if (n != size)
        abort();
    id_list_free(&ids);
    check_llama_style(data, size);
    return 0;
}
