/* tests/testutil.c: helpers shared by the cmocka tests: seeded random fills, the source tree's
 * path, temporary files. */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
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

const char *tu_temp_path(const char *suffix)
{
    static char buf[8][256];
    static int next, counter;
    char *out = buf[next++ % 8];
    snprintf(out, sizeof buf[0], "/tmp/harness-test-%d-%d%s", (int)getpid(), counter++, suffix);
    unlink(out);
    return out;
}
