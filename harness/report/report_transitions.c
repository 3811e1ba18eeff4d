/* harness/report/report_transitions.c: `harness report --since RUN|DATE`: per scenario and device,
 * the verdict of the newest run since then against the newest before (new failure, fixed, ...). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "util/util.h"

/* ---- the point in time -------------------------------------------------------------------- */

/* the two digits at s as a number */
/* YYYY-MM-DD, YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SSZ (prefixes of the store's started_at),
 * every field in its range; seconds without the Z are refused, as the help names no such form */
static int is_date(const char *s)
{
    static const char pattern[] = "dddd-dd-ddTdd:dd:ddZ";
    size_t n = strlen(s);
    if (n != 10 && n != 16 && n != 20)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (pattern[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pattern[i])
            return 0;
    return iso_fields_in_range(s, n);
}

static int parse_since(store *st, const char *spec, transitions *t)
{
    snprintf(t->since, sizeof t->since, "%.60s", spec);
    if (spec[0] && strspn(spec, "0123456789") == strlen(spec) && strlen(spec) < 19) {
        run_row r;
        t->since_run = strtoll(spec, NULL, 10);
        snprintf(t->since, sizeof t->since, "run %lld", (long long)t->since_run);
        return store_get_run(st, t->since_run, &r) ? EXIT_USAGE : 0;
    }
    if (is_date(spec))
        return 0;
    char with_z[32]; /* seconds without the Z: say what was meant */
    int no_z = strlen(spec) == 19 && snprintf(with_z, sizeof with_z, "%sZ", spec) == 20 &&
               is_date(with_z);
    log_error("report: --since: '%s' is neither a run id nor a UTC date (YYYY-MM-DD, "
              "YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SSZ)%s", term_safe(spec),
              no_z ? "; a time with seconds ends in Z (UTC)" : "");
    return EXIT_USAGE;
}

/* 1 when run r was recorded after run `since_run`, or started at or after the date */
static int is_after(const transitions *t, const run_row *r)
{
    if (t->since_run)
        return r->id > t->since_run;
    return strcmp(r->started_at, t->since) >= 0; /* ISO 8601 UTC: text order is time order */
}

/* ---- the runs of each scenario and device ------------------------------------------------- */

/* the row's scenario: its name, and "(--steps N)" for a run --steps made another scenario of */
static void row_scenario(const run_row *r, char *out, size_t n)
{
    if (r->steps_override)
        snprintf(out, n, "%.200s (--steps %d)", r->scenario, r->steps_override);
    else
        snprintf(out, n, "%s", r->scenario);
}

static transition_row *find_or_add(transitions *t, const run_row *r)
{
    char scenario[256];
    row_scenario(r, scenario, sizeof scenario);
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].scenario, scenario) == 0 &&
            strcmp(t->rows[i].device, r->device) == 0 &&
            strcmp(t->rows[i].device_name, r->device_name) == 0) /* as the report's rows */
            return &t->rows[i];
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        transition_row *grown = realloc(t->rows, sizeof *grown * (size_t)cap);
        if (!grown)
            return NULL;
        t->rows = grown;
        t->cap = cap;
    }
    transition_row *w = &t->rows[t->n++];
    memset(w, 0, sizeof *w);
    snprintf(w->scenario, sizeof w->scenario, "%s", scenario);
    snprintf(w->device, sizeof w->device, "%s", r->device);
    snprintf(w->device_name, sizeof w->device_name, "%s", r->device_name);
    return w;
}

/* store_each_run walks newest first: the first run seen on each side of the point is kept */
static int take_run(const run_row *r, void *arg)
{
    transitions *t = arg;
    /* a baseline from a file, or a perturbed member of an ensemble, is never a run under test */
    if (r->imported || r->ensemble_member)
        return 0;
    transition_row *w = find_or_add(t, r);
    if (!w) {
        log_error("report: out of memory listing the runs");
        return EXIT_USAGE;
    }
    int64_t *slot = is_after(t, r) ? &w->new_id : &w->prev_id;
    if (!*slot)
        *slot = r->id;
    return 0;
}

static int by_key(const void *a, const void *b)
{
    const transition_row *x = a, *y = b;
    int c = strcmp(x->scenario, y->scenario);
    c = c ? c : strcmp(x->device, y->device);
    return c ? c : strcmp(x->device_name, y->device_name);
}

/* each row's device cell: the spec, with the device name where one scenario ran the spec on
 * several devices (an A100 and an H100 as "cuda": two rows, told apart) */
static void name_devices(transitions *t)
{
    for (int i = 0; i < t->n; i++) {
        transition_row *w = &t->rows[i];
        int several = 0;
        for (int k = 0; k < t->n && !several; k++)
            several = k != i && strcmp(t->rows[k].scenario, w->scenario) == 0 &&
                      strcmp(t->rows[k].device, w->device) == 0;
        if (several)
            snprintf(w->shown_device, sizeof w->shown_device, "%s (%s)", w->device,
                     w->device_name);
        else
            snprintf(w->shown_device, sizeof w->shown_device, "%s", w->device);
    }
}

/* ---- verdicts ----------------------------------------------------------------------------- */

/* the verdict of a run without a usable baseline: a run that did not finish ok fails by
 * itself as in the report (diverged; failed, stopped or running: incomplete), one that did is
 * "none" (not judged) */
static const char *unjudged_verdict(const char *status)
{
    if (strcmp(status, "ok") == 0)
        return "none";
    return strcmp(status, "diverged") == 0 ? "diverged" : "incomplete";
}

/* the stored verdict of a comparison with a baseline, else one judged now (not stored); with
 * --baseline, --golden or --verdict always one judged now with them; without a usable baseline,
 * unjudged_verdict. 0, or 2 after a message: a golden, a verdict input or the --baseline that
 * was asked for is not there (as compare says it) */
static int run_verdict(store *st, int64_t id, const baseline_query *q, char out[16])
{
    /* a --baseline, --golden or --verdict given: judged now against them, their inputs checked
     * (a stored verdict was taken, and a golden that is not there went unsaid) */
    int named = q->spec && q->spec[0];
    int asked = named || (q->golden && q->golden[0]) || (q->verdict && q->verdict[0]);
    int rc = asked ? 1 : store_last_baseline_verdict(st, id, out);
    if (rc != 1)
        return rc;
    judgement j;
    int failed = judge_run(st, id, q, &j) != 0;
    int input_error = failed && (j.failure == JUDGE_NO_RUN ||
                                 judge_failure_is_input_error(j.failure) ||
                                 (named && j.failure == JUDGE_NO_BASELINE));
    if (!failed)
        snprintf(out, 16, "%s", verdict_name(j.res.v));
    else if (!input_error)
        snprintf(out, 16, "%s", unjudged_verdict(j.run.status));
    judge_free(&j);
    return input_error ? EXIT_USAGE : 0;
}

/* the change of a row, from the newest run's verdict first: a newest run that cannot be judged
 * is "not judged" whether or not a run came before it, and one that does not pass is failing
 * whether or not the run before it could be judged */
static const char *change_of(const transition_row *w)
{
    if (!w->new_id)
        return "gone";
    if (strcmp(w->new_verdict, "none") == 0)
        return "not judged";
    if (!w->prev_id)
        return "new";
    int is = strcmp(w->new_verdict, "pass") == 0;
    if (strcmp(w->prev_verdict, "none") == 0)
        return is ? "passing, not judged before" : "failing, not judged before";
    int was = strcmp(w->prev_verdict, "pass") == 0;
    return was ? (is ? "still passing" : "new failure") : (is ? "fixed" : "still failing");
}

int transitions_build(store *st, const char *since, const baseline_query *q, transitions *t)
{
    memset(t, 0, sizeof *t);
    iso_time_now(t->created, sizeof t->created);
    int rc = parse_since(st, since, t);
    if (!rc)
        rc = store_each_run(st, 0, take_run, t) ? EXIT_USAGE : 0;
    if (!rc && t->n > 1)
        qsort(t->rows, (size_t)t->n, sizeof *t->rows, by_key);
    if (!rc)
        name_devices(t);
    for (int i = 0; i < t->n && !rc; i++) {
        transition_row *w = &t->rows[i];
        snprintf(w->prev_verdict, sizeof w->prev_verdict, "-");
        snprintf(w->new_verdict, sizeof w->new_verdict, "-");
        if (w->prev_id)
            rc = run_verdict(st, w->prev_id, q, w->prev_verdict);
        if (!rc && w->new_id)
            rc = run_verdict(st, w->new_id, q, w->new_verdict);
        w->change = change_of(w);
    }
    return rc ? EXIT_USAGE : 0;
}

void transitions_free(transitions *t)
{
    free(t->rows);
    memset(t, 0, sizeof *t);
}

static int row_failing(const transition_row *w);

int transitions_failing(const transitions *t)
{
    for (int i = 0; i < t->n; i++)
        if (row_failing(&t->rows[i]))
            return 1;
    return 0;
}

/* ---- writers ------------------------------------------------------------------------------ */

static void run_cell(char *out, size_t len, int64_t id, const char *verdict)
{
    if (id)
        snprintf(out, len, "%s (run %lld)", verdict, (long long)id);
    else
        snprintf(out, len, "-");
}

void transitions_markdown(FILE *f, const transitions *t)
{
    fprintf(f, "## Transitions since %s\n\n", t->since);
    fprintf(f, "Per scenario and device: the newest run since %s against the newest run before "
               "(made %s; docs/report.md).\n\n", t->since, t->created);
    fputs("| scenario | device | before | since | change |\n|---|---|---|---|---|\n", f);
    for (int i = 0; i < t->n; i++) {
        const transition_row *w = &t->rows[i];
        char before[64], after[64];
        run_cell(before, sizeof before, w->prev_id, w->prev_verdict);
        run_cell(after, sizeof after, w->new_id, w->new_verdict);
        fputs("| ", f);
        esc_markdown(f, w->scenario);
        fputs(" | ", f);
        esc_markdown(f, w->shown_device);
        fprintf(f, " | %s | %s | **%s** |\n", before, after, w->change);
    }
    if (!t->n)
        fputs("| (no runs) | | | | |\n", f);
}

static void html_cell(FILE *f, const char *text)
{
    fputs("<td>", f);
    esc_html(f, text);
    fputs("</td>", f);
}

static void transitions_html_body(FILE *f, const transitions *t)
{
    fputs("<h2>Transitions since ", f);
    esc_html(f, t->since);
    fputs("</h2>\n<table>\n<tr><th>scenario</th><th>device</th><th>before</th><th>since</th>"
          "<th>change</th></tr>\n", f);
    for (int i = 0; i < t->n; i++) {
        const transition_row *w = &t->rows[i];
        char before[64], after[64];
        run_cell(before, sizeof before, w->prev_id, w->prev_verdict);
        run_cell(after, sizeof after, w->new_id, w->new_verdict);
        fputs("<tr>", f);
        html_cell(f, w->scenario);
        html_cell(f, w->shown_device);
        html_cell(f, before);
        html_cell(f, after);
        html_cell(f, w->change);
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

static int write_md(const transitions *t, const char *path)
{
    FILE *f = report_open(path);
    if (!f)
        return EXIT_FAIL;
    transitions_markdown(f, t);
    return report_close(f, path);
}

static int write_html(const transitions *t, const char *path)
{
    const char *mark = strstr(report_template_html, REPORT_BODY_MARK);
    if (!mark) {
        log_error("report: the embedded reports/template.html has no line '@BODY@'");
        return EXIT_FAIL;
    }
    FILE *f = report_open(path);
    if (!f)
        return EXIT_FAIL;
    fwrite(report_template_html, 1, (size_t)(mark - report_template_html), f);
    transitions_html_body(f, t);
    fputs(mark + strlen(REPORT_BODY_MARK), f);
    return report_close(f, path);
}

/* 1 when the row's newest run does not pass (as transitions_failing counts): whatever the run
 * before it was, and unless it could not be judged at all */
static int row_failing(const transition_row *w)
{
    return w->new_id && strcmp(w->new_verdict, "pass") != 0 &&
           strcmp(w->new_verdict, "none") != 0;
}

/* 1 when the row's testcase is skipped: it is gone, or its newest run is not judged */
static int row_skipped(const transition_row *w)
{
    return !w->new_id || strcmp(w->new_verdict, "none") == 0;
}

/* one testcase per scenario and device: a failure when its newest run does not pass, skipped
 * when it is gone or not judged */
static void junit_case(FILE *f, const transition_row *w)
{
    char before[64], after[64];
    run_cell(before, sizeof before, w->prev_id, w->prev_verdict);
    run_cell(after, sizeof after, w->new_id, w->new_verdict);
    fputs("    <testcase classname=\"harness.", f);
    esc_html(f, w->scenario);
    fputs("\" name=\"", f);
    esc_html(f, w->shown_device);
    fputs("\">\n", f);
    if (row_failing(w))
        fprintf(f, "      <failure type=\"%s\" message=\"%s: before %s, since %s\"/>\n",
                w->new_verdict, w->change, before, after);
    else if (row_skipped(w))
        fprintf(f, "      <skipped message=\"%s: before %s, since %s\"/>\n", w->change, before,
                after);
    fputs("    </testcase>\n", f);
}

static int write_junit(const transitions *t, const char *path)
{
    FILE *f = report_open(path);
    if (!f)
        return EXIT_FAIL;
    int failures = 0, skipped = 0;
    for (int i = 0; i < t->n; i++) {
        failures += row_failing(&t->rows[i]);
        skipped += row_skipped(&t->rows[i]); /* never a failing row too */
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"harness\" "
               "tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\">\n  <testsuite "
               "name=\"transitions since ", t->n, failures, skipped);
    esc_html(f, t->since);
    fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" "
               "timestamp=\"%s\">\n", t->n, failures, skipped, t->created);
    for (int i = 0; i < t->n; i++)
        junit_case(f, &t->rows[i]);
    fputs("  </testsuite>\n</testsuites>\n", f);
    return report_close(f, path);
}

int transitions_write(const transitions *t, const char *out_dir)
{
    char md[4200], html[4200], xml[4200];
    snprintf(md, sizeof md, "%s/transitions.md", out_dir);
    snprintf(html, sizeof html, "%s/transitions.html", out_dir);
    snprintf(xml, sizeof xml, "%s/transitions.xml", out_dir);
    return write_md(t, md) || write_html(t, html) || write_junit(t, xml) ? EXIT_USAGE : 0;
}
