/* harness/formats/data_mmidx_write.c: writing Megatron's MMapIndexedDataset as its builder does: the
 * ids of each document appended to PREFIX.bin, then PREFIX.idx (sizes, pointers, doc_idx). */
#define _POSIX_C_SOURCE 200809L
#include "data_mmidx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/output_target.h"
#include "util/util.h"

/* PREFIX.bin and PREFIX.idx may be replaced: absent, or regular files (or links to one). A
 * folder there would fail the second rename after the first was done: a mismatched pair. Their
 * .tmp files are replaced (a stale file, or a link planted there, as the writer removes first):
 * a folder there is refused too, before anything is tokenized, and never removed */
static int destinations_ok(const char *prefix)
{
    static const char *const ext[] = {".bin", ".idx", ".bin.tmp", ".idx.tmp"};
    for (int i = 0; i < 4; i++) {
        char path[4300];
        struct stat st;
        snprintf(path, sizeof path, "%s%s", prefix, ext[i]);
        int tmp = i >= 2;
        if ((tmp ? lstat(path, &st) : stat(path, &st)) == 0 && !S_ISREG(st.st_mode) &&
            !(tmp && S_ISLNK(st.st_mode))) {
            log_error("%s: exists and is not a regular file; nothing written", path);
            return EXIT_USAGE;
        }
    }
    return 0;
}

int mmidx_writer_open(mmidx_writer *w, const char *prefix, int dtype)
{
    memset(w, 0, sizeof *w);
    if (strlen(prefix) + sizeof ".bin.tmp" > sizeof w->bin_path) {
        log_error("%.64s...: the output prefix is too long", prefix);
        return EXIT_USAGE;
    }
    snprintf(w->bin_path, sizeof w->bin_path, "%s.bin.tmp", prefix);
    snprintf(w->idx_path, sizeof w->idx_path, "%s.idx.tmp", prefix);
    w->dtype = dtype;
    w->item_size = dtype == MMIDX_U16 ? 2 : 4;
    if (destinations_ok(prefix))
        return EXIT_USAGE;
    if (!(w->bin = output_create_fresh(w->bin_path))) {
        log_error("%s: cannot create: %s", w->bin_path, strerror(errno));
        return EXIT_USAGE;
    }
    return 0;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++, v >>= 8)
        p[i] = (unsigned char)(v & 0xff);
}

int mmidx_writer_add(mmidx_writer *w, const int32_t *ids, size_t n)
{
    if (n > INT32_MAX) {
        log_error("%s: a document of %zu tokens is longer than the index's int32 sizes", w->bin_path, n);
        return EXIT_FAIL;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 1024;
        int32_t *s = realloc(w->sizes, cap * sizeof *s);
        if (!s) {
            log_error("%s: out of memory for %zu document sizes", w->idx_path, cap);
            return EXIT_FAIL;
        }
        w->sizes = s;
        w->cap = cap;
    }
    unsigned char buf[4096];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (w->dtype == MMIDX_U16 && ids[i] > 65535)) {
            log_error("%s: id %d does not fit the dtype", w->bin_path, (int)ids[i]);
            return EXIT_FAIL;
        }
        put_le(buf + k, (uint64_t)ids[i], w->item_size);
        k += (size_t)w->item_size;
        if (k == sizeof buf || i + 1 == n) {
            if (fwrite(buf, 1, k, w->bin) != k) {
                log_error("%s: write failed: %s", w->bin_path, strerror(errno));
                return EXIT_FAIL;
            }
            k = 0;
        }
    }
    w->sizes[w->n++] = (int32_t)n;
    w->bin_bytes += (uint64_t)n * (uint64_t)w->item_size;
    return 0;
}

/* the header and the three arrays, written in that order */
static int write_index(mmidx_writer *w, FILE *f)
{
    unsigned char h[MMIDX_HEADER_LEN], b[8];
    memcpy(h, MMIDX_MAGIC, MMIDX_MAGIC_LEN);
    put_le(h + 9, 1, 8);
    h[17] = (unsigned char)w->dtype;
    put_le(h + 18, w->n, 8);
    put_le(h + 26, w->n + 1, 8);
    int ok = fwrite(h, 1, sizeof h, f) == sizeof h;
    for (size_t i = 0; ok && i < w->n; i++) {
        put_le(b, (uint32_t)w->sizes[i], 4);
        ok = fwrite(b, 1, 4, f) == 4;
    }
    uint64_t at = 0;
    for (size_t i = 0; ok && i < w->n; i++) {
        put_le(b, at, 8);
        at += (uint64_t)w->sizes[i] * (uint64_t)w->item_size;
        ok = fwrite(b, 1, 8, f) == 8;
    }
    for (size_t i = 0; ok && i <= w->n; i++) { /* one sequence per document */
        put_le(b, i, 8);
        ok = fwrite(b, 1, 8, f) == 8;
    }
    return ok ? 0 : -1;
}

/* the finished .tmp files renamed to PREFIX.bin and PREFIX.idx */
static int publish(mmidx_writer *w)
{
    char bin[sizeof w->bin_path], idx[sizeof w->idx_path];
    snprintf(bin, sizeof bin, "%.*s", (int)(strlen(w->bin_path) - 4), w->bin_path);
    snprintf(idx, sizeof idx, "%.*s", (int)(strlen(w->idx_path) - 4), w->idx_path);
    if (rename(w->bin_path, bin) != 0) {
        log_error("%s: cannot rename the finished file into place: %s", bin, strerror(errno));
        unlink(w->bin_path);
        unlink(w->idx_path);
        return EXIT_FAIL;
    }
    if (rename(w->idx_path, idx) != 0) { /* no new .bin beside an old .idx: a mismatched pair */
        log_error("%s: cannot rename the finished file into place: %s (%s removed)", idx,
                  strerror(errno), bin);
        unlink(bin);
        unlink(w->idx_path);
        return EXIT_FAIL;
    }
    return 0;
}

int mmidx_writer_finish(mmidx_writer *w)
{
    int rc = fclose(w->bin) != 0;
    w->bin = NULL;
    if (rc) {
        log_error("%s: write failed: %s", w->bin_path, strerror(errno));
        mmidx_writer_abort(w);
        return EXIT_FAIL;
    }
    FILE *f = output_create_fresh(w->idx_path);
    int bad = !f || write_index(w, f) != 0;
    if (f && fclose(f) != 0)
        bad = 1;
    if (bad) {
        log_error("%s: cannot write the index: %s", w->idx_path, strerror(errno));
        mmidx_writer_abort(w);
        return EXIT_FAIL;
    }
    free(w->sizes);
    w->sizes = NULL;
    return publish(w);
}

void mmidx_writer_abort(mmidx_writer *w)
{
    if (w->bin)
        fclose(w->bin);
    w->bin = NULL;
    unlink(w->bin_path);
    unlink(w->idx_path);
    free(w->sizes);
    w->sizes = NULL;
}
