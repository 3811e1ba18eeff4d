/* harness/util/input_file.c: reading a file the harness is given: regular files only, never blocking
 * on a FIFO, each kind capped at the size in the table below (docs/limits.md says the same). */
#define _POSIX_C_SOURCE 200809L
#include "input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1024ull * 1024ull)

static const struct {
    uint64_t cap;
    const char *name;
} caps[INPUT_KINDS] = {
    [INPUT_SCENARIO] = {4 * MiB, "scenario file"},
    [INPUT_MODEL_CONFIG] = {4 * MiB, "model config file"},
    [INPUT_SHARD_INDEX] = {16 * MiB, "safetensors index"},
    [INPUT_TOKENIZER] = {256 * MiB, "tokenizer file"},
    [INPUT_DATA] = {1024 * MiB, "data file"},
    [INPUT_BASELINE] = {256 * MiB, "baseline file"},
    [INPUT_IMAGE] = {64 * MiB, "plot image"},
    [INPUT_ANY] = {1024 * MiB, "file"},
};

uint64_t input_cap(input_kind kind)
{
    return kind < INPUT_KINDS ? caps[kind].cap : caps[INPUT_ANY].cap;
}

const char *input_kind_name(input_kind kind)
{
    return kind < INPUT_KINDS ? caps[kind].name : caps[INPUT_ANY].name;
}

static const char *file_type(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO (named pipe)"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a plain file";
}

/* every file input_open opened (device and inode), for input_was_read; grown as needed, kept
 * until the process ends (reachable, so no leak) */
static struct {
    dev_t dev;
    ino_t ino;
} *opened;
static size_t n_opened, cap_opened;

/* remembers st's file; out of memory only makes input_was_read forget it */
static void remember_opened(const struct stat *st)
{
    if (input_was_read(st))
        return;
    if (n_opened == cap_opened) {
        size_t cap = cap_opened ? 2 * cap_opened : 64;
        void *grown = realloc(opened, cap * sizeof *opened);
        if (!grown)
            return;
        opened = grown;
        cap_opened = cap;
    }
    opened[n_opened].dev = st->st_dev;
    opened[n_opened++].ino = st->st_ino;
}

int input_was_read(const struct stat *st)
{
    for (size_t i = 0; i < n_opened; i++)
        if (opened[i].dev == st->st_dev && opened[i].ino == st->st_ino)
            return 1;
    return 0;
}

int input_open(const char *path, uint64_t *size, char *why, size_t why_len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int err = errno;
        snprintf(why, why_len, "%s", strerror(err));
        if (fd >= 0)
            close(fd);
        errno = err;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, why_len, "it is %s, not a regular file", file_type(st.st_mode));
        close(fd);
        errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        return -1;
    }
    *size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    remember_opened(&st);
    return fd;
}

static void over_cap(input_kind kind, const char *size, char *why, size_t why_len)
{
    snprintf(why, why_len, "it is %s, over the %llu MiB limit for a %s (docs/limits.md)", size,
             (unsigned long long)(input_cap(kind) / MiB), input_kind_name(kind));
    errno = EFBIG;
}

/* reads fd to its end, at most cap bytes (one more tells that it went past); NULL on failure */
static char *read_bounded(int fd, uint64_t hint, uint64_t cap, size_t *n, char *why, size_t wl)
{
    size_t want = (size_t)(hint < cap ? hint : cap) + 1, got = 0;
    size_t room = want < 4096 ? 4096 : want;
    char *buf = malloc(room + 1);
    while (buf && got <= cap) {
        if (got == room) {
            size_t more = room > cap / 2 ? (size_t)cap + 1 : room * 2;
            char *grown = realloc(buf, more + 1);
            if (!grown)
                break;
            buf = grown;
            room = more;
        }
        ssize_t k = read(fd, buf + got, room - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0) {
                *n = got;
                return buf;
            }
            snprintf(why, wl, "%s", strerror(errno));
            free(buf);
            return NULL;
        }
        got += (size_t)k;
    }
    if (!buf || got <= cap)
        snprintf(why, wl, "out of memory");
    *n = got;
    if (buf && got > cap)
        return buf; /* the caller refuses it as over the cap */
    free(buf);
    errno = ENOMEM;
    return NULL;
}

char *input_read(const char *path, input_kind kind, size_t *len, char *why, size_t why_len)
{
    uint64_t size = 0, cap = input_cap(kind);
    int fd = input_open(path, &size, why, why_len);
    if (fd < 0)
        return NULL;
    char sz[64];
    if (size > cap) {
        close(fd);
        snprintf(sz, sizeof sz, "%llu bytes", (unsigned long long)size);
        over_cap(kind, sz, why, why_len);
        return NULL;
    }
    size_t n = 0;
    int err = 0;
    char *buf = read_bounded(fd, size, cap, &n, why, why_len);
    if (!buf)
        err = errno;
    close(fd);
    if (buf && n > cap) {
        free(buf);
        over_cap(kind, "larger than that (it grew while read)", why, why_len);
        return NULL;
    }
    if (!buf) {
        errno = err ? err : EIO;
        return NULL;
    }
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}
