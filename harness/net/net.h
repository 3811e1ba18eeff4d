/* harness/net/net.h: the public face of net/: HTTP transfers over libcurl (verified, resumable,
 * retried downloads; PUT uploads) and the Hugging Face hub: its HTTP API and its cache layout. */
#ifndef NET_NET_H
#define NET_NET_H

#include <stddef.h>
#include <stdint.h>

/* ---- transfers (net/http.c) ------------------------------------------------------------- */

/* the longest bearer token taken (longer is refused, never cut); JWTs and signed tokens fit */
#define NET_TOKEN_MAX 4095

/* How every transfer behaves; net_config_init fills it from the environment (docs/fetch.md). */
typedef struct {
    char endpoint_scheme[8];  /* "https" or "http": redirects may go to https or to this */
    char token[NET_TOKEN_MAX + 1]; /* bearer token ("" none): HF_TOKEN, $HF_TOKEN_PATH, ... */
    char auth_hint[128];      /* what a 401/403 tells people (names the token's variable) */
    int retries;              /* retries after the first try (HARNESS_NET_RETRIES, default 5) */
    long backoff_ms;          /* the first wait, doubled each retry (HARNESS_NET_BACKOFF_MS) */
    long connect_timeout_s;   /* HF_HUB_ETAG_TIMEOUT (default 10): connect, and a HEAD in all */
    long stall_timeout_s;     /* HF_HUB_DOWNLOAD_TIMEOUT (default 10): below 1 KiB/s this long */
    int progress_bar;         /* 1: a bar on the terminal (stderr), 0: plain lines */
} net_config;

/* an X-Linked-Size given but not a whole number of bytes */
#define NET_SIZE_MALFORMED (-2)

/* What a response said: its status and the headers the hub protocol uses. */
typedef struct {
    long status;
    char etag[192], linked_etag[192], repo_commit[64];
    int64_t linked_size, content_length;  /* -1 when absent; linked_size NET_SIZE_MALFORMED
                                           * when given but not a whole number of bytes */
    char location[2048], next_link[2048]; /* Location; the rel="next" URL of a Link header */
    char content_range[128];              /* Content-Range ("" when absent) */
    long retry_after_s;                   /* -1 when absent */
} net_headers;

/* Fills c from the environment for an endpoint URL (its scheme); 0, or 2 after a message
 * (an endpoint that is neither http:// nor https://, a malformed variable). */
int net_config_init(net_config *c, const char *endpoint);
/* as net_config_init, but the token is the variable token_var's (none when unset) and HF_TOKEN
 * and the hub's token files are never read; a 401/403 names token_var. 0, or 2 after a message
 * (also for a token longer than NET_TOKEN_MAX) */
int net_config_init_token(net_config *c, const char *endpoint, const char *token_var);
/* curl_global_init once; 0 or 2 after a message */
int net_global_init(void);

/* GET url into a NUL-terminated heap buffer of at most cap bytes, following redirects; 0, or 2
 * after a message naming url (a status other than 2xx, a body over cap, a transfer error) */
/* an API answer: the whole transfer bounded by 6 x HF_HUB_ETAG_TIMEOUT */
int net_get_text(const net_config *c, const char *url, size_t cap, char **body, size_t *len,
                 net_headers *h);
/* as net_get_text for a file (a baseline): no bound on the whole transfer, only the stall rule
 * (below 1 KiB/s for HF_HUB_DOWNLOAD_TIMEOUT seconds), so a slow link still brings it whole */
int net_get_body(const net_config *c, const char *url, size_t cap, char **body, size_t *len);
/* the most redirects a request follows (libcurl's for a GET; net_head's on its own host) */
#define NET_MAX_REDIRECTS 10
/* HEAD url, following the redirects that stay on its scheme, host and port (a renamed repo), at
 * most NET_MAX_REDIRECTS, the token going along; a redirect to another host (the CDN) is not
 * followed: its response is the answer. final_url (len bytes) the URL that answered. 0 when
 * the status is 2xx or 3xx (h filled), else 2 after a message */
int net_head(const net_config *c, const char *url, net_headers *h, char *final_url, size_t len);
/* GET url (redirects followed) into part_path, appending with Range from its current size,
 * until it holds exactly `size` bytes (more is an error; nothing is asked for when it has them
 * already, as for an empty file); retried with backoff on 429, 5xx and dropped connections. A
 * resume answered with a 416, or with a 206 whose Content-Range does not start at the byte
 * asked for, drops part_path and starts from byte 0 at once (no retry spent). part_path is
 * never opened through a symlink: a link, a folder or a FIFO there is refused (left as it is).
 * `what` names the file in progress and messages; *transferred the body bytes this call wrote
 * (less than size when it resumed a partial file). 0 or 2 after a message; on 2 part_path
 * keeps what arrived (resumed by the next try) unless nothing did or the server sent more than
 * `size` bytes (then it is removed). */
int net_download(const net_config *c, const char *url, const char *part_path, int64_t size,
                 const char *what, int64_t *transferred);
/* PUT the file at path to url (bearer token from c); 0 or 2 after a message */
int net_put_file(const net_config *c, const char *url, const char *path);

/* ---- digests (net/digest.c) ------------------------------------------------------------- */

/* lowercase hex sha256 of a file's bytes (libcrypto); 0 or 2 after a message */
int file_sha256_hex(const char *path, char out[65]);
/* lowercase hex git blob id (sha1 of "blob SIZE\0" + bytes) of a file; 0 or 2 */
int file_git_sha1_hex(const char *path, char out[41]);
/* 1 when s is exactly n lowercase or uppercase hex digits */
int is_hex(const char *s, size_t n);
/* A-F to a-f in place: commits and digests are compared and stored in lower case */
void hex_lower(char *s);

/* ---- the hub: names and the cache (net/hub_names.c, net/hub_cache.c) ---------------------- */

typedef enum { REPO_MODEL, REPO_DATASET } repo_type;

typedef struct {
    repo_type type;
    char id[256];        /* ORG/NAME or NAME */
    char revision[256];  /* "main" when not given */
} repo_ref;

/* Parses [datasets/]ORG/NAME[@REVISION] (dataset also when `dataset` is set); a 40-hex revision
 * (a commit) is put in lower case. 0, or 2 after a message naming `what` (the argument or field
 * it came from). */
int repo_ref_parse(const char *spec, int dataset, const char *what, repo_ref *r);
/* the cache folder of the hub: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, $HF_HOME/hub,
 * $XDG_CACHE_HOME/huggingface/hub or ~/.cache/huggingface/hub; 0 or 2 */
int hub_cache_default(char *out, size_t len);
/* CACHE/models--ORG--NAME (datasets--...) into out */
int hub_repo_folder(const char *cache, const repo_ref *r, char *out, size_t len);
/* 1 when a path from the server is a safe relative path inside a snapshot: not empty, not
 * absolute, no "." or ".." or empty component nor one over 255 bytes, no backslash or control
 * byte, at most 1024 in all */
int hub_path_is_safe(const char *path);
/* 1 when an etag is safe as a blob file name: [A-Za-z0-9_-], 1 to 128 bytes */
int hub_etag_is_safe(const char *etag);
/* the commit of r's revision in the cache (r->revision when it is a 40-hex commit, else
 * refs/REVISION), in lower case; 0, 1 when the cache does not have it, 2 after a message */
int hub_cache_commit(const char *repo_dir, const char *revision, char commit[41]);
/* the snapshot folder of r in the cache, for offline use (HF_HUB_OFFLINE, a scenario's
 * model.repo); 0, or 2 after a message naming the repo and the cache folder */
int hub_cache_snapshot(const char *cache, const repo_ref *r, char *out, size_t len);

/* ---- fetching a repository (net/hub_fetch.c) --------------------------------------------- */

typedef struct {
    const char *endpoint;   /* the hub or a mirror: --endpoint, HF_ENDPOINT, huggingface.co */
    const char *cache;      /* the cache folder */
    const char *include;    /* comma-separated globs of file paths to fetch; NULL for all */
    int offline;            /* HF_HUB_OFFLINE: the cache only */
} fetch_options;

typedef struct {
    char commit[41];
    char snapshot[4096];
    int files, downloaded;  /* files in the snapshot that match; of those, downloaded now */
    int resumed;            /* of those downloaded, continued from a partial file left before */
    int64_t bytes;          /* bytes this process transferred (a resumed file: only the rest) */
} fetch_result;

/* Fetches r into the cache as huggingface_hub lays it out; 0 or 2 after a message. Nothing
 * incomplete is ever in a snapshot: a file is verified, then moved to blobs/, then linked. A
 * revision that is a commit must be the commit the server answers with; a revision that lists
 * no files is refused with nothing written. Each blob is downloaded under
 * CACHE/.locks/REPO_FOLDER/ETAG.lock, as huggingface_hub does. */
int hub_fetch(const repo_ref *r, const fetch_options *o, fetch_result *res);
/* the endpoint when --endpoint is not given: HF_ENDPOINT or https://huggingface.co */
const char *hub_default_endpoint(void);
/* 1 when HF_HUB_OFFLINE is set to a true value (1, ON, YES, TRUE) */
int hub_offline(void);

#endif
