/* harness/comm/comm_env.c: the rank, world size and local rank a launcher gave this process:
 * Open MPI's mpirun, Slurm's srun, or torchrun's variables; none of them is one rank. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "util/util.h"

#define COMM_MAX_WORLD 65536

/* the variable name as an int in [min, max]: 0 and *v set, 1 when unset, 2 after a message */
static int env_int(const char *name, long min, long max, int *v)
{
    const char *s = getenv(name);
    if (!s)
        return 1;
    long x;
    if (parse_long(s, &x) || x < min || x > max) {
        log_error("environment: %s='%s' is not a number in [%ld, %ld]", name, term_safe(s), min,
                  max);
        return 2;
    }
    *v = (int)x;
    return 0;
}

/* rank, world and local rank from three variables; the world is read first. 0 when all three
 * (local rank optional: 0) are set, 1 when the rank or world is unset, 2 after a message */
static int read_triple(const char *rank, const char *world, const char *local, comm_env *e)
{
    int rc = env_int(world, 1, COMM_MAX_WORLD, &e->world), r;
    if (rc == 1) { /* no world: one process, unless a rank other than 0 says otherwise */
        if ((rc = env_int(rank, 0, COMM_MAX_WORLD - 1, &r)) == 0 && r != 0) {
            log_error("environment: %s=%d is set but %s is not: a launcher sets both (unset %s "
                      "to run one process)", rank, r, world, rank);
            return 2;
        }
        return rc == 2 ? 2 : 1;
    }
    if (rc)
        return rc;
    if ((rc = env_int(rank, 0, e->world - 1, &e->rank)) == 1 && e->world > 1) {
        log_error("environment: %s=%d is set but %s is not: a launcher sets both (unset %s to "
                  "run one process)", world, e->world, rank, world);
        return 2;
    }
    if (rc)
        return rc == 1 ? 1 : 2;
    e->local_rank = 0;
    rc = env_int(local, 0, COMM_MAX_WORLD - 1, &e->local_rank);
    return rc == 2 ? 2 : 0;
}

/* srun: SLURM_STEP_NUM_TASKS is the step's tasks (a batch script itself is one process with
 * SLURM_NTASKS of the whole allocation and no step variables, so it is not a rank of a step) */
static int read_slurm(comm_env *e)
{
    if (!getenv("SLURM_STEP_ID") && !getenv("SLURM_STEPID"))
        return 1;
    return read_triple("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", e);
}

/* torchrun's RANK/WORLD_SIZE, when also set under another launcher, must say the same */
static int check_torchrun_agrees(const comm_env *e)
{
    comm_env t;
    int rc = read_triple("RANK", "WORLD_SIZE", "LOCAL_RANK", &t);
    if (rc == 1)
        return 0;
    if (rc == 2)
        return 2;
    if (t.rank == e->rank && t.world == e->world)
        return 0;
    log_error("environment: RANK=%d WORLD_SIZE=%d (torchrun) disagree with %s's rank %d of %d",
              t.rank, t.world, e->launcher, e->rank, e->world);
    return 2;
}

/* the launchers, in the order they are looked for (slurm's variables: read_slurm) */
static const struct {
    const char *launcher, *rank, *world, *local;
} kinds[] = {
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"slurm", NULL, NULL, NULL},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
};

int comm_env_rank_hint(void)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        int slurm_step = getenv("SLURM_STEP_ID") || getenv("SLURM_STEPID");
        const char *v = kinds[i].rank ? getenv(kinds[i].rank)
                                      : slurm_step ? getenv("SLURM_PROCID") : NULL;
        char *end;
        long r = v && *v ? strtol(v, &end, 10) : -1;
        if (v && *v && !*end && r >= 0 && r < COMM_MAX_WORLD)
            return (int)r;
    }
    return 0;
}

int comm_env_read(comm_env *e)
{
    memset(e, 0, sizeof *e);
    e->world = 1;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        int rc = kinds[i].rank ? read_triple(kinds[i].rank, kinds[i].world, kinds[i].local, e)
                               : read_slurm(e);
        if (rc == 2)
            return EXIT_USAGE;
        if (rc == 0) {
            snprintf(e->launcher, sizeof e->launcher, "%s", kinds[i].launcher);
            return strcmp(e->launcher, "torchrun") ? check_torchrun_agrees(e) : 0;
        }
    }
    memset(e, 0, sizeof *e);
    e->world = 1;
    snprintf(e->launcher, sizeof e->launcher, "none");
    return 0;
}

void comm_env_error(const comm_env *e, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (e->rank == 0)
        log_error("%s", msg);
    else
        log_error("rank %d: %s", e->rank, msg);
}
