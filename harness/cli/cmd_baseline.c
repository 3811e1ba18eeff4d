/* harness/cli/cmd_baseline.c: `harness baseline record RUN --label NAME` (a stored run to a baseline
 * file), `baseline import FILE` (a file into the store), `baseline list`, and by URL `baseline
 * pull URL --sha256 HEX` (download, verify, import) and `baseline push FILE URL` (HTTP PUT). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "judge/judge.h"
#include "runner/runner.h"
#include "util/output_target.h"
#include "util/util.h"
#include "commands.h"

static void baseline_usage(void)
{
    printf("usage: harness baseline record RUN --label NAME [--dir DIR | --out FILE] [--db FILE]\n"
           "       harness baseline record SCENARIO --ensemble N --label NAME [--device cpu|cpu64]\n"
           "                               [--dir DIR | --out FILE] [--db FILE]\n"
           "       harness baseline import FILE [--label NAME] [--replace] [--db FILE]\n"
           "       harness baseline list [--db FILE] [--json]\n"
           "       harness baseline pull URL --sha256 HEX [--label NAME] [--replace] [--db FILE]\n"
           "       harness baseline push FILE URL\n\n"
           "A baseline is a finished run of a scenario on a reference device, kept as a text\n"
           "file that diffs well (docs/baselines.md) and labelled in the store per scenario.\n\n"
           "  record   writes run RUN (status ok) to DIR/SCENARIO.NAME.baseline (DIR default\n"
           "           baselines) or to --out FILE, and labels the run NAME in the store\n"
           "  record --ensemble N  trains SCENARIO N times (2 to 8) on a cpu backend, run p\n"
           "           with GEMM sums in another order (perturbation p, p = 0..N-1; 0 is the\n"
           "           normal run), records each run, and writes their per-step mean and\n"
           "           standard deviation as an ensemble baseline (format 3), imported into\n"
           "           the store and labelled NAME (docs/compare.md)\n"
           "  import   loads FILE into the store as a run and labels it (the file's label, or\n"
           "           --label); a label that already names a different run needs --replace\n"
           "  list     the labels in the store with their runs and metadata\n"
           "  pull     downloads URL, checks its sha256 against HEX, then imports it as import\n"
           "           does (kept in HARNESS_BASELINE_CACHE or ~/.cache/harness/baselines)\n"
           "  push     uploads FILE to URL with an HTTP PUT and prints its sha256 and the pull\n"
           "           command; HARNESS_BASELINE_TOKEN is sent as a bearer token (docs/fetch.md)\n\n"
           "  --db FILE  the store (default %s)\n\n"
           "Exit codes: 0 done, 1 a write failed, 2 usage or input error (malformed file, no\n"
           "such run, a run that did not finish ok).\n",
           DEFAULT_DB);
}

typedef struct {
    const char *label, *dir, *out, *db, *sha256, *ensemble, *device;
    int replace, json;
    int db_given; /* --db was on the command line (else db is the default) */
    const char *pos[3];
    int n_pos;
} bl_args;

static int parse_bl_args(int argc, char **argv, bl_args *a)
{
    memset(a, 0, sizeof *a);
    const cmd_opt opts[] = {
        {"--label", &a->label, NULL}, {"--dir", &a->dir, NULL},
        {"--out", &a->out, NULL},     {"--db", &a->db, NULL},
        {"--replace", NULL, &a->replace}, {"--json", NULL, &a->json},
        {"--sha256", &a->sha256, NULL}, {"--ensemble", &a->ensemble, NULL},
        {"--device", &a->device, NULL},
        {NULL, NULL, NULL},
    };
    int rc = cmd_parse(argc, argv, opts, a->pos, 3, &a->n_pos);
    a->db_given = a->db != NULL;
    if (!a->db)
        a->db = DEFAULT_DB;
    if (rc == 1)
        baseline_usage();
    return rc == 1 ? -1 : rc;
}

static int need_existing_db(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0)
        return 0;
    log_error("no database at %s (see --db)", path);
    return EXIT_USAGE;
}

/* ---- record ------------------------------------------------------------------------------- */

static int record_path(const bl_args *a, const baseline *b, char *out, size_t len)
{
    if (a->out) {
        snprintf(out, len, "%s", a->out);
        return 0;
    }
    const char *dir = a->dir ? a->dir : "baselines";
    baseline_file_name(dir, b->scenario, b->label, out, len);
    const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
    if (strlen(base) > NAME_MAX) {
        log_error("baseline record: the file name for label '%.40s...' of %s would be %zu bytes "
                  "(at most %d): give a shorter --label, or --out FILE", term_safe(b->label),
                  term_safe(b->scenario), strlen(base), NAME_MAX);
        return EXIT_USAGE;
    }
    if (output_names_store(out, a->db, NULL, 0)) {
        log_error("baseline record: %s is the store (--db %s) or one of its files: give --out "
                  "FILE", out, a->db);
        return EXIT_USAGE;
    }
    if (baseline_file_of_other_scenario(out, b)) {
        log_error("baseline record: %s holds another baseline (another scenario or label whose "
                  "name makes the same file name as label '%s' of '%s'): give --out FILE", out,
                  term_safe(b->label), term_safe(b->scenario));
        return EXIT_USAGE;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        log_error("baseline record: cannot create the folder %s: %s", dir, strerror(errno));
        return EXIT_FAIL;
    }
    return 0;
}

/* 0 when d is an existing folder this process may write into */
static int writable_dir(const char *d)
{
    struct stat sb;
    return stat(d, &sb) == 0 && S_ISDIR(sb.st_mode) && access(d, W_OK | X_OK) == 0 ? 0 : -1;
}

/* Where record writes, checked before anything is trained, labelled or written: --out FILE
 * not a folder and in a writable folder; --dir DIR (default baselines) a writable folder, or
 * missing in a writable one (record creates it). 0, or 2 after a message. */
static int check_record_place(const bl_args *a)
{
    char parent[4200];
    struct stat sb;
    if (a->out) {
        const char *base = strrchr(a->out, '/') ? strrchr(a->out, '/') + 1 : a->out;
        if (strlen(a->out) >= PATH_MAX || strlen(base) > NAME_MAX)
            return cmd_usage_error("baseline", "--out %.64s...: the path is too long (at most "
                                               "%d bytes, a name at most %d)", a->out,
                                   PATH_MAX - 1, NAME_MAX);
        path_dirname(a->out, parent, sizeof parent);
        if (output_names_store(a->out, a->db, NULL, 0))
            return cmd_usage_error("baseline", "--out %s is the store (--db %s) or one of its "
                                               "files: the baseline would be written over it",
                                   a->out, a->db);
        if (stat(a->out, &sb) == 0 && S_ISDIR(sb.st_mode))
            return cmd_usage_error("baseline", "--out %s is a folder: give a file name (or "
                                               "--dir DIR)", a->out);
        if (writable_dir(parent))
            return cmd_usage_error("baseline", "--out %s: its folder %s is not a folder this "
                                               "process can write into", a->out, parent);
        return 0;
    }
    const char *dir = a->dir ? a->dir : "baselines";
    if (stat(dir, &sb) == 0) {
        if (writable_dir(dir))
            return cmd_usage_error("baseline", "--dir %s: not a folder this process can write "
                                               "into", dir);
        return 0;
    }
    char bare[4200]; /* "newdir/" names the folder newdir: its parent is ".", not newdir */
    snprintf(bare, sizeof bare, "%s", dir);
    for (size_t n = strlen(bare); n > 1 && bare[n - 1] == '/'; n--)
        bare[n - 1] = 0;
    path_dirname(bare, parent, sizeof parent);
    if (writable_dir(parent))
        return cmd_usage_error("baseline", "--dir %s: missing, and %s is not a folder where "
                                           "it can be made", dir, parent);
    return 0;
}

static int record_ensemble(const bl_args *a);
static int label_findable(const char *label, const char *file);

/* a member of an ensemble trained with a perturbed GEMM order: not a baseline of its own (its
 * ensemble is, recorded by record --ensemble). 0, or 2 after a message (1, 2: no such run) */
static int refuse_member(store *st, int64_t id)
{
    run_row r;
    int rc = store_get_run(st, id, &r);
    if (rc || !r.ensemble_member)
        return rc ? EXIT_USAGE : 0;
    log_error("baseline record: run %lld is a member of an ensemble (trained with a perturbed "
              "GEMM summation order; run_extra %s): it is no baseline of its own; record a "
              "plain run, or the ensemble with 'baseline record SCENARIO --ensemble N'",
              (long long)id, STORE_ENSEMBLE_MEMBER_KEY);
    return EXIT_USAGE;
}

static int record(const bl_args *a)
{
    int64_t id;
    if (a->ensemble || a->device)
        return record_ensemble(a);
    if (a->n_pos != 2 || !a->label || !a->label[0])
        return cmd_usage_error("baseline", "record needs a run id and --label NAME");
    if (label_findable(a->label, NULL))
        return EXIT_USAGE;
    if (a->out && a->dir)
        return cmd_usage_error("baseline", "give --out FILE or --dir DIR, not both");
    int rc = cmd_run_id("baseline", "record RUN", a->pos[1], &id);
    store *st = NULL;
    if (rc || (rc = check_record_place(a)) || (rc = need_existing_db(a->db)) ||
        (rc = store_open_existing(a->db, &st)))
        return rc;
    baseline b;
    char path[4200];
    memset(&b, 0, sizeof b);
    if (store_is_readonly(st)) { /* the label cannot be kept: write no file either */
        log_error("%s: baseline record labels the run in the store, and the store is "
                  "write-protected here (its file or folder is not writable by this process)",
                  a->db);
        rc = EXIT_FAIL;
    } else if ((rc = refuse_member(st, id)) != 0) {
        /* said */
    } else if ((rc = baseline_from_run(st, id, a->label, &b)) != 0 ||
        (rc = baseline_add_host_facts(st, id, &b)) != 0) {
        rc = EXIT_USAGE;
    } else if (strcmp(b.status, "ok") != 0) {
        log_error("baseline record: run %lld is %s: a baseline must be a finished run (ok)",
                  (long long)id, b.status);
        rc = EXIT_USAGE;
    } else if (!b.scenario_hash[0]) { /* the file would not import: say so before writing it */
        log_error("baseline record: run %lld has no scenario (an exec or ingest without "
                  "--scenario): record it again with --scenario FILE", (long long)id);
        rc = EXIT_USAGE;
    } else if ((rc = record_path(a, &b, path, sizeof path)) == 0 &&
               (rc = baseline_save(path, &b)) == 0 &&
               (rc = store_set_baseline(st, b.scenario, b.label, id)) == 0) {
        printf("baseline '%s' of %s: run %lld (%s, %s, %d steps) -> %s\n", term_safe(b.label),
               term_safe(b.scenario), (long long)id, term_safe(b.device),
               term_safe(b.device_name), b.n_steps, term_safe(path));
    }
    baseline_free(&b);
    store_close(st);
    return rc;
}

/* ---- record --ensemble -------------------------------------------------------------------- */

/* the per-step mean of the members' grad norms into b (NaN where a member has none) */
static void mean_grad_norm(baseline *b, const baseline *m, int members)
{
    for (int i = 0; i < b->n_steps; i++) {
        double sum = 0;
        for (int k = 0; k < members; k++) {
            int j = 0;
            while (j < m[k].n_steps && m[k].steps[j].step < b->steps[i].step)
                j++;
            sum += j < m[k].n_steps && m[k].steps[j].step == b->steps[i].step
                       ? m[k].steps[j].grad_norm
                       : NAN;
        }
        b->steps[i].grad_norm = sum / members;
    }
}

/* b (member 0's run, steps kept where every member has them) with the members' mean loss,
 * its std and their ids */
static int ensemble_fill(baseline *b, const baseline *m, int members, const int64_t *ids)
{
    const step_record *runs[ENSEMBLE_MAX_RUNS];
    int n[ENSEMBLE_MAX_RUNS], *steps = malloc(sizeof *steps * (size_t)(b->n_steps + 1)), kept = 0;
    double *mean = malloc(sizeof *mean * (size_t)(b->n_steps + 1));
    b->loss_std = malloc(sizeof *b->loss_std * (size_t)(b->n_steps + 1));
    for (int k = 0; k < members; k++)
        runs[k] = m[k].steps, n[k] = m[k].n_steps;
    int rc = !steps || !mean || !b->loss_std ||
             ensemble_stats(runs, n, members, steps, mean, b->loss_std, &kept);
    for (int i = 0, j = 0; !rc && i < kept; i++) { /* steps[] is a subsequence of b's */
        while (b->steps[j].step != steps[i])
            j++;
        b->steps[i] = b->steps[j];
        b->steps[i].loss = mean[i];
    }
    b->n_steps = rc ? b->n_steps : kept;
    b->ensemble_runs = members;
    char list[8 * 24] = "";
    for (int k = 0; k < members; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%lld", k ? " " : "",
                 (long long)ids[k]);
    if (!rc)
        mean_grad_norm(b, m, members);
    rc = rc || baseline_set_extra(b, "ensemble_members", list) ||
         baseline_set_extra(b, "ensemble_perturbation", "cpu GEMM K summed in blocks of 8p "
                                                       "terms, run p = 0..N-1 (0: the normal bits)");
    free(steps);
    free(mean);
    if (rc)
        log_error("baseline record --ensemble: out of memory for %d steps", b->n_steps);
    return rc ? EXIT_USAGE : 0;
}

/* the ensemble baseline of the member runs ids[0..members) labelled label */
static int ensemble_baseline(store *st, const int64_t *ids, int members, const char *label,
                             baseline *b)
{
    baseline m[ENSEMBLE_MAX_RUNS];
    int rc = 0, read = 0;
    for (; read < members && !rc; read++)
        rc = baseline_from_run(st, ids[read], label, &m[read]) ? EXIT_USAGE : 0;
    if (rc)
        read--;
    if (!rc && (rc = baseline_from_run(st, ids[0], label, b) ? EXIT_USAGE : 0) == 0 &&
        (rc = baseline_add_host_facts(st, ids[0], b) ? EXIT_USAGE : 0) == 0) {
        baseline_remove_extra(b, STORE_ENSEMBLE_MEMBER_KEY); /* member 0's mark: not the mean's */
        rc = ensemble_fill(b, m, members, ids);
    }
    for (int k = 0; k < read; k++)
        baseline_free(&m[k]);
    return rc;
}

/* the ensemble imported, labelled and written to its file */
static int save_ensemble(const bl_args *a, store *st, baseline *b)
{
    char path[4200];
    int64_t id;
    int rc = record_path(a, b, path, sizeof path);
    if (!rc && (rc = baseline_import(st, b, &id)) == 0 &&
        (rc = store_set_baseline(st, b->scenario, b->label, id)) == 0 &&
        (rc = baseline_save(path, b)) == 0)
        printf("ensemble baseline '%s' of %s: mean and std of %d runs, %d steps -> run %lld, "
               "%s\n", term_safe(b->label), term_safe(b->scenario), b->ensemble_runs,
               b->n_steps, (long long)id, term_safe(path));
    return rc;
}

/* a label `--baseline` can name: all digits there is a run id, one with '/' or ending in
 * ".baseline" a file (docs/compare.md), so such a label could be stored but never found. file:
 * the baseline file whose label line it is, named in the message, or NULL. 0 or 2 */
static int label_findable(const char *label, const char *file)
{
    size_t n = strlen(label);
    if (n > 255) /* a file's label line is refused past 255 bytes: never cut (mid-character) */
        return cmd_usage_error("baseline", "%s%slabel of %zu bytes: at most 255", file ? term_safe(file) : "",
                               file ? ": " : "", n);
    const char *what = n && strspn(label, "0123456789") == n ? "is all digits (a run id there)"
                       : strchr(label, '/')                   ? "holds '/' (a file there)"
                       : n >= 9 && strcmp(label + n - 9, ".baseline") == 0
                           ? "ends in .baseline (a file there)"
                           : NULL;
    if (!what)
        return 0;
    return cmd_usage_error("baseline", "%s%slabel '%s' %s: `--baseline %s` would never find it; "
                                       "choose another", file ? term_safe(file) : "",
                           file ? ": " : "", term_safe(label), what, term_safe(label));
}

static int record_ensemble(const bl_args *a)
{
    double members = 0;
    if (!a->ensemble)
        return cmd_usage_error("baseline", "--device goes with record --ensemble N");
    if (a->n_pos != 2 || !a->label || !a->label[0])
        return cmd_usage_error("baseline", "record --ensemble needs a scenario file and --label "
                                           "NAME");
    if (label_findable(a->label, NULL))
        return EXIT_USAGE;
    if (a->out && a->dir)
        return cmd_usage_error("baseline", "give --out FILE or --dir DIR, not both");
    if (!a->ensemble[0] || strspn(a->ensemble, "0123456789") != strlen(a->ensemble))
        return cmd_usage_error("baseline", "--ensemble: '%s' is not a whole number (digits "
                                           "only)", a->ensemble);
    if (cmd_number("baseline", "--ensemble", a->ensemble, ENSEMBLE_MIN_RUNS, ENSEMBLE_MAX_RUNS,
                   &members))
        return EXIT_USAGE;
    if ((a->device && cmd_nonempty("baseline", "--device", a->device)) ||
        cmd_nonempty("baseline", "SCENARIO", a->pos[1]) || cmd_nonempty("baseline", "--label",
                                                                        a->label) ||
        check_record_place(a))
        return EXIT_USAGE;
    run_args ra = {.scenario = a->pos[1], .device = a->device ? a->device : "cpu", .db = a->db,
                   .quiet = 1};
    int64_t ids[ENSEMBLE_MAX_RUNS] = {0};
    int rc = runner_run_ensemble(&ra, (int)members, ids);
    store *st = NULL;
    if (rc || (rc = store_open(a->db, &st)))
        return rc;
    baseline b;
    memset(&b, 0, sizeof b);
    if ((rc = ensemble_baseline(st, ids, (int)members, a->label, &b)) == 0)
        rc = save_ensemble(a, st, &b);
    baseline_free(&b);
    store_close(st);
    return rc;
}

/* ---- import ------------------------------------------------------------------------------- */

/* 0: the label is free or names the same content (*same set); 2: it names another run */
static int check_label(store *st, const baseline *b, int replace, int *same, int64_t *id)
{
    *same = 0;
    int rc = store_find_baseline(st, b->scenario, b->label, id);
    if (rc == 1)
        return 0;
    if (rc)
        return EXIT_USAGE;
    baseline stored;
    if (baseline_from_run(st, *id, b->label, &stored))
        return EXIT_USAGE;
    *same = baseline_same(&stored, b);
    baseline_free(&stored);
    if (*same || replace)
        return 0;
    log_error("baseline import: label '%s' of scenario %s already names run %lld, whose content "
              "differs; pass --replace to point it at the imported run", b->label, b->scenario,
              (long long)*id);
    return EXIT_USAGE;
}

/* the label checked, the run imported and labelled in one write transaction: two imports at
 * once (or an import beside a compare's first use of the file) made two copies, or moved a
 * label without --replace, when each step was a transaction of its own */
static int import_locked(const bl_args *a, store *st, baseline *b, const char *path)
{
    int same = 0;
    int64_t id = 0;
    int rc = store_write_begin(st, "locking the store to import a baseline");
    if (rc)
        return rc;
    if ((rc = check_label(st, b, a->replace, &same, &id)) == 0 && !same &&
        (rc = baseline_import(st, b, &id)) == 0)
        rc = store_set_baseline(st, b->scenario, b->label, id);
    if ((rc = store_write_end(st, rc)) != 0)
        return rc;
    if (same)
        printf("baseline '%s' of %s: already in the store as run %lld\n", term_safe(b->label),
               term_safe(b->scenario), (long long)id);
    else
        printf("baseline '%s' of %s: %s imported as run %lld (%d steps)\n", term_safe(b->label),
               term_safe(b->scenario), term_safe(path), (long long)id, b->n_steps);
    return 0;
}

static int import_path(const bl_args *a, const char *path)
{
    baseline b;
    if (a->label && label_findable(a->label, NULL)) /* before it is copied (and cut) */
        return EXIT_USAGE;
    int rc = baseline_read(path, &b);
    if (rc)
        return rc;
    if (a->label)
        snprintf(b.label, sizeof b.label, "%s", a->label);
    store *st = NULL;
    if (!b.label[0])
        rc = cmd_usage_error("baseline", "%s has no label: give --label NAME", path);
    else if (label_findable(b.label, a->label ? NULL : path))
        rc = EXIT_USAGE;
    else if ((rc = store_open(a->db, &st)) == 0)
        rc = import_locked(a, st, &b, path);
    store_close(st);
    baseline_free(&b);
    return rc;
}

static int import_file(const bl_args *a)
{
    if (a->n_pos != 2)
        return cmd_usage_error("baseline", "import needs one baseline file");
    return import_path(a, a->pos[1]);
}

/* ---- by URL ------------------------------------------------------------------------------- */

static int pull(const bl_args *a)
{
    if (a->n_pos != 2 || !a->sha256)
        return cmd_usage_error("baseline", "pull needs a URL and --sha256 HEX (its digest, as "
                                           "push printed it)");
    /* the label and the store first: nothing is fetched (and kept) for an import that would
     * be refused */
    if (a->label && label_findable(a->label, NULL))
        return EXIT_USAGE;
    store *st = NULL;
    if (store_file_has_data(a->db) && store_open(a->db, &st) != 0)
        return EXIT_USAGE;
    store_close(st);
    char path[4096];
    int fetched = 0;
    int rc = baseline_url_fetch(a->pos[1], a->sha256, path, sizeof path, &fetched);
    if (rc)
        return rc;
    if ((rc = import_path(a, path)) != 0) { /* a label refused, no label: nothing kept */
        if (fetched)
            unlink(path);
        log_error("%s: not imported (above)%s", term_safe(a->pos[1]),
                  fetched ? "; the download is not kept" : "");
        return rc;
    }
    printf("baseline %s: sha256 verified, %s\n", term_safe(a->pos[1]), term_safe(path));
    return 0;
}

static int push(const bl_args *a)
{
    if (a->n_pos != 3)
        return cmd_usage_error("baseline", "push needs a baseline FILE and a URL");
    baseline b; /* only a well-formed baseline leaves the machine */
    char sha[65];
    int rc = baseline_read(a->pos[1], &b);
    if (rc)
        return rc;
    baseline_free(&b);
    if ((rc = baseline_url_push(a->pos[1], a->pos[2], sha)))
        return rc;
    printf("baseline %s -> %s (sha256 %s)\npull it with: harness baseline pull %s --sha256 %s\n",
           term_safe(a->pos[1]), term_safe(a->pos[2]), sha, term_safe(a->pos[2]), sha);
    return 0;
}

/* ---- list --------------------------------------------------------------------------------- */

typedef struct {
    store *st;
    int json;
    json_t *array;
    int count;
} list_ctx;

static int print_extra(const char *key, const char *value, void *arg)
{
    (void)arg;
    printf("    %s: %s\n", term_safe(key), term_safe(value));
    return 0;
}

static int add_extra(const char *key, const char *value, void *arg)
{
    json_object_set_new(arg, key, json_text(value));
    return 0;
}

static json_t *list_json(const baseline_row *b, const run_row *r, store *st)
{
    json_t *o = json_object(), *extra = json_object();
    json_object_set_new(o, "scenario", json_text(b->scenario));
    json_object_set_new(o, "label", json_text(b->label));
    json_object_set_new(o, "run", json_integer(b->run_id));
    json_object_set_new(o, "device", json_text(r->device));
    json_object_set_new(o, "device_name", json_text(r->device_name));
    json_object_set_new(o, "dtype", json_text(r->dtype));
    json_object_set_new(o, "steps", json_integer(r->n_steps));
    json_object_set_new(o, "date", json_text(r->started_at));
    json_object_set_new(o, "labelled_at", json_text(b->created_at));
    store_each_run_extra(st, b->run_id, add_extra, extra);
    json_object_set_new(o, "extra", extra);
    return o;
}

static int list_one(const baseline_row *b, void *arg)
{
    list_ctx *c = arg;
    run_row r;
    if (store_get_run(c->st, b->run_id, &r))
        return EXIT_USAGE;
    c->count++;
    if (c->json) {
        json_array_append_new(c->array, list_json(b, &r, c->st));
        return 0;
    }
    printf("%-24s %-12s %6lld  %-8s %-6s %6d  %-20s  %s\n", term_safe(b->scenario),
           term_safe(b->label), (long long)b->run_id, term_safe(r.device), term_safe(r.dtype),
           r.n_steps, term_safe(r.started_at), term_safe(r.device_name));
    return store_each_run_extra(c->st, b->run_id, print_extra, NULL);
}

static int list(const bl_args *a)
{
    if (a->n_pos != 1)
        return cmd_usage_error("baseline", "list takes no arguments");
    store *st = NULL;
    int rc = store_open_readonly(a->db, &st);
    if (rc)
        return rc;
    list_ctx c = {st, a->json, a->json ? json_array() : NULL, 0};
    if (!a->json)
        printf("%-24s %-12s %6s  %-8s %-6s %6s  %-20s  %s\n", "scenario", "label", "run",
               "device", "dtype", "steps", "date", "device name");
    rc = store_each_baseline(st, list_one, &c);
    store_close(st);
    if (a->json)
        return rc ? (json_decref(c.array), rc) : json_print(c.array, 0);
    if (!rc && c.count == 0)
        printf("(no baselines in %s)\n", term_safe(a->db));
    return rc;
}

/* every option given goes with the subcommand (the parser is shared: import took --json,
 * --device and --ensemble and ignored them); 0, or 2 after a message */
static int check_options_fit(const bl_args *a, const char *sub)
{
    static const struct {
        const char *sub, *allowed;
    } fits[] = {{"record", " --label --dir --out --db --ensemble --device "},
                {"import", " --label --replace --db "},
                {"list", " --db --json "},
                {"pull", " --sha256 --label --replace --db "},
                {"push", " "}};
    const struct {
        const char *name;
        int given;
    } given[] = {{"--label", a->label != NULL},     {"--dir", a->dir != NULL},
                 {"--out", a->out != NULL},         {"--db", a->db_given},
                 {"--sha256", a->sha256 != NULL},   {"--ensemble", a->ensemble != NULL},
                 {"--device", a->device != NULL},   {"--replace", a->replace},
                 {"--json", a->json}};
    const char *allowed = NULL;
    for (size_t i = 0; i < sizeof fits / sizeof fits[0]; i++)
        if (strcmp(fits[i].sub, sub) == 0)
            allowed = fits[i].allowed;
    if (!allowed)
        return 0; /* an unknown subcommand is said below */
    for (size_t i = 0; i < sizeof given / sizeof given[0]; i++) {
        char padded[32];
        snprintf(padded, sizeof padded, " %s ", given[i].name);
        if (given[i].given && !strstr(allowed, padded))
            return cmd_usage_error("baseline", "%s does not go with 'baseline %s'",
                                   given[i].name, sub);
    }
    return 0;
}

int cmd_baseline(int argc, char **argv)
{
    bl_args a;
    int rc = parse_bl_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? EXIT_PASS : rc;
    if (a.n_pos == 0)
        return cmd_usage_error("baseline", "give a subcommand: record, import, list, pull or push");
    if ((rc = check_options_fit(&a, a.pos[0])) != 0)
        return rc;
    if (strcmp(a.pos[0], "record") == 0)
        return record(&a);
    if (strcmp(a.pos[0], "import") == 0)
        return import_file(&a);
    if (strcmp(a.pos[0], "list") == 0)
        return list(&a);
    if (strcmp(a.pos[0], "pull") == 0)
        return pull(&a);
    if (strcmp(a.pos[0], "push") == 0)
        return push(&a);
    return cmd_usage_error("baseline", "unknown subcommand '%s' (record, import, list, pull, "
                                       "push)", a.pos[0]);
}
