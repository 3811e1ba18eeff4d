/* harness/net/http.c: HTTP transfers over libcurl: one configured handle per request (protocols,
 * redirect policy, timeouts, bearer token, capped headers), GET to memory, HEAD and PUT. */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "http_internal.h"
#include "util/util.h"

#define MAX_BACKOFF_MS 60000      /* the own wait between tries doubles up to this */
#define MAX_RETRY_AFTER_S 3600L   /* a server's Retry-After is honoured up to this */

int net_global_init(void)
{
    static int done;
    if (done)
        return 0;
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        log_error("libcurl: global init failed: %s", curl_easy_strerror(rc));
        return EXIT_USAGE;
    }
    done = 1;
    return 0;
}

/* ---- response headers ------------------------------------------------------------------- */

static void header_value(const char *line, size_t n, size_t name_len, char *out, size_t len)
{
    const char *v = line + name_len;
    size_t m = n - name_len;
    while (m && (*v == ' ' || *v == '\t'))
        v++, m--;
    while (m && (v[m - 1] == '\r' || v[m - 1] == '\n' || v[m - 1] == ' '))
        m--;
    if (m >= len)
        m = len - 1;
    memcpy(out, v, m);
    out[m] = 0;
}

/* W/"abc" or "abc" -> abc, as huggingface_hub normalizes an ETag */
static void normalize_etag(char *etag)
{
    char *s = etag;
    if (strncmp(s, "W/", 2) == 0)
        s += 2;
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"')
        s++, n -= 2;
    memmove(etag, s, n);
    etag[n] = 0;
}

static int64_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return (errno || end == s || *end || v < 0) ? -1 : (int64_t)v;
}

/* Link: <URL>; rel="next" */
static void parse_link(const char *v, char *out, size_t len)
{
    const char *lt = strchr(v, '<'), *gt = lt ? strchr(lt, '>') : NULL;
    if (!gt || !strstr(gt, "rel=\"next\""))
        return;
    size_t n = (size_t)(gt - lt - 1);
    if (n < len) {
        memcpy(out, lt + 1, n);
        out[n] = 0;
    }
}

static void reset_headers(net_headers *h)
{
    memset(h, 0, sizeof *h);
    h->linked_size = h->content_length = h->retry_after_s = -1;
}

static void take_header(net_headers *h, const char *line, size_t n)
{
    char v[2048];
#define IS(name) (n > sizeof name - 1 && strncasecmp(line, name, sizeof name - 1) == 0)
#define VALUE(name, out) header_value(line, n, sizeof name - 1, out, sizeof out)
    if (IS("etag:")) {
        VALUE("etag:", h->etag);
        normalize_etag(h->etag);
    } else if (IS("x-linked-etag:")) {
        VALUE("x-linked-etag:", h->linked_etag);
        normalize_etag(h->linked_etag);
    } else if (IS("x-repo-commit:")) {
        VALUE("x-repo-commit:", h->repo_commit);
    } else if (IS("x-linked-size:")) {
        VALUE("x-linked-size:", v);
        h->linked_size = parse_size(v);
        if (h->linked_size < 0)
            h->linked_size = NET_SIZE_MALFORMED;
    } else if (IS("content-length:")) {
        VALUE("content-length:", v);
        h->content_length = parse_size(v);
    } else if (IS("content-range:")) {
        VALUE("content-range:", h->content_range);
    } else if (IS("location:")) {
        VALUE("location:", h->location);
    } else if (IS("retry-after:")) {
        VALUE("retry-after:", v);
        int64_t s = parse_size(v);
        if (s < 0 && v[0] && strspn(v, "0123456789") == strlen(v))
            s = MAX_RETRY_AFTER_S; /* digits past int64: capped, never dropped */
        h->retry_after_s = s > MAX_RETRY_AFTER_S ? MAX_RETRY_AFTER_S : s;
    } else if (IS("link:")) {
        VALUE("link:", v);
        parse_link(v, h->next_link, sizeof h->next_link);
    }
#undef IS
#undef VALUE
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    transfer *t = arg;
    size_t n = size * nmemb;
    t->header_bytes += n;
    if (t->header_bytes > NET_MAX_HEADER_BYTES) {
        t->failure = FAIL_HEADERS;
        return 0;
    }
    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new response (after a redirect) */
        reset_headers(&t->h);
        t->header_bytes = n;
    }
    take_header(&t->h, data, n);
    return n;
}

/* ---- the handle -------------------------------------------------------------------------- */

CURL *transfer_handle(const net_config *c, transfer *t, const char *url, int follow)
{
    reset_headers(&t->h);
    t->header_bytes = 0;
    t->failure = FAIL_NONE;
    t->curl_error[0] = 0;
    snprintf(t->auth_hint, sizeof t->auth_hint, "%s", c->auth_hint);
    CURL *e = curl_easy_init();
    if (!e)
        return NULL;
    char redir[16];
    snprintf(redir, sizeof redir, "%s", strcmp(c->endpoint_scheme, "http") == 0 ? "https,http" : "https");
    int bad = curl_easy_setopt(e, CURLOPT_URL, url) != CURLE_OK ||
              curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
              curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, redir) != CURLE_OK;
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->curl_error);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, (long)follow);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, (long)NET_MAX_REDIRECTS);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, c->connect_timeout_s);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, c->stall_timeout_s);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "harness/" HARNESS_VERSION " libcurl");
    /* a login for a host from ~/.netrc (a URL's own user:password@ is refused: it would show) */
    curl_easy_setopt(e, CURLOPT_NETRC, (long)CURL_NETRC_OPTIONAL);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, NULL); /* identity: sizes are the file's */
    const char *ca = getenv("CURL_CA_BUNDLE");
    if (ca && *ca)
        curl_easy_setopt(e, CURLOPT_CAINFO, ca);
    if (c->token[0]) { /* curl sends it to the first host only, never after a redirect away */
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl_easy_setopt(e, CURLOPT_XOAUTH2_BEARER, c->token);
    }
    if (bad) {
        curl_easy_cleanup(e);
        return NULL;
    }
    return e;
}

static const char *status_hint(const transfer *t, long status)
{
    switch (status) {
    case 401:
    case 403:
        return t->auth_hint[0] ? t->auth_hint : "needs a token with access";
    case 404:
        return "not found (on a hub: no such repository, revision or file)";
    case 416:
        return "the range asked for is not there";
    case 429:
        return "too many requests";
    default:
        return status >= 500 ? "server error" : "";
    }
}

transfer_outcome transfer_perform(CURL *e, transfer *t, const char *what, const char *url)
{
    CURLcode rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &t->h.status);
    const char *u = term_safe(url);
    if (t->failure == FAIL_HEADERS) {
        snprintf(t->message, sizeof t->message, "%s: %s: the response headers exceed %d bytes",
                 what, u, NET_MAX_HEADER_BYTES);
        return OUT_FATAL;
    }
    if (t->failure == FAIL_TOO_LONG) {
        snprintf(t->message, sizeof t->message, "%s: %s: the server sent more than the %lld "
                 "bytes %s", what, u, (long long)t->limit,
                 t->limit_is_cap ? "the harness takes from such an answer" : "it announced");
        return OUT_FATAL;
    }
    if (t->failure == FAIL_WRITE) {
        snprintf(t->message, sizeof t->message, "%s: writing %s failed: %s", what,
                 term_safe(t->write_path), strerror(t->write_errno));
        return OUT_FATAL;
    }
    if (rc != CURLE_OK) {
        snprintf(t->message, sizeof t->message, "%s: %s: %s%s%s", what, u, curl_easy_strerror(rc),
                 t->curl_error[0] ? ": " : "", term_safe(t->curl_error));
        int transient = rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_PARTIAL_FILE ||
                        rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
                        rc == CURLE_GOT_NOTHING || rc == CURLE_COULDNT_CONNECT;
        return transient ? OUT_RETRY : OUT_FATAL;
    }
    long s = t->h.status;
    if (s >= 200 && s < 400)
        return OUT_OK;
    const char *hint = status_hint(t, s);
    snprintf(t->message, sizeof t->message, "%s: %s: HTTP %ld%s%s", what, u, s, *hint ? ": " : "",
             hint);
    return (s == 429 || s >= 500) ? OUT_RETRY : OUT_FATAL;
}

/* ---- retries ----------------------------------------------------------------------------- */

int transfer_with_retries(const net_config *c, const char *what, attempt_fn fn, void *arg)
{
    long wait_ms = c->backoff_ms;
    for (int attempt = 0;; attempt++) {
        transfer t;
        memset(&t, 0, sizeof t);
        transfer_outcome o = fn(c, &t, arg);
        if (o == OUT_OK)
            return 0;
        if (o == OUT_FATAL || attempt >= c->retries) {
            log_error("%s%s", t.message,
                      o == OUT_RETRY ? " (gave up after the retries: HARNESS_NET_RETRIES)" : "");
            return EXIT_USAGE;
        }
        /* the own backoff (at most MAX_BACKOFF_MS), or the server's Retry-After when longer
         * (take_header caps it at MAX_RETRY_AFTER_S) */
        long ms = t.h.retry_after_s >= 0 && t.h.retry_after_s * 1000 > wait_ms
                      ? t.h.retry_after_s * 1000
                      : wait_ms;
        log_warn("%s; retry %d of %d in %.1f s", t.message, attempt + 1, c->retries, ms / 1000.0);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        wait_ms = wait_ms * 2 > MAX_BACKOFF_MS ? MAX_BACKOFF_MS : wait_ms * 2;
    }
}

/* ---- GET into memory --------------------------------------------------------------------- */

typedef struct {
    const char *url;
    size_t cap;
    char *buf;
    size_t len, size;
    net_headers h;
    transfer *t;
    int whole_timeout; /* an API answer: bounded as a whole; a file: only the stall rule */
} text_get;

static size_t on_text(char *data, size_t size, size_t nmemb, void *arg)
{
    text_get *g = arg;
    size_t n = size * nmemb;
    if (n > g->cap - g->len) {
        g->t->failure = FAIL_TOO_LONG;
        g->t->limit = (int64_t)g->cap;
        g->t->limit_is_cap = 1;
        return 0;
    }
    char *p = g->buf;
    if (g->len + n + 1 > g->size) { /* grow geometrically: linear time for any body */
        size_t want = g->size ? g->size : 4096;
        while (want < g->len + n + 1)
            want *= 2;
        p = realloc(g->buf, want);
        g->size = p ? want : g->size;
    }
    if (!p) {
        g->t->failure = FAIL_WRITE;
        g->t->write_errno = ENOMEM;
        snprintf(g->t->write_path, sizeof g->t->write_path, "memory");
        return 0;
    }
    g->buf = p;
    memcpy(g->buf + g->len, data, n);
    g->len += n;
    g->buf[g->len] = 0;
    return n;
}

static transfer_outcome text_attempt(const net_config *c, transfer *t, void *arg)
{
    text_get *g = arg;
    free(g->buf);
    g->buf = NULL;
    g->len = g->size = 0;
    g->t = t;
    CURL *e = transfer_handle(c, t, g->url, 1);
    if (!e) {
        snprintf(t->message, sizeof t->message, "GET %s: cannot set up libcurl", term_safe(g->url));
        return OUT_FATAL;
    }
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_text);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, g);
    if (g->whole_timeout)
        curl_easy_setopt(e, CURLOPT_TIMEOUT, c->connect_timeout_s * 6);
    transfer_outcome o = transfer_perform(e, t, "GET", g->url);
    if (o == OUT_OK && t->h.status >= 300) {
        snprintf(t->message, sizeof t->message, "GET %s: HTTP %ld without a usable redirect",
                 term_safe(g->url), t->h.status);
        o = OUT_FATAL;
    }
    g->h = t->h;
    curl_easy_cleanup(e);
    return o;
}

static int get_text(const net_config *c, const char *url, size_t cap, char **body, size_t *len,
                    net_headers *h, int whole_timeout)
{
    text_get g = {url, cap, NULL, 0, 0, {0}, NULL, whole_timeout};
    int rc = net_global_init() ? EXIT_USAGE : transfer_with_retries(c, "GET", text_attempt, &g);
    if (rc || !g.buf) {
        if (!rc)
            g.buf = calloc(1, 1);
        if (!g.buf) {
            rc = EXIT_USAGE;
        }
    }
    if (rc) {
        free(g.buf);
        return rc;
    }
    *body = g.buf;
    if (len)
        *len = g.len;
    if (h)
        *h = g.h;
    return 0;
}

int net_get_text(const net_config *c, const char *url, size_t cap, char **body, size_t *len,
                 net_headers *h)
{
    return get_text(c, url, cap, body, len, h, 1);
}

int net_get_body(const net_config *c, const char *url, size_t cap, char **body, size_t *len)
{
    return get_text(c, url, cap, body, len, NULL, 0);
}

/* ---- HEAD -------------------------------------------------------------------------------- */

typedef struct {
    const char *url;
    net_headers h;
    char redirect[4096]; /* where a 3xx points, made absolute ("" none) */
} head_req;

static size_t discard(char *data, size_t size, size_t nmemb, void *arg)
{
    (void)data, (void)arg;
    return size * nmemb;
}

static transfer_outcome head_attempt(const net_config *c, transfer *t, void *arg)
{
    head_req *r = arg;
    CURL *e = transfer_handle(c, t, r->url, 0);
    if (!e) {
        snprintf(t->message, sizeof t->message, "HEAD %s: cannot set up libcurl", term_safe(r->url));
        return OUT_FATAL;
    }
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, c->connect_timeout_s);
    transfer_outcome o = transfer_perform(e, t, "HEAD", r->url);
    r->h = t->h;
    char *to = NULL; /* a relative Location resolved against r->url by libcurl */
    r->redirect[0] = 0;
    if (curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &to) == CURLE_OK && to &&
        strlen(to) < sizeof r->redirect)
        memcpy(r->redirect, to, strlen(to) + 1);
    curl_easy_cleanup(e);
    return o;
}

/* "scheme://host:port" of url in lower case (the scheme's port when none is given); 0 or -1 */
static int url_origin(const char *url, char *out, size_t len)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL;
    int ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
             curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
             curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
             curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
             snprintf(out, len, "%s://%s:%s", scheme, host, port) < (int)len;
    for (char *p = out; ok && *p; p++)
        *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return ok ? 0 : -1;
}

/* 1 when a and b have one scheme, host and port: a HEAD follows such a redirect */
static int same_origin(const char *a, const char *b)
{
    char oa[1024], ob[1024];
    return url_origin(a, oa, sizeof oa) == 0 && url_origin(b, ob, sizeof ob) == 0 &&
           strcmp(oa, ob) == 0;
}

int net_head(const net_config *c, const char *url, net_headers *h, char *final_url, size_t len)
{
    if (net_global_init())
        return EXIT_USAGE;
    if (snprintf(final_url, len, "%s", url) >= (int)len)
        return log_error("HEAD %s: the URL is too long", term_safe(url)), EXIT_USAGE;
    for (int hops = 0;; hops++) {
        head_req r = {final_url, {0}, ""};
        int rc = transfer_with_retries(c, "HEAD", head_attempt, &r);
        *h = r.h;
        if (rc || h->status < 300 || !r.redirect[0] || !same_origin(final_url, r.redirect))
            return rc; /* an answer, or a redirect to another host: its headers are the answer */
        if (hops == NET_MAX_REDIRECTS)
            return log_error("HEAD %s: more than %d redirects on its own host (a loop?)",
                             term_safe(url), NET_MAX_REDIRECTS), EXIT_USAGE;
        if (strlen(r.redirect) >= len)
            return log_error("HEAD %s: redirected to a URL too long", term_safe(url)),
                   EXIT_USAGE;
        memcpy(final_url, r.redirect, strlen(r.redirect) + 1);
    }
}

/* ---- PUT --------------------------------------------------------------------------------- */

typedef struct {
    const char *url, *path;
} put_req;

static transfer_outcome put_attempt(const net_config *c, transfer *t, void *arg)
{
    put_req *r = arg;
    FILE *f = fopen(r->path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        snprintf(t->message, sizeof t->message, "PUT: cannot read %s: %s", term_safe(r->path),
                 strerror(errno));
        if (f)
            fclose(f);
        return OUT_FATAL;
    }
    CURL *e = transfer_handle(c, t, r->url, 0);
    if (!e) {
        fclose(f);
        snprintf(t->message, sizeof t->message, "PUT %s: cannot set up libcurl", term_safe(r->url));
        return OUT_FATAL;
    }
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_READDATA, f);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    transfer_outcome o = transfer_perform(e, t, "PUT", r->url);
    if (o == OUT_OK && t->h.status >= 300) {
        snprintf(t->message, sizeof t->message, "PUT %s: HTTP %ld (a redirect is not followed "
                 "for an upload)", term_safe(r->url), t->h.status);
        o = OUT_FATAL;
    }
    curl_easy_cleanup(e);
    fclose(f);
    return o;
}

int net_put_file(const net_config *c, const char *url, const char *path)
{
    put_req r = {url, path};
    if (net_global_init())
        return EXIT_USAGE;
    return transfer_with_retries(c, "PUT", put_attempt, &r);
}
