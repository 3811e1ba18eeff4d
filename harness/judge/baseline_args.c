/* harness/judge/baseline_args.c: what can be told about --baseline and --baselines before any
 * run or judgement (a file spec reads as a baseline, the folder is one), for every command. */
#include "baseline_args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "baseline.h"
#include "compare_db_internal.h"
#include "util/util.h"

int baseline_file_spec_check(const char *spec)
{
    if (!spec || !spec[0] || !is_file_spec(spec))
        return 0;
    baseline b;
    int rc = baseline_read(spec, &b);
    if (rc == 0)
        baseline_free(&b);
    return rc ? EXIT_USAGE : 0;
}

int baseline_args_check(const char *cmd, const char *baseline, const char *baselines)
{
    struct stat st;
    if (baselines && stat(baselines, &st) != 0) {
        log_error("%s: --baselines %s: %s", cmd, baselines, strerror(errno));
        return EXIT_USAGE;
    }
    if (baselines && !S_ISDIR(st.st_mode)) {
        log_error("%s: --baselines %s: not a folder", cmd, baselines);
        return EXIT_USAGE;
    }
    return baseline_file_spec_check(baseline);
}

int golden_arg_check(const char *cmd, store *st, const char *golden)
{
    if (!golden || !golden[0])
        return 0;
    if (is_file_spec(golden) && baseline_file_spec_check(golden)) {
        log_error("%s: --golden %s is not a usable baseline file (above)", cmd, golden);
        return EXIT_USAGE;
    }
    run_row r;
    if (st && is_run_spec(golden) && store_get_run(st, strtoll(golden, NULL, 10), &r)) {
        log_error("%s: --golden %s: no such run in the store", cmd, golden);
        return EXIT_USAGE;
    }
    return 0;
}
