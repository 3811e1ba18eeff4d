/* harness/cli/main.c: the `harness` executable: global options and dispatch to the cmd_<name>
 * subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_core.h"
#include "comm/comm.h"
#include "commands.h"
#include "util/fatal_signal.h"
#include "util/util.h"

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    int prints_result; /* 1: stdout is the command's result (a table, a verdict, JSON) */
} command;

static const command commands[] = {
    {"run", cmd_run, "train a scenario on a device and record every step", 0},
    {"init", cmd_init, "write a scenario's initial weights as a Hugging Face model directory", 0},
    {"runs", cmd_runs, "list the runs in the store", 1},
    {"show", cmd_show, "print one run and its steps", 1},
    {"devices", cmd_devices, "list the backends and devices of this build", 0},
    {"ops", cmd_ops, "check every device op against the cpu reference (test, grad, perf)", 0},
    {"baseline", cmd_baseline, "record, import and list baselines (reference runs)", 1},
    {"compare", cmd_compare, "judge a run against its baseline or its history: pass or fail", 1},
    {"report", cmd_report, "porting table (Markdown, HTML, CSV, JUnit) and plots of runs", 1},
    {"exec", cmd_exec, "run your own (PyTorch) training command and record every step it logs", 0},
    {"ingest", cmd_ingest, "record a run from finished training logs (several ranks' too)", 0},
    {"preprocess", cmd_preprocess, "tokenize text or JSON lines into a Megatron .bin/.idx dataset", 0},
    {"fetch", cmd_fetch, "download a model or dataset from the Hugging Face hub or a mirror into its cache", 0},
    {"comm-check", cmd_comm_check, "check and time the collectives between ranks (nccl-tests)", 0},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: harness [--version] [--help] <command> [<args>]\n\n"
               "Cross-vendor accuracy and performance validation harness for training.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'harness <command> --help' describes a command. Exit codes: 0 pass, 1 a check "
               "or run failed, 2 usage or input error.\n");
}

/* the exit code once output is done: a result lost on stdout (a full disk, a closed file) is an
 * error (2), whatever the result said, pass or fail; a command that already failed with a
 * usage error has said why */
static int finish_stdout(int rc)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    if (rc != EXIT_USAGE)
        log_error("writing the output to stdout failed");
    return EXIT_USAGE;
}

/* 1 when the command was asked for its --help (-h): its result is that text */
static int asks_help(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    blas_core_fix(argv); /* before anything: may execute the harness again */
    log_rank = comm_env_rank_hint(); /* messages of rank N > 0 say so */
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return finish_stdout(EXIT_PASS);
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("harness %s (commit %s)\n", HARNESS_VERSION,
               harness_git_commit[0] ? harness_git_commit : "unknown");
        return finish_stdout(EXIT_PASS);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            fatal_signal_report(commands[i].name);
            int rc = commands[i].fn(argc - 1, argv + 1);
            fatal_command_done();
            return commands[i].prints_result || asks_help(argc, argv) ? finish_stdout(rc) : rc;
        }
    log_error("unknown command '%s' (see 'harness --help')", argv[1]);
    return EXIT_USAGE;
}
