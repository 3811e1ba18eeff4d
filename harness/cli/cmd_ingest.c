/* harness/cli/cmd_ingest.c: `harness ingest LOG... --device LABEL`: the exec parsers over finished
 * log files (an A100 cluster's, copied back): one run, rank 0's steps as its series. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"
#include "commands.h"
#include "ingest/ingest.h"
#include "ingest/log_decode.h"
#include "judge/baseline_args.h"
#include "util/input_file.h"

#define MAX_LOGS REC_MAX_SOURCES
#define READ_CHUNK ((size_t)1 << 20) /* a log is read and parsed 1 MiB at a time */

/* SIGINT, SIGTERM and SIGHUP while the logs are read end the reading after the current chunk,
 * so the run row is finished (failed, "interrupted"), never left "running"; an inherited
 * SIG_IGN (nohup) stays */
static volatile sig_atomic_t ingest_stop;

static void on_stop(int sig)
{
    ingest_stop = sig;
}

#define STOP_SIGNALS 3
static void catch_stops(int on, struct sigaction old[STOP_SIGNALS])
{
    static const int sigs[STOP_SIGNALS] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < STOP_SIGNALS; i++)
        if (!on)
            sigaction(sigs[i], &old[i], NULL);
        else if (sigaction(sigs[i], NULL, &old[i]) == 0 && old[i].sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
}

typedef struct {
    const char *scenario, *device, *db, *format, *keys, *baseline, *baselines;
    int compare;
    const char *logs[MAX_LOGS + 1]; /* one more: told apart from an unknown argument */
    int n_logs;
} ingest_args;

static void ingest_usage(FILE *f)
{
    fprintf(f,
        "usage: harness ingest LOG... --device LABEL [--scenario FILE] [--db FILE] [--format F]\n"
        "                     [--keys FIELD=KEY,...] [--compare [--baseline B] [--baselines D]]\n\n"
        "Records one run from finished training logs with the parsers of 'harness exec'\n"
        "(docs/workloads.md). Several logs are the ranks of one run: a line's rank tag\n"
        "([rank1]:, [default1]:, [Rank 1], srun --label's 1:, \"rank\" in HARNESS_STEP) says\n"
        "whose it is, else log k (from 0, in the order given; logs named alike but for\n"
        "their numbers, rank0.log ... rank15.log, in the order of the numbers) is rank k.\n"
        "Rank 0's steps are the run's steps; every rank's steps and memory are kept too.\n"
        "Each file is stored as the raw log (the first 256 MiB of the run's logs). Every\n"
        "file is opened before anything is recorded, then read a piece at a time: a log of\n"
        "any size takes little memory.\n"
        "Then 'harness baseline record' can make the run a baseline.\n\n"
        "  --device LABEL   the device label of the run (required), e.g. a100\n"
        "  --scenario FILE  the scenario the logs trained (name, hash, tolerances)\n"
        "  --db FILE        SQLite store (default %s)\n"
        "  --format F       harness, trainer, seed, mllog, deepspeed or jsonl (default: detect)\n"
        "  --keys K         jsonl: FIELD=KEY,... (e.g. step=iter,loss=lm_loss)\n"
        "  --compare, --baseline B, --baselines D   as in 'harness exec'\n\n"
        "Exit codes: 0 the run was recorded ok (with --compare: it passed), 1 it has no step,\n"
        "diverged or did not pass, 2 usage or input error (a log that is missing, no regular\n"
        "file or compressed, or a store that cannot take the run: nothing is recorded; a log\n"
        "that fails while it is read ends the run failed).\n",
        DEFAULT_DB);
}

static int parse_ingest_args(int argc, char **argv, ingest_args *a)
{
    memset(a, 0, sizeof *a);
    a->db = DEFAULT_DB;
    const cmd_opt opts[] = {{"--scenario", &a->scenario, NULL}, {"--device", &a->device, NULL},
                            {"--db", &a->db, NULL}, {"--format", &a->format, NULL},
                            {"--keys", &a->keys, NULL}, {"--baseline", &a->baseline, NULL},
                            {"--baselines", &a->baselines, NULL}, {"--compare", NULL, &a->compare},
                            {NULL, NULL, NULL}};
    int many = cmd_count_positional(argc, argv, opts) > MAX_LOGS; /* any count past, not one */
    int rc = many ? 0 : cmd_parse(argc, argv, opts, a->logs, MAX_LOGS + 1, &a->n_logs);
    for (int i = 1; i < argc && many; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            rc = 1;
    if (many && !rc)
        return cmd_usage_error("ingest", "more than %d log files (the ranks of one run)", MAX_LOGS);
    if (rc == 1)
        ingest_usage(stdout);
    if (rc)
        return rc == 1 ? -1 : rc;
    if (!a->n_logs)
        return cmd_usage_error("ingest", "no log file given");
    if (a->n_logs > MAX_LOGS)
        return cmd_usage_error("ingest", "more than %d log files (the ranks of one run)", MAX_LOGS);
    if (!a->device || !a->device[0])
        return cmd_usage_error("ingest", "--device LABEL is required (the device the logs ran on)");
    if (!a->compare && (a->baseline || a->baselines))
        return cmd_usage_error("ingest", "--baseline and --baselines go with --compare");
    if (a->compare && !a->scenario && !a->baseline)
        return cmd_usage_error("ingest", "--compare needs --scenario (or --baseline)");
    return 0;
}

/* the binary format whose magic bytes start the file at fd (compressed, a database such as a
 * harness store, a program, an image), or NULL (a text log) */
static const char *binary_format(int fd)
{
    static const struct { const char *name; const char *magic; size_t len; } kinds[] = {
        {"gzip", "\x1f\x8b", 2}, {"zstd", "\x28\xb5\x2f\xfd", 4},
        {"xz", "\xfd\x37\x7a\x58\x5a\x00", 6}, {"bzip2", "BZh", 3},
        {"zip", "PK\x03\x04", 4}, {"an SQLite database, a harness store", "SQLite format 3\0", 16},
        {"an ELF program", "\x7f" "ELF", 4}, {"a PNG image", "\x89PNG\r\n\x1a\n", 8}};
    unsigned char head[16];
    ssize_t got;
    while ((got = pread(fd, head, sizeof head, 0)) < 0 && errno == EINTR)
        ;
    for (size_t i = 0; got > 0 && i < sizeof kinds / sizeof kinds[0]; i++)
        if ((size_t)got >= kinds[i].len && memcmp(head, kinds[i].magic, kinds[i].len) == 0)
            return kinds[i].name;
    return NULL;
}

/* every log opened (a regular file, readable, not a compressed file) before anything is
 * recorded; 0 or 2 */
static int open_logs(const ingest_args *a, int *fds)
{
    for (int i = 0; i < a->n_logs; i++) {
        char why[INPUT_WHY_LEN]; /* "it is a FIFO (named pipe), not a regular file", ... */
        uint64_t size = 0;
        if ((fds[i] = input_open(a->logs[i], &size, why, sizeof why)) < 0) {
            log_error("ingest: %s: %s", a->logs[i], why);
            return EXIT_USAGE;
        }
        const char *kind = binary_format(fds[i]);
        if (kind) {
            int packed = strchr(kind, ' ') == NULL; /* the compressed ones: one word */
            log_error("ingest: %s: binary file (%s?): not a text log%s", a->logs[i], kind,
                      packed ? "; decompress it first" : "");
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* ---- a numbered family of logs (rank0.log ... rank15.log) in the order of its numbers ----- */

/* the name with each run of digits as one '#': "rank#.log" */
static void name_family(const char *name, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = name; *p && o + 1 < n; p++)
        if (*p < '0' || *p > '9')
            out[o++] = *p;
        else if (p == name || p[-1] < '0' || p[-1] > '9')
            out[o++] = '#';
    out[o] = 0;
}

/* <0, 0, >0 as a's digit runs (by value) and other bytes order a before b: rank2 < rank10 */
static int natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        int da = *a >= '0' && *a <= '9', db = *b >= '0' && *b <= '9';
        if (!da || !db) {
            if (*a != *b)
                return (unsigned char)*a - (unsigned char)*b;
            a++, b++;
            continue;
        }
        while (*a == '0' && a[1] >= '0' && a[1] <= '9')
            a++;
        while (*b == '0' && b[1] >= '0' && b[1] <= '9')
            b++;
        size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
        if (la != lb)
            return la < lb ? -1 : 1;
        int c = memcmp(a, b, la);
        if (c)
            return c;
        a += la, b += lb;
    }
    return (unsigned char)*a - (unsigned char)*b;
}

/* Logs whose paths differ only in their numbers (a shell's rank*.log gives rank10.log before
 * rank2.log) are taken in the order of those numbers: file k is then rank k as the names say.
 * Other lists keep the order given. */
static void order_numbered_family(ingest_args *a)
{
    char first[4096], other[4096];
    name_family(a->logs[0], first, sizeof first);
    if (a->n_logs < 2 || !strchr(first, '#'))
        return;
    for (int i = 1; i < a->n_logs; i++) {
        name_family(a->logs[i], other, sizeof other);
        if (strcmp(first, other) != 0)
            return;
    }
    int moved = 0;
    for (int i = 1; i < a->n_logs; i++) /* insertion sort: stable, and a list is short */
        for (int j = i; j > 0 && natural_cmp(a->logs[j - 1], a->logs[j]) > 0; j--) {
            const char *t = a->logs[j];
            a->logs[j] = a->logs[j - 1];
            a->logs[j - 1] = t;
            moved = 1;
        }
    if (moved)
        log_info("ingest: the logs taken in the order of the numbers in their names (%s first): "
                 "file k is rank k", a->logs[0]);
}

/* one log through the recorder a piece at a time (a log of any size takes READ_CHUNK of
 * memory); 0, or 2 after a message when reading it failed */
static int feed_log(recorder *r, int src, int fd, const char *path, char *buf)
{
    log_decoder dec; /* a UTF-16 log (PowerShell's `>`) reaches the parsers as UTF-8 */
    log_decoder_init(&dec);
    int rc = 0;
    for (;;) {
        ssize_t got = read(fd, buf, READ_CHUNK);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            log_error("ingest: %s: reading: %s", path, strerror(errno));
            rc = EXIT_USAGE;
            break;
        }
        if (got == 0)
            break;
        if (ingest_stop) {
            rc = EXIT_FAIL; /* interrupted: the caller says so */
            break;
        }
        const char *text;
        size_t len;
        if (log_decode(&dec, buf, (size_t)got, &text, &len)) {
            log_error("ingest: %s: converting its %s to UTF-8: %s", path,
                      log_decoder_encoding(&dec), strerror(errno));
            rc = EXIT_USAGE;
            break;
        }
        rec_feed(r, src, text, len);
    }
    log_decoder_free(&dec);
    return rc;
}

/* the run's name without a scenario: ingest:<the first log's file name> */
static void log_run_name(const ingest_args *a, char *name, size_t len)
{
    const char *base = strrchr(a->logs[0], '/');
    snprintf(name, len, "ingest:%s", base ? base + 1 : a->logs[0]);
}

/* --compare: the baseline found before anything is recorded */
static int baseline_known(const ingest_args *a, const scenario *s)
{
    char name[300];
    log_run_name(a, name, sizeof name);
    return exec_baseline_known(a->db, s, name, a->baseline, a->baselines);
}

static int record_logs(store *st, const scenario *s, const ingest_args *a, const int *fds,
                       int64_t *run_id)
{
    char *buf = malloc(READ_CHUNK);
    if (!buf) {
        log_error("ingest: out of memory for a read buffer");
        return EXIT_FAIL;
    }
    recorder r;
    char name[300];
    log_run_name(a, name, sizeof name);
    if (exec_begin_run(st, s, name, a->device, 1, run_id)) { /* locked, read-only: no run */
        free(buf);
        *run_id = 0;
        return EXIT_USAGE;
    }
    if (rec_init(&r, st, *run_id, a->format, a->keys, exec_tokens_per_step(s))) {
        free(buf);
        return EXIT_FAIL;
    }
    rec_set_dtype(&r, s ? s->dtype : NULL);
    rec_extra(&r, "recorded_by", "harness ingest");
    int rc = 0, read_rc = 0;
    char why[4300] = "";
    struct sigaction old[STOP_SIGNALS];
    catch_stops(1, old);
    for (int i = 0; i < a->n_logs && !rc && !read_rc; i++) {
        int src = rec_source_add(&r, a->logs[i], a->n_logs > 1 ? i : -1);
        if (src < 0)
            rc = EXIT_FAIL;
        else if ((read_rc = feed_log(&r, src, fds[i], a->logs[i], buf)) && ingest_stop)
            snprintf(why, sizeof why, "interrupted by signal %d (%s) while reading %s",
                     (int)ingest_stop, strsignal((int)ingest_stop), a->logs[i]);
        else if (read_rc)
            snprintf(why, sizeof why, "reading %s failed", a->logs[i]);
        char key[32];
        snprintf(key, sizeof key, "log.%d", i);
        rec_extra(&r, key, a->logs[i]);
    }
    free(buf);
    rc = rec_finish(&r, !read_rc, why, stdout) || rc;
    catch_stops(0, old);
    rec_free(&r);
    return read_rc ? read_rc : rc;
}

int cmd_ingest(int argc, char **argv)
{
    ingest_args a;
    int rc = parse_ingest_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? EXIT_PASS : rc;
    order_numbered_family(&a);
    lp_reader probe;
    char err[512];
    if (lp_reader_init(&probe, a.format, a.keys, err, sizeof err))
        return cmd_usage_error("ingest", "%s", err);
    if (a.compare && (rc = baseline_args_check("ingest", a.baseline, a.baselines)))
        return rc;
    int fds[MAX_LOGS];
    for (int i = 0; i < MAX_LOGS; i++)
        fds[i] = -1;
    scenario s;
    memset(&s, 0, sizeof s);
    if ((rc = open_logs(&a, fds)) == 0 && (!a.scenario || !(rc = scenario_load(a.scenario, &s))) &&
        (!a.compare || !(rc = baseline_known(&a, a.scenario ? &s : NULL)))) {
        store *st = NULL;
        if ((rc = store_open(a.db, &st)) == 0) {
            int64_t run_id = 0;
            rc = record_logs(st, a.scenario ? &s : NULL, &a, fds, &run_id);
            if (a.compare && run_id) /* every recorded run is judged, as `harness run` does */
                rc = exec_judged_exit(rc, exec_compare(st, run_id, a.scenario, a.baseline,
                                                       a.baselines));
            store_close(st);
        }
    }
    scenario_free(&s);
    for (int i = 0; i < a.n_logs; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return rc;
}
