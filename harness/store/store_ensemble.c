/* harness/store/store_ensemble.c: writing and reading the ensemble_steps table (the per-step loss
 * spread of an ensemble baseline, docs/store.md). */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "store_ensemble.h"
#include "store_logs.h"
#include "util/util.h"

static int fail_sql(store *st, const char *what, int code)
{
    log_error("%s: %s: %s", store_path(st), what, sqlite3_errmsg(store_handle(st)));
    return code;
}

static int exec_sql(store *st, const char *sql, const char *what)
{
    return sqlite3_exec(store_handle(st), sql, NULL, NULL, NULL) == SQLITE_OK
               ? 0
               : fail_sql(st, what, 1);
}

static int put_rows(store *st, sqlite3_stmt *s, int64_t run_id, int runs,
                    const step_record *steps, const double *std, int n)
{
    for (int i = 0; i < n; i++) {
        sqlite3_reset(s);
        if (sqlite3_bind_int64(s, 1, run_id) != SQLITE_OK ||
            sqlite3_bind_int(s, 2, steps[i].step) != SQLITE_OK ||
            sqlite3_bind_int(s, 3, runs) != SQLITE_OK ||
            sqlite3_bind_double(s, 4, std[i]) != SQLITE_OK || sqlite3_step(s) != SQLITE_DONE)
            return fail_sql(st, "recording the spread of an ensemble", 1);
    }
    return 0;
}

int store_put_ensemble(store *st, int64_t run_id, int runs, const step_record *steps,
                       const double *std, int n)
{
    static const char sql[] =
        "INSERT INTO ensemble_steps(run_id, step, runs, loss_std) VALUES(?1, ?2, ?3, ?4)";
    if (store_is_readonly(st)) {
        log_error("%s: recording an ensemble: the store was opened read-only", store_path(st));
        return 1;
    }
    if (exec_sql(st, "SAVEPOINT put_ensemble", "starting to record an ensemble"))
        return 1;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(store_handle(st), sql, -1, &s, NULL) == SQLITE_OK
                 ? put_rows(st, s, run_id, runs, steps, std, n)
                 : fail_sql(st, "recording the spread of an ensemble", 1);
    sqlite3_finalize(s);
    if (!rc)
        return exec_sql(st, "RELEASE put_ensemble", "committing an ensemble");
    sqlite3_exec(store_handle(st), "ROLLBACK TO put_ensemble; RELEASE put_ensemble", NULL, NULL,
                 NULL);
    return rc;
}

/* the index of step in steps[0..n) (increasing), -1 when absent */
static int index_of(const step_record *steps, int n, int step)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (steps[mid].step == step)
            return mid;
        if (steps[mid].step < step)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static int read_rows(store *st, sqlite3_stmt *s, const step_record *steps, int n, double *std,
                     int *runs)
{
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int at = index_of(steps, n, sqlite3_column_int(s, 0));
        *runs = sqlite3_column_int(s, 1);
        if (at >= 0)
            std[at] = sqlite3_column_double(s, 2);
    }
    return rc == SQLITE_DONE ? 0 : fail_sql(st, "reading the spread of an ensemble", 2);
}

int store_get_ensemble(store *st, int64_t run_id, const step_record *steps, int n, double **std,
                       int *runs)
{
    static const char sql[] =
        "SELECT step, runs, loss_std FROM ensemble_steps WHERE run_id = ?1 ORDER BY step";
    *std = NULL;
    *runs = 0;
    double *out = malloc(sizeof *out * (size_t)(n > 0 ? n : 1));
    if (!out) {
        log_error("%s: out of memory reading an ensemble of %d steps", store_path(st), n);
        return 2;
    }
    for (int i = 0; i < n; i++)
        out[i] = NAN;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(store_handle(st), sql, -1, &s, NULL) == SQLITE_OK &&
                     sqlite3_bind_int64(s, 1, run_id) == SQLITE_OK
                 ? read_rows(st, s, steps, n, out, runs)
                 : fail_sql(st, "reading the spread of an ensemble", 2);
    sqlite3_finalize(s);
    if (rc || *runs == 0) {
        free(out);
        *runs = 0;
        return rc;
    }
    *std = out;
    return 0;
}
