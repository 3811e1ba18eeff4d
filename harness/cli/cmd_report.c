/* harness/cli/cmd_report.c: `harness report [RUN...] --out DIR`: the porting table of the runs (each
 * judged against its baseline) as Markdown, HTML, CSV and JUnit XML, with gnuplot plots. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/output_target.h"
#include "util/util.h"
#include "commands.h"
#include "judge/baseline_args.h"
#include "report/report.h"

static void report_usage(void)
{
    printf("usage: harness report [RUN...] [--out DIR] [--baseline LABEL|RUN|FILE] [--force]\n"
           "                      [--golden LABEL|RUN|FILE] [--verdict KIND]\n"
           "                      [--baselines DIR] [--no-plots] [--db FILE]\n"
           "       harness report --since RUN|DATE [--out DIR] [--baseline LABEL|RUN|FILE]\n"
           "                      [--force] [--golden LABEL|RUN|FILE] [--verdict KIND]\n"
           "                      [--baselines DIR] [--db FILE]\n\n"
           "Writes the porting table of the runs (default: the newest run of every scenario on\n"
           "every device in the store, imported baselines left out: they are runs of other\n"
           "machines, and ensemble members: perturbed runs), each compared with its baseline\n"
           "as 'harness compare' does, into DIR: report.md (fit for a pull-request comment),\n"
           "report.html (self-contained, plots inlined), report.csv, junit.xml (one testcase\n"
           "per scenario and device) and plots/ (PNG and SVG, made by gnuplot): loss of run and\n"
           "baseline, |dloss| per step on a log axis with the tolerance band, throughput and\n"
           "memory bars.\n"
           "See docs/report.md.\n\n"
           "  --out DIR      where the report goes (created if missing). Default: reports/NAME\n"
           "                 in the current directory, NAME the scenario's name when every run\n"
           "                 is of one scenario, else report-YYYYMMDDTHHMMSSZ (UTC), with every\n"
           "                 byte outside [A-Za-z0-9._-] replaced by '_'\n"
           "  --baseline B   compare every run with B instead of its scenario's default label\n"
           "  --force        compare even when run and baseline ran different scenarios\n"
           "  --baselines D  look for committed baseline files in D first\n"
           "  --no-plots     skip gnuplot (the HTML then has no plots)\n"
           "  --golden G     the golden run of the error ratio (as 'harness compare --golden')\n"
           "  --verdict K    band, error_ratio or ensemble decides (as 'harness compare')\n"
           "  --since X      the transitions table instead: per scenario and device, the\n"
           "                 verdict of the newest run since X (a run id: the runs after it;\n"
           "                 a UTC date YYYY-MM-DD[THH:MM[:SSZ]]: runs started then or later)\n"
           "                 against the newest before: new failure, fixed, still failing,\n"
           "                 still passing, new, gone. Printed as Markdown; with --out also\n"
           "                 DIR/transitions.md, .html and .xml (JUnit). Exit 1 when a newest run\n"
           "                 does not pass\n"
           "  --db FILE      the store (default %s)\n\n"
           "Exit codes: 0 written and every compared run passed, 1 written and some run did not\n"
           "pass, 2 usage or input error, or the report could not be written.\n",
           DEFAULT_DB);
}

typedef struct {
    const char *out, *db, *baseline, *baselines, *golden, *verdict, *since;
    int force, no_plots;
    const char *pos[4096];
    int n_pos;
} report_args;

static int parse_report_args(int argc, char **argv, report_args *a)
{
    memset(a, 0, sizeof *a);
    a->db = DEFAULT_DB;
    const cmd_opt opts[] = {
        {"--out", &a->out, NULL},           {"--db", &a->db, NULL},
        {"--baseline", &a->baseline, NULL}, {"--baselines", &a->baselines, NULL},
        {"--force", NULL, &a->force},       {"--no-plots", NULL, &a->no_plots},
        {"--golden", &a->golden, NULL},     {"--verdict", &a->verdict, NULL},
        {"--since", &a->since, NULL},       {NULL, NULL, NULL},
    };
    int rc = cmd_parse(argc, argv, opts, a->pos, 4096, &a->n_pos);
    if (rc == 1)
        report_usage();
    if (rc)
        return rc == 1 ? -1 : rc;
    if (a->out && !a->out[0])
        return cmd_usage_error("report", "--out needs a directory, not an empty string");
    verdict_gate g;
    if (a->verdict && gate_parse(a->verdict, &g))
        return cmd_usage_error("report", "--verdict: '%s' is not band, error_ratio or ensemble",
                               a->verdict);
    if (a->golden && (cmd_nonempty("report", "--golden", a->golden) ||
                      golden_arg_check("report", NULL, a->golden)))
        return EXIT_USAGE;
    if (a->since && a->n_pos)
        return cmd_usage_error("report", "--since reports the transitions of every scenario "
                                         "and device: give no RUN");
    if (a->since && a->no_plots)
        return cmd_usage_error("report", "--no-plots: the transitions of --since have no plots");
    return 0;
}

/* ---- which runs --------------------------------------------------------------------------- */

typedef struct {
    run_row *rows;
    int n, cap;
} run_set;

static int keep_newest(const run_row *r, void *arg)
{
    run_set *s = arg;
    /* a baseline from a file, or a perturbed member of an ensemble, is never the run under test */
    if (r->imported || r->ensemble_member)
        return 0;
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->rows[i].scenario, r->scenario) == 0 &&
            strcmp(s->rows[i].device, r->device) == 0 &&
            strcmp(s->rows[i].device_name, r->device_name) == 0 &&
            s->rows[i].steps_override == r->steps_override) /* a --steps run: its own row */
            return 0;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        run_row *grown = realloc(s->rows, sizeof *grown * (size_t)s->cap);
        if (!grown)
            return EXIT_USAGE;
        s->rows = grown;
    }
    s->rows[s->n++] = *r;
    return 0;
}

static int by_scenario_device(const void *a, const void *b)
{
    const run_row *x = a, *y = b;
    int c = strcmp(x->scenario, y->scenario);
    if (!c)
        c = strcmp(x->device, y->device);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* the run ids to report: the arguments, or the newest run of each scenario on each device */
static int select_runs(store *st, const report_args *a, run_set *s)
{
    memset(s, 0, sizeof *s);
    if (a->n_pos == 0) {
        if (store_each_run(st, 0, keep_newest, s))
            return EXIT_USAGE;
        if (s->n > 1) /* qsort's base may not be NULL, and no row kept leaves it NULL */
            qsort(s->rows, (size_t)s->n, sizeof *s->rows, by_scenario_device);
    } else {
        s->rows = calloc((size_t)a->n_pos, sizeof *s->rows);
        if (!s->rows)
            return EXIT_USAGE;
        for (int i = 0; i < a->n_pos; i++, s->n++)
            if (cmd_run_id("report", "RUN", a->pos[i], &s->rows[i].id) ||
                store_get_run(st, s->rows[i].id, &s->rows[i]))
                return EXIT_USAGE;
    }
    return 0;
}

/* ---- building the rows -------------------------------------------------------------------- */

/* judges one run into row (and its plots); a run without a usable baseline still gets a row */
static int build_row(store *st, const report_args *a, int64_t id, report_row *row, plotter *p,
                     int index, baseline_cache *cache)
{
    baseline_query q = {a->baseline, NULL, a->baselines, a->force, -1, cache, a->golden,
                         a->verdict};
    judgement j;
    memset(row, 0, sizeof *row);
    int rc = judge_run(st, id, &q, &j);
    if (rc && (j.failure == JUDGE_NO_RUN || judge_failure_is_input_error(j.failure))) {
        judge_free(&j); /* the run unreadable, or a golden or verdict input asked for missing */
        return EXIT_USAGE;
    }
    if (rc) {
        j.base_id = 0;
        snprintf(row->note, sizeof row->note, "%s%s%.200s%s (see the messages of 'harness "
                 "compare %lld')", judge_failure_text(j.failure), a->baseline ? " '" : "",
                 a->baseline ? a->baseline : "", a->baseline ? "'" : "", (long long)id);
    }
    report_fill_row(row, &j);
    int ranks = 0; /* each rank's peak memory; a store that cannot say leaves it out */
    if (store_rank_peaks_text(st, id, row->rank_peaks, sizeof row->rank_peaks, &ranks))
        row->rank_peaks[0] = '\0';
    run_row rr;
    if (!row->run_at.host[0] && store_get_run(st, id, &rr) == 0) { /* judge_run stopped early */
        snprintf(row->run_at.host, sizeof row->run_at.host, "%s", rr.host);
        row->run_at.threads = rr.threads;
        row->run_at.load_avg = rr.load_avg;
        row->run_at.imported = rr.imported;
    }
    if (p)
        rc = report_plot_row(p, row, index, &j) ? EXIT_USAGE : 0;
    else
        rc = 0;
    judge_free(&j);
    return rc;
}

static int build_rows(store *st, const report_args *a, const run_set *s, report *r, plotter *p)
{
    r->rows = calloc((size_t)(s->n ? s->n : 1), sizeof *r->rows);
    if (!r->rows) {
        log_error("report: out of memory for %d rows", s->n);
        return EXIT_USAGE;
    }
    baseline_cache cache;
    memset(&cache, 0, sizeof cache);
    int rc = 0;
    for (int i = 0; i < s->n && !rc; i++, r->n++)
        rc = build_row(st, a, s->rows[i].id, &r->rows[i], p, i + 1, &cache);
    baseline_cache_free(&cache);
    return rc;
}

static const char *const REPORT_FILES[] = {"report.md", "report.csv", "junit.xml", "report.html"};
static const char *const TRANSITION_FILES[] = {"transitions.md", "transitions.html",
                                               "transitions.xml"};

static int write_files(report *r)
{
    char path[4200];
    const char *const *names = REPORT_FILES;
    int (*writers[])(const report *, const char *) = {report_markdown, report_csv, report_junit,
                                                      report_html};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/%s", r->out_dir, names[k]);
        if (writers[k](r, path))
            return EXIT_USAGE;
    }
    return 0;
}

/* ---- where it goes ------------------------------------------------------------------------ */

/* The report's names in dir are free to be written: dir, when it exists, is a folder, each
 * file name is not a folder and "plots" (when given) is not a file. Checked before anything is
 * made, so a name in the way is an input error that leaves no half-written report. 0 or 2. */
/* the store (db) must not be among the files the report writes: one of them, or inside its plots
 * folder (gnuplot's images); 0, or 2 after a message */
static int check_out_store(const char *db, const char *dir, const char *const *files, int n,
                           const char *plots)
{
    char path[4200], db_dir[4200];
    for (int k = 0; k < n; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        if (output_names_store(path, db, NULL, 0))
            return cmd_usage_error("report", "%s is the store (--db %s): the report would write "
                                             "its %s over it; name another --out", path, db,
                                   files[k]);
    }
    path_dirname(db, db_dir, sizeof db_dir);
    snprintf(path, sizeof path, "%s/%s", dir, plots ? plots : "");
    if (plots && same_file_path(path, db_dir))
        return cmd_usage_error("report", "the store (--db %s) is in %s, where the report writes "
                                         "its plots; name another --out", db, path);
    return 0;
}

static int check_out_names(const char *dir, const char *const *files, int n, const char *plots)
{
    char path[4200];
    struct stat sb;
    if (lstat(dir, &sb) == 0 && S_ISLNK(sb.st_mode) && stat(dir, &sb) != 0)
        return cmd_usage_error("report", "--out %s: a symbolic link whose target is missing",
                               dir);
    if (stat(dir, &sb) != 0)
        return 0; /* made below; a missing parent is said there */
    if (!S_ISDIR(sb.st_mode))
        return cmd_usage_error("report", "--out %s: not a folder", dir);
    for (int k = 0; k < n; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            return cmd_usage_error("report", "%s is a folder: the report cannot write its %s "
                                             "there", path, files[k]);
    }
    snprintf(path, sizeof path, "%s/%s", dir, plots ? plots : "");
    if (plots && stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return cmd_usage_error("report", "%s is not a folder: the report's plots go there", path);
    return 0;
}

static int make_dir(const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        log_error("report: cannot create %s: %s", dir, strerror(errno));
        return EXIT_USAGE;
    }
    return 0;
}

/* the default output directory: reports/SCENARIO when every run is of one scenario, else
 * reports/report-TIMESTAMP; the name sanitised to [A-Za-z0-9._-] */
static int default_out(const run_set *s, const char *created, char *out, size_t len)
{
    char stamp[32], name[256];
    int one = s->n > 0;
    for (int i = 1; i < s->n && one; i++)
        one = strcmp(s->rows[i].scenario, s->rows[0].scenario) == 0;
    if (one) {
        esc_filename(s->rows[0].scenario, name, sizeof name);
    } else {
        size_t k = 0;
        for (const char *c = created; *c && k + 1 < sizeof stamp; c++)
            if (*c != '-' && *c != ':')
                stamp[k++] = *c;
        stamp[k] = 0;
        snprintf(name, sizeof name, "report-%s", stamp);
    }
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        snprintf(name, sizeof name, "report");
    snprintf(out, len, "reports/%s", name);
    return make_dir("reports");
}

/* 1 when an earlier row of s ran the scenario (name and hash) of row i */
static int scenario_seen(const run_set *s, int i)
{
    for (int k = 0; k < i; k++)
        if (strcmp(s->rows[k].scenario, s->rows[i].scenario) == 0 &&
            strcmp(s->rows[k].scenario_hash, s->rows[i].scenario_hash) == 0)
            return 1;
    return 0;
}

/* What the deciding verdict of each scenario needs beyond its baseline (the golden named or
 * needed, an ensemble baseline), checked before the report makes anything: 0, or 2 after a
 * message. A row without a usable default baseline is no error here: it gets its row; a
 * --baseline given that is not there for a scenario (no such label or run, unfinished, another
 * scenario) is, as it is for compare. */
static int verdict_inputs_ready(store *st, const report_args *a, const run_set *s)
{
    baseline_query q = {a->baseline, NULL, a->baselines, a->force, -1, NULL, a->golden,
                        a->verdict};
    int rc = 0;
    for (int i = 0; i < s->n && !rc; i++) {
        if (scenario_seen(s, i))
            continue;
        judge_failure why;
        char *json = store_get_run_json(st, s->rows[i].id);
        if (a->baseline)
            rc = judge_baseline_known(st, &q, s->rows[i].scenario, json,
                                      s->rows[i].scenario_hash, s->rows[i].dtype);
        if (!rc)
            rc = judge_verdict_inputs_known(st, &q, s->rows[i].scenario, json,
                                            s->rows[i].scenario_hash, s->rows[i].dtype, &why);
        free(json);
    }
    return rc ? EXIT_USAGE : 0;
}

static int make_report(store *st, const report_args *a, report *r, char *out_dir, size_t len)
{
    run_set s;
    int rc = select_runs(st, a, &s);
    if (!rc)
        rc = verdict_inputs_ready(st, a, &s);
    if (!rc && !a->no_plots && !report_gnuplot_found()) {
        log_error("report: gnuplot is not installed (apt-get install gnuplot-nox), or not in "
                  "PATH; --no-plots makes the report without plots");
        rc = EXIT_USAGE;
    }
    if (!rc && a->out)
        snprintf(out_dir, len, "%s", a->out);
    else if (!rc)
        rc = default_out(&s, r->created, out_dir, len);
    if (!rc)
        rc = check_out_names(out_dir, REPORT_FILES, 4, a->no_plots ? NULL : "plots");
    if (!rc)
        rc = check_out_store(a->db, out_dir, REPORT_FILES, 4, a->no_plots ? NULL : "plots");
    if (!rc)
        rc = make_dir(out_dir);
    r->out_dir = out_dir;
    plotter *p = NULL;
    if (!rc && !a->no_plots && report_plot_begin(out_dir, &p))
        rc = EXIT_USAGE;
    if (!rc)
        rc = build_rows(st, a, &s, r, p);
    if (p && report_plot_end(p, r))
        rc = rc ? rc : EXIT_USAGE;
    free(s.rows);
    if (!rc)
        rc = write_files(r);
    return rc;
}

static void print_summary(const report *r)
{
    int pass = 0, none = 0;
    for (int i = 0; i < r->n; i++) {
        pass += row_counted_verdict(&r->rows[i]) == VERDICT_PASS;
        none += row_counted_verdict(&r->rows[i]) < 0;
    }
    printf("report: %d runs (%d pass, %d not passing, %d without baseline) -> %s/report.md, "
           "report.html, report.csv, junit.xml%s\n",
           r->n, pass, r->n - pass - none, none, term_safe(r->out_dir), r->plots ? ", plots/" : "");
}

/* --since: the transitions table to stdout, and into DIR when --out is given */
static int report_since(store *st, const report_args *a)
{
    baseline_query q = {a->baseline, NULL, a->baselines, a->force, -1, NULL, a->golden,
                        a->verdict};
    transitions t;
    if (a->out && (check_out_names(a->out, TRANSITION_FILES, 3, NULL) ||
                   check_out_store(a->db, a->out, TRANSITION_FILES, 3, NULL)))
        return EXIT_USAGE;
    int rc = transitions_build(st, a->since, &q, &t);
    if (!rc) {
        transitions_markdown(stdout, &t);
        if (a->out && !(rc = make_dir(a->out)) && !(rc = transitions_write(&t, a->out)))
            printf("\ntransitions -> %s/transitions.md, transitions.html, transitions.xml\n",
                   term_safe(a->out));
    }
    if (!rc)
        rc = transitions_failing(&t) ? EXIT_FAIL : 0;
    transitions_free(&t);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    report_args a;
    int rc = parse_report_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? EXIT_PASS : rc;
    if ((rc = baseline_args_check("report", a.baseline, a.baselines)) != 0)
        return rc;
    struct stat sb;
    store *st = NULL;
    if (stat(a.db, &sb) != 0) {
        log_error("no database at %s (see --db)", a.db);
        return EXIT_USAGE;
    }
    if ((rc = store_open_existing(a.db, &st)) != 0)
        return rc;
    if (golden_arg_check("report", st, a.golden)) {
        store_close(st);
        return EXIT_USAGE;
    }
    if (a.since) {
        rc = report_since(st, &a);
        store_close(st);
        return rc;
    }
    report r;
    memset(&r, 0, sizeof r);
    iso_time_now(r.created, sizeof r.created);
    char out_dir[4096];
    rc = make_report(st, &a, &r, out_dir, sizeof out_dir);
    store_close(st);
    if (!rc) {
        print_summary(&r);
        rc = verdict_exit_code(report_worst(&r));
    }
    free(r.rows);
    return rc;
}
