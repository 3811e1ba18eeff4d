/* harness/judge/compare_db.h: a stored run judged against a baseline found by label, run id or file
 * (importing committed baseline files on first use), the scenario-hash check, the verdict stored,
 * printed as text or JSON; and the throughput history check. Used by compare, run and report. */
#ifndef COMPARE_DB_H
#define COMPARE_DB_H

#include <jansson.h>
#include <stdio.h>

#include "baseline.h"
#include "compare.h"
#include "history.h"
#include "store/store.h"

/* the last baseline read from a store, so judging many runs against one baseline reads it once */
typedef struct {
    const store *st;
    int64_t id;
    baseline b;
} baseline_cache;
void baseline_cache_free(baseline_cache *c);

typedef struct {
    const char *spec;          /* LABEL, RUN id or FILE (has a '/' or ends in .baseline);
                                  NULL or "": the label the run's scenario names ("baseline") */
    const char *scenario_path; /* the run's scenario file (committed baselines are looked for in
                                  its ../baselines); NULL when unknown */
    const char *baselines_dir; /* looked in first; NULL for none */
    int force;                 /* compare even though the scenario hashes differ */
    int warmup;                /* steps left out of the throughput median; < 0: the default */
    baseline_cache *cache;     /* NULL, or where to keep the baseline between calls */
    const char *golden;        /* the golden run: LABEL, RUN id or FILE; NULL or "": the store's
                                  label "golden" of the scenario (or its committed file), none
                                  when there is neither */
    const char *verdict;       /* "band", "error_ratio", "ensemble": overrides the scenario's
                                  tolerances.verdict; NULL: the scenario's (default band) */
} baseline_query;

/* why judge_run failed, so that its callers can tell an unusable baseline (the report still
 * gives the run a row) from an input asked for that is not there (an input error) */
typedef enum {
    JUDGE_OK,
    JUDGE_NO_RUN,             /* the run itself could not be read */
    JUDGE_NO_BASELINE,        /* no baseline found, unfinished, another scenario, bad tolerances */
    JUDGE_NO_GOLDEN,          /* the golden named (--golden) is missing or unfit */
    JUDGE_NO_GOLDEN_FOR_VERDICT, /* the error_ratio verdict decides, and there is no golden */
    JUDGE_NO_ENSEMBLE,        /* the ensemble verdict decides, and the baseline is a single run */
    JUDGE_STORE,              /* the store could not be locked or written */
} judge_failure;

/* the failure in a few words for a summary cell: "no usable baseline", "no golden run, which the
 * error_ratio verdict needs", ...; "" for JUDGE_OK */
const char *judge_failure_text(judge_failure f);
/* 1 when f is a missing or unfit input that was asked for (a golden, the deciding verdict's
 * input) or a store failure: never a row without a baseline, always exit 2 */
int judge_failure_is_input_error(judge_failure f);

/* where one side of a comparison ran: the store's host, threads, load and imported mark */
typedef struct {
    char host[256];
    int threads;               /* 0: not recorded */
    double load_avg;           /* NaN: not recorded */
    int imported;
} run_host;

typedef struct {
    int64_t run_id, base_id;
    baseline run, base;        /* both read from the store (baseline_from_run) */
    run_host run_at, base_at;  /* the hosts they ran on */
    int same_host;             /* 1 when both name the same host (and neither is unknown) */
    char origin[512];          /* where the baseline came from, for people */
    int64_t imported_id;       /* the run a baseline file was imported as during judge_run (0:
                                  none); origin names it only once the import is committed */
    compare_config cfg;
    compare_result res;
    int forced;                /* the scenarios differ and --force compared anyway */
    char diff[1024];           /* the fields in which they differ */
    int has_golden;            /* a golden run was found: golden, golden_id, golden_origin */
    baseline golden;
    int64_t golden_id;         /* 0: read from a file, not the store */
    char golden_origin[512];
    judge_failure failure;     /* why judge_run returned non-zero; JUDGE_OK when it did not */
} judgement;

/* Loads run_id, finds its golden (when one is named or the deciding verdict needs it) and its
 * baseline, checks the scenario hashes and compares. Returns 0 (j->res holds the verdict), or 2
 * after a message (no such run, baseline or golden, malformed baseline file, scenarios that
 * differ without force, a deciding verdict without its input), 1 when the store could not be
 * locked or written; j->failure says which. Runs in one write transaction: a baseline file it
 * imported is kept only when it returns 0. j must be freed with judge_free either way. */
int judge_run(store *st, int64_t run_id, const baseline_query *q, judgement *j);

/* Before a run of scenario (its name; its JSON text and hash, NULL when unknown; its dtype) is
 * recorded: whether judge_run will find its baseline by q (st: the store, NULL when there is
 * none yet), finished (status ok), and of the same scenario (unless q->force; not checked when
 * the hash is NULL). Reads only (compare_precheck.c). 0 when it will, or when only the run can
 * tell (a baseline URL is fetched then); 2 after a message: no such label, run or default
 * baseline, an unfinished one, or another scenario. */
int judge_baseline_known(store *st, const baseline_query *q, const char *scenario,
                         const char *scenario_json, const char *scenario_hash, const char *dtype);
/* judge_baseline_known, which also checks what the deciding verdict needs (q->verdict, else the
 * scenario's tolerances.verdict): a golden run for error_ratio (and the one q->golden names,
 * whatever decides), an ensemble baseline for ensemble. 0, or 2 after a message with *why
 * saying what is missing (JUDGE_NO_BASELINE, JUDGE_NO_GOLDEN, ...). */
int judge_inputs_known(store *st, const baseline_query *q, const char *scenario,
                       const char *scenario_json, const char *scenario_hash, const char *dtype,
                       judge_failure *why);
/* Only the inputs beyond the baseline, for a run whose baseline may be missing (a report row
 * without one is no error): the golden as judge_inputs_known checks it, and the ensemble when
 * the baseline is found and usable. 0, or 2 after a message with *why set. */
int judge_verdict_inputs_known(store *st, const baseline_query *q, const char *scenario,
                               const char *scenario_json, const char *scenario_hash,
                               const char *dtype, judge_failure *why);
/* train.steps of a scenario's JSON text; 0 when it has none (an exec without a scenario) */
int scenario_train_steps(const char *scenario_json);
/* The golden run of j's run (compare_golden.c): q->golden, else the label "golden" of the
 * scenario when there is one. 0 (j->has_golden says whether one was found), or 2 after a message:
 * a golden named that is not there, not finished ok, not fp64 or of another scenario. The
 * default golden that is unfit so is left out with a warning (0, no golden). */
int judge_find_golden(store *st, judgement *j, const baseline_query *q);
/* "vm, 4 threads, load 1.20" (parts not recorded left out; "unknown host") into out */
void run_host_text(const run_host *h, char *out, size_t len);
/* 1 when the throughput ratio is gated (the scenario sets min_throughput_ratio) */
int judge_throughput_gated(const judgement *j);
/* Stores the verdict in the comparisons table. 0 or 1. */
int judge_store(store *st, const judgement *j);
void judge_print(FILE *f, const judgement *j);
json_t *judge_json(const judgement *j);
void judge_free(judgement *j);

/* The compare configuration for a run: defaults of the looser of the two dtypes, then the
 * scenario JSON's "tolerances" over them; also its default baseline label into label[len]
 * ("" when none). Returns 0, or 2 when a tolerance there is not a number. */
int scenario_compare_config(const char *scenario_json, const char *run_dtype,
                            const char *base_dtype, compare_config *c, char *label, size_t len);

typedef struct {
    int64_t run_id;
    baseline run;
    int warmup;
    int window;                /* previous runs looked at, newest first */
    int64_t *prev_ids;
    double *prev_values;
    int n_prev;
    history_config cfg;
    history_result res;
    verdict v;                 /* pass, fail (regressed), incomplete or diverged (the run) */
} history_judgement;

/* Holds run_id's median tokens/s against its previous runs. 0, or 2 after a message. */
int judge_history(store *st, int64_t run_id, history_judgement *h);
int judge_history_store(store *st, const history_judgement *h);
void judge_history_print(FILE *f, const history_judgement *h);
json_t *judge_history_json(const history_judgement *h);
void judge_history_free(history_judgement *h);

#endif
