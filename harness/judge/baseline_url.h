/* harness/judge/baseline_url.h: baselines exchanged by URL: a file downloaded over HTTPS and
 * verified against its sha256 before anything reads it, and a baseline file uploaded by PUT. */
#ifndef BASELINE_URL_H
#define BASELINE_URL_H

#include <stddef.h>

/* The baseline at url whose sha256 must be sha256_hex: from the local cache
 * (HARNESS_BASELINE_CACHE, $XDG_CACHE_HOME/harness/baselines or ~/.cache/harness/baselines,
 * file SHA256.baseline, checked again) or downloaded (bearer HARNESS_BASELINE_TOKEN, never
 * HF_TOKEN), verified, then written there. Its path goes to path; *fetched (NULL: not asked)
 * 1 when this call wrote the file, 0 when it was cached. 0, or 2 after a message (a bad URL,
 * one with user:password@, a bad digest, a failed download, a digest that differs: nothing is
 * kept). */
int baseline_url_fetch(const char *url, const char *sha256_hex, char *path, size_t len,
                       int *fetched);
/* PUT the file at path to url (bearer HARNESS_BASELINE_TOKEN); its sha256 into sha[65]. 0 or 2 */
int baseline_url_push(const char *path, const char *url, char sha[65]);
/* 1 when spec is an http:// or https:// URL */
int baseline_is_url(const char *spec);

#endif
