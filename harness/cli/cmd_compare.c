/* harness/cli/cmd_compare.c: `harness compare RUN --baseline LABEL|RUN|FILE` (per-step loss and grad
 * norm within tolerance, throughput and memory ratios) and `harness compare RUN --history`. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/util.h"
#include "commands.h"
#include "judge/baseline_args.h"
#include "judge/judge.h"

static void compare_usage(void)
{
    printf(
        "usage: harness compare RUN [--baseline LABEL|RUN|FILE] [--force] [--warmup N]\n"
        "                           [--golden LABEL|RUN|FILE] [--verdict KIND]\n"
        "                           [--baselines DIR] [--db FILE] [--json]\n"
        "       harness compare RUN --history [--window N] [--k K] [--min-drop F]\n"
        "                           [--min-runs N] [--warmup N] [--db FILE] [--json]\n\n"
        "Holds a stored run against a baseline: every step's loss and grad norm within\n"
        "|x - ref| <= atol + rtol*|ref| (the scenario's tolerances, defaults per dtype), the\n"
        "median tokens/s after a warm-up and the peak memory as ratios to the baseline, gated\n"
        "when the scenario sets min_throughput_ratio / max_memory_ratio. When both sides of a\n"
        "sparse-MoE run have per-expert token counts, the routing drift too: per step the\n"
        "largest absolute and relative difference of one expert's count, the first step that\n"
        "differs, and (when the scenario sets expert_tokens_rtol) the first past that\n"
        "tolerance, which fails the verdict. The verdict (pass, fail, diverged, incomplete) is\n"
        "stored in the database. See docs/compare.md.\n\n"
        "  --baseline B   a label (the store's, else the committed file\n"
        "                 baselines/SCENARIO.LABEL.baseline, imported on first use), a run id,\n"
        "                 or a baseline file (a path with '/' or ending in .baseline).\n"
        "                 Default: the label the run's scenario names (\"baseline\")\n"
        "  --force        compare even though run and baseline ran different scenarios\n"
        "  --warmup N     steps left out of the throughput median (default n/10, 1..10)\n"
        "  --golden G     the golden (fp64 cpu64) run the error ratio is measured against:\n"
        "                 a label, a run id or a file. Default: the store's label 'golden'\n"
        "                 of the scenario ('harness run SCENARIO --golden' sets it), or the\n"
        "                 committed file SCENARIO.golden.baseline; none: no error ratio\n"
        "  --verdict K    the verdict that decides the exit code: band (every step within\n"
        "                 the tolerances), error_ratio (RMSE(run - golden) <= k *\n"
        "                 RMSE(baseline - golden) + floor) or ensemble (|loss - mean| <=\n"
        "                 k * std + floor against an ensemble baseline). Default: the\n"
        "                 scenario's tolerances.verdict, else band. The other figures are\n"
        "                 shown whenever their inputs exist\n"
        "  --baselines D  look for committed baseline files in D first\n"
        "  --history      hold the run's throughput against the previous ok runs of the same\n"
        "                 scenario on the same device name (runs of this machine: imported\n"
        "                 runs and ensemble members left out): flagged below\n"
        "                 median - max(K * 1.4826 * MAD, F * median)\n"
        "  --window N     previous runs looked at (default 20)\n"
        "  --k K          robust standard deviations (default 3)\n"
        "  --min-drop F   smallest relative drop flagged (default 0.05)\n"
        "  --min-runs N   fewer previous runs: no verdict, pass (default 3)\n"
        "                 (these four only with --history)\n"
        "  --db FILE      the store (default %s)\n"
        "  --json         print the result as JSON\n\n"
        "Exit codes: 0 pass, 1 fail, diverged or incomplete, 2 usage or input error.\n",
        DEFAULT_DB);
}

typedef struct {
    const char *baseline, *db, *warmup, *baselines, *window, *k, *min_drop, *min_runs;
    const char *golden, *verdict;
    int json, force, history;
    int64_t run_id;
    history_config history_cfg; /* --k, --min-drop, --min-runs over the defaults */
    int history_window;         /* --window; 0: the default */
} compare_args;

/* a whole-number option in [lo, hi] into *out: 0, or 2 after a message ("2.5" is refused, not
 * cut to 2) */
static int whole_option(const char *opt, const char *s, double lo, double hi, int *out)
{
    double v;
    if (cmd_number("compare", opt, s, lo, hi, &v))
        return EXIT_USAGE;
    if (v != (double)(int)v)
        return cmd_usage_error("compare", "%s: '%s' is not a whole number", opt, s);
    *out = (int)v;
    return 0;
}

/* --window, --k, --min-drop and --min-runs into a (checked before the store is opened); they
 * belong to --history, and are refused without it rather than ignored */
static int parse_history_options(compare_args *a)
{
    history_defaults(&a->history_cfg);
    a->history_window = 0;
    if (!a->history && (a->window || a->k || a->min_drop || a->min_runs))
        return cmd_usage_error("compare", "--window, --k, --min-drop and --min-runs belong to "
                                          "--history (give it, or leave them out)");
    if (a->window && whole_option("--window", a->window, 1, 100000, &a->history_window))
        return EXIT_USAGE;
    if (a->k && cmd_number("compare", "--k", a->k, 0, 1e6, &a->history_cfg.k))
        return EXIT_USAGE;
    if (a->min_drop &&
        cmd_number("compare", "--min-drop", a->min_drop, 0, 1, &a->history_cfg.min_drop))
        return EXIT_USAGE;
    if (a->min_runs &&
        whole_option("--min-runs", a->min_runs, 1, 100000, &a->history_cfg.min_runs))
        return EXIT_USAGE;
    return 0;
}

static int parse_compare_args(int argc, char **argv, compare_args *a, int *warmup)
{
    memset(a, 0, sizeof *a);
    a->db = DEFAULT_DB;
    const cmd_opt opts[] = {
        {"--baseline", &a->baseline, NULL}, {"--db", &a->db, NULL},
        {"--warmup", &a->warmup, NULL},     {"--baselines", &a->baselines, NULL},
        {"--window", &a->window, NULL},     {"--k", &a->k, NULL},
        {"--min-drop", &a->min_drop, NULL}, {"--min-runs", &a->min_runs, NULL},
        {"--json", NULL, &a->json},         {"--force", NULL, &a->force},
        {"--history", NULL, &a->history},   {"--golden", &a->golden, NULL},
        {"--verdict", &a->verdict, NULL},   {NULL, NULL, NULL},
    };
    const char *pos[1];
    int n = 0, rc = cmd_parse(argc, argv, opts, pos, 1, &n);
    if (rc == 1)
        compare_usage();
    if (rc)
        return rc == 1 ? -1 : rc;
    if (n != 1)
        return cmd_usage_error("compare", "give one run id");
    if (a->history && (a->baseline || a->baselines || a->force || a->golden || a->verdict))
        return cmd_usage_error("compare", "--history compares with the run's history, not with "
                                          "--baseline / --baselines / --force / --golden / "
                                          "--verdict");
    verdict_gate g;
    if (a->verdict && gate_parse(a->verdict, &g))
        return cmd_usage_error("compare", "--verdict: '%s' is not band, error_ratio or ensemble",
                               a->verdict);
    if (a->golden && (cmd_nonempty("compare", "--golden", a->golden) ||
                      golden_arg_check("compare", NULL, a->golden)))
        return EXIT_USAGE;
    if (parse_history_options(a))
        return EXIT_USAGE;
    *warmup = -1;
    if (a->warmup && whole_option("--warmup", a->warmup, 0, 1e8, warmup))
        return EXIT_USAGE;
    return cmd_run_id("compare", "RUN", pos[0], &a->run_id);
}

/* compare needs an existing store: never create an empty one by mistake */
static int open_existing(const char *path, store **st)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        log_error("no database at %s (see --db)", path);
        return EXIT_USAGE;
    }
    return store_open_existing(path, st);
}

static int compare_history(store *st, const compare_args *a, int warmup)
{
    history_judgement h;
    memset(&h, 0, sizeof h);
    h.cfg = a->history_cfg;
    h.window = a->history_window;
    h.warmup = warmup;
    int rc = judge_history(st, a->run_id, &h);
    if (!rc && judge_history_store(st, &h))
        rc = EXIT_FAIL;
    if (!rc) {
        if (a->json)
            json_print(judge_history_json(&h), 0);
        else
            judge_history_print(stdout, &h);
        rc = verdict_exit_code(h.v);
    }
    judge_history_free(&h);
    return rc;
}

static int compare_baseline(store *st, const compare_args *a, int warmup)
{
    baseline_query q = {a->baseline, NULL,      a->baselines, a->force,
                         warmup,      NULL,      a->golden,    a->verdict};
    judgement j;
    int rc = judge_run(st, a->run_id, &q, &j);
    if (!rc && judge_store(st, &j))
        rc = EXIT_FAIL;
    if (!rc) {
        if (a->json)
            json_print(judge_json(&j), 0);
        else
            judge_print(stdout, &j);
        rc = verdict_exit_code(j.res.v);
    }
    judge_free(&j);
    return rc;
}

int cmd_compare(int argc, char **argv)
{
    compare_args a;
    int warmup = -1;
    int rc = parse_compare_args(argc, argv, &a, &warmup);
    if (rc)
        return rc < 0 ? EXIT_PASS : rc;
    if ((rc = baseline_args_check("compare", a.baseline, a.baselines)) != 0)
        return rc;
    store *st = NULL;
    if ((rc = open_existing(a.db, &st)) != 0)
        return rc;
    rc = a.history ? compare_history(st, &a, warmup) : compare_baseline(st, &a, warmup);
    store_close(st);
    return rc;
}
