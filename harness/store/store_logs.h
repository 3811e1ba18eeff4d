/* harness/store/store_logs.h: the store's additions for exec and ingest (issue 9): raw log chunks,
 * steps written again as later lines complete them, every rank's steps, run_extra keys. */
#ifndef STORE_LOGS_H
#define STORE_LOGS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef struct sqlite3 sqlite3;
/* store.c: the open connection, whether it was opened read-only, the file's path */
sqlite3 *store_handle(store *st);
int store_is_readonly(const store *st);
const char *store_path(const store *st);

/* Appends a chunk of raw output (any bytes) from source ("stdout", "stderr", a file). 0 or 1. */
int store_add_log(store *st, int64_t run_id, const char *source, const char *data, size_t len);
/* Inserts or replaces one step of the run (the run's series: rank 0). 0 or 1. */
int store_put_step(store *st, int64_t run_id, const step_record *r);
/* Inserts or replaces one step of one rank (every rank, rank 0 included). 0 or 1. */
int store_put_rank_step(store *st, int64_t run_id, int rank, const step_record *r);
/* Appends a run_extra key. 0 or 1. */
int store_add_extra(store *st, int64_t run_id, const char *key, const char *value);
/* Sets the identity columns the workload reported; NULL or "" leaves a column as it is, and
 * world_size/mem_total < 1 too. 0 or 1. */
int store_set_run_identity(store *st, int64_t run_id, const char *device_name,
                           const char *driver_version, const char *runtime_version,
                           int world_size, int64_t mem_total_bytes);
/* Calls fn for each log chunk of a run in order. 0, 2 on error, or fn's nonzero return. */
int store_each_log(store *st, int64_t run_id,
                   int (*fn)(const char *source, const void *data, size_t len, void *arg),
                   void *arg);
/* Calls fn for each rank step of a run, by rank then step. 0, 2, or fn's nonzero return. */
int store_each_rank_step(store *st, int64_t run_id,
                         int (*fn)(int rank, const step_record *r, void *arg), void *arg);

#endif
