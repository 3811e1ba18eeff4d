/* harness/ingest/logparse_deepspeed.c: DeepSpeed's step lines: the engine's `step=10, skipped=0,
 * lr=[0.0001], mom=[...]`, its throughput timer's `epoch=0/micro_step=10/global_step=10, ...
 * MaxMemAllocated=1.2GB`, and Megatron(-DeepSpeed)'s ` iteration 10/ 100 | ... | lm loss: ... |`
 * (at the line's start or after a prefix; "elapsed time per iteration (ms)" is no iteration). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "logparse.h"

/* Megatron's "iteration N/ M": the word at the line's start or after a space, ']' or ':',
 * then spaces, a number, spaces and '/'. Sets *it; 1 when found. */
static int megatron_iteration(const char *line, size_t len, double *it)
{
    static const char word[] = "iteration";
    const char *end = line + len;
    for (const char *p = line; (p = lp_find_text(p, (size_t)(end - p), word)) != NULL; p++) {
        const char *q = p + sizeof word - 1;
        if (p > line && p[-1] != ' ' && p[-1] != ']' && p[-1] != ':')
            continue;
        if (q >= end || *q != ' ')
            continue;
        while (q < end && *q == ' ')
            q++;
        size_t n = lp_number(q, (size_t)(end - q), it);
        if (!n)
            continue;
        for (q += n; q < end && *q == ' '; q++)
            ;
        if (q < end && *q == '/')
            return 1;
    }
    return 0;
}

static int detect(const char *line, size_t len)
{
    double it;
    return (lp_find_text(line, len, "step=") && lp_find_text(line, len, ", skipped=")) ||
           lp_find_text(line, len, "/global_step=") ||
           (lp_find_text(line, len, "lm loss:") && megatron_iteration(line, len, &it));
}

/* the number after the first `label` in line, followed by unit (or "") and then a separator or
 * the line's end; 1 when found, *end (NULL: not asked) just past it */
static int number_unit_after(const char *line, size_t len, const char *label, const char *unit,
                             double *out, const char **end)
{
    const char *p = lp_find_text(line, len, label);
    if (!p)
        return 0;
    p += strlen(label);
    while (p < line + len && (*p == ' ' || *p == '['))
        p++;
    size_t n = lp_number(p, (size_t)(line + len - p), out), u = strlen(unit);
    if (n && (size_t)(line + len - (p + n)) >= u && memcmp(p + n, unit, u) == 0)
        n += u;
    if (end)
        *end = p + n;
    /* the number runs to a separator or the line's end: "1.13[W reducer..." is another
     * process's text inside the number, not 1.13 */
    return n > 0 && (p + n == line + len || strchr(" \t|,;])", p[n]));
}

static int number_after(const char *line, size_t len, const char *label, double *out)
{
    return number_unit_after(line, len, label, "", out, NULL);
}

/* a step is a whole number (1.5 is no step: the line is skipped, never truncated) */
static int set_step(lp_event *ev, double step)
{
    if (!(step >= 1 && step < 2e9) || step != floor(step))
        return 0;
    ev->step.step = (int)step;
    ev->has_step = 1;
    return 1;
}

/* a Megatron field's number: it runs, spaces aside, to the field's " |" or the line's end
 * ("lm loss: 2.4000 > building ..." is a line cut and another process's text, not 2.4) */
static int megatron_after(const char *line, size_t len, const char *label, double *out)
{
    const char *p;
    if (!number_unit_after(line, len, label, "", out, &p))
        return 0;
    while (p < line + len && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    return p == line + len || *p == '|';
}

/* Megatron-DeepSpeed: iteration N/ M | ... learning rate: | lm loss: | grad norm: */
static int parse_megatron(const char *line, size_t len, lp_event *ev)
{
    double it, v;
    if (!megatron_iteration(line, len, &it) || !megatron_after(line, len, "lm loss:", &v))
        return 0;
    lp_step_set(&ev->step, "loss", v);
    if (megatron_after(line, len, "learning rate:", &v))
        lp_step_set(&ev->step, "lr", v);
    if (megatron_after(line, len, "grad norm:", &v))
        lp_step_set(&ev->step, "grad_norm", v);
    if (megatron_after(line, len, "elapsed time per iteration (ms):", &v))
        lp_step_set(&ev->step, "step_ms", v);
    return set_step(ev, it);
}

static int parse(const char *line, size_t len, lp_state *st, lp_event *ev)
{
    (void)st;
    memset(ev, 0, sizeof *ev);
    ev->step.rank = -1;
    double step, v;
    if (lp_find_text(line, len, "lm loss:"))
        return parse_megatron(line, len, ev);
    if (number_after(line, len, "/global_step=", &step)) {
        if (number_unit_after(line, len, "MaxMemAllocated=", "GB", &v, NULL)) /* out of range: said, left out */
            lp_step_set(&ev->step, "mem_peak_bytes", v * 1073741824.0);
        return set_step(ev, step);
    }
    if (lp_find_text(line, len, ", skipped=") && number_after(line, len, "step=", &step)) {
        if (number_after(line, len, "lr=", &v))
            lp_step_set(&ev->step, "lr", v);
        return set_step(ev, step);
    }
    return 0;
}

const log_parser lp_deepspeed = {"deepspeed", "DeepSpeed step=/global_step= lines and "
                                              "Megatron-DeepSpeed iteration lines", detect, parse};
