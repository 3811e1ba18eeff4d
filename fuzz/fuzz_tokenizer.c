/* fuzz/fuzz_tokenizer.c: libFuzzer target for the BPE tokenizer: arbitrary bytes as text through
 * UTF-8 validation, added-token splitting, the Oniguruma split and the merges of the test
 * tokenizer (tests/data/hf/bpe512), and every id decoded back; the round trip must hold. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tokenizer *open_once(void)
{
    static tokenizer *t;
    if (!t) {
        const char *src = getenv("HARNESS_SOURCE");
        char path[4096];
        snprintf(path, sizeof path, "%s/tests/data/hf/bpe512/tokenizer.json", src ? src : ".");
        if (tokenizer_open("bpe", path, &t) != 0)
            abort();
    }
    return t;
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
    return 0;
}
