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

/* what a rank whose scenario did not load sends in place of its hash (ranks_fail_early) */
#define UNLOADED_HASH "(scenario not loaded)"

/* every rank runs the same scenario with the same --steps (its hash covers both): a rank given
 * another file or step count would train other steps than rank 0 records, or wait for ever
 * after rank 0 is done. A collective (hash: this rank's, or UNLOADED_HASH); 0 on every rank, or
 * 2 on every rank (rank 0 names them) */
static int same_scenario(comm *c, const char *path, const char *hash)
{
    if (c->size == 1)
        return 0;
    c = comm_host(c);
    char mine[65] = {0};
    snprintf(mine, sizeof mine, "%s", hash);
    size_t h = sizeof mine;
    char *all = malloc((size_t)c->size * h);
    if (!all || c->ops->allgather(c, mine, all, h)) {
        log_error("run: comparing the ranks' scenarios: %s", all ? c->error : "out of host memory");
        free(all);
        return EXIT_FAIL;
    }
    int rc = 0;
    for (int k = 0; k < c->size; k++) {
        const char *theirs = all + (size_t)k * h;
        if (strcmp(theirs, UNLOADED_HASH) == 0) {
            if (c->rank == 0 && k != 0) /* rank 0 has said its own error */
                log_error("rank %d could not load the scenario (its message names why): every "
                          "rank stops", k);
            rc = EXIT_USAGE;
        } else if (k > 0 && strcmp(all, UNLOADED_HASH) != 0 && strcmp(all, theirs) != 0) {
            if (c->rank == 0)
                log_error("%s: rank %d runs another scenario (sha256 %.16s...) than rank 0 "
                          "(%.16s...): every rank must be given the same scenario and --steps",
                          path, k, theirs, all);
            rc = EXIT_USAGE;
        }
    }
    free(all);
    return rc;
}

/* the communicator --comm resolves to (a->comm_kind), opened under --comm-timeout */
static int start_comm(run_args *a, const comm_env *env, comm **c)
{
    int rc = choose_comm(a, env);
    double timeout = a->comm_timeout > 0 ? a->comm_timeout : COMM_DEFAULT_TIMEOUT_S;
    return rc ? rc : comm_open(env, timeout, runner_stop_flag(), c);
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
    if ((rc = start_comm(a, &env, &a->comm)))
        return rc;
    if ((rc = same_scenario(a->comm, s->path, s->hash))) {
        comm_close(a->comm);
        a->comm = NULL;
    }
    return rc;
}

int ranks_fail_early(const run_args *a, int rc)
{
    comm_env env;
    if (comm_env_read(&env) || env.world <= 1)
        return rc;
    run_args ra = *a;
    comm *c;
    if (start_comm(&ra, &env, &c))
        return rc;
    same_scenario(c, a->scenario, UNLOADED_HASH);
    comm_close(c);
    return rc;
}

/* what the ranks' devices must share: the backend and the element type their gradients are
 * summed in (a cpu64 rank's doubles against rank 0's floats overran its buffers) */
typedef struct {
    int opened, real_size;
    char backend[32], dtype[16];
} rank_device_id;

static void device_id_of(const device *d, rank_device_id *id)
{
    memset(id, 0, sizeof *id);
    if (!d)
        return;
    id->opened = 1;
    id->real_size = (int)d->real_size;
    snprintf(id->backend, sizeof id->backend, "%s", d->backend);
    snprintf(id->dtype, sizeof id->dtype, "%s", d->dtype);
}

int ranks_same_device(comm *c, const device *d)
{
    if (c->size == 1)
        return 0;
    c = comm_host(c);
    rank_device_id me, *all = malloc((size_t)c->size * sizeof *all);
    device_id_of(d, &me);
    if (!all || c->ops->allgather(c, &me, all, sizeof me)) {
        log_error("run: comparing the ranks' devices: %s", all ? c->error : "out of host memory");
        free(all);
        return EXIT_FAIL;
    }
    int rc = 0;
    for (int k = 1; k < c->size && all[0].opened; k++)
        if (all[k].opened && (all[k].real_size != all[0].real_size ||
                              strcmp(all[k].backend, all[0].backend) != 0 ||
                              strcmp(all[k].dtype, all[0].dtype) != 0)) {
            if (c->rank == 0)
                log_error("run: rank %d trains on %s in %s, rank 0 on %s in %s: every rank must "
                          "use the same backend and precision (their gradients are summed)", k,
                          all[k].backend, all[k].dtype, all[0].backend, all[0].dtype);
            rc = EXIT_USAGE;
        }
    free(all);
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
