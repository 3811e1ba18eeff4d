/* harness/store/store_routing.c: the sparse-MoE expert counts of each step in table expert_tokens:
 * shape limits, written with their step in one transaction, read back as a routing_table. */
#define _POSIX_C_SOURCE 200809L
#include "store_routing_internal.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_logs.h"
#include "util/util.h"

int routing_shape_check(int layers, int experts, char *why, size_t len)
{
    if (layers < 1 || layers > STORE_MOE_MAX_LAYERS)
        snprintf(why, len, "%d MoE layers: not in [1, %d]", layers, STORE_MOE_MAX_LAYERS);
    else if (experts < 1 || experts > STORE_MOE_MAX_EXPERTS)
        snprintf(why, len, "%d experts: not in [1, %d]", experts, STORE_MOE_MAX_EXPERTS);
    else if ((int64_t)layers * experts > STORE_MOE_MAX_CELLS)
        snprintf(why, len, "%d layers x %d experts: more than %d counts per step", layers,
                 experts, STORE_MOE_MAX_CELLS);
    else
        return 0;
    return 1;
}

const int64_t *routing_counts(const routing_table *t, int i)
{
    return t->counts + (size_t)i * (size_t)t->layers * (size_t)t->experts;
}

int routing_find_step(const routing_table *t, int step)
{
    int lo = 0, hi = t->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (t->steps[mid] == step)
            return mid;
        if (t->steps[mid] < step)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

void routing_table_free(routing_table *t)
{
    free(t->steps);
    free(t->counts);
    memset(t, 0, sizeof *t);
}

int routing_present(const step_record *r)
{
    return r->expert_tokens && r->moe_layers > 0 && r->moe_experts > 0;
}

/* ---- writing ----------------------------------------------------------------------------- */

static int db_error(store *st, const char *what)
{
    log_error("%s: %s: %s", store_path(st), what, sqlite3_errmsg(store_handle(st)));
    return 1;
}

static int exec_sql(store *st, const char *sql, const char *what)
{
    return sqlite3_exec(store_handle(st), sql, NULL, NULL, NULL) == SQLITE_OK ? 0
                                                                               : db_error(st, what);
}

int routing_begin(store *st, const char *name)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SAVEPOINT %s", name);
    return exec_sql(st, sql, "starting the step's transaction");
}

int routing_end(store *st, const char *name, int rc)
{
    char sql[160];
    if (rc) {
        snprintf(sql, sizeof sql, "ROLLBACK TO %s; RELEASE %s", name, name);
        sqlite3_exec(store_handle(st), sql, NULL, NULL, NULL); /* the error is reported */
        return rc;
    }
    snprintf(sql, sizeof sql, "RELEASE %s", name);
    return exec_sql(st, sql, "committing the step with its expert counts");
}

/* the shape within the limits and every count >= 0; 0, or 1 after a message */
static int check_counts(store *st, const step_record *r)
{
    char why[160];
    if (routing_shape_check(r->moe_layers, r->moe_experts, why, sizeof why)) {
        log_error("%s: step %d: expert counts of %s", store_path(st), r->step, why);
        return 1;
    }
    size_t cells = (size_t)r->moe_layers * (size_t)r->moe_experts;
    for (size_t i = 0; i < cells; i++) {
        if (r->expert_tokens[i] < 0 || r->expert_tokens[i] > STORE_MOE_MAX_TOKENS) {
            log_error("%s: step %d: layer %zu, expert %zu: %lld tokens (a count is in [0, "
                      "%lld])", store_path(st), r->step, i / (size_t)r->moe_experts,
                      i % (size_t)r->moe_experts, (long long)r->expert_tokens[i],
                      (long long)STORE_MOE_MAX_TOKENS);
            return 1;
        }
    }
    return 0;
}

static int delete_counts(store *st, int64_t run_id, int step)
{
    static const char sql[] = "DELETE FROM expert_tokens WHERE run_id = ?1 AND step = ?2";
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(store_handle(st), sql, -1, &s, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 1, run_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 2, step);
    if (rc == SQLITE_OK) rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    sqlite3_finalize(s);
    return rc == SQLITE_OK ? 0 : db_error(st, "replacing a step's expert counts");
}

static int insert_counts(store *st, int64_t run_id, const step_record *r)
{
    static const char sql[] =
        "INSERT INTO expert_tokens(run_id, step, layer, expert, tokens) VALUES(?1,?2,?3,?4,?5)";
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(store_handle(st), sql, -1, &s, NULL);
    for (int l = 0; l < r->moe_layers && rc == SQLITE_OK; l++) {
        for (int e = 0; e < r->moe_experts && rc == SQLITE_OK; e++) {
            rc = sqlite3_bind_int64(s, 1, run_id);
            if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 2, r->step);
            if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 3, l);
            if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 4, e);
            if (rc == SQLITE_OK)
                rc = sqlite3_bind_int64(s, 5, r->expert_tokens[(size_t)l * r->moe_experts + e]);
            if (rc == SQLITE_OK) rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
            sqlite3_reset(s);
        }
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_OK)
        return 0;
    char what[96];
    snprintf(what, sizeof what, "inserting the expert counts of step %d", r->step);
    return db_error(st, what);
}

int routing_put(store *st, int64_t run_id, const step_record *r)
{
    if (check_counts(st, r) || delete_counts(st, run_id, r->step))
        return 1;
    return insert_counts(st, run_id, r);
}

/* ---- reading ----------------------------------------------------------------------------- */

/* the table's facts for a run: shape, steps, rows, smallest layer, expert and count */
typedef struct {
    int64_t max_layer, max_expert, steps, rows, min_layer, min_expert, min_tokens, max_tokens;
    int64_t not_integers; /* rows with text, a real or a blob in a column (min/max miss them) */
} routing_facts;

static int read_stmt(store *st, const char *sql, int64_t run_id, sqlite3_stmt **s)
{
    *s = NULL;
    if (sqlite3_prepare_v2(store_handle(st), sql, -1, s, NULL) == SQLITE_OK &&
        sqlite3_bind_int64(*s, 1, run_id) == SQLITE_OK)
        return 0;
    sqlite3_finalize(*s);
    *s = NULL;
    db_error(st, "reading expert_tokens");
    return 2;
}

static int read_facts(store *st, int64_t run_id, routing_facts *f)
{
    static const char sql[] =
        "SELECT max(layer), max(expert), count(DISTINCT step), count(*), min(layer),"
        " min(expert), min(tokens), max(tokens), ifnull(sum(typeof(step) <> 'integer'"
        " OR typeof(layer) <> 'integer' OR typeof(expert) <> 'integer'"
        " OR typeof(tokens) <> 'integer'), 0) FROM expert_tokens WHERE run_id = ?1";
    sqlite3_stmt *s;
    if (read_stmt(st, sql, run_id, &s))
        return 2;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        int64_t *v[] = {&f->max_layer,  &f->max_expert, &f->steps,      &f->rows,
                        &f->min_layer,  &f->min_expert, &f->min_tokens, &f->max_tokens,
                        &f->not_integers};
        for (int i = 0; i < 9; i++)
            *v[i] = sqlite3_column_int64(s, i);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 0 : (db_error(st, "reading expert_tokens"), 2);
}

/* the facts make a whole grid per step within the limits: shape into t; 0 or 2 */
static int check_facts(store *st, int64_t run_id, const routing_facts *f, routing_table *t)
{
    char why[160] = "";
    int64_t layers = f->max_layer + 1, experts = f->max_expert + 1;
    if (f->not_integers > 0) /* SQLite orders text above every number: min/max miss it */
        snprintf(why, sizeof why, "%lld rows hold text, a real or a blob where a whole number "
                 "goes", (long long)f->not_integers);
    else if (f->min_layer < 0 || f->min_expert < 0 || f->min_tokens < 0)
        snprintf(why, sizeof why, "a negative layer, expert or count");
    else if (f->max_tokens > STORE_MOE_MAX_TOKENS)
        snprintf(why, sizeof why, "a count of %lld tokens (at most %lld)",
                 (long long)f->max_tokens, (long long)STORE_MOE_MAX_TOKENS);
    else if (layers > STORE_MOE_MAX_LAYERS || experts > STORE_MOE_MAX_EXPERTS ||
             routing_shape_check((int)layers, (int)experts, why, sizeof why))
        snprintf(why, sizeof why, "%lld layers x %lld experts: over the limits (%d, %d, %d)",
                 (long long)layers, (long long)experts, STORE_MOE_MAX_LAYERS,
                 STORE_MOE_MAX_EXPERTS, STORE_MOE_MAX_CELLS);
    else if (f->rows != f->steps * layers * experts)
        snprintf(why, sizeof why, "%lld rows for %lld steps of %lld layers x %lld experts: some "
                 "step lacks counts", (long long)f->rows, (long long)f->steps, (long long)layers,
                 (long long)experts);
    else if (f->rows > STORE_MOE_MAX_VALUES)
        snprintf(why, sizeof why, "%lld counts: more than %d held at once", (long long)f->rows,
                 STORE_MOE_MAX_VALUES);
    if (why[0]) {
        log_error("%s: run %lld: malformed expert counts: %s", store_path(st), (long long)run_id,
                  why);
        return 2;
    }
    t->layers = (int)layers;
    t->experts = (int)experts;
    return 0;
}

/* the rows into t, at most the facts' steps and rows (a writer's later commit is not seen in
 * the read transaction store_get_routing holds, and is refused if it were) */
static int read_rows(store *st, int64_t run_id, const routing_facts *f, routing_table *t)
{
    static const char sql[] = "SELECT step, layer, expert, tokens FROM expert_tokens"
                              " WHERE run_id = ?1 ORDER BY step, layer, expert";
    sqlite3_stmt *s;
    if (read_stmt(st, sql, run_id, &s))
        return 2;
    size_t cells = (size_t)t->layers * (size_t)t->experts, row = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (row >= (size_t)f->rows || (row % cells == 0 && t->n >= f->steps)) {
            sqlite3_finalize(s);
            log_error("%s: run %lld: the expert counts changed while they were read",
                      store_path(st), (long long)run_id);
            return 2;
        }
        int step = sqlite3_column_int(s, 0);
        if (row % cells == 0)
            t->steps[t->n++] = step;
        t->counts[row++] = sqlite3_column_int64(s, 3);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : (db_error(st, "reading expert_tokens"), 2);
}

static int get_routing(store *st, int64_t run_id, routing_table *t)
{
    routing_facts f;
    if (read_facts(st, run_id, &f))
        return 2;
    if (f.rows == 0)
        return 0;
    if (check_facts(st, run_id, &f, t))
        return 2;
    t->steps = malloc(sizeof *t->steps * (size_t)f.steps);
    t->counts = malloc(sizeof *t->counts * (size_t)f.rows);
    if (!t->steps || !t->counts) {
        log_error("%s: out of memory for the %lld expert counts of run %lld", store_path(st),
                  (long long)f.rows, (long long)run_id);
        return 2;
    }
    return read_rows(st, run_id, &f, t);
}

/* the facts and the rows read in one read transaction (one snapshot of a store a run is
 * writing), unless the caller holds a transaction already */
int store_get_routing(store *st, int64_t run_id, routing_table *t)
{
    memset(t, 0, sizeof *t);
    int own = sqlite3_get_autocommit(store_handle(st));
    if (own && sqlite3_exec(store_handle(st), "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        db_error(st, "reading expert_tokens");
        return 2;
    }
    int rc = get_routing(st, run_id, t);
    if (own)
        sqlite3_exec(store_handle(st), "COMMIT", NULL, NULL, NULL); /* a read: nothing to keep */
    if (rc)
        routing_table_free(t);
    return rc;
}
