/* harness/net/config.c: how transfers behave, from the environment: the endpoint's scheme, the
 * bearer token (HF_TOKEN, the hub's token file, or one named variable), retries, timeouts. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net.h"
#include "util/util.h"

/* an integer variable in [lo, hi], or def when unset; 0, or 2 after a message */
static int env_long(const char *name, long lo, long hi, long def, long *out)
{
    const char *v = getenv(name);
    *out = def;
    if (!v || !*v)
        return 0;
    if (parse_long(v, out) != 0 || *out < lo || *out > hi) {
        log_error("%s=%s: not a whole number in [%ld, %ld]", name, v, lo, hi);
        return EXIT_USAGE;
    }
    return 0;
}

/* the token file's first line (huggingface_hub writes it with `hf auth login`) */
/* a token as huggingface_hub cleans one (CR and LF dropped, blanks stripped from both ends), in
 * place; 0, or 2 after a message naming where it came from (never the token) when a control
 * byte is left in it, which would reach the Authorization header */
static int clean_token(char *t, const char *from)
{
    size_t w = 0;
    for (size_t r = 0; t[r]; r++)
        if (t[r] != '\r' && t[r] != '\n')
            t[w++] = t[r];
    t[w] = 0;
    size_t start = strspn(t, " \t");
    memmove(t, t + start, strlen(t + start) + 1);
    for (size_t n = strlen(t); n && (t[n - 1] == ' ' || t[n - 1] == '\t'); n--)
        t[n - 1] = 0;
    for (const unsigned char *c = (const unsigned char *)t; *c; c++)
        if (*c < 0x20 || *c == 0x7f) {
            log_error("the token from %s holds a control character: refused (the token is not "
                      "printed)", from);
            return EXIT_USAGE;
        }
    return 0;
}

static int read_token_file(const char *path, char *out, size_t len)
{
    size_t n = 0;
    char why[INPUT_WHY_LEN];
    struct stat st;
    if (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
        return 0; /* no token file: no token */
    char *text = input_read(path, INPUT_ANY, &n, why, sizeof why);
    if (!text) { /* one that is there but cannot be read (a folder, a FIFO, a device, denied) */
        log_error("token file %s: %s", term_safe(path), why);
        return EXIT_USAGE;
    }
    n = strcspn(text, "\r\n");
    while (n && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        n--;
    int rc = 0;
    if (n >= len) {
        log_error("the token in %s is longer than %zu bytes", path, len - 1);
        rc = EXIT_USAGE;
    } else {
        memcpy(out, text, n);
        out[n] = 0;
        rc = clean_token(out, path);
    }
    free(text);
    return rc;
}

/* the variable name's value into out ("" when unset); a longer one is refused, never cut */
static int env_token(const char *name, char *out, size_t len)
{
    const char *v = getenv(name);
    out[0] = 0;
    if (!v || !*v)
        return 0;
    if (strlen(v) >= len) {
        log_error("%s is %zu bytes long, longer than the %zu bytes a token may have: refused",
                  name, strlen(v), len - 1);
        return EXIT_USAGE;
    }
    memcpy(out, v, strlen(v) + 1);
    return clean_token(out, name);
}

static int find_token(char *out, size_t len)
{
    out[0] = 0;
    const char *v = getenv("HF_TOKEN");
    if (v && *v)
        return env_token("HF_TOKEN", out, len);
    v = getenv("HUGGING_FACE_HUB_TOKEN");
    if (v && *v)
        return env_token("HUGGING_FACE_HUB_TOKEN", out, len);
    char path[4096];
    const char *tp = getenv("HF_TOKEN_PATH"), *home = getenv("HF_HOME");
    const char *xdg = getenv("XDG_CACHE_HOME"), *user = getenv("HOME");
    if (tp && *tp)
        snprintf(path, sizeof path, "%s", tp);
    else if (home && *home)
        snprintf(path, sizeof path, "%s/token", home);
    else if (xdg && *xdg)
        snprintf(path, sizeof path, "%s/huggingface/token", xdg);
    else if (user && *user)
        snprintf(path, sizeof path, "%s/.cache/huggingface/token", user);
    else
        return 0;
    return read_token_file(path, out, len);
}

/* all but the token: the endpoint's scheme, retries, backoff, timeouts, the progress style */
static int config_common(net_config *c, const char *endpoint)
{
    memset(c, 0, sizeof *c);
    if (strncmp(endpoint, "https://", 8) == 0)
        snprintf(c->endpoint_scheme, sizeof c->endpoint_scheme, "https");
    else if (strncmp(endpoint, "http://", 7) == 0)
        snprintf(c->endpoint_scheme, sizeof c->endpoint_scheme, "http");
    else {
        log_error("endpoint %s: not an http:// or https:// URL", term_safe(endpoint));
        return EXIT_USAGE;
    }
    long retries, backoff, etag, stall;
    if (env_long("HARNESS_NET_RETRIES", 0, 20, 5, &retries) ||
        env_long("HARNESS_NET_BACKOFF_MS", 0, 60000, 1000, &backoff) ||
        env_long("HF_HUB_ETAG_TIMEOUT", 1, 3600, 10, &etag) ||
        env_long("HF_HUB_DOWNLOAD_TIMEOUT", 1, 3600, 10, &stall))
        return EXIT_USAGE;
    c->retries = (int)retries;
    c->backoff_ms = backoff;
    c->connect_timeout_s = etag;
    c->stall_timeout_s = stall;
    c->progress_bar = isatty(STDERR_FILENO);
    return 0;
}

int net_config_init(net_config *c, const char *endpoint)
{
    if (config_common(c, endpoint) || find_token(c->token, sizeof c->token))
        return EXIT_USAGE;
    snprintf(c->auth_hint, sizeof c->auth_hint, "needs a token with access (HF_TOKEN), or the "
             "repository is gated or private");
    return 0;
}

int net_config_init_token(net_config *c, const char *endpoint, const char *token_var)
{
    if (config_common(c, endpoint) || env_token(token_var, c->token, sizeof c->token))
        return EXIT_USAGE;
    snprintf(c->auth_hint, sizeof c->auth_hint, "needs a token with access (%s)", token_var);
    return 0;
}
