/* harness/judge/baseline_routing.c: the expert-count section of a baseline file: one row per step
 * and MoE layer ("STEP LAYER COUNT..."), each parsed strictly, written back exactly. */
#define _POSIX_C_SOURCE 200809L
#include "baseline_routing.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define SECTION "expert_tokens"

static int rerr(const routing_parser *rp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int rerr(const routing_parser *rp, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_error("%s:%d: %s: %s", rp->file, rp->line, SECTION, msg);
    return EXIT_USAGE;
}

/* strict whole number in [lo, hi]; 0, or -1 */
static int whole(const char *t, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(t, &end, 10);
    if (!*t || *end || errno || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

int routing_parse_header(routing_parser *rp, const routing_table *t, char *text)
{
    char *save = NULL, *tok = strtok_r(text, " \t", &save);
    const char *fixed[] = {SECTION, "step", "layer"};
    for (int i = 0; i < 3; i++, tok = strtok_r(NULL, " \t", &save))
        if (!tok || strcmp(tok, fixed[i]) != 0)
            return rerr(rp, "the header must be '%s step layer e0 e1 ...'", SECTION);
    char name[16];
    int e = 0;
    for (; tok; tok = strtok_r(NULL, " \t", &save), e++) {
        snprintf(name, sizeof name, "e%d", e);
        if (e >= t->experts || strcmp(tok, name) != 0)
            return rerr(rp, "column '%.40s': expected %s%s (moe_experts is %d)", tok,
                        e < t->experts ? "" : "no more than ", name, t->experts);
    }
    if (e != t->experts)
        return rerr(rp, "%d expert columns, moe_experts is %d", e, t->experts);
    return 0;
}

/* 1 when step is one of steps[0..n) (increasing) */
static int has_step(const step_record *steps, int n, long long step)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (steps[mid].step == step)
            return 1;
        if (steps[mid].step < step)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return 0;
}

/* room for one more step of counts, within the declared steps and the memory limit */
static int grow(routing_parser *rp, routing_table *t)
{
    size_t cells = (size_t)t->layers * (size_t)t->experts;
    if (t->n >= rp->declared)
        return rerr(rp, "more steps than routed_steps (%d) says", rp->declared);
    if ((t->n + 1) * cells > STORE_MOE_MAX_VALUES)
        return rerr(rp, "more than %d counts in all", STORE_MOE_MAX_VALUES);
    if (t->n == rp->cap_steps) {
        int cap = rp->cap_steps ? 2 * rp->cap_steps : 16;
        int *steps = realloc(t->steps, sizeof *steps * (size_t)cap);
        if (!steps)
            return rerr(rp, "out of memory");
        t->steps = steps;
        rp->cap_steps = cap;
    }
    if ((size_t)(t->n + 1) * cells > rp->cap_counts) {
        size_t cap = 2 * (size_t)(t->n + 1) * cells;
        int64_t *counts = realloc(t->counts, sizeof *counts * cap);
        if (!counts)
            return rerr(rp, "out of memory for %zu counts", cap);
        t->counts = counts;
        rp->cap_counts = cap;
    }
    return 0;
}

/* the row's step and layer: a new step (layer 0, after the previous, in the step table) or the
 * next layer of the current one */
static int row_position(routing_parser *rp, routing_table *t, const step_record *steps,
                        int n_steps, long long step, long long layer)
{
    if (rp->layer_next > 0) {
        if (step != t->steps[t->n - 1] || layer != rp->layer_next)
            return rerr(rp, "step %lld layer %lld: expected step %d layer %d (every step has "
                        "layers 0 to %d in order)", step, layer, t->steps[t->n - 1],
                        rp->layer_next, t->layers - 1);
        return 0;
    }
    if (layer != 0)
        return rerr(rp, "step %lld starts with layer %lld, not 0", step, layer);
    if (t->n > 0 && step <= t->steps[t->n - 1])
        return rerr(rp, "step %lld after step %d: steps must increase", step, t->steps[t->n - 1]);
    if (!has_step(steps, n_steps, step))
        return rerr(rp, "step %lld is not in the step table", step);
    int rc = grow(rp, t);
    if (!rc)
        t->steps[t->n++] = (int)step;
    return rc;
}

int routing_parse_row(routing_parser *rp, routing_table *t, const step_record *steps,
                      int n_steps, char *text)
{
    char *save = NULL, *tok = strtok_r(text, " \t", &save);
    long long step, layer, count;
    if (!tok || whole(tok, 1, INT32_MAX, &step))
        return rerr(rp, "step '%.40s' is not a whole number >= 1", tok ? tok : "");
    tok = strtok_r(NULL, " \t", &save);
    if (!tok || whole(tok, 0, t->layers - 1, &layer))
        return rerr(rp, "step %lld: layer '%.40s' is not a whole number in [0, %d]", step,
                    tok ? tok : "", t->layers - 1);
    int rc = row_position(rp, t, steps, n_steps, step, layer);
    if (rc)
        return rc;
    int64_t *row = t->counts + ((size_t)(t->n - 1) * t->layers + (size_t)layer) * t->experts;
    int e = 0;
    for (tok = strtok_r(NULL, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save), e++) {
        if (e >= t->experts)
            return rerr(rp, "step %lld layer %lld: more than the %d counts of moe_experts", step,
                        layer, t->experts);
        if (whole(tok, 0, STORE_MOE_MAX_TOKENS, &count))
            return rerr(rp, "step %lld layer %lld e%d: '%.40s' is not a whole number >= 0 "
                        "(and at most %lld)", step, layer, e, tok,
                        (long long)STORE_MOE_MAX_TOKENS);
        row[e] = count;
    }
    if (e < t->experts)
        return rerr(rp, "step %lld layer %lld: %d counts, moe_experts is %d", step, layer, e,
                    t->experts);
    rp->layer_next = layer + 1 < t->layers ? (int)layer + 1 : 0;
    return 0;
}

int routing_parse_end(routing_parser *rp, const routing_table *t)
{
    if (rp->layer_next > 0)
        return rerr(rp, "step %d has %d of its %d layers (truncated file?)", t->steps[t->n - 1],
                    rp->layer_next, t->layers);
    if (t->n != rp->declared)
        return rerr(rp, "routed_steps says %d steps, the table has %d (truncated file?)",
                    rp->declared, t->n);
    return 0;
}

void routing_write(FILE *f, const routing_table *t)
{
    if (t->n == 0)
        return;
    fprintf(f, "\n%s step layer", SECTION);
    for (int e = 0; e < t->experts; e++)
        fprintf(f, " e%d", e);
    fputc('\n', f);
    for (int i = 0; i < t->n; i++) {
        const int64_t *c = routing_counts(t, i);
        for (int l = 0; l < t->layers; l++) {
            fprintf(f, "%d %d", t->steps[i], l);
            for (int e = 0; e < t->experts; e++)
                fprintf(f, " %" PRId64, c[(size_t)l * t->experts + e]);
            fputc('\n', f);
        }
    }
}

int routing_copy(routing_table *dst, const routing_table *src)
{
    memset(dst, 0, sizeof *dst);
    if (src->n == 0)
        return 0;
    size_t n = (size_t)src->n * (size_t)src->layers * (size_t)src->experts;
    dst->steps = malloc(sizeof *dst->steps * (size_t)src->n);
    dst->counts = malloc(sizeof *dst->counts * n);
    if (!dst->steps || !dst->counts) {
        routing_table_free(dst);
        return -1;
    }
    memcpy(dst->steps, src->steps, sizeof *dst->steps * (size_t)src->n);
    memcpy(dst->counts, src->counts, sizeof *dst->counts * n);
    dst->layers = src->layers;
    dst->experts = src->experts;
    dst->n = src->n;
    return 0;
}
