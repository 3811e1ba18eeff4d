/* harness/judge/compare_db_internal.h: what compare_db.c shares with compare_golden.c and
 * compare_precheck.c only: the kinds of baseline spec, the committed-file lookup, the scenarios. */
#ifndef COMPARE_DB_INTERNAL_H
#define COMPARE_DB_INTERNAL_H

#include <stddef.h>

#include "compare_db.h"

/* a FILE spec: has a '/' or ends in .baseline */
int is_file_spec(const char *spec);
/* a RUN id spec: digits only */
int is_run_spec(const char *spec);
/* the committed file of scenario + label: 1 and out set when found, else 0 and the paths tried */
int find_file(const baseline_query *q, const char *scenario, const char *label, char *out,
              size_t len, char *tried, size_t tlen);
/* the committed file at path in the store: its stored copy (by label, else by content), else
 * imported, its label set where free; 0 and *id, else 2 after a message */
int judge_store_file(store *st, const char *path, int64_t *id);
/* 1 when two scenario texts differ at most in "baseline" */
int same_but_baseline(const char *a, const char *b);
/* 1 when a run of (run_hash, run_json) and a baseline of (base_hash, base_json) ran different
 * scenarios, the fields that differ named in diff[len] for people; 0 when they ran the same */
int scenarios_differ(const char *run_hash, const char *run_json, const char *base_hash,
                     const char *base_json, char *diff, size_t len);

/* the verdict that decides a run of scenario_json: q->verdict, else the scenario's
 * tolerances.verdict, else band (a malformed one is left to scenario_compare_config to name) */
verdict_gate judge_gate_of(const baseline_query *q, const char *scenario_json);
/* the messages of a deciding verdict without its input, who naming the run ("run 12") or the
 * scenario; both return EXIT_USAGE */
int golden_missing_error(const char *who, const char *scenario);
int ensemble_missing_error(const char *who, const char *origin);
/* the scenario's "baseline": {"url": URL, "sha256": HEX} fetched (or found in the cache) and
 * verified: 0 and its local path in path, 1 when the scenario names no URL, 2 after a message */
int scenario_baseline_url(const char *scenario_json, char *path, size_t len);

#endif
