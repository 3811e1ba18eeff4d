/* tests/test_moe_routing.c: sparse-MoE routing counts from the training loop (a fake MoE family made
 * here from GPT-2's table) into the store, show, baseline files, compare and report. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "cli/commands.h"
#include "ingest/logparse.h"
#include "judge/judge.h"
#include "models/models.h"
#include "report/report.h"
#include "runner/runner.h"
#include "store/store.h"
#include "testutil.h"
#include "util/util.h"

extern const model_family gpt2_family;

/* ---- the fake family: GPT-2 that reports made-up routing counts ---------------------------- */

#define LAYERS 3
#define EXPERTS 4
#define CELLS (LAYERS * EXPERTS)
#define MAX_CALLS 16

static int fake_layers = LAYERS, fake_experts = EXPERTS;
static int fake_calls;         /* expert_tokens calls since fake_reset */
static int fake_drift_step;    /* from this step, layer 1 expert 2 gets extra tokens; 0 never */
static int64_t produced[MAX_CALLS][CELLS]; /* what each call returned */

/* a count that differs per step, layer and expert; one cell far above 32 bits */
static int64_t made_up(int step, int l, int e)
{
    if (step == 2 && l == 2 && e == 3)
        return (int64_t)1 << 40;
    return (int64_t)((step * 131 + l * 17 + e * 7) % 97) + 3 * e;
}

static void fake_shape(const void *impl, int *layers, int *experts)
{
    (void)impl;
    *layers = fake_layers;
    *experts = fake_experts;
}

static int fake_tokens(void *impl, int64_t *counts)
{
    (void)impl;
    int step = ++fake_calls;
    for (int l = 0; l < LAYERS; l++)
        for (int e = 0; e < EXPERTS; e++)
            counts[l * EXPERTS + e] = made_up(step, l, e);
    if (fake_drift_step && step >= fake_drift_step)
        counts[1 * EXPERTS + 2] += step == fake_drift_step ? 5 : 60;
    if (step <= MAX_CALLS)
        memcpy(produced[step - 1], counts, sizeof produced[0]);
    return 0;
}

static model_family fake_family;

static void fake_reset(int drift_step)
{
    fake_family = gpt2_family;
    fake_family.moe_shape = fake_shape;
    fake_family.expert_tokens = fake_tokens;
    fake_layers = LAYERS;
    fake_experts = EXPERTS;
    fake_calls = 0;
    fake_drift_step = drift_step;
    memset(produced, 0, sizeof produced);
}

/* ---- helpers ---------------------------------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = calloc((size_t)n + 1, 1);
    if (t && fread(t, 1, (size_t)n, f) != (size_t)n) {
        free(t);
        t = NULL;
    }
    fclose(f);
    return t;
}

/* runs a command function with stdout (fd) into a file; its exit code, the output in *out */
static int capture(int fd, int (*cmd)(int, char **), int argc, char **argv, char **out)
{
    const char *path = tu_temp_path(".out");
    fflush(NULL);
    int saved = dup(fd);
    int to = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && to >= 0);
    dup2(to, fd);
    close(to);
    int rc = cmd(argc, argv);
    fflush(NULL);
    dup2(saved, fd);
    close(saved);
    *out = slurp(path);
    assert_non_null(*out);
    unlink(path);
    return rc;
}

/* gpt2-tiny with an absolute data path and, when rtol >= 0, tolerances.expert_tokens_rtol */
static const char *tiny_scenario(double rtol)
{
    scenario s;
    assert_int_equal(scenario_load(tu_source_path("scenarios/gpt2-tiny.json"), &s), 0);
    json_t *root = json_load_file(tu_source_path("scenarios/gpt2-tiny.json"), 0, NULL);
    assert_non_null(root);
    json_object_set_new(json_object_get(root, "data"), "path", json_string(s.data_path));
    if (rtol >= 0)
        json_object_set_new(json_object_get(root, "tolerances"), "expert_tokens_rtol",
                            json_real(rtol));
    const char *path = tu_temp_path(".json");
    assert_int_equal(json_dump_file(root, path, JSON_INDENT(2)), 0);
    json_decref(root);
    scenario_free(&s);
    return path;
}

/* trains `steps` steps of the scenario file with the fake family into db; the run id */
static int64_t fake_run(const char *scn, const char *db, int steps, int drift_step)
{
    fake_reset(drift_step);
    run_args a;
    memset(&a, 0, sizeof a);
    a.steps = steps;
    a.quiet = 1;
    scenario s;
    assert_int_equal(runner_load_scenario(&a, scn, &s), 0);
    s.fam = &fake_family;
    char err[256];
    device *d = device_open("cpu", err, sizeof err);
    assert_non_null(d);
    trainer *tr;
    assert_int_equal(runner_prepare(&s, d, &a, &tr), 0);
    store *st;
    assert_int_equal(store_open(db, &st), 0);
    int64_t id = 0;
    assert_int_equal(runner_record(tr, &s, d, st, &a, &id), 0);
    store_close(st);
    train_free(tr);
    device_close(d);
    scenario_free(&s);
    return id;
}

static void remove_db(const char *path)
{
    char p[512];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

static const run_meta META = {"moe", "{\"name\":\"moe\"}", "h", "cpu", "CPU", "host", "n/a",
                              "OpenBLAS", 1, "fp32", "vm", "abc", "0.1", 1 << 30, 2, 0.5};

static step_record plain_step(int step)
{
    step_record r;
    memset(&r, 0, sizeof r);
    r.step = step;
    r.loss = 5.0 - step * 0.1;
    r.grad_norm = 1.0;
    r.lr = 1e-3;
    r.tokens = 512;
    return r;
}

/* ---- the store ---------------------------------------------------------------------------- */

static void test_store_round_trip(void **state)
{
    (void)state;
    const char *db = tu_temp_path(".db");
    store *st;
    assert_int_equal(store_open(db, &st), 0);
    int64_t id;
    assert_int_equal(store_begin_run(st, &META, &id), 0);
    int64_t counts[4][CELLS];
    for (int step = 1; step <= 4; step++) {
        step_record r = plain_step(step);
        for (int c = 0; c < CELLS; c++)
            counts[step - 1][c] = made_up(step, c / EXPERTS, c % EXPERTS);
        if (step != 3) { /* step 3 without counts */
            r.moe_layers = LAYERS;
            r.moe_experts = EXPERTS;
            r.expert_tokens = counts[step - 1];
        }
        assert_int_equal(store_add_step(st, id, &r), 0);
    }
    routing_table t;
    assert_int_equal(store_get_routing(st, id, &t), 0);
    assert_int_equal(t.layers, LAYERS);
    assert_int_equal(t.experts, EXPERTS);
    assert_int_equal(t.n, 3);
    int want_steps[] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(t.steps[i], want_steps[i]);
        assert_memory_equal(routing_counts(&t, i), counts[want_steps[i] - 1], sizeof counts[0]);
    }
    assert_int_equal(routing_find_step(&t, 3), -1);
    assert_int_equal(routing_find_step(&t, 4), 2);
    assert_int_equal(routing_counts(&t, 1)[2 * EXPERTS + 3], (int64_t)1 << 40);
    routing_table_free(&t);
    /* a run without counts reads as none */
    int64_t other;
    assert_int_equal(store_begin_run(st, &META, &other), 0);
    step_record r = plain_step(1);
    assert_int_equal(store_add_step(st, other, &r), 0);
    assert_int_equal(store_get_routing(st, other, &t), 0);
    assert_int_equal(t.n, 0);
    assert_int_equal(t.layers, 0);
    store_close(st);
    remove_db(db);
}

/* what recording a step costs with Mixtral-8x7B's 32 layers x 8 experts of counts: printed, not
 * asserted (a shared machine's timings vary) */
static void test_store_cost_printed(void **state)
{
    (void)state;
    const char *db = tu_temp_path(".db");
    store *st;
    assert_int_equal(store_open(db, &st), 0);
    int64_t id, other, counts[32 * 8];
    assert_int_equal(store_begin_run(st, &META, &id), 0);
    assert_int_equal(store_begin_run(st, &META, &other), 0);
    for (int i = 0; i < 32 * 8; i++)
        counts[i] = 1000 + i;
    enum { N = 200 };
    double t0 = now_ms();
    for (int step = 1; step <= N; step++) {
        step_record r = plain_step(step);
        r.moe_layers = 32;
        r.moe_experts = 8;
        r.expert_tokens = counts;
        assert_int_equal(store_add_step(st, id, &r), 0);
    }
    double t1 = now_ms();
    for (int step = 1; step <= N; step++) {
        step_record r = plain_step(step);
        assert_int_equal(store_add_step(st, other, &r), 0);
    }
    double t2 = now_ms();
    routing_table t;
    assert_int_equal(store_get_routing(st, id, &t), 0);
    double t3 = now_ms();
    assert_int_equal(t.n, N);
    routing_table_free(&t);
    printf("# store_add_step: %.1f us with 32 x 8 expert counts, %.1f us without; "
           "store_get_routing of %d such steps: %.1f ms\n", (t1 - t0) * 1e3 / N,
           (t2 - t1) * 1e3 / N, N, t3 - t2);
    store_close(st);
    remove_db(db);
}

static int n_steps(store *st, int64_t id)
{
    step_record *s;
    int n;
    assert_int_equal(store_get_steps(st, id, &s, &n), 0);
    free(s);
    return n;
}

/* bad counts are refused, and the step goes with them (one transaction) */
static void test_store_bad_counts_roll_back(void **state)
{
    (void)state;
    const char *db = tu_temp_path(".db");
    store *st;
    assert_int_equal(store_open(db, &st), 0);
    int64_t id;
    assert_int_equal(store_begin_run(st, &META, &id), 0);
    int64_t c[CELLS] = {0};
    step_record r = plain_step(1);
    r.moe_layers = LAYERS;
    r.moe_experts = EXPERTS;
    r.expert_tokens = c;
    c[5] = -1;
    assert_int_equal(store_add_step(st, id, &r), 1);
    assert_int_equal(n_steps(st, id), 0);
    c[5] = 7;
    r.moe_layers = STORE_MOE_MAX_LAYERS + 1;
    assert_int_equal(store_add_step(st, id, &r), 1);
    r.moe_layers = 512;
    r.moe_experts = 512; /* each within its limit, the product over STORE_MOE_MAX_CELLS */
    assert_int_equal(store_add_step(st, id, &r), 1);
    assert_int_equal(n_steps(st, id), 0);
    r.moe_layers = LAYERS;
    r.moe_experts = EXPERTS;
    assert_int_equal(store_add_step(st, id, &r), 0);
    assert_int_equal(n_steps(st, id), 1);
    /* a step whose insert fails (a duplicate) leaves no counts behind either */
    c[0] = 99;
    assert_int_equal(store_add_step(st, id, &r), 1);
    routing_table t;
    assert_int_equal(store_get_routing(st, id, &t), 0);
    assert_int_equal(t.n, 1);
    assert_int_equal(routing_counts(&t, 0)[0], 0);
    routing_table_free(&t);
    store_close(st);
    remove_db(db);
}

/* exec's store_put_step: counts replace earlier ones; a step put again without counts keeps
 * them */
static void test_put_step_keeps_counts(void **state)
{
    (void)state;
    const char *db = tu_temp_path(".db");
    store *st;
    assert_int_equal(store_open(db, &st), 0);
    int64_t id;
    assert_int_equal(store_begin_run(st, &META, &id), 0);
    int64_t a[CELLS], b[CELLS];
    for (int i = 0; i < CELLS; i++)
        a[i] = i, b[i] = 100 + i;
    step_record r = plain_step(1);
    r.moe_layers = LAYERS;
    r.moe_experts = EXPERTS;
    r.expert_tokens = a;
    assert_int_equal(store_put_step(st, id, &r), 0);
    step_record again = plain_step(1);
    again.grad_norm = 2.0;
    assert_int_equal(store_put_step(st, id, &again), 0);
    routing_table t;
    assert_int_equal(store_get_routing(st, id, &t), 0);
    assert_int_equal(t.n, 1);
    assert_memory_equal(routing_counts(&t, 0), a, sizeof a);
    routing_table_free(&t);
    r.expert_tokens = b;
    assert_int_equal(store_put_step(st, id, &r), 0);
    assert_int_equal(store_get_routing(st, id, &t), 0);
    assert_memory_equal(routing_counts(&t, 0), b, sizeof b);
    routing_table_free(&t);
    assert_int_equal(n_steps(st, id), 1);
    store_close(st);
    remove_db(db);
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* a schema-5 store (made by dropping what 6, 7 and 8 add) migrates, its steps kept, and takes
 * counts */
static void test_migrate_5_to_6(void **state)
{
    (void)state;
    const char *db = tu_temp_path(".db");
    store *st;
    assert_int_equal(store_open(db, &st), 0);
    int64_t id;
    assert_int_equal(store_begin_run(st, &META, &id), 0);
    step_record r = plain_step(1);
    assert_int_equal(store_add_step(st, id, &r), 0);
    store_close(st);
    raw_exec(db, "DROP TABLE expert_tokens; DROP TABLE comm_checks; DROP TABLE ensemble_steps;"
                 " ALTER TABLE steps DROP COLUMN skipped; ALTER TABLE steps DROP COLUMN loss_scale;"
                 " PRAGMA user_version = 5;");
    assert_int_equal(store_open_readonly(db, &st), 2); /* older: read-only refuses */
    assert_int_equal(store_open(db, &st), 0);
    assert_int_equal(store_schema_version(), 10);
    assert_int_equal(n_steps(st, id), 1);
    int64_t c[CELLS];
    for (int i = 0; i < CELLS; i++)
        c[i] = 3 * i;
    r = plain_step(2);
    r.moe_layers = LAYERS;
    r.moe_experts = EXPERTS;
    r.expert_tokens = c;
    assert_int_equal(store_add_step(st, id, &r), 0);
    routing_table t;
    assert_int_equal(store_get_routing(st, id, &t), 0);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.steps[0], 2);
    assert_memory_equal(routing_counts(&t, 0), c, sizeof c);
    routing_table_free(&t);
    store_close(st);
    remove_db(db);
}

/* rows that are not a whole grid per step are refused when read */
static void test_store_malformed_rows(void **state)
{
    (void)state;
    const char *db = tu_temp_path(".db");
    store *st;
    assert_int_equal(store_open(db, &st), 0);
    int64_t id;
    assert_int_equal(store_begin_run(st, &META, &id), 0);
    int64_t c[CELLS] = {1};
    step_record r = plain_step(1);
    r.moe_layers = LAYERS;
    r.moe_experts = EXPERTS;
    r.expert_tokens = c;
    assert_int_equal(store_add_step(st, id, &r), 0);
    store_close(st);
    raw_exec(db, "DELETE FROM expert_tokens WHERE layer = 1 AND expert = 3;");
    assert_int_equal(store_open(db, &st), 0);
    routing_table t;
    assert_int_equal(store_get_routing(st, id, &t), 2);
    assert_null(t.counts);
    store_close(st);
    remove_db(db);
}

/* ---- the training loop -------------------------------------------------------------------- */

static void test_train_records_counts(void **state)
{
    (void)state;
    const char *db = tu_temp_path(".db");
    const char *scn = tiny_scenario(-1);
    int64_t id = fake_run(scn, db, 4, 0);
    assert_int_equal(fake_calls, 4); /* once per step */
    store *st;
    assert_int_equal(store_open_readonly(db, &st), 0);
    routing_table t;
    assert_int_equal(store_get_routing(st, id, &t), 0);
    assert_int_equal(t.n, 4);
    assert_int_equal(t.layers, LAYERS);
    assert_int_equal(t.experts, EXPERTS);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(t.steps[i], i + 1);
        assert_memory_equal(routing_counts(&t, i), produced[i], sizeof produced[0]);
    }
    routing_table_free(&t);
    store_close(st);
    remove_db(db);
    unlink(scn);
}

/* a model whose counts the store cannot hold is refused before anything is recorded */
static void test_train_refuses_huge_shape(void **state)
{
    (void)state;
    const char *scn = tiny_scenario(-1);
    fake_reset(0);
    fake_layers = 300;
    fake_experts = 300;
    run_args a;
    memset(&a, 0, sizeof a);
    a.steps = 2;
    scenario s;
    assert_int_equal(runner_load_scenario(&a, scn, &s), 0);
    s.fam = &fake_family;
    char err[256];
    device *d = device_open("cpu", err, sizeof err);
    trainer *tr = NULL;
    assert_int_equal(runner_prepare(&s, d, &a, &tr), 2);
    assert_null(tr);
    device_close(d);
    scenario_free(&s);
    unlink(scn);
}

/* ---- show ----------------------------------------------------------------------------------- */

static void test_show_text_and_json(void **state)
{
    (void)state;
    const char *db = tu_temp_path(".db");
    const char *scn = tiny_scenario(-1);
    int64_t id = fake_run(scn, db, 3, 0);
    char ids[32], *out;
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    char *argv[] = {"show", ids, "--db", (char *)db, "--json", NULL};
    assert_int_equal(capture(1, cmd_show, 5, argv, &out), 0);
    json_t *root = json_loads(out, 0, NULL);
    assert_non_null(root);
    free(out);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(root, "moe"), "layers")),
                     LAYERS);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(root, "moe"), "experts")),
                     EXPERTS);
    json_t *steps = json_object_get(root, "steps");
    assert_int_equal(json_array_size(steps), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *grid = json_object_get(json_array_get(steps, i), "expert_tokens");
        assert_int_equal(json_array_size(grid), LAYERS);
        for (int l = 0; l < LAYERS; l++)
            for (int e = 0; e < EXPERTS; e++)
                assert_int_equal(json_integer_value(json_array_get(json_array_get(grid, l), e)),
                                 produced[i][l * EXPERTS + e]);
    }
    json_decref(root);
    /* text: one line per step with each expert's total over the layers */
    assert_int_equal(capture(1, cmd_show, 4, argv, &out), 0);
    assert_non_null(strstr(out, "routing: tokens per expert summed over 3 MoE layers"));
    assert_non_null(strstr(out, "routing of step 3 by layer"));
    char want[256];
    int used = snprintf(want, sizeof want, "\n%6d", 1);
    for (int e = 0; e < EXPERTS; e++) {
        int64_t sum = 0;
        for (int l = 0; l < LAYERS; l++)
            sum += produced[0][l * EXPERTS + e];
        used += snprintf(want + used, sizeof want - (size_t)used, " %*lld", 13, (long long)sum);
    }
    if (!strstr(out, want))
        fail_msg("no line '%s' in:\n%s", want, out);
    free(out);
    remove_db(db);
    unlink(scn);
}

/* ---- baseline files ------------------------------------------------------------------------ */

static char *baseline_text(const baseline *b)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(baseline_write(f, b), 0);
    fclose(f);
    return buf;
}

static void test_baseline_round_trip(void **state)
{
    (void)state;
    const char *db = tu_temp_path(".db"), *db2 = tu_temp_path(".db");
    const char *scn = tiny_scenario(-1);
    int64_t id = fake_run(scn, db, 3, 0);
    store *st;
    assert_int_equal(store_open(db, &st), 0);
    baseline b;
    assert_int_equal(baseline_from_run(st, id, "cpu", &b), 0);
    store_close(st);
    char *text = baseline_text(&b);
    assert_non_null(strstr(text, "format: harness-baseline 2\n"));
    assert_non_null(strstr(text, "moe_layers: 3\nmoe_experts: 4\nrouted_steps: 3\n"));
    assert_non_null(strstr(text, "\nexpert_tokens step layer e0 e1 e2 e3\n"));
    assert_non_null(strstr(text, "\n2 2 ")); /* step 2 layer 2 holds 1 << 40 */
    assert_non_null(strstr(text, " 1099511627776\n"));
    baseline p;
    assert_int_equal(baseline_parse(text, strlen(text), "rt.baseline", &p), 0);
    assert_int_equal(p.routing.n, 3);
    assert_memory_equal(p.routing.counts, b.routing.counts, sizeof(int64_t) * 3 * CELLS);
    assert_true(baseline_same(&p, &b));
    /* import into another store and record again: the same bytes */
    assert_int_equal(store_open(db2, &st), 0);
    int64_t imported;
    assert_int_equal(baseline_import(st, &p, &imported), 0);
    baseline again;
    assert_int_equal(baseline_from_run(st, imported, "cpu", &again), 0);
    assert_true(baseline_same(&again, &b));
    store_close(st);
    baseline copy;
    assert_int_equal(baseline_copy(&copy, &again), 0);
    assert_true(baseline_same(&copy, &b));
    baseline_free(&copy);
    baseline_free(&again);
    baseline_free(&p);
    baseline_free(&b);
    free(text);
    remove_db(db);
    remove_db(db2);
    unlink(scn);
}

/* a run without counts still writes format 1, byte for byte as before */
static void test_baseline_without_counts_is_format_1(void **state)
{
    (void)state;
    baseline b;
    memset(&b, 0, sizeof b);
    snprintf(b.scenario, sizeof b.scenario, "t");
    snprintf(b.scenario_hash, sizeof b.scenario_hash, "%064d", 0);
    snprintf(b.device, sizeof b.device, "cpu");
    snprintf(b.dtype, sizeof b.dtype, "fp32");
    snprintf(b.status, sizeof b.status, "ok");
    b.world_size = 1;
    step_record r = plain_step(1);
    b.steps = &r;
    b.n_steps = 1;
    char *text = baseline_text(&b);
    assert_non_null(strstr(text, "format: harness-baseline 1\n"));
    assert_null(strstr(text, "moe_"));
    assert_null(strstr(text, "expert_tokens"));
    baseline p;
    assert_int_equal(baseline_parse(text, strlen(text), "v1.baseline", &p), 0);
    assert_int_equal(p.routing.n, 0);
    baseline_free(&p);
    free(text);
}

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define V2_HEAD "format: harness-baseline 2\nscenario: t\nscenario_hash: " HASH "\ndevice: cpu\n" \
                "dtype: fp32\nworld_size: 1\nsteps: 2\n"
#define TABLE "step loss\n1 5.5\n2 5.4\n"

/* text must be refused with exit 2 and a message containing want */
static void expect_bad(const char *text, const char *want)
{
    char *msg = NULL;
    const char *path = tu_temp_path(".err");
    fflush(stderr);
    int saved = dup(2);
    int to = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(to, 2);
    close(to);
    baseline b;
    int rc = baseline_parse(text, strlen(text), "bad.baseline", &b);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    msg = slurp(path);
    unlink(path);
    assert_non_null(msg);
    if (rc != 2 || !strstr(msg, want))
        fail_msg("rc %d, message '%s', wanted '%s'", rc, msg, want);
    free(msg);
}

static void test_hostile_baseline_counts(void **state)
{
    (void)state;
    const char *good = V2_HEAD "moe_layers: 2\nmoe_experts: 2\nrouted_steps: 2\n" TABLE
                       "expert_tokens step layer e0 e1\n1 0 3 4\n1 1 5 6\n2 0 7 8\n2 1 9 10\n";
    baseline b;
    assert_int_equal(baseline_parse(good, strlen(good), "good.baseline", &b), 0);
    assert_int_equal(b.routing.n, 2);
    assert_int_equal(routing_counts(&b.routing, 1)[3], 10);
    baseline_free(&b);
#define H2 V2_HEAD "moe_layers: 2\nmoe_experts: 2\nrouted_steps: 2\n" TABLE
    expect_bad(H2 "expert_tokens step layer e0 e1\n1 0 3 -4\n",
               "bad.baseline:15: expert_tokens: step 1 layer 0 e1: '-4' is not a whole number");
    expect_bad(H2 "expert_tokens step layer e0 e1\n1 0 3 4x\n", "e1: '4x' is not a whole number");
    expect_bad(H2 "expert_tokens step layer e0 e1\n1 0 3 99999999999999999999\n",
               "bad.baseline:15: expert_tokens: step 1 layer 0 e1: '99999999999999999999'");
    expect_bad(H2 "expert_tokens step layer e0 e1\n1 0 3 4 5\n",
               "bad.baseline:15: expert_tokens: step 1 layer 0: more than the 2 counts");
    expect_bad(H2 "expert_tokens step layer e0 e1\n1 0 3\n",
               "bad.baseline:15: expert_tokens: step 1 layer 0: 1 counts, moe_experts is 2");
    expect_bad(H2 "expert_tokens step layer e0 e1\n1 1 3 4\n",
               "bad.baseline:15: expert_tokens: step 1 starts with layer 1, not 0");
    expect_bad(H2 "expert_tokens step layer e0 e1\n1 0 3 4\n1 2 3 4\n",
               "bad.baseline:16: expert_tokens: step 1: layer '2' is not a whole number in [0, 1]");
    expect_bad(H2 "expert_tokens step layer e0 e1\n1 0 3 4\n2 0 3 4\n",
               "bad.baseline:16: expert_tokens: step 2 layer 0: expected step 1 layer 1");
    expect_bad(H2 "expert_tokens step layer e0 e1\n3 0 3 4\n",
               "bad.baseline:15: expert_tokens: step 3 is not in the step table");
    expect_bad(H2 "expert_tokens step layer e0 e1\n2 0 3 4\n2 1 3 4\n1 0 3 4\n",
               "bad.baseline:17: expert_tokens: step 1 after step 2: steps must increase");
    expect_bad(H2 "expert_tokens step layer e0 e1\n1 0 3 4\n1 1 5 6\n2 0 7 8\n",
               "bad.baseline:18: expert_tokens: step 2 has 1 of its 2 layers (truncated file?)");
    expect_bad(H2 "expert_tokens step layer e0 e1\n1 0 3 4\n1 1 5 6\n",
               "bad.baseline:17: expert_tokens: routed_steps says 2 steps, the table has 1");
    expect_bad(H2, "bad.baseline:14: expert_tokens: missing (routed_steps says 2 steps");
    expect_bad(H2 "expert_tokens step layer e0 e2\n",
               "bad.baseline:14: expert_tokens: column 'e2': expected e1");
    expect_bad(H2 "expert_tokens step layer e0\n",
               "bad.baseline:14: expert_tokens: 1 expert columns, moe_experts is 2");
    expect_bad(H2 "expert_tokens layer step e0 e1\n",
               "bad.baseline:14: expert_tokens: the header must be 'expert_tokens step layer");
    expect_bad(V2_HEAD "moe_layers: 2\nmoe_experts: 2\nrouted_steps: 1\n" TABLE
               "expert_tokens step layer e0 e1\n1 0 1 1\n1 1 1 1\n2 0 1 1\n",
               "bad.baseline:17: expert_tokens: more steps than routed_steps (1) says");
    expect_bad(V2_HEAD "moe_layers: 0\n", "bad.baseline:8: moe_layers: '0' is not a whole number "
                                          "in [1, 1024]");
    expect_bad(V2_HEAD "moe_experts: 1025\n", "bad.baseline:8: moe_experts: '1025' is not a whole");
    expect_bad(V2_HEAD "moe_layers: 1000\nmoe_experts: 1000\nrouted_steps: 1\n" TABLE
               "expert_tokens step layer e0\n", "bad.baseline:14: moe_experts: 1000 layers x 1000 "
                                               "experts: more than 65536 counts per step");
    expect_bad(V2_HEAD "moe_layers: 2\nrouted_steps: 1\n" TABLE "expert_tokens step layer e0\n",
               "bad.baseline:13: moe_experts: missing before the expert_tokens section");
    expect_bad(V2_HEAD "routed_steps: x\n", "bad.baseline:8: routed_steps: 'x' is not a whole");
    expect_bad(V2_HEAD "moe_layers: 2\nmoe_layers: 2\n", "bad.baseline:9: moe_layers: given twice");
    /* format 1 has neither the keys nor the section */
    expect_bad("format: harness-baseline 1\nmoe_layers: 2\n",
               "bad.baseline:2: moe_layers: a key of format 'harness-baseline 2'");
    expect_bad("format: harness-baseline 1\nscenario: t\nscenario_hash: " HASH "\ndevice: cpu\n"
               "dtype: fp32\nworld_size: 1\nsteps: 2\n" TABLE "expert_tokens step layer e0\n",
               "bad.baseline:11: expert_tokens: a section of format 'harness-baseline 2'");
}

/* random damage to a valid format-2 file: every outcome is 0 or 2, never a crash (ASan) */
static void test_baseline_counts_damaged(void **state)
{
    (void)state;
    const char *good = V2_HEAD "moe_layers: 2\nmoe_experts: 2\nrouted_steps: 2\n" TABLE
                       "expert_tokens step layer e0 e1\n1 0 3 4\n1 1 5 6\n2 0 7 8\n2 1 9 10\n";
    size_t len = strlen(good);
    fflush(stderr);
    int saved = dup(2);
    int to = open("/dev/null", O_WRONLY);
    dup2(to, 2);
    close(to);
    uint64_t seed = 11;
    int ok = 0;
    for (int iter = 0; iter < 3000; iter++) {
        char *t = malloc(len);
        assert_non_null(t);
        memcpy(t, good, len);
        size_t n = len;
        /* damage in the counts' part of the file (after the step table's header) */
        size_t from = (size_t)(strstr(good, "step loss") - good);
        for (int e = 0, edits = 1 + (int)tu_uniform(&seed, 0, 3); e < edits && n > from; e++) {
            size_t at = from + (size_t)tu_uniform(&seed, 0, (double)(n - from));
            int kind = (int)tu_uniform(&seed, 0, 3);
            if (kind == 0)
                t[at] = (char)(int)tu_uniform(&seed, 0, 256);
            else if (kind == 1)
                n = at;
            else
                t[at] = " \n-09e\t"[(int)tu_uniform(&seed, 0, 8)];
        }
        baseline b;
        int rc = baseline_parse(t, n, "fuzz.baseline", &b);
        assert_true(rc == 0 || rc == 2);
        ok += rc == 0;
        if (rc == 0)
            baseline_free(&b);
        free(t);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_true(ok < 3000);
}

/* ---- compare -------------------------------------------------------------------------------- */

/* a table of n steps (1..n) of 2 x 3 counts: 100 each, with changes (step, cell, delta) */
static void table_of(routing_table *t, int n, const int *changes, int n_changes)
{
    t->layers = 2;
    t->experts = 3;
    t->n = n;
    t->steps = calloc((size_t)n, sizeof *t->steps);
    t->counts = calloc((size_t)n * 6, sizeof *t->counts);
    assert_true(t->steps && t->counts);
    for (int i = 0; i < n; i++) {
        t->steps[i] = i + 1;
        for (int c = 0; c < 6; c++)
            t->counts[i * 6 + c] = 100;
    }
    for (int k = 0; k < n_changes; k++)
        t->counts[(changes[3 * k] - 1) * 6 + changes[3 * k + 1]] += changes[3 * k + 2];
}

static void test_compare_drift_figures(void **state)
{
    (void)state;
    routing_table base, run;
    table_of(&base, 6, NULL, 0);
    /* step 3: layer 0 expert 1 +5 (5 %); step 5: layer 1 expert 2 +30 (30 %), layer 1 expert 0
     * -20 (20 %) */
    int changes[] = {3, 1, 5, 5, 5, 30, 5, 3, -20};
    table_of(&run, 6, changes, 3);
    routing_drift d;
    compare_routing(&run, &base, -1, &d);
    assert_int_equal(d.compared, 6);
    assert_int_equal(d.first_diff_step, 3);
    assert_false(d.gated);
    assert_int_equal(d.failed, 0);
    assert_int_equal(d.first_fail_step, 0);
    assert_true(d.max_abs == 30);
    assert_int_equal(d.max_abs_step, 5);
    assert_int_equal(d.max_abs_layer, 1);
    assert_int_equal(d.max_abs_expert, 2);
    assert_true(d.max_rel == 0.3);
    assert_int_equal(d.max_rel_step, 5);
    /* rtol 0.1: step 3 (5 %) within, step 5 past; its first cell past is layer 1 expert 0 */
    compare_routing(&run, &base, 0.1, &d);
    assert_true(d.gated);
    assert_int_equal(d.failed, 1);
    assert_int_equal(d.first_fail_step, 5);
    assert_int_equal(d.first_fail_layer, 1);
    assert_int_equal(d.first_fail_expert, 0);
    assert_int_equal(d.first_fail_value, 80);
    assert_int_equal(d.first_fail_ref, 100);
    /* rtol 0.01: step 3 fails first */
    compare_routing(&run, &base, 0.01, &d);
    assert_int_equal(d.first_fail_step, 3);
    assert_int_equal(d.failed, 2);
    /* per step figures */
    double abs, rel;
    size_t at;
    routing_step_diff(routing_counts(&run, 4), routing_counts(&base, 4), 6, &abs, &rel, &at);
    assert_true(abs == 30 && rel == 0.3 && at == 5);
    routing_step_diff(routing_counts(&run, 0), routing_counts(&base, 0), 6, &abs, &rel, &at);
    assert_true(abs == 0 && rel == 0);
    /* a count the baseline has as 0: relative difference infinite */
    base.counts[0] = 0;
    compare_routing(&run, &base, -1, &d);
    assert_true(isinf(d.max_rel));
    assert_int_equal(d.first_diff_step, 1);
    /* other shapes: not compared; a failure only with the tolerance */
    routing_table other;
    table_of(&other, 6, NULL, 0);
    other.experts = 2;
    other.layers = 3;
    compare_routing(&run, &other, -1, &d);
    assert_true(d.shape_differs && !d.failed && !d.compared);
    compare_routing(&run, &other, 0.5, &d);
    assert_true(d.shape_differs && d.failed);
    routing_table_free(&other);
    routing_table_free(&run);
    routing_table_free(&base);
}

/* the verdict: the tolerance fails it with the first step past it; without one it passes */
static void test_compare_verdict(void **state)
{
    (void)state;
    step_record steps[6];
    for (int i = 0; i < 6; i++)
        steps[i] = plain_step(i + 1);
    series s = {steps, 6, "ok"};
    routing_table base, run;
    table_of(&base, 6, NULL, 0);
    int changes[] = {4, 2, 50};
    table_of(&run, 6, changes, 1);
    compare_config c;
    compare_defaults("fp32", &c);
    assert_true(c.expert_tokens_rtol < 0);
    compare_result r;
    compare_runs_routed(&s, &s, &run, &base, &c, &r);
    assert_int_equal(r.v, VERDICT_PASS);
    assert_int_equal(r.routing.first_diff_step, 4);
    c.expert_tokens_rtol = 0.2;
    compare_runs_routed(&s, &s, &run, &base, &c, &r);
    assert_int_equal(r.v, VERDICT_FAIL);
    assert_int_equal(r.first_fail_step, 4);
    assert_string_equal(r.first_fail_metric, "expert_tokens");
    assert_non_null(strstr(r.reason, "expert_tokens at step 4, layer 0, expert 2: 150 vs 100"));
    /* only one side with counts: informational */
    compare_runs_routed(&s, &s, &run, NULL, &c, &r);
    assert_int_equal(r.v, VERDICT_PASS);
    assert_int_equal(r.routing.run_steps, 6);
    assert_int_equal(r.routing.base_steps, 0);
    /* the scenario's tolerance reaches the config */
    compare_config sc;
    assert_int_equal(scenario_compare_config("{\"tolerances\":{\"expert_tokens_rtol\":0.25}}",
                                             "fp32", "fp32", &sc, NULL, 0), 0);
    assert_true(sc.expert_tokens_rtol == 0.25);
    assert_int_equal(scenario_compare_config("{\"tolerances\":{\"expert_tokens_rtol\":-1}}",
                                             "fp32", "fp32", &sc, NULL, 0), 2);
    routing_table_free(&run);
    routing_table_free(&base);
}

/* two trained runs whose routing drifts from step 3: compare through the store and the
 * command, with the scenario's tolerance */
static void test_compare_runs_end_to_end(void **state)
{
    (void)state;
    const char *db = tu_temp_path(".db");
    const char *scn = tiny_scenario(0.5);
    scenario s;
    assert_int_equal(scenario_load(scn, &s), 0);
    assert_true(s.expert_tokens_rtol == 0.5);
    scenario_free(&s);
    int64_t base = fake_run(scn, db, 5, 0);
    int64_t run = fake_run(scn, db, 5, 3); /* +5 tokens at step 3, +60 from step 4 */
    store *st;
    assert_int_equal(store_open(db, &st), 0);
    char spec[32];
    snprintf(spec, sizeof spec, "%lld", (long long)base);
    baseline_query q = {spec, NULL, NULL, 0, -1, NULL, NULL, NULL};
    judgement j;
    assert_int_equal(judge_run(st, run, &q, &j), 0);
    const routing_drift *d = &j.res.routing;
    assert_int_equal(d->compared, 5);
    assert_int_equal(d->first_diff_step, 3);
    assert_true(d->max_abs == 60);
    assert_int_equal(d->max_abs_step, 4);
    assert_int_equal(d->max_abs_layer, 1);
    assert_int_equal(d->max_abs_expert, 2);
    /* 60 tokens past 0.5 of the baseline's count at step 4 only where that count < 120 */
    int64_t ref4 = made_up(4, 1, 2), ref5 = made_up(5, 1, 2);
    int want_fail = 60 > 0.5 * (double)ref4 ? 4 : 60 > 0.5 * (double)ref5 ? 5 : 0;
    assert_true(5 <= 0.5 * (double)made_up(3, 1, 2)); /* step 3 within */
    assert_int_equal(d->first_fail_step, want_fail);
    assert_int_equal(j.res.v, want_fail ? VERDICT_FAIL : VERDICT_PASS);
    judge_free(&j);
    store_close(st);
    char ids[32], *out;
    snprintf(ids, sizeof ids, "%lld", (long long)run);
    char *argv[] = {"compare", ids, "--baseline", spec, "--db", (char *)db, "--json", NULL};
    int rc = capture(1, cmd_compare, 7, argv, &out);
    assert_int_equal(rc, want_fail ? 1 : 0);
    json_t *root = json_loads(out, 0, NULL);
    assert_non_null(root);
    json_t *et = json_object_get(root, "expert_tokens");
    assert_int_equal(json_integer_value(json_object_get(et, "first_differing_step")), 3);
    assert_true(json_real_value(json_object_get(et, "rtol")) == 0.5);
    assert_int_equal(json_array_size(json_object_get(et, "steps")), 5);
    json_t *s3 = json_array_get(json_object_get(et, "steps"), 2);
    assert_int_equal(json_integer_value(json_object_get(s3, "step")), 3);
    assert_true(json_number_value(json_object_get(s3, "max_abs")) == 5);
    assert_true(json_number_value(json_object_get(s3, "max_rel")) ==
                5.0 / (double)made_up(3, 1, 2));
    json_decref(root);
    free(out);
    assert_int_equal(capture(1, cmd_compare, 6, argv, &out), want_fail ? 1 : 0);
    assert_non_null(strstr(out, "routing     5 steps compared (3 layers x 4 experts); first "
                                "differing step 3; max |diff| 60 tokens (step 4, layer 1, "
                                "expert 2)"));
    free(out);
    remove_db(db);
    unlink(scn);
}

/* ---- report --------------------------------------------------------------------------------- */

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size > 0;
}

static void test_report_routing(void **state)
{
    (void)state;
    const char *db = tu_temp_path(".db");
    const char *scn = tiny_scenario(-1);
    int64_t base = fake_run(scn, db, 4, 0);
    int64_t run = fake_run(scn, db, 4, 2);
    char out_dir[256], spec[32], ids[32], path[400];
    snprintf(out_dir, sizeof out_dir, "%s", tu_temp_path(".report"));
    snprintf(spec, sizeof spec, "%lld", (long long)base);
    snprintf(ids, sizeof ids, "%lld", (long long)run);
    char *argv[] = {"report", ids, "--baseline", spec, "--db", (char *)db, "--out", out_dir, NULL};
    char *out;
    assert_int_equal(capture(1, cmd_report, 8, argv, &out), 0);
    free(out);
    snprintf(path, sizeof path, "%s/report.md", out_dir);
    char *md = slurp(path);
    assert_non_null(md);
    char want[200];
    snprintf(want, sizeof want, "first at step 2; max 60 tokens (step 3, layer 1, expert 2)");
    if (!strstr(md, want))
        fail_msg("no '%s' in:\n%s", want, md);
    assert_non_null(strstr(md, "informational"));
    free(md);
    snprintf(path, sizeof path, "%s/report.csv", out_dir);
    char *csv = slurp(path);
    assert_non_null(csv);
    assert_non_null(strstr(csv, ",4,2,60,")); /* routing_steps, first diff, max abs */
    free(csv);
    snprintf(path, sizeof path, "%s/plots/plots_1.gp", out_dir);
    char *gp = slurp(path);
    assert_non_null(gp);
    assert_non_null(strstr(gp, "$routing1 << EOD\n"));
    assert_non_null(strstr(gp, "layer 1 (the most drift from the baseline)"));
    free(gp);
    snprintf(path, sizeof path, "%s/plots/routing_1.png", out_dir);
    if (access("/usr/bin/gnuplot", X_OK) == 0)
        assert_true(exists(path));
    remove_db(db);
    unlink(scn);
}

/* ---- the HARNESS_STEP field ------------------------------------------------------------------ */

static void test_step_line_field(void **state)
{
    (void)state;
    lp_reader rd;
    char err[256];
    assert_int_equal(lp_reader_init(&rd, NULL, NULL, err, sizeof err), 0);
    const char *line = "HARNESS_STEP {\"v\":1,\"step\":2,\"loss\":1.5,\"expert_tokens\":[[1,2],[3,4]]}";
    lp_event ev;
    assert_int_equal(lp_read_line(&rd, line, strlen(line), &ev), 1);
    assert_true(ev.has_step);
    assert_non_null(ev.step.expert_tokens);
    assert_int_equal(ev.step.expert_tokens_len, strlen("[[1,2],[3,4]]"));
    int64_t *c = NULL;
    size_t cap = 0;
    int layers, experts;
    char why[160];
    assert_int_equal(lp_expert_tokens(ev.step.expert_tokens, ev.step.expert_tokens_len, &c, &cap,
                                      &layers, &experts, why, sizeof why), 0);
    assert_int_equal(layers, 2);
    assert_int_equal(experts, 2);
    assert_int_equal(c[3], 4);
    /* a field that is not an array is ignored, the step kept */
    const char *other = "HARNESS_STEP {\"v\":1,\"step\":3,\"loss\":1.5,\"expert_tokens\":7}";
    assert_int_equal(lp_read_line(&rd, other, strlen(other), &ev), 1);
    assert_null(ev.step.expert_tokens);
    free(c);
}

static void test_step_line_hostile_counts(void **state)
{
    (void)state;
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"[]", "not an array of layers"},
        {"[1,2]", "not an array of layers"},
        {"[[]]", "0 experts: not in [1, 1024]"},
        {"[[1,-1]]", "layer 0, expert 1: not a whole number >= 0"},
        {"[[1.5]]", "layer 0, expert 0: not a whole number >= 0"},
        {"[[\"1\"]]", "layer 0, expert 0: not a whole number >= 0"},
        {"[[1],[2,3]]", "layer 1: not an array of 1 counts"},
        {"[[1],7]", "layer 1: not an array of 1 counts"},
        {"[[[1]]]", "layer 0, expert 0: not a whole number >= 0"},
        {"[[1]", "not JSON"},
        {"[[99999999999999999999]]", "not JSON"},
    };
    int64_t *c = NULL;
    size_t cap = 0;
    int layers = -1, experts = -1;
    char why[160];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = lp_expert_tokens(bad[i].text, strlen(bad[i].text), &c, &cap, &layers, &experts,
                                  why, sizeof why);
        if (rc != -1 || !strstr(why, bad[i].why))
            fail_msg("'%s': rc %d, '%s', wanted '%s'", bad[i].text, rc, why, bad[i].why);
        assert_int_equal(layers, -1); /* nothing set */
    }
    /* 1025 layers: over the limit */
    size_t n = 2 + 1025 * 4;
    char *big = malloc(n + 1);
    assert_non_null(big);
    size_t used = 0;
    big[used++] = '[';
    for (int l = 0; l < 1025; l++)
        used += (size_t)sprintf(big + used, "%s[1]", l ? "," : "");
    big[used++] = ']';
    big[used] = 0;
    assert_int_equal(lp_expert_tokens(big, used, &c, &cap, &layers, &experts, why, sizeof why), -1);
    assert_non_null(strstr(why, "1025 layers x 1 experts: over the limits"));
    free(big);
    free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_round_trip),
        cmocka_unit_test(test_store_bad_counts_roll_back),
        cmocka_unit_test(test_store_cost_printed),
        cmocka_unit_test(test_put_step_keeps_counts),
        cmocka_unit_test(test_migrate_5_to_6),
        cmocka_unit_test(test_store_malformed_rows),
        cmocka_unit_test(test_train_records_counts),
        cmocka_unit_test(test_train_refuses_huge_shape),
        cmocka_unit_test(test_show_text_and_json),
        cmocka_unit_test(test_baseline_round_trip),
        cmocka_unit_test(test_baseline_without_counts_is_format_1),
        cmocka_unit_test(test_hostile_baseline_counts),
        cmocka_unit_test(test_baseline_counts_damaged),
        cmocka_unit_test(test_compare_drift_figures),
        cmocka_unit_test(test_compare_verdict),
        cmocka_unit_test(test_compare_runs_end_to_end),
        cmocka_unit_test(test_report_routing),
        cmocka_unit_test(test_step_line_field),
        cmocka_unit_test(test_step_line_hostile_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
