/* harness/store/store_comm.h: the store's table of `harness comm-check` results (issue 12): one
 * row per collective and size, grouped by check. */
#ifndef STORE_COMM_H
#define STORE_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef struct {
    const char *host, *launcher, *comm, *device, *device_name;
    int world_size;
} comm_check_meta;

typedef struct {
    const char *op;
    int64_t bytes, count;
    int iters;
    double time_us, algbw_gbs, busbw_gbs;
    int64_t wrong;
    int first_bad_rank; /* -1: none (stored as NULL) */
} comm_check_row;

/* the id the next check's rows share (one more than the largest). 0 or 1 */
int store_next_comm_check(store *st, int64_t *check_id);
/* one row; status 'wrong' when row->wrong > 0. 0 or 1 (message) */
int store_add_comm_check(store *st, int64_t check_id, const comm_check_meta *m,
                         const comm_check_row *row);

/* the peak memory of each rank of a data-parallel run (rank_steps), as show and report print
 * it: "max 6.6 MiB (rank 1); rank 0 6.2 MiB, rank 1 6.6 MiB"; "" for a run without rank rows.
 * *ranks: how many ranks have rows. 0, or 2 after a message */
int store_rank_peaks_text(store *st, int64_t run_id, char *out, size_t len, int *ranks);

#endif
