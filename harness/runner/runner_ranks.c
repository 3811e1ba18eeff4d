/* harness/runner/runner_ranks.c: the ranks of a data-parallel run: the communicator from the
 * launcher's environment (nccl on cuda), each rank's device by its local rank, agreed errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner_ranks_internal.h"
#include "util/util.h"

/* the communicator --comm asks for on this device and world, decided alike on every rank before
 * MPI starts: 0 with a->comm_kind COMM_MPI or COMM_NCCL, or 2 after rank 0's message */
static int choose_comm(run_args *a, const comm_env *env)
{
    char why[256];
    int kind = comm_choose(a->comm_kind, a->device, env->world, comm_have_nccl(), why,
                           sizeof why);
    if (kind < 0) {
        if (env->rank == 0)
            log_error("run: %s", why);
        return EXIT_USAGE;
    }
    a->comm_kind = (comm_kind)kind;
    return 0;
}

/* every rank runs the same scenario with the same --steps (its hash covers both): a rank given
 * another file or step count would train other steps than rank 0 records, or wait for ever
 * after rank 0 is done. A collective; 0 on every rank, or 2 on every rank (rank 0 names them) */
static int same_scenario(comm *c, const scenario *s)
{
    if (c->size == 1)
        return 0;
    c = comm_host(c);
    size_t h = sizeof s->hash;
    char *all = malloc((size_t)c->size * h);
    if (!all || c->ops->allgather(c, s->hash, all, h)) {
        log_error("run: comparing the ranks' scenarios: %s", all ? c->error : "out of host memory");
        free(all);
        return EXIT_FAIL;
    }
    int rc = 0;
    for (int k = 1; k < c->size; k++)
        if (memcmp(all, all + (size_t)k * h, h) != 0) {
            if (c->rank == 0)
                log_error("%s: rank %d runs another scenario (sha256 %.16s...) than rank 0 "
                          "(%.16s...): every rank must be given the same scenario and --steps",
                          s->path, k, all + (size_t)k * h, all);
            rc = EXIT_USAGE;
        }
    free(all);
    return rc;
}

int ranks_open(run_args *a, const scenario *s)
{
    comm_env env;
    a->comm = NULL;
    int rc = comm_env_read(&env);
    if (rc)
        return rc;
    if (env.world != s->world_size) { /* before MPI starts: every rank sees the same */
        if (env.rank == 0)
            log_error("%s: world_size %d, but %s started %d rank%s (start them with mpirun -np "
                      "N or srun -n N: docs/ranks.md)", s->path, s->world_size,
                      strcmp(env.launcher, "none") ? env.launcher : "no launcher", env.world,
                      env.world == 1 ? "" : "s");
        return EXIT_USAGE;
    }
    if ((rc = choose_comm(a, &env)))
        return rc;
    double timeout = a->comm_timeout > 0 ? a->comm_timeout : COMM_DEFAULT_TIMEOUT_S;
    if ((rc = comm_open(&env, timeout, runner_stop_flag(), &a->comm)))
        return rc;
    if ((rc = same_scenario(a->comm, s))) {
        comm_close(a->comm);
        a->comm = NULL;
    }
    return rc;
}

device *ranks_device(const run_args *a)
{
    char err[512];
    comm *c = a->comm;
    device *d = comm_rank_device(c, a->device, a->comm_kind == COMM_NCCL, err, sizeof err);
    if (!d)
        log_error("run: rank %d: --device %s: %s", c->rank, a->device, err);
    return d;
}

int ranks_attach(run_args *a, device *d)
{
    if (a->comm_kind != COMM_NCCL)
        return d ? 0 : EXIT_USAGE;
    return comm_attach_nccl(&a->comm, d);
}

int ranks_agree(comm *c, const char *what, int rc, train_status *status)
{
    if (c->size == 1)
        return rc;
    c = comm_host(c);
    int *all = malloc((size_t)c->size * sizeof *all);
    if (!all || c->ops->allgather(c, &rc, all, sizeof rc)) {
        log_error("%s: %s", what, all ? c->error : "out of host memory");
        free(all);
        *status = TRAIN_FAILED;
        return EXIT_FAIL;
    }
    int worst = 0;
    for (int k = 0; k < c->size; k++) {
        if (all[k] && c->rank == 0 && k != 0)
            log_error("rank %d failed while %s (exit %d): nothing recorded", k, what, all[k]);
        worst = all[k] == EXIT_USAGE || worst == EXIT_USAGE ? EXIT_USAGE
                                                            : (all[k] ? all[k] : worst);
    }
    free(all);
    return worst;
}

void ranks_close(comm *c, int rc, train_status status)
{
    if (c->size > 1 && rc != 0 && status == TRAIN_FAILED)
        comm_abort(c, rc);
    comm_close(c);
}
