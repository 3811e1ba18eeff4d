/* tests/testutil.c: helpers shared by the cmocka tests: seeded random fills, the source tree's
 * path, temporary files (removed when the test program exits). */
#define _XOPEN_SOURCE 700 /* nftw */
#include "testutil.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double tu_uniform(uint64_t *state, double lo, double hi)
{
    return lo + (hi - lo) * (double)(splitmix64(state) >> 11) / 9007199254740992.0;
}

void tu_fill(double *x, size_t n, uint64_t *state, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = tu_uniform(state, lo, hi);
}

const char *tu_source_path(const char *rel)
{
    static char buf[8][4096];
    static int next;
    const char *src = getenv("HARNESS_SOURCE");
    char *out = buf[next++ % 8];
    snprintf(out, sizeof buf[0], "%s/%s", src ? src : HARNESS_SOURCE_DIR, rel);
    return out;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int tu_remove_tree(const char *path)
{
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

/* at exit: every /tmp/harness-test-PID-* this process named, file or folder, removed */
static void remove_temp_paths(void)
{
    char prefix[64], path[512];
    snprintf(prefix, sizeof prefix, "harness-test-%d-", (int)getpid());
    DIR *dir = opendir("/tmp");
    for (struct dirent *e = dir ? readdir(dir) : NULL; e; e = readdir(dir))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            snprintf(path, sizeof path, "/tmp/%s", e->d_name);
            tu_remove_tree(path);
        }
    if (dir)
        closedir(dir);
}

const char *tu_temp_path(const char *suffix)
{
    static char buf[8][256];
    static int next, counter;
    if (counter == 0)
        atexit(remove_temp_paths);
    char *out = buf[next++ % 8];
    snprintf(out, sizeof buf[0], "/tmp/harness-test-%d-%d%s", (int)getpid(), counter++, suffix);
    unlink(out);
    return out;
}
