/* harness/ingest/logparse_mllog.c: MLPerf logging lines, `:::MLLOG {"key": "train_loss", "value": 2.3,
 * "metadata": {"step": 10, "samples_count": 640, ...}, ...}` (mlperf-logging's mllog). Loss keys:
 * train_loss, loss; tracked_stats carries throughput; submission/system keys become metadata. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "logparse.h"

#define TAG ":::MLLOG {"

static int detect(const char *line, size_t len)
{
    return lp_find_text(line, len, TAG) != NULL;
}

typedef struct {
    char key[LP_KEY];
    lp_value value;
    int has_value;
    const char *meta;
    size_t meta_len;
} mllog_line;

static int on_top(const char *key, size_t klen, const lp_value *v, void *arg)
{
    mllog_line *l = arg;
    if (lp_key_is(key, klen, "key") && v->type == LPV_STR)
        lp_value_text(v, l->key, sizeof l->key);
    else if (lp_key_is(key, klen, "value")) {
        l->value = *v;
        l->has_value = 1;
    } else if (lp_key_is(key, klen, "metadata") && v->type == LPV_OBJ) {
        l->meta = v->p;
        l->meta_len = v->len;
    }
    return 0;
}

typedef struct {
    double step, samples, epoch;
    int has_step, has_samples;
    int bad_step; /* a step key that is not a number (a string, a list): the line is no step */
} mllog_meta;

static int on_meta(const char *key, size_t klen, const lp_value *v, void *arg)
{
    mllog_meta *m = arg;
    int is_step = lp_key_is(key, klen, "step") || lp_key_is(key, klen, "step_num");
    if (v->type != LPV_NUM) {
        m->bad_step |= is_step && v->type != LPV_NULL;
        return 0;
    }
    if (is_step)
        m->step = v->num, m->has_step = 1;
    else if (lp_key_is(key, klen, "samples_count"))
        m->samples = v->num, m->has_samples = 1;
    return 0;
}

static int on_stats(const char *key, size_t klen, const lp_value *v, void *arg)
{
    lp_step *s = arg;
    if (v->type == LPV_NUM && (lp_key_is(key, klen, "loss") || lp_key_is(key, klen, "train_loss")))
        lp_step_set(s, "loss", v->num);
    else if (v->type == LPV_NUM && lp_key_is(key, klen, "throughput"))
        lp_step_set(s, "tokens_per_s", v->num);
    return 0;
}

/* the step a loss belongs to: metadata step, else samples / global batch, else a count */
static int step_of(const mllog_line *l, lp_state *st)
{
    mllog_meta m = {0, 0, 0, 0, 0, 0};
    if (l->meta && lp_dict_each(l->meta, l->meta_len, on_meta, &m) != 0)
        m.has_step = m.has_samples = m.bad_step = 0;
    /* the line's rank's count, or its file's; none past LP_MAX_RANKS (never another rank's) */
    int *count = st->mem_rank < LP_MAX_RANKS ? &st->mllog_losses[st->mem_rank] : NULL;
    if (count && *count < LP_MAX_STEP) /* counted no further: never an overflow */
        ++*count;
    if (m.bad_step || (m.has_step && !(m.step >= 0 && m.step < 2e9 && m.step == floor(m.step))))
        return -1; /* 2.5, -4, 1e300 or "5" is no step: the line is skipped, never guessed */
    if (m.has_step && m.step >= 0 && m.step < 2e9)
        return (int)m.step; /* 0-based series are shifted by the reader */
    if (m.has_samples && st->mllog_batch > 0 && m.samples >= 0 &&
        m.samples / st->mllog_batch < 2e9)
        return (int)(m.samples / st->mllog_batch + 0.5);
    return count ? *count : -1;
}

static int parse(const char *line, size_t len, lp_state *st, lp_event *ev)
{
    const char *p = lp_find_text(line, len, TAG);
    if (!p)
        return 0;
    p += strlen(TAG) - 1;
    mllog_line l;
    memset(&l, 0, sizeof l);
    memset(ev, 0, sizeof *ev);
    if (lp_dict_each(p, len - (size_t)(p - line), on_top, &l) != 0 || !l.key[0] || !l.has_value)
        return 0;
    ev->step.rank = -1;
    if (!strcmp(l.key, "global_batch_size") && l.value.type == LPV_NUM) {
        st->mllog_batch = l.value.num;
        lp_meta_add(ev, "mllog_global_batch_size", "");
        lp_value_text(&l.value, ev->meta[0].value, LP_VALUE);
        return 1;
    }
    if (!strncmp(l.key, "submission_", 11) && l.value.type == LPV_STR) {
        char name[LP_KEY], text[LP_VALUE];
        snprintf(name, sizeof name, "mllog_%.50s", l.key);
        lp_value_text(&l.value, text, sizeof text);
        lp_meta_add(ev, name, text);
        return 1;
    }
    if ((!strcmp(l.key, "train_loss") || !strcmp(l.key, "loss")) && l.value.type == LPV_NUM)
        lp_step_set(&ev->step, "loss", l.value.num);
    else if (!strcmp(l.key, "tracked_stats") && l.value.type == LPV_OBJ)
        lp_dict_each(l.value.p, l.value.len, on_stats, &ev->step);
    if (!(ev->step.has & LP_LOSS)) {
        memset(ev, 0, sizeof *ev);
        return 0;
    }
    ev->step.step = step_of(&l, st);
    ev->has_step = ev->step.step >= 0;
    return ev->has_step;
}

const log_parser lp_mllog = {"mllog", "MLPerf :::MLLOG lines (train_loss, tracked_stats)", detect,
                             parse};
