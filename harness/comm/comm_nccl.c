/* harness/comm/comm_nccl.c: the nccl communicator: collectives on the cuda device's memory and
 * stream (NCCL; MCCL on MUSA), its id shared over the host communicator, every wait bounded. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"
#include "util/util.h"

#if HARNESS_NCCL
#include "cuda/cu_nccl.h"
#include "cuda/cuda.h"

typedef struct {
    ncclComm_t nc;        /* NULL before init and after an abort */
    cudaStream_t stream;  /* the cuda device's one stream: the collectives follow its kernels */
    cudaEvent_t done;     /* recorded after each collective, polled */
    float *scratch;       /* the barrier's one float, in device memory */
    int ordinal;
} nccl_impl;

/* ---- failures: named, and the NCCL communicator aborted (no later call can hang on it) ---- */

static void abort_nccl(nccl_impl *m)
{
    if (m && m->nc) {
        ncclResult_t r = ncclCommAbort(m->nc);
        m->nc = NULL; /* gone either way: nothing is called on it again */
        if (r != ncclSuccess)
            log_warn("nccl: ncclCommAbort: %s (%d)", ncclGetErrorString(r), (int)r);
    }
}

/* "<call> on rank R: <fn>: <NCCL's error string> (code)[; NCCL's last error]", then aborted */
static int nccl_failed(comm *c, const char *call, const char *fn, ncclResult_t r)
{
    nccl_impl *m = c->impl;
    const char *last = "";
#ifndef HARNESS_MUSA
    last = ncclGetLastError(m ? m->nc : NULL);
#endif
    comm_fail(c, call, "%s: %s (%d)%s%.200s", fn, ncclGetErrorString(r), (int)r,
              last && *last ? "; " : "", last ? last : "");
    abort_nccl(m);
    return 1;
}

static int cuda_failed(comm *c, const char *call, const char *fn, cudaError_t e)
{
    comm_fail(c, call, "%s: %s: %s", fn, cudaGetErrorName(e), cudaGetErrorString(e));
    abort_nccl(c->impl);
    return 1;
}

/* the stop flag or the deadline ended a wait: 1 after the message, else 0 */
static int wait_over(comm *c, const char *call, const char *what, double deadline)
{
    if (c->stop && *c->stop)
        comm_fail(c, call, "interrupted by a signal while waiting for %s", what);
    else if (now_ms() > deadline)
        comm_fail(c, call, "%s did not finish within the timeout of %g s (a rank dead or "
                  "hung?); the NCCL communicator is aborted", what, c->timeout_s);
    else
        return 0;
    abort_nccl(c->impl);
    return 1;
}

/* NCCL's asynchronous state of the communicator: 0 with *busy 1 while ncclInProgress, 0 with
 * *busy 0 when ncclSuccess, 1 (failed, named as fn) on any error */
static int async_state(comm *c, const char *call, const char *fn, int *busy)
{
    nccl_impl *m = c->impl;
    ncclResult_t state = ncclSuccess, r = ncclCommGetAsyncError(m->nc, &state);
    if (r != ncclSuccess)
        return nccl_failed(c, call, "ncclCommGetAsyncError", r);
    if (state != ncclSuccess && state != ncclInProgress)
        return nccl_failed(c, call, fn, state);
    *busy = state == ncclInProgress;
    return 0;
}

/* a nonblocking call (init, finalize, or one that returned ncclInProgress) waited out */
static int wait_state(comm *c, const char *call, const char *fn)
{
    double deadline = now_ms() + c->timeout_s * 1e3;
    for (int round = 0;; round++) {
        int busy = 0;
        if (async_state(c, call, fn, &busy))
            return 1;
        if (!busy)
            return 0;
        if (wait_over(c, call, fn, deadline))
            return 1;
        comm_poll_pause(round);
    }
}

/* an NCCL call's result: ncclSuccess, ncclInProgress (waited out), or a failure */
static int issued(comm *c, const char *call, const char *fn, ncclResult_t r)
{
    if (r == ncclSuccess)
        return 0;
    if (r == ncclInProgress)
        return wait_state(c, call, fn);
    return nccl_failed(c, call, fn, r);
}

/* the stream's work so far (the collective just issued) finished: an event polled, with
 * NCCL's asynchronous errors (a peer gone, a network error), the timeout and the stop flag */
static int wait_done(comm *c, const char *call, const char *fn)
{
    nccl_impl *m = c->impl;
    cudaError_t e = cudaEventRecord(m->done, m->stream);
    if (e != cudaSuccess)
        return cuda_failed(c, call, "cudaEventRecord", e);
    double deadline = now_ms() + c->timeout_s * 1e3;
    for (int round = 0;; round++) {
        e = cudaEventQuery(m->done);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady)
            return cuda_failed(c, call, "cudaEventQuery", e);
        int busy = 0;
        if (async_state(c, call, fn, &busy) || wait_over(c, call, fn, deadline))
            return 1;
        comm_poll_pause(round);
    }
}

static int usable(comm *c, const char *call)
{
    nccl_impl *m = c->impl;
    return m->nc ? 0 : comm_fail(c, call, "the NCCL communicator was aborted after an earlier "
                                 "failure");
}

/* one collective: issued on the device's stream, then waited for */
static int collective(comm *c, const char *call, const char *fn, ncclResult_t r)
{
    return issued(c, call, fn, r) || wait_done(c, call, fn);
}

/* ---- the collectives: every pointer is device memory of the cuda device ---- */

static int nccl_allreduce(comm *c, float *buf, size_t n)
{
    nccl_impl *m = c->impl;
    if (usable(c, "allreduce"))
        return 1;
    if (n == 0)
        return 0;
    return collective(c, "allreduce", "ncclAllReduce",
                      ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, m->nc, m->stream));
}

static int nccl_reducescatter(comm *c, const float *in, float *out, size_t n)
{
    nccl_impl *m = c->impl;
    if (usable(c, "reducescatter"))
        return 1;
    if (n == 0)
        return 0;
    return collective(c, "reducescatter", "ncclReduceScatter",
                      ncclReduceScatter(in, out, n, ncclFloat, ncclSum, m->nc, m->stream));
}

static int nccl_allgather(comm *c, const void *in, void *out, size_t bytes)
{
    nccl_impl *m = c->impl;
    if (usable(c, "allgather"))
        return 1;
    if (bytes == 0)
        return 0;
    return collective(c, "allgather", "ncclAllGather",
                      ncclAllGather(in, out, bytes, ncclInt8, m->nc, m->stream));
}

static int nccl_broadcast(comm *c, void *buf, size_t bytes, int root)
{
    nccl_impl *m = c->impl;
    if (root < 0 || root >= c->size)
        return comm_fail(c, "broadcast", "root %d is not a rank of %d", root, c->size);
    if (usable(c, "broadcast"))
        return 1;
    if (bytes == 0)
        return 0;
    return collective(c, "broadcast", "ncclBroadcast",
                      ncclBroadcast(buf, buf, bytes, ncclInt8, root, m->nc, m->stream));
}

/* NCCL has no barrier: a one-float all-reduce, which every rank's stream must reach */
static int nccl_barrier(comm *c)
{
    nccl_impl *m = c->impl;
    if (usable(c, "barrier"))
        return 1;
    return collective(c, "barrier", "ncclAllReduce",
                      ncclAllReduce(m->scratch, m->scratch, 1, ncclFloat, ncclSum, m->nc,
                                    m->stream));
}

static void nccl_abort(comm *c, int code)
{
    abort_nccl(c->impl);
    comm_abort(c->host, code);
}

/* the CUDA and host resources of m (the NCCL communicator is already gone) */
static void free_impl(nccl_impl *m)
{
    if (!m)
        return;
    cudaError_t e = cudaSuccess;
    if (m->done && (e = cudaEventDestroy(m->done)) != cudaSuccess)
        log_warn("nccl: closing: cudaEventDestroy: %s: %s", cudaGetErrorName(e),
                 cudaGetErrorString(e));
    if (m->scratch && (e = cudaFree(m->scratch)) != cudaSuccess)
        log_warn("nccl: closing: cudaFree: %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    free(m);
}

/* ncclCommFinalize (waited out) then ncclCommDestroy; a failure is a warning: nothing is left
 * to do but free */
static void finish_nccl(comm *c)
{
    nccl_impl *m = c->impl;
    if (!m->nc)
        return;
    if (issued(c, "close", "ncclCommFinalize", ncclCommFinalize(m->nc)))
        log_warn("%s", c->error);
    if (!m->nc)
        return;
    ncclResult_t r = ncclCommDestroy(m->nc);
    m->nc = NULL;
    if (r != ncclSuccess && r != ncclInProgress)
        log_warn("close on rank %d: ncclCommDestroy: %s", c->rank, ncclGetErrorString(r));
}

static void nccl_close(comm *c)
{
    comm *host = c->host;
    finish_nccl(c);
    free_impl(c->impl);
    free(c);
    comm_close(host);
}

static const comm_ops nccl_ops = {"nccl",           1,
                                  nccl_allreduce,   nccl_reducescatter,
                                  nccl_allgather,   nccl_broadcast,
                                  nccl_barrier,     nccl_abort,
                                  nccl_close};

/* ---- opening ---- */

static int make_uid(void *id, char *err, size_t len, void *arg)
{
    (void)arg;
    ncclResult_t r = ncclGetUniqueId((ncclUniqueId *)id);
    if (r == ncclSuccess)
        return 0;
    snprintf(err, len, "ncclGetUniqueId: %s (%d)", ncclGetErrorString(r), (int)r);
    return 1;
}

/* NCCL's sums follow its algorithm and protocol; fixed here (unless the user set them) so the
 * same topology gives the same bits run after run. Read by NCCL at its first call. */
static void fix_algorithm(void)
{
    setenv(CCL_ENV_PREFIX "ALGO", "Ring", 0);
    setenv(CCL_ENV_PREFIX "PROTO", "Simple", 0);
}

/* the communicator struct, its event and scratch float on d's device, and the device's
 * identity (PCI bus id) into id; 0, or 1 after a message (d missing or not cuda, a CUDA call
 * failed) */
static int prepare(comm *host, device *d, comm **out, char *id, size_t len)
{
    int ordinal = -1;
    void *stream = NULL;
    *out = NULL;
    if (!d)
        return 1; /* the rank said why when its device did not open */
    if (cuda_comm_target(d, &ordinal, &stream)) {
        log_error("rank %d: the nccl communicator needs a %s device, not %s", host->rank,
                  comm_nccl_backend(), d->backend);
        return 1;
    }
    if (cuda_device_id(d, id, len)) {
        log_error("rank %d: opening the nccl communicator on %s:%d: %s", host->rank,
                  comm_nccl_backend(), ordinal, id);
        return 1;
    }
    comm *c = calloc(1, sizeof *c);
    nccl_impl *m = calloc(1, sizeof *m);
    const char *fn = "calloc";
    cudaError_t e = cudaSuccess;
    if (c && m && (fn = "cudaSetDevice", e = cudaSetDevice(ordinal)) == cudaSuccess &&
        (fn = "cudaEventCreateWithFlags",
         e = cudaEventCreateWithFlags(&m->done, cudaEventDisableTiming)) == cudaSuccess &&
        (fn = "cudaMalloc", e = cudaMalloc((void **)&m->scratch, sizeof(float))) == cudaSuccess) {
        *c = *host;
        c->ops = &nccl_ops;
        c->impl = m;
        c->host = host;
        c->dev = d;
        c->address = cuda_dten_address;
        c->error[0] = '\0';
        m->stream = (cudaStream_t)stream;
        m->ordinal = ordinal;
        *out = c;
        return 0;
    }
    log_error("rank %d: opening the nccl communicator on %s:%d: %s%s%s", host->rank,
              comm_nccl_backend(), ordinal, fn, e != cudaSuccess ? ": " : " failed",
              e != cudaSuccess ? cudaGetErrorString(e) : "");
    free_impl(m);
    free(c);
    return 1;
}

/* after a failed open: the NCCL communicator aborted, c freed, the host communicator kept */
static void drop(comm *c)
{
    abort_nccl(c->impl);
    free_impl(c->impl);
    free(c);
}

/* every rank's init result to every rank; 0 when all succeeded, else 1 (rank 0 names them) */
static int agree_init(comm *host, int mine)
{
    int *all = calloc((size_t)host->size, sizeof *all), rc = 0;
    if (!all || host->ops->allgather(host, &mine, all, sizeof mine)) {
        log_error("opening the nccl communicator: %s", all ? host->error : "out of host memory");
        free(all);
        return EXIT_FAIL;
    }
    for (int k = 0; k < host->size; k++)
        if (all[k]) {
            if (host->rank == 0 && k != 0)
                log_error("rank %d: NCCL did not start (its message above)", k);
            rc = EXIT_FAIL;
        }
    free(all);
    return rc;
}

/* ncclCommInitRankConfig, nonblocking, waited out within the timeout; 0 or 1 after a message */
static int init_rank(comm *c, const ncclUniqueId *uid)
{
    nccl_impl *m = c->impl;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0; /* so a rank that never comes ends the wait at the timeout */
    ncclResult_t r = ncclCommInitRankConfig(&m->nc, c->size, *uid, c->rank, &cfg);
    return issued(c, "open", "ncclCommInitRankConfig", r);
}

int comm_attach_nccl(comm **cp, device *d)
{
    comm *host = *cp, *c = NULL;
    char id[64] = "";
    fix_algorithm();
    int rc = comm_check_devices(host, prepare(host, d, &c, id, sizeof id) ? NULL : id);
    if (rc) {
        if (c)
            drop(c);
        return rc;
    }
    ncclUniqueId uid;
    if (comm_share_id(host, &uid, sizeof uid, make_uid, NULL)) {
        log_error("opening the nccl communicator: %s", host->error);
        drop(c);
        return EXIT_FAIL;
    }
    int mine = init_rank(c, &uid);
    if (mine)
        log_error("%s", c->error);
    if ((rc = agree_init(host, mine))) {
        drop(c);
        return rc;
    }
    *cp = c;
    return 0;
}

int comm_have_nccl(void)
{
    return 1;
}

#else /* a build without NCCL */

int comm_attach_nccl(comm **cp, device *d)
{
    (void)d;
    if ((*cp)->rank == 0)
        log_error("this build has no NCCL communicator (it needs the cuda backend, NCCL and "
                  "MPI: cmake -DHARNESS_NCCL=ON; docs/ranks.md)");
    return EXIT_USAGE;
}

int comm_have_nccl(void)
{
    return 0;
}

#endif
