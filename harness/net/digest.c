/* harness/net/digest.c: digests of downloaded files with OpenSSL's libcrypto (EVP), read in
 * chunks: sha256 (the hub's LFS etag) and git's blob id (its etag of other files). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "net.h"
#include "util/util.h"

int is_hex(const char *s, size_t n)
{
    if (strlen(s) != n)
        return 0;
    return strspn(s, "0123456789abcdefABCDEF") == n;
}

void hex_lower(char *s)
{
    for (; *s; s++)
        *s = (char)(*s >= 'A' && *s <= 'F' ? *s - 'A' + 'a' : *s);
}

static void to_hex(const unsigned char *md, unsigned n, char *out)
{
    for (unsigned i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* the digest of (prefix, then the file's bytes) with md; 0 or 2 after a message */
static int digest_file(const char *path, const EVP_MD *md, int git_blob, char *out)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        log_error("cannot read %s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return EXIT_USAGE;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, md, NULL);
    if (ok && git_blob) {
        char head[64];
        int n = snprintf(head, sizeof head, "blob %lld", (long long)st.st_size);
        ok = EVP_DigestUpdate(ctx, head, (size_t)n + 1); /* with its NUL */
    }
    static unsigned char buf[1 << 16];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0)
        ok = EVP_DigestUpdate(ctx, buf, n);
    int read_error = ferror(f);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    ok = ok && !read_error && EVP_DigestFinal_ex(ctx, digest, &len);
    EVP_MD_CTX_free(ctx);
    fclose(f);
    if (!ok) {
        log_error("%s: %s", path, read_error ? "read error" : "libcrypto digest failed");
        return EXIT_USAGE;
    }
    to_hex(digest, len, out);
    return 0;
}

int file_sha256_hex(const char *path, char out[65])
{
    return digest_file(path, EVP_sha256(), 0, out);
}

int file_git_sha1_hex(const char *path, char out[41])
{
    return digest_file(path, EVP_sha1(), 1, out);
}
