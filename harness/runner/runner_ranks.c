/* harness/runner/runner_ranks.c: the ranks of a data-parallel run: the communicator from the
 * launcher's environment, each rank's device by its local rank, errors agreed on by all ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner_ranks_internal.h"
#include "util/util.h"

int ranks_open(const run_args *a, const scenario *s, comm **c)
{
    comm_env env;
    *c = NULL;
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
    double timeout = a->comm_timeout > 0 ? a->comm_timeout : COMM_DEFAULT_TIMEOUT_S;
    return comm_open(&env, timeout, runner_stop_flag(), c);
}

/* how many devices `harness devices` lists for the backend named spec ("opencl:0", ...) */
static int backend_devices(const char *backend)
{
    device_info info[64];
    int n = device_list(info, 64), count = 0;
    size_t len = strlen(backend);
    for (int i = 0; i < n; i++)
        count += strncmp(info[i].spec, backend, len) == 0 && info[i].spec[len] == ':';
    return count;
}

device *ranks_device(const run_args *a)
{
    char spec[128], err[512];
    snprintf(spec, sizeof spec, "%s", a->device);
    comm *c = a->comm;
    int n = c->size > 1 && !strchr(a->device, ':') ? backend_devices(a->device) : 0;
    if (n > 0) {
        snprintf(spec, sizeof spec, "%s:%d", a->device, c->local_rank % n);
        if (c->local_rank >= n)
            log_warn("rank %d: local rank %d shares %s with another rank (%d device%s)", c->rank,
                     c->local_rank, spec, n, n == 1 ? "" : "s");
    }
    device *d = device_open(spec, err, sizeof err);
    if (!d)
        log_error("run: rank %d: --device %s: %s", c->rank, spec, err);
    return d;
}

int ranks_agree(comm *c, const char *what, int rc, train_status *status)
{
    if (c->size == 1)
        return rc;
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
