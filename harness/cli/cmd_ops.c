/* harness/cli/cmd_ops.c: `harness ops`: op conformance of devices against the cpu reference (test),
 * backward ops against finite differences (grad), per-op timings (perf); table, JSON or store. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/util.h"
#include "commands.h"
#include "device.h"
#include "ops/ops.h"

#define MAX_DEVICES 16
#define MAX_FILTERS 256 /* distinct names: more than the op table holds */
#define REFERENCE "cpu"

static void ops_usage(FILE *f)
{
    fprintf(f,
        "usage: harness ops [--device SPEC]... [--op NAME]... [--mode test|grad|perf] [--json]\n"
        "                   [--db FILE]\n\n"
        "Checks every op of the device interface on devices of this build.\n\n"
        "  --mode test   (default) run each op at several shapes on the device and on the cpu\n"
        "                reference with the same random inputs; NMSE against a per-op threshold,\n"
        "                guard regions around every buffer, outputs poisoned with NaN first\n"
        "  --mode grad   each backward op against central differences of its forward op, on\n"
        "                the device itself (relative L2 error)\n"
        "  --mode perf   microseconds per call (OpenCL profiling events on opencl, CUDA\n"
        "                events on cuda, wall clock after synchronize elsewhere), GFLOP/s and\n"
        "                GB/s; devices side by side\n"
        "  --device SPEC a device, repeatable or comma-separated (see 'harness devices').\n"
        "                Default: test mode every device of this build but cpu itself (cpu is\n"
        "                the reference; '--device cpu' compares it with itself: guards, poison\n"
        "                and NaN checks only); grad and perf modes every device, cpu included\n"
        "  --op NAME     only this op, repeatable or comma-separated (grad mode: the forward\n"
        "                or backward op's name)\n"
        "  --json        print a JSON array of results instead of tables\n"
        "  --db FILE     also record the results in table op_results of this store\n\n"
        "Exit codes: 0 every check passed, 1 a check failed, 2 usage error or a device that\n"
        "cannot be opened. Thresholds and their reasons: docs/ops.md.\n");
}

typedef struct {
    char devices[MAX_DEVICES][DEVICE_SPEC_MAX];
    int ndev;
    const char *ops[MAX_FILTERS];
    int nops;
    const char *mode, *db;
    int json;
} ops_args;

typedef struct {
    op_row *rows;
    int n, cap, failed;
} op_rows;

/* ---- arguments ------------------------------------------------------------------------------ */

/* the length of the comma list's item at p in *len; 0, or 2 after a message when the item is
 * empty ("a,,b", "a,", ",") or longer than max_len */
static int item_length(const char *option, const char *p, size_t *len, size_t max_len)
{
    *len = strcspn(p, ",");
    if (*len == 0)
        return cmd_usage_error("ops", "%s: an empty name in the comma list (expected "
                               "NAME[,NAME...])", option);
    if (*len > max_len)
        return cmd_usage_error("ops", "%s '%.60s...': longer than %zu bytes", option, p, max_len);
    return 0;
}

/* splits a comma list into the device specs */
static int add_devices(ops_args *a, const char *list)
{
    for (const char *p = list;;) {
        size_t len;
        if (item_length("--device", p, &len, sizeof a->devices[0] - 1))
            return EXIT_USAGE;
        if (a->ndev == MAX_DEVICES)
            return cmd_usage_error("ops", "more than %d devices: %s", MAX_DEVICES, list);
        snprintf(a->devices[a->ndev], sizeof a->devices[0], "%.*s", (int)len, p);
        for (int k = 0; k < a->ndev; k++) /* a table has one column per device */
            if (strcmp(a->devices[k], a->devices[a->ndev]) == 0)
                return cmd_usage_error("ops", "--device %s is given twice", a->devices[k]);
        a->ndev++;
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

/* an op filter: every name must be an op of the table (the list is cut in place) */
static int add_ops(ops_args *a, char *list)
{
    for (char *p = list;;) {
        size_t len;
        if (item_length("--op", p, &len, (size_t)-1))
            return EXIT_USAGE;
        int last = p[len] == 0;
        p[len] = 0;
        if (!oc_find(p)) {
            fprintf(stderr, "harness: error: ops: no op named '%s'; the ops are:", term_safe(p));
            for (int i = 0; i < oc_op_count(); i++)
                fprintf(stderr, " %s", oc_op_at(i)->name);
            fprintf(stderr, "\n");
            return EXIT_USAGE;
        }
        int seen = 0; /* a name given twice counts once, so every op can always be named */
        for (int i = 0; i < a->nops && !seen; i++)
            seen = strcmp(a->ops[i], p) == 0;
        if (!seen && a->nops == MAX_FILTERS)
            return cmd_usage_error("ops", "more than %d op filters at '%s'", MAX_FILTERS, p);
        if (!seen)
            a->ops[a->nops++] = p;
        if (last)
            return 0;
        p += len + 1;
    }
}

/* the value of option argv[*i] ("--opt VALUE" or "--opt=VALUE"), or NULL after a message */
static char *option_value(int argc, char **argv, int *i)
{
    char *eq = strchr(argv[*i], '=');
    if (eq)
        return eq + 1;
    if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) == 0) { /* "--db --device cpu" */
        cmd_usage_error("ops", "%s needs a value (the next argument, %s, is an option)",
                        argv[*i], argv[*i + 1]);
        return NULL;
    }
    if (*i + 1 < argc)
        return argv[++*i];
    cmd_usage_error("ops", "%s needs a value", argv[*i]);
    return NULL;
}

static int is_opt(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == 0 || arg[n] == '=');
}

/* grad mode checks only the ops a gradient case names (a backward op and its forward op): an
 * --op filter that names none of them would check nothing and pass; 0, or 2 after a message */
static int check_grad_filters(const ops_args *a)
{
    const oc_grad_case *cases;
    int n = oc_grad_cases(&cases);
    for (int f = 0; f < a->nops; f++) {
        int covered = 0;
        for (int i = 0; i < n && !covered; i++)
            covered = strcmp(a->ops[f], cases[i].fwd) == 0 || strcmp(a->ops[f], cases[i].bwd) == 0;
        if (covered)
            continue;
        fprintf(stderr, "harness: error: ops: --mode grad has no gradient check of '%s'; the "
                "checked ops are:", a->ops[f]);
        for (int i = 0; i < n; i++)
            if (i == 0 || strcmp(cases[i].bwd, cases[i - 1].bwd) != 0)
                fprintf(stderr, " %s/%s", cases[i].fwd, cases[i].bwd);
        fprintf(stderr, "\n");
        return EXIT_USAGE;
    }
    return 0;
}

/* perf mode: every named op must have a timed case, or the run would time nothing for it */
static int check_perf_filters(const ops_args *a)
{
    const oc_case *cases;
    int n = oc_perf_cases(&cases);
    for (int f = 0; f < a->nops; f++) {
        int covered = 0;
        for (int i = 0; i < n && !covered; i++)
            covered = strcmp(a->ops[f], cases[i].op->name) == 0;
        if (covered)
            continue;
        fprintf(stderr, "harness: error: ops: --mode perf has no timed case of '%s'; the timed "
                "ops are:", a->ops[f]);
        for (int i = 0; i < n; i++)
            if (i == 0 || cases[i].op != cases[i - 1].op)
                fprintf(stderr, " %s", cases[i].op->name);
        fprintf(stderr, "\n");
        return EXIT_USAGE;
    }
    return 0;
}

/* 0, -1 after printing help, or 2 after a message */
static int parse_ops_args(int argc, char **argv, ops_args *a)
{
    memset(a, 0, sizeof *a);
    a->mode = "test";
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char *v = NULL;
        int rc = 0;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            ops_usage(stdout);
            return -1;
        } else if (strcmp(arg, "--json") == 0) {
            a->json = 1;
        } else if (is_opt(arg, "--device") || is_opt(arg, "--op") || is_opt(arg, "--mode") ||
                   is_opt(arg, "--db")) {
            if (!(v = option_value(argc, argv, &i)))
                return EXIT_USAGE;
            if (!*v)
                return cmd_usage_error("ops", "%s needs a non-empty value", arg);
            if (is_opt(arg, "--device"))
                rc = add_devices(a, v);
            else if (is_opt(arg, "--op"))
                rc = add_ops(a, v);
            else if (is_opt(arg, "--mode"))
                a->mode = v;
            else
                a->db = v;
        } else {
            return cmd_usage_error("ops", "unknown argument '%s'", arg);
        }
        if (rc)
            return rc;
    }
    if (strcmp(a->mode, "test") && strcmp(a->mode, "grad") && strcmp(a->mode, "perf"))
        return cmd_usage_error("ops", "--mode must be test, grad or perf, not '%s'", a->mode);
    if (strcmp(a->mode, "perf") == 0)
        return check_perf_filters(a);
    return strcmp(a->mode, "grad") == 0 ? check_grad_filters(a) : 0;
}

/* every device of the build; test mode leaves out the reference itself */
static void default_devices(ops_args *a)
{
    device_info info[MAX_DEVICES];
    int n = device_list(info, MAX_DEVICES);
    for (int i = 0; i < n && a->ndev < MAX_DEVICES; i++)
        if (strcmp(a->mode, "test") != 0 || strcmp(info[i].spec, REFERENCE) != 0)
            snprintf(a->devices[a->ndev++], sizeof a->devices[0], "%.63s", info[i].spec);
}

/* round_lowp is optional (a device without it refuses bf16/fp16 scenarios): such a device has
 * nothing to check there, which the listing says once */
static int lacks_op(const device *d, const char *op, int *said)
{
    if (strcmp(op, "round_lowp") != 0 || d->round_lowp)
        return 0;
    if (!*said)
        printf("round_lowp: %s has none (bf16/fp16 scenarios are refused on it): not checked\n",
               d->backend);
    *said = 1;
    return 1;
}

static int selected(const ops_args *a, const char *name, const char *other)
{
    if (a->nops == 0)
        return 1;
    for (int i = 0; i < a->nops; i++)
        if (strcmp(a->ops[i], name) == 0 || (other && strcmp(a->ops[i], other) == 0))
            return 1;
    return 0;
}

/* ---- results -------------------------------------------------------------------------------- */

static op_row *new_row(op_rows *rs, const char *mode, const char *spec, const device *d,
                       const char *op)
{
    if (rs->n == rs->cap) {
        int cap = rs->cap ? 2 * rs->cap : 64;
        op_row *grown = realloc(rs->rows, (size_t)cap * sizeof *grown);
        if (!grown)
            return NULL;
        rs->rows = grown;
        rs->cap = cap;
    }
    op_row *r = &rs->rows[rs->n++];
    memset(r, 0, sizeof *r);
    r->mode = mode;
    snprintf(r->device, sizeof r->device, "%s", spec);
    snprintf(r->device_name, sizeof r->device_name, "%s", d->name);
    snprintf(r->dtype, sizeof r->dtype, "%s", d->dtype);
    snprintf(r->op, sizeof r->op, "%s", op);
    return r;
}

static void fmt_num(char *out, size_t len, double v)
{
    if (isnan(v))
        snprintf(out, len, "-");
    else if (v == 0)
        snprintf(out, len, "0");
    else
        snprintf(out, len, "%.2e", v);
}

static void print_header(const char *metric)
{
    printf("%-22s %-28s %-10s %-10s %-10s %s\n", "op", "shape", metric, "threshold", "max abs",
           "result");
}

static void print_row(const op_row *r)
{
    char m[32], t[32], x[32];
    fmt_num(m, sizeof m, r->res.metric);
    fmt_num(t, sizeof t, r->res.threshold);
    fmt_num(x, sizeof x, r->res.max_abs);
    printf("%-22s %-28s %-10s %-10s %-10s %s", r->op, r->shape, m, t, x,
           r->res.pass ? "PASS" : "FAIL");
    if (!r->res.pass && r->res.message[0])
        printf("  %s", r->res.message);
    else if (!r->res.pass)
        printf("  %s above the threshold", r->res.worst);
    printf("\n");
    fflush(stdout);
}

/* ---- devices -------------------------------------------------------------------------------- */

static device *open_device(const char *spec)
{
    char err[DEVICE_ERR];
    device *d = device_open(spec, err, sizeof err);
    if (!d)
        log_error("ops: --device %s: %s", spec, err);
    return d;
}

/* after a device error the device is a no-op: open it again for the next case. A device that
 * cannot be opened again (a GPU context lost to a fault) ends its checks: 1, the rows so far
 * still reported */
static int revive(device **d, const char *spec)
{
    if (!device_error(*d))
        return 0;
    device_close(*d);
    *d = open_device(spec);
    if (*d)
        return 0;
    log_error("ops: %s could not be opened again after its error: its remaining ops are not "
              "checked", spec);
    return EXIT_FAIL;
}

/* ---- the three modes ------------------------------------------------------------------------ */

static int run_test(const ops_args *a, const char *spec, device **d, device **ref, op_rows *rs)
{
    const oc_case *cases;
    int n = oc_test_cases(&cases);
    if (!a->json) {
        printf("test: %s (%s, %s) against %s\n", spec, (*d)->name, (*d)->dtype, REFERENCE);
        print_header("NMSE");
    }
    int said = a->json; /* --json: stdout is the array alone */
    for (int i = 0; i < n; i++) {
        if (!selected(a, cases[i].op->name, NULL) || lacks_op(*d, cases[i].op->name, &said))
            continue;
        op_row *r = new_row(rs, "test", spec, *d, cases[i].op->name);
        if (!r)
            return EXIT_FAIL;
        snprintf(r->reference, sizeof r->reference, REFERENCE);
        cases[i].op->describe(&cases[i].s, r->shape, sizeof r->shape);
        if (oc_test(*d, *ref, &cases[i], &r->res) < 0)
            log_warn("ops: %s %s: the reference failed: %s", r->op, r->shape, r->res.message);
        rs->failed += !r->res.pass;
        if (!a->json)
            print_row(r);
        if (revive(d, spec) || revive(ref, REFERENCE))
            return EXIT_FAIL;
    }
    return 0;
}

static int run_grad(const ops_args *a, const char *spec, device **d, op_rows *rs)
{
    const oc_grad_case *cases;
    int n = oc_grad_cases(&cases);
    if (!a->json) {
        printf("grad: %s (%s, %s) against central differences\n", spec, (*d)->name, (*d)->dtype);
        print_header("rel err");
    }
    for (int i = 0; i < n; i++) {
        if (!selected(a, cases[i].bwd, cases[i].fwd))
            continue;
        op_row *r = new_row(rs, "grad", spec, *d, cases[i].bwd);
        if (!r)
            return EXIT_FAIL;
        oc_find(cases[i].fwd)->describe(&cases[i].s, r->shape, sizeof r->shape);
        oc_grad(*d, &cases[i], &r->res);
        rs->failed += !r->res.pass;
        if (!a->json)
            print_row(r);
        if (revive(d, spec))
            return EXIT_FAIL;
    }
    return 0;
}

static int run_perf(const ops_args *a, const char *spec, device **d, op_rows *rs)
{
    const oc_case *cases;
    int n = oc_perf_cases(&cases);
    int said = 1; /* the perf table follows: no line before it */
    for (int i = 0; i < n; i++) {
        if (!selected(a, cases[i].op->name, NULL) || lacks_op(*d, cases[i].op->name, &said))
            continue;
        op_row *r = new_row(rs, "perf", spec, *d, cases[i].op->name);
        if (!r)
            return EXIT_FAIL;
        cases[i].op->describe(&cases[i].s, r->shape, sizeof r->shape);
        oc_perf(*d, &cases[i], &r->res);
        r->res.metric = r->res.threshold = r->res.max_abs = NAN;
        rs->failed += !r->res.pass;
        if (revive(d, spec))
            return EXIT_FAIL;
    }
    return 0;
}

/* the row of device k for one op and shape, or NULL when that device never ran it (it was lost
 * before) */
static const op_row *perf_row(const op_rows *rs, const char *spec, const char *op,
                              const char *shape)
{
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->rows[i].device, spec) && !strcmp(rs->rows[i].op, op) &&
            !strcmp(rs->rows[i].shape, shape))
            return &rs->rows[i];
    return NULL;
}

static void print_perf_cell(const op_row *r)
{
    if (!r)
        printf(" | %-29s", "not run");
    else if (!r->res.pass)
        printf(" | %-29s", "error");
    else if (r->res.gflops > 0)
        printf(" | %9.1f %9.2f %9.2f", r->res.us, r->res.gflops, r->res.gbps);
    else
        printf(" | %9.1f %9s %9.2f", r->res.us, "-", r->res.gbps);
}

/* the perf table: one line per op and shape, the devices side by side; each cell is looked up
 * by device, op and shape, so a device lost partway leaves its later cells "not run" */
static void print_perf(const ops_args *a, const op_rows *rs)
{
    const oc_case *cases;
    int n = oc_perf_cases(&cases);
    printf("%-22s %-28s", "op", "shape");
    for (int k = 0; k < a->ndev; k++)
        printf(" | %-29.29s", a->devices[k]);
    printf("\n%-22s %-28s", "", "");
    for (int k = 0; k < a->ndev; k++)
        printf(" | %9s %9s %9s", "us/call", "GFLOP/s", "GB/s");
    printf("\n");
    for (int i = 0; i < n; i++) {
        if (!selected(a, cases[i].op->name, NULL))
            continue;
        char shape[sizeof rs->rows[0].shape];
        cases[i].op->describe(&cases[i].s, shape, sizeof shape);
        printf("%-22s %-28s", cases[i].op->name, shape);
        for (int k = 0; k < a->ndev; k++)
            print_perf_cell(perf_row(rs, a->devices[k], cases[i].op->name, shape));
        printf("\n");
    }
    for (int i = 0; i < rs->n; i++)
        if (!rs->rows[i].res.pass)
            printf("%s %s %s: %s\n", rs->rows[i].device, rs->rows[i].op, rs->rows[i].shape,
                   rs->rows[i].res.message);
}

/* ---- JSON ----------------------------------------------------------------------------------- */

static json_t *jnum(double v)
{
    if (isfinite(v))
        return json_real(v);
    return json_string(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

static json_t *row_json(const op_row *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "mode", json_text(r->mode));
    json_object_set_new(o, "device", json_text(r->device));
    json_object_set_new(o, "device_name", json_text(r->device_name));
    json_object_set_new(o, "dtype", json_text(r->dtype));
    json_object_set_new(o, "op", json_text(r->op));
    json_object_set_new(o, "shape", json_text(r->shape));
    json_object_set_new(o, "status", json_text(r->res.pass ? "pass" : "fail"));
    if (r->mode[0] == 'p') {
        json_object_set_new(o, "us_per_call", jnum(r->res.us));
        json_object_set_new(o, "gflops", r->res.gflops > 0 ? jnum(r->res.gflops) : json_null());
        json_object_set_new(o, "gbps", jnum(r->res.gbps));
    } else {
        json_object_set_new(o, r->mode[0] == 't' ? "nmse" : "rel_err", jnum(r->res.metric));
        json_object_set_new(o, "threshold", jnum(r->res.threshold));
        json_object_set_new(o, "max_abs", jnum(r->res.max_abs));
        json_object_set_new(o, "worst", json_text(r->res.worst));
        if (r->reference[0])
            json_object_set_new(o, "reference", json_text(r->reference));
    }
    json_object_set_new(o, "message", json_text(r->res.message));
    return o;
}

static int print_json(const op_rows *rs)
{
    json_t *arr = json_array();
    for (int i = 0; i < rs->n; i++)
        json_array_append_new(arr, row_json(&rs->rows[i]));
    char *s = json_dumps(arr, JSON_INDENT(2) | JSON_ENSURE_ASCII);
    json_decref(arr);
    if (!s) {
        log_error("ops: out of memory writing JSON");
        return EXIT_FAIL;
    }
    printf("%s\n", s);
    free(s);
    return 0;
}

/* ---- the command ---------------------------------------------------------------------------- */

static int run_device(const ops_args *a, const char *spec, device **ref, op_rows *rs)
{
    device *d = open_device(spec);
    if (!d)
        return EXIT_USAGE;
    int rc;
    if (strcmp(a->mode, "test") == 0)
        rc = run_test(a, spec, &d, ref, rs);
    else if (strcmp(a->mode, "grad") == 0)
        rc = run_grad(a, spec, &d, rs);
    else
        rc = run_perf(a, spec, &d, rs);
    device_close(d);
    if (!a->json && a->mode[0] != 'p')
        printf("\n");
    return rc;
}

static int report(const ops_args *a, op_rows *rs)
{
    if (a->json) {
        if (print_json(rs))
            return EXIT_FAIL;
    } else if (a->mode[0] == 'p') {
        print_perf(a, rs);
    }
    if (a->db && opdb_record(a->db, rs->rows, rs->n))
        return EXIT_USAGE;
    if (!a->json && a->mode[0] != 'p')
        printf("%d passed, %d failed\n", rs->n - rs->failed, rs->failed);
    return rs->failed ? EXIT_FAIL : EXIT_PASS;
}

int cmd_ops(int argc, char **argv)
{
    ops_args a;
    int rc = parse_ops_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? EXIT_PASS : rc;
    if (a.db && (rc = opdb_check(a.db)) != 0) /* refuse a bad --db before the work, not after */
        return rc;
    if (a.ndev == 0)
        default_devices(&a);
    for (int k = 0; k < a.ndev; k++) { /* every device opens before any check runs */
        char err[512];
        device *d = device_open(a.devices[k], err, sizeof err);
        if (!d) {
            log_error("ops: --device %s: %s", a.devices[k], err);
            return EXIT_USAGE;
        }
        device_close(d);
    }
    device *ref = strcmp(a.mode, "test") == 0 ? open_device(REFERENCE) : NULL;
    if (strcmp(a.mode, "test") == 0 && !ref)
        return EXIT_USAGE;
    op_rows rs = {0};
    int cut_short = 0; /* a device lost mid-way (or no memory for a row): report what was done */
    int testing = strcmp(a.mode, "test") == 0;
    for (int k = 0; k < a.ndev && (!rc || rc == EXIT_FAIL) && (ref || !testing); k++) {
        rc = run_device(&a, a.devices[k], &ref, &rs);
        cut_short |= rc == EXIT_FAIL;
    }
    device_close(ref);
    if (!rc || rc == EXIT_FAIL)
        rc = report(&a, &rs);
    if (cut_short && rc == EXIT_PASS)
        rc = EXIT_FAIL;
    free(rs.rows);
    return rc;
}
