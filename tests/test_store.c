/* tests/test_store.c: the SQLite store: schema and migrations, run/step round trips (NaN, Inf),
 * the killed-run rule, refusing files that are not stores, read-only opening, add_step cost. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include "cli/commands.h"
#include "store/store.h"
#include "testutil.h"
#include "util/util.h"

/* ---- helpers ----------------------------------------------------------------------------- */

static const run_meta META = {
    .scenario = "tiny-gpt2", .scenario_json = "{\"name\": \"tiny-gpt2\"}",
    .scenario_hash = "abc123", .device = "cpu", .device_name = "Test CPU",
    .vendor = "TestVendor", .driver_version = "drv 1", .runtime_version = "rt 2",
    .world_size = 1, .dtype = "fp32", .host = "testhost", .git_commit = "deadbeef",
    .harness_version = "0.1.0", .mem_total_bytes = 1LL << 34,
};

static step_record make_step(int i)
{
    step_record r = {
        .step = i, .loss = 10.0 / (i + 1) + 1e-7 * i, .grad_norm = 1.5 + i, .lr = 6e-4,
        .tokens = 512, .step_ms = 12.5 + i, .tokens_per_s = 40960.0 - i,
        .mem_peak_bytes = 1000000 + i, .mem_used_bytes = 900000 + i,
        .mem_total_bytes = 1LL << 34, .threads = i % 3, /* 0: unknown, stored as NULL */
    };
    return r;
}

/* a new store at a fresh path with one run of n steps; returns the path */
static const char *make_store(int n, int64_t *run_id)
{
    const char *path = tu_temp_path(".db");
    store *st;
    assert_int_equal(store_open(path, &st), 0);
    assert_int_equal(store_begin_run(st, &META, run_id), 0);
    for (int i = 0; i < n; i++) {
        step_record r = make_step(i);
        assert_int_equal(store_add_step(st, *run_id, &r), 0);
    }
    store_close(st);
    return path;
}

static void remove_db(const char *path)
{
    char side[512];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-journal", path);
    unlink(side);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* one integer from a SQL query through a plain sqlite connection */
static long long raw_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    long long v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

static int raw_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* ---- schema ------------------------------------------------------------------------------ */

static void test_schema_created(void **state)
{
    (void)state;
    const char *path = tu_temp_path(".db");
    store *st;
    assert_int_equal(store_open(path, &st), 0);
    store_close(st);
    assert_true(store_schema_version() >= 1);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), store_schema_version());
    assert_int_equal(raw_int(path, "PRAGMA application_id"), 0x48524e53);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
                                   " name IN ('runs', 'steps', 'evals', 'baselines',"
                                   " 'comparisons')"), 5);
    /* WAL is persistent in the file: a plain connection sees it */
    sqlite3 *db;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
    sqlite3_finalize(s);
    sqlite3_close(db);
    remove_db(path);
}

static void test_reopen_does_not_migrate_again(void **state)
{
    (void)state;
    int64_t id;
    const char *path = make_store(2, &id);
    /* migration 1 creates tables without IF NOT EXISTS: running it again would fail */
    store *st;
    assert_int_equal(store_open(path, &st), 0);
    run_row row;
    assert_int_equal(store_get_run(st, id, &row), 0);
    assert_int_equal(row.n_steps, 2);
    store_close(st);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), store_schema_version());
    assert_int_equal(raw_int(path, "SELECT count(*) FROM runs"), 1);
    remove_db(path);
}

static void test_newer_schema_refused(void **state)
{
    (void)state;
    int64_t id;
    const char *path = make_store(1, &id);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", store_schema_version() + 1);
    assert_int_equal(raw_exec(path, sql), SQLITE_OK);
    store *st = (store *)1;
    assert_int_equal(store_open(path, &st), 2);
    assert_null(st);
    assert_int_equal(store_open_readonly(path, &st), 2);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), store_schema_version() + 1);
    remove_db(path);
}

/* ---- round trips ------------------------------------------------------------------------- */

static void assert_same_double(double a, double b)
{
    if (isnan(b))
        assert_true(isnan(a));
    else
        assert_memory_equal(&a, &b, sizeof a); /* bit-exact, sign of infinities included */
}

static void check_run_row(const run_row *row, int64_t id, int n, const char *status)
{
    assert_int_equal(row->id, id);
    assert_string_equal(row->scenario, META.scenario);
    assert_string_equal(row->scenario_hash, META.scenario_hash);
    assert_string_equal(row->device, META.device);
    assert_string_equal(row->device_name, META.device_name);
    assert_string_equal(row->dtype, META.dtype);
    assert_string_equal(row->host, META.host);
    assert_string_equal(row->git_commit, META.git_commit);
    assert_string_equal(row->harness_version, META.harness_version);
    assert_string_equal(row->status, status);
    assert_int_equal(row->world_size, META.world_size);
    assert_int_equal(row->mem_total_bytes, META.mem_total_bytes);
    assert_int_equal(row->n_steps, n);
    assert_int_equal(strlen(row->started_at), 20); /* 2024-01-02T03:04:05Z */
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *path = tu_temp_path(".db");
    store *st;
    int64_t id;
    assert_int_equal(store_open(path, &st), 0);
    assert_int_equal(store_begin_run(st, &META, &id), 0);
    step_record in[6];
    for (int i = 0; i < 6; i++)
        in[i] = make_step(i);
    in[2].loss = NAN;
    in[3].loss = INFINITY;
    in[4].loss = -INFINITY;
    in[4].grad_norm = NAN;
    in[5].loss = 2.000000123456789; /* full double precision, not a text rounding */
    for (int i = 0; i < 6; i++)
        assert_int_equal(store_add_step(st, id, &in[i]), 0);
    run_row row;
    assert_int_equal(store_get_run(st, id, &row), 0);
    check_run_row(&row, id, 6, "running");
    assert_string_equal(row.finished_at, "");
    assert_int_equal(store_finish_run(st, id, "ok", NULL), 0);
    store_close(st);

    assert_int_equal(store_open_readonly(path, &st), 0);
    assert_int_equal(store_get_run(st, id, &row), 0);
    check_run_row(&row, id, 6, "ok");
    assert_int_equal(strlen(row.finished_at), 20);
    assert_same_double(row.last_loss, in[5].loss);
    step_record *out;
    int n;
    assert_int_equal(store_get_steps(st, id, &out, &n), 0);
    assert_int_equal(n, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(out[i].step, in[i].step);
        assert_same_double(out[i].loss, in[i].loss);
        assert_same_double(out[i].grad_norm, in[i].grad_norm);
        assert_same_double(out[i].lr, in[i].lr);
        assert_same_double(out[i].step_ms, in[i].step_ms);
        assert_same_double(out[i].tokens_per_s, in[i].tokens_per_s);
        assert_int_equal(out[i].tokens, in[i].tokens);
        assert_int_equal(out[i].mem_peak_bytes, in[i].mem_peak_bytes);
        assert_int_equal(out[i].mem_used_bytes, in[i].mem_used_bytes);
        assert_int_equal(out[i].mem_total_bytes, in[i].mem_total_bytes);
        assert_int_equal(out[i].threads, in[i].threads);
    }
    free(out);
    char *json = store_get_run_json(st, id);
    assert_non_null(json);
    assert_string_equal(json, META.scenario_json);
    free(json);
    run_device dev;
    assert_int_equal(store_get_run_device(st, id, &dev), 0);
    assert_string_equal(dev.vendor, META.vendor);
    assert_string_equal(dev.driver_version, META.driver_version);
    assert_string_equal(dev.runtime_version, META.runtime_version);
    store_close(st);
    remove_db(path);
}

static void test_nonfinite_stored_as_text(void **state)
{
    (void)state;
    const char *path = tu_temp_path(".db");
    store *st;
    int64_t id;
    assert_int_equal(store_open(path, &st), 0);
    assert_int_equal(store_begin_run(st, &META, &id), 0);
    step_record r = make_step(0);
    r.loss = NAN;
    assert_int_equal(store_add_step(st, id, &r), 0);
    store_close(st);
    assert_int_equal(raw_int(path, "SELECT loss = 'nan' AND typeof(loss) = 'text' FROM steps"), 1);
    remove_db(path);
}

static int count_runs(const run_row *r, void *arg)
{
    (void)r;
    (*(int *)arg)++;
    return 0;
}

static int stop_at_first(const run_row *r, void *arg)
{
    *(int64_t *)arg = r->id;
    return 7;
}

static void test_each_run_newest_first(void **state)
{
    (void)state;
    int64_t first, id;
    const char *path = make_store(1, &first);
    store *st;
    assert_int_equal(store_open(path, &st), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(store_begin_run(st, &META, &id), 0);
    int n = 0;
    assert_int_equal(store_each_run(st, 0, count_runs, &n), 0);
    assert_int_equal(n, 4);
    n = 0;
    assert_int_equal(store_each_run(st, 2, count_runs, &n), 0);
    assert_int_equal(n, 2);
    int64_t seen = 0;
    assert_int_equal(store_each_run(st, 0, stop_at_first, &seen), 7);
    assert_int_equal(seen, id);
    store_close(st);
    remove_db(path);
}

static void test_bad_writes_refused(void **state)
{
    (void)state;
    int64_t id;
    const char *path = make_store(2, &id);
    store *st;
    assert_int_equal(store_open(path, &st), 0);
    step_record r = make_step(1);
    assert_int_equal(store_add_step(st, id, &r), 1);      /* duplicate step */
    assert_int_equal(store_add_step(st, id + 100, &r), 1); /* no such run (foreign key) */
    assert_int_equal(store_finish_run(st, id, "bogus", NULL), 1);
    assert_int_equal(store_finish_run(st, id + 100, "ok", NULL), 1);
    assert_int_equal(store_finish_run(st, id, "diverged", "loss is nan at step 3"), 0);
    assert_int_equal(store_finish_run(st, id, "ok", NULL), 1); /* finished once only */
    run_row row;
    assert_int_equal(store_get_run(st, id, &row), 0);
    assert_string_equal(row.status, "diverged");
    assert_string_equal(row.error, "loss is nan at step 3");
    assert_int_equal(store_get_run(st, id + 100, &row), 1);
    store_close(st);
    /* the CHECK constraint holds for any writer, not only this API */
    assert_int_equal(raw_exec(path, "UPDATE runs SET status = 'bogus'"), SQLITE_CONSTRAINT);
    assert_int_equal(store_open_readonly(path, &st), 0);
    assert_int_equal(store_add_step(st, id, &r), 1);
    assert_int_equal(store_begin_run(st, &META, &id), 1);
    store_close(st);
    remove_db(path);
}

/* ---- the killed-run rule ----------------------------------------------------------------- */

/* child: begins a run, records 3 steps, reports the run id on fd, then stops without finishing:
 * _exit (how != 0) or waits to be SIGKILLed */
static void child_run(const char *path, int fd, int how)
{
    store *st;
    int64_t id;
    if (store_open(path, &st) || store_begin_run(st, &META, &id))
        _exit(3);
    for (int i = 0; i < 3; i++) {
        step_record r = make_step(i);
        if (store_add_step(st, id, &r))
            _exit(4);
    }
    if (write(fd, &id, sizeof id) != (ssize_t)sizeof id)
        _exit(5);
    if (how)
        _exit(0);
    for (;;)
        pause();
}

static void check_killed_run(int sigkill)
{
    const char *path = tu_temp_path(".db");
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child_run(path, fds[1], !sigkill);
    }
    close(fds[1]);
    int64_t id = 0;
    assert_int_equal(read(fds[0], &id, sizeof id), sizeof id);
    close(fds[0]);
    if (sigkill)
        assert_int_equal(kill(pid, SIGKILL), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (sigkill)
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    else
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    store *st;
    run_row row;
    assert_int_equal(store_open_readonly(path, &st), 0);
    assert_int_equal(store_get_run(st, id, &row), 0);
    assert_int_equal(row.n_steps, 3);
    assert_string_equal(row.status, "running");
    assert_string_equal(row.finished_at, "");
    store_close(st);
    remove_db(path);
}

static void test_killed_run_exit(void **state)
{
    (void)state;
    check_killed_run(0);
}

static void test_killed_run_sigkill(void **state)
{
    (void)state;
    check_killed_run(1);
}

/* ---- files that are not stores ----------------------------------------------------------- */

static void check_refused_untouched(const char *path, const void *data, size_t n)
{
    store *st = (store *)1;
    assert_int_equal(store_open(path, &st), 2);
    assert_null(st);
    assert_int_equal(store_open_readonly(path, &st), 2);
    size_t len;
    char *after = read_file(path, &len);
    assert_non_null(after);
    assert_int_equal(len, n);
    assert_memory_equal(after, data, n);
    free(after);
    char side[512];
    snprintf(side, sizeof side, "%s-wal", path);
    assert_false(exists(side));
    snprintf(side, sizeof side, "%s-shm", path);
    assert_false(exists(side));
    snprintf(side, sizeof side, "%s-journal", path);
    assert_false(exists(side));
}

static void test_not_a_database_refused(void **state)
{
    (void)state;
    unsigned char bytes[4096];
    uint64_t seed = 42;
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (unsigned char)(tu_uniform(&seed, 0, 256));
    const char *path = tu_temp_path(".db");
    write_bytes(path, bytes, sizeof bytes);
    check_refused_untouched(path, bytes, sizeof bytes);
    const char text[] = "step,loss\n1,2.5\n2,2.4\n";
    write_bytes(path, text, sizeof text - 1);
    check_refused_untouched(path, text, sizeof text - 1);
    write_bytes(path, "SQLite", 6); /* shorter than the header */
    check_refused_untouched(path, "SQLite", 6);
    remove_db(path);
}

static void test_corrupt_database_refused(void **state)
{
    (void)state;
    int64_t id;
    const char *path = make_store(3, &id);
    size_t n;
    char *data = read_file(path, &n);
    assert_non_null(data);
    assert_true(n > 1024);
    memset(data + 100, 0xA5, n - 100); /* keep the header, wreck the pages */
    write_bytes(path, data, n);
    check_refused_untouched(path, data, n);
    free(data);
    remove_db(path);
}

static void test_foreign_sqlite_refused(void **state)
{
    (void)state;
    const char *path = tu_temp_path(".db");
    assert_int_equal(raw_exec(path, "CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES('hi')"),
                     SQLITE_OK);
    size_t n;
    char *data = read_file(path, &n);
    assert_non_null(data);
    check_refused_untouched(path, data, n);
    free(data);
    remove_db(path);
}

static void test_readonly_leaves_no_files(void **state)
{
    (void)state;
    int64_t id;
    const char *path = make_store(2, &id);
    size_t n;
    char *before = read_file(path, &n);
    assert_non_null(before);
    store *st;
    run_row row;
    assert_int_equal(store_open_readonly(path, &st), 0);
    assert_int_equal(store_get_run(st, id, &row), 0);
    assert_int_equal(raw_exec(path, "SELECT 1"), SQLITE_OK); /* a second reader meanwhile */
    store_close(st);
    char side[512];
    snprintf(side, sizeof side, "%s-wal", path);
    assert_false(exists(side));
    snprintf(side, sizeof side, "%s-shm", path);
    assert_false(exists(side));
    size_t m;
    char *after = read_file(path, &m);
    assert_non_null(after);
    assert_int_equal(m, n);
    assert_memory_equal(after, before, n);
    free(before);
    free(after);
    remove_db(path);
}

static void test_readonly_missing_fails(void **state)
{
    (void)state;
    const char *path = tu_temp_path(".db");
    store *st = (store *)1;
    assert_int_equal(store_open_readonly(path, &st), 2);
    assert_null(st);
    assert_false(exists(path));
    assert_int_equal(store_open("/nonexistent-dir/x/harness.db", &st), 2);
    /* an empty file is a database SQLite would accept, but holds no store */
    write_bytes(path, "", 0);
    assert_int_equal(store_open_readonly(path, &st), 2);
    remove_db(path);
}

/* ---- cost of store_add_step (printed, never asserted) -------------------------------------- */

static void test_add_step_cost(void **state)
{
    (void)state;
    const char *path = tu_temp_path(".db");
    store *st;
    int64_t id;
    assert_int_equal(store_open(path, &st), 0);
    assert_int_equal(store_begin_run(st, &META, &id), 0);
    enum { N = 2000 };
    double t0 = now_ms();
    for (int i = 0; i < N; i++) {
        step_record r = make_step(i);
        assert_int_equal(store_add_step(st, id, &r), 0);
    }
    double per_call_us = (now_ms() - t0) * 1e3 / N;
    store_close(st);
    print_message("store_add_step: %.1f us per call (%d calls, one commit each)\n", per_call_us,
                  N);
    remove_db(path);
}

/* ---- the runs and show commands ------------------------------------------------------------ */

/* runs fn(argc, argv) with stdout sent to a file; returns what it printed (caller frees) */
static char *capture(int (*fn)(int, char **), int *rc, int argc, ...)
{
    char *argv[16];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    argv[argc] = NULL;
    const char *out = tu_temp_path(".out");
    fflush(stdout);
    int saved = dup(1), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 1);
    close(fd);
    *rc = fn(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    char *text = read_file(out, NULL);
    assert_non_null(text);
    unlink(out);
    return text;
}

static void test_cmd_show(void **state)
{
    (void)state;
    int64_t id;
    const char *path = make_store(3, &id);
    char run[32];
    snprintf(run, sizeof run, "%lld", (long long)id);
    int rc;
    char *text = capture(cmd_show, &rc, 4, "show", run, "--db", (char *)path);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(text, "tiny-gpt2"));
    assert_non_null(strstr(text, "3.33333353")); /* step 2 loss 10/3 + 2e-7, %.9g */
    assert_non_null(strstr(text, "5.0000001"));  /* step 1 loss 10/2 + 1e-7 */
    free(text);
    text = capture(cmd_show, &rc, 5, "show", "--json", run, "--db", (char *)path);
    assert_int_equal(rc, 0);
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    assert_non_null(root);
    assert_int_equal(json_array_size(json_object_get(root, "steps")), 3);
    assert_string_equal(json_string_value(json_object_get(root, "status")), "running");
    json_decref(root);
    free(text);
    text = capture(cmd_show, &rc, 4, "show", "999", "--db", (char *)path);
    assert_int_equal(rc, 2);
    free(text);
    text = capture(cmd_show, &rc, 4, "show", "x1", "--db", (char *)path);
    assert_int_equal(rc, 2);
    free(text);
    remove_db(path);
}

static void test_cmd_runs(void **state)
{
    (void)state;
    int64_t id;
    const char *path = make_store(2, &id);
    int rc;
    char *text = capture(cmd_runs, &rc, 3, "runs", "--db", (char *)path);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(text, "tiny-gpt2"));
    assert_non_null(strstr(text, "running"));
    free(text);
    text = capture(cmd_runs, &rc, 5, "runs", "--json", "--limit=1", "--db", (char *)path);
    assert_int_equal(rc, 0);
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    assert_non_null(root);
    assert_int_equal(json_array_size(root), 1);
    json_t *r0 = json_array_get(root, 0);
    assert_int_equal(json_integer_value(json_object_get(r0, "n_steps")), 2);
    json_decref(root);
    free(text);
    text = capture(cmd_runs, &rc, 5, "runs", "--limit", "ten", "--db", (char *)path);
    assert_int_equal(rc, 2);
    free(text);
    const char *missing = tu_temp_path(".db");
    text = capture(cmd_runs, &rc, 3, "runs", "--db", (char *)missing);
    assert_int_equal(rc, 2);
    assert_false(exists(missing));
    free(text);
    remove_db(path);
}


/* ---- creating one store from several processes at once (issue 8, item 7) ----------------- */

enum { RACE_PROCS = 4, RACE_ROUNDS = 300, RACE_SECONDS = 20 };

/* child: waits until the parent releases every child at once, then opens (creating) the store;
 * exits 0 when it opened, 1 when it did not */
static void child_create(const char *path, int go_fd)
{
    char c;
    if (read(go_fd, &c, 1) != 0) /* EOF: the parent closed the pipe, go */
        _exit(3);
    store *st;
    int rc = store_open(path, &st);
    store_close(st);
    _exit(rc ? 1 : 0);
}

/* one round: RACE_PROCS processes create a new store at path together; returns the failures */
static int race_round(const char *path)
{
    int go[2];
    pid_t pids[RACE_PROCS];
    assert_int_equal(pipe(go), 0);
    fflush(NULL);
    for (int i = 0; i < RACE_PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            close(go[1]);
            child_create(path, go[0]);
        }
    }
    close(go[0]);
    close(go[1]);
    int failed = 0;
    for (int i = 0; i < RACE_PROCS; i++) {
        int status;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    return failed;
}

static void test_concurrent_create(void **state)
{
    (void)state;
    time_t start = time(NULL);
    int rounds = 0, failed = 0;
    for (; rounds < RACE_ROUNDS && time(NULL) - start < RACE_SECONDS; rounds++) {
        const char *path = tu_temp_path(".db");
        int f = race_round(path);
        if (f)
            fprintf(stderr, "round %d: %d of %d processes failed to create %s\n", rounds, f,
                    RACE_PROCS, path);
        failed += f;
        if (!f)
            assert_int_equal(raw_int(path, "PRAGMA user_version"), store_schema_version());
        remove_db(path);
    }
    fprintf(stderr, "concurrent create: %d rounds of %d processes, %d failures\n", rounds,
            RACE_PROCS, failed);
    assert_true(rounds >= 10);
    assert_int_equal(failed, 0);
}

/* ---- host facts and imported runs (schema 3) --------------------------------------------- */

static void test_host_facts_and_imported(void **state)
{
    (void)state;
    const char *path = tu_temp_path(".db");
    store *st;
    assert_int_equal(store_open(path, &st), 0);
    run_meta m = META;
    m.threads = 3;
    m.load_avg = 1.25;
    int64_t native, unknown, imported, later;
    assert_int_equal(store_begin_run(st, &m, &native), 0);
    assert_int_equal(store_finish_run(st, native, "ok", NULL), 0);
    m.threads = 0;
    m.load_avg = NAN;
    assert_int_equal(store_begin_run(st, &m, &unknown), 0);
    step_record r = make_step(1);
    run_import in = {.meta = META, .steps = &r, .n_steps = 1};
    in.meta.threads = 8;
    in.meta.load_avg = 0.5;
    assert_int_equal(store_import_run(st, &in, &imported), 0);
    assert_int_equal(store_begin_run(st, &META, &later), 0);
    run_row row;
    assert_int_equal(store_get_run(st, native, &row), 0);
    assert_int_equal(row.threads, 3);
    assert_true(row.load_avg == 1.25);
    assert_int_equal(row.imported, 0);
    assert_int_equal(store_get_run(st, unknown, &row), 0);
    assert_int_equal(row.threads, 0);
    assert_true(isnan(row.load_avg));
    assert_int_equal(store_get_run(st, imported, &row), 0);
    assert_int_equal(row.threads, 8);
    assert_true(row.load_avg == 0.5);
    assert_int_equal(row.imported, 1);
    store_close(st);
    remove_db(path);
}

/* a schema-2 store (made by dropping what 3, 4, 5, 6 and 7 add) migrates: runs with extra metadata keys,
 * which only imports wrote, are marked imported */
static void test_migrate_2_to_current(void **state)
{
    (void)state;
    int64_t native;
    const char *path = make_store(1, &native);
    store *st;
    assert_int_equal(store_open(path, &st), 0);
    const char *kv[] = {"source", "pytorch"};
    step_record r = make_step(1);
    run_import in = {.meta = META, .steps = &r, .n_steps = 1, .extra = kv, .n_extra = 1};
    int64_t imported;
    assert_int_equal(store_import_run(st, &in, &imported), 0);
    store_close(st);
    assert_int_equal(raw_exec(path, "ALTER TABLE runs DROP COLUMN threads;"
                                    "ALTER TABLE runs DROP COLUMN load_avg;"
                                    "ALTER TABLE runs DROP COLUMN imported;"
                                    "ALTER TABLE steps DROP COLUMN threads;"
                                    "DROP TABLE run_logs; DROP TABLE rank_steps;"
                                    "DROP TABLE expert_tokens;"
                                    "DROP TABLE comm_checks;"
                                    "ALTER TABLE steps DROP COLUMN skipped;"
                                    "ALTER TABLE steps DROP COLUMN loss_scale;"
                                    "DROP TABLE ensemble_steps;"
                                    "PRAGMA user_version = 2;"), SQLITE_OK);
    assert_int_equal(store_open_readonly(path, &st), 2); /* older: read-only refuses */
    assert_int_equal(store_open(path, &st), 0);
    run_row row;
    assert_int_equal(store_get_run(st, native, &row), 0);
    assert_int_equal(row.imported, 0);
    assert_int_equal(row.threads, 0);
    assert_int_equal(store_get_run(st, imported, &row), 0);
    assert_int_equal(row.imported, 1);
    step_record *steps;
    int n;
    assert_int_equal(store_get_steps(st, imported, &steps, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(steps[0].threads, 0); /* steps from before schema 4: threads unknown */
    assert_true(steps[0].loss_scale == 0); /* from before schema 8: no loss scaling */
    assert_int_equal(steps[0].skipped, 0);
    free(steps);
    store_close(st);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), store_schema_version());
    remove_db(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_created),
        cmocka_unit_test(test_reopen_does_not_migrate_again),
        cmocka_unit_test(test_newer_schema_refused),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_nonfinite_stored_as_text),
        cmocka_unit_test(test_each_run_newest_first),
        cmocka_unit_test(test_bad_writes_refused),
        cmocka_unit_test(test_killed_run_exit),
        cmocka_unit_test(test_killed_run_sigkill),
        cmocka_unit_test(test_not_a_database_refused),
        cmocka_unit_test(test_corrupt_database_refused),
        cmocka_unit_test(test_foreign_sqlite_refused),
        cmocka_unit_test(test_readonly_leaves_no_files),
        cmocka_unit_test(test_readonly_missing_fails),
        cmocka_unit_test(test_add_step_cost),
        cmocka_unit_test(test_cmd_show),
        cmocka_unit_test(test_cmd_runs),
        cmocka_unit_test(test_concurrent_create),
        cmocka_unit_test(test_host_facts_and_imported),
        cmocka_unit_test(test_migrate_2_to_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
