/* harness/ops/opcheck_db.c: records `harness ops` results in the store's database, in a table of
 * their own (op_results, created if missing), next to the runs the store module keeps. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "opcheck_db.h"
#include "store/store.h"
#include "util/output_target.h"
#include "util/util.h"

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS op_results("
    " id INTEGER PRIMARY KEY,"
    " created_at TEXT NOT NULL,"
    " mode TEXT NOT NULL,"              /* test | grad | perf */
    " device TEXT NOT NULL,"            /* the spec, e.g. opencl:0 */
    " device_name TEXT, dtype TEXT,"
    " reference TEXT,"                  /* test mode: the device compared against */
    " op TEXT NOT NULL, shape TEXT NOT NULL,"
    " status TEXT NOT NULL,"            /* pass | fail */
    " metric REAL, threshold REAL,"     /* test: NMSE; grad: relative L2 error */
    " max_abs REAL, worst TEXT,"
    " us_per_call REAL, gflops REAL, gbps REAL,"
    " message TEXT, host TEXT, harness_version TEXT, git_commit TEXT)";

static const char INSERT[] =
    "INSERT INTO op_results(created_at, mode, device, device_name, dtype, reference, op, shape,"
    " status, metric, threshold, max_abs, worst, us_per_call, gflops, gbps, message, host,"
    " harness_version, git_commit) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
    " ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)";

/* the store's rule for REAL columns: finite as REAL, NaN and infinities as text */
static int bind_real(sqlite3_stmt *s, int i, double v)
{
    if (isfinite(v))
        return sqlite3_bind_double(s, i, v);
    return sqlite3_bind_text(s, i, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf", -1, SQLITE_STATIC);
}

static int bind_text(sqlite3_stmt *s, int i, const char *v)
{
    return v && *v ? sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, i);
}

static int insert_row(sqlite3_stmt *s, const op_row *r, const char *now, const char *host)
{
    const oc_result *x = &r->res;
    int perf = r->mode[0] == 'p';
    int rc = bind_text(s, 1, now) | bind_text(s, 2, r->mode) | bind_text(s, 3, r->device) |
             bind_text(s, 4, r->device_name) | bind_text(s, 5, r->dtype) |
             bind_text(s, 6, r->reference) | bind_text(s, 7, r->op) | bind_text(s, 8, r->shape) |
             bind_text(s, 9, x->pass ? "pass" : "fail") | bind_text(s, 13, x->worst) |
             bind_text(s, 17, x->message) | bind_text(s, 18, host) |
             bind_text(s, 19, HARNESS_VERSION) | bind_text(s, 20, harness_git_commit);
    if (perf)
        rc |= bind_real(s, 14, x->us) | (x->gflops > 0 ? bind_real(s, 15, x->gflops) : sqlite3_bind_null(s, 15)) | bind_real(s, 16, x->gbps);
    else
        rc |= bind_real(s, 10, x->metric) | bind_real(s, 11, x->threshold) |
              bind_real(s, 12, x->max_abs);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

static int db_error(sqlite3 *db, const char *path, const char *what)
{
    log_error("ops: %s: %s: %s", path, what, db ? sqlite3_errmsg(db) : "out of memory");
    return EXIT_USAGE;
}

/* every row in one transaction */
static int insert_all(sqlite3 *db, const char *path, const op_row *rows, int n)
{
    char now[40], host[256];
    iso_time_now(now, sizeof now);
    host_name(host, sizeof host);
    sqlite3_stmt *s = NULL;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, SCHEMA, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, INSERT, -1, &s, NULL) != SQLITE_OK)
        return db_error(db, path, "creating or preparing op_results");
    int rc = 0;
    for (int i = 0; i < n && !rc; i++)
        rc = insert_row(s, &rows[i], now, host);
    sqlite3_finalize(s);
    if (rc || sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        int code = db_error(db, path, "writing op_results");
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return code;
    }
    return 0;
}

/* the store module opens (creating or migrating) the file, so it is a harness store that
 * `harness run` accepts later, and anything else is refused with the store's message */
/* opens path as a harness store, creating and migrating it as needed; 0, 2 after a message,
 * or 1 when the store is write-protected here (as run says it: the results cannot be kept) */
static int open_as_store(const char *path)
{
    store *st = NULL;
    if (store_open(path, &st) != 0)
        return EXIT_USAGE;
    int protected_here = store_is_readonly(st);
    store_close(st);
    if (protected_here) {
        log_error("ops: %s: the store is write-protected here (its file or folder is not "
                  "writable by this process): the results could not be recorded", path);
        return EXIT_FAIL;
    }
    return 0;
}

int opdb_check(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT) /* created only when the results are recorded */
        return output_check_target("the store", path);
    if (S_ISREG(sb.st_mode) && sb.st_size == 0) /* an empty file: made a store only then too */
        return output_check_target("the store", path);
    return open_as_store(path);
}

int opdb_record(const char *path, const op_row *rows, int n)
{
    if (open_as_store(path))
        return EXIT_USAGE;
    sqlite3 *db = NULL;
    char *uri = store_literal_uri(path, "");
    int opened = uri ? sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL)
                     : SQLITE_NOMEM;
    free(uri);
    if (opened != SQLITE_OK) {
        int rc = db_error(db, path, "opening");
        sqlite3_close(db);
        return rc;
    }
    sqlite3_busy_timeout(db, 5000);
    int rc = insert_all(db, path, rows, n);
    sqlite3_close(db);
    return rc;
}
