/* harness/ingest/logparse_harness.c: the harness's own line protocol, version 1 (docs/workloads.md):
 * `HARNESS_STEP {"v":1,"step":..,"loss":..,...}` per step (optionally with a sparse-MoE run's
 * "expert_tokens") and `HARNESS_META {"v":1,...}`. */
#include <math.h>
#include <string.h>

#include "logparse.h"

#define STEP_TAG "HARNESS_STEP {"
#define META_TAG "HARNESS_META {"

static int detect(const char *line, size_t len)
{
    return lp_find_text(line, len, STEP_TAG) || lp_find_text(line, len, META_TAG);
}

typedef struct {
    lp_event *ev;
    int version, meta;
} walk;

static int on_step_pair(const char *key, size_t klen, const lp_value *v, void *arg)
{
    walk *w = arg;
    char name[LP_KEY];
    if (klen >= sizeof name)
        return 0;
    memcpy(name, key, klen);
    name[klen] = 0;
    if (strcmp(name, "v") == 0 && v->type == LPV_NUM) {
        w->version = v->num == 1.0 ? 1 : -1; /* only version 1 is known; no cast of huge values */
    } else if (v->type == LPV_NUM || (v->type == LPV_BOOL && strcmp(name, "skipped") == 0)) {
        lp_step_set(&w->ev->step, name, v->num); /* "skipped": true is 1 */
    } else if (strcmp(name, "expert_tokens") == 0 && v->type == LPV_ARR && v->len &&
               v->p[0] == '[') { /* optional: read by the recorder (lp_expert_tokens) */
        w->ev->step.expert_tokens = v->p;
        w->ev->step.expert_tokens_len = v->len;
    }
    return 0;
}

static int on_meta_pair(const char *key, size_t klen, const lp_value *v, void *arg)
{
    walk *w = arg;
    char name[LP_KEY], text[LP_VALUE];
    if (klen >= sizeof name) {
        w->ev->meta_left_out++;
        return 0;
    }
    memcpy(name, key, klen);
    name[klen] = 0;
    if (strcmp(name, "v") == 0 && v->type == LPV_NUM) {
        w->version = v->num == 1.0 ? 1 : -1;
        return 0;
    }
    if (v->type != LPV_STR && v->type != LPV_NUM && v->type != LPV_BOOL)
        return 0;
    if (v->type == LPV_BOOL)
        strcpy(text, v->num ? "true" : "false");
    else
        lp_value_text(v, text, sizeof text);
    w->ev->meta_cut += v->type == LPV_STR && strlen(text) + 8 >= sizeof text; /* at the cap */
    lp_meta_add(w->ev, name, text);
    return 0;
}

static int parse(const char *line, size_t len, lp_state *st, lp_event *ev)
{
    (void)st;
    const char *p = lp_find_text(line, len, STEP_TAG);
    int is_step = p != NULL;
    if (!p && !(p = lp_find_text(line, len, META_TAG)))
        return 0;
    const char *obj = p + strlen(STEP_TAG) - 1;
    size_t rest = len - (size_t)(obj - line);
    walk w = {ev, 0, !is_step};
    memset(ev, 0, sizeof *ev);
    ev->step.rank = -1;
    ev->step.step = -1;
    if (lp_dict_each(obj, rest, is_step ? on_step_pair : on_meta_pair, &w) != 0 || w.version != 1) {
        memset(ev, 0, sizeof *ev); /* truncated, malformed or another version: skipped */
        return 0;
    }
    if (!is_step) {
        ev->meta_from_workload = 1; /* its keys may not take the recorder's own (exec_record.c) */
        return ev->n_meta > 0;
    }
    if (ev->step.step < 0 || !(ev->step.has & LP_LOSS) || ev->step.rank == LP_RANK_BAD) {
        memset(ev, 0, sizeof *ev);
        return 0;
    }
    ev->has_step = 1;
    return 1;
}

const log_parser lp_harness = {"harness", "HARNESS_STEP/HARNESS_META JSON lines, protocol v1",
                               detect, parse};
