/* harness/net/http_internal.h: private to net/: one transfer's state (headers, failure, message),
 * the configured libcurl handle and the retry loop that http.c and download.c share. */
#ifndef NET_HTTP_INTERNAL_H
#define NET_HTTP_INTERNAL_H

#include <curl/curl.h>

#include "net.h"

/* the most response-header bytes taken from one response (the hub sends about 2 KiB) */
#define NET_MAX_HEADER_BYTES (64 * 1024)

typedef enum { FAIL_NONE, FAIL_HEADERS, FAIL_TOO_LONG, FAIL_WRITE } transfer_failure;
typedef enum { OUT_OK, OUT_RETRY, OUT_FATAL } transfer_outcome;

typedef struct {
    net_headers h;              /* of the last response (after redirects) */
    size_t header_bytes;
    transfer_failure failure;   /* set by a callback that stopped the transfer */
    int64_t limit;              /* FAIL_TOO_LONG: the size announced, or the cap taken */
    int limit_is_cap;           /* 1: limit is the harness's own cap on an answer */
    char write_path[1024];      /* FAIL_WRITE: the file and errno */
    int write_errno;
    char auth_hint[128];        /* from the config: what a 401/403 says */
    char curl_error[CURL_ERROR_SIZE];
    char message[2048];         /* what went wrong, for people */
} transfer;

/* one try of a request; fills t->message unless OUT_OK */
typedef transfer_outcome (*attempt_fn)(const net_config *c, transfer *t, void *arg);

/* a handle for url with the policy of c (follow: redirects followed); NULL when out of memory */
CURL *transfer_handle(const net_config *c, transfer *t, const char *url, int follow);
/* curl_easy_perform and the outcome: OK on 2xx/3xx, RETRY on 429, 5xx, dropped connections */
transfer_outcome transfer_perform(CURL *e, transfer *t, const char *what, const char *url);
/* fn until OK, a fatal outcome, or c->retries retries with doubling waits; 0 or 2 */
int transfer_with_retries(const net_config *c, const char *what, attempt_fn fn, void *arg);

#endif
