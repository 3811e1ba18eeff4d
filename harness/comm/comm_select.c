/* harness/comm/comm_select.c: choosing the communicator that moves the gradients (--comm), each
 * rank's device by its local rank, and the host-side checks and id exchange before NCCL starts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "util/util.h"

static const char *const kind_names[] = {"auto", "mpi", "nccl"};

int comm_kind_parse(const char *name)
{
    for (int k = 0; k < 3; k++)
        if (strcmp(name, kind_names[k]) == 0)
            return k;
    return -1;
}

const char *comm_kind_name(comm_kind k)
{
    return k <= COMM_NCCL ? kind_names[k] : "?";
}

const char *comm_nccl_backend(void)
{
#ifdef HARNESS_MUSA
    return "musa";
#else
    return "cuda";
#endif
}

/* spec's backend ("cuda" of "cuda:1") into out */
static void spec_backend(const char *spec, char *out, size_t len)
{
    size_t n = strcspn(spec, ":");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), spec);
}

int comm_choose(comm_kind asked, const char *spec, int world, int have_nccl, char *why,
                size_t len)
{
    char backend[64];
    spec_backend(spec, backend, sizeof backend);
    int on_nccl_device = strcmp(backend, comm_nccl_backend()) == 0;
    if (asked == COMM_MPI)
        return COMM_MPI;
    if (asked == COMM_AUTO)
        return world > 1 && on_nccl_device && have_nccl ? COMM_NCCL : COMM_MPI;
    if (!have_nccl) {
        snprintf(why, len, "--comm nccl: this build has no NCCL communicator (it needs the %s "
                 "backend, NCCL and MPI: cmake -DHARNESS_NCCL=ON; docs/ranks.md)",
                 comm_nccl_backend());
        return -1;
    }
    if (!on_nccl_device) {
        snprintf(why, len, "--comm nccl moves %s device memory, but --device '%s' is not a %s "
                 "device", comm_nccl_backend(), spec, comm_nccl_backend());
        return -1;
    }
    return COMM_NCCL;
}

int comm_rank_device_index(int local, int n, int *shared)
{
    *shared = 0;
    if (n <= 0 || local < 0)
        return -1;
    *shared = local >= n;
    return local % n;
}

/* how many devices `harness devices` lists for backend ("opencl" counts "opencl:N") */
static int backend_devices(const char *backend)
{
    device_info info[64];
    int n = device_list(info, 64), count = 0;
    size_t len = strlen(backend);
    for (int i = 0; i < n; i++)
        count += strncmp(info[i].spec, backend, len) == 0 && info[i].spec[len] == ':';
    return count;
}

device *comm_rank_device(const comm *c, const char *spec, int one_per_rank, char *err,
                         size_t len)
{
    char chosen[128];
    snprintf(chosen, sizeof chosen, "%s", spec);
    int n = c->size > 1 && !strchr(spec, ':') ? backend_devices(spec) : 0;
    if (n > 0) { /* none: device_open says why (no driver, no GPU) */
        int shared = 0, k = comm_rank_device_index(c->local_rank, n, &shared);
        snprintf(chosen, sizeof chosen, "%s:%d", spec, k);
        if (shared && !one_per_rank)
            log_warn("rank %d: local rank %d shares %s with another rank (%d device%s)", c->rank,
                     c->local_rank, chosen, n, n == 1 ? "" : "s");
    }
    device *d = device_open(chosen, err, len);
    if (!d && strcmp(chosen, spec) != 0) { /* name the spec this rank opened */
        char inner[512];
        snprintf(inner, sizeof inner, "%s", err);
        snprintf(err, len, "%s: %s", chosen, inner);
    }
    return d;
}

int comm_find_shared_device(const comm_device_slot *slots, int n, int *a, int *b)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; slots[i].id[0] && j < n; j++)
            if (strncmp(slots[i].id, slots[j].id, sizeof slots[i].id) == 0 &&
                strncmp(slots[i].host, slots[j].host, sizeof slots[i].host) == 0) {
                *a = i;
                *b = j;
                return 1;
            }
    return 0;
}

int comm_share_id(comm *host, void *id, size_t bytes, comm_id_maker make, void *arg)
{
    typedef struct {
        int32_t status;
        char err[256];
    } id_head;
    size_t total = sizeof(id_head) + bytes;
    unsigned char *msg = calloc(1, total);
    if (!msg)
        return comm_fail(host, "unique id", "out of host memory");
    id_head head = {0, ""};
    if (host->rank == 0)
        head.status = make(msg + sizeof head, head.err, sizeof head.err, arg) ? 1 : 0;
    memcpy(msg, &head, sizeof head);
    int rc = host->ops->broadcast(host, msg, total, 0);
    if (!rc) {
        memcpy(&head, msg, sizeof head);
        head.err[sizeof head.err - 1] = '\0';
        if (head.status)
            rc = comm_fail(host, "unique id", "rank 0 could not make one: %s", head.err);
        else
            memcpy(id, msg + sizeof head, bytes);
    }
    free(msg);
    return rc;
}

/* every rank's slot to every rank: 0, 1 after a message (the host communicator failed) */
static int gather_slots(comm *host, const char *device_id, comm_device_slot *all)
{
    comm_device_slot mine;
    memset(&mine, 0, sizeof mine);
    host_name(mine.host, sizeof mine.host);
    snprintf(mine.id, sizeof mine.id, "%s", device_id ? device_id : "");
    if (host->ops->allgather(host, &mine, all, sizeof mine)) {
        log_error("checking the ranks' devices: %s", host->error);
        return EXIT_FAIL;
    }
    return 0;
}

int comm_check_devices(comm *host, const char *device_id)
{
    comm_device_slot *all = calloc((size_t)host->size, sizeof *all);
    if (!all) {
        log_error("checking the ranks' devices: out of host memory");
        return EXIT_FAIL;
    }
    int rc = gather_slots(host, device_id, all), a = 0, b = 0;
    for (int k = 0; !rc && k < host->size; k++)
        if (!all[k].id[0]) {
            if (host->rank == 0 && k != 0) /* rank k said why itself */
                log_error("rank %d: its device did not open (its message above)", k);
            rc = EXIT_USAGE;
        }
    if (!rc && comm_find_shared_device(all, host->size, &a, &b)) {
        if (host->rank == 0)
            log_error("ranks %d and %d both use the device %.63s of host %.63s, but NCCL takes "
                      "one per rank (more ranks than GPUs on a node? --device %s without an "
                      "index gives each rank its local rank's)", a, b, all[a].id, all[a].host,
                      comm_nccl_backend());
        rc = EXIT_USAGE;
    }
    free(all);
    return rc;
}
