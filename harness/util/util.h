/* harness/util/util.h: small shared helpers: exit codes, error and progress messages, files, time,
 * host identity and sha256 (OpenSSL's libcrypto). */
#ifndef UTIL_H
#define UTIL_H

#include <stddef.h>
#include <stdint.h>

/* util/ public face: this header and the helpers it pulls in; outside util/, include only this */
#include "cmdline.h"
#include "escape.h"
#include "hostinfo.h"
#include "input_file.h"
#include "json_locate.h"
#include "json_util.h"

/* the git commit the binary was built from ("" outside a checkout); generated at build time */
extern const char *harness_git_commit;

/* exit codes used by every command */
enum { EXIT_PASS = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* v for printf: a NaN of either sign as the positive one, so text output reads "nan", never the
 * C library's "-nan" (infinities print as "inf" and "-inf" already) */
static inline double printable_real(double v)
{
    return v != v ? __builtin_nan("") : v;
}

/* "harness: error: ..." on stderr; in all three the formatted text has its control bytes
 * escaped (\e, \n, \xNN: escape.h's esc_term), so quoting user data in a message is safe */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "harness: warning: ..." on stderr */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* progress to stderr unless quiet mode */
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern int log_quiet;
/* this process's rank when a launcher started it as one rank other than 0 (main sets it): every
 * message then begins "rank N: ", so the message of a rank that stops alone says whose it is */
extern int log_rank;

/* a whole regular file into a NUL-terminated heap buffer, at most input_file.h's INPUT_ANY cap;
 * NULL (and errno) on failure. Readers of user input use input_read, which says why. */
char *read_file(const char *path, size_t *len);
/* directory part of path into out ("." when none) */
void path_dirname(const char *path, char *out, size_t len);
/* base joined with rel unless rel is absolute */
void path_join(const char *base, const char *rel, char *out, size_t len);

double now_ms(void);                        /* monotonic clock */
void iso_time_now(char *out, size_t len);   /* UTC, ISO 8601 */
/* s begins with the digits of YYYY-MM-DDTHH:MM:SS (its shape checked by the caller), n of those
 * characters present (10, 16 or 19): 1 when each field present is a real time (month 1-12, a
 * day of that month, hour 0-23, minutes and seconds 0-59) */
int iso_fields_in_range(const char *s, size_t n);
/* the UTC time of YYYY-MM-DDTHH:MM:SS (fields in range) shifted by minutes, as the same form
 * into out[20] */
void iso_shift_minutes(const char *s, long minutes, char out[20]);
void host_name(char *out, size_t len);
/* lowercase hex sha256 of data into out[65] */
void sha256_hex(const void *data, size_t len, char out[65]);

/* strict number parsing for command-line values: 0 ok, -1 if s is not entirely a number (no
 * leading space; parse_double takes no hexadecimal) */
int parse_long(const char *s, long *out);
int parse_double(const char *s, double *out);

#endif
