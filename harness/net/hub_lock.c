/* harness/net/hub_lock.c: one blob's download lock where huggingface_hub takes it (flock on
 * CACHE/.locks/REPO_FOLDER/ETAG.lock): two fetches of one file, by either tool, take turns. */
#define _DEFAULT_SOURCE /* flock */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "hub_cache.h"
#include "util/util.h"

#define LOCK_NOTE_EVERY_MS 10000 /* a "still waiting" note this often, as huggingface_hub logs */

/* CACHE/.locks/REPO_FOLDER/ETAG.lock, opened (created 0664 as huggingface_hub does); 0 or 2 */
static int open_lock(const char *cache, const char *repo_dir, const char *etag, char *path,
                     size_t len, int *fd)
{
    const char *repo = strrchr(repo_dir, '/');
    char rel[600];
    snprintf(rel, sizeof rel, ".locks/%s", repo ? repo + 1 : repo_dir);
    int rc = mkdir_below(cache, rel);
    if (rc)
        return rc;
    if (snprintf(path, len, "%s/%s/%s.lock", cache, rel, etag) >= (int)len) {
        log_error("%s: the lock file's path is too long", cache);
        return EXIT_USAGE;
    }
    *fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0664);
    if (*fd < 0 && errno == EACCES) /* another user's lock in a shared cache: flock reads too */
        *fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0) {
        log_error("cannot open the lock file %s: %s", path, strerror(errno));
        return EXIT_USAGE;
    }
    return 0;
}

/* flock(LOCK_EX), polled so that a note says what it waits for; 0, or -1 with errno */
static int wait_lock(int fd, const char *path, const char *what)
{
    for (long ms = 0;; ms += 100) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno != EWOULDBLOCK)
            return -1;
        if (ms % LOCK_NOTE_EVERY_MS == 0)
            log_info("%s: waiting for another download of it to end (%s is locked; %ld s so "
                     "far)", term_safe(what), path, ms / 1000);
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int hub_lock_blob(const char *cache, const char *repo_dir, const char *etag, const char *what,
                  int *fd)
{
    char path[PATH_MAX];
    *fd = -1;
    int rc = open_lock(cache, repo_dir, etag, path, sizeof path, fd);
    if (rc)
        return rc;
    if (wait_lock(*fd, path, what) == 0)
        return 0;
    int err = errno;
    close(*fd);
    *fd = -1;
    if (err == ENOLCK || err == EOPNOTSUPP || err == ENOTSUP || err == EINVAL) {
        log_warn("%s: cannot lock %s (%s: a file system without flock): downloading without "
                 "the lock", term_safe(what), path, strerror(err));
        return 0;
    }
    log_error("%s: cannot lock %s: %s", term_safe(what), path, strerror(err));
    return EXIT_USAGE;
}

void hub_unlock_blob(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock; the file stays, as huggingface_hub leaves it */
}
