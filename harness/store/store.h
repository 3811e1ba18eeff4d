/* harness/store/store.h: the SQLite store of runs and their per-step metrics (WAL mode, schema version
 * in PRAGMA user_version with forward migrations). See docs/store.md for the schema. */
#ifndef STORE_H
#define STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct store store;

/* Opens (creating and migrating as needed) the database at path. Returns 0, or 2 after printing
 * a message naming the file (not a database, newer schema than this harness knows, ...). */
int store_open(const char *path, store **out);
void store_close(store *st);
/* Opens a store that must already exist, for commands that read its runs and write beside them
 * (compare's verdicts, report, baseline record): as store_open (migrating an older schema), but
 * a missing file, an empty file or a SQLite database without the schema is refused (2, with a
 * message) and left as it was. */
int store_open_existing(const char *path, store **out);
/* 1 when a file with at least one byte and some schema object is at path: a store to look a
 * baseline up in before a run (an empty file or an empty SQLite database is a store not made
 * yet, as a missing one) */
int store_file_has_data(const char *path);
/* Opens an existing store for reading only: never creates, migrates or writes the file. Returns
 * 0, or 2 after a message ("no database at FILE", not a database, an older or newer schema). The
 * write functions refuse (1) on a store opened this way. */
int store_open_readonly(const char *path, store **out);
/* The schema version (PRAGMA user_version) this harness creates and migrates to. */
int store_schema_version(void);

typedef struct {
    const char *scenario, *scenario_json, *scenario_hash;
    const char *device, *device_name, *vendor, *driver_version, *runtime_version;
    int world_size;
    const char *dtype, *host, *git_commit, *harness_version;
    int64_t mem_total_bytes;
    int threads;     /* CPU threads the run used (hostinfo.h); 0: unknown, stored as NULL */
    double load_avg; /* 1-minute load average when it started; NaN: unknown, stored as NULL */
} run_meta;

typedef struct {
    int step;
    double loss, grad_norm, lr;
    int64_t tokens;             /* tokens this step (batch * seq_len * ranks) */
    double step_ms, tokens_per_s;
    int64_t mem_peak_bytes, mem_used_bytes, mem_total_bytes;
    int threads;                /* CPU threads the step ran with (cpu backends); 0 unknown */
    /* fp16 dynamic loss scaling (schema version 8): the scale the step's loss was multiplied by,
     * and 1 when its optimizer step was skipped (Inf/NaN gradients); loss_scale 0: none (NULL
     * in the store, skipped then 0) */
    double loss_scale;
    int skipped;
    /* sparse-MoE routing of this step's forward: expert_tokens[layer * moe_experts + expert]
     * tokens sent to each expert of each MoE layer; NULL (and 0, 0) for a model without */
    int moe_layers, moe_experts;
    const int64_t *expert_tokens;
    /* the reals above that were never recorded (STEP_NO_*; they hold NaN): a log that gives no
     * grad norm, NULL in the store, '-' in a baseline file; a recorded NaN (a diverged value,
     * 'nan') is not one of them. 0: all recorded */
    unsigned unrecorded;
} step_record;

#define STEP_NO_LOSS 1u
#define STEP_NO_GRAD_NORM 2u
#define STEP_NO_LR 4u
#define STEP_NO_STEP_MS 8u
#define STEP_NO_TOKENS_PER_S 16u

/* the STEP_NO_* bit of the real at byte offset off in a step_record; 0 for the others */
static inline unsigned step_unrecorded_bit(size_t off)
{
    return off == offsetof(step_record, loss)           ? STEP_NO_LOSS
           : off == offsetof(step_record, grad_norm)    ? STEP_NO_GRAD_NORM
           : off == offsetof(step_record, lr)           ? STEP_NO_LR
           : off == offsetof(step_record, step_ms)      ? STEP_NO_STEP_MS
           : off == offsetof(step_record, tokens_per_s) ? STEP_NO_TOKENS_PER_S
                                                        : 0;
}

/* Inserts a runs row with status 'running' and started_at now. Returns 0 or 1 (message). */
int store_begin_run(store *st, const run_meta *m, int64_t *run_id);
/* Appends one step; committed when it returns (a run killed later keeps it). 0 or 1. */
int store_add_step(store *st, int64_t run_id, const step_record *r);
/* status: "ok" | "failed" | "diverged"; error may be NULL. Sets finished_at. 0 or 1. */
int store_finish_run(store *st, int64_t run_id, const char *status, const char *error);

/* ---- reading ---- */
typedef struct {
    int64_t id;
    char scenario[256], scenario_hash[65], device[64], device_name[256], dtype[16], host[256];
    char git_commit[64], harness_version[32], started_at[32], finished_at[32], status[16];
    char error[512];
    int world_size;
    int n_steps;
    double last_loss;
    int last_loss_recorded; /* the last step's loss is in the store (NULL: never recorded) */
    int64_t mem_total_bytes;
    int threads;     /* 0 when not recorded */
    double load_avg; /* NaN when not recorded */
    int imported;    /* 1: an imported baseline (store_import_run), not a run of this machine */
    int ensemble_member; /* 1: a perturbed member of an ensemble baseline (a run_extra key
                            STORE_ENSEMBLE_MEMBER_KEY, on a run that is not imported) */
    int steps_override;  /* run --steps N of a scenario whose file says another count: N, else
                            0 (run_extra STORE_STEPS_OVERRIDE_KEY) */
} run_row;

/* The run_extra key that marks a member of an ensemble baseline (`baseline record --ensemble`):
 * its value is the member's perturbation (0..N-1). Such a run trained with a perturbed GEMM
 * order: it is never "the newest run" report picks, never part of compare --history, and not
 * recorded as a baseline of its own. */
#define STORE_ENSEMBLE_MEMBER_KEY "ensemble_member"

/* The run_extra key of a run trained with `run --steps N` where the scenario file says another
 * count: N. Such a run is of another scenario (its hash differs): report keeps it in a row of
 * its own, beside the newest run of the scenario as the file says it. */
#define STORE_STEPS_OVERRIDE_KEY "steps_override"

/* Fills *out with run id; returns 0, 1 when there is no such run (message printed), 2 on error */
int store_get_run(store *st, int64_t run_id, run_row *out);
/* The scenario JSON of a run (malloc'd, caller frees), NULL if none */
char *store_get_run_json(store *st, int64_t run_id);
/* Calls fn for every run, newest first (by id: the order runs were recorded or imported;
 * limit 0 = all). Returns 0 or 2. A nonzero return from
 * fn stops the walk, and store_each_run returns that value. */
int store_each_run(store *st, int limit, int (*fn)(const run_row *r, void *arg), void *arg);
/* The device identity of a run that run_row leaves out. */
typedef struct {
    char vendor[256], driver_version[256], runtime_version[256];
} run_device;
/* Fills *out for run id; returns 0, 1 when there is no such run (message printed), 2 on error */
int store_get_run_device(store *st, int64_t run_id, run_device *out);
/* Loads all steps of a run in step order into a malloc'd array (caller frees). 0 or 2. */
int store_get_steps(store *st, int64_t run_id, step_record **steps, int *n);

/* ---- sparse-MoE routing (schema version 6: table expert_tokens, docs/store.md) --------------
 * A step_record's expert counts are written with its step, in the step's transaction, by
 * store_add_step, store_put_step and store_import_run; store_get_steps leaves them out (NULL)
 * and store_get_routing reads them. Any layers x experts within these limits: */
#define STORE_MOE_MAX_LAYERS 1024
#define STORE_MOE_MAX_EXPERTS 1024
#define STORE_MOE_MAX_CELLS 65536      /* layers * experts of one step */
#define STORE_MOE_MAX_VALUES (1 << 26) /* counts of one run held at once (512 MiB) */
/* the most tokens one expert may receive in one step (2^40): the sums over a step's counts
 * (65536 of them) then stay far inside int64 */
#define STORE_MOE_MAX_TOKENS ((int64_t)1 << 40)

typedef struct {
    int layers, experts; /* 0 and 0: no step has counts */
    int n;               /* steps with counts */
    int *steps;          /* their step numbers, increasing */
    int64_t *counts;     /* n x layers x experts, row-major (step, layer, expert) */
} routing_table;

/* 0 when layers x experts is within the limits above, else 1 with the reason in why[len] */
int routing_shape_check(int layers, int experts, char *why, size_t len);
/* the counts (layers x experts) of the i-th step of t */
const int64_t *routing_counts(const routing_table *t, int i);
/* the index of step in t->steps, -1 when that step has no counts */
int routing_find_step(const routing_table *t, int step);
/* Reads every count of a run into t (t->n 0 when it has none). 0, or 2 after a message (rows
 * that are not a whole layers x experts grid per step, a shape over the limits, no memory). */
int store_get_routing(store *st, int64_t run_id, routing_table *t);
void routing_table_free(routing_table *t);

/* ---- baselines, comparisons and history (added for compare and report) ----------------------
 * Schema version 8 adds steps.loss_scale and steps.skipped; 7 comm_checks;
 * 6 adds expert_tokens (above); 5 run_logs and rank_steps; 4 steps.threads.
 * Schema version 3 adds runs.threads, runs.load_avg and runs.imported.
 * Schema version 2: baselines are keyed by (scenario, label), so one label ("cpu", "a100")
 * names a baseline per scenario; run_extra keeps the metadata keys of an imported baseline that
 * the runs table has no column for (source, torch_version, ...). See docs/store.md. */

/* A finished run to insert whole (an imported baseline): times from the file, status ok. */
typedef struct {
    run_meta meta;
    const char *started_at, *finished_at; /* "" or NULL: now */
    const step_record *steps;
    int n_steps;
    const char *const *extra; /* key, value, key, value, ... */
    int n_extra;              /* pairs */
} run_import;
/* Inserts the run (marked imported), its steps and extra keys in one transaction (a savepoint:
 * its own, or part of the caller's store_write_begin). Returns 0 or 1 (message). */
int store_import_run(store *st, const run_import *in, int64_t *run_id);

/* A write transaction around several calls (BEGIN IMMEDIATE: the write lock at once, waiting up
 * to the busy timeout), so that work which may still fail after writing leaves the store as it
 * was: store_write_end(st, 0) commits, store_write_end(st, rc != 0) rolls every write since
 * store_write_begin back. Not nested. 0, or 1 after a message naming what. */
int store_write_begin(store *st, const char *what);
/* rc 0: COMMIT (1 after a message when it fails); else ROLLBACK and rc is returned */
int store_write_end(store *st, int rc);
/* Calls fn(key, value) for each extra metadata key of a run, in insertion order. 0 or 2. */
int store_each_run_extra(store *st, int64_t run_id,
                         int (*fn)(const char *key, const char *value, void *arg), void *arg);

/* Points label of scenario at run_id (replacing what it pointed at). 0 or 1. */
int store_set_baseline(store *st, const char *scenario, const char *label, int64_t run_id);
/* Looks a label of a scenario up: 0 found (*run_id set), 1 no such label (no message), 2 error */
int store_find_baseline(store *st, const char *scenario, const char *label, int64_t *run_id);
typedef struct {
    char scenario[256], label[256], created_at[32];
    int64_t run_id;
} baseline_row;
/* Calls fn for every baseline label, by scenario then label. 0, 2, or fn's nonzero return. */
int store_each_baseline(store *st, int (*fn)(const baseline_row *b, void *arg), void *arg);

/* Records the result of a comparison. first_failing_step 0 is stored as NULL. 0 or 1. */
int store_add_comparison(store *st, int64_t run_id, int64_t baseline_run_id, const char *verdict,
                         int first_failing_step, double max_abs, double max_rel,
                         const char *details_json);
/* The newest comparison of run_id: its verdict into verdict[16]; 0, 1 when none, 2 on error */
int store_last_verdict(store *st, int64_t run_id, char verdict[16]);
/* The newest comparison of run_id with a baseline (history checks left out): its verdict into
 * verdict[16]; 0, 1 when none, 2 on error */
int store_last_baseline_verdict(store *st, int64_t run_id, char verdict[16]);
/* Ids of the runs before run_id with the same scenario hash, device name, backend and dtype and
 * status ok, newest first, at most limit (malloc'd, caller frees); runs of this machine only:
 * imported runs and ensemble members are left out. 0 or 2. */
int store_previous_runs(store *st, int64_t run_id, int limit, int64_t **ids, int *n);

/* the store's additions for exec and ingest: part of the store/ face */
#include "store_logs.h"
/* comm-check results (issue 12) */
#include "store_comm.h"
/* the spread of ensemble baselines (issue 13) */
#include "store_ensemble.h"

/* "file:PATH" plus query (e.g. "?immutable=1"), PATH percent-encoded and a relative one begun
 * with "./", for sqlite3_open_v2 with SQLITE_OPEN_URI: the path is taken literally (':memory:'
 * or 'file:x?mode=memory' name files). malloc'd; NULL when out of memory */
char *store_literal_uri(const char *path, const char *query);

#endif
