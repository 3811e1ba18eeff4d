/* harness/comm/comm.c: choosing a communicator for the launcher's environment, the single
 * (one rank) communicator, and the helpers every communicator shares. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_internal.h"
#include "util/util.h"

int comm_fail(comm *c, const char *call, const char *fmt, ...)
{
    char msg[COMM_ERR - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->error, sizeof c->error, "%s on rank %d: %s", call, c->rank, msg);
    return 1;
}

void comm_poll_pause(int round)
{
    /* a busy wait for the first rounds (a short collective), then 0.1 ms sleeps, so a rank
     * that waits long does not take a CPU from the ranks still computing */
    if (round < 200)
        return;
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
}

/* ---- single: one rank, every collective the identity ---- */

static int single_allreduce(comm *c, float *buf, size_t n)
{
    (void)c, (void)buf, (void)n;
    return 0;
}

static int single_reducescatter(comm *c, const float *in, float *out, size_t n)
{
    (void)c;
    if (n)
        memmove(out, in, n * sizeof *in);
    return 0;
}

static int single_allgather(comm *c, const void *in, void *out, size_t bytes)
{
    (void)c;
    if (bytes)
        memmove(out, in, bytes);
    return 0;
}

static int single_broadcast(comm *c, void *buf, size_t bytes, int root)
{
    (void)buf, (void)bytes;
    return root == 0 ? 0 : comm_fail(c, "broadcast", "root %d is not a rank of 1", root);
}

static int single_barrier(comm *c)
{
    (void)c;
    return 0;
}

static void single_abort(comm *c, int code)
{
    (void)c;
    exit(code);
}

static void single_close(comm *c)
{
    free(c);
}

static const comm_ops single_ops = {"single",        0,
                                    single_allreduce, single_reducescatter,
                                    single_allgather, single_broadcast,
                                    single_barrier,   single_abort,
                                    single_close};

comm *comm_single(double timeout_s)
{
    comm *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->ops = &single_ops;
    c->size = 1;
    c->timeout_s = timeout_s;
    snprintf(c->launcher, sizeof c->launcher, "none");
    return c;
}

/* ---- choosing ---- */

int comm_open(const comm_env *env, double timeout_s, volatile sig_atomic_t *stop, comm **out)
{
    *out = NULL;
    if (env->world == 1) {
        comm *c = comm_single(timeout_s);
        if (!c) {
            log_error("out of host memory for the communicator");
            return EXIT_FAIL;
        }
        c->stop = stop;
        snprintf(c->launcher, sizeof c->launcher, "%s", env->launcher);
        *out = c;
        return 0;
    }
    if (!comm_have_mpi()) {
        log_error("%s started rank %d of %d, but this build has no MPI communicator (build with "
                  "-DHARNESS_MPI=ON and Open MPI; docs/ranks.md)",
                  env->launcher, env->rank, env->world);
        return EXIT_USAGE;
    }
    return comm_mpi_open(env, timeout_s, stop, out);
}

void comm_close(comm *c)
{
    if (c)
        c->ops->close(c);
}

void comm_abort(comm *c, int code)
{
    c->ops->abort(c, code);
}

int comm_allreduce_scaled(comm *c, float *buf, size_t n, float scale)
{
    if (c->ops->allreduce_sum_f32(c, buf, n))
        return 1;
    if (scale != 1.0f)
        for (size_t i = 0; i < n; i++)
            buf[i] *= scale;
    return 0;
}

comm *comm_host(comm *c)
{
    return c->host ? c->host : c;
}

void *comm_address(comm *c, dten t)
{
    return c->address ? c->address(c->dev, t) : NULL;
}
