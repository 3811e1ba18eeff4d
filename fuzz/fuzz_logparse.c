/* fuzz/fuzz_logparse.c: libFuzzer target for the training-log parsers: arbitrary bytes split into
 * lines (as the exec recorder does) through the detecting reader and through each forced format. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/logparse.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* every field a step can carry must be sane whatever the input was */
static void check(const lp_event *ev)
{
    if (ev->n_meta < 0 || ev->n_meta > LP_MAX_META)
        abort();
    for (int i = 0; i < ev->n_meta; i++)
        if (strnlen(ev->meta[i].key, LP_KEY) == LP_KEY || strnlen(ev->meta[i].value, LP_VALUE) == LP_VALUE)
            abort();
    if (ev->has_step && (ev->step.step < 1 || ev->step.tokens < 0 || ev->step.mem_peak_bytes < 0))
        abort();
}

/* a HARNESS_STEP's expert_tokens lies inside its line (or the reader's copy of it without ANSI
 * escape sequences) and reads as counts within the limits */
static void check_routing(const lp_event *ev, const char *line, size_t len, const lp_reader *r)
{
    const lp_step *s = &ev->step;
    if (!s->expert_tokens)
        return;
    if (s->expert_tokens >= r->clean && s->expert_tokens < r->clean + sizeof r->clean) {
        line = r->clean;
        len = sizeof r->clean;
    }
    if (s->expert_tokens < line || s->expert_tokens_len > len ||
        s->expert_tokens + s->expert_tokens_len > line + len)
        abort();
    int64_t *c = NULL;
    size_t cap = 0;
    int layers = 0, experts = 0;
    char why[160];
    if (lp_expert_tokens(s->expert_tokens, s->expert_tokens_len, &c, &cap, &layers, &experts, why,
                         sizeof why) == 0) {
        if (layers < 1 || experts < 1 || (size_t)layers * (size_t)experts > cap)
            abort();
        for (size_t i = 0; i < (size_t)layers * (size_t)experts; i++)
            if (c[i] < 0)
                abort();
    }
    free(c);
}

static void run_reader(const char *format, const char *keys, const char *text, size_t size)
{
    lp_reader r;
    char err[256];
    if (lp_reader_init(&r, format, keys, err, sizeof err) != 0)
        abort();
    size_t start = 0;
    for (size_t i = 0; i <= size; i++)
        if (i == size || text[i] == '\n' || text[i] == '\r') {
            lp_event ev;
            memset(&ev, 0, sizeof ev);
            if (lp_read_line(&r, text + start, i - start, &ev)) {
                check(&ev);
                check_routing(&ev, text + start, i - start, &r);
            }
            start = i + 1;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    log_quiet = 1;
    char *text = malloc(size ? size : 1); /* an exact-size copy: ASan sees any over-read */
    if (!text)
        return 0;
    memcpy(text, data, size);
    run_reader(NULL, NULL, text, size);
    for (const log_parser *const *p = lp_parsers(); *p; p++)
        run_reader((*p)->name, NULL, text, size);
    run_reader("jsonl", "step=iter,loss=lm_loss,mem_peak_bytes=mem", text, size);
    free(text);
    return 0;
}
