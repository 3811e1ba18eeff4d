/* harness/judge/baseline.h: the baseline file: a finished reference run of one scenario on one device
 * as `key: value` metadata and a columnar step table (docs/baselines.md): parse, write, compare. */
#ifndef BASELINE_H
#define BASELINE_H

#include <stdint.h>
#include <stdio.h>

#include "store/store.h"

#define BASELINE_FORMAT "harness-baseline 1"
/* the same with the optional expert-count section (a sparse-MoE run's routing); written only
 * when the run has counts, so files without them stay version 1 */
#define BASELINE_FORMAT_MOE "harness-baseline 2"
/* an ensemble (`harness baseline record --ensemble N`): the step table's loss is the mean of N
 * runs and its column loss_std their spread; expert counts are allowed as in version 2 */
#define BASELINE_FORMAT_ENSEMBLE "harness-baseline 3"

typedef struct {
    char *key, *value;
} baseline_kv;

typedef struct {
    char label[256];
    char scenario[256], scenario_hash[65];
    char device[64], device_name[256], vendor[256], driver_version[256], runtime_version[256];
    char dtype[16], host[256], date[32], finished_at[32];
    char harness_version[32], git_commit[64], status[16];
    int world_size;
    int64_t mem_total_bytes;
    char *scenario_json;     /* compact, sorted JSON of the scenario; NULL when absent */
    baseline_kv *extra;      /* metadata keys this harness does not know, in file order */
    int n_extra;
    step_record *steps;      /* strictly increasing step numbers >= 1 (expert_tokens NULL) */
    int n_steps;
    routing_table routing;   /* expert counts of some steps (format 2); n 0 when none */
    int ensemble_runs;       /* format 3: the runs the loss is the mean of; 0: not an ensemble */
    double *loss_std;        /* format 3: per step their sample standard deviation; else NULL */
} baseline;

/* Parses a baseline from text[0..len) read from `file` (used in messages). Never reads past
 * len; any malformed input ends in one message "FILE:LINE: FIELD: what is wrong" and 2.
 * Returns 0 or 2; on 2, b holds nothing to free. */
int baseline_parse(const char *text, size_t len, const char *file, baseline *b);
/* baseline_parse of a file; 2 with a message when it cannot be read */
int baseline_read(const char *path, baseline *b);
/* Writes b in the file format (doubles as %.17g so they read back bit-identical). 0, or 1
 * when writing failed. */
int baseline_write(FILE *f, const baseline *b);
/* baseline_write into path: a regular file (or a new name) through a temporary file and rename,
 * a symbolic link through to its target, a device or FIFO (/dev/stdout) in place; 0, 1 with a
 * message when writing failed, 2 for a directory or a dangling link */
int baseline_save(const char *path, const baseline *b);
/* 1 when path is a baseline file of another scenario or label than b's (its "scenario:" or
 * "label:" line differs): two names that clean to one file name ("x y", "x_y"); 0 otherwise
 * (no such file, not a baseline, or b's scenario and label) */
int baseline_file_of_other_scenario(const char *path, const baseline *b);
/* 1 when a and b write out to the same bytes */
int baseline_same(const baseline *a, const baseline *b);
/* adds or replaces an extra metadata key; 0 or -1 (out of memory) */
int baseline_set_extra(baseline *b, const char *key, const char *value);
/* removes the extra metadata key (keys are unique), keeping the others in order */
void baseline_remove_extra(baseline *b, const char *key);
void baseline_free(baseline *b);
/* a deep copy of src into dst; 0, or -1 when out of memory (dst then holds nothing) */
int baseline_copy(baseline *dst, const baseline *src);

/* Canonical form of a scenario JSON text (sorted keys, compact), malloc'd; NULL if the text
 * is not JSON. Its sha256 is the scenario hash. */
char *scenario_canonical_json(const char *json);
/* Names the fields where two scenario JSON texts differ as "train.lr (0.003 vs 0.001), ..."
 * into out; returns how many differ, or -1 when either text is not JSON. */
int scenario_json_diff(const char *a, const char *b, char *out, size_t len);

/* ---- with the store (harness/judge/baseline_db.c) ---- */
/* Reads stored run run_id as a baseline labelled `label` (may be ""). Returns 0, 1 when there is
 * no such run, 2 on an error (messages printed). Any status is read; callers check b->status. */
int baseline_from_run(store *st, int64_t run_id, const char *label, baseline *b);
/* Adds run_id's threads and load average to b's extra keys (`threads`, `load_avg`) where the
 * run recorded them and b has no such key yet, so that a recorded file keeps them. 0 or 2. */
int baseline_add_host_facts(store *st, int64_t run_id, baseline *b);
/* Imports b as a new finished run (steps and extra keys included). 0 or 1. */
int baseline_import(store *st, const baseline *b, int64_t *run_id);
/* The path of the committed file for scenario + label in dir: DIR/SCENARIO.LABEL.baseline, with
 * both names made safe for a file name (escape.h) */
void baseline_file_name(const char *dir, const char *scenario, const char *label, char *out,
                        size_t len);

#endif
