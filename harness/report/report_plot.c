/* harness/report/report_plot.c: the report's plots through gnuplot: loss curves of run and baseline,
 * |dloss| on a log axis with the tolerance band, throughput and memory bars; PNG and SVG. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/output_target.h"
#include "util/util.h"
#include "report.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#define N_SCRIPTS 2      /* gnuplot processes run side by side */
#define DLOSS_FLOOR 1e-16 /* a zero difference is drawn here on the log axis */

struct plotter {
    char dir[PATH_MAX];
    FILE *script[N_SCRIPTS];
};

/* the script's first lines; the shared style (reports/style.gp, line styles 1 run, 2 baseline,
 * 3 tolerance) follows */
static const char SCRIPT_HEAD[] =
    "# made by harness report: every user string is a single-quoted literal (no backquote,\n"
    "# macro or escape expansion there) and text is noenhanced\n";

static int script_path(const plotter *p, int k, char *out, size_t len)
{
    return snprintf(out, len, "%s/plots_%d.gp", p->dir, k) >= (int)len;
}

/* 1 when PATH (execlp's default when unset) holds an executable file named gnuplot */
int report_gnuplot_found(void)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";
    for (const char *dir = path;; dir++) {
        size_t len = strcspn(dir, ":");
        char file[PATH_MAX];
        struct stat sb;
        int n = snprintf(file, sizeof file, "%.*s/gnuplot", len ? (int)len : 1,
                         len ? dir : ".");
        if (n > 0 && (size_t)n < sizeof file && stat(file, &sb) == 0 && S_ISREG(sb.st_mode) &&
            access(file, X_OK) == 0)
            return 1;
        dir += len;
        if (!*dir)
            return 0;
    }
}

int report_plot_begin(const char *out_dir, plotter **out)
{
    plotter *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        return EXIT_FAIL;
    snprintf(p->dir, sizeof p->dir, "%s/plots", out_dir);
    if (mkdir(p->dir, 0777) != 0 && errno != EEXIST) {
        log_error("report: cannot create %s: %s", p->dir, strerror(errno));
        free(p);
        return EXIT_FAIL;
    }
    for (int k = 0; k < N_SCRIPTS; k++) {
        char path[PATH_MAX + 32];
        script_path(p, k, path, sizeof path);
        if (!(p->script[k] = output_create_fresh(path))) { /* never through a planted link */
            log_error("report: cannot write %s: %s", path, strerror(errno));
            for (int i = 0; i < k; i++)
                fclose(p->script[i]);
            free(p);
            return EXIT_FAIL;
        }
        fputs(SCRIPT_HEAD, p->script[k]);
        fputs(report_style_gp, p->script[k]);
    }
    *out = p;
    return 0;
}

/* ---- data, decimated ---------------------------------------------------------------------- */

static void put_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, " %.9g", v);
    else
        fputs(" NaN", f);
}

/* writes (x[i], y[i]) as a datablock; above REPORT_PLOT_POINTS points, each bucket of steps
 * keeps its smallest and largest y (in step order), so the envelope and every spike survive */
static void datablock(FILE *f, const char *name, const double *x, const double *y, int n)
{
    fprintf(f, "$%s << EOD\n", name);
    int per = n > REPORT_PLOT_POINTS ? (2 * n + REPORT_PLOT_POINTS - 1) / REPORT_PLOT_POINTS : 1;
    for (int b = 0; b < n; b += per) {
        int e = b + per < n ? b + per : n, lo = -1, hi = -1;
        for (int i = b; i < e; i++) {
            if (!isfinite(y[i]))
                continue;
            lo = lo < 0 || y[i] < y[lo] ? i : lo;
            hi = hi < 0 || y[i] > y[hi] ? i : hi;
        }
        if (lo < 0)
            lo = hi = b; /* nothing finite: one gap */
        int first = lo < hi ? lo : hi, second = lo < hi ? hi : lo;
        fprintf(f, "%.0f", x[first]);
        put_num(f, y[first]);
        fputc('\n', f);
        if (second != first) {
            fprintf(f, "%.0f", x[second]);
            put_num(f, y[second]);
            fputc('\n', f);
        }
    }
    fputs("EOD\n", f);
}

/* the plots folder of the report being written: what outputs() clears its names in */
static const char *plots_dir;

/* one PNG and one SVG of the plot command cmd (already written to f with the settings). What is
 * at their names now (a link planted there, a hard link to another file) is removed first, so
 * gnuplot makes new files and never writes through it */
static void outputs(FILE *f, const char *base, const char *cmd, int width)
{
    for (int svg = 0; svg < 2 && plots_dir; svg++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s.%s", plots_dir, base, svg ? "svg" : "png");
        unlink(path); /* a folder stays, and gnuplot's failure on it is reported */
    }
    fprintf(f, "set terminal png size %d,480\nset output '%s.png'\n%s\n", width, base, cmd);
    fprintf(f, "set terminal svg size %d,480 dynamic\nset output '%s.svg'\nreplot\n"
               "unset output\n", width, base);
}

static void title(FILE *f, const char *what, const char *text)
{
    fprintf(f, "set %s ", what);
    esc_gnuplot(f, text);
    fputs(" noenhanced\n", f);
}

static int loss_arrays(const baseline *b, double **x, double **y)
{
    *x = calloc((size_t)(b->n_steps + 1), sizeof **x);
    *y = calloc((size_t)(b->n_steps + 1), sizeof **y);
    if (!*x || !*y)
        return EXIT_FAIL;
    for (int i = 0; i < b->n_steps; i++) {
        (*x)[i] = b->steps[i].step;
        (*y)[i] = b->steps[i].loss;
    }
    return 0;
}

static void loss_plot(FILE *f, const report_row *row, int index, const judgement *j)
{
    double *x = NULL, *y = NULL;
    char name[32], text[1200];
    snprintf(name, sizeof name, "run%d", index);
    if (!loss_arrays(&j->run, &x, &y))
        datablock(f, name, x, y, j->run.n_steps);
    free(x);
    free(y);
    if (row->has_baseline) {
        snprintf(name, sizeof name, "base%d", index);
        if (!loss_arrays(&j->base, &x, &y))
            datablock(f, name, x, y, j->base.n_steps);
        free(x);
        free(y);
    }
    snprintf(text, sizeof text, "%s on %s (%s), run %lld: %s", row->scenario, row->device,
             row->device_name, (long long)row->run_id, row_verdict(row));
    title(f, "title", text);
    fputs("unset logscale y\nset format y '%g'\nset xlabel 'step'\nset ylabel 'loss'\n", f);
    char cmd[1800], run_t[600];
    snprintf(run_t, sizeof run_t, "run %lld: %s", (long long)row->run_id, row->device);
    fprintf(f, "run_title%d = ", index);
    esc_gnuplot(f, run_t);
    fputc('\n', f);
    if (row->has_baseline) {
        snprintf(text, sizeof text, "baseline %s: %s (%s)", row->label, row->base_device,
                 row->base_device_name);
        fprintf(f, "base_title%d = ", index);
        esc_gnuplot(f, text);
        fputc('\n', f);
        snprintf(cmd, sizeof cmd, "plot $base%d using 1:2 with lines ls 2 "
                                  "title base_title%d, $run%d using 1:2 with lines ls 1 "
                                  "title run_title%d", index, index, index, index);
    } else {
        snprintf(cmd, sizeof cmd, "plot $run%d using 1:2 with lines ls 1 "
                                  "title run_title%d", index, index);
    }
    snprintf(name, sizeof name, "loss_%d", index);
    outputs(f, name, cmd, 900);
}

/* |dloss| per common step and the band atol + rtol*|ref| */
static void dloss_data(FILE *f, int index, const judgement *j, tolerance t)
{
    int n = j->run.n_steps < j->base.n_steps ? j->run.n_steps : j->base.n_steps, m = 0;
    double *x = calloc((size_t)(n + 1), sizeof *x), *d = calloc((size_t)(n + 1), sizeof *d),
           *band = calloc((size_t)(n + 1), sizeof *band);
    for (int a = 0, b = 0; x && d && band && a < j->run.n_steps && b < j->base.n_steps;) {
        const step_record *r = &j->run.steps[a], *q = &j->base.steps[b];
        if (r->step != q->step) {
            r->step < q->step ? a++ : b++;
            continue;
        }
        x[m] = r->step;
        d[m] = fabs(r->loss - q->loss);
        d[m] = isnan(d[m]) ? d[m] : fmax(d[m], DLOSS_FLOOR);
        band[m++] = t.atol + t.rtol * fabs(q->loss);
        a++;
        b++;
    }
    char name[32];
    snprintf(name, sizeof name, "d%d", index);
    datablock(f, name, x, d, x && d ? m : 0);
    snprintf(name, sizeof name, "band%d", index);
    datablock(f, name, x, band, x && band ? m : 0);
    free(x);
    free(d);
    free(band);
}

/* an ensemble baseline's band k*std + floor per step (with the floor under the log axis) */
static void ensemble_band_data(FILE *f, int index, const judgement *j, double k, double floor)
{
    const baseline *b = &j->base;
    double *x = calloc((size_t)(b->n_steps + 1), sizeof *x);
    double *y = calloc((size_t)(b->n_steps + 1), sizeof *y);
    for (int i = 0; x && y && i < b->n_steps; i++) {
        x[i] = b->steps[i].step;
        y[i] = fmax(k * b->loss_std[i] + floor, DLOSS_FLOOR);
    }
    char name[32];
    snprintf(name, sizeof name, "ens%d", index);
    datablock(f, name, x, y, x && y ? b->n_steps : 0);
    free(x);
    free(y);
}

static void dloss_plot(FILE *f, const report_row *row, int index, const judgement *j)
{
    dloss_data(f, index, j, row->cfg.loss);
    int ensemble = j->base.loss_std != NULL;
    if (ensemble)
        ensemble_band_data(f, index, j, row->cfg.ensemble_k, row->cfg.ensemble_floor);
    char text[1200], cmd[1600], ens[400] = "";
    snprintf(text, sizeof text, "|loss - baseline loss|: %s on %s vs %s, run %lld", row->scenario,
             row->device, row->label, (long long)row->run_id);
    title(f, "title", text);
    fprintf(f, "set logscale y\nset format y '%%.0e'\nset xlabel 'step'\nset ylabel '|dloss|'\n"
               "set yrange [%g:*]\n", DLOSS_FLOOR / 10);
    if (row->res.first_fail_step) /* front: over the filled tolerance band, not behind it */
        fprintf(f, "set arrow 1 from %d, graph 0 to %d, graph 1 nohead front dt 2 lc rgb 'red'\n",
                row->res.first_fail_step, row->res.first_fail_step);
    if (ensemble)
        snprintf(ens, sizeof ens, "$ens%d using 1:2 with lines ls 2 title sprintf('ensemble of %d "
                 "runs: %%.3g*std + %%.3g', %.17g, %.17g), ", index, j->base.ensemble_runs,
                 row->cfg.ensemble_k, row->cfg.ensemble_floor);
    snprintf(cmd, sizeof cmd,
             "plot $band%d using 1:2 with filledcurves x1 fs transparent solid 0.25 "
             "ls 3 title sprintf('tolerance %%.3g + %%.3g*|ref|', %.17g, %.17g), %s"
             "$d%d using 1:2 with linespoints ls 1 pt 7 ps 0.4 "
             "title '|dloss| (0 drawn at 1e-16)'",
             index, row->cfg.loss.atol, row->cfg.loss.rtol, ens, index);
    char name[32];
    snprintf(name, sizeof name, "dloss_%d", index);
    outputs(f, name, cmd, 900);
    fputs("unset arrow 1\nset autoscale y\n", f);
}

/* ---- the error ratio: per step |run - golden| / |baseline - golden| ------------------------ */

static void ratio_plot(FILE *f, report_row *row, int index, const judgement *j)
{
    const baseline *r = &j->run;
    double *x = calloc((size_t)(r->n_steps + 1), sizeof *x);
    double *y = calloc((size_t)(r->n_steps + 1), sizeof *y);
    error_ratio_result e;
    if (x && y)
        error_ratio(r->steps, r->n_steps, j->base.steps, j->base.n_steps, j->golden.steps,
                    j->golden.n_steps, 1, 0, &e, y);
    for (int i = 0; x && y && i < r->n_steps; i++) {
        x[i] = r->steps[i].step;
        y[i] = isnan(y[i]) || isinf(y[i]) ? y[i] : fmax(y[i], DLOSS_FLOOR); /* Inf: a gap */
    }
    char name[32], text[1200], cmd[1200];
    snprintf(name, sizeof name, "ratio%d", index);
    datablock(f, name, x, y, x && y ? r->n_steps : 0);
    free(x);
    free(y);
    snprintf(text, sizeof text, "|run - golden| / |baseline - golden| per step: %s on %s vs %s, "
             "run %lld; whole run %.3g", row->scenario, row->device, row->label,
             (long long)row->run_id, row->res.error_ratio.ratio);
    title(f, "title", text);
    fprintf(f, "set logscale y\nset format y '%%g'\nset xlabel 'step'\nset ylabel 'error ratio'\n"
               "set yrange [*:*]\n");
    snprintf(cmd, sizeof cmd, "plot $ratio%d using 1:2 with linespoints ls 1 pt 7 ps 0.4 "
             "title 'per-step ratio', %.17g with lines ls 3 title 'k = %.3g (the rule, on the "
             "RMSE)', 1 with lines dt 2 lc rgb 'gray' title 'msprobe pass <= 1', 2 with lines "
             "dt 3 lc rgb 'gray' title 'msprobe warn <= 2'", index, row->cfg.error_ratio_k,
             row->cfg.error_ratio_k);
    snprintf(name, sizeof name, "ratio_%d", index);
    outputs(f, name, cmd, 900);
    fputs("set autoscale y\n", f);
    row->has_ratio_plot = 1;
}

/* ---- routing: each expert's share of the routed tokens over the steps ---------------------- */

/* one datablock row per plotted step: the step, then each expert's share of the step's counts
 * in layer (or summed over the layers when layer < 0); at most REPORT_PLOT_POINTS rows, evenly
 * strided (shares move slowly, so a stride keeps their course) */
static void routing_data(FILE *f, int index, const routing_table *t, int layer)
{
    fprintf(f, "$routing%d << EOD\n", index);
    int stride = t->n > REPORT_PLOT_POINTS ? (t->n + REPORT_PLOT_POINTS - 1) / REPORT_PLOT_POINTS
                                           : 1;
    for (int i = 0; i < t->n; i += stride) {
        const int64_t *c = routing_counts(t, i);
        double total = 0;
        for (int l = 0; l < t->layers; l++)
            for (int e = 0; e < t->experts; e++)
                total += layer < 0 || l == layer ? (double)c[(size_t)l * t->experts + e] : 0;
        fprintf(f, "%d", t->steps[i]);
        for (int e = 0; e < t->experts; e++) {
            double sum = 0;
            for (int l = 0; l < t->layers; l++)
                sum += layer < 0 || l == layer ? (double)c[(size_t)l * t->experts + e] : 0;
            put_num(f, total > 0 ? sum / total : NAN);
        }
        fputc('\n', f);
    }
    fputs("EOD\n", f);
}

static void routing_plot(FILE *f, report_row *row, int index, const judgement *j)
{
    const routing_drift *d = &row->res.routing;
    int layer = row->has_baseline && d->max_abs > 0 ? d->max_abs_layer : -1;
    routing_data(f, index, &j->run.routing, layer);
    char text[1200], where[96];
    if (layer >= 0)
        snprintf(where, sizeof where, "layer %d (the most drift from the baseline)", layer);
    else
        snprintf(where, sizeof where, "summed over %d MoE layers", j->run.routing.layers);
    snprintf(text, sizeof text, "share of routed tokens per expert, %s: %s on %s, run %lld", where,
             row->scenario, row->device, (long long)row->run_id);
    title(f, "title", text);
    fputs("unset logscale y\nset format y '%g'\nset xlabel 'step'\n"
          "set ylabel 'share of routed tokens'\nset yrange [0:*]\n", f);
    char cmd[400], name[32];
    snprintf(cmd, sizeof cmd, "plot for [e=2:%d] $routing%d using 1:e with lines lw 1.5 "
                              "title sprintf('expert %%d', e - 2)",
             j->run.routing.experts + 1, index);
    snprintf(name, sizeof name, "routing_%d", index);
    outputs(f, name, cmd, 900);
    fputs("set autoscale y\n", f);
    row->routing_plot_layer = layer;
    row->has_routing_plot = 1;
}

/* steps present in both run and baseline (both step lists increase) */
static int common_steps(const baseline *run, const baseline *base)
{
    int n = 0;
    for (int a = 0, b = 0; a < run->n_steps && b < base->n_steps;) {
        int r = run->steps[a].step, q = base->steps[b].step;
        n += r == q;
        a += r <= q;
        b += q <= r;
    }
    return n;
}

/* A plot needs a point: gnuplot refuses one with no data at all ("x range is invalid"), which
 * failed the whole report for a run that recorded no step (one that failed at its first) or
 * a baseline with no step in common; such a row has no loss or |dloss| plot. */
int report_plot_row(plotter *p, report_row *row, int index, const judgement *j)
{
    FILE *f = p->script[index % N_SCRIPTS];
    plots_dir = p->dir;
    if (j->run.n_steps > 0 || (row->has_baseline && j->base.n_steps > 0)) {
        loss_plot(f, row, index, j);
        row->has_loss_plot = 1;
    }
    if (row->has_baseline && common_steps(&j->run, &j->base) > 0) {
        dloss_plot(f, row, index, j);
        row->has_dloss_plot = 1;
    }
    if (row->has_baseline && j->has_golden && row->res.error_ratio.compared)
        ratio_plot(f, row, index, j);
    if (j->run.routing.n > 0)
        routing_plot(f, row, index, j);
    return ferror(f) ? EXIT_FAIL : 0;
}

/* ---- throughput and memory bars ----------------------------------------------------------- */

static void bar_xtics(FILE *f, const report *r)
{
    fputs("set xtics rotate by 30 right (", f);
    for (int i = 0; i < r->n; i++) {
        const report_row *w = &r->rows[i];
        char label[700];
        snprintf(label, sizeof label, "%.200s on %.200s (run %lld)", w->scenario, w->device,
                 (long long)w->run_id);
        fprintf(f, "%s", i ? ", " : "");
        esc_gnuplot(f, label);
        fprintf(f, " %d", i);
    }
    fputs(")\n", f);
}

static void bars(FILE *f, const report *r, const char *name, const char *ylabel, double scale,
                 int memory)
{
    int any = 0; /* a log without step times or memory (a Trainer's) has no bar at all */
    fprintf(f, "$%s << EOD\n", name);
    for (int i = 0; i < r->n; i++) {
        const report_row *w = &r->rows[i];
        double run = memory ? w->mem_peak : w->tokens_per_s;
        double base = !w->has_baseline ? NAN : memory ? w->res.base_mem_peak
                                                      : w->res.base_tokens_per_s;
        any |= isfinite(run / scale) || isfinite(base / scale);
        fprintf(f, "%d", i);
        put_num(f, run / scale);
        put_num(f, base / scale);
        fputc('\n', f);
    }
    fputs("EOD\n", f);
    fprintf(f, "set title '%s per run, with its baseline'\nunset logscale y\nset format y '%%g'\n"
               "set xlabel ''\nset ylabel '%s'\nset yrange [0:%s]\nset xrange [-0.5:%d.5]\n"
               "set boxwidth 0.4\nset style fill solid 0.8\n", ylabel, ylabel, any ? "*" : "1",
            r->n - 1);
    if (!any) /* gnuplot refuses a plot whose every point is undefined */
        fprintf(f, "set label 1 'no run or baseline has a %s figure' at graph 0.5,0.5 center\n",
                ylabel);
    bar_xtics(f, r);
    char cmd[512];
    if (any)
        snprintf(cmd, sizeof cmd, "plot $%s using ($1-0.2):2 with boxes ls 1 title 'run', "
                                  "$%s using ($1+0.2):3 with boxes ls 2 title 'baseline'",
                 name, name);
    else
        snprintf(cmd, sizeof cmd, "plot $%s using 1:(0) with points pt 0 notitle", name);
    int width = 900 + (r->n > 15 ? 40 * (r->n - 15) : 0);
    outputs(f, name, cmd, width > 8000 ? 8000 : width);
    fputs("unset label 1\nset xtics autofreq norotate\nset autoscale\n", f);
}

/* ---- running gnuplot ---------------------------------------------------------------------- */

/* starts `gnuplot plots_K.gp` in dir with stdout and stderr into plots_K.log; no shell */
static pid_t start_gnuplot(const char *dir, int k)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char script[32], log[32];
    snprintf(script, sizeof script, "plots_%d.gp", k);
    snprintf(log, sizeof log, "plots_%d.log", k);
    if (chdir(dir) != 0)
        _exit(126);
    unlink(log); /* made afresh: never written through a link planted there */
    int fd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0666);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    execlp("gnuplot", "gnuplot", script, (char *)NULL);
    _exit(127);
}

static int wait_gnuplot(const plotter *p, pid_t pid, int k)
{
    int status = 0;
    if (pid < 0) {
        log_error("report: cannot start gnuplot: %s", strerror(errno));
        return EXIT_FAIL;
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return EXIT_FAIL;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char how[64];
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        log_error("report: gnuplot is not installed (apt-get install gnuplot-nox), or cannot run");
        return EXIT_FAIL;
    }
    if (WIFEXITED(status))
        snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(how, sizeof how, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(how, sizeof how, "wait status %d", status);
    log_error("report: gnuplot failed on %s/plots_%d.gp (%s); its messages are in "
              "%s/plots_%d.log", p->dir, k, how, p->dir, k);
    return EXIT_FAIL;
}

int report_plot_end(plotter *p, report *r)
{
    int rc = 0;
    plots_dir = p->dir;
    if (r->n > 0) {
        bars(p->script[0], r, "throughput", "tokens/s", 1, 0);
        bars(p->script[N_SCRIPTS - 1], r, "memory", "peak memory (MiB)", 1048576.0, 1);
    }
    for (int k = 0; k < N_SCRIPTS; k++)
        if (ferror(p->script[k]) | fclose(p->script[k]))
            rc = EXIT_FAIL;
    if (rc)
        log_error("report: writing the gnuplot scripts in %s failed", p->dir);
    fflush(NULL);
    pid_t pids[N_SCRIPTS];
    int started = 0;
    for (; started < N_SCRIPTS && !rc; started++)
        pids[started] = start_gnuplot(p->dir, started);
    for (int k = 0; k < started; k++)
        rc |= wait_gnuplot(p, pids[k], k);
    r->plots = rc == 0;
    free(p);
    return rc;
}
