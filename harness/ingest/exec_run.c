/* harness/ingest/exec_run.c: the run row of an exec'd or ingested run (scenario, device label, host,
 * harness version), the environment kept with it, and judging it against its baseline. */
#define _POSIX_C_SOURCE 200809L
#include "exec_run.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "judge/compare_db_internal.h"
#include "judge/judge.h"
#include "util/input_file.h"
#include "util/util.h"

/* the run's ranks: WORLD_SIZE from the environment (torchrun's), else the scenario's, else 1 */
static long exec_world_size(const scenario *s)
{
    long ws = 0;
    const char *env_ws = getenv("WORLD_SIZE");
    if (!env_ws || parse_long(env_ws, &ws) || ws < 1 || ws > 1000000)
        ws = s && s->world_size > 0 ? s->world_size : 1;
    return ws;
}

int exec_begin_run(store *st, const scenario *s, const char *name, const char *device,
                   int from_log, int64_t *run_id)
{
    char host[256] = ""; /* a log made elsewhere: its host is unknown, not this one */
    if (!from_log)
        host_name(host, sizeof host);
    long ws = exec_world_size(s);
    /* device_name starts as the label (history and reports match on it) until the workload
     * names its device (HARNESS_META device_name) */
    run_meta m = {s ? s->name : name, s ? s->json : NULL, s ? s->hash : NULL, device, device, "",
                  "", "", (int)ws, s ? s->dtype : "", host, harness_git_commit, HARNESS_VERSION, 0,
                  0 /* the workload's threads are its own */, from_log ? NAN : host_load_avg()};
    return store_begin_run(st, &m, run_id);
}

int64_t exec_tokens_per_step(const scenario *s)
{
    if (!s)
        return 0;
    int accum = s->grad_accum > 0 ? s->grad_accum : 1; /* micro-batches per optimizer step */
    return (int64_t)s->batch_size * accum * s->seq_len * exec_world_size(s);
}

void exec_keep_env(recorder *r)
{
    static const char *const names[] = {
        "CUDA_VISIBLE_DEVICES", "MUSA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES",
        "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_STEP_ID",
        "SLURM_PROCID", "SLURM_NODEID", "SLURM_JOB_NODELIST", "SLURM_NTASKS"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v) {
            char key[64];
            snprintf(key, sizeof key, "env.%s", names[i]);
            rec_extra(r, key, v);
        }
    }
}

int exec_baseline_known(const char *db, const scenario *s, const char *name,
                        const char *baseline, const char *baselines)
{
    baseline_query q = {baseline, s ? s->path : NULL, baselines, 0, -1, NULL, NULL, NULL};
    store *st = NULL;
    int rc = store_file_has_data(db) ? store_open(db, &st) : 0;
    if (!rc)
        rc = judge_baseline_known(st, &q, s ? s->name : name, s ? s->json : NULL,
                                  s ? s->hash : NULL, s ? s->dtype : "");
    store_close(st);
    return rc ? EXIT_USAGE : 0;
}

int exec_compare(store *st, int64_t run_id, const char *scenario_path, const char *baseline,
                 const char *baselines)
{
    baseline_query q = {baseline, scenario_path, baselines, 0, -1, NULL, NULL, NULL};
    judgement j;
    int rc;
    if (judge_run(st, run_id, &q, &j)) {
        rc = EXIT_USAGE;
    } else {
        judge_print(stderr, &j);
        rc = judge_store(st, &j) ? EXIT_FAIL : verdict_exit_code(j.res.v);
    }
    judge_free(&j);
    return rc;
}

int exec_judged_exit(int recorded, int judged)
{
    if (recorded == EXIT_USAGE || judged == EXIT_USAGE)
        return EXIT_USAGE;
    return recorded ? recorded : judged;
}
