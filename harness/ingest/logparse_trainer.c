/* harness/ingest/logparse_trainer.c: Hugging Face transformers Trainer's log dicts, printed as Python
 * reprs: {'loss': 2.31, 'grad_norm': 1.25, 'learning_rate': 5e-05, 'epoch': 0.01} per logging
 * step, and the closing {'train_runtime': ..., 'train_loss': ...} summary (kept as metadata).
 * A dict with a 'loss' is a step, whatever else it holds (with include_num_input_tokens_seen
 * Trainer adds 'train_runtime' and 'train_tokens_per_second' to every step's dict); the summary
 * is the dict without one that has train_loss, train_runtime or train_*_per_second. */
#include <stdio.h>
#include <string.h>

#include "logparse.h"
#include "util/json_util.h"

static const char *dict_start(const char *line, size_t len)
{
    const char *p = lp_find_text(line, len, "{'");
    return p ? p : lp_find_text(line, len, "{\"");
}

/* the keys that make a dict Trainer's, anywhere in a Python repr */
static int has_trainer_key(const char *p, size_t rest)
{
    static const char *const keys[] = {"'loss':", "'train_runtime':", "'train_loss':"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (lp_find_text(p, rest, keys[i]))
            return 1;
    return 0;
}

static int detect(const char *line, size_t len)
{
    const char *p = dict_start(line, len);
    if (!p)
        return 0;
    size_t rest = len - (size_t)(p - line);
    if (p[1] == '\'') /* a Python repr: its keys in any order ({'step': 10, 'loss': 2.5}) */
        return has_trainer_key(p, rest);
    return (rest > 7 && (!memcmp(p + 2, "loss", 4))) ||
           (rest > 15 && !memcmp(p + 2, "train_runtime", 13));
}

/* a number, or a string that is one whole ('5.458': transformers 5 formats its log values) */
static int number_of(const lp_value *v, double *x)
{
    if (v->type == LPV_NUM) {
        *x = v->num;
        return 1;
    }
    return v->type == LPV_STR && v->len > 0 && lp_number(v->p, v->len, x) == v->len;
}

typedef struct {
    lp_event *ev;
    const lp_state *st;
    int has_loss, summary, eval, own_step;
    double step; /* the dict's own step, when own_step */
} walk;

/* "step", or the key --keys names for jsonl's step (step=iter: "iter") */
static int names_step(const lp_state *st, const char *key, size_t klen)
{
    if (lp_key_is(key, klen, "step"))
        return 1;
    for (int i = 0; i < st->n_keys; i++)
        if (!strcmp(st->key_field[i], "step") && lp_key_is(key, klen, st->key_json[i]))
            return 1;
    return 0;
}

/* the closing summary's keys (train_loss there is the mean of the run) */
static int summary_key(const char *key, size_t klen)
{
    return lp_key_is(key, klen, "train_runtime") || lp_key_is(key, klen, "train_loss") ||
           lp_key_is(key, klen, "train_samples_per_second") ||
           lp_key_is(key, klen, "train_steps_per_second");
}

static int on_pair(const char *key, size_t klen, const lp_value *v, void *arg)
{
    walk *w = arg;
    if (summary_key(key, klen))
        w->summary = 1;
    if (klen > 5 && !memcmp(key, "eval_", 5))
        w->eval = 1;
    double x;
    if (!number_of(v, &x))
        return 0;
    if (names_step(w->st, key, klen)) { /* Trainer prints no step: a line that names its own */
        w->own_step = 1;
        w->step = x;
        return 0;
    }
    lp_step *s = &w->ev->step;
    if (lp_key_is(key, klen, "loss"))
        w->has_loss = lp_step_set(s, "loss", x) > 0;
    else if (lp_key_is(key, klen, "grad_norm"))
        lp_step_set(s, "grad_norm", x);
    else if (lp_key_is(key, klen, "learning_rate"))
        lp_step_set(s, "lr", x);
    else if (klen < 40) { /* every other number: kept for the summary */
        char name[LP_KEY], text[LP_VALUE];
        snprintf(name, sizeof name, "trainer_%.*s", (int)klen, key);
        real_text_shortest(x, text, sizeof text); /* '369.8' stays 369.8 */
        lp_meta_add(w->ev, name, text);
    }
    return 0;
}

/* the step of a dict with a loss: its own (a whole number, else the line is skipped: -1), or
 * the count of the rank's dicts (-1 past LP_MAX_STEP) */
static int step_number(const walk *w, lp_state *st)
{
    if (w->own_step) {
        lp_step probe;
        memset(&probe, 0, sizeof probe);
        return lp_step_set(&probe, "step", w->step) > 0 ? probe.step : -1;
    }
    int *count = &st->trainer_logs[st->mem_rank]; /* the line's rank's, or its file's */
    if (*count >= LP_MAX_STEP) /* a log of 2e9 dicts: no step number left, never an overflow */
        return -1;
    return ++*count;
}

static int parse(const char *line, size_t len, lp_state *st, lp_event *ev)
{
    const char *p = dict_start(line, len);
    if (!p)
        return 0;
    memset(ev, 0, sizeof *ev);
    walk w = {ev, st, 0, 0, 0, 0, 0};
    if (st->mem_rank >= LP_MAX_RANKS) /* no counter of its own: never another rank's */
        return 0;
    /* a JSON object with a "step" of its own (or the key --keys names for the step) is a JSON
     * line (jsonl), whatever its key order */
    if (lp_dict_each(p, len - (size_t)(p - line), on_pair, &w) != 0 || w.eval ||
        (w.own_step && p[1] == '"')) {
        memset(ev, 0, sizeof *ev);
        return 0;
    }
    if (!w.has_loss) { /* the final summary: metadata only (its train_loss is the mean) */
        if (!w.summary)
            memset(ev, 0, sizeof *ev);
        ev->step.has = 0;
        ev->step.rejected = 0;
        return ev->n_meta > 0;
    }
    ev->n_meta = 0; /* epoch, train_runtime so far and the like are per line, not the run's */
    int step = step_number(&w, st);
    if (step < 0) {
        memset(ev, 0, sizeof *ev);
        return 0;
    }
    ev->has_step = 1;
    ev->step.rank = -1;
    ev->step.step = step;
    return 1;
}

const log_parser lp_trainer = {"trainer", "transformers Trainer log dicts ({'loss': ..., ...})",
                               detect, parse};
