/* harness/store/store_logs.c: the store functions of exec and ingest (issue 9): raw log chunks, steps
 * inserted or replaced, per-rank steps, run_extra keys and the workload's own identity. */
#define _POSIX_C_SOURCE 200809L
#include "store_logs.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "store_routing_internal.h"
#include "store_values_internal.h"
#include "util/util.h"

/* prepares sql on a writable store; 0, or 1 after a message naming what */
static int prepare(store *st, const char *sql, const char *what, sqlite3_stmt **s)
{
    *s = NULL;
    sqlite3 *db = store_handle(st);
    if (store_is_readonly(st)) {
        log_error("%s: %s: the store was opened read-only", store_path(st), what);
        return 1;
    }
    if (sqlite3_prepare_v2(db, sql, -1, s, NULL) != SQLITE_OK) {
        log_error("%s: %s: %s", store_path(st), what, sqlite3_errmsg(db));
        return 1;
    }
    return 0;
}

/* steps the statement to its end and finalizes it; 0, or 1 after a message */
static int finish(store *st, sqlite3_stmt *s, int rc, const char *what)
{
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    if (rc != SQLITE_OK)
        log_error("%s: %s: %s", store_path(st), what, sqlite3_errmsg(store_handle(st)));
    sqlite3_finalize(s);
    return rc == SQLITE_OK ? 0 : 1;
}

int store_add_log(store *st, int64_t run_id, const char *source, const char *data, size_t len)
{
    static const char sql[] =
        "INSERT INTO run_logs(run_id, seq, source, data) VALUES(?1,"
        " (SELECT coalesce(max(seq), 0) + 1 FROM run_logs WHERE run_id = ?1), ?2, ?3)";
    sqlite3_stmt *s;
    if (len > 1000000000u) {
        log_error("%s: a log chunk of %zu bytes is too large", store_path(st), len);
        return 1;
    }
    if (prepare(st, sql, "storing the raw log", &s))
        return 1;
    int rc = sqlite3_bind_int64(s, 1, run_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 2, source, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_blob64(s, 3, len ? data : "", len, SQLITE_STATIC);
    return finish(st, s, rc, "storing the raw log in run_logs");
}

static int put_step_row(store *st, int64_t run_id, const step_record *r)
{
    static const char sql[] =
        /* an upsert, not INSERT OR REPLACE: a replace deletes the row first, and the delete
         * would cascade to the step's expert counts */
        "INSERT INTO steps(run_id, step, loss, grad_norm, lr, tokens, step_ms,"
        " tokens_per_s, mem_peak_bytes, mem_used_bytes, mem_total_bytes, loss_scale, skipped)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
        " ON CONFLICT(run_id, step) DO UPDATE SET loss = excluded.loss,"
        " grad_norm = excluded.grad_norm, lr = excluded.lr, tokens = excluded.tokens,"
        " step_ms = excluded.step_ms, tokens_per_s = excluded.tokens_per_s,"
        " mem_peak_bytes = excluded.mem_peak_bytes, mem_used_bytes = excluded.mem_used_bytes,"
        " mem_total_bytes = excluded.mem_total_bytes, loss_scale = excluded.loss_scale,"
        " skipped = excluded.skipped";
    sqlite3_stmt *s;
    if (prepare(st, sql, "recording a step", &s))
        return 1;
    int rc = sqlite3_bind_int64(s, 1, run_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 2, r->step);
    if (rc == SQLITE_OK) rc = store_bind_field(s, 3, r->loss, r->unrecorded, STEP_NO_LOSS);
    if (rc == SQLITE_OK) rc = store_bind_field(s, 4, r->grad_norm, r->unrecorded, STEP_NO_GRAD_NORM);
    if (rc == SQLITE_OK) rc = store_bind_field(s, 5, r->lr, r->unrecorded, STEP_NO_LR);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 6, r->tokens);
    if (rc == SQLITE_OK) rc = store_bind_field(s, 7, r->step_ms, r->unrecorded, STEP_NO_STEP_MS);
    if (rc == SQLITE_OK) rc = store_bind_field(s, 8, r->tokens_per_s, r->unrecorded, STEP_NO_TOKENS_PER_S);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 9, r->mem_peak_bytes);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 10, r->mem_used_bytes);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 11, r->mem_total_bytes);
    /* fp16 loss scaling (a HARNESS_STEP's loss_scale and skipped): both, else both NULL */
    int scaled = r->loss_scale > 0 && isfinite(r->loss_scale);
    if (rc == SQLITE_OK) rc = scaled ? store_bind_real(s, 12, r->loss_scale) : sqlite3_bind_null(s, 12);
    if (rc == SQLITE_OK) rc = scaled ? sqlite3_bind_int(s, 13, r->skipped != 0) : sqlite3_bind_null(s, 13);
    return finish(st, s, rc, "recording a step in steps");
}

/* the step and its expert counts in one transaction: counts given replace the step's earlier
 * ones; a step put again without counts (a later line completing it) keeps them */
int store_put_step(store *st, int64_t run_id, const step_record *r)
{
    if (store_is_readonly(st)) {
        log_error("%s: recording a step: the store was opened read-only", store_path(st));
        return 1;
    }
    if (!routing_present(r))
        return put_step_row(st, run_id, r);
    if (routing_begin(st, "put_step"))
        return 1;
    int rc = put_step_row(st, run_id, r) || routing_put(st, run_id, r) ? 1 : 0;
    return routing_end(st, "put_step", rc);
}

int store_put_rank_step(store *st, int64_t run_id, int rank, const step_record *r)
{
    static const char sql[] =
        "INSERT OR REPLACE INTO rank_steps(run_id, rank, step, loss, grad_norm, lr, tokens,"
        " step_ms, mem_peak_bytes, mem_total_bytes) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)";
    sqlite3_stmt *s;
    if (prepare(st, sql, "recording a rank's step", &s))
        return 1;
    int rc = sqlite3_bind_int64(s, 1, run_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 2, rank);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 3, r->step);
    if (rc == SQLITE_OK) rc = store_bind_field(s, 4, r->loss, r->unrecorded, STEP_NO_LOSS);
    if (rc == SQLITE_OK) rc = store_bind_field(s, 5, r->grad_norm, r->unrecorded, STEP_NO_GRAD_NORM);
    if (rc == SQLITE_OK) rc = store_bind_field(s, 6, r->lr, r->unrecorded, STEP_NO_LR);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 7, r->tokens);
    if (rc == SQLITE_OK) rc = store_bind_field(s, 8, r->step_ms, r->unrecorded, STEP_NO_STEP_MS);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 9, r->mem_peak_bytes);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 10, r->mem_total_bytes);
    return finish(st, s, rc, "recording a step in rank_steps");
}

int store_add_extra(store *st, int64_t run_id, const char *key, const char *value)
{
    static const char sql[] =
        "INSERT INTO run_extra(run_id, seq, key, value) VALUES(?1,"
        " (SELECT coalesce(max(seq), 0) + 1 FROM run_extra WHERE run_id = ?1), ?2, ?3)";
    sqlite3_stmt *s;
    if (prepare(st, sql, "recording run metadata", &s))
        return 1;
    int rc = sqlite3_bind_int64(s, 1, run_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 3, value, -1, SQLITE_STATIC);
    return finish(st, s, rc, "recording run metadata in run_extra");
}

static int bind_text_or_null(sqlite3_stmt *s, int i, const char *t)
{
    return t && t[0] ? sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC) : sqlite3_bind_null(s, i);
}

int store_set_run_identity(store *st, int64_t run_id, const char *device_name,
                           const char *driver_version, const char *runtime_version,
                           int world_size, int64_t mem_total_bytes)
{
    static const char sql[] =
        "UPDATE runs SET device_name = coalesce(?2, device_name),"
        " driver_version = coalesce(?3, driver_version),"
        " runtime_version = coalesce(?4, runtime_version),"
        " world_size = coalesce(?5, world_size), mem_total_bytes = coalesce(?6, mem_total_bytes)"
        " WHERE id = ?1";
    sqlite3_stmt *s;
    if (prepare(st, sql, "recording the workload's device", &s))
        return 1;
    int rc = sqlite3_bind_int64(s, 1, run_id);
    if (rc == SQLITE_OK) rc = bind_text_or_null(s, 2, device_name);
    if (rc == SQLITE_OK) rc = bind_text_or_null(s, 3, driver_version);
    if (rc == SQLITE_OK) rc = bind_text_or_null(s, 4, runtime_version);
    if (rc == SQLITE_OK)
        rc = world_size > 0 ? sqlite3_bind_int(s, 5, world_size) : sqlite3_bind_null(s, 5);
    if (rc == SQLITE_OK)
        rc = mem_total_bytes > 0 ? sqlite3_bind_int64(s, 6, mem_total_bytes)
                                 : sqlite3_bind_null(s, 6);
    return finish(st, s, rc, "recording the workload's device in runs");
}

/* a read statement with ?1 = run_id on any store (read-only ones too); 0 or 2 */
static int prepare_read(store *st, const char *sql, int64_t run_id, sqlite3_stmt **s)
{
    sqlite3 *db = store_handle(st);
    if (sqlite3_prepare_v2(db, sql, -1, s, NULL) != SQLITE_OK ||
        sqlite3_bind_int64(*s, 1, run_id) != SQLITE_OK) {
        log_error("%s: reading run %lld: %s", store_path(st), (long long)run_id,
                  sqlite3_errmsg(db));
        sqlite3_finalize(*s);
        return 2;
    }
    return 0;
}

int store_each_log(store *st, int64_t run_id,
                   int (*fn)(const char *source, const void *data, size_t len, void *arg),
                   void *arg)
{
    sqlite3_stmt *s;
    if (prepare_read(st, "SELECT source, data FROM run_logs WHERE run_id = ?1 ORDER BY seq",
                     run_id, &s))
        return 2;
    int rc, ret = 0;
    while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW)
        ret = fn((const char *)sqlite3_column_text(s, 0), sqlite3_column_blob(s, 1),
                 (size_t)sqlite3_column_bytes(s, 1), arg);
    sqlite3_finalize(s);
    return ret;
}

int store_each_rank_step(store *st, int64_t run_id,
                         int (*fn)(int rank, const step_record *r, void *arg), void *arg)
{
    sqlite3_stmt *s;
    if (prepare_read(st, "SELECT rank, step, loss, grad_norm, lr, tokens, step_ms,"
                         " mem_peak_bytes, mem_total_bytes FROM rank_steps WHERE run_id = ?1"
                         " ORDER BY rank, step", run_id, &s))
        return 2;
    int ret = 0;
    while (!ret && sqlite3_step(s) == SQLITE_ROW) {
        step_record r;
        memset(&r, 0, sizeof r);
        r.step = sqlite3_column_int(s, 1);
        r.loss = store_column_field(s, 2, STEP_NO_LOSS, &r.unrecorded);
        r.grad_norm = store_column_field(s, 3, STEP_NO_GRAD_NORM, &r.unrecorded);
        r.lr = store_column_field(s, 4, STEP_NO_LR, &r.unrecorded);
        r.tokens = sqlite3_column_int64(s, 5);
        r.step_ms = store_column_field(s, 6, STEP_NO_STEP_MS, &r.unrecorded);
        r.mem_peak_bytes = sqlite3_column_int64(s, 7);
        r.mem_total_bytes = sqlite3_column_int64(s, 8);
        ret = fn(sqlite3_column_int(s, 0), &r, arg);
    }
    sqlite3_finalize(s);
    return ret;
}
