/* harness/report/report.h: the porting report of a set of runs: one row per run (judged against its
 * baseline) written as Markdown, self-contained HTML, CSV, JUnit XML and gnuplot plots. */
#ifndef REPORT_H
#define REPORT_H

#include <stdio.h>

#include "judge/judge.h"

typedef struct {
    int64_t run_id, base_id;
    char scenario[256], device[64], device_name[256], dtype[16], status[16];
    char model[160], overrides[512];
    int ranks, batch_size, steps;
    double seconds;               /* sum of the step times */
    double mem_peak, mem_total, tokens_per_s; /* NaN when unknown */
    char rank_peaks[1024];        /* a data-parallel run: the max and each rank's peak memory */
    int has_baseline;             /* 0: nothing to compare with; note says why */
    char note[512];
    char label[256], base_device[64], base_device_name[256], base_extra[512];
    int base_steps;
    compare_config cfg;
    compare_result res;
    int forced;
    char diff[1024];
    int has_loss_plot, has_dloss_plot; /* plots/loss_N.{png,svg}, plots/dloss_N.{png,svg} */
    int routing_steps;            /* steps of the run with expert counts (sparse MoE); 0 none */
    int routing_layers, routing_experts;
    int has_routing_plot;         /* plots/routing_N.{png,svg}: per-expert share over steps */
    int routing_plot_layer;       /* the layer plotted; -1: summed over the layers */
    run_host run_at, base_at;     /* the hosts run and baseline ran on */
    int same_host;                /* 0: the throughput and memory ratios compare two machines */
    int has_ratio_plot;           /* plots/ratio_N.{png,svg}: per-step error ratio to the golden */
} report_row;

typedef struct {
    report_row *rows;
    int n;
    const char *out_dir;
    int plots;                    /* 1 when plots/ was made (throughput.png, memory.png too) */
    char created[32];
} report;

/* what reports share, from reports/style.gp and reports/template.html, embedded at build time
 * (reports/embed.cmake); NUL-terminated */
extern const char report_style_gp[];
extern const char report_template_html[];
/* the line of report_template_html that the report's body replaces */
#define REPORT_BODY_MARK "@BODY@\n"

/* ---- harness/report/report_data.c ---- */
/* Fills row from the scenario JSON of a run: model summary, overrides, batch size, ranks. */
void report_scenario_fields(const char *scenario_json, report_row *row);
/* Fills row from a judgement (or from the run alone when j->base_id is 0). */
void report_fill_row(report_row *row, const judgement *j);
/* The verdict row counts as: its comparison's; without a baseline a run that did not finish ok
 * fails by itself (status diverged: diverged; failed, stopped, running: incomplete), and one
 * that did is not judged (-1: skipped). */
int row_counted_verdict(const report_row *row);
/* Worst verdict the rows count as (row_counted_verdict); pass when none. */
verdict report_worst(const report *r);
/* a report file opened for writing, NULL after a message naming it */
FILE *report_open(const char *path);
/* closes f: 0, or EXIT_FAIL after a message when a write or the close failed */
int report_close(FILE *f, const char *path);
/* "1.2 MiB", "23.5 GiB", "-" for NaN/0 into out */
void format_bytes(double bytes, char *out, size_t len);
/* short verdict label of a row: "pass", "fail", "diverged", "incomplete", "no baseline", and
 * without a baseline "diverged (no baseline)", "incomplete (no baseline)" */
const char *row_verdict(const report_row *row);
/* the row's throughput ratio in words: "0.05x of NAME (run 3; not gated; other host)", "-"
 * when there is none */
void row_ratio_text(const report_row *row, char *out, size_t len);
/* the error ratio and ensemble figures and the verdict that decides: "error ratio 1.2 (RMSE
 * 3e-07 vs 2.5e-07; rule <= 3*ref + 1e-06: pass; msprobe warn); decided by band"; "" when the
 * row has neither a golden nor an ensemble baseline and the band decides */
void row_verdicts_text(const report_row *row, char *out, size_t len);
/* "run: HOST, N threads; baseline: HOST, M threads[; different hosts]" */
void row_hosts_text(const report_row *row, char *out, size_t len);
/* the routing drift in words: "first at step 3; max 30 tokens (step 5, layer 1, expert 2), rel
 * 0.3; tolerance 0.1*ref: fails at step 5", "identical (40 steps)", "-" without counts */
void row_routing_text(const report_row *row, char *out, size_t len);

/* ---- writers: each returns 0, or 1 after a message naming the file ---- */
int report_markdown(const report *r, const char *path); /* harness/report/report_md.c */
int report_csv(const report *r, const char *path);      /* harness/report/report_md.c */
int report_junit(const report *r, const char *path);    /* harness/report/report_junit.c */
int report_html(const report *r, const char *path);     /* harness/report/report_html.c */

/* ---- harness/report/report_transitions.c: `report --since RUN|DATE` ---- */
typedef struct {
    char scenario[256], device[64], device_name[256];
    char shown_device[330]; /* the device cell: the spec, and the name when the spec has several */
    int64_t prev_id, new_id;              /* the newest run before / since; 0 none */
    char prev_verdict[16], new_verdict[16]; /* "pass", "fail", ...; "none": no baseline (a
                                               run not ok without one: diverged, incomplete) */
    const char *change;  /* new failure, fixed, still failing, still passing, new, gone,
                            not judged, passing / failing, not judged before */
} transition_row;
typedef struct {
    transition_row *rows;
    int n, cap;
    char since[64];                       /* the --since date, or "run N" */
    int64_t since_run;                    /* the run id given; 0: a date */
    char created[32];
} transitions;
/* Per scenario and device (imported runs left out): the newest run since `since` (a run id:
 * runs after it; a UTC date: runs started at or after it) and the newest before, each with its
 * newest stored verdict against a baseline, else judged now with q (not stored). 0, or 2 after
 * a message (a malformed --since, no such run, a store error, a golden or verdict input that q
 * asks for and is not there). */
int transitions_build(store *st, const char *since, const baseline_query *q, transitions *t);
void transitions_free(transitions *t);
/* 1 when the newest run of some row does not pass (new failure, still failing, new and not
 * passing, failing and not judged before); a newest run not judged (no baseline) does not */
int transitions_failing(const transitions *t);
/* the table as Markdown to f */
void transitions_markdown(FILE *f, const transitions *t);
/* DIR/transitions.md, transitions.html and transitions.xml (JUnit: one testcase per scenario
 * and device, failed when its newest run does not pass); 0, or 2 after a message */
int transitions_write(const transitions *t, const char *out_dir);

/* ---- harness/report/report_plot.c: gnuplot ----
 * report_plot_begin opens DIR/plots/plots.gp; report_plot_row adds the row's loss and |dloss|
 * plots (data inlined, decimated to at most REPORT_PLOT_POINTS points per curve) and, for a run
 * with expert counts, the share of each expert over the steps (summed over the MoE layers, or
 * the layer with the most drift from the baseline);
 * report_plot_end adds the throughput and memory bars and runs gnuplot (no shell) in DIR/plots.
 * Every user string reaches gnuplot through esc_gnuplot. */
#define REPORT_PLOT_POINTS 2000
typedef struct plotter plotter;
int report_plot_begin(const char *out_dir, plotter **p);
/* 1 when gnuplot is an executable file in PATH: checked before a report creates anything, so a
 * machine without it gets one message and no half-made report directory */
int report_gnuplot_found(void);
int report_plot_row(plotter *p, report_row *row, int index, const judgement *j);
int report_plot_end(plotter *p, report *r);

#endif
