/* harness/ingest/logparse_jsonl.c: one JSON object per line with the step's fields under keys named on
 * the command line (--keys step=iter,loss=lm_loss); by default the protocol's own names. */
#include <stdio.h>
#include <string.h>

#include "logparse.h"

static int detect(const char *line, size_t len)
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    return i + 1 < len && line[i] == '{' && line[i + 1] == '"';
}

typedef struct {
    const lp_state *st;
    lp_step *step;
} walk;

static int on_pair(const char *key, size_t klen, const lp_value *v, void *arg)
{
    walk *w = arg;
    if (v->type != LPV_NUM && v->type != LPV_BOOL)
        return 0;
    for (int i = 0; i < w->st->n_keys; i++) /* a boolean only as skipped (true is 1) */
        if (lp_key_is(key, klen, w->st->key_json[i]) &&
            (v->type == LPV_NUM || strcmp(w->st->key_field[i], "skipped") == 0))
            lp_step_set(w->step, w->st->key_field[i], v->num);
    return 0;
}

static int parse(const char *line, size_t len, lp_state *st, lp_event *ev)
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    memset(ev, 0, sizeof *ev);
    ev->step.rank = -1;
    ev->step.step = -1;
    walk w = {st, &ev->step};
    if (i >= len || lp_dict_each(line + i, len - i, on_pair, &w) != 0 ||
        !(ev->step.has & LP_LOSS) || ev->step.step < 0 || ev->step.rank == LP_RANK_BAD) {
        memset(ev, 0, sizeof *ev);
        return 0;
    }
    ev->has_step = 1;
    return 1;
}

const log_parser lp_jsonl = {"jsonl", "JSON lines with named keys (--keys step=iter,loss=lm_loss)",
                             detect, parse};
