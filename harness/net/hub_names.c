/* harness/net/hub_names.c: names on the hub and in its cache: repository references
 * ([datasets/]ORG/NAME[@REV]), the cache folder's default, and what a server may name a file. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net.h"
#include "util/util.h"

/* a repo id part or a revision: [A-Za-z0-9._-], not starting with '.' or '-', no ".." */
static int name_part_ok(const char *s, size_t n)
{
    if (n == 0 || n > 96 || s[0] == '.' || s[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '.' || ch == '_' || ch == '-';
        if (!ok || (ch == '.' && i + 1 < n && s[i + 1] == '.'))
            return 0;
    }
    return !(n >= 2 && s[n - 1] == '-' && s[n - 2] == '-');
}

static int repo_id_ok(const char *id)
{
    const char *slash = strchr(id, '/');
    if (!slash)
        return name_part_ok(id, strlen(id));
    return name_part_ok(id, (size_t)(slash - id)) && !strchr(slash + 1, '/') &&
           name_part_ok(slash + 1, strlen(slash + 1)) && !strstr(id, "--");
}

/* a revision: a branch, tag or commit; "refs/pr/N" style with '/' between safe parts */
static int revision_ok(const char *rev)
{
    size_t n = strlen(rev);
    if (n == 0 || n > 200)
        return 0;
    for (const char *p = rev; *p;) {
        size_t part = strcspn(p, "/");
        if (!name_part_ok(p, part))
            return 0;
        p += part;
        if (*p == '/')
            p++;
        if (!*p && rev[n - 1] == '/')
            return 0;
    }
    return 1;
}

int repo_ref_parse(const char *spec, int dataset, const char *what, repo_ref *r)
{
    memset(r, 0, sizeof *r);
    r->type = dataset ? REPO_DATASET : REPO_MODEL;
    if (strncmp(spec, "datasets/", 9) == 0) {
        r->type = REPO_DATASET;
        spec += 9;
    } else if (strncmp(spec, "models/", 7) == 0) {
        spec += 7;
    }
    const char *at = strchr(spec, '@');
    size_t n = at ? (size_t)(at - spec) : strlen(spec);
    const char *rev = at ? at + 1 : "main";
    if (n >= sizeof r->id || strlen(rev) >= sizeof r->revision) {
        log_error("%s: %.64s...: too long", what, spec);
        return EXIT_USAGE;
    }
    memcpy(r->id, spec, n);
    r->id[n] = 0;
    snprintf(r->revision, sizeof r->revision, "%s", rev);
    if (!repo_id_ok(r->id)) {
        log_error("%s: '%s' is not a repository id (ORG/NAME or NAME: letters, digits, '.', '_', "
                  "'-'; no '..' or '--')", what, r->id);
        return EXIT_USAGE;
    }
    if (!revision_ok(r->revision)) {
        log_error("%s: '%s' is not a revision (a branch, tag or commit: letters, digits, '.', "
                  "'_', '-', '/' between names; no '..')", what, r->revision);
        return EXIT_USAGE;
    }
    if (is_hex(r->revision, 40)) /* a commit: one spelling in refs/, snapshots/, messages */
        hex_lower(r->revision);
    return 0;
}

int hub_cache_default(char *out, size_t len)
{
    const char *v;
    int n;
    if ((v = getenv("HF_HUB_CACHE")) && *v)
        n = snprintf(out, len, "%s", v);
    else if ((v = getenv("HUGGINGFACE_HUB_CACHE")) && *v)
        n = snprintf(out, len, "%s", v);
    else if ((v = getenv("HF_HOME")) && *v)
        n = snprintf(out, len, "%s/hub", v);
    else if ((v = getenv("XDG_CACHE_HOME")) && *v)
        n = snprintf(out, len, "%s/huggingface/hub", v);
    else if ((v = getenv("HOME")) && *v)
        n = snprintf(out, len, "%s/.cache/huggingface/hub", v);
    else {
        log_error("no cache folder: set HF_HUB_CACHE or HF_HOME (or HOME), or pass --cache DIR");
        return EXIT_USAGE;
    }
    if (n < 0 || (size_t)n >= len) {
        log_error("the cache folder's path is too long");
        return EXIT_USAGE;
    }
    return 0;
}

int hub_repo_folder(const char *cache, const repo_ref *r, char *out, size_t len)
{
    char flat[300];
    snprintf(flat, sizeof flat, "%s", r->id);
    char *slash = strchr(flat, '/');
    int n = slash ? (*slash = 0, snprintf(out, len, "%s/%s--%s--%s", cache,
                                          r->type == REPO_DATASET ? "datasets" : "models", flat,
                                          slash + 1))
                  : snprintf(out, len, "%s/%s--%s", cache,
                             r->type == REPO_DATASET ? "datasets" : "models", flat);
    if (n < 0 || (size_t)n >= len) {
        log_error("%s: the cache path is too long", cache);
        return EXIT_USAGE;
    }
    return 0;
}

int hub_path_is_safe(const char *path)
{
    size_t n = strlen(path);
    if (n == 0 || n > 1024 || path[0] == '/')
        return 0;
    for (const char *p = path; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\')
            return 0;
    for (const char *p = path; *p;) {
        size_t part = strcspn(p, "/");
        if (part == 0 || part > 255 || (part == 1 && p[0] == '.') ||
            (part == 2 && p[0] == '.' && p[1] == '.'))
            return 0; /* 255: NAME_MAX, the longest name a folder holds */
        p += part;
        if (*p == '/' && !*++p)
            return 0; /* a trailing '/' */
    }
    return 1;
}

int hub_etag_is_safe(const char *etag)
{
    size_t n = strlen(etag);
    if (n == 0 || n > 128)
        return 0;
    return strspn(etag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

const char *hub_default_endpoint(void)
{
    const char *v = getenv("HF_ENDPOINT");
    return v && *v ? v : "https://huggingface.co";
}

int hub_offline(void)
{
    const char *v = getenv("HF_HUB_OFFLINE");
    if (!v)
        return 0;
    const char *yes[] = {"1", "ON", "YES", "TRUE"}; /* huggingface_hub: value.upper() in these */
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (strcasecmp(v, yes[i]) == 0)
            return 1;
    return 0;
}
