/* tests/test_comm.c: the launcher's environment (every launcher, malformed and disagreeing
 * variables), the single communicator, DistributedSampler's order and comm-check's arithmetic. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "comm/comm.h"
#include "formats/formats.h"

static const char *const vars[] = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID",
    "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_NTASKS",
    "RANK", "WORLD_SIZE", "LOCAL_RANK", NULL};

static void clear_env(void)
{
    for (int i = 0; vars[i]; i++)
        unsetenv(vars[i]);
}

static void no_launcher_is_one_rank(void **state)
{
    (void)state;
    clear_env();
    comm_env e;
    assert_int_equal(comm_env_read(&e), 0);
    assert_string_equal(e.launcher, "none");
    assert_int_equal(e.world, 1);
    assert_int_equal(e.rank, 0);
}

static void each_launcher(void **state)
{
    (void)state;
    comm_env e;
    clear_env();
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    assert_int_equal(comm_env_read(&e), 0);
    assert_string_equal(e.launcher, "mpirun");
    assert_true(e.rank == 3 && e.world == 8 && e.local_rank == 1);
    clear_env();
    /* a batch script: SLURM_NTASKS of the allocation, no step: one rank, not a step's rank */
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_NTASKS", "4", 1);
    assert_int_equal(comm_env_read(&e), 0);
    assert_string_equal(e.launcher, "none");
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_STEP_NUM_TASKS", "4", 1);
    setenv("SLURM_PROCID", "2", 1);
    setenv("SLURM_LOCALID", "2", 1);
    assert_int_equal(comm_env_read(&e), 0);
    assert_string_equal(e.launcher, "slurm");
    assert_true(e.rank == 2 && e.world == 4 && e.local_rank == 2);
    clear_env();
    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    assert_int_equal(comm_env_read(&e), 0);
    assert_string_equal(e.launcher, "torchrun");
    assert_true(e.rank == 1 && e.world == 2 && e.local_rank == 0);
    clear_env();
}

static void hostile_variables(void **state)
{
    (void)state;
    static const char *const bad[][2] = {{"abc", "0"}, {"2", "2"},  {"0", "-1"}, {"", "0"},
                                         {"99999999999", "0"}, {"2", "x"}, {"0x2", "0"}};
    comm_env e;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clear_env();
        setenv("OMPI_COMM_WORLD_SIZE", bad[i][0], 1);
        setenv("OMPI_COMM_WORLD_RANK", bad[i][1], 1);
        assert_int_equal(comm_env_read(&e), 2);
    }
    clear_env(); /* torchrun's variables that disagree with mpirun's */
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "2", 1);
    assert_int_equal(comm_env_read(&e), 2);
    setenv("RANK", "1", 1);
    assert_int_equal(comm_env_read(&e), 0);
    clear_env();
}

static void single_collectives(void **state)
{
    (void)state;
    comm *c = comm_single(10);
    assert_non_null(c);
    float v[3] = {1, 2, 3}, out[3];
    assert_int_equal(comm_allreduce_scaled(c, v, 3, 0.5f), 0);
    assert_true(v[0] == 0.5f && v[2] == 1.5f);
    assert_int_equal(c->ops->allgather(c, v, out, sizeof v), 0);
    assert_memory_equal(v, out, sizeof v);
    assert_int_equal(c->ops->broadcast(c, v, sizeof v, 0), 0);
    assert_int_equal(c->ops->broadcast(c, v, sizeof v, 1), 1);
    assert_non_null(strstr(c->error, "broadcast on rank 0: root 1"));
    comm_close(c);
}

/* PyTorch's DistributedSampler(shuffle=False) over 5 samples and 2 ranks: indices 0..4 padded
 * with 0 to 6; rank 0 takes 0, 2, 4 and rank 1 takes 1, 3, 0 (torch.utils.data.distributed) */
static void sampler_pads_as_pytorch(void **state)
{
    (void)state;
    static const size_t r0[] = {0, 2, 4, 0, 2, 4}, r1[] = {1, 3, 0, 1, 3, 0};
    for (size_t k = 0; k < 6; k++) {
        assert_int_equal(sampler_index(k, 0, 2, 5), r0[k]);
        assert_int_equal(sampler_index(k, 1, 2, 5), r1[k]);
        assert_int_equal(sampler_index(k, 0, 1, 5), k % 5);
    }
}

static void comm_check_arithmetic(void **state)
{
    (void)state;
    assert_true(cc_busbw_factor(CC_ALLREDUCE, 4) == 1.5);
    assert_true(cc_busbw_factor(CC_ALLGATHER, 4) == 0.75);
    assert_true(cc_busbw_factor(CC_REDUCESCATTER, 2) == 0.5);
    assert_true(cc_busbw_factor(CC_BROADCAST, 8) == 1.0);
    size_t lo, hi;
    assert_int_equal(cc_parse_sizes("8B:256M", &lo, &hi), 0);
    assert_true(lo == 8 && hi == 256u << 20);
    assert_int_equal(cc_parse_sizes("4K", &lo, &hi), 0);
    assert_true(lo == 4096 && hi == 4096);
    static const char *const bad[] = {"", ":", "8B:", "0:8", "8:4", "-1:8", "8X:9", "1G:2T",
                                      "8B:16MB", "9999999999999999999999:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(cc_parse_sizes(bad[i], &lo, &hi), 2);
    comm *c = comm_single(10);
    cc_options o = {64, 64, 2, 0, 0, -1};
    for (int op = 0; op < CC_N_OPS; op++) {
        cc_result r;
        assert_int_equal(cc_run_one(c, (cc_op)op, 64, &o, &r), 0);
        assert_int_equal(r.wrong, 0);
    }
    o.fault_rank = 0; /* the fault injection is caught on rank 0 */
    cc_result r;
    assert_int_equal(cc_run_one(c, CC_ALLREDUCE, 64, &o, &r), 0);
    assert_int_equal(r.wrong, 1);
    assert_int_equal(r.first_bad_rank, 0);
    comm_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_launcher_is_one_rank), cmocka_unit_test(each_launcher),
        cmocka_unit_test(hostile_variables),       cmocka_unit_test(single_collectives),
        cmocka_unit_test(sampler_pads_as_pytorch), cmocka_unit_test(comm_check_arithmetic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
