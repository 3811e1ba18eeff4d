/* harness/net/download.c: one file into a partial file: appended with Range from what is there
 * (Content-Range checked), never more than announced, retried with backoff, with progress. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http_internal.h"
#include "progress.h"
#include "util/util.h"

typedef struct {
    const char *url, *part, *what;
    int64_t size, have;
    int64_t transferred; /* body bytes this process wrote, over every try */
    FILE *f;
    CURL *e;
    transfer *t;
    int asked_range, checked_status, writing;
    int restart;      /* a 416 or a 206 from elsewhere: drop the partial file, start from 0 */
    progress bar;
} download;

/* 1 when Content-Range ("bytes N-M/T") starts at the byte asked for, and T (unless '*') is the
 * size announced */
static int range_fits(const download *d)
{
    const char *v = d->t->h.content_range;
    char *end;
    if (strncmp(v, "bytes ", 6) != 0)
        return 0;
    errno = 0;
    long long start = strtoll(v + 6, &end, 10);
    if (errno || end == v + 6 || start != d->have || !(end = strchr(end, '/')))
        return 0;
    if (strcmp(end, "/*") == 0)
        return 1;
    long long total = strtoll(end + 1, &end, 10);
    return !errno && *end == 0 && total == d->size;
}

/* the first body bytes: keep them only from a 200 or a 206; a 200 to a Range starts over, a
 * 206 of another part stops the transfer (restart); 1 to stop, -1 on a write error */
static int check_status(download *d)
{
    long status = 0;
    curl_easy_getinfo(d->e, CURLINFO_RESPONSE_CODE, &status);
    d->checked_status = 1;
    d->writing = status == 200 || status == 206;
    if (status == 206 && !range_fits(d)) {
        d->restart = 1;
        d->writing = 0;
        return 1;
    }
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
    int checked = d->checked_status ? 0 : check_status(d);
    if (checked > 0)
        return 0; /* not the part asked for: download_attempt starts over */
    if (checked < 0) {
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
    d->transferred += (int64_t)n;
    progress_update(&d->bar, d->have);
    return n;
}

#define NOT_A_LINK "is a symbolic link: refused (a link in the cache is never followed)"
#define NOT_A_FILE "is not a regular file (a folder, a FIFO): refused"
#define SHARED_FILE "has other hard links (a file outside the cache?): refused, never written"

/* what stands at the partial file's path cannot be written safely: t->message says why */
static transfer_outcome refuse_part(const download *d, transfer *t, const char *why)
{
    snprintf(t->message, sizeof t->message, "%s: %s %s; remove it and fetch again", d->what,
             term_safe(d->part), why);
    return OUT_FATAL;
}

/* the partial file for appending, never through a link (O_NOFOLLOW) and never blocking on a
 * FIFO (O_NONBLOCK): d->f, and d->have its size (a file longer than d->size emptied); OUT_OK,
 * or OUT_FATAL with t->message (a symlink, a folder, a FIFO, a file with other hard links
 * there: refused) */
static transfer_outcome open_part(download *d, transfer *t)
{
    int fd = open(d->part, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
                  0666);
    struct stat st;
    if (fd < 0 && (errno == ELOOP || errno == EMLINK))
        return refuse_part(d, t, NOT_A_LINK);
    if (fd < 0 && (errno == ENXIO || errno == EISDIR))
        return refuse_part(d, t, NOT_A_FILE);
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(t->message, sizeof t->message, "%s: cannot open %s: %s", d->what,
                 term_safe(d->part), strerror(errno));
        if (fd >= 0)
            close(fd);
        return OUT_FATAL;
    }
    if (!S_ISREG(st.st_mode) || st.st_nlink > 1)
        return close(fd), refuse_part(d, t, S_ISREG(st.st_mode) ? SHARED_FILE : NOT_A_FILE);
    d->have = (int64_t)st.st_size;
    if (d->have > d->size) /* not this file: start over */
        d->have = ftruncate(fd, 0) == 0 ? 0 : -1;
    if (d->have < 0 || !(d->f = fdopen(fd, "ab"))) {
        snprintf(t->message, sizeof t->message, "%s: cannot write %s: %s", d->what,
                 term_safe(d->part), strerror(errno));
        close(fd);
        return OUT_FATAL;
    }
    return OUT_OK;
}

static transfer_outcome finish_attempt(download *d, transfer_outcome o)
{
    if (fclose(d->f) != 0 && o == OUT_OK) {
        snprintf(d->t->message, sizeof d->t->message, "%s: writing %s failed: %s", d->what,
                 term_safe(d->part), strerror(errno));
        return OUT_FATAL;
    }
    if (d->restart)
        return o;
    if (o == OUT_OK && d->t->h.status >= 300) {
        snprintf(d->t->message, sizeof d->t->message, "GET %s: HTTP %ld (too many or refused "
                 "redirects)", term_safe(d->url), d->t->h.status);
        return OUT_FATAL;
    }
    if (o == OUT_OK && d->have < d->size) {
        snprintf(d->t->message, sizeof d->t->message, "%s: the connection ended at byte %lld of "
                 "%lld", d->what, (long long)d->have, (long long)d->size);
        return OUT_RETRY;
    }
    return o;
}

/* one GET from the partial file's size on; d->restart set when the server has not that part */
static transfer_outcome download_try(const net_config *c, transfer *t, download *d)
{
    d->t = t;
    d->restart = 0;
    transfer_outcome o = open_part(d, t);
    if (o != OUT_OK)
        return o;
    if (d->have == d->size) /* whole already (or an empty file): nothing to ask for */
        return finish_attempt(d, OUT_OK);
    if (!(d->e = transfer_handle(c, t, d->url, 1))) {
        fclose(d->f);
        snprintf(t->message, sizeof t->message, "GET %s: cannot set up libcurl", term_safe(d->url));
        return OUT_FATAL;
    }
    snprintf(t->write_path, sizeof t->write_path, "%s", d->part);
    char range[64];
    d->asked_range = d->have > 0;
    d->checked_status = d->writing = 0;
    snprintf(range, sizeof range, "%lld-", (long long)d->have);
    if (d->asked_range)
        curl_easy_setopt(d->e, CURLOPT_RANGE, range);
    curl_easy_setopt(d->e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(d->e, CURLOPT_WRITEDATA, d);
    progress_begin(&d->bar, d->what, d->size, d->have, c->progress_bar);
    o = transfer_perform(d->e, t, "GET", d->url);
    d->restart = d->restart || (d->asked_range && t->h.status == 416);
    curl_easy_cleanup(d->e);
    progress_end(&d->bar, d->have);
    o = finish_attempt(d, o);
    if (t->failure == FAIL_TOO_LONG) /* not the file announced: nothing of it is kept */
        unlink(d->part);
    return o;
}

/* why the server's answer to "Range: bytes=N-" is not the rest of the file */
static void restart_reason(const download *d, const transfer *t, char *out, size_t len)
{
    if (t->h.status == 416)
        snprintf(out, len, "%s: the server refused to resume at byte %lld (HTTP 416)", d->what,
                 (long long)d->have);
    else
        snprintf(out, len, "%s: asked for byte %lld on, the server answered HTTP %ld with "
                 "Content-Range '%s'", d->what, (long long)d->have, t->h.status,
                 t->h.content_range[0] ? term_safe(t->h.content_range) : "(none)");
}

/* a try; when the server has not the part asked for, the partial file is dropped and the file
 * asked for from byte 0 at once (a second such answer, to no Range, is fatal) */
static transfer_outcome download_attempt(const net_config *c, transfer *t, void *arg)
{
    download *d = arg;
    transfer_outcome o = download_try(c, t, d);
    if (!d->restart)
        return o;
    char why[1024];
    restart_reason(d, t, why, sizeof why);
    if (!d->asked_range) {
        snprintf(t->message, sizeof t->message, "%s: refused (not the file asked for)", why);
        unlink(d->part);
        return OUT_FATAL;
    }
    log_warn("%s; starting over", why);
    if (unlink(d->part) != 0 && errno != ENOENT) {
        snprintf(t->message, sizeof t->message, "%s: cannot remove %s to start over: %s",
                 d->what, term_safe(d->part), strerror(errno));
        return OUT_FATAL;
    }
    memset(t, 0, sizeof *t);
    return download_attempt(c, t, d); /* from byte 0: no Range, so this recurses at most once */
}

/* removes path when it is an empty regular file (never a link or anything else) */
static void remove_if_empty(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        unlink(path);
}

int net_download(const net_config *c, const char *url, const char *part_path, int64_t size,
                 const char *what, int64_t *transferred)
{
    *transferred = 0;
    if (net_global_init())
        return EXIT_USAGE;
    download d;
    memset(&d, 0, sizeof d);
    d.url = url;
    d.part = part_path;
    d.what = what;
    d.size = size;
    int rc = transfer_with_retries(c, "GET", download_attempt, &d);
    *transferred = d.transferred;
    if (rc)
        remove_if_empty(part_path); /* nothing arrived: no empty partial file either */
    return rc;
}
