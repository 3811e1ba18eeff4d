/* harness/comm/comm_mpi.c: the mpi communicator: MPI point-to-point messages (nonblocking, each
 * wait polled against the timeout and the stop flag) under the rooted collectives. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"
#include "util/util.h"

#if HARNESS_MPI
#include <mpi.h>

#define MPI_CHUNK ((size_t)1 << 30) /* bytes per message: MPI counts are int */
#define TAG 12

typedef struct {
    comm_rooted_impl base;
    int finalize; /* MPI_Init was ours */
} mpi_impl;

/* a gap this long between two polls means this process did not run (stopped by SIGSTOP or a
 * debugger, swapped out): that time does not count against the peer */
#define STALL_MS 1000.0

/* waits for req within c->timeout_s of this rank's own running time; what: "sent nothing" (a
 * receive) or "took nothing" */
static int wait_req(comm *c, const char *call, int peer, MPI_Request *req, size_t bytes,
                    int receiving)
{
    double last = now_ms(), deadline = last + c->timeout_s * 1e3, stalled = 0;
    for (int round = 0;; round++) {
        double t = now_ms();
        if (t - last > STALL_MS) { /* this rank was not running: the peer gets that time back */
            stalled += t - last;
            deadline += t - last;
        }
        last = t;
        int done = 0;
        MPI_Status st;
        int rc = MPI_Test(req, &done, &st);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            return comm_fail(c, call, "MPI error with rank %d: %s", peer, msg);
        }
        if (done) {
            int got = 0;
            if (receiving && (MPI_Get_count(&st, MPI_BYTE, &got) != MPI_SUCCESS ||
                              (size_t)got != bytes))
                return comm_fail(c, call, "rank %d sent %d bytes, %zu expected", peer, got,
                                 bytes);
            return 0;
        }
        if (c->stop && *c->stop)
            return comm_fail(c, call, "interrupted by a signal while waiting for rank %d", peer);
        if (now_ms() > deadline && stalled > 0)
            return comm_fail(c, call, "rank %d %s within the timeout of %g s while this rank "
                             "ran (this rank itself was stopped for %.1f s: dead or hung?)",
                             peer, receiving ? "sent nothing" : "took nothing", c->timeout_s,
                             stalled / 1e3);
        if (now_ms() > deadline)
            return comm_fail(c, call, "rank %d %s within the timeout of %g s (dead or hung?)",
                             peer, receiving ? "sent nothing" : "took nothing", c->timeout_s);
        comm_poll_pause(round);
    }
}

static int mpi_send(comm *c, const char *call, int peer, const void *buf, size_t bytes)
{
    size_t off = 0;
    do {
        size_t k = bytes - off < MPI_CHUNK ? bytes - off : MPI_CHUNK;
        MPI_Request req;
        if (MPI_Isend((const char *)buf + off, (int)k, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                      &req) != MPI_SUCCESS)
            return comm_fail(c, call, "MPI_Isend to rank %d failed", peer);
        if (wait_req(c, call, peer, &req, k, 0))
            return 1;
        off += k;
    } while (off < bytes);
    return 0;
}

static int mpi_recv(comm *c, const char *call, int peer, void *buf, size_t bytes)
{
    size_t off = 0;
    do {
        size_t k = bytes - off < MPI_CHUNK ? bytes - off : MPI_CHUNK;
        MPI_Request req;
        if (MPI_Irecv((char *)buf + off, (int)k, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &req) !=
            MPI_SUCCESS)
            return comm_fail(c, call, "MPI_Irecv from rank %d failed", peer);
        if (wait_req(c, call, peer, &req, k, 1))
            return 1;
        off += k;
    } while (off < bytes);
    return 0;
}

static const comm_transport mpi_transport = {mpi_send, mpi_recv};

static void mpi_abort(comm *c, int code)
{
    (void)c;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

static void mpi_close(comm *c)
{
    mpi_impl *m = c->impl;
    if (m && m->finalize)
        MPI_Finalize();
    free(m);
    free(c);
}

static const comm_ops mpi_ops = {"mpi",
                                 0,
                                 rooted_allreduce_sum_f32,
                                 rooted_reducescatter_sum_f32,
                                 rooted_allgather,
                                 rooted_broadcast,
                                 rooted_barrier,
                                 mpi_abort,
                                 mpi_close};

/* torchrun names ranks but starts no MPI job: its processes are not ranks of one */
static int check_mpi_job(const comm_env *env)
{
    if (strcmp(env->launcher, "torchrun") != 0 || getenv("PMIX_RANK"))
        return 0;
    log_error("torchrun's environment names rank %d of %d, but the ranks of the harness talk "
              "over MPI and this process is not part of an MPI job: start the %d ranks with "
              "mpirun -np %d or srun -n %d (docs/ranks.md)",
              env->rank, env->world, env->world, env->world, env->world);
    return EXIT_USAGE;
}

/* MPI's own rank and size must be the launcher's */
static int check_mpi_world(const comm_env *env, int rank, int size)
{
    if (rank == env->rank && size == env->world)
        return 0;
    log_error("%s says rank %d of %d, MPI says rank %d of %d: is this process started by the "
              "launcher whose variables it has? (docs/ranks.md)",
              env->launcher, env->rank, env->world, rank, size);
    return EXIT_USAGE;
}

int comm_mpi_open(const comm_env *env, double timeout_s, volatile sig_atomic_t *stop, comm **out)
{
    int rc = check_mpi_job(env);
    if (rc)
        return rc;
    comm *c = calloc(1, sizeof *c);
    mpi_impl *m = calloc(1, sizeof *m);
    if (!c || !m) {
        free(c);
        free(m);
        log_error("out of host memory for the communicator");
        return EXIT_FAIL;
    }
    int inited = 0, rank = -1, size = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        log_error("rank %d: MPI_Init failed", env->rank);
        free(c);
        free(m);
        return EXIT_FAIL;
    }
    m->finalize = !inited;
    m->base.t = &mpi_transport;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    *c = (comm){&mpi_ops, rank, size, env->local_rank, "", timeout_s, stop, "", m,
                NULL,     NULL, NULL};
    snprintf(c->launcher, sizeof c->launcher, "%s", env->launcher);
    if ((rc = check_mpi_world(env, rank, size))) {
        mpi_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

int comm_have_mpi(void)
{
    return 1;
}

#else /* a build without MPI: the single communicator only */

int comm_mpi_open(const comm_env *env, double timeout_s, volatile sig_atomic_t *stop, comm **out)
{
    (void)timeout_s, (void)stop;
    *out = NULL;
    log_error("%s started rank %d of %d, but this build has no MPI communicator",
              env->launcher, env->rank, env->world);
    return EXIT_USAGE;
}

int comm_have_mpi(void)
{
    return 0;
}

#endif
