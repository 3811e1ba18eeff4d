/* tests/test_comm_device.c: what of the nccl communicator runs without a GPU: choosing it, each
 * rank's device index, the id exchange and device checks (also over MPI), device buffers on cpu. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "comm/comm.h"
#include "cpu/cpu_real.h"
#include "testutil.h"
#include "train/train.h"

static void choosing_the_communicator(void **state)
{
    (void)state;
    char why[256];
    assert_int_equal(comm_kind_parse("auto"), COMM_AUTO);
    assert_int_equal(comm_kind_parse("mpi"), COMM_MPI);
    assert_int_equal(comm_kind_parse("nccl"), COMM_NCCL);
    assert_int_equal(comm_kind_parse("NCCL"), -1);
    assert_int_equal(comm_kind_parse(""), -1);
    const char *gpu = comm_nccl_backend();
    char gpu1[32];
    snprintf(gpu1, sizeof gpu1, "%s:1", gpu);
    /* auto: nccl only for the nccl backend's device, several ranks, a build with it */
    assert_int_equal(comm_choose(COMM_AUTO, gpu, 2, 1, why, sizeof why), COMM_NCCL);
    assert_int_equal(comm_choose(COMM_AUTO, gpu1, 8, 1, why, sizeof why), COMM_NCCL);
    assert_int_equal(comm_choose(COMM_AUTO, gpu, 1, 1, why, sizeof why), COMM_MPI);
    assert_int_equal(comm_choose(COMM_AUTO, gpu, 2, 0, why, sizeof why), COMM_MPI);
    assert_int_equal(comm_choose(COMM_AUTO, "opencl", 2, 1, why, sizeof why), COMM_MPI);
    assert_int_equal(comm_choose(COMM_AUTO, "cpu", 2, 1, why, sizeof why), COMM_MPI);
    /* mpi is always possible; nccl asked is refused with the reason */
    assert_int_equal(comm_choose(COMM_MPI, gpu, 2, 1, why, sizeof why), COMM_MPI);
    assert_int_equal(comm_choose(COMM_NCCL, gpu, 1, 1, why, sizeof why), COMM_NCCL);
    assert_int_equal(comm_choose(COMM_NCCL, gpu, 2, 0, why, sizeof why), -1);
    assert_non_null(strstr(why, "this build has no NCCL communicator"));
    assert_int_equal(comm_choose(COMM_NCCL, "opencl:0", 2, 1, why, sizeof why), -1);
    assert_non_null(strstr(why, "--device 'opencl:0' is not a"));
    /* a backend whose name starts like the nccl one's is not it */
    char longer[40];
    snprintf(longer, sizeof longer, "%sx:0", gpu);
    assert_int_equal(comm_choose(COMM_NCCL, longer, 2, 1, why, sizeof why), -1);
}

static void device_index_by_local_rank(void **state)
{
    (void)state;
    int shared = -1;
    assert_int_equal(comm_rank_device_index(0, 2, &shared), 0);
    assert_int_equal(shared, 0);
    assert_int_equal(comm_rank_device_index(1, 2, &shared), 1);
    assert_int_equal(shared, 0);
    /* more local ranks than devices seen: modulo, said shared (nccl then checks the GPUs' ids:
     * with CUDA_VISIBLE_DEVICES per rank, local rank 1 on its one visible GPU is not shared) */
    assert_int_equal(comm_rank_device_index(3, 2, &shared), 1);
    assert_int_equal(shared, 1);
    assert_int_equal(comm_rank_device_index(1, 1, &shared), 0);
    assert_int_equal(shared, 1);
    assert_int_equal(comm_rank_device_index(0, 0, &shared), -1);
    assert_int_equal(comm_rank_device_index(-1, 4, &shared), -1);
}

static void shared_devices_found(void **state)
{
    (void)state;
    comm_device_slot s[4] = {{"a", "0000:3b:00.0"}, {"a", "0000:5e:00.0"},
                             {"b", "0000:3b:00.0"}, {"b", "0000:5e:00.0"}};
    int x = -1, y = -1;
    assert_int_equal(comm_find_shared_device(s, 4, &x, &y), 0);
    snprintf(s[3].id, sizeof s[3].id, "0000:3b:00.0"); /* ranks 2 and 3 on one GPU of b */
    assert_int_equal(comm_find_shared_device(s, 4, &x, &y), 1);
    assert_true(x == 2 && y == 3);
    comm_device_slot missing[2] = {{"a", ""}, {"a", ""}}; /* not opened: not shared */
    assert_int_equal(comm_find_shared_device(missing, 2, &x, &y), 0);
}

static int make_ok(void *id, char *err, size_t len, void *arg)
{
    (void)err, (void)len;
    memset(id, *(int *)arg, 128);
    return 0;
}

static int make_fails(void *id, char *err, size_t len, void *arg)
{
    (void)id, (void)arg;
    snprintf(err, len, "ncclGetUniqueId: unhandled system error (2)");
    return 1;
}

static void id_shared_and_failures_told(void **state)
{
    (void)state;
    comm *c = comm_single(10);
    unsigned char id[128] = {0}, want[128];
    int fill = 0x5a;
    memset(want, fill, sizeof want);
    assert_int_equal(comm_share_id(c, id, sizeof id, make_ok, &fill), 0);
    assert_memory_equal(id, want, sizeof id);
    memset(id, 0, sizeof id);
    assert_int_equal(comm_share_id(c, id, sizeof id, make_fails, NULL), 1);
    assert_non_null(strstr(c->error, "rank 0 could not make one: ncclGetUniqueId: unhandled"));
    assert_int_equal(id[0], 0);
    /* the device checks before NCCL starts: a rank without a device stops every rank */
    assert_int_equal(comm_check_devices(c, "0000:3b:00.0"), 0);
    assert_int_equal(comm_check_devices(c, NULL), 2);
    /* no device: refused before NCCL is called, the host communicator kept */
    comm *kept = c;
    assert_int_equal(comm_attach_nccl(&c, NULL), 2);
    assert_ptr_equal(c, kept);
    comm_close(c);
}

/* ---- a one-rank communicator that takes device buffers, on the cpu device (whose memory the
 * host can address): the callers' device-buffer paths, run without a GPU ---- */

static int loop_allreduce(comm *c, float *buf, size_t n)
{
    (void)c, (void)buf, (void)n;
    return 0;
}

static int loop_reducescatter(comm *c, const float *in, float *out, size_t n)
{
    (void)c;
    memmove(out, in, n * sizeof *in);
    return 0;
}

static int loop_allgather(comm *c, const void *in, void *out, size_t bytes)
{
    (void)c;
    memmove(out, in, bytes);
    return 0;
}

static int loop_broadcast(comm *c, void *buf, size_t bytes, int root)
{
    (void)buf, (void)bytes;
    return root == 0 ? 0 : comm_fail(c, "broadcast", "root %d", root);
}

static int loop_barrier(comm *c)
{
    (void)c;
    return 0;
}

static void loop_abort(comm *c, int code)
{
    (void)c;
    exit(code);
}

static void loop_close(comm *c)
{
    comm_close(c->host);
    free(c);
}

static const comm_ops loop_ops = {"loop",         1,
                                  loop_allreduce, loop_reducescatter,
                                  loop_allgather, loop_broadcast,
                                  loop_barrier,   loop_abort,
                                  loop_close};

static void *cpu_address(device *d, dten t)
{
    (void)d;
    return RP(t);
}

static comm *loop_comm(device *d)
{
    comm *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->ops = &loop_ops;
    c->size = 1;
    c->timeout_s = 10;
    c->host = comm_single(10);
    c->dev = d;
    c->address = cpu_address;
    assert_non_null(c->host);
    return c;
}

static void comm_check_on_device_buffers(void **state)
{
    (void)state;
    char err[256];
    device *d = device_open("cpu", err, sizeof err);
    assert_non_null(d);
    comm *c = loop_comm(d);
    assert_ptr_equal(comm_host(c), c->host);
    cc_options o = {64, 64, 2, 1, 1, -1};
    for (int op = 0; op < CC_N_OPS; op++) {
        cc_result r;
        assert_int_equal(cc_run_one(c, (cc_op)op, 256, &o, &r), 0);
        assert_int_equal(r.wrong, 0);
        assert_int_equal(r.first_bad_rank, -1);
    }
    o.fault_rank = 0; /* the spoiled element of the downloaded result is caught */
    for (int op = 0; op < CC_N_OPS; op++) {
        cc_result r;
        assert_int_equal(cc_run_one(c, (cc_op)op, 256, &o, &r), 0);
        assert_int_equal(r.wrong, 1);
        assert_int_equal(r.first_bad_rank, 0);
        assert_int_equal(r.first_bad_index, 0);
    }
    assert_int_equal(d->mem_current, 0); /* the device buffers were freed */
    comm_close(c);
    device_close(d);
}

typedef struct {
    double loss[16], norm[16];
    int n;
} trace;

static int keep_step(const step_record *r, void *arg)
{
    trace *t = arg;
    if (t->n < 16) {
        t->loss[t->n] = r->loss;
        t->norm[t->n++] = r->grad_norm;
    }
    return 0;
}

/* gpt2-tiny with accumulation over `accum` micro-batches, its gradients summed and scaled on the
 * host (the single communicator) or on the device (the loopback one) */
static void train_accum(int accum, int on_device, trace *t)
{
    scenario s;
    assert_int_equal(scenario_load(tu_source_path("scenarios/gpt2-tiny.json"), &s), 0);
    s.grad_accum = accum;
    s.batch_size = 4;
    char err[256];
    device *d = device_open("cpu", err, sizeof err);
    assert_non_null(d);
    comm *c = on_device ? loop_comm(d) : comm_single(10);
    memset(t, 0, sizeof *t);
    train_options o = {.steps = 5, .on_step = keep_step, .arg = t, .comm = c};
    train_result res;
    assert_int_equal(train_run(&s, d, &o, &res), 0);
    assert_int_equal(t->n, 5);
    comm_close(c);
    device_close(d);
    scenario_free(&s);
}

static void device_reduction_equals_host(void **state)
{
    (void)state;
    for (int accum = 2; accum <= 3; accum++) {
        trace host, dev;
        train_accum(accum, 0, &host);
        train_accum(accum, 1, &dev);
        /* the same float sums and the same float scale, in the same order: the same bits */
        assert_memory_equal(host.loss, dev.loss, sizeof host.loss);
        assert_memory_equal(host.norm, dev.norm, sizeof host.norm);
    }
}

/* ---- under mpirun -np 2 (tests/test_nccl_nogpu.sh): the same exchanges over MPI ---- */

static comm *mpi_comm(void)
{
    comm_env env;
    comm *c = NULL;
    assert_int_equal(comm_env_read(&env), 0);
    assert_int_equal(env.world, 2);
    assert_int_equal(comm_open(&env, 30, NULL, &c), 0);
    assert_string_equal(c->ops->name, "mpi");
    return c;
}

static void mpi_id_and_device_checks(void **state)
{
    (void)state;
    comm *c = mpi_comm();
    unsigned char id[128], want[128];
    int fill = 0x40 + c->rank; /* only rank 0 makes the id: every rank gets rank 0's */
    memset(want, 0x40, sizeof want);
    assert_int_equal(comm_share_id(c, id, sizeof id, make_ok, &fill), 0);
    assert_memory_equal(id, want, sizeof id);
    /* rank 0's failure reaches rank 1 with its message */
    assert_int_equal(comm_share_id(c, id, sizeof id, make_fails, NULL), 1);
    assert_non_null(strstr(c->error, "rank 0 could not make one: ncclGetUniqueId: unhandled"));
    /* a GPU each: go on; both on device 0 of this host, or one without a device: every rank
     * stops with 2 */
    const char *own = c->rank ? "0000:5e:00.0" : "0000:3b:00.0";
    assert_int_equal(comm_check_devices(c, own), 0);
    assert_int_equal(comm_check_devices(c, "0000:3b:00.0"), 2);
    assert_int_equal(comm_check_devices(c, c->rank == 1 ? NULL : own), 2);
    comm *kept = c;
    assert_int_equal(comm_attach_nccl(&c, NULL), 2);
    assert_ptr_equal(c, kept);
    assert_int_equal(c->ops->barrier(c), 0); /* the host communicator still works */
    comm_close(c);
}

int main(void)
{
    if (getenv("OMPI_COMM_WORLD_SIZE")) {
        const struct CMUnitTest under_mpi[] = {cmocka_unit_test(mpi_id_and_device_checks)};
        return cmocka_run_group_tests(under_mpi, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(choosing_the_communicator),
        cmocka_unit_test(device_index_by_local_rank),
        cmocka_unit_test(shared_devices_found),
        cmocka_unit_test(id_shared_and_failures_told),
        cmocka_unit_test(comm_check_on_device_buffers),
        cmocka_unit_test(device_reduction_equals_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
