/* fuzz/replay.c: runs fuzz targets without libFuzzer: every file named on the command line (or
 * in a directory named there) goes through LLVMFuzzerTestOneInput once. Used by ctest to replay
 * the corpus and every crash the fuzzer ever found, under any compiler and sanitizer. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    size_t len;
    char *data = read_file(path, &len);
    if (!data) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        return 1;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)data, len);
    free(data);
    return 0;
}

static int run_path(const char *path, int *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such file or directory: %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode))
        return (*count)++, run_file(path);
    DIR *d = opendir(path);
    struct dirent *e;
    int rc = 0;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rc |= run_path(sub, count);
        }
    if (d)
        closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0, count = 0;
    for (int i = 1; i < argc; i++)
        rc |= run_path(argv[i], &count);
    printf("replay: %d inputs, %s\n", count, rc ? "some unreadable" : "no crash");
    return rc;
}
