/* harness/comm/comm.h: the public face of comm/: the communicator between the ranks of a
 * data-parallel run (single, mpi, nccl), the launcher's environment, and comm-check. */
#ifndef COMM_H
#define COMM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

#define COMM_ERR 512
#define COMM_DEFAULT_TIMEOUT_S 300.0

/* ---- the launcher's environment (comm_env.c) ---- */

/* Which launcher started this process and where it put it: Open MPI's mpirun
 * (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK), Slurm's srun (SLURM_PROCID, SLURM_STEP_NUM_TASKS or
 * SLURM_NTASKS, SLURM_LOCALID), torchrun (RANK, WORLD_SIZE, LOCAL_RANK), or none (one rank). */
typedef struct {
    char launcher[16]; /* "mpirun", "slurm", "torchrun", "none" */
    int rank, world, local_rank;
} comm_env;

/* Reads the environment. 0, or 2 after a message naming the variable (not a number, a rank
 * outside the world, a torchrun RANK/WORLD_SIZE that disagrees with the MPI launcher's). */
int comm_env_read(comm_env *e);
/* the rank a launcher gave this process, read quietly (0 when none, or its variable is not a
 * rank): for the prefix of messages before comm_env_read checks the launcher's variables */
int comm_env_rank_hint(void);
/* A message of a decision this rank took alone, before MPI starts (a usage error, a --comm
 * refused): rank 0 prints it as it is, any other rank as "rank N: ...", so that a rank whose
 * options differ from rank 0's is never silent */
void comm_env_error(const comm_env *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the communicator ---- */

typedef struct comm comm;

/* One implementation. Buffers are host memory unless device_buffers is 1 (an nccl
 * communicator: pointers into the device's memory). Every call returns 0, or 1 with c->error
 * naming the call and the rank ("allreduce: rank 1 sent nothing within 300 s"); after a
 * failure the communicator is unusable and the caller ends the run (comm_abort). */
typedef struct {
    const char *name; /* "single", "mpi", "nccl" */
    int device_buffers;
    /* buf[n] summed over the ranks, the result on every rank; the sum in a fixed order (rank 0,
     * 1, ...) in double, rounded once to float, so every rank holds the same bits */
    int (*allreduce_sum_f32)(comm *c, float *buf, size_t n);
    /* in[n * size] summed over the ranks (as allreduce); rank r keeps elements [r*n, (r+1)*n) */
    int (*reducescatter_sum_f32)(comm *c, const float *in, float *out, size_t n);
    /* every rank's in[bytes] into out[bytes * size], rank r's at r * bytes */
    int (*allgather)(comm *c, const void *in, void *out, size_t bytes);
    /* root's buf[bytes] to every rank */
    int (*broadcast)(comm *c, void *buf, size_t bytes, int root);
    int (*barrier)(comm *c);
    /* ends every rank's process now (after a failure that the others may not have seen) */
    void (*abort)(comm *c, int code);
    void (*close)(comm *c); /* frees; the last call on c */
} comm_ops;

struct comm {
    const comm_ops *ops;
    int rank, size, local_rank;
    char launcher[16];
    double timeout_s;                 /* every wait of every collective ends after this */
    volatile sig_atomic_t *stop;      /* when set (a signal), a wait ends as failed */
    char error[COMM_ERR];
    void *impl;
    /* device_buffers communicators only (NULL otherwise): the host communicator beneath, which
     * every collective on host memory goes through (comm_host), the device whose memory the
     * buffers are, and the address of a view of it as the ops take it (comm_address) */
    comm *host;
    device *dev;
    void *(*address)(device *d, dten t);
};

/* The communicator for env: single for a world of 1, mpi for more (2 when this build has no
 * MPI, or when the MPI job's size or rank disagrees with env: started by torchrun without
 * mpirun/srun, say). timeout_s > 0; stop may be NULL. 0, 1 (MPI failed) or 2 after a message. */
int comm_open(const comm_env *env, double timeout_s, volatile sig_atomic_t *stop, comm **out);
/* a communicator of one rank (tests, and every run that no launcher started) */
comm *comm_single(double timeout_s);
/* 1 when this build has the mpi communicator */
int comm_have_mpi(void);
void comm_close(comm *c);
void comm_abort(comm *c, int code);
/* records "<call>: <message>" as c's error; returns 1 */
int comm_fail(comm *c, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* allreduce_sum_f32 then every element times scale (the mean as DDP takes it: 1/size) */
int comm_allreduce_scaled(comm *c, float *buf, size_t n, float scale);

/* the communicator for host buffers: c itself, or the one beneath a device_buffers one */
comm *comm_host(comm *c);
/* the address of view t of c->dev's memory, as c's ops take it (device_buffers only) */
void *comm_address(comm *c, dten t);

/* ---- choosing the communicator that moves the gradients (comm_select.c) ---- */

/* --comm: auto (nccl for a cuda device in a run of several ranks when this build has it,
 * else the host communicator), mpi (the host communicator: single or mpi), nccl */
typedef enum { COMM_AUTO, COMM_MPI, COMM_NCCL } comm_kind;
/* "auto", "mpi", "nccl", or -1 */
int comm_kind_parse(const char *name);
const char *comm_kind_name(comm_kind k);
/* 1 when this build has the nccl communicator (cuda backend, NCCL and MPI found) */
int comm_have_nccl(void);
/* the backend that nccl runs on in this build: "cuda" ("musa" in a MUSA build, MCCL) */
const char *comm_nccl_backend(void);
/* What moves the gradients of a run of `world` ranks on device spec `spec` when `asked`:
 * COMM_MPI or COMM_NCCL; -1 with the reason in why (nccl asked of a build without it, or for
 * a device that is not the nccl backend's). Every rank gets the same answer. */
int comm_choose(comm_kind asked, const char *spec, int world, int have_nccl, char *why,
                size_t len);
/* The device index of a rank with local rank `local` among n > 0 devices its process sees:
 * local % n, *shared set when local >= n (another rank of the node may have it too: with
 * CUDA_VISIBLE_DEVICES set per rank each sees one GPU, its own); -1 when n <= 0 or local < 0 */
int comm_rank_device_index(int local, int n, int *shared);
/* the device of this rank: spec as given when it has an index ("cuda:1") or the world is 1,
 * else "BACKEND:INDEX" by local rank (comm_rank_device_index), a possibly shared one warned
 * about unless for nccl (one_per_rank: comm_check_devices decides); NULL with the reason in err */
device *comm_rank_device(const comm *c, const char *spec, int one_per_rank, char *err,
                         size_t len);

/* where a rank's device is: its host name and the device's identity there (its PCI bus id,
 * the same whatever CUDA_VISIBLE_DEVICES a rank has); id "" when it did not open */
typedef struct {
    char host[64];
    char id[64];
} comm_device_slot;
/* over slots[n] (rank order): 0 when each names a different device of its host, else 1 with
 * *a < *b the first two ranks that share one */
int comm_find_shared_device(const comm_device_slot *slots, int n, int *a, int *b);
/* A collective over host: every rank's device identity (NULL: it did not open) and host name
 * gathered; 0 when every rank has a device of its own, 2 when one has none or two share one
 * (rank 0 names them), 1 when the host communicator failed (message printed) */
int comm_check_devices(comm *host, const char *device_id);

/* A unique id (bytes long) made on rank 0 by make() and given to every rank over host, with
 * make's failure (its message) given to every rank too. 0; 1 with c->error set (the host
 * communicator failed, or make failed on rank 0: "ncclGetUniqueId: ...") */
typedef int (*comm_id_maker)(void *id, char *err, size_t len, void *arg);
int comm_share_id(comm *host, void *id, size_t bytes, comm_id_maker make, void *arg);

/* Puts the nccl communicator over host (a collective of every rank): every rank's device (d,
 * NULL where it did not open) and host checked first, so that no rank waits in NCCL for one
 * that will never come, then the id shared and ncclCommInitRank run, bounded by the timeout.
 * On success *c is the nccl communicator, which owns host (closing it closes both); on failure
 * *c is still host. 0, 1 (NCCL or the communicator failed) or 2 (a device missing or shared),
 * the reason printed by rank 0 or by the rank that saw it. */
int comm_attach_nccl(comm **c, device *d);

/* ---- comm-check (comm_check.c): nccl-tests' checks over this build's communicators ---- */

typedef enum { CC_ALLREDUCE, CC_ALLGATHER, CC_REDUCESCATTER, CC_BROADCAST, CC_N_OPS } cc_op;
const char *cc_op_name(cc_op op);
/* "allreduce" ... or -1 */
int cc_op_parse(const char *name);
/* nccl-tests' bus bandwidth factor: allreduce 2(n-1)/n, allgather and reducescatter (n-1)/n,
 * broadcast 1 */
double cc_busbw_factor(cc_op op, int n);

typedef struct {
    cc_op op;
    size_t bytes;       /* nccl-tests' size: the whole buffer (allgather: received, reducescatter:
                         * sent), rounded down to whole floats per rank */
    size_t count;       /* floats per rank in that size's collective */
    int iters;
    double time_us;     /* mean over iters, the slowest rank's */
    double algbw, busbw; /* GB/s (1e9 bytes) */
    int64_t wrong;      /* wrong elements summed over the ranks (0: right) */
    int first_bad_rank; /* -1, or the lowest rank that saw a wrong element */
    int64_t first_bad_index;
    double got, expected;
} cc_result;

typedef struct {
    size_t min_bytes, max_bytes; /* sizes doubling from min to max */
    int iters, warmup;
    int float_values; /* 0: small integers, checked exactly; 1: fractions, within fp32 bounds */
    int fault_rank;   /* -1, or the rank that spoils element 0 of its result after every
                       * collective, as a faulty transfer to it would (fault injection) */
} cc_options;

/* "8B:256M" (B, K, M, G: powers of 1024) into *min, *max. 0, or 2 after a message */
int cc_parse_sizes(const char *spec, size_t *min, size_t *max);
/* the size cc_run_one measures for a requested size: whole floats per rank, at least one */
size_t cc_row_bytes(cc_op op, size_t bytes, int world);
/* One op at one size on every rank (a collective: every rank calls it with the same
 * arguments); fills *r identically on every rank. 0 (r->wrong says the verdict), or 1 when the
 * communicator failed (c->error). */
int cc_run_one(comm *c, cc_op op, size_t bytes, const cc_options *o, cc_result *r);

#endif
