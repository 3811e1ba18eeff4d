/* harness/cli/main.c: the `harness` executable: global options and dispatch to the cmd_<name>
 * subcommands. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "util/util.h"

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"run", cmd_run, "train a scenario on a device and record every step"},
    {"init", cmd_init, "write a scenario's initial weights as a Hugging Face model directory"},
    {"runs", cmd_runs, "list the runs in the store"},
    {"show", cmd_show, "print one run and its steps"},
    {"devices", cmd_devices, "list the backends and devices of this build"},
    {"ops", cmd_ops, "check every device op against the cpu reference (test, grad, perf)"},
    {"baseline", cmd_baseline, "record, import and list baselines (reference runs)"},
    {"compare", cmd_compare, "judge a run against its baseline or its history: pass or fail"},
    {"report", cmd_report, "porting table (Markdown, HTML, CSV, JUnit) and plots of runs"},
    {"exec", cmd_exec, "run your own (PyTorch) training command and record every step it logs"},
    {"ingest", cmd_ingest, "record a run from finished training logs (several ranks' too)"},
    {"preprocess", cmd_preprocess, "tokenize text or JSON lines into a Megatron .bin/.idx dataset"},
    {"fetch", cmd_fetch, "download a model or dataset from the Hugging Face hub or a mirror into its cache"},
    {"comm-check", cmd_comm_check, "check and time the collectives between ranks (nccl-tests)"},
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

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return EXIT_PASS;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("harness %s (commit %s)\n", HARNESS_VERSION,
               harness_git_commit[0] ? harness_git_commit : "unknown");
        return EXIT_PASS;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    log_error("unknown command '%s' (see 'harness --help')", argv[1]);
    return EXIT_USAGE;
}
