/* harness/util/cmdline.h: the option parser of compare, baseline, report, runs, show and devices
 * (--name VALUE, --name=VALUE, flags, -h/--help, "--"), plus JSON helpers for --json output. */
#ifndef CMDLINE_H
#define CMDLINE_H

#include <jansson.h>
#include <stdint.h>

typedef struct {
    const char *name;    /* "--db" */
    const char **value;  /* for an option with a value */
    int *flag;           /* for a flag */
} cmd_opt;

/* Parses argv[1..] (argv[0] is the command name used in messages, e.g. "compare"). Positional
 * arguments go to pos (at most max_pos). An option value or a positional argument that is ""
 * is a usage error (every value of these commands is a path, a name or a number). Returns 0, 1
 * when --help was asked, 2 after a message. */
/* how many positional arguments cmd_parse would find in argv (as it skips option values),
 * however many there are: a command that takes at most N can say so for any count past N */
int cmd_count_positional(int argc, char **argv, const cmd_opt *opts);
int cmd_parse(int argc, char **argv, const cmd_opt *opts, const char **pos, int max_pos,
              int *n_pos);
/* "harness: error: CMD: MESSAGE (see 'harness CMD --help')", never truncated; returns 2 */
int cmd_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 0 when value is a non-empty string, else 2 after "CMD: WHAT: an empty value" */
int cmd_nonempty(const char *cmd, const char *what, const char *value);
/* a run id: a whole number >= 1; 0, or 2 after a message naming cmd and what */
int cmd_run_id(const char *cmd, const char *what, const char *s, int64_t *id);
/* a strict number from an option value in [lo, hi]; 0 or 2 after a message */
int cmd_number(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out);

/* a JSON string of s with invalid UTF-8 replaced by U+FFFD (jansson refuses invalid UTF-8) */
json_t *json_text(const char *s);
/* a JSON number, or null for NaN and infinities (JSON has neither) */
json_t *json_num(double v);
/* prints root indented (or compact) with a newline, then frees it; 0, or 1 when it failed */
int json_print(json_t *root, int compact);

#endif
