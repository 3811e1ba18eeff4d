/* harness/ingest/exec_run.h: what exec and ingest share: the new run's row (scenario or none, the
 * device label), the environment kept with it, and the --compare judgement. */
#ifndef EXEC_RUN_H
#define EXEC_RUN_H

#include <stdint.h>

#include "exec_record.h"
#include "train/train.h"
#include "store/store.h"

/* Inserts the run: the scenario's name, JSON and hash when s is not NULL, else name (e.g.
 * "exec:train.py"); device label; world_size from WORLD_SIZE or the scenario; this host and its
 * load, or (from_log: `ingest` of a log made elsewhere) no host and no load. 0 or 1. */
int exec_begin_run(store *st, const scenario *s, const char *name, const char *device,
                   int from_log, int64_t *run_id);
/* tokens of one optimizer step from the scenario (batch_size x gradient_accumulation_steps x
 * seq_len x world size, as docs/scenario.md defines it), 0 without one */
int64_t exec_tokens_per_step(const scenario *s);
/* run_extra: env.NAME for the device, rank and Slurm variables that are set */
void exec_keep_env(recorder *r);
/* Judges run_id as `harness run --compare` does (baseline B or the scenario's label, committed
 * files under D first) and prints the verdict on stderr. Returns the verdict's exit code, or 2
 * when there is no usable baseline. */
int exec_compare(store *st, int64_t run_id, const char *scenario_path, const char *baseline,
                 const char *baselines);
/* The exit code of a run judged with --compare: 2 when either step says so (an input error, no
 * usable baseline), else the recording's own when it is not 0 (a failed, diverged or
 * interrupted run never exits 0, whatever its verdict), else the verdict's (0 pass, 1 not). */
int exec_judged_exit(int recorded, int judged);
/* Before anything runs or is recorded: whether exec_compare will find the baseline of a run of
 * s (NULL: none; the run is then called name) in the store at db (not created when missing).
 * 0, or 2 after a message: no such label or run, no default baseline. */
int exec_baseline_known(const char *db, const scenario *s, const char *name,
                        const char *baseline, const char *baselines);

#endif
