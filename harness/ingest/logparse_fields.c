/* harness/ingest/logparse_fields.c: the step fields by name, each with the range of values it may
 * hold (a value outside is left out of the step and noted, for the recorder to warn about), and
 * ANSI escape sequences taken out of a line before it is parsed. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "logparse.h"

/* what a field may hold: any number; a norm (>= 0, NaN or +Inf); a finite number >= 0 */
typedef enum { RANGE_ANY, RANGE_NORM, RANGE_FINITE, RANGE_FLAG } range_kind;

typedef struct {
    const char *name;
    unsigned bit;
    size_t off;
    int is_int; /* an int64_t field (whole part kept), else a double */
    range_kind kind;
    double cap;     /* RANGE_FINITE: the value is below it */
    const char *range;
} field;

/* in bit order (LP_LOSS is bit 0 ... LP_SKIPPED bit 10) */
static const field fields[LP_N_FIELDS] = {
    {"loss", LP_LOSS, offsetof(lp_step, loss), 0, RANGE_ANY, 0, "any number"},
    {"grad_norm", LP_GRAD_NORM, offsetof(lp_step, grad_norm), 0, RANGE_NORM, 0,
     "a number >= 0, NaN or Infinity"},
    {"lr", LP_LR, offsetof(lp_step, lr), 0, RANGE_FINITE, INFINITY, "a finite number >= 0"},
    {"tokens", LP_TOKENS, offsetof(lp_step, tokens), 1, RANGE_FINITE, LP_CAP_TOKENS,
     "a finite number >= 0 and below 1e13"},
    {"step_ms", LP_STEP_MS, offsetof(lp_step, step_ms), 0, RANGE_FINITE, LP_CAP_STEP_MS,
     "a finite number >= 0 and below 1e9 (ms)"},
    {"tokens_per_s", LP_TOKENS_PER_S, offsetof(lp_step, tokens_per_s), 0, RANGE_FINITE,
     LP_CAP_TOKENS, "a finite number >= 0 and below 1e13"},
    {"mem_peak_bytes", LP_MEM_PEAK, offsetof(lp_step, mem_peak_bytes), 1, RANGE_FINITE,
     LP_CAP_MEM, "a finite number >= 0 and below 2^60 (1 EiB)"},
    {"mem_total_bytes", LP_MEM_TOTAL, offsetof(lp_step, mem_total_bytes), 1, RANGE_FINITE,
     LP_CAP_MEM, "a finite number >= 0 and below 2^60 (1 EiB)"},
    {"mem_used_bytes", LP_MEM_USED, offsetof(lp_step, mem_used_bytes), 1, RANGE_FINITE,
     LP_CAP_MEM, "a finite number >= 0 and below 2^60 (1 EiB)"},
    {"loss_scale", LP_LOSS_SCALE, offsetof(lp_step, loss_scale), 0, RANGE_FINITE, INFINITY,
     "a finite number >= 0"},
    {"skipped", LP_SKIPPED, offsetof(lp_step, skipped), 1, RANGE_FLAG, 0,
     "0 or 1 (false or true)"},
};

static int in_range(const field *f, double v)
{
    switch (f->kind) {
    case RANGE_ANY:
        return 1;
    case RANGE_NORM:
        return isnan(v) || v >= 0;
    case RANGE_FINITE:
        return isfinite(v) && v >= 0 && v < f->cap;
    case RANGE_FLAG: /* 0 or 1 exactly: 0.5 is no flag (it was cut to 0, "not skipped") */
        return v == 0 || v == 1;
    }
    return 0;
}

static int bit_index(unsigned bit)
{
    for (int i = 0; i < LP_N_FIELDS; i++)
        if (fields[i].bit == bit)
            return i;
    return -1;
}

const char *lp_field_name(unsigned bit)
{
    int i = bit_index(bit);
    return i < 0 ? "?" : fields[i].name;
}

const char *lp_field_range(unsigned bit)
{
    int i = bit_index(bit);
    return i < 0 ? "?" : fields[i].range;
}

static int set_field(lp_step *s, const field *f, int index, double v)
{
    if (!in_range(f, v)) {
        s->rejected |= f->bit;
        s->rejected_value[index] = v;
        return -1;
    }
    if (f->is_int)
        *(int64_t *)((char *)s + f->off) = (int64_t)v;
    else
        *(double *)((char *)s + f->off) = v;
    s->has |= f->bit;
    s->rejected &= ~f->bit; /* a later key of the same line with a good value */
    return 1;
}

int lp_step_set(lp_step *s, const char *name, double v)
{
    for (int i = 0; i < LP_N_FIELDS; i++)
        if (strcmp(name, fields[i].name) == 0)
            return set_field(s, &fields[i], i, v);
    /* a step or rank is a whole number (1.5 is no step: the line is skipped, not rounded); a
     * rank that is not one is LP_RANK_BAD, so its line is skipped rather than taken as rank 0's */
    if (strcmp(name, "step") == 0) {
        if (isfinite(v) && v >= 0 && v < 2e9 && v == floor(v)) {
            s->step = (int)v;
            return 1;
        }
        return -1;
    }
    if (strcmp(name, "rank") == 0) {
        s->rank = isfinite(v) && v >= 0 && v < 1e6 && v == floor(v) ? (int)v : LP_RANK_BAD;
        return s->rank == LP_RANK_BAD ? -1 : 1;
    }
    return 0;
}

/* ---- ANSI escape sequences ---------------------------------------------------------------- */

/* the length of the escape sequence at s[0] == ESC (all of what is left when it is cut) */
static size_t escape_len(const char *s, size_t len)
{
    if (len < 2)
        return len;
    unsigned char c = (unsigned char)s[1];
    size_t i = 2;
    if (c == '[') { /* CSI: parameters and intermediates 0x20-0x3F, then a final 0x40-0x7E */
        while (i < len && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] <= 0x3F)
            i++;
        return i < len && (unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7E ? i + 1 : i;
    }
    if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') { /* OSC, DCS, SOS, PM, APC */
        for (; i < len; i++) {
            if (s[i] == '\a')
                return i + 1;
            if (s[i] == '\033' && i + 1 < len && s[i + 1] == '\\')
                return i + 2;
        }
        return len;
    }
    while (i - 1 < len && (unsigned char)s[i - 1] >= 0x20 && (unsigned char)s[i - 1] <= 0x2F)
        i++; /* ESC, intermediates (ESC ( B), then one final byte */
    return i <= len ? i : len;
}

size_t lp_strip_ansi(const char *in, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o < cap;) {
        if (in[i] == '\033') {
            i += escape_len(in + i, len - i);
            continue;
        }
        out[o++] = in[i++];
    }
    return o;
}
