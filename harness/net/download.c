/* harness/net/download.c: one file downloaded into a partial file: appended with Range from what
 * is already there, never more than the announced size, retried with backoff, with progress. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http_internal.h"
#include "progress.h"
#include "util/util.h"

typedef struct {
    const char *url, *part, *what;
    int64_t size, have;
    FILE *f;
    CURL *e;
    transfer *t;
    int asked_range, checked_status, writing;
    progress bar;
} download;

/* the first body bytes: keep them only from a 200 or a 206; a 200 to a Range starts over */
static int check_status(download *d)
{
    long status = 0;
    curl_easy_getinfo(d->e, CURLINFO_RESPONSE_CODE, &status);
    d->checked_status = 1;
    d->writing = status == 200 || status == 206;
    if (status == 200 && d->asked_range) { /* the server ignored Range: the whole file again */
        if (fflush(d->f) != 0 || ftruncate(fileno(d->f), 0) != 0 || fseek(d->f, 0, SEEK_SET) != 0)
            return -1;
        d->have = 0;
    }
    return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    download *d = arg;
    size_t n = size * nmemb;
    if (!d->checked_status && check_status(d) != 0) {
        d->t->failure = FAIL_WRITE;
        d->t->write_errno = errno;
        return 0;
    }
    if (!d->writing)
        return n; /* an error page: the status says what went wrong */
    if ((int64_t)n > d->size - d->have) {
        d->t->failure = FAIL_TOO_LONG;
        d->t->limit = d->size;
        return 0;
    }
    if (fwrite(data, 1, n, d->f) != n) {
        d->t->failure = FAIL_WRITE;
        d->t->write_errno = errno;
        return 0;
    }
    d->have += (int64_t)n;
    progress_update(&d->bar, d->have);
    return n;
}

static int64_t file_size_or_zero(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

static transfer_outcome finish_attempt(download *d, transfer_outcome o)
{
    if (fclose(d->f) != 0 && o == OUT_OK) {
        snprintf(d->t->message, sizeof d->t->message, "%s: writing %s failed: %s", d->what,
                 term_safe(d->part), strerror(errno));
        return OUT_FATAL;
    }
    if (o == OUT_OK && d->t->h.status == 416) /* nothing left at that offset: start over */
        o = OUT_RETRY;
    if (o == OUT_OK && d->t->h.status >= 300) {
        snprintf(d->t->message, sizeof d->t->message, "GET %s: HTTP %ld (too many or refused "
                 "redirects)", term_safe(d->url), d->t->h.status);
        return OUT_FATAL;
    }
    if (d->t->h.status == 416) {
        unlink(d->part);
        snprintf(d->t->message, sizeof d->t->message, "%s: the server refused to resume at byte "
                 "%lld; starting over", d->what, (long long)d->have);
    } else if (o == OUT_OK && d->have < d->size) {
        snprintf(d->t->message, sizeof d->t->message, "%s: the connection ended at byte %lld of "
                 "%lld", d->what, (long long)d->have, (long long)d->size);
        return OUT_RETRY;
    }
    return o;
}

static transfer_outcome download_attempt(const net_config *c, transfer *t, void *arg)
{
    download *d = arg;
    d->t = t;
    d->have = file_size_or_zero(d->part);
    if (d->have > d->size) { /* not this file: start over */
        unlink(d->part);
        d->have = 0;
    }
    if (d->have == d->size)
        return OUT_OK;
    if (!(d->f = fopen(d->part, "ab"))) {
        snprintf(t->message, sizeof t->message, "%s: cannot open %s: %s", d->what,
                 term_safe(d->part), strerror(errno));
        return OUT_FATAL;
    }
    if (!(d->e = transfer_handle(c, t, d->url, 1))) {
        fclose(d->f);
        snprintf(t->message, sizeof t->message, "GET %s: cannot set up libcurl", term_safe(d->url));
        return OUT_FATAL;
    }
    char range[64];
    d->asked_range = d->have > 0;
    d->checked_status = d->writing = 0;
    snprintf(range, sizeof range, "%lld-", (long long)d->have);
    if (d->asked_range)
        curl_easy_setopt(d->e, CURLOPT_RANGE, range);
    curl_easy_setopt(d->e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(d->e, CURLOPT_WRITEDATA, d);
    progress_begin(&d->bar, d->what, d->size, d->have, c->progress_bar);
    transfer_outcome o = transfer_perform(d->e, t, "GET", d->url);
    curl_easy_cleanup(d->e);
    progress_end(&d->bar, d->have);
    o = finish_attempt(d, o);
    if (t->failure == FAIL_TOO_LONG) /* not the file announced: nothing of it is kept */
        unlink(d->part);
    return o;
}

int net_download(const net_config *c, const char *url, const char *part_path, int64_t size,
                 const char *what)
{
    if (net_global_init())
        return EXIT_USAGE;
    download d;
    memset(&d, 0, sizeof d);
    d.url = url;
    d.part = part_path;
    d.what = what;
    d.size = size;
    int rc = transfer_with_retries(c, "GET", download_attempt, &d);
    if (rc && file_size_or_zero(part_path) == 0)
        unlink(part_path); /* nothing arrived: no empty partial file either */
    return rc;
}
