/* tests/testutil.h: helpers shared by the cmocka tests: seeded random fills, the source tree's
 * path, temporary files. */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* deterministic uniform values in [lo, hi) from a splitmix64 state */
double tu_uniform(uint64_t *state, double lo, double hi);
void tu_fill(double *x, size_t n, uint64_t *state, double lo, double hi);
/* the project's source directory (env HARNESS_SOURCE, set by ctest) joined with rel */
const char *tu_source_path(const char *rel);
/* a fresh temporary file path under /tmp (the file is removed first; every such path of the
 * process, file or folder, is removed at exit) */
const char *tu_temp_path(const char *suffix);
/* removes path and, for a folder, everything below it: 0, or -1 */
int tu_remove_tree(const char *path);

#endif
