/* harness/cli/cmd_list.c: the read-only commands: `harness runs` (the runs in the store), `harness
 * show RUN` (one run and its steps) and `harness devices` (the devices of this build). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/util.h"
#include "commands.h"
#include "blas_core.h"
#include "device.h"
#include "show_routing.h"
#include "store/store.h"

/* ---- output helpers ------------------------------------------------------------------------- */

/* columns a string takes on a terminal: one per UTF-8 character */
static int disp_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

/* copies s into out[n] with control bytes escaped (\e, \xNN: escape.h's esc_term_buf);
 * names come from the store and must not drive the terminal */
static void clean(char *out, size_t n, const char *s)
{
    esc_term_buf(out, n, s);
}

static void fmt_num(char *out, size_t n, const char *fmt, double v)
{
    if (isnan(v))
        snprintf(out, n, "nan");
    else if (isinf(v))
        snprintf(out, n, v > 0 ? "inf" : "-inf");
    else
        snprintf(out, n, fmt, v);
}

/* a JSON string; bytes that are not valid UTF-8 become '?' rather than failing */
static json_t *jstr(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    j = json_string(copy);
    free(copy);
    return j;
}

static json_t *jstr_or_null(const char *s)
{
    return s && *s ? jstr(s) : json_null();
}

/* JSON has no NaN or infinity: those become the strings "nan", "inf", "-inf" (the store's rule) */
static json_t *jreal(double v)
{
    if (isfinite(v))
        return json_real(v);
    return json_string(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

/* prints and frees a JSON value; 0, or 2 when it could not be built or written */
static int print_json(json_t *root)
{
    char *s = root ? json_dumps_short(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    if (!s) {
        log_error("building the JSON output failed (out of memory?)");
        return EXIT_USAGE;
    }
    puts(s);
    free(s);
    return 0;
}

/* the exit code once output is done: writing stdout may have failed (disk full, closed pipe) */
static int finish_output(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        log_error("writing the output to stdout failed");
        return EXIT_USAGE;
    }
    return rc;
}

static int open_db(const char *db, store **st)
{
    return store_open_readonly(db, st) ? EXIT_USAGE : 0;
}

/* ---- harness runs --------------------------------------------------------------------------- */

static const char RUNS_USAGE[] =
    "usage: harness runs [--db FILE] [--limit N] [--json]\n"
    "\n"
    "Lists the runs in the store, newest first: by id descending, which is the order they were\n"
    "recorded or imported (not their start time). Columns: id, scenario, device, dtype, status,\n"
    "steps recorded, last loss, start time (UTC), CPU threads, and KIND: 'run' for a run of\n"
    "this harness, 'imported' for a baseline imported from a file (a run of another machine,\n"
    "never taken as 'the newest run' by report). A run whose process was killed stays\n"
    "'running'. The table follows one line saying the order.\n"
    "\n"
    "options:\n"
    "  --db FILE   the store to read (default " DEFAULT_DB "); it must exist\n"
    "  --limit N   show the N newest runs only (0, the default, shows all; at most\n"
    "              2147483647)\n"
    "  --json      print a JSON array of run objects instead of a table, in the same order\n"
    "              (a NaN or infinite loss is the string \"nan\", \"inf\" or \"-inf\"; threads\n"
    "              and load_avg are null when not recorded; imported is true or false)\n"
    "  -h, --help  print this help and exit\n"
    "\n"
    "Exit codes: 0 listed, 2 usage error or unreadable store.\n";

typedef struct {
    run_row *rows;
    int n, cap;
} run_list;

static int collect_run(const run_row *r, void *arg)
{
    run_list *l = arg;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        run_row *grown = realloc(l->rows, (size_t)cap * sizeof *grown);
        if (!grown) {
            log_error("runs: out of memory listing runs");
            return EXIT_USAGE;
        }
        l->rows = grown;
        l->cap = cap;
    }
    l->rows[l->n++] = *r;
    return 0;
}

enum { RUN_COLS = 10, CELL = 300 };
static const char *const RUN_HEAD[RUN_COLS] = {"ID",    "SCENARIO",  "DEVICE",  "DTYPE",
                                                "STATUS", "STEPS",    "LAST LOSS", "STARTED",
                                                "THREADS", "KIND"};
static const int RUN_RIGHT[RUN_COLS] = {1, 0, 0, 0, 0, 1, 1, 0, 1, 0}; /* right-aligned numbers */

static void run_cells(const run_row *r, char cell[RUN_COLS][CELL])
{
    snprintf(cell[0], CELL, "%lld", (long long)r->id);
    clean(cell[1], CELL, r->scenario);
    clean(cell[2], CELL, r->device);
    clean(cell[3], CELL, r->dtype);
    clean(cell[4], CELL, r->status);
    snprintf(cell[5], CELL, "%d", r->n_steps);
    if (r->n_steps)
        if (r->last_loss_recorded) /* never recorded: "-", as show prints it; nan is a NaN */
            fmt_num(cell[6], CELL, "%.6f", r->last_loss);
        else
            snprintf(cell[6], CELL, "-");
    else
        snprintf(cell[6], CELL, "-");
    clean(cell[7], CELL, r->started_at);
    if (r->threads > 0)
        snprintf(cell[8], CELL, "%d", r->threads);
    else
        snprintf(cell[8], CELL, "-");
    snprintf(cell[9], CELL, "%s", r->imported ? "imported" : "run");
}

static void print_row(char cell[RUN_COLS][CELL], const int *width)
{
    for (int c = 0; c < RUN_COLS; c++) {
        int pad = width[c] - disp_width(cell[c]);
        if (RUN_RIGHT[c])
            printf("%*s%s", pad, "", cell[c]);
        else
            printf("%s%*s", cell[c], c + 1 < RUN_COLS ? pad : 0, "");
        fputs(c + 1 < RUN_COLS ? "  " : "\n", stdout);
    }
}

/* limited: --limit N cut the list (the store may hold more) */
static void print_runs_table(const run_list *l, const char *db, int limited)
{
    static char cell[RUN_COLS][CELL];
    char name[1024];
    clean(name, sizeof name, db);
    if (limited)
        printf("the newest %d run%s in %s (--limit; the store may hold more), by id: the order "
               "recorded or imported\n", l->n, l->n == 1 ? "" : "s", name);
    else
        printf("%d runs in %s, newest first (by id: the order recorded or imported)\n", l->n,
               name);
    int width[RUN_COLS];
    for (int c = 0; c < RUN_COLS; c++) {
        snprintf(cell[c], CELL, "%s", RUN_HEAD[c]);
        width[c] = disp_width(RUN_HEAD[c]);
    }
    for (int i = 0; i < l->n; i++) {
        run_cells(&l->rows[i], cell);
        for (int c = 0; c < RUN_COLS; c++)
            if (disp_width(cell[c]) > width[c])
                width[c] = disp_width(cell[c]);
    }
    for (int c = 0; c < RUN_COLS; c++)
        snprintf(cell[c], CELL, "%s", RUN_HEAD[c]);
    print_row(cell, width);
    for (int i = 0; i < l->n; i++) {
        run_cells(&l->rows[i], cell);
        print_row(cell, width);
    }
}

static json_t *run_json(const run_row *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = json_object_set_new(o, "id", json_integer(r->id));
    bad |= json_object_set_new(o, "scenario", jstr(r->scenario));
    bad |= json_object_set_new(o, "scenario_hash", jstr_or_null(r->scenario_hash));
    bad |= json_object_set_new(o, "device", jstr(r->device));
    bad |= json_object_set_new(o, "device_name", jstr_or_null(r->device_name));
    bad |= json_object_set_new(o, "dtype", jstr_or_null(r->dtype));
    bad |= json_object_set_new(o, "world_size", json_integer(r->world_size));
    bad |= json_object_set_new(o, "host", jstr_or_null(r->host));
    bad |= json_object_set_new(o, "git_commit", jstr_or_null(r->git_commit));
    bad |= json_object_set_new(o, "harness_version", jstr_or_null(r->harness_version));
    bad |= json_object_set_new(o, "started_at", jstr_or_null(r->started_at));
    bad |= json_object_set_new(o, "finished_at", jstr_or_null(r->finished_at));
    bad |= json_object_set_new(o, "status", jstr(r->status));
    bad |= json_object_set_new(o, "error", jstr_or_null(r->error));
    bad |= json_object_set_new(o, "mem_total_bytes", json_integer(r->mem_total_bytes));
    bad |= json_object_set_new(o, "threads", r->threads > 0 ? json_integer(r->threads)
                                                            : json_null());
    bad |= json_object_set_new(o, "load_avg", isfinite(r->load_avg) ? json_real(r->load_avg)
                                                                   : json_null());
    bad |= json_object_set_new(o, "imported", json_boolean(r->imported));
    bad |= json_object_set_new(o, "n_steps", json_integer(r->n_steps));
    bad |= json_object_set_new(o, "last_loss",
                               r->last_loss_recorded ? jreal(r->last_loss) : json_null());
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int print_runs_json(const run_list *l)
{
    json_t *a = json_array();
    for (int i = 0; a && i < l->n; i++) {
        if (json_array_append_new(a, run_json(&l->rows[i]))) {
            json_decref(a);
            a = NULL;
        }
    }
    return print_json(a);
}

int cmd_runs(int argc, char **argv)
{
    const char *db = DEFAULT_DB, *limit_s = NULL, *pos[1];
    int json = 0, n_pos;
    const cmd_opt opts[] = {{"--db", &db, NULL}, {"--limit", &limit_s, NULL},
                             {"--json", NULL, &json}, {NULL, NULL, NULL}};
    int rc = cmd_parse(argc, argv, opts, pos, 0, &n_pos);
    if (rc == 1) {
        fputs(RUNS_USAGE, stdout);
        return finish_output(EXIT_PASS);
    }
    if (rc)
        return rc;
    long limit = 0;
    if (limit_s && (parse_long(limit_s, &limit) || limit < 0 || limit > INT_MAX))
        return cmd_usage_error(argv[0], "--limit '%s' is not a count (a whole number from 0 "
                               "to %d)", limit_s, INT_MAX);
    store *st;
    if (open_db(db, &st))
        return EXIT_USAGE;
    run_list list = {0};
    rc = store_each_run(st, (int)limit, collect_run, &list) ? EXIT_USAGE : 0;
    store_close(st);
    if (!rc && json)
        rc = print_runs_json(&list);
    else if (!rc)
        print_runs_table(&list, db, limit > 0 && list.n == limit);
    free(list.rows);
    return finish_output(rc);
}

/* ---- harness show --------------------------------------------------------------------------- */

static const char SHOW_USAGE[] =
    "usage: harness show RUN [--db FILE] [--json]\n"
    "\n"
    "Prints one run: its scenario, device, versions, host, CPU threads and load average when it\n"
    "started, kind (a run of this harness, or a baseline imported from a file), status and\n"
    "times, then one line per step:\n"
    "step, loss (9 significant digits), grad norm, learning rate, step time, throughput and\n"
    "peak device memory. RUN is a run id as 'harness runs' lists it.\n"
    "A sparse-MoE run adds its routing: per step the tokens each expert received, summed\n"
    "over the MoE layers, and the worst layer's max/mean load; then the last step's counts\n"
    "per layer and expert.\n"
    "\n"
    "options:\n"
    "  --db FILE   the store to read (default " DEFAULT_DB "); it must exist\n"
    "  --json      print a JSON object (the run's fields, \"scenario_json\", \"moe\" and a\n"
    "              \"steps\" array, each step of a MoE run with \"expert_tokens\": [layer]\n"
    "              [expert] counts) instead of text; NaN and infinities are \"nan\", \"inf\",\n"
    "              \"-inf\"\n"
    "  -h, --help  print this help and exit\n"
    "\n"
    "Exit codes: 0 shown, 2 usage error, no such run or unreadable store.\n";

static void show_field(const char *key, const char *value)
{
    char buf[1024];
    clean(buf, sizeof buf, value && *value ? value : "-");
    printf("%-16s %s\n", key, buf);
}

static void show_meta(const run_row *r, const run_device *d)
{
    char buf[64];
    printf("run %lld\n", (long long)r->id);
    show_field("scenario", r->scenario);
    show_field("scenario hash", r->scenario_hash);
    show_field("device", r->device);
    show_field("device name", r->device_name);
    show_field("vendor", d->vendor);
    show_field("driver", d->driver_version);
    show_field("runtime", d->runtime_version);
    show_field("dtype", r->dtype);
    snprintf(buf, sizeof buf, "%d", r->world_size);
    show_field("world size", buf);
    snprintf(buf, sizeof buf, "%.2f GiB", r->mem_total_bytes / 1073741824.0);
    show_field("memory total", r->mem_total_bytes > 0 ? buf : "");
    show_field("host", r->host);
    snprintf(buf, sizeof buf, "%d", r->threads);
    show_field("threads", r->threads > 0 ? buf : "");
    snprintf(buf, sizeof buf, "%.2f", r->load_avg);
    show_field("load average", isfinite(r->load_avg) ? buf : "");
    show_field("kind", r->imported ? "imported (a baseline from a file, not a run of this "
                                     "machine)" : "run");
    show_field("git commit", r->git_commit);
    show_field("harness", r->harness_version);
    show_field("started", r->started_at);
    show_field("finished", r->finished_at);
    show_field("status", r->status);
    if (r->error[0])
        show_field("error", r->error);
    snprintf(buf, sizeof buf, "%d", r->n_steps);
    show_field("steps", buf);
}

/* 1 when some step of the run was loss-scaled (an fp16 run): show adds its two columns */
static int any_loss_scale(const step_record *s, int n)
{
    for (int i = 0; i < n; i++)
        if (s[i].loss_scale > 0)
            return 1;
    return 0;
}

static void show_steps(const step_record *s, int n)
{
    int scaled = any_loss_scale(s, n);
    printf("\n%6s %16s %12s %12s %10s %12s %10s %7s", "step", "loss", "grad_norm", "lr",
           "step_ms", "tokens/s", "peak_MiB", "threads");
    printf(scaled ? " %11s %7s\n" : "\n", "loss_scale", "skipped");
    for (int i = 0; i < n; i++) {
        char loss[32], gn[32], lr[32], ms[32], tps[32], peak[32];
        unsigned none = s[i].unrecorded; /* never recorded: '-', a recorded NaN stays nan */
        fmt_num(loss, sizeof loss, "%.9g", s[i].loss);
        fmt_num(gn, sizeof gn, "%.6g", s[i].grad_norm);
        fmt_num(lr, sizeof lr, "%.6g", s[i].lr);
        fmt_num(ms, sizeof ms, "%.3f", s[i].step_ms);
        fmt_num(tps, sizeof tps, "%.1f", s[i].tokens_per_s);
        const unsigned bits[] = {STEP_NO_LOSS, STEP_NO_GRAD_NORM, STEP_NO_LR, STEP_NO_STEP_MS,
                                 STEP_NO_TOKENS_PER_S};
        char *cells[] = {loss, gn, lr, ms, tps};
        for (int k = 0; k < 5; k++)
            if (none & bits[k])
                snprintf(cells[k], 32, "-");
        fmt_num(peak, sizeof peak, "%.1f", s[i].mem_peak_bytes / 1048576.0);
        char th[16] = "-";
        if (s[i].threads > 0)
            snprintf(th, sizeof th, "%d", s[i].threads);
        printf("%6d %16s %12s %12s %10s %12s %10s %7s", s[i].step, loss, gn, lr, ms, tps, peak,
               th);
        if (scaled && s[i].loss_scale > 0)
            printf(" %11.6g %7s", s[i].loss_scale, s[i].skipped ? "yes" : "no");
        else if (scaled) /* a step without a loss scale (NULL) */
            printf(" %11s %7s", "-", s[i].skipped ? "yes" : "no");
        putchar('\n');
    }
}

/* a step's real: null when it was never recorded (STEP_NO_*), else as jreal */
static json_t *jfield(const step_record *s, double v, unsigned bit)
{
    return s->unrecorded & bit ? json_null() : jreal(v);
}

static json_t *step_json(const step_record *s)
{
    int scaled = s->loss_scale > 0; /* fp16 loss scaling: null for other runs */
    return json_pack("{s:i, s:o, s:o, s:o, s:I, s:o, s:o, s:I, s:I, s:I, s:o, s:o, s:o}", "step",
                     s->step, "loss", jfield(s, s->loss, STEP_NO_LOSS), "grad_norm",
                     jfield(s, s->grad_norm, STEP_NO_GRAD_NORM), "lr", jfield(s, s->lr, STEP_NO_LR),
                     "tokens", (json_int_t)s->tokens, "step_ms",
                     jfield(s, s->step_ms, STEP_NO_STEP_MS), "tokens_per_s",
                     jfield(s, s->tokens_per_s, STEP_NO_TOKENS_PER_S), "mem_peak_bytes",
                     (json_int_t)s->mem_peak_bytes, "mem_used_bytes",
                     (json_int_t)s->mem_used_bytes, "mem_total_bytes",
                     (json_int_t)s->mem_total_bytes, "threads",
                     s->threads > 0 ? json_integer(s->threads) : json_null(), "loss_scale",
                     scaled ? jreal(s->loss_scale) : json_null(), "skipped",
                     scaled ? json_boolean(s->skipped) : json_null());
}

/* the scenario JSON as an object when it parses, else as the stored string */
static json_t *scenario_json(const char *text)
{
    if (!text)
        return json_null();
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    return j ? j : jstr(text);
}

/* step_json with the step's "expert_tokens" ([layer][expert]) when it has counts */
static json_t *routed_step_json(const step_record *s, const routing_table *rt)
{
    json_t *o = step_json(s);
    int i = routing_find_step(rt, s->step);
    if (o && i >= 0 && json_object_set_new(o, "expert_tokens", show_routing_step_json(rt, i))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* "moe": {"layers", "experts"} of the counts, null for a run without */
static json_t *moe_json(const routing_table *rt)
{
    if (rt->n == 0)
        return json_null();
    return json_pack("{s:i, s:i}", "layers", rt->layers, "experts", rt->experts);
}

static json_t *show_json(const run_row *r, const run_device *d, const char *scn,
                         const step_record *s, int n, const routing_table *rt)
{
    json_t *o = run_json(r), *steps = json_array();
    if (!o || !steps)
        goto fail;
    int bad = json_object_set_new(o, "vendor", jstr_or_null(d->vendor));
    bad |= json_object_set_new(o, "driver_version", jstr_or_null(d->driver_version));
    bad |= json_object_set_new(o, "runtime_version", jstr_or_null(d->runtime_version));
    bad |= json_object_set_new(o, "scenario_json", scenario_json(scn));
    bad |= json_object_set_new(o, "moe", moe_json(rt));
    for (int i = 0; i < n && !bad; i++)
        bad |= json_array_append_new(steps, routed_step_json(&s[i], rt));
    if (bad)
        goto fail;
    if (json_object_set_new(o, "steps", steps)) {
        json_decref(o);
        return NULL;
    }
    return o;
fail:
    json_decref(o);
    json_decref(steps);
    return NULL;
}

/* reads run id from st and prints it; 0 or 2 */
static int show_run(store *st, int64_t id, int json)
{
    run_row r;
    run_device d;
    step_record *steps = NULL;
    int n = 0;
    routing_table rt;
    if (store_get_run(st, id, &r) || store_get_run_device(st, id, &d) ||
        store_get_steps(st, id, &steps, &n))
        return EXIT_USAGE;
    char ranks_text[1024];
    int ranks = 0;
    if (store_rank_peaks_text(st, id, ranks_text, sizeof ranks_text, &ranks)) {
        free(steps);
        return EXIT_USAGE;
    }
    if (store_get_routing(st, id, &rt)) {
        free(steps);
        return EXIT_USAGE;
    }
    int rc = 0;
    if (json) {
        char *scn = store_get_run_json(st, id);
        json_t *o = show_json(&r, &d, scn, steps, n, &rt);
        if (o && ranks) /* a data-parallel run: each rank's peak memory (rank_steps) */
            json_object_set_new(o, "rank_peak_memory", jstr(ranks_text));
        rc = print_json(o);
        free(scn);
    } else {
        show_meta(&r, &d);
        if (ranks)
            show_field("peak memory", ranks_text);
        show_steps(steps, n);
        show_routing_text(stdout, &rt);
    }
    free(steps);
    routing_table_free(&rt);
    return rc;
}

int cmd_show(int argc, char **argv)
{
    const char *db = DEFAULT_DB, *pos[1];
    int json = 0, n_pos;
    const cmd_opt opts[] = {{"--db", &db, NULL}, {"--json", NULL, &json}, {NULL, NULL, NULL}};
    int rc = cmd_parse(argc, argv, opts, pos, 1, &n_pos);
    if (rc == 1) {
        fputs(SHOW_USAGE, stdout);
        return finish_output(EXIT_PASS);
    }
    if (rc)
        return rc;
    if (n_pos != 1)
        return cmd_usage_error(argv[0], "missing RUN, the id of the run to show");
    long id;
    if (parse_long(pos[0], &id) || id <= 0)
        return cmd_usage_error(argv[0], "RUN '%s' is not a run id (a whole number > 0)", pos[0]);
    store *st;
    if (open_db(db, &st))
        return EXIT_USAGE;
    rc = show_run(st, id, json);
    store_close(st);
    return finish_output(rc);
}

/* ---- harness devices ------------------------------------------------------------------------ */

static const char DEVICES_USAGE[] =
    "usage: harness devices [--json]\n"
    "\n"
    "Lists every device of every backend compiled into this harness: the spec to give\n"
    "'harness run --device', the device's name, vendor, element type and memory (GiB).\n"
    "\n"
    "options:\n"
    "  --json      print a JSON array of device objects instead of a table\n"
    "  -h, --help  print this help and exit\n"
    "\n"
    "Exit codes: 0 listed, 2 usage error.\n";

enum { MAX_DEVICES = 256 };

static void print_devices_table(const device_info *d, int n)
{
    int ws = 4, wn = 4, wv = 6;
    for (int i = 0; i < n; i++) {
        ws = disp_width(d[i].spec) > ws ? disp_width(d[i].spec) : ws;
        wn = disp_width(d[i].name) > wn ? disp_width(d[i].name) : wn;
        wv = disp_width(d[i].vendor) > wv ? disp_width(d[i].vendor) : wv;
    }
    printf("%-*s  %-*s  %-*s  %-5s  %10s\n", ws, "SPEC", wn, "NAME", wv, "VENDOR", "DTYPE",
           "MEMORY_GiB");
    for (int i = 0; i < n; i++) {
        char spec[64], name[DEVICE_STR], vendor[DEVICE_STR], mem[32];
        clean(spec, sizeof spec, d[i].spec);
        clean(name, sizeof name, d[i].name);
        clean(vendor, sizeof vendor, d[i].vendor);
        if (d[i].mem_total)
            snprintf(mem, sizeof mem, "%.1f", d[i].mem_total / 1073741824.0);
        else
            snprintf(mem, sizeof mem, "-");
        printf("%s%*s  %s%*s  %s%*s  %-5s  %10s\n", spec, ws - disp_width(spec), "", name,
               wn - disp_width(name), "", vendor, wv - disp_width(vendor), "", d[i].dtype, mem);
    }
    printf("\nbackends in this build:");
    for (const char *const *b = device_backends(); *b; b++)
        printf(" %s", *b);
    printf("\n");
    char notes[2048];
    if (device_notes(notes, sizeof notes))
        printf("%s", notes);
    printf("cpu: OpenBLAS kernels %s", blas_core_name());
    if (blas_core_fixed_from())
        printf(" (OpenBLAS chose its generic %s kernels for this CPU; the harness set "
               "OPENBLAS_CORETYPE=%s)", blas_core_fixed_from(), blas_core_name());
    printf("\n");
}

static int print_devices_json(const device_info *d, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++) {
        json_t *o = json_pack("{s:o, s:o, s:o, s:o, s:I, s:f}", "spec", jstr(d[i].spec), "name",
                              jstr(d[i].name), "vendor", jstr(d[i].vendor), "dtype",
                              jstr(d[i].dtype), "mem_total_bytes", (json_int_t)d[i].mem_total,
                              "mem_total_gib", d[i].mem_total / 1073741824.0);
        if (json_array_append_new(a, o)) {
            json_decref(a);
            a = NULL;
        }
    }
    return print_json(a);
}

int cmd_devices(int argc, char **argv)
{
    const char *pos[1];
    int json = 0, n_pos;
    const cmd_opt opts[] = {{"--json", NULL, &json}, {NULL, NULL, NULL}};
    int rc = cmd_parse(argc, argv, opts, pos, 0, &n_pos);
    if (rc == 1) {
        fputs(DEVICES_USAGE, stdout);
        return finish_output(EXIT_PASS);
    }
    if (rc)
        return rc;
    device_info *infos = calloc(MAX_DEVICES, sizeof *infos);
    if (!infos) {
        log_error("devices: out of memory");
        return EXIT_USAGE;
    }
    int n = device_list(infos, MAX_DEVICES);
    char notes[2048];
    if (json && device_notes(notes, sizeof notes)) /* stdout stays one JSON array */
        fprintf(stderr, "%s", notes);
    if (json)
        rc = print_devices_json(infos, n);
    else
        print_devices_table(infos, n);
    free(infos);
    return finish_output(rc);
}
