/* harness/cli/cmd_comm_check.c: `harness comm-check`: every collective of this build's
 * communicator checked and timed per size as nccl-tests does, the results stored by rank 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "commands.h"
#include "device.h"
#include "store/store.h"
#include "util/cmdline.h"
#include "util/util.h"

#define CC_MAX_ROWS 256

typedef struct {
    const char *sizes, *db, *device; /* device NULL: not given (cpu, or cuda for --comm nccl) */
    comm_kind comm;
    int ops[CC_N_OPS], n_ops;
    double timeout;
    cc_options o;
} cc_args;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: harness comm-check [--sizes MIN:MAX] [--op OP|all] [--iters N] [--warmup N]\n"
            "                          [--values int|float] [--comm mpi|nccl|auto] [--comm-timeout S]\n"
            "                          [--device SPEC] [--db FILE]\n\n"
            "Checks the collectives of the communicator the launcher gives (mpirun, srun, or\n"
            "one rank: docs/ranks.md), as nccl-tests does: for each size from MIN to MAX\n"
            "(doubling) every rank fills known values, runs the collective, checks the result\n"
            "(small integers exactly; with --values float within the fp32 bound of the sum)\n"
            "and prints the slowest rank's mean time, the algorithm bandwidth (size / time)\n"
            "and the bus bandwidth (algbw x 2(n-1)/n for allreduce, (n-1)/n for allgather and\n"
            "reducescatter, 1 for broadcast). Rank 0 stores every row in the comm_checks table\n"
            "with the device and launcher. Every rank must be given the same options: they\n"
            "are compared before the first collective (exit 2 naming the rank and option).\n\n"
            "  --sizes MIN:MAX  bytes, with B, K, M, G suffixes (powers of 1024; default 8B:64M);\n"
            "                   --sizes N is one size, N:N\n"
            "  --op OP          allreduce, allgather, reducescatter, broadcast or all (default)\n"
            "  --iters N        timed iterations per size (default 5), --warmup N untimed (1)\n"
            "  --values V       int (exact check, default) or float (fp32 bound)\n"
            "  --comm C         mpi (host memory), nccl (the cuda device's memory, one GPU\n"
            "                   per rank: cuda means cuda:LOCAL_RANK) or auto, the default:\n"
            "                   nccl for a cuda --device with several ranks when this build\n"
            "                   has it, else mpi\n"
            "  --comm-timeout S the longest wait of any collective (default 300 s)\n"
            "  --device SPEC    the device recorded with the results (default cpu; cuda with\n"
            "                   --comm nccl, whose buffers it holds); mpi moves host memory\n"
            "  --db FILE        SQLite store (default %s)\n\n"
            "Fault injection (tests): HARNESS_COMM_FAULT=R makes rank R spoil element 0 of its\n"
            "result after every collective; the check must catch it and name rank R.\n"
            "Communicators in this build: single, %s%s.\n"
            "Exit codes: 0 every result right, 1 a wrong result or a communicator failure,\n"
            "2 usage error (and --comm nccl without a GPU or without NCCL in the build; a\n"
            "--device that does not open or a --db that is no store, found before any collective).\n",
            DEFAULT_DB, comm_have_mpi() ? "mpi" : "(no mpi)", comm_have_nccl() ? ", nccl" : "");
}

static int parse_int_opt(const char *opt, const char *v, int min, int max, int *out)
{
    long x;
    if (parse_long(v, &x) || x < min || x > max)
        return cmd_usage_error("comm-check", "%s: '%s' is not a number in [%d, %d]", opt, v,
                               min, max);
    *out = (int)x;
    return 0;
}

static int parse_op(cc_args *a, const char *v)
{
    if (strcmp(v, "all") == 0) {
        for (int i = 0; i < CC_N_OPS; i++)
            a->ops[i] = i;
        a->n_ops = CC_N_OPS;
        return 0;
    }
    int op = cc_op_parse(v);
    if (op < 0)
        return cmd_usage_error("comm-check", "--op: '%s' is not allreduce, allgather, "
                               "reducescatter, broadcast or all", v);
    a->ops[0] = op;
    a->n_ops = 1;
    return 0;
}

static int parse_fault(cc_args *a)
{
    const char *f = getenv("HARNESS_COMM_FAULT");
    a->o.fault_rank = -1;
    if (!f)
        return 0;
    long x;
    if (parse_long(f, &x) || x < 0 || x > 65535) {
        log_error("comm-check: HARNESS_COMM_FAULT='%s' is not a rank", term_safe(f));
        return EXIT_USAGE;
    }
    a->o.fault_rank = (int)x;
    return 0;
}

static int parse_one(cc_args *a, int argc, char **argv, int *i)
{
    static const char *const known[] = {"--sizes", "--op", "--iters", "--warmup", "--values",
                                        "--comm-timeout", "--device", "--comm", "--db"};
    const char *arg = argv[*i];
    int is_known = 0;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        is_known |= strcmp(arg, known[k]) == 0;
    if (!is_known)
        return cmd_usage_error("comm-check", "unknown option '%s'", arg);
    if (*i + 1 >= argc)
        return cmd_usage_error("comm-check", "%s needs a value", arg);
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        if (strcmp(argv[*i + 1], known[k]) == 0 || strcmp(argv[*i + 1], "--help") == 0)
            return cmd_usage_error("comm-check", "%s needs a value (the next argument, %s, is "
                                                 "one of this command's options)", arg,
                                   argv[*i + 1]);
    const char *v = argv[++*i];
    if (cmd_nonempty("comm-check", arg, v))
        return EXIT_USAGE;
    if (strcmp(arg, "--sizes") == 0)
        a->sizes = v;
    else if (strcmp(arg, "--op") == 0)
        return parse_op(a, v);
    else if (strcmp(arg, "--iters") == 0)
        return parse_int_opt(arg, v, 1, 100000, &a->o.iters);
    else if (strcmp(arg, "--warmup") == 0)
        return parse_int_opt(arg, v, 0, 100000, &a->o.warmup);
    else if (strcmp(arg, "--values") == 0) {
        if (strcmp(v, "int") != 0 && strcmp(v, "float") != 0)
            return cmd_usage_error("comm-check", "--values: '%s' is not int or float", v);
        a->o.float_values = strcmp(v, "float") == 0;
    } else if (strcmp(arg, "--comm-timeout") == 0) {
        if (parse_double(v, &a->timeout) || !(a->timeout > 0) || a->timeout > 86400)
            return cmd_usage_error("comm-check", "--comm-timeout: '%s' is not seconds in "
                                   "(0, 86400]", v);
    } else if (strcmp(arg, "--device") == 0)
        a->device = v;
    else if (strcmp(arg, "--comm") == 0) {
        if (comm_kind_parse(v) < 0)
            return cmd_usage_error("comm-check", "--comm: '%s' is not mpi, nccl or auto", v);
        a->comm = (comm_kind)comm_kind_parse(v);
    } else
        a->db = v;
    return 0;
}

static int parse_args(int argc, char **argv, cc_args *a)
{
    memset(a, 0, sizeof *a);
    *a = (cc_args){"8B:64M", DEFAULT_DB, NULL, COMM_AUTO, {0, 1, 2, 3}, CC_N_OPS,
                   COMM_DEFAULT_TIMEOUT_S, {0, 0, 5, 1, 0, -1}};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return -1;
        }
        int rc = parse_one(a, argc, argv, &i);
        if (rc)
            return rc;
    }
    if (!a->device)
        a->device = a->comm == COMM_NCCL ? comm_nccl_backend() : "cpu";
    int rc = cc_parse_sizes(a->sizes, &a->o.min_bytes, &a->o.max_bytes);
    return rc ? rc : parse_fault(a);
}

static void print_row(const cc_result *r)
{
    printf("%12zu %12zu  float  %-13s %10.1f %10.3f %10.3f %8lld\n", r->bytes, r->count,
           cc_op_name(r->op), r->time_us, r->algbw, r->busbw, (long long)r->wrong);
    if (r->wrong)
        printf("  WRONG: %s %zu B: %lld wrong element%s, first on rank %d at element %lld: got "
               "%.9g, expected %.9g\n", cc_op_name(r->op), r->bytes, (long long)r->wrong,
               r->wrong == 1 ? "" : "s", r->first_bad_rank, (long long)r->first_bad_index,
               r->got, r->expected);
    fflush(stdout);
}

/* every op at every size; rows[*n] on every rank. 0 or 1 (communicator failure) */
static int run_all(comm *c, const cc_args *a, cc_result *rows, int *n)
{
    *n = 0;
    if (c->rank == 0)
        printf("# comm-check: %d rank%s, %s communicator, launcher %s\n"
               "# %10s %12s  type   %-13s %10s %10s %10s %8s\n",
               c->size, c->size == 1 ? "" : "s", c->ops->name, c->launcher, "size(B)", "count",
               "op", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
    for (int k = 0; k < a->n_ops; k++)
        for (size_t b = a->o.min_bytes, last = 0; b <= a->o.max_bytes && *n < CC_MAX_ROWS;
             b *= 2) {
            /* sizes under one float per rank all measure that one float: one row, not several
             * rows of the same size */
            if (cc_row_bytes((cc_op)a->ops[k], b, c->size) == last)
                continue;
            last = cc_row_bytes((cc_op)a->ops[k], b, c->size);
            cc_result *r = &rows[(*n)++];
            if (cc_run_one(c, (cc_op)a->ops[k], b, &a->o, r)) {
                log_error("comm-check: %s", c->error);
                return 1;
            }
            if (c->rank == 0)
                print_row(r);
        }
    return 0;
}

static int store_rows(const cc_args *a, comm *c, store *st, device *d, const cc_result *rows,
                      int n)
{
    char host[256];
    host_name(host, sizeof host);
    comm_check_meta m = {host, c->launcher, c->ops->name, a->device, d->name, c->size};
    int64_t id = 0;
    int rc = store_next_comm_check(st, &id);
    for (int i = 0; !rc && i < n; i++) {
        comm_check_row row = {cc_op_name(rows[i].op), (int64_t)rows[i].bytes,
                              (int64_t)rows[i].count, rows[i].iters, rows[i].time_us,
                              rows[i].algbw, rows[i].busbw, rows[i].wrong,
                              rows[i].first_bad_rank};
        rc = store_add_comm_check(st, id, &m, &row);
    }
    if (rc == 0)
        printf("comm check %lld recorded in %s\n", (long long)id, term_safe(a->db));
    return rc ? EXIT_FAIL : 0;
}

/* what every rank must be given alike, gathered before the first collective: the options that
 * decide which collectives run, on what and how often (a rank with other sizes or iterations
 * waited for a collective the others never ran, or compared other values) */
typedef struct {
    int32_t stopped; /* 1: this rank stopped before the check (its message says why) */
    int32_t comm;    /* what --comm resolved to */
    int32_t n_ops, ops[CC_N_OPS];
    int32_t iters, warmup, float_values, fault_rank;
    int32_t reserved; /* 0: no padding bytes go over the wire */
    uint64_t min_bytes, max_bytes;
} cc_agreed;

enum { AGREE_SIZES, AGREE_OP, AGREE_ITERS, AGREE_WARMUP, AGREE_VALUES, AGREE_COMM, AGREE_FAULT,
       AGREE_FIELDS };

/* field f of x as the option that sets it ("--iters 3") into out */
static void agreed_text(const cc_agreed *x, int f, char *out, size_t len)
{
    size_t at = 0;
    switch (f) {
    case AGREE_SIZES:
        snprintf(out, len, "--sizes %lluB:%lluB", (unsigned long long)x->min_bytes,
                 (unsigned long long)x->max_bytes);
        break;
    case AGREE_OP:
        at = (size_t)snprintf(out, len, "--op ");
        for (int i = 0; i < x->n_ops && i < CC_N_OPS && at < len; i++)
            at += (size_t)snprintf(out + at, len - at, "%s%s", i ? "," : "",
                                   cc_op_name((cc_op)x->ops[i]));
        break;
    case AGREE_ITERS:
        snprintf(out, len, "--iters %d", (int)x->iters);
        break;
    case AGREE_WARMUP:
        snprintf(out, len, "--warmup %d", (int)x->warmup);
        break;
    case AGREE_VALUES:
        snprintf(out, len, "--values %s", x->float_values ? "float" : "int");
        break;
    case AGREE_COMM:
        snprintf(out, len, "--comm %s", comm_kind_name((comm_kind)x->comm));
        break;
    default:
        if (x->fault_rank < 0)
            snprintf(out, len, "no HARNESS_COMM_FAULT");
        else
            snprintf(out, len, "HARNESS_COMM_FAULT=%d", (int)x->fault_rank);
    }
}

/* rank k's options against rank 0's: 0, or 2 after rank 0 names the first that differs */
static int options_differ(const comm *c, int k, const cc_agreed *all)
{
    char mine[256], theirs[256];
    for (int f = 0; f < AGREE_FIELDS; f++) {
        agreed_text(&all[0], f, mine, sizeof mine);
        agreed_text(&all[k], f, theirs, sizeof theirs);
        if (strcmp(mine, theirs) == 0)
            continue;
        if (c->rank == 0)
            log_error("comm-check: rank %d was given %s, rank 0 %s: every rank must be given the "
                      "same options", k, theirs, mine);
        return EXIT_USAGE;
    }
    return 0;
}

/* A collective over the host communicator: every rank's options (a NULL: this rank stopped
 * before the check) against rank 0's. 0 on every rank, 2 on every rank (rank 0 names the rank
 * and the option), 1 when the communicator failed */
static int same_options(comm *c, const cc_args *a, int kind)
{
    if (c->size == 1)
        return a ? 0 : EXIT_USAGE;
    cc_agreed mine, *all = calloc((size_t)c->size, sizeof *all);
    memset(&mine, 0, sizeof mine);
    mine.stopped = a == NULL;
    if (a) {
        mine = (cc_agreed){0, kind, a->n_ops, {0}, a->o.iters, a->o.warmup, a->o.float_values,
                           a->o.fault_rank, 0, a->o.min_bytes, a->o.max_bytes};
        for (int i = 0; i < a->n_ops && i < CC_N_OPS; i++)
            mine.ops[i] = a->ops[i];
    }
    if (!all || c->ops->allgather(c, &mine, all, sizeof mine)) {
        log_error("comm-check: comparing the ranks' options: %s", all ? c->error : "out of host "
                  "memory");
        free(all);
        return EXIT_FAIL;
    }
    int rc = 0;
    for (int k = 0; k < c->size; k++)
        if (all[k].stopped) {
            if (c->rank == 0 && k != 0 && !all[0].stopped)
                log_error("comm-check: rank %d stopped before the check (its message says why): "
                          "every rank stops", k);
            rc = EXIT_USAGE;
        }
    for (int k = 1; !rc && k < c->size; k++)
        rc = options_differ(c, k, all);
    free(all);
    return rc;
}

/* this rank stops before the check (rc, said; 0 after --help): under a launcher with several
 * ranks it still joins the job and says so, so that the others stop with exit 2 instead of
 * waiting for it in MPI_Init for ever. Returns rc */
static int leave_early(const cc_args *a, int rc)
{
    comm_env env;
    comm *c;
    double timeout = a->timeout > 0 && a->timeout <= 86400 ? a->timeout : COMM_DEFAULT_TIMEOUT_S;
    if (comm_env_read(&env) || env.world <= 1 || !comm_have_mpi() ||
        comm_open(&env, timeout, NULL, &c))
        return rc;
    same_options(c, NULL, COMM_MPI);
    comm_close(c);
    return rc;
}

/* what this rank decides alone before MPI starts: *kind, what --comm resolves to; 0, or 2
 * after a message (any rank's, "rank N: ..." for others than 0: it may be the only one) */
static int decide_alone(const cc_args *a, const comm_env *env, int *kind)
{
    char why[512];
    /* a fault rank outside the world spoils nothing: a check that cannot fail */
    if (a->o.fault_rank >= env->world) {
        comm_env_error(env, "comm-check: HARNESS_COMM_FAULT=%d names no rank of this world of %d "
                       "(ranks 0 to %d)", a->o.fault_rank, env->world, env->world - 1);
        return EXIT_USAGE;
    }
    *kind = comm_choose(a->comm, a->device, env->world, comm_have_nccl(), why, sizeof why);
    if (*kind < 0) {
        comm_env_error(env, "comm-check: %s", why);
        return EXIT_USAGE;
    }
    return 0;
}

/* the host communicator of the launcher's environment, the ranks' options compared over it,
 * then for nccl the rank's device and the nccl communicator over it (*d: that device). 0, or
 * 1/2 after a message */
static int open_comm(const cc_args *a, comm **c, device **d)
{
    comm_env env;
    char why[512];
    int kind = COMM_MPI;
    *c = NULL;
    *d = NULL;
    int rc = comm_env_read(&env);
    if (rc)
        return rc;
    int alone = decide_alone(a, &env, &kind);
    if (alone)
        return leave_early(a, alone);
    if ((rc = comm_open(&env, a->timeout, NULL, c)))
        return rc;
    if ((rc = same_options(*c, a, kind))) {
        comm_close(*c);
        *c = NULL;
        return rc;
    }
    if (kind != COMM_NCCL)
        return 0;
    *d = comm_rank_device(*c, a->device, 1, why, sizeof why);
    if (!*d)
        log_error("comm-check: rank %d: --device %s: %s", (*c)->rank, a->device, why);
    if ((rc = comm_attach_nccl(c, *d))) {
        comm_close(*c);
        if (*d)
            device_close(*d);
        *c = NULL;
        *d = NULL;
    }
    return rc;
}

/* rank 0, before any collective: the device recorded with the results (*label: opened here
 * unless it is the nccl communicator's own) and the store; 0, or 2 after a message naming it */
static int open_outputs(const cc_args *a, device *own, device **label, store **st)
{
    char err[512];
    *label = NULL;
    *st = NULL;
    if (!own && !(*label = device_open(a->device, err, sizeof err))) {
        log_error("comm-check: --device %s: %s", term_safe(a->device), err);
        return EXIT_USAGE;
    }
    if (store_open(a->db, st) == 0)
        return 0;
    if (*label)
        device_close(*label);
    *label = NULL;
    return EXIT_USAGE;
}

/* rank 0's outcome of open_outputs told to every rank (they stop together); 0, 1 (the
 * communicator failed) or 2 */
static int agree_outputs(comm *c, int rank0_rc)
{
    float flag = (float)rank0_rc;
    if (comm_allreduce_scaled(comm_host(c), &flag, 1, 1.0f)) {
        log_error("comm-check: %s", comm_host(c)->error);
        return EXIT_FAIL;
    }
    return flag > 0 ? EXIT_USAGE : 0;
}

int cmd_comm_check(int argc, char **argv)
{
    cc_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return leave_early(&a, rc < 0 ? EXIT_PASS : rc);
    comm *c = NULL;
    device *d = NULL;
    if ((rc = open_comm(&a, &c, &d)))
        return rc;
    device *label = NULL;
    store *st = NULL;
    if ((rc = agree_outputs(c, c->rank == 0 ? open_outputs(&a, d, &label, &st) : 0))) {
        store_close(st);
        if (label)
            device_close(label);
        comm_close(c);
        if (d)
            device_close(d);
        return rc;
    }
    static cc_result rows[CC_MAX_ROWS];
    int n = 0;
    if (run_all(c, &a, rows, &n)) {
        comm_abort(c, EXIT_FAIL);
        return EXIT_FAIL;
    }
    int64_t wrong = 0;
    for (int i = 0; i < n; i++)
        wrong += rows[i].wrong;
    rc = c->rank == 0 ? store_rows(&a, c, st, d ? d : label, rows, n) : 0;
    store_close(st);
    if (label)
        device_close(label);
    if (c->rank == 0 && wrong)
        log_error("comm-check: %lld wrong element%s (see WRONG above)", (long long)wrong,
                  wrong == 1 ? "" : "s");
    comm_close(c); /* the nccl communicator before the device whose stream it uses */
    if (d)
        device_close(d);
    return rc ? rc : wrong ? EXIT_FAIL : EXIT_PASS;
}
