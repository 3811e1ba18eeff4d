/* harness/report/report_html.c: the report as one self-contained HTML file: the porting table, details
 * and the PNG plots inlined as data: URIs; user strings escaped, scripts forbidden by CSP. */
#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "report.h"


/* writes the file at path base64-encoded; 0, or 1 when it cannot be read */
static int inline_png(FILE *f, const char *path)
{
    size_t len = 0;
    char why[INPUT_WHY_LEN];
    unsigned char *data = (unsigned char *)input_read(path, INPUT_IMAGE, &len, why, sizeof why);
    if (!data)
        return EXIT_FAIL;
    unsigned char out[4 * 3072 / 3 + 1];
    fputs("data:image/png;base64,", f);
    for (size_t off = 0; off < len; off += 3072) {
        size_t n = len - off < 3072 ? len - off : 3072;
        int w = EVP_EncodeBlock(out, data + off, (int)n);
        fwrite(out, 1, (size_t)w, f);
    }
    free(data);
    return 0;
}

static void img(FILE *f, const report *r, const char *name, const char *alt)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/plots/%s", r->out_dir, name);
    fputs("<img alt=\"", f);
    esc_html(f, alt);
    fputs("\" src=\"", f);
    if (inline_png(f, path))
        log_warn("report: %s: cannot inline the plot: %s", path, strerror(errno));
    fputs("\">\n", f);
}

static void td(FILE *f, const char *cls, const char *text)
{
    fprintf(f, "<td%s%s%s>", cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
    esc_html(f, text);
    fputs("</td>", f);
}

static void html_row(FILE *f, const report_row *w)
{
    char buf[1200], peak[32], total[32];
    format_bytes(w->mem_peak, peak, sizeof peak);
    format_bytes(w->mem_total, total, sizeof total);
    fputs("<tr>", f);
    snprintf(buf, sizeof buf, "%lld", (long long)w->run_id);
    td(f, "n", buf);
    td(f, NULL, w->scenario);
    td(f, NULL, w->model);
    snprintf(buf, sizeof buf, "%d", w->ranks);
    td(f, "n", buf);
    td(f, NULL, w->overrides);
    snprintf(buf, sizeof buf, "%d", w->batch_size);
    td(f, "n", buf);
    snprintf(buf, sizeof buf, "%s (%.500s)", w->device, w->device_name);
    td(f, NULL, buf);
    if (w->rank_peaks[0]) /* a data-parallel run: the max and each rank's peak */
        snprintf(buf, sizeof buf, "%s / %s (%.1000s)", peak, total, w->rank_peaks);
    else
        snprintf(buf, sizeof buf, "%s / %s", peak, total);
    td(f, NULL, buf);
    snprintf(buf, sizeof buf, w->has_baseline && w->res.loss.compared ? "%.2e" : "-",
             w->res.loss.max_abs);
    td(f, "n", buf);
    if (w->has_baseline && w->res.first_fail_step)
        snprintf(buf, sizeof buf, "%s at step %d", row_verdict(w), w->res.first_fail_step);
    else
        snprintf(buf, sizeof buf, "%s", row_verdict(w));
    td(f, row_counted_verdict(w) >= 0 ? verdict_name((verdict)row_counted_verdict(w)) : NULL, buf);
    snprintf(buf, sizeof buf, "%.0f", w->tokens_per_s);
    td(f, "n", buf);
    row_ratio_text(w, buf, sizeof buf);
    td(f, NULL, buf);
    row_routing_text(w, buf, sizeof buf);
    td(f, NULL, buf);
    fputs("</tr>\n", f);
}

static void html_details(FILE *f, const report *r)
{
    fputs("<h2>Runs</h2>\n", f);
    for (int i = 0; i < r->n; i++) {
        const report_row *w = &r->rows[i];
        char alt[128];
        fprintf(f, "<h3>%d. run %lld: ", i + 1, (long long)w->run_id);
        esc_html(f, w->scenario);
        fputs(" on ", f);
        esc_html(f, w->device);
        fprintf(f, " &mdash; %s</h3>\n<p>", row_verdict(w));
        esc_html(f, w->has_baseline ? w->res.reason : w->note);
        if (w->has_baseline) {
            fputs(" Baseline '", f);
            esc_html(f, w->label);
            fprintf(f, "' (run %lld). ", (long long)w->base_id);
            esc_html(f, w->base_extra);
        }
        if (w->forced) {
            fputs(" <b>Forced</b>: the scenarios differ in ", f);
            esc_html(f, w->diff);
        }
        char hosts[1200], verdicts[600];
        row_verdicts_text(w, verdicts, sizeof verdicts);
        if (verdicts[0]) {
            fputs("<br>Verdicts: ", f);
            esc_html(f, verdicts);
        }
        row_hosts_text(w, hosts, sizeof hosts);
        fputs("<br>Hosts: ", f);
        esc_html(f, hosts);
        fputs("</p>\n", f);
        snprintf(alt, sizeof alt, "loss_%d.png", i + 1);
        if (r->plots && w->has_loss_plot)
            img(f, r, alt, "loss of run and baseline");
        snprintf(alt, sizeof alt, "dloss_%d.png", i + 1);
        if (r->plots && w->has_dloss_plot)
            img(f, r, alt, "|loss difference| and tolerance");
        snprintf(alt, sizeof alt, "ratio_%d.png", i + 1);
        if (r->plots && w->has_ratio_plot)
            img(f, r, alt, "per-step error ratio to the golden run");
        snprintf(alt, sizeof alt, "routing_%d.png", i + 1);
        if (r->plots && w->has_routing_plot)
            img(f, r, alt, "share of tokens per expert over the steps");
    }
}

int report_html(const report *r, const char *path)
{
    FILE *f = report_open(path);
    if (!f)
        return EXIT_FAIL;
    const char *mark = strstr(report_template_html, REPORT_BODY_MARK);
    if (!mark) { /* reports/template.html lost its marker: refused rather than half written */
        log_error("report: the embedded reports/template.html has no line '@BODY@'");
        fclose(f);
        return EXIT_FAIL;
    }
    fwrite(report_template_html, 1, (size_t)(mark - report_template_html), f);
    fprintf(f, "<p>%d runs, made %s. Verdicts: |x - ref| &le; atol + rtol&middot;|ref| per step "
               "(docs/compare.md). Throughput ratios are informational unless the scenario "
               "gates them; a baseline from another host compares two machines.</p>\n<table>\n"
               "<tr><th>run</th><th>scenario</th><th>model</th>"
               "<th>ranks</th><th>overrides</th><th>batch</th><th>device</th>"
               "<th>peak memory / device memory</th><th>max abs &Delta;loss</th>"
               "<th>verdict</th><th>tokens/s</th><th>vs baseline (its run)</th>"
               "<th>routing drift (MoE)</th></tr>\n",
            r->n, r->created);
    for (int i = 0; i < r->n; i++)
        html_row(f, &r->rows[i]);
    fputs("</table>\n", f);
    if (r->plots && r->n > 0) {
        fputs("<h2>Throughput and memory</h2>\n", f);
        img(f, r, "throughput.png", "throughput per device");
        img(f, r, "memory.png", "peak memory per device");
    }
    html_details(f, r);
    fputs(mark + strlen(REPORT_BODY_MARK), f);
    return report_close(f, path);
}
