/* harness/runner/runner_ranks.c: the ranks of a data-parallel run: the communicator from the
 * launcher's environment (nccl on cuda), each rank's device by its local rank, agreed errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner_ranks_internal.h"
#include "util/util.h"

/* the communicator --comm asks for on this device and world, decided before MPI starts: 0 with
 * a->comm_kind COMM_MPI or COMM_NCCL, or 2 after a message (on any rank: a rank given another
 * --comm than rank 0 decides alone) */
static int choose_comm(run_args *a, const comm_env *env)
{
    char why[256];
    int kind = comm_choose(a->comm_kind, a->device, env->world, comm_have_nccl(), why,
                           sizeof why);
    if (kind < 0) {
        comm_env_error(env, "run: %s", why);
        return EXIT_USAGE;
    }
    a->comm_kind = (comm_kind)kind;
    return 0;
}

/* what a rank that stops before the run sends in place of its scenario's hash: its scenario did
 * not load (ranks_fail_early), or it stopped for a reason of its own (its options: --help, a
 * usage error, a --comm refused, a world_size that is not the launcher's) */
#define UNLOADED_HASH "(scenario not loaded)"
#define STOPPED_HASH "(stopped early)"

/* what every rank tells every rank once MPI is up, before anything is opened */
typedef struct {
    char hash[65];     /* the scenario's sha256 (its JSON, --steps included), or a marker above */
    int32_t comm_kind; /* what --comm resolved to */
    int32_t n_inputs;
    char inputs[SCN_MAX_INPUTS][65]; /* scenario_input_digest of each scenario_inputs file */
} rank_scenario;

/* the files s reads (*inputs, rank 0's paths for the messages) and their digests into me */
static int describe_rank(rank_scenario *me, const scenario *s, const char *marker, int kind,
                         scenario_input **inputs)
{
    memset(me, 0, sizeof *me);
    *inputs = NULL;
    me->comm_kind = kind;
    snprintf(me->hash, sizeof me->hash, "%s", s ? s->hash : marker);
    if (!s)
        return 0;
    if (!(*inputs = calloc(SCN_MAX_INPUTS, sizeof **inputs)))
        return 1;
    me->n_inputs = scenario_inputs(s, *inputs, SCN_MAX_INPUTS);
    for (int i = 0; i < me->n_inputs; i++)
        scenario_input_digest((*inputs)[i].path, me->inputs[i]);
    return 0;
}

static int stopped(const rank_scenario *r)
{
    return !strcmp(r->hash, UNLOADED_HASH) || !strcmp(r->hash, STOPPED_HASH);
}

/* a digest for a message: its first 16 hex digits, or what an absent file is */
static const char *digest_text(const char *d, char *buf, size_t len)
{
    if (strcmp(d, SCN_DIGEST_ABSENT) == 0)
        return "no such file";
    snprintf(buf, len, "sha256 %.16s...", d);
    return buf;
}

/* rank k's first input file whose contents differ from rank 0's (both read or absent); rank 0
 * names it. 0 or 2 */
static int other_inputs(const comm *c, int k, const rank_scenario *all, const char *path,
                        const scenario_input *inputs)
{
    const rank_scenario *r0 = &all[0], *rk = &all[k];
    for (int i = 0; i < r0->n_inputs && i < rk->n_inputs; i++) {
        const char *a = r0->inputs[i], *b = rk->inputs[i];
        if (!a[0] || !b[0] || strcmp(a, b) == 0) /* unreadable: its reader stops that rank */
            continue;
        char ta[32], tb[32];
        if (c->rank == 0)
            log_error("%s: %s: rank %d's file differs from rank 0's %s (%s on rank %d, %s on "
                      "rank 0: the digest of its size and first and last MiB): every rank must "
                      "read the same files", path, inputs[i].what, k, inputs[i].path,
                      digest_text(b, tb, sizeof tb), k, digest_text(a, ta, sizeof ta));
        return EXIT_USAGE;
    }
    return 0;
}

/* rank k (k > 0, both loaded) against rank 0: its scenario, --comm and input files. 0 or 2 */
static int rank_differs(const comm *c, int k, const rank_scenario *all, const char *path,
                        const scenario_input *inputs)
{
    const rank_scenario *r0 = &all[0], *rk = &all[k];
    if (strcmp(r0->hash, rk->hash) != 0) {
        if (c->rank == 0)
            log_error("%s: rank %d runs another scenario (sha256 %.16s...) than rank 0 "
                      "(%.16s...): every rank must be given the same scenario and --steps",
                      path, k, rk->hash, r0->hash);
        return EXIT_USAGE;
    }
    if (r0->comm_kind != rk->comm_kind) {
        if (c->rank == 0)
            log_error("run: rank %d moves the gradients over %s, rank 0 over %s: every rank must "
                      "be given the same --comm", k, comm_kind_name((comm_kind)rk->comm_kind),
                      comm_kind_name((comm_kind)r0->comm_kind));
        return EXIT_USAGE;
    }
    return other_inputs(c, k, all, path, inputs);
}

/* a rank that stopped before the run, named by rank 0 when rank 0 itself did not stop (else
 * rank 0's own message says why). 2 */
static int say_stopped(const comm *c, int k, const rank_scenario *all)
{
    if (c->rank == 0 && k != 0 && !stopped(&all[0]))
        log_error(strcmp(all[k].hash, UNLOADED_HASH) == 0
                      ? "rank %d could not load the scenario (its message names why): every rank "
                        "stops"
                      : "rank %d stopped before the run (its message says why): every rank stops",
                  k);
    return EXIT_USAGE;
}

/* every rank runs the same scenario with the same --steps (its hash covers both), the same
 * --comm and the same input files (a digest of each): a rank given another file or step count
 * would train other steps than rank 0 records, or wait for ever after rank 0 is done. A
 * collective (s NULL: this rank stopped, marker says how); 0 on every rank, or 2 on every rank
 * (rank 0 names them) */
static int same_scenario(comm *c, const scenario *s, const char *path, const char *marker,
                         int kind)
{
    if (c->size == 1)
        return 0;
    c = comm_host(c);
    rank_scenario mine, *all = malloc((size_t)c->size * sizeof *all);
    scenario_input *inputs = NULL;
    int bad = !all || describe_rank(&mine, s, marker, kind, &inputs);
    if (bad || c->ops->allgather(c, &mine, all, sizeof mine)) {
        log_error("run: comparing the ranks' scenarios: %s", bad ? "out of host memory" : c->error);
        free(all);
        free(inputs);
        return EXIT_FAIL;
    }
    int rc = 0;
    for (int k = 0; k < c->size; k++)
        if (stopped(&all[k]))
            rc = say_stopped(c, k, all);
    for (int k = 1; !rc && k < c->size; k++)
        rc = rank_differs(c, k, all, path, inputs);
    free(all);
    free(inputs);
    return rc;
}

/* the host communicator of env (mpi, or single for one rank), opened under --comm-timeout */
static int open_host(const run_args *a, const comm_env *env, comm **c)
{
    double timeout = a->comm_timeout > 0 ? a->comm_timeout : COMM_DEFAULT_TIMEOUT_S;
    return comm_open(env, timeout, runner_stop_flag(), c);
}

/* this rank stops before the run (rc, said): under a launcher with several ranks it still joins
 * the job and says so in the scenario check (marker), so that the other ranks stop with exit 2
 * instead of waiting in MPI_Init for ever. Returns rc */
static int join_to_stop(const run_args *a, const comm_env *env, const char *marker, int rc)
{
    comm *c;
    if (env->world <= 1 || !comm_have_mpi() || open_host(a, env, &c))
        return rc;
    same_scenario(c, NULL, a->scenario ? a->scenario : "run", marker, COMM_MPI);
    comm_close(c);
    return rc;
}

int ranks_open(run_args *a, const scenario *s)
{
    comm_env env;
    a->comm = NULL;
    int rc = comm_env_read(&env);
    if (rc)
        return rc;
    if (env.world != s->world_size) { /* every rank but one given another scenario sees it too */
        comm_env_error(&env, "%s: world_size %d, but %s started %d rank%s (start them with "
                       "mpirun -np N or srun -n N: docs/ranks.md)", s->path, s->world_size,
                       strcmp(env.launcher, "none") ? env.launcher : "no launcher", env.world,
                       env.world == 1 ? "" : "s");
        return join_to_stop(a, &env, STOPPED_HASH, EXIT_USAGE);
    }
    if ((rc = choose_comm(a, &env)))
        return join_to_stop(a, &env, STOPPED_HASH, rc);
    if ((rc = open_host(a, &env, &a->comm)))
        return rc;
    if ((rc = same_scenario(a->comm, s, s->path, NULL, a->comm_kind))) {
        comm_close(a->comm);
        a->comm = NULL;
    }
    return rc;
}

int ranks_fail_early(const run_args *a, int rc)
{
    comm_env env;
    if (comm_env_read(&env))
        return rc;
    return join_to_stop(a, &env, UNLOADED_HASH, rc);
}

int runner_leave_early(int rc)
{
    comm_env env;
    run_args none;
    memset(&none, 0, sizeof none);
    if (comm_env_read(&env))
        return rc;
    return join_to_stop(&none, &env, STOPPED_HASH, rc);
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
