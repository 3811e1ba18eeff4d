/* bench/bench_store.c: the store, compare and report at scale: 100 runs of 10,000 steps recorded
 * one commit per step, compared with a baseline, reported with plots; beside a gpt2-tiny step. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "judge/compare_db.h"
#include "device.h"
#include "train/scenario.h"
#include "train/train.h"
#include "util/util.h"

typedef struct {
    int runs, steps;
    const char *dir;
} bench_cfg;

/* ---- a gpt2-tiny step on cpu ---- */
typedef struct {
    double ms[64];
    int n;
} step_times;

static int keep_time(const step_record *r, void *arg)
{
    step_times *t = arg;
    if (t->n < 64)
        t->ms[t->n++] = r->step_ms;
    return 0;
}

/* median and fastest step time of scenarios/gpt2-tiny.json on cpu, first step left out;
 * 1 on error */
static int tiny_step_ms(double *median, double *fastest)
{
    scenario s;
    char err[256];
    if (scenario_load(HARNESS_SOURCE_DIR "/scenarios/gpt2-tiny.json", &s))
        return 1;
    device *d = device_open("cpu", err, sizeof err);
    step_times t = {{0}, 0};
    train_options o = {.steps = 40, .on_step = keep_time, .arg = &t};
    train_result res;
    int rc = d ? train_run(&s, d, &o, &res) : 2;
    device_close(d);
    scenario_free(&s);
    if (rc || t.n < 2)
        return 1;
    *fastest = t.ms[1];
    for (int i = 2; i < t.n; i++)
        *fastest = fmin(*fastest, t.ms[i]);
    *median = median_inplace(t.ms + 1, t.n - 1);
    return 0;
}

/* ---- recording ---- */
static const char SCN[] = "{\"name\":\"bench\",\"baseline\":\"ref\",\"model\":{\"family\":\"gpt2\","
                          "\"config\":{\"n_layer\":2,\"n_embd\":64,\"n_head\":4}},"
                          "\"train\":{\"batch_size\":8},\"tolerances\":{\"loss_rtol\":1e-4}}";

static void make_step(step_record *r, int run, int step)
{
    memset(r, 0, sizeof *r);
    r->step = step;
    r->loss = 5.0 * exp(-step / 3000.0) + 0.01 * sin(step * 0.7);
    if (run % 10 == 9 && step > 5000) /* every tenth run drifts out of tolerance */
        r->loss *= 1.001;
    r->grad_norm = 1.0 + 0.1 * cos(step * 0.3);
    r->lr = 3e-3;
    r->tokens = 512;
    r->step_ms = 10 + (run % 7) * 0.1 + (step % 13) * 0.01;
    r->tokens_per_s = 512 / (r->step_ms / 1e3);
    r->mem_peak_bytes = 12 << 20;
    r->mem_used_bytes = 20 << 20;
    r->mem_total_bytes = (int64_t)1 << 34;
}

static int record_runs(store *st, const bench_cfg *c, double *per_step_us)
{
    char hash[65];
    sha256_hex(SCN, strlen(SCN), hash);
    run_meta m = {"bench", SCN, hash, "cpu", "Bench CPU", "host", "n/a", "blas", 1, "fp32",
                  "benchhost", "0", "0.1.0", (int64_t)1 << 34, 1, 0.0};
    double t0 = now_ms();
    for (int run = 0; run < c->runs; run++) {
        int64_t id;
        if (store_begin_run(st, &m, &id))
            return 1;
        for (int step = 1; step <= c->steps; step++) {
            step_record r;
            make_step(&r, run, step);
            if (store_add_step(st, id, &r))
                return 1;
        }
        if (store_finish_run(st, id, "ok", NULL))
            return 1;
    }
    *per_step_us = (now_ms() - t0) * 1e3 / ((double)c->runs * c->steps);
    return store_set_baseline(st, "bench", "ref", 1);
}

/* ---- comparing ---- */
static int compare_all(store *st, const bench_cfg *c, int *failing)
{
    baseline_cache cache;
    memset(&cache, 0, sizeof cache);
    baseline_query q = {NULL, NULL, NULL, 0, -1, &cache, NULL, NULL};
    *failing = 0;
    int rc = 0;
    for (int64_t id = 1; id <= c->runs; id++) {
        judgement j;
        rc = judge_run(st, id, &q, &j);
        if (!rc)
            rc = judge_store(st, &j);
        *failing += j.res.v != VERDICT_PASS;
        judge_free(&j);
        if (rc)
            break;
    }
    baseline_cache_free(&cache);
    return rc;
}

int main(int argc, char **argv)
{
    bench_cfg c = {100, 10000, NULL};
    char dir[] = "/tmp/bench_store-XXXXXX";
    for (int i = 1; i + 1 < argc; i += 2) {
        long v;
        if (parse_long(argv[i + 1], &v) || v < 2) {
            fprintf(stderr, "usage: bench_store [--runs N] [--steps N]\n");
            return 2;
        }
        *(strcmp(argv[i], "--runs") == 0 ? &c.runs : &c.steps) = (int)v;
    }
    if (!mkdtemp(dir))
        return 2;
    char db[64], out[64];
    snprintf(db, sizeof db, "%s/bench.db", dir);
    snprintf(out, sizeof out, "%s/report", dir);
    printf("bench_store: %d runs x %d steps in %s\n", c.runs, c.steps, dir);

    double tiny_median, tiny;
    if (tiny_step_ms(&tiny_median, &tiny))
        return 1;
    printf("gpt2-tiny step on cpu: median %.3f ms, fastest %.3f ms (of 39)\n", tiny_median, tiny);

    store *st;
    double per_step_us = 0;
    if (store_open(db, &st) || record_runs(st, &c, &per_step_us))
        return 1;
    printf("record a step (one commit each, WAL):  %9.1f us = %.3f%% of the fastest gpt2-tiny "
           "step (target < 0.5%%)\n", per_step_us, per_step_us / 1e3 / tiny * 100);

    int failing = 0;
    double t0 = now_ms();
    if (compare_all(st, &c, &failing))
        return 1;
    double cmp_ms = now_ms() - t0;
    store_close(st);
    printf("compare %d runs with the baseline:     %9.0f ms (target < 1000 ms); %d not passing\n",
           c.runs, cmp_ms, failing);

    /* every run by id (without ids the report takes the newest run per scenario and device) */
    char **rargv = calloc((size_t)c.runs + 6, sizeof *rargv), (*ids)[16] = calloc((size_t)c.runs, 16);
    int rargc = 0;
    rargv[rargc++] = "report";
    rargv[rargc++] = "--db";
    rargv[rargc++] = db;
    rargv[rargc++] = "--out";
    rargv[rargc++] = out;
    for (int i = 0; i < c.runs; i++) {
        snprintf(ids[i], 16, "%d", i + 1);
        rargv[rargc++] = ids[i];
    }
    t0 = now_ms();
    int rc = cmd_report(rargc, rargv);
    free(rargv);
    free(ids);
    printf("report with plots (md, html, csv, junit, %d PNG+SVG pairs): %6.0f ms (target < 10000 ms),"
           " exit %d\n", 2 * c.runs + 2, now_ms() - t0, rc);
    printf("files left in %s\n", dir);
    return rc == 2 ? 1 : 0;
}
