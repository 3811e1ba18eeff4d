/* harness/report/report_junit.c: the report as JUnit XML for CI: one testsuite per scenario, one testcase
 * per scenario and device (run); a failure carries the verdict and the first failing step. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"
#include "report.h"

static int failed(const report_row *w)
{
    return row_counted_verdict(w) > (int)VERDICT_PASS;
}

static int is_skipped(const report_row *w)
{
    return row_counted_verdict(w) < 0;
}

static void property(FILE *f, const char *name, const char *value)
{
    fprintf(f, "        <property name=\"%s\" value=\"", name);
    esc_html(f, value);
    fputs("\"/>\n", f);
}

/* the run ids and hosts of the case, as JUnit properties */
static void junit_properties(FILE *f, const report_row *w)
{
    char text[400];
    fputs("      <properties>\n", f);
    snprintf(text, sizeof text, "%lld", (long long)w->run_id);
    property(f, "run", text);
    run_host_text(&w->run_at, text, sizeof text);
    property(f, "run_host", text);
    if (w->has_baseline) {
        snprintf(text, sizeof text, "%lld", (long long)w->base_id);
        property(f, "baseline_run", text);
        run_host_text(&w->base_at, text, sizeof text);
        property(f, "baseline_host", text);
        property(f, "same_host", w->same_host ? "true" : "false");
        property(f, "throughput_gated", w->cfg.min_throughput_ratio >= 0 ? "true" : "false");
        property(f, "forced", w->forced ? "true" : "false"); /* compared despite the scenarios */
    }
    fputs("      </properties>\n", f);
}

static void junit_case(FILE *f, const report_row *w)
{
    fputs("    <testcase classname=\"harness.", f);
    esc_html(f, w->scenario);
    fputs("\" name=\"", f);
    esc_html(f, w->device);
    fputs(" (", f);
    esc_html(f, w->device_name);
    fprintf(f, ") run %lld\" time=\"%.3f\">\n", (long long)w->run_id, w->seconds);
    junit_properties(f, w);
    if (is_skipped(w)) {
        fputs("      <skipped message=\"", f);
        esc_html(f, w->note);
        fputs("\"/>\n", f);
    } else if (!w->has_baseline) {
        fprintf(f, "      <failure type=\"%s\" message=\"the run's status is %s; ",
                verdict_name((verdict)row_counted_verdict(w)), w->status);
        esc_html(f, w->note);
        fprintf(f, "\">the run's status is %s (%d steps); not compared: ", w->status, w->steps);
        esc_html(f, w->note);
        fputs("</failure>\n", f);
    } else if (failed(w)) {
        fprintf(f, "      <failure type=\"%s\" message=\"", verdict_name(w->res.v));
        if (w->res.first_fail_step)
            fprintf(f, "first failing step %d (%s): ", w->res.first_fail_step,
                    w->res.first_fail_metric ? w->res.first_fail_metric : "?");
        esc_html(f, w->res.reason);
        fprintf(f, "\">verdict %s; ", verdict_name(w->res.v));
        if (w->res.first_fail_step) /* an incomplete run may have no failing step */
            fprintf(f, "first failing step %d; ", w->res.first_fail_step);
        else
            fputs("no failing step; ", f);
        fprintf(f, "steps compared %d; max abs dloss ", w->res.loss.compared);
        if (w->res.loss.compared)
            fprintf(f, "%.6g", w->res.loss.max_abs);
        else
            fputs("none", f); /* nothing compared: no difference, not 0 */
        fputs("; baseline '", f);
        esc_html(f, w->label);
        fprintf(f, "' (run %lld)</failure>\n", (long long)w->base_id);
    }
    fputs("    </testcase>\n", f);
}

/* the rows of scenario s: counts for the testsuite element */
static void suite_counts(const report *r, const char *s, int *tests, int *failures, int *skipped,
                         double *time)
{
    *tests = *failures = *skipped = 0;
    *time = 0;
    for (int i = 0; i < r->n; i++) {
        const report_row *w = &r->rows[i];
        if (strcmp(w->scenario, s) != 0)
            continue;
        (*tests)++;
        *failures += failed(w);
        *skipped += is_skipped(w);
        *time += w->seconds;
    }
}

static int seen_before(const report *r, int i)
{
    for (int k = 0; k < i; k++)
        if (strcmp(r->rows[k].scenario, r->rows[i].scenario) == 0)
            return 1;
    return 0;
}

static void junit_suite(FILE *f, const report *r, const char *s)
{
    int tests, failures, skipped;
    double time;
    suite_counts(r, s, &tests, &failures, &skipped, &time);
    fputs("  <testsuite name=\"", f);
    esc_html(f, s);
    fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.3f\" "
               "timestamp=\"%s\">\n", tests, failures, skipped, time, r->created);
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->rows[i].scenario, s) == 0)
            junit_case(f, &r->rows[i]);
    fputs("  </testsuite>\n", f);
}

int report_junit(const report *r, const char *path)
{
    FILE *f = report_open(path);
    if (!f)
        return EXIT_FAIL;
    int failures = 0, skipped = 0;
    for (int i = 0; i < r->n; i++) {
        failures += failed(&r->rows[i]);
        skipped += is_skipped(&r->rows[i]);
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites name=\"harness\" tests=\"%d\" failures=\"%d\" errors=\"0\" "
               "skipped=\"%d\">\n", r->n, failures, skipped);
    for (int i = 0; i < r->n; i++)
        if (!seen_before(r, i))
            junit_suite(f, r, r->rows[i].scenario);
    fputs("</testsuites>\n", f);
    return report_close(f, path);
}
