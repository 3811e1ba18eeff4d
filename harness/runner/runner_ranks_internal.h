/* harness/runner/runner_ranks_internal.h: private to runner/: the ranks of a data-parallel run
 * (runner_ranks.c): the communicator from the launcher, each rank's device, agreeing on errors. */
#ifndef RUNNER_RANKS_INTERNAL_H
#define RUNNER_RANKS_INTERNAL_H

#include <signal.h>

#include "runner.h"

/* the flag SIGINT/SIGTERM set (runner.c): a collective's wait ends on it */
volatile sig_atomic_t *runner_stop_flag(void);
/* a->comm: the host communicator of the launcher's environment (a single one without a
 * launcher); its size must be s->world_size. a->comm_kind: what --comm resolves to on a->device
 * (COMM_MPI or COMM_NCCL). Every rank's scenario hash, --comm and a digest of each input file
 * (scenario_inputs) are compared with rank 0's. 0, or 1/2 after a message (2 on every rank when
 * a rank differs or stopped), before anything is opened or recorded. A rank that stops here for
 * a reason of its own (a world_size that is not the launcher's, a --comm refused) still joins
 * the job and tells the others */
int ranks_open(run_args *a, const scenario *s);
/* this rank's scenario did not load (rc, said): under a launcher with several ranks it still
 * joins the job and says so in ranks_open's scenario check, so that the other ranks stop with
 * exit 2 instead of waiting in MPI_Init for ever (srun ends no step when one task exits).
 * Returns rc */
int ranks_fail_early(const run_args *a, int rc);
/* a collective: every rank's device (NULL: did not open) of rank 0's backend and precision; 0,
 * or 2 on every rank (rank 0 names the ranks that differ), 1 on a communicator failure */
int ranks_same_device(comm *c, const device *d);
/* a->device for this rank: a spec without an index ("opencl") becomes the device of the rank's
 * local rank ("opencl:N", modulo the devices there are; for nccl one per rank, more ranks
 * than devices refused). NULL after a message */
device *ranks_device(const run_args *a);
/* with nccl (a collective): a->comm becomes the nccl communicator over d, after every rank's
 * device is checked; else 0 when d opened. 0, or 1/2 (every rank alike for nccl) */
int ranks_attach(run_args *a, device *d);
/* a collective: rc of every rank; the worst (2 over 1 over 0) returned on every rank, the
 * failing ranks named by rank 0 (what: "setting up"). A communicator failure is 1 with
 * *status TRAIN_FAILED */
int ranks_agree(comm *c, const char *what, int rc, train_status *status);
/* the training loop of a rank other than 0: nothing recorded, nothing printed but errors */
int ranks_follow(trainer *tr, const run_args *a, train_status *status);
/* the end of a run: a failure that the other ranks may not have seen (a device or
 * communicator error: status TRAIN_FAILED) ends every rank's process (comm_abort, exit code
 * rc); otherwise the communicator is closed */
void ranks_close(comm *c, int rc, train_status status);

#endif
