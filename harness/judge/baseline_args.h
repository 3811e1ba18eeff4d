/* harness/judge/baseline_args.h: the checks of --baseline and --baselines that run, exec,
 * ingest, compare and report make before anything is trained, run or recorded. */
#ifndef BASELINE_ARGS_H
#define BASELINE_ARGS_H

#include "store/store.h"

/* a baseline spec naming a file (docs/compare.md: it has a '/' or ends in .baseline) must read
 * as a baseline (its error printed); 0 for NULL, a label or a run id, else EXIT_USAGE */
int baseline_file_spec_check(const char *spec);

/* --baselines DIR (when given) an existing folder and --baseline (when a file) a baseline;
 * 0, or EXIT_USAGE after a message that starts with cmd */
int baseline_args_check(const char *cmd, const char *baseline, const char *baselines);

/* --golden G (when given): a file must read as a baseline; a run id must be in st (when st is
 * not NULL: the store is open). A label is looked up per scenario when runs are judged. 0, or
 * EXIT_USAGE after a message that starts with cmd */
int golden_arg_check(const char *cmd, store *st, const char *golden);

#endif
