/* harness/util/output_target.c: checks on a file the harness is asked to write (--dump-batches):
 * writable, not a directory, and neither the store nor a file the run has read as its input. */
#define _XOPEN_SOURCE 700
#include "output_target.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/magic.h>
#include <sys/vfs.h>
#endif

#include "input_file.h"
#include "util.h"

/* the directory part of path ("." when it has none) into out; 0, or -1 when it does not fit */
static int parent_of(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (slash && n == 0)
        n = 1; /* "/name": the root */
    if (!slash)
        return snprintf(out, len, ".") < (int)len ? 0 : -1;
    if (n >= len)
        return -1;
    memcpy(out, path, n);
    out[n] = 0;
    return 0;
}

static const char *last_component(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* 1 when neither file exists and both name the same entry of the same resolved directory */
static int same_new_file(const char *a, const char *b)
{
    char dir_a[PATH_MAX], dir_b[PATH_MAX], real_a[PATH_MAX], real_b[PATH_MAX];
    if (parent_of(a, dir_a, sizeof dir_a) || parent_of(b, dir_b, sizeof dir_b) ||
        !realpath(dir_a, real_a) || !realpath(dir_b, real_b))
        return 0;
    return strcmp(real_a, real_b) == 0 && strcmp(last_component(a), last_component(b)) == 0;
}

int output_follow_links(const char *path, char *out, size_t len)
{
    char cur[PATH_MAX], target[PATH_MAX], dir[PATH_MAX];
    if (snprintf(cur, sizeof cur, "%s", path) >= (int)sizeof cur)
        return -1;
    struct stat st;
    for (int hop = 0; hop < 40 && lstat(cur, &st) == 0 && S_ISLNK(st.st_mode); hop++) {
        ssize_t n = readlink(cur, target, sizeof target - 1);
        if (n < 0 || parent_of(cur, dir, sizeof dir))
            return -1;
        target[n] = 0;
        int w = target[0] == '/' ? snprintf(cur, sizeof cur, "%s", target)
                                 : snprintf(cur, sizeof cur, "%s/%s", dir, target);
        if (w < 0 || w >= (int)sizeof cur)
            return -1;
    }
    return snprintf(out, len, "%s", cur) < (int)len ? 0 : -1;
}

int same_file_path(const char *a, const char *b)
{
    struct stat sa, sb;
    char ra[PATH_MAX], rb[PATH_MAX]; /* a dangling link names the file it would create */
    if (output_follow_links(a, ra, sizeof ra) || output_follow_links(b, rb, sizeof rb))
        return 0;
    int has_a = stat(ra, &sa) == 0, has_b = stat(rb, &sb) == 0;
    if (has_a && has_b)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return !has_a && !has_b && same_new_file(ra, rb);
}

int output_dir_probe(const char *dir)
{
    char probe[PATH_MAX];
    if (snprintf(probe, sizeof probe, "%s/.harness-probe-XXXXXX", dir) >= (int)sizeof probe) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (!mkdtemp(probe))
        return -1;
    rmdir(probe);
    return 0;
}

/* a path that does not exist yet: its directory must exist and take a new entry */
static int check_new_file(const char *what, const char *path)
{
    char dir[PATH_MAX];
    struct stat st;
    if (parent_of(path, dir, sizeof dir) != 0) {
        log_error("%.64s...: cannot write %s: the path is too long", path, what);
        return EXIT_USAGE;
    }
    if (stat(dir, &st) != 0) {
        log_error("%s: cannot write %s: %s: %s", path, what, dir, strerror(errno));
        return EXIT_USAGE;
    }
    if (!S_ISDIR(st.st_mode)) {
        log_error("%s: cannot write %s: %s is not a directory", path, what, dir);
        return EXIT_USAGE;
    }
    if (access(dir, W_OK | X_OK) != 0 || output_dir_probe(dir) != 0) {
        log_error("%s: cannot write %s: nothing can be created in %s (%s)", path, what, dir,
                  strerror(errno));
        return EXIT_USAGE;
    }
    return 0;
}

int output_names_store(const char *path, const char *db, char *side, size_t len)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    char companion[PATH_MAX];
    for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++) {
        if (snprintf(companion, sizeof companion, "%s%s", db, suffixes[k]) >= (int)sizeof companion)
            continue;
        if (!same_file_path(path, companion))
            continue;
        if (side)
            snprintf(side, len, "%s", companion);
        return k ? 2 : 1;
    }
    return 0;
}

int output_is_input(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && input_was_read(&st);
}

/* 1 when path is on procfs or sysfs: such files open for writing as root and then refuse (or
 * take) what is written, so the run would fail at its first write, or change a kernel setting */
static int kernel_file(const char *path)
{
#ifdef __linux__
    struct statfs fs;
    return statfs(path, &fs) == 0 &&
           (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC);
#else
    (void)path;
    return 0;
#endif
}

int output_check_target(const char *what, const char *path)
{
    struct stat st;
    char real[PATH_MAX];
    if (output_follow_links(path, real, sizeof real)) {
        log_error("%.64s...: cannot write %s: the path (or a link's target) is too long", path,
                  what);
        return EXIT_USAGE;
    }
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) {
            log_error("%s: cannot write %s: %s", path, what, strerror(errno));
            return EXIT_USAGE;
        }
        return check_new_file(what, real); /* a dangling link: where it points must take it */
    }
    if (S_ISDIR(st.st_mode)) {
        log_error("%s: cannot write %s: it is a directory", path, what);
        return EXIT_USAGE;
    }
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) { /* a FIFO would block the run */
        log_error("%s: cannot write %s: it is a %s, not a regular file (or a character device "
                  "such as /dev/null)", path, what,
                  S_ISFIFO(st.st_mode) ? "FIFO" : S_ISSOCK(st.st_mode) ? "socket" : "block device");
        return EXIT_USAGE;
    }
    if (kernel_file(path)) {
        log_error("%s: cannot write %s there: it is a file of the kernel's /proc or /sys, not "
                  "a place for output", path, what);
        return EXIT_USAGE;
    }
    if (input_was_read(&st)) {
        log_error("%s: cannot write %s there: it is a file this run reads (the scenario, its "
                  "config, data, tokenizer or weights); name another file",
                  path, what);
        return EXIT_USAGE;
    }
    if (access(path, W_OK) != 0) {
        log_error("%s: cannot write %s: %s", path, what, strerror(errno));
        return EXIT_USAGE;
    }
    return 0;
}

FILE *output_create_fresh(const char *path)
{
    if (unlink(path) != 0 && errno != ENOENT)
        return NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (fd >= 0 && !f)
        close(fd);
    return f;
}
