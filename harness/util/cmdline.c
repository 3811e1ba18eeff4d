/* harness/util/cmdline.c: the shared option parser of compare/baseline/report/runs/show/devices and
 * JSON helpers for --json output (strings made valid UTF-8, non-finite numbers as null). */
#include "cmdline.h"

#include "json_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "util.h"

int cmd_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *msg = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (msg) {
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    log_error("%s: %s (see 'harness %s --help')", cmd, msg ? msg : fmt, cmd);
    free(msg);
    return EXIT_USAGE;
}

int cmd_nonempty(const char *cmd, const char *what, const char *value)
{
    if (value && *value)
        return 0;
    return cmd_usage_error(cmd, "%s: an empty value (a path or name must not be \"\")", what);
}

/* 1 when arg is an option of opts, by itself or as --name=value, or --help / -h */
static int is_option_of(const char *arg, const cmd_opt *opts)
{
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
        return 1;
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    for (const cmd_opt *o = opts; o && o->name; o++)
        if (strlen(o->name) == len && strncmp(arg, o->name, len) == 0)
            return 1;
    return 0;
}

static int parse_option(const char *cmd, int argc, char **argv, int *i, const cmd_opt *opts)
{
    const char *arg = argv[*i], *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    for (const cmd_opt *o = opts; o && o->name; o++) {
        if (strlen(o->name) != len || strncmp(arg, o->name, len) != 0)
            continue;
        if (o->flag) {
            if (eq)
                return cmd_usage_error(cmd, "%s takes no value", o->name);
            *o->flag = 1;
        } else if (eq) {
            *o->value = eq + 1;
        } else if (*i + 1 < argc && is_option_of(argv[*i + 1], opts)) {
            /* "--out --db F": the value forgotten, never --db taken as a folder name (the
             * message was then about F); --out=--db gives such a value on purpose */
            return cmd_usage_error(cmd, "%s needs a value (the next argument, %s, is one of "
                                        "this command's options)", o->name, argv[*i + 1]);
        } else if (*i + 1 < argc) {
            *o->value = argv[++*i];
        } else {
            return cmd_usage_error(cmd, "%s needs a value", o->name);
        }
        return o->value ? cmd_nonempty(cmd, o->name, *o->value) : 0;
    }
    return cmd_usage_error(cmd, "unknown option '%s'", arg);
}

int cmd_parse(int argc, char **argv, const cmd_opt *opts, const char **pos, int max_pos,
              int *n_pos)
{
    const char *cmd = argv[0];
    int only_pos = 0;
    *n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_pos && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0))
            return 1;
        if (!only_pos && strcmp(a, "--") == 0)
            only_pos = 1;
        else if (!only_pos && a[0] == '-' && a[1]) {
            if (parse_option(cmd, argc, argv, &i, opts))
                return EXIT_USAGE;
        } else if (!*a)
            return cmd_nonempty(cmd, "an argument", a);
        else if (*n_pos < max_pos)
            pos[(*n_pos)++] = a;
        else
            return cmd_usage_error(cmd, "unexpected argument '%s'", a);
    }
    return 0;
}

int cmd_count_positional(int argc, char **argv, const cmd_opt *opts)
{
    int n = 0, only_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_pos && strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (only_pos || a[0] != '-' || !a[1]) {
            n++;
            continue;
        }
        for (const cmd_opt *o = opts; o && o->name; o++) /* an option's value is no argument */
            if (o->value && strcmp(a, o->name) == 0 && i + 1 < argc)
                i++;
    }
    return n;
}

int cmd_run_id(const char *cmd, const char *what, const char *s, int64_t *id)
{
    long v;
    if (parse_long(s, &v) || v < 1)
        return cmd_usage_error(cmd, "%s: '%s' is not a run id (a whole number >= 1)", what, s);
    *id = v;
    return 0;
}

int cmd_number(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out)
{
    double v;
    if (parse_double(s, &v) || !(v >= lo && v <= hi))
        return cmd_usage_error(cmd, "%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
    *out = v;
    return 0;
}

json_t *json_text(const char *s)
{
    s = s ? s : "";
    size_t n = strlen(s);
    char *clean = malloc(3 * n + 1), *w = clean;
    if (!clean)
        return json_null();
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int k = utf8_seq_len(p);
        if (k == 0) {
            memcpy(w, "\xef\xbf\xbd", 3);
            w += 3;
            p++;
        } else {
            memcpy(w, p, (size_t)k);
            w += k;
            p += k;
        }
    }
    *w = 0;
    json_t *j = json_string(clean);
    free(clean);
    return j ? j : json_null();
}

json_t *json_num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

int json_print(json_t *root, int compact)
{
    char *s = root ? json_dumps_short(root, compact ? JSON_COMPACT : JSON_INDENT(2)) : NULL;
    json_decref(root);
    if (!s) {
        log_error("cannot serialise the JSON output");
        return EXIT_FAIL;
    }
    puts(s);
    free(s);
    return 0;
}
