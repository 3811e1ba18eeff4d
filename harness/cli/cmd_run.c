/* harness/cli/cmd_run.c: `harness run SCENARIO...`: the options, then one run (runner_run_one)
 * or the --compare matrix (run_matrix); harness/runner/ does the work. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/output_target.h"
#include "util/util.h"
#include "commands.h"
#include "runner/runner.h"

static void run_usage(FILE *f)
{
    fprintf(f,
            "usage: harness run SCENARIO [--device SPEC] [--db FILE] [--steps N] [--save DIR]\n"
            "                            [--dump-batches FILE] [--comm mpi|nccl|auto]\n"
            "                            [--comm-timeout S] [--quiet]\n"
            "       harness run SCENARIO --golden [--db FILE] [--steps N] [--quiet]\n"
            "       harness run SCENARIO... --compare [--device SPEC,SPEC...|all]\n"
            "                  [--baseline LABEL|RUN|FILE] [--baselines DIR] [--db FILE] [--quiet]\n\n"
            "Trains the scenario on one device and records every step in the store. The\n"
            "scenario, model, weights, tokenizer, data and device are read and checked\n"
            "first: an input error records nothing (the store is opened only after).\n"
            "With --compare: trains every scenario on every listed device, compares each run\n"
            "with its baseline (the scenario's \"baseline\" label unless --baseline; see\n"
            "'harness compare --help'), prints one summary table and exits with the worst\n"
            "verdict. 'all' is every backend compiled in that has a device, except cpu64\n"
            "(name it to include it). Every scenario, device and baseline of the matrix is\n"
            "checked before the first cell trains: an input error anywhere records nothing.\n"
            "Started by mpirun, srun or with torchrun's variables, each process is one rank of\n"
            "a data-parallel run (the scenario's world_size must be the number of ranks): only\n"
            "rank 0 prints and records; 'opencl' means opencl:LOCAL_RANK (docs/ranks.md).\n\n"
            "  --device SPEC  device to train on (default cpu; see 'harness devices')\n"
            "  --db FILE      SQLite store (default %s; created if missing)\n"
            "  --steps N      train N steps instead of the scenario's train.steps\n"
            "  --save DIR     write the final weights as a Hugging Face model directory\n"
            "                 (config.json + model.safetensors) when the run ends ok; DIR (or\n"
            "                 its nearest existing parent) must be a writable directory\n"
            "  --dump-batches FILE  write every step's batch (input ids, token types,\n"
            "                 attention mask, labels) to FILE as one JSON line per step (per\n"
            "                 micro-batch with gradient_accumulation_steps > 1)\n"
            "  --comm C       what moves the gradients between the ranks: mpi (host memory),\n"
            "                 nccl (cuda device memory: a build with NCCL, --device cuda, one\n"
            "                 GPU per rank) or auto, the default: nccl for cuda with several\n"
            "                 ranks when this build has it, else mpi\n"
            "  --comm-timeout S  with several ranks (mpirun, srun: docs/ranks.md): the longest\n"
            "                 wait of any collective, in seconds (default 300); a rank dead or\n"
            "                 hung that long ends the run as failed, naming it\n"
            "  --quiet        print only the final line\n"
            "  --golden       the golden run of the scenario: trained on cpu64 in fp64 whatever\n"
            "                 the scenario's dtype, and labelled 'golden' in the store, where\n"
            "                 compare finds it for the error ratio (docs/compare.md)\n"
            "  --compare      compare each run with its baseline (docs/compare.md)\n"
            "  --baseline B   with --compare: the baseline of every run instead of the default\n"
            "  --baselines D  with --compare: look for committed baseline files in D first\n\n"
            "Exit codes: 0 the run finished ok (with --compare: every verdict is pass), 1 it\n"
            "failed or diverged (NaN/Inf loss) or was interrupted (with --compare: a verdict\n"
            "is not pass), 2 usage or input error.\n",
            DEFAULT_DB);
}

/* every path, name and list given is non-empty: "" is a usage error, before any work */
static int check_nonempty(const run_args *a)
{
    const struct {
        const char *what, *value;
    } given[] = {{"--db", a->db},           {"--device", a->device},
                 {"--save", a->save},       {"--baseline", a->baseline},
                 {"--dump-batches", a->dump_batches},
                 {"--baselines", a->baselines}};
    for (size_t i = 0; i < sizeof given / sizeof given[0]; i++)
        if (given[i].value && cmd_nonempty("run", given[i].what, given[i].value))
            return EXIT_USAGE;
    for (int i = 0; i < a->n_scenarios; i++)
        if (cmd_nonempty("run", "SCENARIO", a->scenarios[i]))
            return EXIT_USAGE;
    return 0;
}

/* --golden trains on cpu64 (the default device becomes cpu64; --device cpu64 is taken, any
 * other named device, cpu included, is an error rather than silently replaced) */
static int check_golden_args(run_args *a, int device_given)
{
    if (a->compare)
        return cmd_usage_error("run", "--golden records the golden run of one scenario, not "
                                      "with --compare");
    if (device_given && strcmp(a->device, "cpu64") != 0)
        return cmd_usage_error("run", "--golden trains on cpu64 (fp64), not on --device %s",
                               a->device);
    a->device = "cpu64";
    return 0;
}

/* 1 when name is a file --save writes (or its temporary twin ending in .tmp) */
static int saved_name(const char *name)
{
    static const char *const saved[] = {"config.json", "model.safetensors", "tokenizer.json",
                                        "vocab.json", "merges.txt", "vocab.txt",
                                        "tokenizer_config.json", "override_config.json"};
    size_t n = strlen(name);
    if (n > 4 && strcmp(name + n - 4, ".tmp") == 0)
        return 1;
    for (size_t i = 0; i < sizeof saved / sizeof saved[0]; i++)
        if (strcmp(name, saved[i]) == 0)
            return 1;
    return 0;
}

/* 1 when path (its links followed) is a file --save writes into the folder save; its name into
 * name[len] */
static int written_by_save(const char *path, const char *save, char *name, size_t len)
{
    char real[4200], dir[4200];
    if (output_follow_links(path, real, sizeof real))
        return 0;
    const char *slash = strrchr(real, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - real) : 1, slash ? real : ".");
    snprintf(name, len, "%s", slash ? slash + 1 : real);
    return saved_name(name) && dir[0] && same_file_path(dir, save);
}

/* 1 (after a message) when the dump is one of the files --save writes at the end (their
 * temporary files too), or the folder it writes them into or one above it */
static int dump_in_save_dir(const char *dump, const char *save)
{
    char path[4200];
    if (written_by_save(dump, save, path, sizeof path)) {
        log_error("run: --dump-batches %s is the %s that --save %s writes at the end", dump, path,
                  save);
        return 1;
    }
    snprintf(path, sizeof path, "%s", save);
    for (size_t n = strlen(path); n > 0; n--) { /* save, then each folder above it */
        if (path[n] != '/' && path[n] != 0)
            continue;
        path[n] = 0;
        if (path[0] && same_file_path(dump, path)) {
            log_error("run: --dump-batches %s is the folder %s that --save %s writes into", dump,
                      path, save);
            return 1;
        }
    }
    return 0;
}

/* 1 (after a message) when the dump is the store or one of SQLite's files beside it (its
 * -wal, -shm, -journal: a dump there wiped the store, or faulted its mapped index) */
static int dump_is_store(const char *dump, const char *db)
{
    char side[4200];
    int k = output_names_store(dump, db, side, sizeof side);
    if (k)
        log_error("run: --dump-batches %s is %s%s (--db %s): the dump would overwrite it", dump,
                  k == 2 ? "SQLite's file beside the store, " : "the store", k == 2 ? side : "",
                  db);
    return k != 0;
}

/* 1 (after a message) when the store or a file SQLite keeps beside it is a file --save would
 * write: the checkpoint would overwrite the store at the end of the run */
static int save_over_store(const char *save, const char *db)
{
    static const char *const sides[] = {"", "-wal", "-shm", "-journal"};
    char path[4200], name[4200];
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
        snprintf(path, sizeof path, "%s%s", db, sides[i]);
        if (written_by_save(path, save, name, sizeof name)) {
            log_error("run: --save %s would write %s, which is %s (--db %s)", save, name,
                      i ? "SQLite's file beside the store" : "the store", db);
            return 1;
        }
    }
    return 0;
}

/* run's options that take a value, and its flags */
static const char *const RUN_VALUE_OPTIONS[] = {"--baseline", "--baselines", "--device", "--db",
                                                "--save",     "--dump-batches", "--steps",
                                                "--comm",     "--comm-timeout", NULL};
static const char *const RUN_FLAGS[] = {"--help", "-h", "--quiet", "-q", "--compare", "--golden",
                                        NULL};

static int listed(const char *const *names, const char *arg)
{
    for (; *names; names++)
        if (strcmp(*names, arg) == 0)
            return 1;
    return 0;
}

static int parse_run_args(int argc, char **argv, run_args *a)
{
    memset(a, 0, sizeof *a);
    a->device = "cpu";
    a->db = DEFAULT_DB;
    int device_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int has_value = i + 1 < argc;
        if (has_value && listed(RUN_VALUE_OPTIONS, arg) &&
            (strncmp(argv[i + 1], "--", 2) == 0 || listed(RUN_FLAGS, argv[i + 1])))
            /* "--db --quiet": the value forgotten, never --quiet taken as a file name (a store
             * named --quiet was made, then overwritten by --dump-batches --quiet) */
            return cmd_usage_error("run", "%s needs a value (the next argument, %s, is an "
                                          "option)", arg, argv[i + 1]);
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            run_usage(stdout);
            return -1;
        } else if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
            a->quiet = 1;
        } else if (strcmp(arg, "--compare") == 0) {
            a->compare = 1;
        } else if (strcmp(arg, "--golden") == 0) {
            a->golden = 1;
        } else if (strcmp(arg, "--baseline") == 0 && has_value) {
            a->baseline = argv[++i];
        } else if (strcmp(arg, "--baselines") == 0 && has_value) {
            a->baselines = argv[++i];
        } else if (strcmp(arg, "--device") == 0 && has_value) {
            a->device = argv[++i];
            device_given = 1;
        } else if (strcmp(arg, "--db") == 0 && has_value) {
            a->db = argv[++i];
        } else if (strcmp(arg, "--save") == 0 && has_value) {
            a->save = argv[++i];
        } else if (strcmp(arg, "--dump-batches") == 0 && has_value) {
            a->dump_batches = argv[++i];
        } else if (strcmp(arg, "--steps") == 0 && has_value) {
            if (parse_long(argv[++i], &a->steps) || a->steps < 1 || a->steps > INT_MAX) {
                log_error("run: --steps: '%s' is not a number of steps from 1 to %d (as "
                          "train.steps)", term_safe(argv[i]), INT_MAX);
                return EXIT_USAGE;
            }
        } else if (strcmp(arg, "--comm") == 0 && has_value) {
            int k = comm_kind_parse(argv[++i]);
            if (k < 0)
                return cmd_usage_error("run", "--comm: '%s' is not mpi, nccl or auto", argv[i]);
            a->comm_kind = (comm_kind)k;
        } else if (strcmp(arg, "--comm-timeout") == 0 && has_value) {
            if (parse_double(argv[++i], &a->comm_timeout) || !(a->comm_timeout > 0) ||
                a->comm_timeout > 86400) {
                log_error("run: --comm-timeout: '%s' is not a number of seconds in (0, 86400]",
                          term_safe(argv[i]));
                return EXIT_USAGE;
            }
        } else if (arg[0] == '-' && arg[1]) {
            return cmd_usage_error("run", "unknown option or missing value: %s", arg);
        } else if (a->n_scenarios < RUN_MAX_SCENARIOS) {
            a->scenarios[a->n_scenarios++] = arg;
            if (!a->scenario)
                a->scenario = arg;
        } else {
            log_error("run: more than %d scenario files", RUN_MAX_SCENARIOS);
            return EXIT_USAGE;
        }
    }
    if (!a->scenario)
        return cmd_usage_error("run", "no scenario file given");
    if (check_nonempty(a))
        return EXIT_USAGE;
    if (a->n_scenarios > 1 && !a->compare) {
        log_error("run: one scenario file expected, got another: %s (several need --compare)",
                  a->scenarios[1]);
        return EXIT_USAGE;
    }
    if (a->compare && (a->save || a->dump_batches)) {
        log_error("run: --save and --dump-batches go with one run, not with --compare");
        return EXIT_USAGE;
    }
    if (a->compare && a->comm_kind != COMM_AUTO) {
        log_error("run: --comm goes with one run, not with --compare");
        return EXIT_USAGE;
    }
    if (a->dump_batches && dump_is_store(a->dump_batches, a->db))
        return EXIT_USAGE;
    if (a->dump_batches && a->save && dump_in_save_dir(a->dump_batches, a->save))
        return EXIT_USAGE;
    if (a->save && save_over_store(a->save, a->db))
        return EXIT_USAGE;
    if (!a->compare && (a->baseline || a->baselines)) {
        log_error("run: --baseline and --baselines go with --compare");
        return EXIT_USAGE;
    }
    return a->golden ? check_golden_args(a, device_given) : 0;
}

int cmd_run(int argc, char **argv)
{
    run_args a;
    int rc = parse_run_args(argc, argv, &a);
    if (rc)
        return runner_leave_early(rc < 0 ? EXIT_PASS : rc);
    if (a.compare)
        return run_matrix(&a);
    return runner_run_one(&a);
}
