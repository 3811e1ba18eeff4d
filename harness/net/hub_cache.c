/* harness/net/hub_cache.c: the cache as huggingface_hub lays it out: REPO/blobs/ETAG, REPO/refs/REV
 * holding a commit, REPO/snapshots/COMMIT/PATH as relative symlinks to blobs; offline lookups. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hub_cache.h"
#include "util/util.h"

int mkdir_p(const char *path)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) {
        log_error("%.64s...: the path is too long", path);
        return EXIT_USAGE;
    }
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p)
            continue;
        char c = *p;
        *p = 0;
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) {
            log_error("cannot create the folder %s: %s", tmp, strerror(errno));
            return EXIT_USAGE;
        }
        if (!(*p = c))
            return 0;
    }
}

int mkdir_below(const char *base, const char *rel)
{
    char path[PATH_MAX];
    size_t n = strlen(base);
    if (n + 1 + strlen(rel) >= sizeof path) {
        log_error("%s: the path is too long", base);
        return EXIT_USAGE;
    }
    memcpy(path, base, n);
    for (const char *p = rel; *p;) {
        size_t part = strcspn(p, "/");
        path[n++] = '/';
        memcpy(path + n, p, part);
        n += part;
        path[n] = 0;
        struct stat st;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) { /* EEXIST: maybe another fetch's */
            log_error("cannot create the folder %s: %s", path, strerror(errno));
            return EXIT_USAGE;
        }
        if (lstat(path, &st) != 0) {
            log_error("cannot read the folder %s: %s", path, strerror(errno));
            return EXIT_USAGE;
        }
        if (!S_ISDIR(st.st_mode)) { /* a symlink or a file where a folder goes: refused */
            log_error("%s: exists and is not a folder (a symlink is never followed here)", path);
            return EXIT_USAGE;
        }
        p += part;
        if (*p == '/')
            p++;
    }
    return 0;
}

/* a new file at path for writing, never through a link: what is there (a link planted under
 * this name, a file left by a crash) is removed first, and O_EXCL refuses one made meanwhile */
static FILE *create_new(const char *path)
{
    if (unlink(path) != 0 && errno != ENOENT)
        return NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
    if (fd >= 0 && !f)
        close(fd);
    return f;
}

int write_file_atomic(const char *path, const char *text)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = create_new(tmp);
    int ok = f && fputs(text, f) >= 0;
    ok = (f && fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        log_error("cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return EXIT_USAGE;
    }
    return 0;
}

int hub_write_ref(const char *repo_dir, const char *revision, const char *commit)
{
    if (strcasecmp(revision, commit) == 0)
        return 0; /* a commit needs no ref (huggingface_hub writes none) */
    char dir[PATH_MAX], path[PATH_MAX], rel[300];
    snprintf(rel, sizeof rel, "refs/%s", revision);
    path_dirname(rel, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s", repo_dir, rel);
    int rc = mkdir_below(repo_dir, dir);
    return rc ? rc : write_file_atomic(path, commit);
}

int hub_link_snapshot(const char *repo_dir, const char *commit, const char *file,
                      const char *etag)
{
    char snap[PATH_MAX + 32], rel_dir[PATH_MAX], rel[1400], target[PATH_MAX], path[PATH_MAX];
    snprintf(rel, sizeof rel, "snapshots/%s/%s", commit, file);
    path_dirname(rel, rel_dir, sizeof rel_dir);
    int rc = mkdir_below(repo_dir, rel_dir);
    if (rc)
        return rc;
    /* from snapshots/COMMIT/A/B/ up to the repo folder: 2 levels, plus one per '/' in file */
    size_t up = 2, n = 0;
    for (const char *p = file; *p; p++)
        up += *p == '/';
    for (size_t i = 0; i < up && n + 3 < sizeof target; i++)
        n += (size_t)snprintf(target + n, sizeof target - n, "../");
    snprintf(target + n, sizeof target - n, "blobs/%s", etag);
    snprintf(path, sizeof path, "%s/%s", repo_dir, rel);
    snprintf(snap, sizeof snap, "%s.%ld.tmp", path, (long)getpid());
    unlink(snap);
    if (symlink(target, snap) != 0 || rename(snap, path) != 0) {
        log_error("cannot link %s to %s: %s", path, target, strerror(errno));
        unlink(snap);
        return EXIT_USAGE;
    }
    return 0;
}

int hub_cache_commit(const char *repo_dir, const char *revision, char commit[41])
{
    if (is_hex(revision, 40)) {
        snprintf(commit, 41, "%s", revision);
        hex_lower(commit);
        return 0;
    }
    char path[PATH_MAX], why[INPUT_WHY_LEN];
    snprintf(path, sizeof path, "%s/refs/%s", repo_dir, revision);
    if (access(path, F_OK) != 0)
        return 1;
    size_t len;
    char *text = input_read(path, INPUT_MODEL_CONFIG, &len, why, sizeof why);
    if (!text) {
        log_error("cannot read %s: %s", path, why);
        return EXIT_USAGE;
    }
    size_t n = strcspn(text, "\r\n \t");
    text[n] = 0;
    int ok = is_hex(text, 40);
    if (ok) {
        snprintf(commit, 41, "%s", text);
        hex_lower(commit); /* snapshots/ are named in lower case, as the hub writes commits */
    } else
        log_error("%s: not a commit hash (40 hex digits)", path);
    free(text);
    return ok ? 0 : EXIT_USAGE;
}

int hub_cache_snapshot(const char *cache, const repo_ref *r, char *out, size_t len)
{
    char repo_dir[PATH_MAX], commit[41];
    int rc = hub_repo_folder(cache, r, repo_dir, sizeof repo_dir);
    if (rc)
        return rc;
    rc = hub_cache_commit(repo_dir, r->revision, commit);
    if (rc == 1 || (rc == 0 && snprintf(out, len, "%s/snapshots/%s", repo_dir, commit) > 0 &&
                    access(out, F_OK) != 0)) {
        log_error("%s%s@%s is not in the cache %s (no %s%s%s): run `harness fetch %s%s@%s` where "
                  "the hub or a mirror can be reached and copy the cache here, or point "
                  "HF_HUB_CACHE at it", r->type == REPO_DATASET ? "datasets/" : "", r->id,
                  r->revision, cache, repo_dir, rc == 1 ? "/refs/" : "/snapshots/",
                  rc == 1 ? r->revision : commit, r->type == REPO_DATASET ? "datasets/" : "",
                  r->id, r->revision);
        return EXIT_USAGE;
    }
    return rc;
}
