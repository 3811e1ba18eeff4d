/* harness/util/util.c: small shared helpers: messages (control bytes escaped), files and paths,
 * clocks, host identity, sha256 through OpenSSL's libcrypto, strict number parsing. */
#define _POSIX_C_SOURCE 200809L
#include "util.h"

#include "escape.h"
#include "input_file.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int log_quiet = 0;
int log_rank = 0;

/* the message formatted, then written with its control bytes escaped (escape.h's esc_term):
 * a name or a message that quotes user data cannot drive the terminal */
static void vlog(const char *tag, const char *fmt, va_list ap)
{
    char small[2048], *text = small;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= (int)sizeof small && (text = malloc((size_t)n + 1)) != NULL)
        vsnprintf(text, (size_t)n + 1, fmt, again);
    va_end(again);
    if (!text)
        text = small; /* out of memory: the message truncated */
    fprintf(stderr, "harness: %s", tag);
    char rank[32] = "";
    if (log_rank > 0) /* not twice: some messages name their rank themselves */
        snprintf(rank, sizeof rank, "rank %d: ", log_rank);
    if (rank[0] && strncmp(text, rank, strlen(rank)) != 0)
        fputs(rank, stderr);
    esc_term_n(stderr, text, n < 0 ? 0 : strlen(text));
    fputc('\n', stderr);
    if (text != small)
        free(text);
}

void log_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog("error: ", fmt, ap);
    va_end(ap);
}

void log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog("warning: ", fmt, ap);
    va_end(ap);
}

void log_info(const char *fmt, ...)
{
    if (log_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog("", fmt, ap);
    va_end(ap);
}

char *read_file(const char *path, size_t *len)
{
    char why[INPUT_WHY_LEN];
    return input_read(path, INPUT_ANY, len, why, sizeof why);
}

void path_dirname(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, len, ".");
    else if (slash == path)
        snprintf(out, len, "/");
    else
        snprintf(out, len, "%.*s", (int)(slash - path), path);
}

void path_join(const char *base, const char *rel, char *out, size_t len)
{
    if (rel[0] == '/' || !base[0] || strcmp(base, ".") == 0)
        snprintf(out, len, "%s", rel);
    else
        snprintf(out, len, "%s/%s", base, rel);
}

double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void iso_time_now(char *out, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int two_digits(const char *s)
{
    return (s[0] - '0') * 10 + (s[1] - '0');
}

int iso_fields_in_range(const char *s, size_t n)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int year = two_digits(s) * 100 + two_digits(s + 2), month = two_digits(s + 5);
    int day = two_digits(s + 8), leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (month < 1 || month > 12 || day < 1 || day > days[month - 1] + (month == 2 && leap))
        return 0;
    if (n >= 16 && (two_digits(s + 11) > 23 || two_digits(s + 14) > 59))
        return 0;
    return n < 19 || two_digits(s + 17) <= 59;
}

/* days from 1970-01-01 to year-month-day of the proleptic Gregorian calendar */
static long days_from_civil(long y, long m, long d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

void iso_shift_minutes(const char *s, long minutes, char out[20])
{
    long secs = (days_from_civil(two_digits(s) * 100 + two_digits(s + 2), two_digits(s + 5),
                                 two_digits(s + 8)) * 24 + two_digits(s + 11)) * 3600 +
                two_digits(s + 14) * 60L + two_digits(s + 17) + minutes * 60;
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(out, 20, "%Y-%m-%dT%H:%M:%S", &tm) != 19)
        memcpy(out, s, 19); /* out of time_t's or the 4-digit year's range: as given */
    out[19] = 0;
}

void host_name(char *out, size_t len)
{
    if (gethostname(out, len) != 0)
        snprintf(out, len, "unknown");
    out[len - 1] = 0;
}

void sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL)) {
        snprintf(out, 65, "sha256-failed");
        return;
    }
    for (unsigned i = 0; i < mdlen && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int parse_long(const char *s, long *out)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int parse_double(const char *s, double *out)
{
    /* strtod alone takes " 2" and hexadecimal "0x10" */
    if (!s || !*s || isspace((unsigned char)*s) || strpbrk(s, "xX"))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}
