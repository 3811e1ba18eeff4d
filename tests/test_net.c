/* tests/test_net.c: harness/net/ without a network: repository references, the names a server may
 * give (paths, etags), cache folder names, refs, snapshot links, the file digests, and no write
 * through a link planted in the cache. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/hub_cache.h"
#include "net/net.h"
#include "util/util.h"

static void test_repo_refs(void **state)
{
    (void)state;
    repo_ref r;
    assert_int_equal(repo_ref_parse("org/name", 0, "t", &r), 0);
    assert_string_equal(r.id, "org/name");
    assert_string_equal(r.revision, "main");
    assert_int_equal(r.type, REPO_MODEL);
    assert_int_equal(repo_ref_parse("datasets/org/ds@v1.0", 0, "t", &r), 0);
    assert_int_equal(r.type, REPO_DATASET);
    assert_string_equal(r.revision, "v1.0");
    assert_int_equal(repo_ref_parse("gpt2@refs/pr/1", 0, "t", &r), 0);
    assert_string_equal(r.revision, "refs/pr/1");
    const char *bad[] = {"", "a/b/c", "../x", "org/..", "org/a..b", "a--b/c", "/abs", "org/",
                         "org/name@", "org/name@../x", "org/name@a//b", "org/name@a/", "-x/y",
                         "org/na me", "org/name@a\nb", NULL};
    for (int i = 0; bad[i]; i++)
        assert_int_equal(repo_ref_parse(bad[i], 0, "t", &r), 2);
    /* a commit is kept in lower case, whatever case it was given in */
    const char *pin = "org/n@0123456789ABCDEF0123456789abcdef01234567";
    assert_int_equal(repo_ref_parse(pin, 0, "t", &r), 0);
    assert_string_equal(r.revision, "0123456789abcdef0123456789abcdef01234567");
    assert_int_equal(repo_ref_parse("org/n@BRANCH", 0, "t", &r), 0);
    assert_string_equal(r.revision, "BRANCH");
}

static void test_server_names(void **state)
{
    (void)state;
    const char *ok[] = {"config.json", "a/b/c.txt", "1_Pooling/config.json", "a..b", ".gitattributes",
                        NULL};
    const char *bad[] = {"", "/abs", "../x", "a/../../x", "./x", "a/./b", "a//b", "a/", "..",
                         "a\\b", "a\x1b" "b", "a\nb", NULL};
    for (int i = 0; ok[i]; i++)
        assert_true(hub_path_is_safe(ok[i]));
    for (int i = 0; bad[i]; i++)
        assert_false(hub_path_is_safe(bad[i]));
    assert_true(hub_etag_is_safe("ce013625030ba8dba906f756967f9e9ca394464a"));
    assert_false(hub_etag_is_safe("../../x"));
    assert_false(hub_etag_is_safe(""));
    assert_false(hub_etag_is_safe("a.b"));
}

static void test_cache_names(void **state)
{
    (void)state;
    repo_ref r;
    char out[512];
    assert_int_equal(repo_ref_parse("org/name", 0, "t", &r), 0);
    assert_int_equal(hub_repo_folder("/c", &r, out, sizeof out), 0);
    assert_string_equal(out, "/c/models--org--name");
    assert_int_equal(repo_ref_parse("gpt2", 1, "t", &r), 0);
    assert_int_equal(hub_repo_folder("/c", &r, out, sizeof out), 0);
    assert_string_equal(out, "/c/datasets--gpt2");
    setenv("HF_HUB_CACHE", "/x/hub", 1);
    assert_int_equal(hub_cache_default(out, sizeof out), 0);
    assert_string_equal(out, "/x/hub");
    unsetenv("HF_HUB_CACHE");
    unsetenv("HUGGINGFACE_HUB_CACHE");
    setenv("HF_HOME", "/y", 1);
    assert_int_equal(hub_cache_default(out, sizeof out), 0);
    assert_string_equal(out, "/y/hub");
}

/* refs, links and digests in a temporary folder */
static void test_cache_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_net.XXXXXX", path[600], link[600], commit[41];
    assert_non_null(mkdtemp(dir));
    const char *c40 = "0123456789abcdef0123456789abcdef01234567";
    assert_int_equal(hub_write_ref(dir, "refs/pr/1", c40), 0);
    assert_int_equal(hub_cache_commit(dir, "refs/pr/1", commit), 0);
    assert_string_equal(commit, c40);
    assert_int_equal(hub_cache_commit(dir, "main", commit), 1);
    snprintf(path, sizeof path, "%s/refs/bad", dir);
    FILE *f = fopen(path, "w");
    fputs("not a commit", f);
    fclose(f);
    assert_int_equal(hub_cache_commit(dir, "bad", commit), 2);
    /* commits in upper case (a ref written by another tool, a pin) are looked up in lower case */
    const char *up = "0123456789ABCDEF0123456789ABCDEF01234567";
    assert_int_equal(hub_cache_commit(dir, up, commit), 0);
    assert_string_equal(commit, c40);
    assert_int_equal(hub_write_ref(dir, "upper", up), 0);
    assert_int_equal(hub_cache_commit(dir, "upper", commit), 0);
    assert_string_equal(commit, c40);
    assert_int_equal(hub_write_ref(dir, up, c40), 0); /* a commit needs no ref, in any case */
    snprintf(path, sizeof path, "%s/refs/%s", dir, up);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(hub_link_snapshot(dir, c40, "a/b/f.txt", "e1"), 0);
    snprintf(path, sizeof path, "%s/snapshots/%s/a/b/f.txt", dir, c40);
    ssize_t n = readlink(path, link, sizeof link - 1);
    assert_true(n > 0);
    link[n] = 0;
    assert_string_equal(link, "../../../../blobs/e1");
    /* a symlink where a folder goes is refused, not followed */
    snprintf(path, sizeof path, "%s/snapshots/%s/s", dir, c40);
    assert_int_equal(symlink("/tmp", path), 0);
    assert_int_equal(hub_link_snapshot(dir, c40, "s/x", "e1"), 2);
    /* digests: the reference values from `git hash-object` and sha256sum of "hello\n" */
    snprintf(path, sizeof path, "%s/hello", dir);
    f = fopen(path, "w");
    fputs("hello\n", f);
    fclose(f);
    char sha[65], git[41];
    assert_int_equal(file_sha256_hex(path, sha), 0);
    assert_string_equal(sha, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
    assert_int_equal(file_git_sha1_hex(path, git), 0);
    assert_string_equal(git, "ce013625030ba8dba906f756967f9e9ca394464a");
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* the partial file is never opened through a link: refused before any request (the URL is a
 * closed port); an empty file needs no request at all; a ref's temporary name is replaced */
static void test_no_link_followed(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_net.XXXXXX", victim[600], part[600], tmp[700], cmd[1600];
    assert_non_null(mkdtemp(dir));
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(part, sizeof part, "%s/e69de29bb2d1d6434b8b29ae775ad8c2e48c5391.incomplete", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    assert_int_equal(symlink(victim, part), 0);
    net_config c;
    assert_int_equal(net_config_init_token(&c, "http://127.0.0.1:9", "TEST_NET_NO_TOKEN"), 0);
    c.retries = 0;
    int64_t got = -1;
    for (int64_t size = 0; size <= 5; size += 5) {
        assert_int_equal(net_download(&c, "http://127.0.0.1:9/x", part, size, "t", &got), 2);
        assert_int_equal(got, 0);
        size_t n = 0;
        char *text = read_file(victim, &n);
        assert_non_null(text);
        assert_string_equal(text, "precious\n");
        free(text);
    }
    assert_int_equal(unlink(part), 0);
    assert_int_equal(net_download(&c, "http://127.0.0.1:9/x", part, 0, "t", &got), 0);
    assert_int_equal(access(part, F_OK), 0);
    /* refs/main.PID.tmp planted as a link to the victim: replaced, the victim untouched */
    snprintf(part, sizeof part, "%s/refs/main", dir);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", part, (long)getpid());
    snprintf(cmd, sizeof cmd, "%s/refs", dir);
    assert_int_equal(mkdir(cmd, 0777), 0);
    assert_int_equal(symlink(victim, tmp), 0);
    assert_int_equal(hub_write_ref(dir, "main", "0123456789abcdef0123456789abcdef01234567"), 0);
    char *text = read_file(victim, NULL);
    assert_non_null(text);
    assert_string_equal(text, "precious\n");
    free(text);
    snprintf(cmd, sizeof cmd, "test -f '%s' && test ! -L '%s'", part, part);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* a token from one named variable: HF_TOKEN is never read (baselines), a long one is whole */
static void test_config_tokens(void **state)
{
    (void)state;
    static char huge[NET_TOKEN_MAX + 2];
    memset(huge, 'h', sizeof huge - 1);
    net_config c;
    setenv("HF_TOKEN", huge, 1);
    unsetenv("HARNESS_BASELINE_TOKEN");
    assert_int_equal(net_config_init_token(&c, "http://x", "HARNESS_BASELINE_TOKEN"), 0);
    assert_string_equal(c.token, "");
    assert_non_null(strstr(c.auth_hint, "HARNESS_BASELINE_TOKEN"));
    assert_null(strstr(c.auth_hint, "HF_TOKEN"));
    assert_int_equal(net_config_init(&c, "http://x"), 2); /* too long: refused, not cut */
    huge[NET_TOKEN_MAX] = 0;
    setenv("HARNESS_BASELINE_TOKEN", huge, 1);
    setenv("HF_TOKEN", huge, 1);
    assert_int_equal(net_config_init_token(&c, "http://x", "HARNESS_BASELINE_TOKEN"), 0);
    assert_int_equal(strlen(c.token), NET_TOKEN_MAX);
    assert_int_equal(net_config_init(&c, "http://x"), 0);
    assert_non_null(strstr(c.auth_hint, "HF_TOKEN"));
    unsetenv("HF_TOKEN");
    unsetenv("HARNESS_BASELINE_TOKEN");
}

int main(void)
{
    log_quiet = 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repo_refs),
        cmocka_unit_test(test_server_names),
        cmocka_unit_test(test_cache_names),
        cmocka_unit_test(test_cache_files),
        cmocka_unit_test(test_config_tokens),
        cmocka_unit_test(test_no_link_followed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
