/* harness/judge/baseline.c: reading and writing baseline files (docs/baselines.md): a `key: value`
 * header with escaped values, then a whitespace-separated step table; doubles as %.17g. */
#define _XOPEN_SOURCE 700 /* realpath; POSIX 2008 with it */
#include "baseline.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baseline_routing.h"
#include "util/util.h"
#include "verdicts.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* ---- the known metadata keys, in the order they are written -------------------------------- */
enum { K_STR, K_INT, K_I64, K_JSON };
typedef struct {
    const char *key;
    int kind;
    size_t off, size;
    int required;
} meta_field;

#define STRF(k, f, req) {k, K_STR, offsetof(baseline, f), sizeof(((baseline *)0)->f), req}
static const meta_field fields[] = {
    {"format", K_STR, 0, 0, 1}, /* checked, not stored */
    STRF("label", label, 0),
    STRF("scenario", scenario, 1),
    STRF("scenario_hash", scenario_hash, 1),
    STRF("device", device, 1),
    STRF("device_name", device_name, 0),
    STRF("vendor", vendor, 0),
    STRF("driver_version", driver_version, 0),
    STRF("runtime_version", runtime_version, 0),
    STRF("dtype", dtype, 1),
    {"world_size", K_INT, offsetof(baseline, world_size), 0, 1},
    {"mem_total_bytes", K_I64, offsetof(baseline, mem_total_bytes), 0, 0},
    STRF("host", host, 0),
    STRF("date", date, 0),
    STRF("finished_at", finished_at, 0),
    STRF("harness_version", harness_version, 0),
    STRF("git_commit", git_commit, 0),
    STRF("status", status, 0),
    {"scenario_json", K_JSON, 0, 0, 0},
    {"steps", K_INT, 0, 0, 1}, /* the row count; checked against the table */
    /* format 2 only (a run with expert counts), written after `steps` */
    {"moe_layers", K_INT, offsetof(baseline, routing.layers), 0, 0},
    {"moe_experts", K_INT, offsetof(baseline, routing.experts), 0, 0},
    {"routed_steps", K_INT, 0, 0, 0}, /* steps in the expert_tokens section */
    /* format 3 only (an ensemble), written after `steps` */
    {"ensemble_runs", K_INT, offsetof(baseline, ensemble_runs), 0, 0},
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))
#define FIRST_MOE_FIELD (N_FIELDS - 4)
#define ENSEMBLE_FIELD (N_FIELDS - 1)

/* ---- the step table's columns, in the order they are written ------------------------------- */
typedef struct {
    const char *name;
    int is_int;
    size_t off;
} column;

static const column columns[] = {
    {"step", 1, offsetof(step_record, step)},
    {"loss", 0, offsetof(step_record, loss)},
    {"grad_norm", 0, offsetof(step_record, grad_norm)},
    {"lr", 0, offsetof(step_record, lr)},
    {"tokens", 1, offsetof(step_record, tokens)},
    {"step_ms", 0, offsetof(step_record, step_ms)},
    {"tokens_per_s", 0, offsetof(step_record, tokens_per_s)},
    {"mem_peak_bytes", 1, offsetof(step_record, mem_peak_bytes)},
    {"mem_used_bytes", 1, offsetof(step_record, mem_used_bytes)},
    {"mem_total_bytes", 1, offsetof(step_record, mem_total_bytes)},
    /* fp16 loss scaling: written only for a run that has it */
    {"loss_scale", 0, offsetof(step_record, loss_scale)},
    {"skipped", 2, offsetof(step_record, skipped)}, /* is_int 2: an int, 0 or 1 */
    {"loss_std", 0, 0}, /* format 3 only: kept in baseline.loss_std, not in the step_record */
};
#define FIRST_SCALING_COLUMN 10 /* loss_scale, then skipped */
#define LOSS_STD_COLUMN 12
#define N_COLUMNS ((int)(sizeof columns / sizeof columns[0]))
#define MAX_STEPS 100000000

/* ---- parser state ------------------------------------------------------------------------- */
typedef struct {
    const char *file;
    const char *p, *end; /* the unread rest of the text */
    int line;            /* number of the line in buf */
    char *buf;           /* the current line, NUL-terminated, without CR LF */
    size_t cap;
    baseline *b;
    unsigned seen[N_FIELDS];
    int declared_steps;
    int col[N_COLUMNS]; /* col[i]: the columns[] index of table column i */
    int ncols;
    int cap_steps;
    int version;        /* the format's: 1, 2 (expert counts allowed) or 3 (an ensemble) */
    routing_parser rp;  /* the expert_tokens section */
    int hash_line;      /* the line of scenario_hash, named when it does not match the JSON */
    int scenario_line;  /* the line of scenario, named when it is not the JSON's name */
    int dtype_line;     /* the line of dtype, named when it does not fit the JSON's */
} parser;

static int perr(const parser *ps, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int perr(const parser *ps, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_error("%s:%d: %s%s%s", ps->file, ps->line, field ? field : "", field ? ": " : "", msg);
    return EXIT_USAGE;
}

/* Reads the next line into ps->buf. Returns 1 when there was one, 0 at the end, 2 on an error
 * (a NUL byte: the file is not text; out of memory). */
static int next_line(parser *ps)
{
    if (ps->p >= ps->end)
        return 0;
    const char *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
    size_t n = (size_t)((nl ? nl : ps->end) - ps->p);
    ps->line++;
    if (memchr(ps->p, 0, n))
        return perr(ps, NULL, "a NUL byte: this is not a baseline text file");
    if (n + 1 > ps->cap) {
        char *grown = realloc(ps->buf, n + 1);
        if (!grown)
            return perr(ps, NULL, "out of memory for a line of %zu bytes", n);
        ps->buf = grown;
        ps->cap = n + 1;
    }
    memcpy(ps->buf, ps->p, n);
    if (n && ps->buf[n - 1] == '\r')
        n--;
    ps->buf[n] = 0;
    ps->p = nl ? nl + 1 : ps->end;
    return 1;
}

static int is_blank_or_comment(const char *s)
{
    s += strspn(s, " \t");
    return *s == 0 || *s == '#';
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                                 : -1;
}

/* undoes the value escapes \\ \n \r \t \xHH in place; 0, or 2 with a message */
static int unescape(parser *ps, const char *key, char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r != '\\') {
            *w++ = *r;
            continue;
        }
        char c = *++r;
        if (c == 0)
            return perr(ps, key, "a lone '\\' ends the value (a backslash is written \\\\)");
        if (c == '\\' || c == 'n' || c == 'r' || c == 't') {
            *w++ = c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : '\\';
        } else if (c == 'x' && (hexval(r[1]) < 0 || hexval(r[2]) < 0)) {
            return perr(ps, key, "'\\x' needs two hex digits (\\xHH), got '\\x%.2s'", r + 1);
        } else if (c == 'x' && hexval(r[1]) * 16 + hexval(r[2]) == 0) {
            return perr(ps, key, "'\\x%.2s' is a NUL byte, which a value may not hold", r + 1);
        } else if (c == 'x') {
            *w++ = (char)(hexval(r[1]) * 16 + hexval(r[2]));
            r += 2;
        } else {
            return perr(ps, key, "unknown escape '\\%.1s' (known: \\\\ \\n \\r \\t \\xHH)",
                        r);
        }
    }
    *w = 0;
    return 0;
}

static int field_index(const char *key)
{
    for (int i = 0; i < N_FIELDS; i++)
        if (strcmp(fields[i].key, key) == 0)
            return i;
    return -1;
}

/* strict integer in [lo, hi]; 0 or 2 */
static int parse_int_value(parser *ps, const char *key, const char *v, long long lo, long long hi,
                           long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi)
        return perr(ps, key, "'%.40s' is not a whole number in [%lld, %lld]", v, lo, hi);
    *out = x;
    return 0;
}

/* a sha256 as the harness writes one: 64 lower-case hex digits (a hash compares as text) */
static int is_hex64(const char *s)
{
    if (strlen(s) != 64)
        return 0;
    for (; *s; s++)
        if (hexval(*s) < 0 || (*s >= 'A' && *s <= 'F'))
            return 0;
    return 1;
}

static int set_format(parser *ps, const char *v)
{
    ps->version = strcmp(v, BASELINE_FORMAT) == 0       ? 1
                  : strcmp(v, BASELINE_FORMAT_MOE) == 0 ? 2
                  : strcmp(v, BASELINE_FORMAT_ENSEMBLE) == 0 ? 3
                                                            : 0;
    if (ps->version)
        return 0;
    if (strncmp(v, "harness-baseline ", 17) == 0)
        return perr(ps, "format", "'%.40s' is a version this harness does not read (it reads '%s', "
                    "'%s' and '%s')", v, BASELINE_FORMAT, BASELINE_FORMAT_MOE,
                    BASELINE_FORMAT_ENSEMBLE);
    return perr(ps, "format", "'%.40s' is not a harness baseline (expected '%s')", v,
                BASELINE_FORMAT);
}

static int set_scenario_json(parser *ps, const char *v)
{
    json_error_t e;
    json_t *root = json_loads(v, JSON_REJECT_DUPLICATES, &e);
    int ok = json_is_object(root);
    json_decref(root);
    if (!root)
        return perr(ps, "scenario_json", "not JSON: %s (column %d)", e.text, e.column);
    if (!ok)
        return perr(ps, "scenario_json", "JSON, but not an object");
    if (!(ps->b->scenario_json = strdup(v)))
        return perr(ps, "scenario_json", "out of memory");
    return 0;
}

/* moe_layers, moe_experts, routed_steps: only in format 2, within the store's limits */
static int set_moe_field(parser *ps, int fi, const char *v)
{
    long long x;
    const meta_field *f = &fields[fi];
    if (ps->version < 2)
        return perr(ps, f->key, "a key of format '%s' (a baseline with expert counts), this file "
                    "is '%s'", BASELINE_FORMAT_MOE, BASELINE_FORMAT);
    int routed = strcmp(f->key, "routed_steps") == 0;
    long long hi = routed ? MAX_STEPS : strcmp(f->key, "moe_layers") == 0 ? STORE_MOE_MAX_LAYERS
                                                                          : STORE_MOE_MAX_EXPERTS;
    int rc = parse_int_value(ps, f->key, v, routed ? 0 : 1, hi, &x);
    if (rc)
        return rc;
    if (routed)
        ps->rp.declared = (int)x;
    else
        *(int *)((char *)ps->b + f->off) = (int)x;
    return 0;
}

/* ensemble_runs: only in format 3, ENSEMBLE_MIN_RUNS to ENSEMBLE_MAX_RUNS */
static int set_ensemble_runs(parser *ps, const char *v)
{
    long long x;
    if (ps->version != 3)
        return perr(ps, "ensemble_runs", "a key of format '%s' (an ensemble), this file is not",
                    BASELINE_FORMAT_ENSEMBLE);
    int rc = parse_int_value(ps, "ensemble_runs", v, ENSEMBLE_MIN_RUNS, ENSEMBLE_MAX_RUNS, &x);
    if (!rc)
        ps->b->ensemble_runs = (int)x;
    return rc;
}

static int set_int_field(parser *ps, int fi, const char *v)
{
    long long x;
    const meta_field *f = &fields[fi];
    if (fi == ENSEMBLE_FIELD)
        return set_ensemble_runs(ps, v);
    if (fi >= FIRST_MOE_FIELD)
        return set_moe_field(ps, fi, v);
    long long lo = strcmp(f->key, "mem_total_bytes") == 0 ? 0 : 1;
    long long hi = f->kind == K_I64 ? INT64_MAX : strcmp(f->key, "steps") == 0 ? MAX_STEPS : 1 << 20;
    int rc = parse_int_value(ps, f->key, v, strcmp(f->key, "steps") == 0 ? 0 : lo, hi, &x);
    if (rc)
        return rc;
    if (strcmp(f->key, "steps") == 0)
        ps->declared_steps = (int)x;
    else if (f->kind == K_I64)
        *(int64_t *)((char *)ps->b + f->off) = x;
    else
        *(int *)((char *)ps->b + f->off) = (int)x;
    return 0;
}

/* "YYYY-MM-DDTHH:MM:SS", a fraction of a second, then "Z" or "+HH:MM" / "-HH:MM" (either
 * optional): what runs and baseline files write, and what report --since orders by */
/* an ISO 8601 time as the baseline format takes it (YYYY-MM-DDTHH:MM:SS, a fraction of a second,
 * then Z, +HH:MM, -HH:MM or nothing), every field in its range; *offset_min the offset's minutes
 * east of UTC. 1 when it is one. */
static int is_iso8601(const char *v, long *offset_min)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    size_t i = 0;
    for (; shape[i]; i++)
        if (shape[i] == 'd' ? !(v[i] >= '0' && v[i] <= '9') : v[i] != shape[i])
            return 0;
    if (v[i] == '.') {
        size_t digits = strspn(v + i + 1, "0123456789");
        if (!digits)
            return 0;
        i += 1 + digits;
    }
    *offset_min = 0;
    if (!iso_fields_in_range(v, 19))
        return 0;
    if (v[i] == 'Z')
        return v[i + 1] == 0;
    if (v[i] == '+' || v[i] == '-') {
        const char *o = v + i + 1;
        if (strlen(o) != 5 || o[2] != ':' || strspn(o, "0123456789") != 2 ||
            strspn(o + 3, "0123456789") != 2)
            return 0;
        int hh = (o[0] - '0') * 10 + (o[1] - '0'), mm = (o[3] - '0') * 10 + (o[4] - '0');
        *offset_min = (v[i] == '+' ? 1 : -1) * (hh * 60L + mm);
        return hh <= 23 && mm <= 59;
    }
    return v[i] == 0;
}

/* v (is_iso8601, offset_min east of UTC) as UTC with a Z into out: the clock shifted back by the
 * offset, the fraction of a second kept */
static void iso8601_to_utc(const char *v, long offset_min, char *out, size_t len)
{
    char utc[20];
    iso_shift_minutes(v, -offset_min, utc);
    size_t frac = v[19] == '.' ? 1 + strspn(v + 20, "0123456789") : 0;
    snprintf(out, len, "%s%.*sZ", utc, (int)frac, v + 19);
}

static int set_known(parser *ps, int fi, const char *v)
{
    const meta_field *f = &fields[fi];
    if (ps->seen[fi]++)
        return perr(ps, f->key, "given twice");
    if (fi == 0)
        return set_format(ps, v);
    if (!ps->seen[0])
        return perr(ps, f->key, "the first key must be 'format: %s'", BASELINE_FORMAT);
    if (f->kind == K_JSON)
        return set_scenario_json(ps, v);
    if (f->kind != K_STR)
        return set_int_field(ps, fi, v);
    if (strlen(v) >= f->size)
        return perr(ps, f->key, "longer than %zu bytes", f->size - 1);
    if (f->required && !v[0])
        return perr(ps, f->key, "empty (a required key)");
    if (strcmp(f->key, "scenario") == 0)
        ps->scenario_line = ps->line;
    if (strcmp(f->key, "scenario_hash") == 0 && !is_hex64(v))
        return perr(ps, f->key, "'%.70s' is not a sha256 (64 lower-case hex digits)", v);
    if (strcmp(f->key, "scenario_hash") == 0)
        ps->hash_line = ps->line;
    if (strcmp(f->key, "dtype") == 0)
        ps->dtype_line = ps->line;
    if (strcmp(f->key, "status") == 0 && strcmp(v, "ok") != 0)
        return perr(ps, f->key, "'%.20s': a baseline is a finished run, status ok", v);
    long offset_min = 0;
    char utc[96];
    int is_time = strcmp(f->key, "date") == 0 || strcmp(f->key, "finished_at") == 0;
    if (is_time && v[0] && !is_iso8601(v, &offset_min))
        return perr(ps, f->key, "'%.40s' is not an ISO 8601 time with every field in its range "
                                "(2026-11-21T23:03:45Z)", v);
    if (is_time && v[0] && v[strlen(v) - 1] != 'Z' && strlen(v) < sizeof utc - 2) {
        iso8601_to_utc(v, offset_min, utc, sizeof utc); /* the store keeps UTC */
        v = utc;
    }
    if (strcmp(f->key, "dtype") == 0 && strcmp(v, "fp64") != 0 && strcmp(v, "fp32") != 0 &&
        strcmp(v, "bf16") != 0 && strcmp(v, "fp16") != 0)
        return perr(ps, f->key, "'%.20s' is not fp64, fp32, bf16 or fp16", v);
    memcpy((char *)ps->b + f->off, v, strlen(v) + 1);
    return 0;
}

int baseline_set_extra(baseline *b, const char *key, const char *value)
{
    for (int i = 0; i < b->n_extra; i++) {
        if (strcmp(b->extra[i].key, key) == 0) {
            char *v = strdup(value);
            if (!v)
                return -1;
            free(b->extra[i].value);
            b->extra[i].value = v;
            return 0;
        }
    }
    baseline_kv *grown = realloc(b->extra, sizeof *grown * (size_t)(b->n_extra + 1));
    if (!grown)
        return -1;
    b->extra = grown;
    baseline_kv kv = {strdup(key), strdup(value)};
    if (!kv.key || !kv.value) {
        free(kv.key);
        free(kv.value);
        return -1;
    }
    b->extra[b->n_extra++] = kv;
    return 0;
}

void baseline_remove_extra(baseline *b, const char *key)
{
    for (int i = 0; i < b->n_extra; i++) {
        if (strcmp(b->extra[i].key, key) != 0)
            continue;
        free(b->extra[i].key);
        free(b->extra[i].value);
        memmove(&b->extra[i], &b->extra[i + 1], sizeof *b->extra * (size_t)(b->n_extra - i - 1));
        b->n_extra--;
        return;
    }
}

static int set_extra(parser *ps, const char *key, const char *v)
{
    if (!ps->seen[0])
        return perr(ps, key, "the first key must be 'format: %s'", BASELINE_FORMAT);
    for (int i = 0; i < ps->b->n_extra; i++)
        if (strcmp(ps->b->extra[i].key, key) == 0)
            return perr(ps, key, "given twice");
    if (baseline_set_extra(ps->b, key, v))
        return perr(ps, key, "out of memory");
    return 0;
}

/* length of a metadata key at s: [A-Za-z0-9_.-]+ followed by ':' */
static size_t key_length(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
    return n > 0 && n <= 64 && s[n] == ':' ? n : 0;
}

/* one `key: value` header line in ps->buf */
static int header_line(parser *ps)
{
    char *s = ps->buf;
    size_t n = key_length(s);
    if (!n)
        return perr(ps, NULL, "expected 'key: value' (a key of letters, digits, _ . -) or the "
                              "step table's header 'step loss ...', got '%.40s'", s);
    s[n] = 0;
    char *v = s + n + 1;
    if (*v == ' ')
        v++;
    int rc = unescape(ps, s, v);
    if (rc)
        return rc;
    int fi = field_index(s);
    return fi >= 0 ? set_known(ps, fi, v) : set_extra(ps, s, v);
}

static int column_index(const char *name)
{
    for (int i = 0; i < N_COLUMNS; i++)
        if (strcmp(columns[i].name, name) == 0)
            return i;
    return -1;
}

/* the table header in ps->buf: "step loss [other columns]" */
static int table_header(parser *ps)
{
    unsigned used = 0;
    ps->ncols = 0;
    for (char *save = NULL, *t = strtok_r(ps->buf, " \t", &save); t;
         t = strtok_r(NULL, " \t", &save)) {
        int ci = column_index(t);
        if (ci < 0)
            return perr(ps, "step table", "unknown column '%.40s'", t);
        if (used & (1u << ci))
            return perr(ps, "step table", "column '%s' given twice", t);
        used |= 1u << ci;
        ps->col[ps->ncols++] = ci;
    }
    if (ps->col[0] != 0 || !(used & 2u))
        return perr(ps, "step table", "the header must start with 'step' and name 'loss'");
    if ((used >> (FIRST_SCALING_COLUMN + 1) & 1u) && !(used >> FIRST_SCALING_COLUMN & 1u))
        return perr(ps, "step table", "column skipped goes with loss_scale (a step skipped by "
                                      "loss scaling has its scale)");
    int has_std = (used >> LOSS_STD_COLUMN) & 1u;
    if (has_std != (ps->version == 3))
        return perr(ps, "step table", has_std ? "column loss_std belongs to format '%s' (an "
                                                "ensemble), this file is not"
                                              : "format '%s' (an ensemble) needs the column "
                                                "loss_std", BASELINE_FORMAT_ENSEMBLE);
    return 0;
}

/* A real of column `name` as record writes one (%.17g, nan, inf, -inf) into *out: 0, or 2 after
 * a message. Refused: what is not a number; a hexadecimal one (no writer makes them, and
 * '0x10' would read as 16: a typo for 10 is not a number here); a value out of a double's range
 * either way: 1e400 is refused, and so is 1e-400, which strtod makes 0 (a number that small
 * but not 0 reads as the nearest subnormal, as record's %.17g of one does). */
static int real_value(parser *ps, const char *name, const char *t, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(t, &end);
    if (*end || end == t)
        return perr(ps, name, "'%.40s' is not a number", t);
    if (strpbrk(t, "xX"))
        return perr(ps, name, "'%.40s' is a hexadecimal number: write it in decimal", t);
    if (errno == ERANGE && isinf(x)) /* "inf" itself is a diverged run's loss; 1e999 is not */
        return perr(ps, name, "'%.40s' is out of range for a double", t);
    if (errno == ERANGE && x == 0)
        return perr(ps, name, "'%.40s' is too small for a double (it would read as 0)", t);
    *out = x == 0 ? 0.0 : x; /* -0 is 0: SQLite stores it so, and the stored copy must be the
                                same baseline (a -0 made a new import on every compare) */
    return 0;
}

/* loss_std: a finite number >= 0 */
static int std_value(parser *ps, const char *t, double *std)
{
    char *end;
    double x = strtod(t, &end);
    if (*end || end == t || !isfinite(x) || x < 0)
        return perr(ps, "loss_std", "'%.40s' is not a finite number >= 0", t);
    return real_value(ps, "loss_std", t, std); /* hexadecimal, too small */
}

/* one value of column ci into r; '-' means not recorded (NaN, or 0 for whole numbers) */

static int table_value(parser *ps, int ci, const char *t, step_record *r, double *std)
{
    const column *c = &columns[ci];
    if (ci == LOSS_STD_COLUMN)
        return std_value(ps, t, std);
    char *p = (char *)r + c->off;
    if (strcmp(t, "-") == 0 && ci != 0) {
        if (c->is_int == 2)
            *(int *)p = 0;
        else if (c->is_int)
            *(int64_t *)p = 0;
        else {
            *(double *)p = NAN;
            r->unrecorded |= step_unrecorded_bit(c->off);
        }
        return 0;
    }
    if (!c->is_int) {
        double x = 0;
        int rc = real_value(ps, c->name, t, &x);
        if (rc)
            return rc;
        if (c->off == offsetof(step_record, loss_scale) && !(isfinite(x) && x > 0))
            return perr(ps, c->name, "'%.40s': a loss scale is a finite number > 0 (or -)", t);
        *(double *)p = x;
        r->unrecorded &= ~step_unrecorded_bit(c->off);
        return 0;
    }
    long long x;
    long long max = ci == 0 ? INT32_MAX : c->is_int == 2 ? 1 : INT64_MAX;
    int rc = parse_int_value(ps, c->name, t, ci == 0 ? 1 : 0, max, &x);
    if (rc)
        return rc;
    if (ci == 0 || c->is_int == 2)
        *(int *)p = (int)x;
    else
        *(int64_t *)p = x;
    return 0;
}

static int grow_steps(parser *ps)
{
    baseline *b = ps->b;
    if (b->n_steps < ps->cap_steps)
        return 0;
    if (b->n_steps >= MAX_STEPS)
        return perr(ps, "step table", "more than %d steps", MAX_STEPS);
    int cap = ps->cap_steps ? ps->cap_steps * 2 : 64;
    step_record *grown = realloc(b->steps, sizeof *grown * (size_t)cap);
    if (!grown)
        return perr(ps, "step table", "out of memory for %d steps", cap);
    b->steps = grown;
    if (ps->version == 3) {
        double *std = realloc(b->loss_std, sizeof *std * (size_t)cap);
        if (!std)
            return perr(ps, "step table", "out of memory for %d steps", cap);
        b->loss_std = std;
    }
    ps->cap_steps = cap;
    return 0;
}

/* loss scaling is fp16's (docs/precision.md): a loss scale or a skipped step in a file of
 * another dtype, or a step skipped with a finite gradient norm (skipped for Inf/NaN ones), is
 * refused; 0 or 2 */
static int check_scaling(parser *ps, const step_record *r)
{
    const char *dt = ps->b->dtype;
    int scaled = r->loss_scale > 0 || r->skipped;
    if (scaled && dt[0] && strcmp(dt, "fp16") != 0)
        return perr(ps, r->skipped ? "skipped" : "loss_scale",
                    "loss scaling in a %s baseline: only fp16 runs scale the loss (write - and "
                    "0)", dt);
    if (r->skipped && isfinite(r->grad_norm))
        return perr(ps, "skipped", "1 with the finite grad_norm %.17g: a step is skipped for "
                                   "Inf/NaN gradients", r->grad_norm);
    return 0;
}

/* one row of the step table in ps->buf */
static int table_row(parser *ps)
{
    int rc = grow_steps(ps);
    if (rc)
        return rc;
    step_record r;
    double std = NAN;
    memset(&r, 0, sizeof r);
    r.grad_norm = r.lr = r.step_ms = r.tokens_per_s = NAN;
    /* a column the file lacks is never recorded */
    r.unrecorded = STEP_NO_GRAD_NORM | STEP_NO_LR | STEP_NO_STEP_MS | STEP_NO_TOKENS_PER_S;
    int i = 0;
    for (char *save = NULL, *t = strtok_r(ps->buf, " \t", &save); t;
         t = strtok_r(NULL, " \t", &save), i++) {
        if (i >= ps->ncols)
            return perr(ps, "step table", "more values than the %d columns", ps->ncols);
        if ((rc = table_value(ps, ps->col[i], t, &r, &std)))
            return rc;
    }
    if (i < ps->ncols)
        return perr(ps, "step table", "%d values, the header names %d columns", i, ps->ncols);
    baseline *b = ps->b;
    if ((rc = check_scaling(ps, &r)))
        return rc;
    if (b->n_steps && r.step <= b->steps[b->n_steps - 1].step)
        return perr(ps, "step", "%d after step %d: steps must increase", r.step,
                    b->steps[b->n_steps - 1].step);
    if (b->loss_std)
        b->loss_std[b->n_steps] = std;
    b->steps[b->n_steps++] = r;
    return 0;
}

/* after the last line: every required key given, the row count as declared */
static int check_complete(parser *ps, int in_table)
{
    for (int i = 0; i < N_FIELDS; i++)
        if (fields[i].required && !ps->seen[i])
            return perr(ps, fields[i].key, "missing (a required key)");
    if (ps->version == 3 && !ps->seen[ENSEMBLE_FIELD])
        return perr(ps, "ensemble_runs", "missing (a required key of format '%s')",
                    BASELINE_FORMAT_ENSEMBLE);
    if (!in_table)
        return perr(ps, "step table", "missing (the header 'step loss ...' and one row per step)");
    if (ps->declared_steps != ps->b->n_steps)
        return perr(ps, "steps", "the header says %d steps, the table has %d (truncated file?)",
                    ps->declared_steps, ps->b->n_steps);
    if (!ps->b->status[0])
        snprintf(ps->b->status, sizeof ps->b->status, "ok");
    if (ps->version == 3 && !ps->b->loss_std && !(ps->b->loss_std = calloc(1, sizeof(double))))
        return perr(ps, "step table", "out of memory");
    return 0;
}

/* the scenario_json, when given, must hash to scenario_hash */
static int check_hash(parser *ps)
{
    baseline *b = ps->b;
    if (!b->scenario_json)
        return 0;
    char *canon = scenario_canonical_json(b->scenario_json);
    char hash[65] = "";
    if (canon)
        sha256_hex(canon, strlen(canon), hash);
    free(canon);
    parser at_hash = *ps; /* the message names the scenario_hash line, not the file's end */
    at_hash.line = ps->hash_line;
    if (strcmp(hash, b->scenario_hash) != 0)
        return perr(&at_hash, "scenario_hash", "does not match scenario_json (whose hash is "
                                               "%.64s): one of them was edited", hash);
    return 0;
}

/* the scenario_json, when given, read once for what the header must agree with: its "name" is
 * the scenario the file says it is of (compare looks a label up by that name); dtype, which sets
 * the tolerances and a golden's standing, is what a run of it records: its dtype (fp32 when
 * absent), or fp64 from the golden device, which computes in fp64 whatever the scenario says.
 * (world_size is not held to the JSON: an exec'd job reports its own, HARNESS_META's world_size
 * of a torchrun.) */
static int check_scenario_fields(parser *ps)
{
    baseline *b = ps->b;
    json_t *root = b->scenario_json ? json_loads(b->scenario_json, 0, NULL) : NULL;
    if (!root)
        return 0;
    json_t *name = json_object_get(root, "name"), *dt = json_object_get(root, "dtype");
    const char *want_dt = json_is_string(dt) ? json_string_value(dt) : "fp32";
    parser at = *ps; /* the message names the line at fault, not the file's end */
    int rc = 0;
    if (json_is_string(name) && strcmp(json_string_value(name), b->scenario) != 0) {
        at.line = ps->scenario_line;
        rc = perr(&at, "scenario", "'%.80s' is not the name in scenario_json ('%.80s')",
                  b->scenario, json_string_value(name));
    } else if (strcmp(b->dtype, want_dt) != 0 && strcmp(b->dtype, "fp64") != 0) {
        at.line = ps->dtype_line;
        rc = perr(&at, "dtype", "'%s' is not what a run of scenario_json (dtype '%.16s') records "
                                "(that, or fp64 on the golden device): one of them was edited",
                  b->dtype, want_dt);
    }
    json_decref(root);
    return rc;
}

/* 1 when the line begins with word followed by a space or tab */
static int starts_with_word(const char *line, const char *word)
{
    size_t n = strlen(word);
    return strncmp(line, word, n) == 0 && (line[n] == ' ' || line[n] == '\t');
}

/* the expert_tokens section's header, after the step table: format 2 and a checked shape */
static int routing_header(parser *ps)
{
    const routing_table *t = &ps->b->routing;
    char why[160];
    if (ps->version < 2)
        return perr(ps, "expert_tokens", "a section of format '%s', this file is '%s'",
                    BASELINE_FORMAT_MOE, BASELINE_FORMAT);
    for (int i = 0; i < N_FIELDS; i++)
        if (i >= FIRST_MOE_FIELD && i != ENSEMBLE_FIELD && !ps->seen[i])
            return perr(ps, fields[i].key, "missing before the expert_tokens section");
    if (routing_shape_check(t->layers, t->experts, why, sizeof why))
        return perr(ps, "moe_experts", "%s", why);
    ps->rp.file = ps->file;
    ps->rp.line = ps->line;
    return routing_parse_header(&ps->rp, t, ps->buf);
}

static int routing_row(parser *ps)
{
    ps->rp.line = ps->line;
    return routing_parse_row(&ps->rp, &ps->b->routing, ps->b->steps, ps->b->n_steps, ps->buf);
}

/* after the last line: a format-2 file's counts are as many as it declared */
static int check_routing(parser *ps, int in_section)
{
    ps->rp.file = ps->file;
    ps->rp.line = ps->line;
    if (in_section)
        return routing_parse_end(&ps->rp, &ps->b->routing);
    if (ps->version >= 2 && ps->rp.declared > 0)
        return perr(ps, "expert_tokens", "missing (routed_steps says %d steps; truncated file?)",
                    ps->rp.declared);
    return 0;
}

enum { IN_HEADER, IN_STEPS, IN_ROUTING };

static int parse_lines(parser *ps)
{
    int rc, part = IN_HEADER;
    while ((rc = next_line(ps)) == 1) {
        if (is_blank_or_comment(ps->buf))
            continue;
        if (part == IN_ROUTING)
            rc = routing_row(ps);
        else if (part == IN_STEPS && starts_with_word(ps->buf, "expert_tokens"))
            rc = routing_header(ps), part = IN_ROUTING;
        else if (part == IN_STEPS)
            rc = table_row(ps);
        else if (starts_with_word(ps->buf, "step"))
            rc = table_header(ps), part = IN_STEPS;
        else
            rc = header_line(ps);
        if (rc)
            return rc;
    }
    if (rc)
        return rc;
    ps->line++; /* messages about what is missing point after the last line */
    if ((rc = check_complete(ps, part != IN_HEADER)) || (rc = check_routing(ps, part == IN_ROUTING)))
        return rc;
    return check_hash(ps) ? EXIT_USAGE : check_scenario_fields(ps);
}

/* A baseline is a finished run, never a diverged one, so a column that is nan at every step
 * was never recorded: the files harness versions before schema 10 wrote for an exec'd or
 * ingested run without grad norms (nan, where '-' is written now) read as they did. The loss
 * too: a loss never recorded cannot judge a run (compare says so), where a recorded nan at
 * every step would fail each one as diverged. */
static void nan_columns_unrecorded(baseline *b)
{
    static const size_t reals[] = {offsetof(step_record, loss),
                                   offsetof(step_record, grad_norm), offsetof(step_record, lr),
                                   offsetof(step_record, step_ms),
                                   offsetof(step_record, tokens_per_s)};
    for (size_t c = 0; c < sizeof reals / sizeof reals[0] && b->n_steps; c++) {
        int all_nan = 1;
        for (int i = 0; i < b->n_steps && all_nan; i++)
            all_nan = isnan(*(const double *)((const char *)&b->steps[i] + reals[c]));
        for (int i = 0; i < b->n_steps && all_nan; i++)
            b->steps[i].unrecorded |= step_unrecorded_bit(reals[c]);
    }
}

int baseline_parse(const char *text, size_t len, const char *file, baseline *b)
{
    memset(b, 0, sizeof *b);
    parser ps;
    memset(&ps, 0, sizeof ps);
    ps.file = file;
    ps.p = text;
    ps.end = text + len;
    ps.b = b;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        ps.p += 3; /* a UTF-8 byte order mark, as some editors write one: not part of line 1 */
    int rc = parse_lines(&ps);
    free(ps.buf);
    if (rc)
        baseline_free(b);
    else
        nan_columns_unrecorded(b);
    return rc;
}

int baseline_read(const char *path, baseline *b)
{
    memset(b, 0, sizeof *b);
    size_t len = 0;
    char why[INPUT_WHY_LEN];
    char *text = input_read(path, INPUT_BASELINE, &len, why, sizeof why);
    if (!text) {
        log_error("%s: cannot read the baseline: %s", path, why);
        return EXIT_USAGE;
    }
    int rc = baseline_parse(text, len, path, b);
    free(text);
    return rc;
}

void baseline_free(baseline *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->n_extra; i++) {
        free(b->extra[i].key);
        free(b->extra[i].value);
    }
    free(b->extra);
    free(b->steps);
    free(b->loss_std);
    routing_table_free(&b->routing);
    free(b->scenario_json);
    memset(b, 0, sizeof *b);
}

int baseline_copy(baseline *dst, const baseline *src)
{
    *dst = *src;
    dst->extra = NULL;
    dst->n_extra = 0;
    dst->scenario_json = src->scenario_json ? strdup(src->scenario_json) : NULL;
    dst->steps = malloc(sizeof *dst->steps * (size_t)(src->n_steps ? src->n_steps : 1));
    size_t std_bytes = sizeof *dst->loss_std * (size_t)(src->n_steps ? src->n_steps : 1);
    dst->loss_std = src->loss_std ? malloc(std_bytes) : NULL;
    int bad = routing_copy(&dst->routing, &src->routing);
    bad = bad || !dst->steps || (src->scenario_json && !dst->scenario_json) ||
          (src->loss_std && !dst->loss_std);
    /* a baseline of no steps may hold no array at all (memcpy from NULL is undefined) */
    if (!bad && src->n_steps)
        memcpy(dst->steps, src->steps, sizeof *dst->steps * (size_t)src->n_steps);
    if (!bad && src->loss_std && src->n_steps)
        memcpy(dst->loss_std, src->loss_std, sizeof *dst->loss_std * (size_t)src->n_steps);
    for (int i = 0; i < src->n_extra && !bad; i++)
        bad = baseline_set_extra(dst, src->extra[i].key, src->extra[i].value);
    if (bad)
        baseline_free(dst);
    return bad ? -1 : 0;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* a metadata value with \\ \n \r \t and other control bytes escaped, so it stays on its line */
static void write_value(FILE *f, const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p == '\\')
            fputs("\\\\", f);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\r')
            fputs("\\r", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
}

static void write_kv(FILE *f, const char *key, const char *value)
{
    fprintf(f, "%s: ", key);
    write_value(f, value);
    fputc('\n', f);
}

static void write_meta(FILE *f, const baseline *b)
{
    for (int i = 0; i < N_FIELDS; i++) {
        const meta_field *m = &fields[i];
        if (i == 0)
            write_kv(f, m->key, b->loss_std    ? BASELINE_FORMAT_ENSEMBLE
                                : b->routing.n ? BASELINE_FORMAT_MOE
                                               : BASELINE_FORMAT);
        else if (i >= FIRST_MOE_FIELD)
            continue;
        else if (m->kind == K_STR)
            write_kv(f, m->key, (const char *)b + m->off);
        else if (m->kind == K_INT && strcmp(m->key, "steps") != 0)
            fprintf(f, "%s: %d\n", m->key, *(const int *)((const char *)b + m->off));
        else if (m->kind == K_I64)
            fprintf(f, "%s: %lld\n", m->key,
                    (long long)*(const int64_t *)((const char *)b + m->off));
        if (strcmp(m->key, "status") == 0) /* the keys of other tools come after ours */
            for (int k = 0; k < b->n_extra; k++)
                write_kv(f, b->extra[k].key, b->extra[k].value);
    }
    if (b->scenario_json)
        write_kv(f, "scenario_json", b->scenario_json);
    fprintf(f, "steps: %d\n", b->n_steps);
    if (b->routing.n)
        fprintf(f, "moe_layers: %d\nmoe_experts: %d\nrouted_steps: %d\n", b->routing.layers,
                b->routing.experts, b->routing.n);
    if (b->loss_std)
        fprintf(f, "ensemble_runs: %d\n", b->ensemble_runs);
}

/* %.17g, with NaN as "nan" and infinities as "inf" / "-inf" on every C library; -0 as 0, as the
 * store keeps it and a file reads it */
static void write_real(FILE *f, double x)
{
    if (isnan(x))
        fputs("nan", f);
    else if (isinf(x))
        fputs(x > 0 ? "inf" : "-inf", f);
    else
        fprintf(f, "%.17g", x == 0 ? 0.0 : x);
}

static void write_steps(FILE *f, const baseline *b)
{
    int scaled = 0; /* some step was loss-scaled: the loss_scale and skipped columns too */
    for (int i = 0; i < b->n_steps; i++)
        scaled |= b->steps[i].loss_scale > 0;
    int cols[N_COLUMNS], ncols = 0; /* the columns this file has, in columns[] order */
    for (int c = 0; c < N_COLUMNS; c++)
        if ((c != LOSS_STD_COLUMN || b->loss_std) &&
            (scaled || c < FIRST_SCALING_COLUMN || c > FIRST_SCALING_COLUMN + 1))
            cols[ncols++] = c;
    for (int k = 0; k < ncols; k++)
        fprintf(f, "%s%s", k ? " " : "", columns[cols[k]].name);
    fputc('\n', f);
    for (int i = 0; i < b->n_steps; i++) {
        const char *r = (const char *)&b->steps[i];
        for (int k = 0; k < ncols; k++) {
            int c = cols[k];
            if (k)
                fputc(' ', f);
            if (c == LOSS_STD_COLUMN)
                write_real(f, b->loss_std[i]);
            else if (c == 0 || columns[c].is_int == 2)
                fprintf(f, "%d", *(const int *)(r + columns[c].off));
            else if (columns[c].is_int)
                fprintf(f, "%lld", (long long)*(const int64_t *)(r + columns[c].off));
            else if ((b->steps[i].unrecorded & step_unrecorded_bit(columns[c].off)) ||
                     (c == FIRST_SCALING_COLUMN && !(b->steps[i].loss_scale > 0)))
                fputc('-', f); /* never recorded, as against a recorded nan; no loss scale */
            else
                write_real(f, *(const double *)(r + columns[c].off));
        }
        fputc('\n', f);
    }
}

int baseline_write(FILE *f, const baseline *b)
{
    fputs("# harness baseline: a finished reference run of one scenario on one device.\n"
          "# Format: docs/baselines.md. Made by 'harness baseline record'; loaded by\n"
          "# 'harness baseline import' and by 'harness compare --baseline LABEL'.\n",
          f);
    write_meta(f, b);
    fputc('\n', f);
    write_steps(f, b);
    routing_write(f, &b->routing);
    return ferror(f) ? EXIT_FAIL : 0;
}

/* b written straight into path, a device or a FIFO (/dev/stdout, a pipe), which a rename would
 * replace */
static int save_in_place(const char *path, const baseline *b)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        log_error("%s: cannot write the baseline: %s", path, strerror(errno));
        return EXIT_FAIL;
    }
    int rc = baseline_write(f, b);
    if (fclose(f) != 0 || rc) {
        log_error("%s: writing the baseline failed: %s", path, strerror(errno));
        return EXIT_FAIL;
    }
    return 0;
}

/* b into path through a temporary file renamed over it, so a reader never sees half a file */
static int save_by_rename(const char *path, const baseline *b)
{
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    if (save_in_place(tmp, b)) {
        unlink(tmp);
        return EXIT_FAIL;
    }
    if (rename(tmp, path) != 0) {
        log_error("%s: cannot rename %s to it: %s", path, tmp, strerror(errno));
        unlink(tmp);
        return EXIT_FAIL;
    }
    return 0;
}

/* A symbolic link is written through (its target replaced, the link kept); a regular file or a
 * new name by a rename; a device or FIFO in place; a directory is refused. */
int baseline_save(const char *path, const baseline *b)
{
    char real[PATH_MAX];
    struct stat st, link;
    int is_link = lstat(path, &link) == 0 && S_ISLNK(link.st_mode);
    if (stat(path, &st) != 0) {
        if (!is_link)
            return save_by_rename(path, b);
        log_error("%s: cannot write the baseline: a symbolic link to a missing file", path);
        return EXIT_USAGE;
    }
    if (S_ISDIR(st.st_mode)) {
        log_error("%s: cannot write the baseline: it is a directory", path);
        return EXIT_USAGE;
    }
    if (!S_ISREG(st.st_mode))
        return save_in_place(path, b);
    if (!is_link)
        return save_by_rename(path, b);
    if (!realpath(path, real)) {
        log_error("%s: cannot resolve the symbolic link: %s", path, strerror(errno));
        return EXIT_FAIL;
    }
    return save_by_rename(real, b);
}

static char *write_to_memory(const baseline *b, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
    baseline_write(f, b);
    fclose(f);
    return buf;
}

/* the "scenario: ..." line of a baseline's text (its first 64 KiB), into out; 0 when found */
/* the header line of text that begins with key ("scenario: ", "label: ") into out; 0, or -1 */
static int header_line_of(const char *text, size_t len, const char *key, char *out, size_t cap)
{
    size_t n = len < 65536 ? len : 65536, kl = strlen(key);
    for (size_t i = 0; i < n; i++) {
        if ((i == 0 || text[i - 1] == '\n') && n - i > kl && memcmp(text + i, key, kl) == 0) {
            const char *end = memchr(text + i, '\n', n - i);
            size_t k = end ? (size_t)(end - (text + i)) : n - i;
            if (k >= cap)
                k = cap - 1;
            memcpy(out, text + i, k);
            out[k] = 0;
            return 0;
        }
    }
    return -1;
}

int baseline_file_of_other_scenario(const char *path, const baseline *b)
{
    struct stat sb; /* only a regular file holds a baseline (a FIFO there would block the read) */
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    static char head[65536];
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    size_t len = 0;
    char *mine = write_to_memory(b, &len);
    char theirs_line[4096], mine_line[4096];
    int other = 0; /* another scenario's, or another label's whose name makes the same file */
    for (int k = 0; k < 2 && mine && !other; k++) {
        const char *key = k ? "label: " : "scenario: ";
        other = header_line_of(head, got, key, theirs_line, sizeof theirs_line) == 0 &&
                header_line_of(mine, len, key, mine_line, sizeof mine_line) == 0 &&
                strcmp(theirs_line, mine_line) != 0;
    }
    free(mine);
    return other;
}

/* x and y (n bytes each) both the one given when one of them is empty */
static void same_time_if_absent(char *x, char *y, size_t n)
{
    if (!x[0])
        snprintf(x, n, "%s", y);
    else if (!y[0])
        snprintf(y, n, "%s", x);
}

int baseline_same(const baseline *a, const baseline *b)
{
    /* a file without a date (or finished_at) was imported with the time of its import: those
     * times are taken as equal */
    baseline da = *a, db = *b;
    same_time_if_absent(da.date, db.date, sizeof da.date);
    same_time_if_absent(da.finished_at, db.finished_at, sizeof da.finished_at);
    size_t la = 0, lb = 0;
    char *ta = write_to_memory(&da, &la), *tb = write_to_memory(&db, &lb);
    int same = ta && tb && la == lb && memcmp(ta, tb, la) == 0;
    free(ta);
    free(tb);
    return same;
}

/* ---- scenario JSON ------------------------------------------------------------------------ */

char *scenario_canonical_json(const char *json)
{
    json_error_t e;
    json_t *root = json ? json_loads(json, JSON_REJECT_DUPLICATES, &e) : NULL;
    if (!root)
        return NULL;
    char *out = json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(root);
    return out;
}

typedef struct {
    char *out;
    size_t len, used;
    int count, shown; /* fields that differ, and those written whole into out */
} diff_list;

#define DIFF_MORE_RESERVE 24 /* out's bytes kept for ", and N more" */

#define DIFF_VALUE_MAX 60 /* bytes of a value shown in a scenario diff */

/* v (or "absent" for NULL) in at most DIFF_VALUE_MAX bytes, cut at a UTF-8 character boundary
 * and ending in "..." when it was cut */
static void diff_value(const char *v, char out[DIFF_VALUE_MAX + 4])
{
    const char *s = v ? v : "absent";
    size_t n = strlen(s);
    if (n <= DIFF_VALUE_MAX) {
        memcpy(out, s, n + 1);
        return;
    }
    n = DIFF_VALUE_MAX - 3;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) /* not inside a character */
        n--;
    memcpy(out, s, n);
    memcpy(out + n, "...", 4);
}

static void diff_add(diff_list *d, const char *path, const json_t *a, const json_t *b)
{
    char *va = a ? json_dumps_short(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    char *vb = b ? json_dumps_short(b, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    char ca[DIFF_VALUE_MAX + 4], cb[DIFF_VALUE_MAX + 4];
    diff_value(va, ca);
    diff_value(vb, cb);
    /* a field is written whole or not at all: never cut in the middle of a name */
    int n = snprintf(NULL, 0, "%s%s (%s vs %s)", d->shown ? ", " : "", path, ca, cb);
    if (n > 0 && d->used + (size_t)n + DIFF_MORE_RESERVE < d->len && d->shown == d->count) {
        snprintf(d->out + d->used, d->len - d->used, "%s%s (%s vs %s)", d->shown ? ", " : "",
                 path, ca, cb);
        d->used += (size_t)n;
        d->shown++;
    }
    d->count++;
    free(va);
    free(vb);
}

static void diff_values(diff_list *d, const char *path, json_t *a, json_t *b);

static void diff_objects(diff_list *d, const char *path, json_t *a, json_t *b)
{
    const char *key;
    json_t *v;
    char sub[512];
    json_object_foreach(a, key, v) {
        snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", key);
        diff_values(d, sub, v, json_object_get(b, key));
    }
    json_object_foreach(b, key, v) {
        if (!json_object_get(a, key)) {
            snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", key);
            diff_add(d, sub, NULL, v);
        }
    }
}

static void diff_values(diff_list *d, const char *path, json_t *a, json_t *b)
{
    if (json_is_object(a) && json_is_object(b))
        diff_objects(d, path, a, b);
    else if (!a || !b || !json_same_value(a, b))
        diff_add(d, path[0] ? path : "(the whole scenario)", a, b);
}

int scenario_json_diff(const char *a, const char *b, char *out, size_t len)
{
    json_error_t e;
    json_t *ja = a ? json_loads(a, 0, &e) : NULL, *jb = b ? json_loads(b, 0, &e) : NULL;
    int n = -1;
    if (ja && jb) {
        diff_list d = {out, len, 0, 0, 0};
        if (len)
            out[0] = 0;
        diff_values(&d, "", ja, jb);
        if (d.count > d.shown && d.used < len)
            snprintf(out + d.used, len - d.used, "%sand %d more", d.shown ? ", " : "",
                     d.count - d.shown);
        n = d.count;
    }
    json_decref(ja);
    json_decref(jb);
    return n;
}
