/* harness/report/report_md.c: the porting table as Markdown (fit for a pull-request comment) and as CSV;
 * every user string escaped for its format (escape.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"
#include "report.h"

static void md_row(FILE *f, const report_row *w)
{
    char peak[32], total[32];
    format_bytes(w->mem_peak, peak, sizeof peak);
    format_bytes(w->mem_total, total, sizeof total);
    char ratio[400];
    row_ratio_text(w, ratio, sizeof ratio);
    fprintf(f, "| %lld | ", (long long)w->run_id);
    esc_markdown(f, w->scenario);
    fputs(" | ", f);
    esc_markdown(f, w->model);
    fprintf(f, " | %d | ", w->ranks);
    esc_markdown(f, w->overrides);
    fprintf(f, " | %d | ", w->batch_size);
    esc_markdown(f, w->device);
    fputs(" (", f);
    esc_markdown(f, w->device_name);
    fprintf(f, ") | %s / %s", peak, total);
    if (w->rank_peaks[0]) {
        fputs(" (", f);
        esc_markdown(f, w->rank_peaks);
        fputs(")", f);
    }
    fputs(" | ", f);
    if (w->has_baseline && w->res.loss.compared)
        fprintf(f, "%.2e", w->res.loss.max_abs);
    else
        fputs("-", f);
    fprintf(f, " | %s", row_verdict(w));
    if (w->has_baseline && w->res.first_fail_step)
        fprintf(f, " at step %d", w->res.first_fail_step);
    fprintf(f, " | %.0f | ", w->tokens_per_s);
    esc_markdown(f, ratio);
    char routing[400];
    row_routing_text(w, routing, sizeof routing);
    fputs(" | ", f);
    esc_markdown(f, routing);
    fputs(" |\n", f);
}

static void md_details(FILE *f, const report *r)
{
    fputs("\n### Details\n\n", f);
    for (int i = 0; i < r->n; i++) {
        const report_row *w = &r->rows[i];
        fprintf(f, "- run %lld, ", (long long)w->run_id);
        esc_markdown(f, w->scenario);
        fputs(" on ", f);
        esc_markdown(f, w->device);
        fprintf(f, ": %s", row_verdict(w));
        if (!w->has_baseline) {
            fputs(" (", f);
            esc_markdown(f, w->note);
            fputs(")\n", f);
            continue;
        }
        if (w->res.reason[0]) {
            fputs(": ", f);
            esc_markdown(f, w->res.reason);
        }
        fprintf(f, "; baseline '");
        esc_markdown(f, w->label);
        fprintf(f, "' (run %lld, %d steps; loss tolerance %.3g + %.3g·|ref|)", (long long)w->base_id,
                w->base_steps, w->cfg.loss.atol, w->cfg.loss.rtol);
        if (w->base_extra[0]) {
            fputs("; ", f);
            esc_markdown(f, w->base_extra);
        }
        if (w->forced) {
            fputs("; **forced**: the scenarios differ in ", f);
            esc_markdown(f, w->diff);
        }
        char hosts[1200], verdicts[600];
        row_verdicts_text(w, verdicts, sizeof verdicts);
        if (verdicts[0]) {
            fputs("; ", f);
            esc_markdown(f, verdicts);
        }
        row_hosts_text(w, hosts, sizeof hosts);
        fputs("; ", f);
        esc_markdown(f, hosts);
        fputc('\n', f);
    }
}

int report_markdown(const report *r, const char *path)
{
    FILE *f = report_open(path);
    if (!f)
        return EXIT_FAIL;
    int counts[4] = {0}, none = 0;
    for (int i = 0; i < r->n; i++)
        row_counted_verdict(&r->rows[i]) >= 0 ? counts[row_counted_verdict(&r->rows[i])]++
                                              : none++;
    fprintf(f, "## Porting report\n\n%d runs: %d pass, %d fail, %d diverged, %d incomplete, %d "
               "without baseline (made %s)\n\n",
            r->n, counts[VERDICT_PASS], counts[VERDICT_FAIL], counts[VERDICT_DIVERGED],
            counts[VERDICT_INCOMPLETE], none, r->created);
    fputs("| run | scenario | model | ranks | overrides | batch | device | peak memory / device "
          "memory | max abs Δloss | verdict | tokens/s | vs baseline (its run) | routing drift "
          "(MoE) |\n"
          "|---:|---|---|---:|---|---:|---|---|---:|---|---:|---|---|\n",
          f);
    for (int i = 0; i < r->n; i++)
        md_row(f, &r->rows[i]);
    md_details(f, r);
    fputs("\nThroughput ratios are informational unless the scenario sets "
          "`min_throughput_ratio` (\"gated\"); a baseline from another host compares two "
          "machines, not just the port.\n", f);
    fputs("\nRouting drift (sparse-MoE runs with per-expert token counts): the first step whose "
          "counts differ from the baseline's and the largest difference of one expert's count; "
          "it fails the verdict only past the scenario's `expert_tokens_rtol`.\n", f);
    if (r->plots)
        fputs("\nPlots: `plots/loss_N.png` (loss of run and baseline), `plots/dloss_N.png` "
              "(|Δloss| and the tolerance band, and the ensemble's k·σ + floor against an ensemble "
              "baseline), `plots/ratio_N.png` (per step |run − golden| / |baseline − golden| "
              "when there is a golden run), `plots/routing_N.png` (a MoE run's share of "
              "tokens per expert over the steps), `plots/throughput.png`, `plots/memory.png` "
              "(N = the row); SVG alongside.\n", f);
    return report_close(f, path);
}

/* ---- CSV ---- */

/* a number; empty when unknown (NaN); inf / -inf as the Markdown and JSON write them */
static void csv_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, ",%.17g", v);
    else if (isinf(v))
        fputs(v > 0 ? ",inf" : ",-inf", f);
    else
        fputs(",", f);
}

static void csv_text(FILE *f, const char *s)
{
    fputc(',', f);
    esc_csv(f, s);
}

/* routing_steps, first_routing_diff_step, max_abs_expert_tokens, max_rel_expert_tokens,
 * first_routing_failing_step: empty where there is nothing to say */
static void csv_routing(FILE *f, const report_row *w)
{
    const routing_drift *d = &w->res.routing;
    int both = w->has_baseline && w->routing_steps && d->base_steps && !d->shape_differs &&
               d->compared > 0; /* figures only where a count was compared */
    fprintf(f, ",%d", w->routing_steps);
    fprintf(f, both && d->first_diff_step ? ",%d" : ",", d->first_diff_step);
    csv_num(f, both ? d->max_abs : NAN);
    csv_num(f, both ? d->max_rel : NAN);
    fprintf(f, both && d->first_fail_step ? ",%d" : ",", d->first_fail_step);
}

static void csv_row(FILE *f, const report_row *w)
{
    const compare_result *c = &w->res;
    int b = w->has_baseline;
    fprintf(f, "%lld", (long long)w->run_id);
    csv_text(f, w->scenario);
    csv_text(f, w->model);
    fprintf(f, ",%d", w->ranks);
    csv_text(f, w->overrides);
    fprintf(f, ",%d", w->batch_size);
    csv_text(f, w->device);
    csv_text(f, w->device_name);
    csv_text(f, w->dtype);
    csv_text(f, w->status);
    fprintf(f, ",%d", w->steps);
    csv_num(f, w->mem_peak);
    csv_num(f, w->mem_total);
    csv_num(f, w->tokens_per_s);
    csv_text(f, row_verdict(w));
    csv_text(f, b ? w->label : "");
    if (b)
        fprintf(f, ",%lld,%d", (long long)w->base_id, c->loss.compared);
    else
        fputs(",,", f);
    csv_num(f, b && c->loss.compared ? c->loss.max_abs : NAN);
    csv_num(f, b && c->loss.compared ? c->loss.max_rel : NAN);
    if (b && c->first_fail_step)
        fprintf(f, ",%d", c->first_fail_step);
    else
        fputs(",", f);
    csv_num(f, b ? c->throughput_ratio : NAN);
    csv_num(f, b ? c->memory_ratio : NAN);
    csv_text(f, b ? c->reason : w->note);
    csv_text(f, w->run_at.host);
    fprintf(f, w->run_at.threads > 0 ? ",%d" : ",", w->run_at.threads);
    csv_text(f, b ? w->base_at.host : "");
    fprintf(f, b && w->base_at.threads > 0 ? ",%d" : ",", w->base_at.threads);
    fprintf(f, b ? ",%d,%d" : ",,", w->same_host, w->cfg.min_throughput_ratio >= 0);
    csv_routing(f, w);
    fputs(b ? (w->forced ? ",1" : ",0") : ",", f);
    fputs("\r\n", f);
}

int report_csv(const report *r, const char *path)
{
    FILE *f = report_open(path);
    if (!f)
        return EXIT_FAIL;
    fputs("run,scenario,model,ranks,overrides,batch_size,device,device_name,dtype,status,steps,"
          "mem_peak_bytes,mem_total_bytes,tokens_per_s,verdict,baseline_label,baseline_run,"
          "steps_compared,max_abs_dloss,max_rel_dloss,first_failing_step,throughput_ratio,"
          "memory_ratio,reason,run_host,run_threads,baseline_host,baseline_threads,same_host,"
          "throughput_gated,routing_steps,first_routing_diff_step,max_abs_expert_tokens,"
          "max_rel_expert_tokens,first_routing_failing_step,forced\r\n",
          f);
    for (int i = 0; i < r->n; i++)
        csv_row(f, &r->rows[i]);
    return report_close(f, path);
}
