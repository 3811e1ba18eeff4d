/* harness/formats/data_mmidx.c: reading Megatron's MMapIndexedDataset: the .idx parsed and checked
 * against the .bin's size, both files mapped read-only, tokens read by position. */
#define _POSIX_C_SOURCE 200809L
#include "data_mmidx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/util.h"

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int32_t le32s(const unsigned char *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                 (uint32_t)p[3] << 24;
    int32_t s;
    memcpy(&s, &v, sizeof s);
    return s;
}

static int64_t le64s(const unsigned char *p)
{
    uint64_t v = le64(p);
    int64_t s;
    memcpy(&s, &v, sizeof s);
    return s;
}

/* bytes per token of an integer dtype code, 0 for floats and unknown codes */
static int item_size_of(int code)
{
    switch (code) {
    case MMIDX_U8: case MMIDX_I8: return 1;
    case MMIDX_I16: case MMIDX_U16: return 2;
    case MMIDX_I32: return 4;
    case MMIDX_I64: return 8;
    default: return 0;
    }
}

/* the header: magic, version, dtype, and counts whose arrays fill the file exactly */
static int parse_header(const unsigned char *idx, uint64_t len, mmidx *m, char *why, size_t wl)
{
    if (len < MMIDX_HEADER_LEN) {
        snprintf(why, wl, "%llu bytes: shorter than the %d-byte header (truncated index)",
                 (unsigned long long)len, MMIDX_HEADER_LEN);
        return EXIT_USAGE;
    }
    if (memcmp(idx, MMIDX_MAGIC, MMIDX_MAGIC_LEN) != 0) {
        snprintf(why, wl, "offset 0: bad magic (not a Megatron MMIDIDX index)");
        return EXIT_USAGE;
    }
    uint64_t version = le64(idx + 9);
    if (version != 1) {
        snprintf(why, wl, "offset 9: version %llu (only version 1 is known)",
                 (unsigned long long)version);
        return EXIT_USAGE;
    }
    m->dtype = idx[17];
    if (!(m->item_size = item_size_of(m->dtype))) {
        snprintf(why, wl, "offset 17: dtype code %d %s", m->dtype,
                 m->dtype == MMIDX_F64 || m->dtype == MMIDX_DOUBLE ? "is a float: it holds no token ids"
                                                                   : "is unknown (known: 1-5, 8)");
        return EXIT_USAGE;
    }
    m->n_seqs = le64(idx + 18);
    m->n_doc_idx = le64(idx + 26);
    uint64_t room = len - MMIDX_HEADER_LEN;
    if (m->n_seqs > room / 12 || m->n_doc_idx > room / 8 ||
        m->n_seqs * 12 + m->n_doc_idx * 8 > room) {
        snprintf(why, wl, "offset 18: %llu sequences and %llu doc_idx entries need more than the "
                 "%llu bytes after the header (truncated index)", (unsigned long long)m->n_seqs,
                 (unsigned long long)m->n_doc_idx, (unsigned long long)room);
        return EXIT_USAGE;
    }
    if (m->n_seqs * 12 + m->n_doc_idx * 8 != room) {
        snprintf(why, wl, "%llu bytes after the arrays the header counts (trailing data)",
                 (unsigned long long)(room - m->n_seqs * 12 - m->n_doc_idx * 8));
        return EXIT_USAGE;
    }
    return 0;
}

/* sizes and pointers: every sequence inside the .bin */
static int parse_sequences(const unsigned char *idx, uint64_t bin_len, mmidx *m, char *why,
                           size_t wl)
{
    const unsigned char *sz = idx + MMIDX_HEADER_LEN, *pt = sz + 4 * m->n_seqs;
    m->starts[0] = 0;
    for (uint64_t i = 0; i < m->n_seqs; i++) {
        int32_t n = le32s(sz + 4 * i);
        int64_t p = le64s(pt + 8 * i);
        if (n < 0) {
            snprintf(why, wl, "sizes[%llu]: %d is negative", (unsigned long long)i, (int)n);
            return EXIT_USAGE;
        }
        uint64_t bytes = (uint64_t)n * (uint64_t)m->item_size;
        if (p < 0 || (uint64_t)p > bin_len || bytes > bin_len - (uint64_t)p) {
            snprintf(why, wl, "pointers[%llu]: %lld bytes of sequence at offset %lld lie outside "
                     "the %llu-byte .bin", (unsigned long long)i, (long long)bytes, (long long)p,
                     (unsigned long long)bin_len);
            return EXIT_USAGE;
        }
        m->sizes[i] = n;
        m->pointers[i] = p;
        m->starts[i + 1] = m->starts[i] + n; /* <= bin_len in total: no overflow */
    }
    m->n_tokens = (uint64_t)m->starts[m->n_seqs];
    return 0;
}

/* doc_idx: from 0, never decreasing, ending at n_seqs */
static int parse_doc_idx(const unsigned char *idx, mmidx *m, char *why, size_t wl)
{
    const unsigned char *d = idx + MMIDX_HEADER_LEN + 12 * m->n_seqs;
    if (m->n_doc_idx == 0) {
        snprintf(why, wl, "doc_idx is empty (it starts with 0)");
        return EXIT_USAGE;
    }
    int64_t prev = 0;
    for (uint64_t i = 0; i < m->n_doc_idx; i++) {
        int64_t v = le64s(d + 8 * i);
        if ((i == 0 && v != 0) || v < prev || (uint64_t)v > m->n_seqs) {
            snprintf(why, wl, "doc_idx[%llu]: %lld (must start at 0, never decrease and stay within "
                     "the %llu sequences)", (unsigned long long)i, (long long)v,
                     (unsigned long long)m->n_seqs);
            return EXIT_USAGE;
        }
        m->doc_idx[i] = prev = v;
    }
    if ((uint64_t)prev != m->n_seqs) {
        snprintf(why, wl, "doc_idx ends at %lld, not at the %llu sequences", (long long)prev,
                 (unsigned long long)m->n_seqs);
        return EXIT_USAGE;
    }
    return 0;
}

static void free_arrays(mmidx *m)
{
    free(m->sizes);
    free(m->pointers);
    free(m->doc_idx);
    free(m->starts);
    m->sizes = NULL;
    m->pointers = m->doc_idx = m->starts = NULL;
}

int mmidx_parse(const unsigned char *idx, uint64_t len, uint64_t bin_len, mmidx *m, char *why,
                size_t wl)
{
    memset(m, 0, sizeof *m);
    m->max_id = -1;
    int rc = parse_header(idx, len, m, why, wl);
    if (rc)
        return rc;
    /* the counts are bounded by the file's length: these sizes cannot overflow */
    m->sizes = malloc((m->n_seqs + 1) * sizeof *m->sizes);
    m->pointers = malloc((m->n_seqs + 1) * sizeof *m->pointers);
    m->starts = malloc((m->n_seqs + 1) * sizeof *m->starts);
    m->doc_idx = malloc((m->n_doc_idx + 1) * sizeof *m->doc_idx);
    if (!m->sizes || !m->pointers || !m->starts || !m->doc_idx) {
        snprintf(why, wl, "out of memory for an index of %llu sequences",
                 (unsigned long long)m->n_seqs);
        free_arrays(m);
        return EXIT_FAIL;
    }
    if ((rc = parse_sequences(idx, bin_len, m, why, wl)) || (rc = parse_doc_idx(idx, m, why, wl)))
        free_arrays(m);
    return rc;
}

/* one whole regular file mapped read-only (nothing mapped for an empty file) */
static int map_file(const char *path, void **map, uint64_t *len)
{
    char why[INPUT_WHY_LEN];
    int fd = input_open(path, len, why, sizeof why);
    if (fd < 0) {
        log_error("%s: cannot read: %s", path, why);
        return EXIT_USAGE;
    }
    *map = NULL;
    if (*len > (uint64_t)SIZE_MAX) {
        log_error("%s: %llu bytes do not fit this machine's address space", path,
                  (unsigned long long)*len);
        close(fd);
        return EXIT_USAGE;
    }
    if (*len) {
        void *p = mmap(NULL, (size_t)*len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            log_error("%s: cannot map %llu bytes: %s", path, (unsigned long long)*len,
                      strerror(errno));
            close(fd);
            return EXIT_USAGE;
        }
        *map = p;
    }
    close(fd);
    return 0;
}

/* one token of the .bin at p, as its dtype says */
static int64_t read_token(const mmidx *m, const unsigned char *p)
{
    switch (m->dtype) {
    case MMIDX_U8: return p[0];
    case MMIDX_I8: return (int8_t)p[0];
    case MMIDX_U16: return (int64_t)(p[0] | p[1] << 8);
    case MMIDX_I16: return (int16_t)(uint16_t)(p[0] | p[1] << 8);
    case MMIDX_I32: return le32s(p);
    default: return le64s(p);
    }
}

/* every token once: ids in [0, INT32_MAX]; the largest into max_id */
static int check_tokens(const char *bin_path, mmidx *m)
{
    for (uint64_t i = 0; i < m->n_seqs; i++) {
        const unsigned char *p = m->bin + m->pointers[i];
        for (int32_t j = 0; j < m->sizes[i]; j++, p += m->item_size) {
            int64_t v = read_token(m, p);
            if (v < 0 || v > INT32_MAX) {
                log_error("%s: sequence %llu, token %d: id %lld is not a token id", bin_path,
                          (unsigned long long)i, (int)j, (long long)v);
                return EXIT_USAGE;
            }
            if (v > m->max_id)
                m->max_id = (int32_t)v;
        }
    }
    return 0;
}

int mmidx_open(const char *prefix, mmidx *m)
{
    memset(m, 0, sizeof *m);
    char idx_path[4200], bin_path[4200], why[256];
    snprintf(idx_path, sizeof idx_path, "%s.idx", prefix);
    snprintf(bin_path, sizeof bin_path, "%s.bin", prefix);
    void *imap = NULL, *bmap = NULL;
    uint64_t ilen = 0, blen = 0;
    int rc = map_file(idx_path, &imap, &ilen);
    if (!rc && (rc = map_file(bin_path, &bmap, &blen)) != 0)
        munmap(imap, (size_t)ilen);
    if (rc)
        return rc;
    rc = mmidx_parse(imap ? imap : (const void *)"", ilen, blen, m, why, sizeof why);
    if (rc)
        log_error("%s: %s", idx_path, why);
    m->idx_map = imap;
    m->idx_map_len = ilen;
    m->bin_map = bmap;
    m->bin = bmap;
    m->bin_len = blen;
    if (!rc)
        rc = check_tokens(bin_path, m);
    if (rc)
        mmidx_close(m);
    return rc;
}

void mmidx_close(mmidx *m)
{
    free_arrays(m);
    if (m->idx_map)
        munmap(m->idx_map, (size_t)m->idx_map_len);
    if (m->bin_map)
        munmap(m->bin_map, (size_t)m->bin_len);
    memset(m, 0, sizeof *m);
}

/* the sequence holding token pos: the last i with starts[i] <= pos and sizes[i] > 0 */
static uint64_t seq_of(const mmidx *m, uint64_t pos)
{
    uint64_t lo = 0, hi = m->n_seqs; /* starts[lo] <= pos < starts[hi] */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((uint64_t)m->starts[mid] <= pos)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int64_t mmidx_token_at(const mmidx *m, uint64_t pos)
{
    uint64_t s = seq_of(m, pos);
    uint64_t off = pos - (uint64_t)m->starts[s];
    return read_token(m, m->bin + m->pointers[s] + off * (uint64_t)m->item_size);
}

void mmidx_tokens(const mmidx *m, uint64_t pos, size_t n, int32_t *out)
{
    pos %= m->n_tokens;
    uint64_t s = seq_of(m, pos), off = pos - (uint64_t)m->starts[s];
    for (size_t k = 0; k < n; k++) {
        while (off >= (uint64_t)m->sizes[s]) { /* the next sequence with tokens, wrapping */
            s = s + 1 < m->n_seqs ? s + 1 : 0;
            off = 0;
        }
        out[k] = (int32_t)read_token(m, m->bin + m->pointers[s] + off * m->item_size);
        off++;
    }
}

int mmidx_dtype_for_vocab(int vocab_size)
{
    return vocab_size < 65500 ? MMIDX_U16 : MMIDX_I32;
}
