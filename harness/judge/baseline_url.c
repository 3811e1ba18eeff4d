/* harness/judge/baseline_url.c: baselines by URL: download (net/), verify the sha256, keep the file
 * in a cache named by its digest, so a site without network reads a copied cache. PUT uploads. */
#define _POSIX_C_SOURCE 200809L
#include "baseline_url.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baseline.h"
#include "net/net.h"
#include "util/util.h"

int baseline_is_url(const char *spec)
{
    return strncasecmp(spec, "https://", 8) == 0 || strncasecmp(spec, "http://", 7) == 0;
}

/* a URL this harness uses: http(s), and no user:password@ in it (messages, push's pull line and a
 * scenario's stored JSON would show the password); 0, or 2 after a message that masks it */
static int url_usable(const char *url)
{
    if (!baseline_is_url(url)) {
        log_error("%s: not an http:// or https:// URL", term_safe(url));
        return EXIT_USAGE;
    }
    const char *host = strstr(url, "://") + 3;
    size_t authority = strcspn(host, "/?#");
    const char *at = memchr(host, '@', authority);
    if (at) {
        log_error("%.*s***%s: user information in a URL is refused (messages, the pull line push "
                  "prints and a stored scenario would show it): give a bearer token in "
                  "HARNESS_BASELINE_TOKEN, or the login in ~/.netrc", (int)(host - url), url,
                  term_safe(at));
        return EXIT_USAGE;
    }
    return 0;
}

static int cache_dir(char *out, size_t len)
{
    const char *v;
    int n;
    if ((v = getenv("HARNESS_BASELINE_CACHE")) && *v)
        n = snprintf(out, len, "%s", v);
    else if ((v = getenv("XDG_CACHE_HOME")) && *v)
        n = snprintf(out, len, "%s/harness/baselines", v);
    else if ((v = getenv("HOME")) && *v)
        n = snprintf(out, len, "%s/.cache/harness/baselines", v);
    else
        n = snprintf(out, len, ".harness-baselines");
    if (n < 0 || (size_t)n >= len) {
        log_error("the baseline cache's path is too long");
        return EXIT_USAGE;
    }
    for (char *p = out + 1; *p; p++) /* mkdir -p */
        if (*p == '/') {
            *p = 0;
            mkdir(out, 0777);
            *p = '/';
        }
    struct stat sb;
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        log_error("cannot create the baseline cache %s: %s", out, strerror(errno));
        return EXIT_USAGE;
    }
    if (stat(out, &sb) != 0 || !S_ISDIR(sb.st_mode)) { /* found before anything is fetched */
        log_error("the baseline cache %s is not a folder", out);
        return EXIT_USAGE;
    }
    return 0;
}

/* transfers to a baseline server: HARNESS_BASELINE_TOKEN is the token (an over-long one is
 * refused, never cut); HF_TOKEN and the hub's token files are never read, nor sent */
static int config_for(const char *url, net_config *c)
{
    return net_config_init_token(c, url, "HARNESS_BASELINE_TOKEN") ? EXIT_USAGE : 0;
}

/* 1 when the regular file at path has the digest want (then it is the baseline asked for);
 * anything else there (a FIFO would block the read) is fetched again and replaced */
static int cached_ok(const char *path, const char *want)
{
    char got[65];
    struct stat sb;
    if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || file_sha256_hex(path, got) != 0)
        return 0;
    return strcasecmp(got, want) == 0;
}

static int save(const char *path, const char *body, size_t len)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(body, 1, len, f) == len;
    ok = (f && fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        log_error("cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return EXIT_USAGE;
    }
    return 0;
}

int baseline_url_fetch(const char *url, const char *digest, char *path, size_t len,
                       int *fetched)
{
    if (fetched)
        *fetched = 0;
    if (url_usable(url))
        return EXIT_USAGE;
    if (!is_hex(digest, 64)) {
        log_error("%s: the sha256 must be 64 hex digits, not '%s'", term_safe(url),
                  term_safe(digest));
        return EXIT_USAGE;
    }
    char dir[PATH_MAX - 80], want[65];
    snprintf(want, sizeof want, "%s", digest);
    for (char *p = want; *p; p++)
        *p = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
    int rc = cache_dir(dir, sizeof dir);
    if (rc)
        return rc;
    snprintf(path, len, "%s/%s.baseline", dir, want);
    if (cached_ok(path, want))
        return 0;
    net_config c;
    char *body = NULL, got[65];
    size_t n = 0;
    if ((rc = config_for(url, &c)) ||
        (rc = net_get_body(&c, url, input_cap(INPUT_BASELINE), &body, &n)))
        return rc;
    sha256_hex(body, n, got);
    if (strcmp(got, want) != 0) {
        log_error("%s: its sha256 is %s, not %s: refused, nothing imported or kept",
                  term_safe(url), got, want);
        rc = EXIT_USAGE;
    } else {
        baseline b; /* only a baseline that reads is kept: the digest may be of anything */
        rc = baseline_parse(body, n, term_safe(url), &b);
        if (!rc)
            baseline_free(&b);
        rc = rc ? rc : save(path, body, n);
        if (!rc && fetched)
            *fetched = 1;
    }
    free(body);
    return rc;
}

int baseline_url_push(const char *path, const char *url, char sha[65])
{
    net_config c;
    if (url_usable(url))
        return EXIT_USAGE;
    int rc = file_sha256_hex(path, sha);
    return rc ? rc : config_for(url, &c) ? EXIT_USAGE : net_put_file(&c, url, path);
}
