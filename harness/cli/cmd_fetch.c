/* harness/cli/cmd_fetch.c: `harness fetch REPO[@REV]`: a model or dataset repository from the
 * Hugging Face hub (or a mirror) into the cache huggingface_hub and transformers share. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "net/net.h"
#include "util/util.h"
#include "commands.h"

static void fetch_usage(void)
{
    printf("usage: harness fetch REPO[@REVISION] [--dataset] [--include GLOB[,GLOB...]]\n"
           "                     [--cache DIR] [--endpoint URL] [--quiet]\n\n"
           "Downloads a repository of the Hugging Face hub (a model; a dataset with --dataset or\n"
           "REPO as datasets/ORG/NAME) through its HTTP API into the cache as huggingface_hub\n"
           "lays it out, so transformers finds the files offline and the harness finds what\n"
           "transformers downloaded. Prints the snapshot folder on stdout (docs/fetch.md).\n\n"
           "  REPO            ORG/NAME or NAME; REVISION a branch, tag or commit (default main)\n"
           "  --include GLOB  only the files whose path matches one of the globs (fnmatch);\n"
           "                  repeat it to add globs\n"
           "  --cache DIR     the cache (default HF_HUB_CACHE, $HF_HOME/hub,\n"
           "                  ~/.cache/huggingface/hub)\n"
           "  --endpoint URL  the hub or a mirror (default HF_ENDPOINT, https://huggingface.co)\n"
           "  --quiet         no progress\n\n"
           "Environment: HF_TOKEN (a bearer token; or the file HF_TOKEN_PATH, $HF_HOME/token),\n"
           "HF_HUB_OFFLINE=1 (the cache only), HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT\n"
           "(seconds), HARNESS_NET_RETRIES, HARNESS_NET_BACKOFF_MS, https_proxy/no_proxy,\n"
           "CURL_CA_BUNDLE.\n\n"
           "Every file is checked against its digest (sha256 of LFS files, git's blob id of the\n"
           "others) before it is moved into the cache; partial downloads resume.\n\n"
           "Exit codes: 0 done, 2 usage error or a failed download (with a message).\n");
}

/* "; N resumed from a partial download" for the summary line */
static const char *resumed_note(int n)
{
    static char note[64];
    snprintf(note, sizeof note, "; %d resumed from a partial download", n);
    return note;
}

/* every --include of the command line joined with commas into out (a repeated --include adds
 * its globs, as huggingface-cli's several patterns do); 0, or 2 after a message when they
 * exceed 1023 bytes (the globs are matched from a 1 KiB copy) */
static int join_includes(int argc, char **argv, char *out, size_t len)
{
    size_t n = 0;
    out[0] = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--include") == 0 && i + 1 < argc)
            v = argv[++i];
        else if (strncmp(argv[i], "--include=", 10) == 0)
            v = argv[i] + 10;
        if (!v)
            continue;
        int w = snprintf(out + n, len - n, "%s%s", n ? "," : "", v);
        if (w < 0 || (size_t)w >= len - n)
            return cmd_usage_error("fetch", "--include: more than %zu bytes of globs", len - 1);
        n += (size_t)w;
    }
    return 0;
}

int cmd_fetch(int argc, char **argv)
{
    const char *include = NULL, *cache = NULL, *endpoint = NULL, *pos[1];
    int dataset = 0, quiet = 0, n_pos = 0;
    const cmd_opt opts[] = {
        {"--include", &include, NULL}, {"--cache", &cache, NULL},
        {"--endpoint", &endpoint, NULL}, {"--dataset", NULL, &dataset},
        {"--quiet", NULL, &quiet},     {NULL, NULL, NULL},
    };
    int rc = cmd_parse(argc, argv, opts, pos, 1, &n_pos);
    if (rc == 1)
        return fetch_usage(), EXIT_PASS;
    if (rc)
        return rc;
    if (n_pos != 1)
        return cmd_usage_error("fetch", "give one repository: ORG/NAME[@REVISION]");
    char globs[1024];
    if (include && (rc = join_includes(argc, argv, globs, sizeof globs)))
        return rc;
    if (include)
        include = globs;
    repo_ref r;
    char cache_dir[4096];
    if ((rc = repo_ref_parse(pos[0], dataset, "fetch", &r)))
        return rc;
    if (cache)
        snprintf(cache_dir, sizeof cache_dir, "%s", cache);
    else if ((rc = hub_cache_default(cache_dir, sizeof cache_dir)))
        return rc;
    struct stat sb; /* a cache that is there must be a folder: checked before the network */
    if (stat(cache_dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return cmd_usage_error("fetch", "the cache %s%s is not a folder", cache_dir,
                               cache ? " (--cache)" : " (HF_HUB_CACHE, HF_HOME or the default)");
    log_quiet = log_quiet || quiet;
    fetch_options o = {endpoint ? endpoint : hub_default_endpoint(), cache_dir, include,
                       hub_offline()};
    fetch_result res;
    if ((rc = hub_fetch(&r, &o, &res)))
        return rc;
    if (o.offline)
        log_info("fetch: %s@%s: HF_HUB_OFFLINE, from the cache (commit %s)", r.id, r.revision,
                 res.commit);
    else
        log_info("fetch: %s@%s: commit %s, %d files, %d downloaded (%lld bytes transferred%s)",
                 r.id, r.revision, res.commit, res.files, res.downloaded, (long long)res.bytes,
                 res.resumed ? resumed_note(res.resumed) : "");
    printf("%s\n", res.snapshot);
    return EXIT_PASS;
}
