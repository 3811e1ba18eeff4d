/* harness/net/hub_fetch.c: `harness fetch`'s work: a revision's file list from the hub API, then
 * each file by resolve/COMMIT/PATH: its etag and size, a verified download into blobs/, a link. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hub_cache.h"
#include "util/util.h"

#define API_BODY_CAP (64u << 20)     /* the most bytes of one API answer */
#define MAX_FILES 100000             /* the most files in one revision */
#define MAX_FILE_BYTES (1LL << 42)   /* 4 TiB: the largest file taken */

typedef struct {
    const repo_ref *r;
    const fetch_options *o;
    net_config cfg;
    char endpoint[1024];       /* without a trailing '/' */
    char repo_dir[3072];
    char commit[41];
    char **files;
    size_t n_files;
    char (*etags)[192]; /* the blob of each file fetched, "" for one not (yet) fetched */
    fetch_result *res;
} fetch_ctx;

/* percent-encodes s into out (bytes outside [A-Za-z0-9._~-], and '/' unless keep_slash) */
static int url_encode(const char *s, int keep_slash, char *out, size_t len)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || strchr("._~-", *p) || (keep_slash && *p == '/');
        if (n + 4 >= len)
            return -1;
        n += plain ? (size_t)snprintf(out + n, len - n, "%c", *p)
                   : (size_t)snprintf(out + n, len - n, "%%%02X", *p);
    }
    out[n] = 0;
    return 0;
}

static const char *type_path(const repo_ref *r)
{
    return r->type == REPO_DATASET ? "datasets" : "models";
}

/* ---- the file list ------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "a" and "a/b" cannot both be files of a snapshot: refused before anything is written */
static int check_file_vs_folder(fetch_ctx *x)
{
    qsort(x->files, x->n_files, sizeof *x->files, cmp_str);
    for (size_t i = 0; i < x->n_files; i++) {
        size_t n = strlen(x->files[i]);
        for (size_t j = i + 1; j < x->n_files && strncmp(x->files[j], x->files[i], n) == 0; j++)
            if (x->files[j][n] == '/') {
                log_error("%s: the server lists both '%s' and '%s' (a file and a folder of one "
                          "name): refused", x->r->id, term_safe(x->files[i]),
                          term_safe(x->files[j]));
                return EXIT_USAGE;
            }
    }
    return 0;
}

static int take_siblings(fetch_ctx *x, json_t *sib, const char *url)
{
    size_t n = json_array_size(sib);
    if (!json_is_array(sib) || n > MAX_FILES) {
        log_error("%s: \"siblings\" is not an array of at most %d files", url, MAX_FILES);
        return EXIT_USAGE;
    }
    x->files = calloc(n ? n : 1, sizeof *x->files);
    if (!x->files)
        return log_error("out of memory"), EXIT_USAGE;
    for (size_t i = 0; i < n; i++) {
        json_t *name = json_object_get(json_array_get(sib, i), "rfilename");
        if (!json_is_string(name)) {
            log_error("%s: siblings[%zu].rfilename: not a string", url, i);
            return EXIT_USAGE;
        }
        const char *p = json_string_value(name);
        if (!hub_path_is_safe(p)) {
            log_error("%s: siblings[%zu]: the server names the file '%s': refused (an absolute "
                      "path, '..', '.', an empty part or a control byte would leave the "
                      "snapshot folder; a part over 255 bytes no folder holds)", url, i, term_safe(p));
            return EXIT_USAGE;
        }
        if (!(x->files[x->n_files++] = strdup(p)))
            return log_error("out of memory"), EXIT_USAGE;
    }
    return check_file_vs_folder(x);
}

/* the API's "sha": 40 hex digits, and the commit itself when the revision asked for is one */
static int take_commit(fetch_ctx *x, json_t *sha, const char *url)
{
    if (!json_is_string(sha) || !is_hex(json_string_value(sha), 40)) {
        log_error("%s: \"sha\": not a commit hash (40 hex digits)", url);
        return EXIT_USAGE;
    }
    snprintf(x->commit, sizeof x->commit, "%s", json_string_value(sha));
    hex_lower(x->commit);
    if (is_hex(x->r->revision, 40) && strcasecmp(x->commit, x->r->revision) != 0) {
        log_error("%s@%s: the server answers with commit %s, not the commit %s asked for: "
                  "refused, nothing written", x->r->id, x->r->revision, x->commit,
                  x->r->revision);
        return EXIT_USAGE;
    }
    return 0;
}

static int list_files(fetch_ctx *x)
{
    char id[600], rev[800], url[4096];
    url_encode(x->r->id, 1, id, sizeof id);
    url_encode(x->r->revision, 0, rev, sizeof rev);
    snprintf(url, sizeof url, "%s/api/%s/%s/revision/%s", x->endpoint, type_path(x->r), id, rev);
    char *body = NULL;
    size_t len = 0;
    int rc = net_get_text(&x->cfg, url, API_BODY_CAP, &body, &len, NULL);
    if (rc)
        return rc;
    json_error_t e;
    json_t *root = json_loadb(body, len, 0, &e);
    free(body);
    if (!json_is_object(root)) {
        if (root) /* JSON, but not an object */
            log_error("%s: the answer is a JSON %s, not an object", url, json_type_name(root));
        else
            log_error("%s: not JSON (line %d: %s)", url, e.line, e.text);
        rc = EXIT_USAGE;
    } else if ((rc = take_commit(x, json_object_get(root, "sha"), url)) == 0) {
        rc = take_siblings(x, json_object_get(root, "siblings"), url);
    }
    json_decref(root);
    return rc;
}

/* ---- one file ----------------------------------------------------------------------------- */

static int wanted(const char *include, const char *path)
{
    if (!include)
        return 1;
    char globs[1024];
    snprintf(globs, sizeof globs, "%s", include);
    for (char *save, *g = strtok_r(globs, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
        char folder[1100]; /* "sub/" means everything under sub/, as huggingface_hub reads it */
        size_t n = strlen(g);
        if (n && g[n - 1] == '/' && snprintf(folder, sizeof folder, "%s*", g) > 0)
            g = folder;
        if (fnmatch(g, path, 0) == 0)
            return 1;
    }
    return 0;
}

typedef struct {
    char url[8192], etag[192], blob[3328], part[3360];
    int64_t size;
    int lfs;
} remote_file;

/* an answer without an etag: the file cannot be checked (a redirect to another host that is
 * not the CDN of an LFS file says where it went) */
static int no_etag(const char *url, const net_headers *h)
{
    if (h->status >= 300)
        log_error("%s: HTTP %ld to %s, not followed (a HEAD follows redirects on its own host "
                  "only), and no X-Linked-Etag: no digest to check the file against", url,
                  h->status, h->location[0] ? term_safe(h->location) : "(no Location)");
    else
        log_error("%s: HTTP %ld without an ETag or X-Linked-Etag: no digest to check the file "
                  "against", url, h->status);
    return EXIT_USAGE;
}

/* HEAD resolve/COMMIT/PATH (redirects on the hub's host followed, as for a renamed repo): the
 * etag (blob name and digest), the size, the commit; f->url is where the HEAD was answered */
static int file_metadata(fetch_ctx *x, const char *path, remote_file *f)
{
    char id[600], enc[4096], url[sizeof f->url];
    url_encode(x->r->id, 1, id, sizeof id);
    if (url_encode(path, 1, enc, sizeof enc) != 0)
        return log_error("%s: the file name is too long", term_safe(path)), EXIT_USAGE;
    snprintf(url, sizeof url, "%s/%s%s/resolve/%s/%s", x->endpoint,
             x->r->type == REPO_DATASET ? "datasets/" : "", id, x->commit, enc);
    net_headers h;
    int rc = net_head(&x->cfg, url, &h, f->url, sizeof f->url);
    if (rc)
        return rc;
    f->lfs = h.linked_etag[0] != 0;
    snprintf(f->etag, sizeof f->etag, "%s", f->lfs ? h.linked_etag : h.etag);
    f->size = h.linked_size >= 0 ? h.linked_size : h.status < 300 ? h.content_length : -1;
    const char *u = term_safe(f->url);
    if (h.linked_size == NET_SIZE_MALFORMED)
        return log_error("%s: X-Linked-Size: not a whole number of bytes", u), EXIT_USAGE;
    if (h.repo_commit[0] && strcasecmp(h.repo_commit, x->commit) != 0)
        return log_error("%s: the server answers for commit %s, not %s", u,
                         term_safe(h.repo_commit), x->commit), EXIT_USAGE;
    if (!f->etag[0])
        return no_etag(u, &h);
    if (!hub_etag_is_safe(f->etag))
        return log_error("%s: the ETag '%s' is not a digest (letters, digits, '-', '_'; at most "
                         "128): refused as a file name", u, term_safe(f->etag)), EXIT_USAGE;
    if (f->lfs && !is_hex(f->etag, 64))
        return log_error("%s: X-Linked-Etag '%s' is not a sha256 (64 hex digits)", u,
                         term_safe(f->etag)), EXIT_USAGE;
    if (f->size < 0 || f->size > MAX_FILE_BYTES)
        return log_error("%s: no size, or a size over %lld bytes (X-Linked-Size, "
                         "Content-Length)", u, MAX_FILE_BYTES), EXIT_USAGE;
    snprintf(f->blob, sizeof f->blob, "%s/blobs/%s", x->repo_dir, f->etag);
    snprintf(f->part, sizeof f->part, "%s.incomplete", f->blob);
    return 0;
}

/* the partial file's digest against the etag: sha256 (LFS) or git's blob id (40 hex) */
static int verify(const remote_file *f, const char *path)
{
    char got[65];
    int sha256 = is_hex(f->etag, 64), git = is_hex(f->etag, 40);
    if (!sha256 && !git) {
        log_warn("%s: the ETag '%s' is no digest the harness knows: only its size is checked",
                 term_safe(path), term_safe(f->etag));
        return 0;
    }
    int rc = sha256 ? file_sha256_hex(f->part, got) : file_git_sha1_hex(f->part, got);
    if (rc)
        return rc;
    if (strcasecmp(got, f->etag) == 0)
        return 0;
    unlink(f->part);
    log_error("%s: its %s is %s, the server announced %s: refused, nothing kept in the cache",
              term_safe(path), sha256 ? "sha256" : "git blob id", got, f->etag);
    return EXIT_USAGE;
}

static int have_blob(const remote_file *f)
{
    struct stat st;
    return lstat(f->blob, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == f->size;
}

/* the file into blobs/<etag>.incomplete, verified, renamed to blobs/<etag>; under the lock */
static int download_blob(fetch_ctx *x, const remote_file *f, const char *path)
{
    int64_t transferred = 0;
    int rc = net_download(&x->cfg, f->url, f->part, f->size, path, &transferred);
    x->res->bytes += transferred;
    if (rc || (rc = verify(f, path)))
        return rc;
    if (rename(f->part, f->blob) != 0)
        return log_error("cannot move %s to %s: %s", f->part, f->blob, strerror(errno)),
               EXIT_USAGE;
    x->res->downloaded++;
    x->res->resumed += transferred < f->size;
    return 0;
}

/* file i's blob in blobs/ (downloaded unless there already), its etag into x->etags[i]; the
 * repository's folders are made before the first download, not before the first answer */
static int fetch_file(fetch_ctx *x, size_t i)
{
    const char *path = x->files[i];
    remote_file f;
    int rc = file_metadata(x, path, &f), lock = -1;
    if (rc)
        return rc;
    x->res->files++;
    snprintf(x->etags[i], sizeof x->etags[i], "%s", f.etag);
    if (!have_blob(&f)) {
        if (mkdir_p(x->repo_dir) || mkdir_below(x->repo_dir, "blobs"))
            return EXIT_USAGE;
        rc = hub_lock_blob(x->o->cache, x->repo_dir, f.etag, path, &lock);
        if (!rc && have_blob(&f)) /* another process downloaded it while this one waited */
            log_info("%s: downloaded by another process meanwhile", term_safe(path));
        else if (!rc)
            rc = download_blob(x, &f, path);
        hub_unlock_blob(lock);
    }
    return rc;
}

/* ---- the repository ----------------------------------------------------------------------- */

static int fetch_online(fetch_ctx *x)
{
    int rc = list_files(x);
    if (!rc && x->n_files == 0) { /* nothing a model or dataset could be loaded from */
        log_error("%s@%s: the repository lists no files at commit %s: nothing to fetch, "
                  "nothing written", x->r->id, x->r->revision, x->commit);
        rc = EXIT_USAGE;
    }
    if (!rc && !(x->etags = calloc(x->n_files, sizeof *x->etags)))
        rc = (log_error("out of memory"), EXIT_USAGE);
    /* every blob first, the snapshot's links once all are there: a fetch that fails part way
     * (a file the server refuses, a digest that does not match) leaves no snapshot a later
     * offline lookup would take for the whole repository */
    for (size_t i = 0; !rc && i < x->n_files; i++)
        if (wanted(x->o->include, x->files[i]))
            rc = fetch_file(x, i);
    for (size_t i = 0; !rc && i < x->n_files; i++)
        if (x->etags[i][0])
            rc = hub_link_snapshot(x->repo_dir, x->commit, x->files[i], x->etags[i]);
    if (!rc && x->res->files == 0) {
        char snap[PATH_MAX];
        snprintf(snap, sizeof snap, "snapshots/%s", x->commit);
        rc = mkdir_p(x->repo_dir) || mkdir_below(x->repo_dir, snap) ? EXIT_USAGE : 0;
        log_warn("%s@%s: none of its %zu files matches --include %s", x->r->id,
                 x->r->revision, x->n_files, term_safe(x->o->include));
    }
    if (!rc)
        rc = hub_write_ref(x->repo_dir, x->r->revision, x->commit);
    return rc;
}

int hub_fetch(const repo_ref *r, const fetch_options *o, fetch_result *res)
{
    memset(res, 0, sizeof *res);
    fetch_ctx x;
    memset(&x, 0, sizeof x);
    x.r = r;
    x.o = o;
    x.res = res;
    int rc = hub_repo_folder(o->cache, r, x.repo_dir, sizeof x.repo_dir);
    if (rc)
        return rc;
    if (o->offline) {
        rc = hub_cache_snapshot(o->cache, r, res->snapshot, sizeof res->snapshot);
        if (!rc)
            snprintf(res->commit, sizeof res->commit, "%s",
                     strrchr(res->snapshot, '/') + 1);
        return rc;
    }
    size_t n = strlen(o->endpoint);
    while (n && o->endpoint[n - 1] == '/')
        n--;
    if (n >= sizeof x.endpoint)
        return log_error("the endpoint URL is too long"), EXIT_USAGE;
    memcpy(x.endpoint, o->endpoint, n);
    if ((rc = net_config_init(&x.cfg, x.endpoint)) == 0 && (rc = fetch_online(&x)) == 0) {
        snprintf(res->commit, sizeof res->commit, "%s", x.commit);
        snprintf(res->snapshot, sizeof res->snapshot, "%s/snapshots/%s", x.repo_dir, x.commit);
    }
    for (size_t i = 0; i < x.n_files; i++)
        free(x.files[i]);
    free(x.files);
    free(x.etags);
    return rc;
}
