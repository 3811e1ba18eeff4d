/* harness/cli/cmd_exec.c: `harness exec [options] -- CMD ARGS...`: runs the user's training command,
 * passes its output through unchanged and records every step it prints as a new run. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"
#include "commands.h"
#include "ingest/ingest.h"
#include "judge/baseline_args.h"

typedef struct {
    const char *scenario, *device, *db, *format, *keys, *baseline, *baselines;
    int compare;
    char **cmd;
} exec_args;

static void exec_usage(FILE *f)
{
    fprintf(f,
        "usage: harness exec [--scenario FILE] [--device LABEL] [--db FILE] [--format F]\n"
        "                    [--keys FIELD=KEY,...] [--compare [--baseline B] [--baselines D]]\n"
        "                    -- CMD ARGS...\n\n"
        "Runs CMD (no shell), passes its stdout and stderr through unchanged, parses the\n"
        "training steps it prints and records each at once in a new run, with the command,\n"
        "working directory, device/rank/Slurm environment, exit code or signal, what the\n"
        "workload reports about itself and the raw log (docs/workloads.md). SIGINT, SIGTERM\n"
        "and SIGHUP go to CMD's process group (one ignored when exec starts, as under nohup,\n"
        "stays ignored for both). The harness's own lines go to stderr.\n\n"
        "  --scenario FILE  the scenario the command trains (name, hash, tolerances, baseline)\n"
        "  --device LABEL   the device label of the run (default pytorch), e.g. a100, musa\n"
        "  --db FILE        SQLite store (default %s)\n"
        "  --format F       the log format instead of detecting it: harness, trainer, seed,\n"
        "                   mllog, deepspeed, jsonl\n"
        "  --keys K         jsonl: FIELD=KEY,... (e.g. step=iter,loss=lm_loss)\n"
        "  --compare        judge the run against its baseline as 'harness run --compare'\n"
        "                   (every recorded run, whatever its status)\n"
        "  --baseline B     with --compare: LABEL, RUN id or FILE instead of the scenario's\n"
        "  --baselines D    with --compare: look for committed baseline files in D first\n\n"
        "Exit codes: 0 the run ended ok (and with --compare passed), 1 it failed, diverged or\n"
        "did not pass, 2 usage or input error (nothing is run or recorded then; a --compare\n"
        "baseline label, run id or file that is not there is found before CMD runs, and so is a\n"
        "store that cannot take the run: locked past its busy timeout, read-only).\n",
        DEFAULT_DB);
}

static int parse_exec_args(int argc, char **argv, exec_args *a)
{
    memset(a, 0, sizeof *a);
    a->device = "pytorch";
    a->db = DEFAULT_DB;
    int dash = 0;
    while (dash < argc && strcmp(argv[dash], "--") != 0)
        dash++;
    for (int i = 1; i < dash; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            exec_usage(stdout);
            return -1;
        }
    const cmd_opt opts[] = {{"--scenario", &a->scenario, NULL}, {"--device", &a->device, NULL},
                            {"--db", &a->db, NULL}, {"--format", &a->format, NULL},
                            {"--keys", &a->keys, NULL}, {"--baseline", &a->baseline, NULL},
                            {"--baselines", &a->baselines, NULL}, {"--compare", NULL, &a->compare},
                            {NULL, NULL, NULL}};
    int n_pos = 0;
    const char *pos[1];
    int rc = cmd_parse(dash, argv, opts, pos, 0, &n_pos);
    if (rc)
        return rc == 1 ? -1 : rc;
    if (dash + 1 >= argc)
        return cmd_usage_error("exec", "no command given after '--'");
    if (!a->compare && (a->baseline || a->baselines))
        return cmd_usage_error("exec", "--baseline and --baselines go with --compare");
    if (a->compare && !a->scenario && !a->baseline)
        return cmd_usage_error("exec", "--compare needs --scenario (or --baseline)");
    a->cmd = argv + dash + 1;
    return 0;
}

#define EXEC_COMMAND_MAX 65536 /* bytes of the command line kept (docs/workloads.md) */

/* 1 when arg needs no shell quoting */
static int plain_word(const char *arg)
{
    return arg[0] && strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789_-./=:,+@%") == strlen(arg);
}

/* arg shell-quoted at out (NULL: only measured); its length */
static size_t quote_word(const char *arg, char *out)
{
    int plain = plain_word(arg);
    size_t o = 0;
    if (!plain && out)
        out[o] = '\'';
    o += !plain;
    for (const char *p = arg; *p; p++) {
        int quote = *p == '\'' && !plain;
        if (out)
            memcpy(out + o, quote ? "'\\''" : p, quote ? 4 : 1);
        o += quote ? 4 : 1;
    }
    if (!plain && out)
        out[o] = '\'';
    return o + !plain;
}

/* the command line as one shell-quoted string, malloc'd (NULL out of memory); past
 * EXEC_COMMAND_MAX bytes it is cut (never inside a UTF-8 character) and ends "...", *whole
 * then its full length, else 0 */
static char *quote_command(char **cmd, size_t *whole)
{
    size_t len = 0;
    for (int i = 0; cmd[i]; i++)
        len += (i > 0) + quote_word(cmd[i], NULL);
    char *text = malloc(len + 1);
    if (!text)
        return NULL;
    size_t o = 0;
    for (int i = 0; cmd[i]; i++) {
        if (i)
            text[o++] = ' ';
        o += quote_word(cmd[i], text + o);
    }
    text[o] = 0;
    *whole = 0;
    if (len > EXEC_COMMAND_MAX) {
        size_t cut = EXEC_COMMAND_MAX - 3;
        while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
            cut--; /* back to the start of the character the cut fell in */
        memcpy(text + cut, "...", 4);
        *whole = len;
    }
    return text;
}

/* "exec:train.py": the first argument that names a script, else the program */
static void run_name(char **cmd, char *out, size_t n)
{
    const char *pick = cmd[0];
    for (int i = 1; cmd[i]; i++) {
        size_t l = strlen(cmd[i]);
        if (l > 3 && (!strcmp(cmd[i] + l - 3, ".py") || !strcmp(cmd[i] + l - 3, ".sh"))) {
            pick = cmd[i];
            break;
        }
    }
    const char *base = strrchr(pick, '/');
    snprintf(out, n, "exec:%s", base ? base + 1 : pick);
}

static void on_output(int stream, const char *data, size_t len, void *arg)
{
    recorder *r = arg;
    rec_feed(r, stream - 1, data, len);
}

static void keep_invocation(recorder *r, char **cmd)
{
    char cwd[PATH_MAX];
    size_t whole;
    char *text = quote_command(cmd, &whole);
    if (!text)
        log_warn("exec: out of memory for the command line: the run keeps no 'command'");
    else if (whole)
        log_warn("exec: the command line is %zu bytes: the run keeps its first %d, ending "
                 "\"...\"", whole, EXEC_COMMAND_MAX);
    if (text)
        rec_extra(r, "command", text);
    free(text);
    if (getcwd(cwd, sizeof cwd))
        rec_extra(r, "cwd", cwd);
    rec_extra(r, "recorded_by", "harness exec");
    exec_keep_env(r);
}

/* The run begun and CMD started in one write transaction (as the run name when there is no
 * scenario): a store that cannot take the run (locked past its busy timeout, read-only) is
 * exit 2 before CMD runs, and a CMD that cannot be started leaves the store as it was
 * (*not_started). 0 with CMD running and the run committed, or 2 after a message. */
static int begin_and_start(store *st, const scenario *s, const char *name, const exec_args *a,
                           child_proc *c, int64_t *run_id, int *not_started)
{
    char err[512];
    if (store_write_begin(st, "beginning the run") ||
        exec_begin_run(st, s, name, a->device, 0, run_id)) {
        store_write_end(st, 1);
        *run_id = 0; /* rolled back: no run to judge */
        log_error("exec: the store cannot take the run; CMD was not run");
        return EXIT_USAGE;
    }
    if (child_start(a->cmd, c, err, sizeof err)) {
        store_write_end(st, 1);
        *run_id = 0; /* rolled back with CMD not started: --compare has nothing to judge */
        log_error("exec: %s", err);
        *not_started = 1;
        return EXIT_USAGE;
    }
    if (store_write_end(st, 0)) { /* CMD runs already: it is not stopped for the store */
        log_error("exec: the run could not be recorded; the command runs on unrecorded");
        child_pump(c, NULL, NULL);
        *run_id = 0;
        return EXIT_FAIL;
    }
    return 0;
}

/* the child is running and its run begun: record it to its end */
static int record_child(store *st, const scenario *s, const exec_args *a, child_proc *c,
                        int64_t run_id)
{
    char how[300];
    recorder r;
    if (rec_init(&r, st, run_id, a->format, a->keys, exec_tokens_per_step(s)) ||
        rec_source_add(&r, "stdout", -1) < 0 || rec_source_add(&r, "stderr", -1) < 0) {
        log_error("exec: the run could not be recorded; the command runs on unrecorded");
        child_pump(c, NULL, NULL);
        return EXIT_FAIL;
    }
    rec_set_dtype(&r, s ? s->dtype : NULL);
    keep_invocation(&r, a->cmd);
    child_pump(c, on_output, &r);
    child_describe(c, how, sizeof how);
    rec_extra(&r, c->signaled ? "signal" : "exit_code", how);
    /* interrupted (a signal passed on to it) is failed even when the command then exits 0, as
     * an interrupted `harness run` is */
    int rc = rec_finish(&r, !c->signaled && c->exit_code == 0 && !c->forwarded, how, stderr);
    rec_free(&r);
    return rc;
}

/* the store this exec created, removed again when CMD could not be started (a script whose
 * interpreter is missing is found only by execvp): an input error leaves no new file */
static void remove_new_store(const char *db)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s%s", db, suffixes[i]) < (int)sizeof path &&
            unlink(path) != 0 && errno != ENOENT)
            log_warn("exec: %s: removing the store created for the run: %s", path, strerror(errno));
    }
}

int cmd_exec(int argc, char **argv)
{
    exec_args a;
    int rc = parse_exec_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? EXIT_PASS : rc;
    lp_reader probe; /* --format and --keys are checked before anything runs */
    char err[512];
    if (lp_reader_init(&probe, a.format, a.keys, err, sizeof err))
        return cmd_usage_error("exec", "%s", err);
    if (child_findable(a.cmd[0], err, sizeof err)) {
        log_error("exec: %s", err);
        return EXIT_USAGE;
    }
    if (a.compare && (rc = baseline_args_check("exec", a.baseline, a.baselines)))
        return rc;
    scenario s;
    memset(&s, 0, sizeof s);
    if (a.scenario && (rc = scenario_load(a.scenario, &s)) != 0) {
        scenario_free(&s);
        return rc;
    }
    char name[300];
    run_name(a.cmd, name, sizeof name);
    if (a.compare &&
        (rc = exec_baseline_known(a.db, a.scenario ? &s : NULL, name, a.baseline, a.baselines))) {
        scenario_free(&s);
        return rc;
    }
    store *st = NULL;
    struct stat db_stat;
    int db_existed = lstat(a.db, &db_stat) == 0, not_started = 0;
    if ((rc = store_open(a.db, &st)) == 0) {
        child_proc c;
        int64_t run_id = 0;
        const scenario *sp = a.scenario ? &s : NULL;
        if ((rc = begin_and_start(st, sp, name, &a, &c, &run_id, &not_started)) == 0)
            rc = record_child(st, sp, &a, &c, run_id);
        if (a.compare && run_id) /* every recorded run is judged, as `harness run` does */
            rc = exec_judged_exit(rc, exec_compare(st, run_id, a.scenario, a.baseline,
                                                   a.baselines));
        store_close(st);
        if (not_started && !db_existed)
            remove_new_store(a.db);
    }
    scenario_free(&s);
    return rc;
}
