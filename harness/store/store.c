/* harness/store/store.c: the SQLite store: opening (file checks, WAL, schema version and forward
 * migrations), recording runs and steps, and reading them back. The rules are in docs/store.md. */
#define _POSIX_C_SOURCE 200809L
#include "store.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_routing_internal.h"
#include "store_shape_internal.h"
#include "store_values_internal.h"
#include "util/util.h"

/* PRAGMA application_id of every harness store: 0x48524e53, "HRNS" */
#define STORE_APP_ID 1213353555
/* how long a store waits for another process's lock before giving up */
#define BUSY_TIMEOUT_MS 5000
#define STR_(x) #x
#define STR(x) STR_(x)

/* Forward migrations: migrations[i] takes the schema from version i to i + 1. Append new steps;
 * never edit a step that has shipped. All pending steps run in one transaction. */
static const char *const migrations[] = {
    /* 1: the first schema */
    "CREATE TABLE runs("
    " id INTEGER PRIMARY KEY,"
    " scenario TEXT NOT NULL, scenario_json TEXT, scenario_hash TEXT,"
    " device TEXT NOT NULL, device_name TEXT, vendor TEXT, driver_version TEXT,"
    " runtime_version TEXT, world_size INTEGER NOT NULL DEFAULT 1, dtype TEXT, host TEXT,"
    " git_commit TEXT, harness_version TEXT, started_at TEXT NOT NULL, finished_at TEXT,"
    " status TEXT NOT NULL DEFAULT 'running'"
    "  CHECK (status IN ('running', 'ok', 'failed', 'diverged')),"
    " error TEXT, mem_total_bytes INTEGER);"
    "CREATE TABLE steps("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " step INTEGER NOT NULL, loss REAL, grad_norm REAL, lr REAL, tokens INTEGER,"
    " step_ms REAL, tokens_per_s REAL, mem_peak_bytes INTEGER, mem_used_bytes INTEGER,"
    " mem_total_bytes INTEGER,"
    " PRIMARY KEY (run_id, step)) WITHOUT ROWID;"
    "CREATE TABLE evals("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " step INTEGER NOT NULL, loss REAL, perplexity REAL,"
    " PRIMARY KEY (run_id, step)) WITHOUT ROWID;"
    "CREATE TABLE baselines("
    " label TEXT PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),"
    " created_at TEXT NOT NULL);"
    "CREATE TABLE comparisons("
    " id INTEGER PRIMARY KEY,"
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " baseline_run_id INTEGER NOT NULL REFERENCES runs(id),"
    " verdict TEXT NOT NULL, first_failing_step INTEGER, max_abs REAL, max_rel REAL,"
    " created_at TEXT NOT NULL, details_json TEXT);"
    "CREATE INDEX comparisons_run ON comparisons(run_id);"
    "PRAGMA application_id = " STR(STORE_APP_ID) ";",
    /* 2 (compare): baselines keyed by (scenario, label); extra metadata of imported runs; an
     * index for the history of a scenario on a device */
    "CREATE TABLE baselines_v2("
    " scenario TEXT NOT NULL, label TEXT NOT NULL,"
    " run_id INTEGER NOT NULL REFERENCES runs(id), created_at TEXT NOT NULL,"
    " PRIMARY KEY (scenario, label)) WITHOUT ROWID;"
    "INSERT INTO baselines_v2 SELECT r.scenario, b.label, b.run_id, b.created_at"
    " FROM baselines b JOIN runs r ON r.id = b.run_id;"
    "DROP TABLE baselines;"
    "ALTER TABLE baselines_v2 RENAME TO baselines;"
    "CREATE TABLE run_extra("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " seq INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY (run_id, seq)) WITHOUT ROWID;"
    "CREATE INDEX runs_history ON runs(scenario_hash, device_name, id);",
    /* 3: the CPU threads a run used and the machine's load when it started; imported baselines
     * marked (never "the newest run" of a device, never in a run's history) */
    "ALTER TABLE runs ADD COLUMN threads INTEGER;"
    "ALTER TABLE runs ADD COLUMN load_avg REAL;"
    "ALTER TABLE runs ADD COLUMN imported INTEGER NOT NULL DEFAULT 0;"
    /* older stores: only imports wrote run_extra, so a run with extra keys was imported */
    "UPDATE runs SET imported = 1 WHERE id IN (SELECT run_id FROM run_extra);",
    /* 4: the CPU threads of each step (the cpu backends revise their count during a run as the
     * machine's load changes; NULL where unknown or not a CPU device's concern) */
    "ALTER TABLE steps ADD COLUMN threads INTEGER;",
    /* 5 (exec/ingest, issue 9): the raw log of an exec'd or ingested run, and every rank's steps */
    "CREATE TABLE run_logs("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " seq INTEGER NOT NULL, source TEXT NOT NULL, data BLOB NOT NULL,"
    " PRIMARY KEY (run_id, seq)) WITHOUT ROWID;"
    "CREATE TABLE rank_steps("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " rank INTEGER NOT NULL, step INTEGER NOT NULL, loss REAL, grad_norm REAL, lr REAL,"
    " tokens INTEGER, step_ms REAL, mem_peak_bytes INTEGER, mem_total_bytes INTEGER,"
    " PRIMARY KEY (run_id, rank, step)) WITHOUT ROWID;",
    /* 6 (sparse MoE, issue 11): the tokens each expert of each MoE layer received in a step,
     * one row per (run, step, layer, expert), deleted with their step */
    "CREATE TABLE expert_tokens("
    " run_id INTEGER NOT NULL, step INTEGER NOT NULL,"
    " layer INTEGER NOT NULL CHECK (layer >= 0), expert INTEGER NOT NULL CHECK (expert >= 0),"
    " tokens INTEGER NOT NULL CHECK (tokens >= 0),"
    " PRIMARY KEY (run_id, step, layer, expert),"
    " FOREIGN KEY (run_id, step) REFERENCES steps(run_id, step) ON DELETE CASCADE)"
    " WITHOUT ROWID;",
    /* 7 (ranks, issue 12): harness comm-check's results, one row per op and size */
    "CREATE TABLE comm_checks("
    " id INTEGER PRIMARY KEY, check_id INTEGER NOT NULL, created_at TEXT NOT NULL,"
    " host TEXT, launcher TEXT NOT NULL, comm TEXT NOT NULL, world_size INTEGER NOT NULL,"
    " device TEXT NOT NULL, device_name TEXT, op TEXT NOT NULL, bytes INTEGER NOT NULL,"
    " count INTEGER NOT NULL, iters INTEGER NOT NULL, time_us REAL, algbw_gbs REAL,"
    " busbw_gbs REAL, wrong INTEGER NOT NULL, first_bad_rank INTEGER,"
    " status TEXT NOT NULL CHECK (status IN ('ok', 'wrong')));"
    "CREATE INDEX comm_checks_check ON comm_checks(check_id);",
    /* 8 (mixed precision, issue 13): an fp16 run's loss scale of each step and whether its
     * optimizer step was skipped (Inf/NaN gradients); NULL for runs without loss scaling */
    "ALTER TABLE steps ADD COLUMN loss_scale REAL;"
    "ALTER TABLE steps ADD COLUMN skipped INTEGER CHECK (skipped IN (0, 1));",
    /* 9 (issue 13, ensemble baselines): the spread of the loss over the runs of an ensemble
     * baseline, per step of the stored run that holds their mean (store_ensemble.c) */
    "CREATE TABLE ensemble_steps("
    " run_id INTEGER NOT NULL, step INTEGER NOT NULL,"
    " runs INTEGER NOT NULL CHECK (runs >= 2), loss_std REAL NOT NULL CHECK (loss_std >= 0),"
    " PRIMARY KEY (run_id, step),"
    " FOREIGN KEY (run_id, step) REFERENCES steps(run_id, step) ON DELETE CASCADE)"
    " WITHOUT ROWID;",
    /* 10: a value an exec'd or ingested log never gave is NULL (not recorded), no longer the
     * text 'nan' (a recorded NaN: a diverged value); the rows those runs wrote before (the runs
     * with a log_format) are read so, but for their loss, which a log that has a step gives */
    "UPDATE steps SET grad_norm = CASE WHEN grad_norm = 'nan' THEN NULL ELSE grad_norm END,"
    " lr = CASE WHEN lr = 'nan' THEN NULL ELSE lr END,"
    " step_ms = CASE WHEN step_ms = 'nan' THEN NULL ELSE step_ms END,"
    " tokens_per_s = CASE WHEN tokens_per_s = 'nan' THEN NULL ELSE tokens_per_s END"
    " WHERE run_id IN (SELECT run_id FROM run_extra WHERE key = 'log_format');"
    "UPDATE rank_steps SET grad_norm = CASE WHEN grad_norm = 'nan' THEN NULL ELSE grad_norm END,"
    " lr = CASE WHEN lr = 'nan' THEN NULL ELSE lr END,"
    " step_ms = CASE WHEN step_ms = 'nan' THEN NULL ELSE step_ms END"
    " WHERE run_id IN (SELECT run_id FROM run_extra WHERE key = 'log_format');",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

struct store {
    sqlite3 *db;
    char *path;
    int readonly;
    int write_protected; /* the file or its folder is not writable here: read-only whatever asked */
    int must_hold_store;  /* store_open_existing: a database without the schema is refused */
    sqlite3_stmt *add_step; /* prepared once: store_add_step runs every training step */
};

int store_schema_version(void)
{
    return SCHEMA_VERSION;
}

/* "harness: error: FILE: WHAT: sqlite's message"; returns code */
static int db_fail(const store *st, const char *what, int code)
{
    log_error("%s: %s: %s", st->path, what, st->db ? sqlite3_errmsg(st->db) : "out of memory");
    return code;
}

static int exec(store *st, const char *sql, const char *what, int code)
{
    if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(st, what, code);
    return 0;
}

/* whether the file at path is there and holds no byte */
static int empty_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size == 0;
}

/* 0 when path is absent (and may be), empty, or starts with the SQLite header; else 2. Reads
 * only: a file that is not a database is never handed to sqlite, so it stays as it was. */
static int check_file(const char *path, int must_exist)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT && !must_exist)
            return 0;
        if (errno == ENOENT)
            log_error("no database at %s", path);
        else
            log_error("%s: %s", path, strerror(errno));
        return 2;
    }
    if (!S_ISREG(sb.st_mode)) {
        log_error("%s: not a regular file, so not a database", path);
        return 2;
    }
    if (sb.st_size == 0)
        return 0;
    char head[16] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        log_error("%s: cannot read: %s", path, strerror(errno));
        return 2;
    }
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got < sizeof head || memcmp(head, "SQLite format 3", sizeof head) != 0) {
        log_error("%s: not a SQLite database (it does not begin with the SQLite header)", path);
        return 2;
    }
    return 0;
}

static int newer_error(const store *st, int version)
{
    log_error("%s: schema version %d is newer than this harness (%d); upgrade the harness",
              st->path, version, SCHEMA_VERSION);
    return 2;
}

/* The three facts that tell a store, a new database and a foreign one apart, read by ONE
 * statement, so from one snapshot: a process creating the same store at this moment is seen
 * either not at all or whole, never half done (issue 8, item 7). */
static const char FACTS_SQL[] =
    "SELECT (SELECT user_version FROM pragma_user_version),"
    " (SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_master)";

/* reads user_version into *version and refuses newer schemas and foreign databases; a database
 * with no schema objects at all (a new or empty file) is a store still to be created */
static int check_schema(store *st, int *version)
{
    sqlite3_stmt *s = NULL;
    int v = 0, app = 0, n_objects = 0;
    int rc = sqlite3_prepare_v2(st->db, FACTS_SQL, -1, &s, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        v = sqlite3_column_int(s, 0);
        app = sqlite3_column_int(s, 1);
        n_objects = sqlite3_column_int(s, 2);
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK)
        db_fail(st, "reading the schema version", 2);
    sqlite3_finalize(s);
    if (rc != SQLITE_OK)
        return 2;
    if (v > SCHEMA_VERSION)
        return newer_error(st, v);
    if ((v > 0 && app != STORE_APP_ID) || (v == 0 && n_objects > 0)) {
        log_error("%s: a SQLite database, but not a harness store (application_id %d, "
                  "user_version %d, %d schema objects); refusing to touch it",
                  st->path, app, v, n_objects);
        return 2;
    }
    *version = v;
    return 0;
}

/* WAL journal, synchronous=NORMAL (a commit survives a killed process), foreign keys */
/* PRAGMA journal_mode = WAL, retried while another process holds the lock: switching a new
 * database to WAL needs it exclusively, and SQLite answers "database is locked" at once there
 * (no busy handler) when several processes open a new store together. Gives up after
 * BUSY_TIMEOUT_MS. Returns the final sqlite code; the mode it reports into mode[16]. */
static int set_wal(store *st, char mode[16])
{
    struct timespec pause = {0, 2 * 1000 * 1000}; /* 2 ms */
    int rc = SQLITE_BUSY;
    for (int waited = 0; waited <= BUSY_TIMEOUT_MS; waited += 2) {
        sqlite3_stmt *s = NULL;
        rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &s, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
            const char *m = (const char *)sqlite3_column_text(s, 0);
            snprintf(mode, 16, "%s", m ? m : "unknown");
            rc = SQLITE_OK;
        }
        sqlite3_finalize(s);
        if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
            return rc;
        nanosleep(&pause, NULL);
    }
    return rc;
}

/* WAL journal, synchronous=NORMAL (a commit survives a killed process) */
static int configure(store *st)
{
    char mode[16] = "";
    if (set_wal(st, mode) != SQLITE_OK)
        return db_fail(st, "PRAGMA journal_mode = WAL", 2);
    if (strcmp(mode, "wal") != 0)
        log_warn("%s: journal_mode is %s, not wal", st->path, mode);
    return exec(st, "PRAGMA synchronous = NORMAL", "PRAGMA synchronous = NORMAL", 2);
}

/* runs every pending migration in one write transaction, checking the schema again under the
 * lock (another process may have created or migrated the store since the first look) */
static int migrate(store *st)
{
    if (exec(st, "BEGIN IMMEDIATE", "locking the database to migrate its schema", 2))
        return 2;
    int v = 0;
    int rc = check_schema(st, &v);
    for (; !rc && v < SCHEMA_VERSION; v++) {
        char what[64], sql[64];
        snprintf(what, sizeof what, "schema migration %d -> %d", v, v + 1);
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v + 1);
        rc = exec(st, migrations[v], what, 2) || exec(st, sql, what, 2) ? 2 : 0;
    }
    if (!rc)
        return exec(st, "COMMIT", "committing the schema migration", 2);
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL); /* the error is already reported */
    return 2;
}

static int old_schema_error(const store *st, int version)
{
    if (version == 0)
        log_error("%s: an empty database, not a harness store", st->path);
    else
        log_error("%s: schema version %d is older than this harness (%d); open it once for "
                  "writing (harness run) to migrate it", st->path, version, SCHEMA_VERSION);
    return 2;
}

static const char ADD_STEP_SQL[] =
    "INSERT INTO steps(run_id, step, loss, grad_norm, lr, tokens, step_ms, tokens_per_s,"
    " mem_peak_bytes, mem_used_bytes, mem_total_bytes, threads, loss_scale, skipped)"
    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";

/* 1 when path is an existing file this process may not write, or lies in a folder where it
 * may not create the -wal and -shm files */
static int write_protected(const char *path)
{
    struct stat sb;
    char dir[PATH_MAX];
    if (stat(path, &sb) != 0)
        return 0;
    path_dirname(path, dir, sizeof dir);
    return access(path, W_OK) != 0 || access(dir, W_OK | X_OK) != 0;
}

/* "file:PATH" plus query, every byte of PATH a URI could misread percent-encoded and a relative
 * PATH begun with "./": the path is taken literally, so --db ':memory:' or 'file:x?mode=memory'
 * names a file of that name, never an in-memory database or a URI; malloc'd, NULL when out of
 * memory */
char *store_literal_uri(const char *path, const char *query)
{
    size_t n = strlen(path);
    char *uri = malloc(3 * n + strlen(query) + 32), *w = uri;
    if (!uri)
        return NULL;
    w += sprintf(w, "file:%s", path[0] == '/' ? "//" : "./");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/._-~", *p))
            *w++ = (char)*p;
        else
            w += sprintf(w, "%%%02X", *p);
    }
    strcpy(w, query);
    return uri;
}

/* 1 when path-wal exists and path-shm does not, in a folder this process cannot write */
static int wal_without_shm(const char *path)
{
    char wal[PATH_MAX], shm[PATH_MAX], dir[PATH_MAX];
    struct stat sb;
    if (snprintf(wal, sizeof wal, "%s-wal", path) >= (int)sizeof wal ||
        snprintf(shm, sizeof shm, "%s-shm", path) >= (int)sizeof shm)
        return 0;
    path_dirname(path, dir, sizeof dir);
    return stat(wal, &sb) == 0 && stat(shm, &sb) != 0 && errno == ENOENT &&
           access(dir, W_OK | X_OK) != 0;
}

/* Opens the connection. Stores open read-write without CREATE when read-only, with
 * query_only: SQLite then still removes the -wal and -shm files on close (a
 * SQLITE_OPEN_READONLY connection leaves them behind), while no statement can write. A store
 * this process may not write (file or folder write-protected) opens read-only, and when it
 * has no -wal file (every commit is in the database file) as immutable: SQLite then creates
 * no -wal or -shm beside it, where it would otherwise leave them or, in a read-only folder,
 * fail to read at all. */
static int open_db(store *st)
{
    int flags = SQLITE_OPEN_READWRITE | (st->readonly ? 0 : SQLITE_OPEN_CREATE);
    char wal[PATH_MAX];
    struct stat sb;
    if (st->write_protected && snprintf(wal, sizeof wal, "%s-wal", st->path) < (int)sizeof wal &&
        stat(wal, &sb) != 0 && errno == ENOENT) {
        char *uri = store_literal_uri(st->path, "?immutable=1");
        if (!uri) {
            log_error("%s: out of memory opening the store", st->path);
            return 2;
        }
        int rc = sqlite3_open_v2(uri, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
        free(uri);
        return rc == SQLITE_OK ? 0 : db_fail(st, "opening the database (read-only)", 2);
    }
    if (st->write_protected && wal_without_shm(st->path)) {
        log_error("%s: its -wal file is here without its -shm, in a folder this process cannot "
                  "write: SQLite can read the commits in that WAL only by making the -shm; copy "
                  "the store (with its -wal) where it can be written, or open it once there",
                  st->path);
        return 2;
    }
    char *uri = store_literal_uri(st->path, "");
    if (!uri) {
        log_error("%s: out of memory opening the store", st->path);
        return 2;
    }
    int rc = sqlite3_open_v2(uri, &st->db, flags | SQLITE_OPEN_URI, NULL);
    free(uri);
    return rc == SQLITE_OK ? 0 : db_fail(st, "opening the database", 2);
}

/* a store about to be written is read through first (PRAGMA quick_check: every page and
 * index, not the cross-checks of integrity_check): a damaged file is refused before a run is
 * added to it, where SQLite would otherwise write around the damage. 0, or 2 after a message */
static int check_not_damaged(store *st)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(st->db, "PRAGMA quick_check(1)", -1, &q, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(q);
    const unsigned char *v = rc == SQLITE_ROW ? sqlite3_column_text(q, 0) : NULL;
    int ok = v && strcmp((const char *)v, "ok") == 0;
    if (!ok && v)
        log_error("%s: the database is damaged (SQLite's quick_check: %.200s): nothing written; "
                  "restore it from a copy, or name another --db", st->path, (const char *)v);
    else if (!ok)
        log_error("%s: the database is damaged (SQLite's quick_check failed: %s): nothing "
                  "written; restore it from a copy, or name another --db", st->path,
                  sqlite3_errmsg(st->db));
    sqlite3_finalize(q);
    return ok ? 0 : 2;
}

/* everything after the file check: connection, schema checks, pragmas, migration */
static int open_connection(store *st)
{
    if (open_db(st))
        return 2;
    if (st->readonly && exec(st, "PRAGMA query_only = ON", "PRAGMA query_only = ON", 2))
        return 2;
    if (sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS) != SQLITE_OK)
        return db_fail(st, "setting the busy timeout", 2);
    if (exec(st, "PRAGMA foreign_keys = ON", "PRAGMA foreign_keys = ON", 2))
        return 2;
    int version = 0;
    if (check_schema(st, &version))
        return 2;
    if (version == 0 && st->must_hold_store) {
        log_error("%s: %s, not a harness store yet (no runs): 'harness run', 'exec' or "
                  "'ingest' make one; left as it was",
                  st->path, empty_file(st->path) ? "an empty file" : "an empty SQLite database");
        return 2;
    }
    if (st->readonly)
        return version < SCHEMA_VERSION ? old_schema_error(st, version)
                                        : store_check_shape(st->db, st->path, migrations,
                                                            SCHEMA_VERSION);
    if (version > 0 && check_not_damaged(st))
        return 2;
    /* create or migrate first (in the one write transaction that checks again), its tables
     * checked, WAL after: a foreign or altered database is refused before anything is written
     * to it */
    if ((version < SCHEMA_VERSION && migrate(st)) ||
        store_check_shape(st->db, st->path, migrations, SCHEMA_VERSION) || configure(st))
        return 2;
    if (sqlite3_prepare_v3(st->db, ADD_STEP_SQL, -1, SQLITE_PREPARE_PERSISTENT, &st->add_step,
                           NULL) != SQLITE_OK)
        return db_fail(st, "preparing the steps insert", 2);
    return 0;
}

/* how open_store opens: creating the schema where there is none, only an existing store (made
 * and migrated as needed), or only reading */
enum { OPEN_CREATE, OPEN_EXISTING, OPEN_READONLY };

static int open_store(const char *path, int how, store **out)
{
    int readonly = how == OPEN_READONLY;
    *out = NULL;
    if (check_file(path, how != OPEN_CREATE))
        return 2;
    store *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        log_error("%s: out of memory opening the store", path);
        free(st);
        return 2;
    }
    st->write_protected = write_protected(path);
    st->readonly = readonly || st->write_protected;
    st->must_hold_store = how != OPEN_CREATE;
    if (open_connection(st)) {
        store_close(st);
        return 2;
    }
    *out = st;
    return 0;
}

int store_open(const char *path, store **out)
{
    return open_store(path, OPEN_CREATE, out);
}

int store_open_existing(const char *path, store **out)
{
    return open_store(path, OPEN_EXISTING, out);
}

int store_open_readonly(const char *path, store **out)
{
    return open_store(path, OPEN_READONLY, out);
}

/* 1 when the database at path holds schema objects, read through a connection that writes
 * nothing (query_only, no CREATE: SQLite removes any -wal and -shm it made on close); 1 too
 * when it cannot tell, so that the open that follows says why */
static int holds_schema(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    char *uri = store_literal_uri(path, "");
    int n = 1;
    if (uri && sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL) ==
                   SQLITE_OK &&
        sqlite3_exec(db, "PRAGMA query_only = ON", NULL, NULL, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &s, NULL) ==
            SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    free(uri);
    return n > 0;
}

int store_file_has_data(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size > 0 && (!S_ISREG(sb.st_mode) || holds_schema(path));
}

void store_close(store *st)
{
    if (!st)
        return;
    sqlite3_finalize(st->add_step);
    if (st->db && sqlite3_close(st->db) != SQLITE_OK)
        db_fail(st, "closing the database", 2);
    free(st->path);
    free(st);
}

/* exec/ingest (issue 9): the connection and mode for harness/store/store_logs.c */
sqlite3 *store_handle(store *st)
{
    return st->db;
}

int store_is_readonly(const store *st)
{
    return st->readonly;
}

const char *store_path(const store *st)
{
    return st->path;
}

/* ---- writing ----------------------------------------------------------------------------- */

static int readonly_error(const store *st, const char *what)
{
    log_error("%s: %s: %s", st->path, what,
              st->write_protected ? "the store is write-protected here (its file or folder is "
                                    "not writable by this process)"
                                  : "the store was opened read-only");
    return 1;
}

static int bind_run_meta(sqlite3_stmt *s, const run_meta *m, const char *now)
{
    const char *texts[] = {m->scenario, m->scenario_json, m->scenario_hash, m->device,
                           m->device_name, m->vendor, m->driver_version, m->runtime_version,
                           m->dtype, m->host, m->git_commit, m->harness_version, now};
    int n = (int)(sizeof texts / sizeof texts[0]), rc = SQLITE_OK;
    for (int i = 0; i < n && rc == SQLITE_OK; i++)
        rc = sqlite3_bind_text(s, i + 1, texts[i], -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(s, n + 1, m->world_size);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(s, n + 2, m->mem_total_bytes);
    if (rc == SQLITE_OK && m->threads > 0)
        rc = sqlite3_bind_int(s, n + 3, m->threads);
    if (rc == SQLITE_OK && isfinite(m->load_avg) && m->load_avg >= 0)
        rc = sqlite3_bind_double(s, n + 4, m->load_avg);
    return rc;
}

int store_begin_run(store *st, const run_meta *m, int64_t *run_id)
{
    static const char sql[] =
        "INSERT INTO runs(scenario, scenario_json, scenario_hash, device, device_name, vendor,"
        " driver_version, runtime_version, dtype, host, git_commit, harness_version, started_at,"
        " world_size, mem_total_bytes, threads, load_avg, status)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
        " 'running')";
    if (st->readonly)
        return readonly_error(st, "recording a new run");
    char now[32];
    iso_time_now(now, sizeof now);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = bind_run_meta(s, m, now);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    if (rc != SQLITE_OK)
        db_fail(st, "inserting the run into runs", 1);
    else
        *run_id = sqlite3_last_insert_rowid(st->db);
    sqlite3_finalize(s);
    return rc == SQLITE_OK ? 0 : 1;
}

static int bind_step(sqlite3_stmt *s, int64_t run_id, const step_record *r)
{
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
    if (rc == SQLITE_OK)
        rc = r->threads > 0 ? sqlite3_bind_int(s, 12, r->threads) : sqlite3_bind_null(s, 12);
    int scaled = r->loss_scale > 0; /* loss scaling: both columns, else both NULL */
    if (rc == SQLITE_OK)
        rc = scaled ? store_bind_real(s, 13, r->loss_scale) : sqlite3_bind_null(s, 13);
    if (rc == SQLITE_OK)
        rc = scaled ? sqlite3_bind_int(s, 14, r->skipped != 0) : sqlite3_bind_null(s, 14);
    return rc;
}

static int insert_step(store *st, int64_t run_id, const step_record *r)
{
    sqlite3_stmt *s = st->add_step;
    int rc = bind_step(s, run_id, r);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    if (rc != SQLITE_OK) {
        char what[96];
        snprintf(what, sizeof what, "inserting step %d of run %lld into steps", r->step,
                 (long long)run_id);
        db_fail(st, what, 1);
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_OK ? 0 : 1;
}

/* One autocommit INSERT per call: with WAL and synchronous=NORMAL the commit appends to the
 * WAL without an fsync (about 10-20 us on a local disk; tests/test_store.c prints it). A step
 * with expert counts is inserted with them in one transaction (a savepoint). */
int store_add_step(store *st, int64_t run_id, const step_record *r)
{
    if (st->readonly)
        return readonly_error(st, "recording a step");
    if (!routing_present(r))
        return insert_step(st, run_id, r);
    if (routing_begin(st, "add_step"))
        return 1;
    int rc = insert_step(st, run_id, r) || routing_put(st, run_id, r) ? 1 : 0;
    return routing_end(st, "add_step", rc);
}

int store_finish_run(store *st, int64_t run_id, const char *status, const char *error)
{
    static const char sql[] = "UPDATE runs SET status = ?1, error = ?2, finished_at = ?3"
                              " WHERE id = ?4 AND status = 'running'";
    if (st->readonly)
        return readonly_error(st, "finishing a run");
    if (!status || (strcmp(status, "ok") && strcmp(status, "failed") && strcmp(status, "diverged"))) {
        log_error("%s: finishing run %lld: status '%s' is not ok, failed or diverged", st->path,
                  (long long)run_id, status ? status : "(null)");
        return 1;
    }
    char now[32];
    iso_time_now(now, sizeof now);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 1, status, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 2, error, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 3, now, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 4, run_id);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    if (rc != SQLITE_OK)
        db_fail(st, "updating the run's status in runs", 1);
    sqlite3_finalize(s);
    if (rc == SQLITE_OK && sqlite3_changes(st->db) != 1) {
        log_error("%s: finishing run %lld: no such run, or it is not running any more",
                  st->path, (long long)run_id);
        return 1;
    }
    return rc == SQLITE_OK ? 0 : 1;
}

/* ---- reading ----------------------------------------------------------------------------- */

/* copies a text column into dst[n], cutting at a UTF-8 character boundary; NULL -> "" */
static void column_copy(char *dst, size_t n, sqlite3_stmt *s, int i)
{
    const char *t = (const char *)sqlite3_column_text(s, i);
    size_t len = t ? strlen(t) : 0;
    if (len >= n) {
        len = n - 1;
        while (len > 0 && ((unsigned char)t[len] & 0xC0) == 0x80)
            len--;
    }
    if (len)
        memcpy(dst, t, len);
    dst[len] = 0;
}

#define RUN_COLUMNS                                                                              \
    "r.id, r.scenario, r.scenario_hash, r.device, r.device_name, r.dtype, r.host, r.git_commit," \
    " r.harness_version, r.started_at, r.finished_at, r.status, r.error, r.world_size,"         \
    " r.mem_total_bytes, (SELECT count(*) FROM steps s WHERE s.run_id = r.id),"                 \
    " (SELECT s.loss FROM steps s WHERE s.run_id = r.id ORDER BY s.step DESC LIMIT 1),"        \
    " r.threads, r.load_avg, r.imported,"                                                     \
    " (r.imported = 0 AND EXISTS (SELECT 1 FROM run_extra x WHERE x.run_id = r.id"             \
    " AND x.key = '" STORE_ENSEMBLE_MEMBER_KEY "')),"                                          \
    " (SELECT CAST(x.value AS INTEGER) FROM run_extra x WHERE x.run_id = r.id"                 \
    " AND x.key = '" STORE_STEPS_OVERRIDE_KEY "' AND r.imported = 0 LIMIT 1)"

static void read_run_row(sqlite3_stmt *s, run_row *o)
{
    memset(o, 0, sizeof *o);
    o->id = sqlite3_column_int64(s, 0);
    column_copy(o->scenario, sizeof o->scenario, s, 1);
    column_copy(o->scenario_hash, sizeof o->scenario_hash, s, 2);
    column_copy(o->device, sizeof o->device, s, 3);
    column_copy(o->device_name, sizeof o->device_name, s, 4);
    column_copy(o->dtype, sizeof o->dtype, s, 5);
    column_copy(o->host, sizeof o->host, s, 6);
    column_copy(o->git_commit, sizeof o->git_commit, s, 7);
    column_copy(o->harness_version, sizeof o->harness_version, s, 8);
    column_copy(o->started_at, sizeof o->started_at, s, 9);
    column_copy(o->finished_at, sizeof o->finished_at, s, 10);
    column_copy(o->status, sizeof o->status, s, 11);
    column_copy(o->error, sizeof o->error, s, 12);
    o->world_size = sqlite3_column_int(s, 13);
    o->mem_total_bytes = sqlite3_column_int64(s, 14);
    o->n_steps = sqlite3_column_int(s, 15);
    o->last_loss = o->n_steps ? store_column_real(s, 16) : NAN;
    o->last_loss_recorded = o->n_steps && sqlite3_column_type(s, 16) != SQLITE_NULL;
    o->threads = sqlite3_column_int(s, 17);
    o->load_avg = store_column_real(s, 18);
    o->imported = sqlite3_column_int(s, 19);
    o->ensemble_member = sqlite3_column_int(s, 20);
    int64_t over = sqlite3_column_int64(s, 21); /* NULL: 0 */
    o->steps_override = over > 0 && over <= INT32_MAX ? (int)over : 0;
}

/* prepares sql and binds ?1 to id; 0 or 2 (message naming what) */
static int prepare_for_run(store *st, const char *sql, int64_t id, const char *what,
                           sqlite3_stmt **s)
{
    *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(*s, 1, id);
    if (rc == SQLITE_OK)
        return 0;
    db_fail(st, what, 2);
    sqlite3_finalize(*s);
    *s = NULL;
    return 2;
}

int store_get_run(store *st, int64_t run_id, run_row *out)
{
    sqlite3_stmt *s;
    if (prepare_for_run(st, "SELECT " RUN_COLUMNS " FROM runs r WHERE r.id = ?1", run_id,
                        "reading a run from runs", &s))
        return 2;
    int rc = sqlite3_step(s), ret = 0;
    if (rc == SQLITE_ROW)
        read_run_row(s, out);
    else if (rc == SQLITE_DONE) {
        log_error("no run %lld in %s", (long long)run_id, st->path);
        ret = 1;
    } else
        ret = db_fail(st, "reading a run from runs", 2);
    sqlite3_finalize(s);
    return ret;
}

int store_get_run_device(store *st, int64_t run_id, run_device *out)
{
    sqlite3_stmt *s;
    if (prepare_for_run(st, "SELECT vendor, driver_version, runtime_version FROM runs"
                            " WHERE id = ?1", run_id, "reading a run's device from runs", &s))
        return 2;
    int rc = sqlite3_step(s), ret = 0;
    if (rc == SQLITE_ROW) {
        column_copy(out->vendor, sizeof out->vendor, s, 0);
        column_copy(out->driver_version, sizeof out->driver_version, s, 1);
        column_copy(out->runtime_version, sizeof out->runtime_version, s, 2);
    } else if (rc == SQLITE_DONE) {
        log_error("no run %lld in %s", (long long)run_id, st->path);
        ret = 1;
    } else
        ret = db_fail(st, "reading a run's device from runs", 2);
    sqlite3_finalize(s);
    return ret;
}

char *store_get_run_json(store *st, int64_t run_id)
{
    sqlite3_stmt *s;
    if (prepare_for_run(st, "SELECT scenario_json FROM runs WHERE id = ?1", run_id,
                        "reading a run's scenario JSON", &s))
        return NULL;
    char *json = NULL;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
        json = strdup((const char *)sqlite3_column_text(s, 0));
        if (!json)
            log_error("%s: out of memory reading run %lld's scenario JSON", st->path,
                      (long long)run_id);
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        db_fail(st, "reading a run's scenario JSON", 2);
    sqlite3_finalize(s);
    return json;
}

int store_each_run(store *st, int limit, int (*fn)(const run_row *r, void *arg), void *arg)
{
    sqlite3_stmt *s;
    if (prepare_for_run(st, "SELECT " RUN_COLUMNS " FROM runs r ORDER BY r.id DESC LIMIT ?1",
                        limit > 0 ? limit : -1, "listing runs", &s))
        return 2;
    int rc = SQLITE_DONE, ret = 0;
    run_row row;
    while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        read_run_row(s, &row);
        ret = fn(&row, arg);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = db_fail(st, "listing runs", 2);
    sqlite3_finalize(s);
    return ret;
}

static void read_step(sqlite3_stmt *s, step_record *r)
{
    r->step = sqlite3_column_int(s, 0);
    r->unrecorded = 0;
    r->loss = store_column_field(s, 1, STEP_NO_LOSS, &r->unrecorded);
    r->grad_norm = store_column_field(s, 2, STEP_NO_GRAD_NORM, &r->unrecorded);
    r->lr = store_column_field(s, 3, STEP_NO_LR, &r->unrecorded);
    r->tokens = sqlite3_column_int64(s, 4);
    r->step_ms = store_column_field(s, 5, STEP_NO_STEP_MS, &r->unrecorded);
    r->tokens_per_s = store_column_field(s, 6, STEP_NO_TOKENS_PER_S, &r->unrecorded);
    r->mem_peak_bytes = sqlite3_column_int64(s, 7);
    r->mem_used_bytes = sqlite3_column_int64(s, 8);
    r->mem_total_bytes = sqlite3_column_int64(s, 9);
    r->threads = sqlite3_column_int(s, 10);
    r->loss_scale = sqlite3_column_type(s, 11) == SQLITE_NULL ? 0 : store_column_real(s, 11);
    r->skipped = sqlite3_column_int(s, 12);
    r->moe_layers = r->moe_experts = 0;
    r->expert_tokens = NULL;
}

/* the columns of store_get_steps' query, for messages: reals and whole numbers */
static const char *const step_columns[] = {"step",           "loss",           "grad_norm",
                                           "lr",             "tokens",         "step_ms",
                                           "tokens_per_s",   "mem_peak_bytes", "mem_used_bytes",
                                           "mem_total_bytes", "threads",       "loss_scale",
                                           "skipped"};
#define STEP_REAL_COLUMNS ((1u << 1) | (1u << 2) | (1u << 3) | (1u << 5) | (1u << 6) | (1u << 11))

/* 0 when the row holds what this harness writes (a step number 0..INT_MAX; a real, 'nan',
 * 'inf', '-inf' or NULL in a real column; a whole number or NULL in the others), else 2 after
 * a message naming the store, run, column and value: text or a blob read as a number would
 * judge another run than the one recorded */
static int check_step_row(store *st, sqlite3_stmt *s, int64_t run_id)
{
    int64_t step = sqlite3_column_int64(s, 0);
    if (sqlite3_column_type(s, 0) != SQLITE_INTEGER || step < 0 || step > INT32_MAX) {
        log_error("%s: run %lld: steps.step '%.40s': a step number is a whole number from 0 to "
                  "%d", st->path, (long long)run_id, (const char *)sqlite3_column_text(s, 0),
                  INT32_MAX);
        return 2;
    }
    for (int i = 1; i < (int)(sizeof step_columns / sizeof step_columns[0]); i++) {
        int type = sqlite3_column_type(s, i);
        int ok = STEP_REAL_COLUMNS >> i & 1 ? store_column_real_ok(s, i)
                                           : type == SQLITE_INTEGER || type == SQLITE_NULL;
        if (!ok) {
            log_error("%s: run %lld: step %lld: steps.%s holds '%.40s', not a number this "
                      "harness writes", st->path, (long long)run_id, (long long)step,
                      step_columns[i], type == SQLITE_BLOB ? "(a blob)"
                                                           : (const char *)sqlite3_column_text(s, i));
            return 2;
        }
    }
    return 0;
}

int store_get_steps(store *st, int64_t run_id, step_record **steps, int *n)
{
    *steps = NULL;
    *n = 0;
    sqlite3_stmt *s;
    if (prepare_for_run(st, "SELECT step, loss, grad_norm, lr, tokens, step_ms, tokens_per_s,"
                            " mem_peak_bytes, mem_used_bytes, mem_total_bytes, threads,"
                            " loss_scale, skipped FROM steps"
                            " WHERE run_id = ?1 ORDER BY step", run_id, "reading steps", &s))
        return 2;
    step_record *a = NULL;
    int count = 0, cap = 0, rc = SQLITE_DONE, ret = 0;
    while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            step_record *grown = realloc(a, (size_t)cap * sizeof *a);
            if (!grown) {
                log_error("%s: out of memory reading the steps of run %lld", st->path,
                          (long long)run_id);
                ret = 2;
                break;
            }
            a = grown;
        }
        if ((ret = check_step_row(st, s, run_id)))
            break;
        read_step(s, &a[count++]);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = db_fail(st, "reading steps", 2);
    sqlite3_finalize(s);
    if (ret) {
        free(a);
        return ret;
    }
    *steps = a;
    *n = count;
    return 0;
}

/* ---- baselines, comparisons and history (added for compare and report) ------------------- */

static int step_done(store *st, sqlite3_stmt *s, const char *what, int code)
{
    int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW)
        return 0;
    return db_fail(st, what, code);
}

static int import_row(store *st, const run_import *in, int64_t *run_id)
{
    static const char sql[] =
        "INSERT INTO runs(scenario, scenario_json, scenario_hash, device, device_name, vendor,"
        " driver_version, runtime_version, dtype, host, git_commit, harness_version, started_at,"
        " world_size, mem_total_bytes, threads, load_avg, status, finished_at, imported)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
        " 'ok', ?18, 1)";
    char now[32];
    iso_time_now(now, sizeof now);
    const char *started = in->started_at && in->started_at[0] ? in->started_at : now;
    const char *finished = in->finished_at && in->finished_at[0] ? in->finished_at : started;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = bind_run_meta(s, &in->meta, started);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(s, 18, finished, -1, SQLITE_STATIC);
    if (rc != SQLITE_OK)
        rc = db_fail(st, "preparing the imported run", 1);
    else if (!(rc = step_done(st, s, "inserting the imported run into runs", 1)))
        *run_id = sqlite3_last_insert_rowid(st->db);
    sqlite3_finalize(s);
    return rc;
}

/* every step and its expert counts, inside store_import_run's transaction */
static int import_steps(store *st, int64_t run_id, const step_record *steps, int n)
{
    for (int i = 0; i < n; i++)
        if (insert_step(st, run_id, &steps[i]) ||
            (routing_present(&steps[i]) && routing_put(st, run_id, &steps[i])))
            return 1;
    return 0;
}

static int import_extra(store *st, int64_t run_id, const char *const *kv, int n)
{
    static const char sql[] = "INSERT INTO run_extra(run_id, seq, key, value) VALUES(?1,?2,?3,?4)";
    sqlite3_stmt *s = NULL;
    int rc = n ? sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) : SQLITE_OK;
    for (int i = 0; i < n && rc == SQLITE_OK; i++) {
        sqlite3_bind_int64(s, 1, run_id);
        sqlite3_bind_int(s, 2, i);
        sqlite3_bind_text(s, 3, kv[2 * i], -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, kv[2 * i + 1], -1, SQLITE_STATIC);
        rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_OK ? 0 : db_fail(st, "inserting the imported run's metadata", 1);
}

int store_import_run(store *st, const run_import *in, int64_t *run_id)
{
    if (st->readonly)
        return readonly_error(st, "importing a run");
    if (exec(st, "SAVEPOINT import_run", "starting the import", 1))
        return 1;
    int rc = import_row(st, in, run_id);
    if (!rc)
        rc = import_steps(st, *run_id, in->steps, in->n_steps);
    if (!rc)
        rc = import_extra(st, *run_id, in->extra, in->n_extra);
    if (!rc)
        return exec(st, "RELEASE import_run", "committing the import", 1);
    sqlite3_exec(st->db, "ROLLBACK TO import_run; RELEASE import_run", NULL, NULL, NULL);
    return 1;
}

int store_write_begin(store *st, const char *what)
{
    if (st->readonly)
        return readonly_error(st, what);
    return exec(st, "BEGIN IMMEDIATE", what, 1);
}

int store_write_end(store *st, int rc)
{
    if (!rc)
        return exec(st, "COMMIT", "committing the transaction", 1);
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL); /* the error is already reported */
    return rc;
}

int store_each_run_extra(store *st, int64_t run_id,
                         int (*fn)(const char *key, const char *value, void *arg), void *arg)
{
    sqlite3_stmt *s;
    if (prepare_for_run(st, "SELECT key, value FROM run_extra WHERE run_id = ?1 ORDER BY seq",
                        run_id, "reading a run's extra metadata", &s))
        return 2;
    int rc, ret = 0;
    while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(s, 0);
        const char *value = (const char *)sqlite3_column_text(s, 1);
        if (!key || !value) {
            log_error("%s: run %lld: run_extra holds a NULL %s (this harness writes none)",
                      st->path, (long long)run_id, key ? "value" : "key");
            ret = 2;
            break;
        }
        ret = fn(key, value, arg);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = db_fail(st, "reading a run's extra metadata", 2);
    sqlite3_finalize(s);
    return ret;
}

int store_set_baseline(store *st, const char *scenario, const char *label, int64_t run_id)
{
    static const char sql[] = "INSERT OR REPLACE INTO baselines(scenario, label, run_id,"
                              " created_at) VALUES(?1, ?2, ?3, ?4)";
    if (st->readonly)
        return readonly_error(st, "setting a baseline label");
    char now[32];
    iso_time_now(now, sizeof now);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 1, scenario, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 2, label, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 3, run_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 4, now, -1, SQLITE_STATIC);
    rc = rc == SQLITE_OK ? step_done(st, s, "setting a baseline label", 1)
                         : db_fail(st, "setting a baseline label", 1);
    sqlite3_finalize(s);
    return rc;
}

int store_find_baseline(store *st, const char *scenario, const char *label, int64_t *run_id)
{
    static const char sql[] = "SELECT run_id FROM baselines WHERE scenario = ?1 AND label = ?2";
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL), ret = 2;
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 1, scenario, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 2, label, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *run_id = sqlite3_column_int64(s, 0);
        ret = 0;
    } else if (rc == SQLITE_DONE) {
        ret = 1;
    } else {
        db_fail(st, "looking a baseline label up", 2);
    }
    sqlite3_finalize(s);
    return ret;
}

int store_each_baseline(store *st, int (*fn)(const baseline_row *b, void *arg), void *arg)
{
    static const char sql[] = "SELECT scenario, label, run_id, created_at FROM baselines"
                              " ORDER BY scenario, label";
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, "listing baselines", 2);
    int rc, ret = 0;
    baseline_row b;
    while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        column_copy(b.scenario, sizeof b.scenario, s, 0);
        column_copy(b.label, sizeof b.label, s, 1);
        b.run_id = sqlite3_column_int64(s, 2);
        column_copy(b.created_at, sizeof b.created_at, s, 3);
        ret = fn(&b, arg);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = db_fail(st, "listing baselines", 2);
    sqlite3_finalize(s);
    return ret;
}

int store_add_comparison(store *st, int64_t run_id, int64_t baseline_run_id, const char *verdict,
                         int first_failing_step, double max_abs, double max_rel,
                         const char *details_json)
{
    static const char sql[] =
        "INSERT INTO comparisons(run_id, baseline_run_id, verdict, first_failing_step, max_abs,"
        " max_rel, created_at, details_json) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
    if (st->readonly)
        return readonly_error(st, "recording a comparison");
    char now[32];
    iso_time_now(now, sizeof now);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 1, run_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, baseline_run_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 3, verdict, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK && first_failing_step > 0)
        rc = sqlite3_bind_int(s, 4, first_failing_step);
    if (rc == SQLITE_OK) /* NaN: none (nothing compared), NULL */
        rc = isnan(max_abs) ? sqlite3_bind_null(s, 5) : store_bind_real(s, 5, max_abs);
    if (rc == SQLITE_OK)
        rc = isnan(max_rel) ? sqlite3_bind_null(s, 6) : store_bind_real(s, 6, max_rel);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 7, now, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 8, details_json, -1, SQLITE_STATIC);
    rc = rc == SQLITE_OK ? step_done(st, s, "recording a comparison", 1)
                         : db_fail(st, "recording a comparison", 1);
    sqlite3_finalize(s);
    return rc;
}

/* the verdict column of the first row of sql (run_id as ?1) into verdict: 0, 1 none, 2 error */
static int first_verdict(store *st, int64_t run_id, const char *sql, char verdict[16])
{
    sqlite3_stmt *s;
    if (prepare_for_run(st, sql, run_id, "reading a verdict", &s))
        return 2;
    int rc = sqlite3_step(s), ret = 1;
    if (rc == SQLITE_ROW) {
        column_copy(verdict, 16, s, 0);
        ret = 0;
    } else if (rc != SQLITE_DONE) {
        ret = db_fail(st, "reading a verdict", 2);
    }
    sqlite3_finalize(s);
    return ret;
}

int store_last_verdict(store *st, int64_t run_id, char verdict[16])
{
    return first_verdict(st, run_id,
                         "SELECT verdict FROM comparisons WHERE run_id = ?1"
                         " ORDER BY id DESC LIMIT 1",
                         verdict);
}

int store_last_baseline_verdict(store *st, int64_t run_id, char verdict[16])
{
    /* history details are compact JSON that opens {"kind":"history" */
    return first_verdict(st, run_id,
                         "SELECT verdict FROM comparisons WHERE run_id = ?1 AND"
                         " details_json NOT LIKE '{\"kind\":\"history\"%'"
                         " ORDER BY id DESC LIMIT 1",
                         verdict);
}

int store_previous_runs(store *st, int64_t run_id, int limit, int64_t **ids, int *n)
{
    static const char sql[] =
        "SELECT p.id FROM runs r JOIN runs p ON p.scenario_hash = r.scenario_hash"
        " AND p.device_name IS r.device_name AND p.id < r.id AND p.status = 'ok'"
        /* the same backend (cpu64's golden shares cpu's device name) and precision */
        " AND p.dtype IS r.dtype AND substr(p.device, 1, instr(p.device || ':', ':') - 1)"
        " = substr(r.device, 1, instr(r.device || ':', ':') - 1)"
        /* runs of this machine only: no imported baseline (another machine's, or an ensemble's
         * mean), no perturbed member of an ensemble */
        " AND p.imported = 0 AND NOT EXISTS (SELECT 1 FROM run_extra x WHERE x.run_id = p.id"
        " AND x.key = '" STORE_ENSEMBLE_MEMBER_KEY "')"
        " WHERE r.id = ?1 ORDER BY p.id DESC LIMIT ?2";
    *ids = NULL;
    *n = 0;
    sqlite3_stmt *s;
    if (prepare_for_run(st, sql, run_id, "listing a run's history", &s))
        return 2;
    sqlite3_bind_int(s, 2, limit > 0 ? limit : -1);
    int rc, cap = 0, ret = 0;
    while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            int64_t *grown = realloc(*ids, sizeof *grown * (size_t)cap);
            if (!grown) {
                log_error("%s: out of memory listing a run's history", st->path);
                ret = 2;
                break;
            }
            *ids = grown;
        }
        (*ids)[(*n)++] = sqlite3_column_int64(s, 0);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = db_fail(st, "listing a run's history", 2);
    sqlite3_finalize(s);
    if (ret) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return ret;
}
