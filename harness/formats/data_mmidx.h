/* harness/formats/data_mmidx.h: Megatron-LM's MMapIndexedDataset (the .bin/.idx pair oslo and
 * Megatron pre-train on): the index parsed and checked, the token file mapped, and the writer. */
#ifndef DATA_MMIDX_H
#define DATA_MMIDX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* the .idx layout (little endian): "MMIDIDX\0\0", u64 version 1, u8 dtype code, u64 n_seqs,
 * u64 n_doc_idx, int32 sizes[n_seqs], int64 pointers[n_seqs] (byte offsets into the .bin),
 * int64 doc_idx[n_doc_idx] */
#define MMIDX_MAGIC "MMIDIDX\0\0"
#define MMIDX_MAGIC_LEN 9
#define MMIDX_HEADER_LEN 34 /* magic, version, dtype code, the two counts */

/* Megatron's dtype codes (indexed_dataset.py `dtypes`); 6 and 7 (floats) hold no token ids */
enum { MMIDX_U8 = 1, MMIDX_I8 = 2, MMIDX_I16 = 3, MMIDX_I32 = 4, MMIDX_I64 = 5, MMIDX_F64 = 6,
       MMIDX_DOUBLE = 7, MMIDX_U16 = 8 };

typedef struct {
    int dtype;               /* MMIDX_* code */
    int item_size;           /* bytes per token */
    uint64_t n_seqs;         /* sequences (Megatron's documents at document level) */
    uint64_t n_doc_idx;      /* entries of doc_idx: documents + 1 */
    int32_t *sizes;          /* [n_seqs] tokens of each sequence */
    int64_t *pointers;       /* [n_seqs] byte offset of each sequence in the .bin */
    int64_t *doc_idx;        /* [n_doc_idx] first sequence of each document, then n_seqs */
    int64_t *starts;         /* [n_seqs + 1] tokens before each sequence (prefix sums) */
    uint64_t n_tokens;       /* every sequence's tokens */
    /* the .bin, once mapped (mmidx_open) */
    const unsigned char *bin;
    uint64_t bin_len;
    void *idx_map, *bin_map; /* the mappings, for munmap */
    uint64_t idx_map_len;
    int32_t max_id;          /* the largest token id (-1 when there are no tokens) */
} mmidx;

/* Parses the index idx[len] of a token file of bin_len bytes into out (arrays allocated; the
 * .bin not touched). Refuses, with why set ("offset 17: dtype code 6 (float64) holds no token
 * ids"): a short or bad header, a version other than 1, a dtype that is not an integer, counts
 * whose arrays do not fill the file exactly (truncated or trailing bytes, counts that overflow),
 * a negative size, a sequence outside the .bin, a doc_idx that does not start at 0, decreases,
 * or does not end at n_seqs. Returns 0 or 2. */
int mmidx_parse(const unsigned char *idx, uint64_t len, uint64_t bin_len, mmidx *out, char *why,
                size_t why_len);

/* Opens PREFIX.idx and PREFIX.bin (regular files, mapped read-only), parses the index and reads
 * every token once: an id that is negative or above INT32_MAX is refused. Returns 0, or 2 after a
 * message naming the file and what is wrong. */
int mmidx_open(const char *prefix, mmidx *out);
void mmidx_close(mmidx *m);

/* token `pos` of the concatenation of all sequences in order (pos < n_tokens) */
int64_t mmidx_token_at(const mmidx *m, uint64_t pos);
/* n tokens from position pos of that concatenation, wrapping at its end, into out */
void mmidx_tokens(const mmidx *m, uint64_t pos, size_t n, int32_t *out);

/* Megatron's best_fitting_dtype: uint16 below 65500 ids, else int32 */
int mmidx_dtype_for_vocab(int vocab_size);

/* ---- writing: MMapIndexedDatasetBuilder with one sequence per document ---- */
typedef struct {
    FILE *bin;
    char bin_path[4200], idx_path[4200]; /* the .tmp files being written */
    int dtype, item_size;
    int32_t *sizes;
    size_t n, cap;
    uint64_t bin_bytes;
} mmidx_writer;

/* creates PREFIX.bin.tmp (PREFIX.idx.tmp at finish, then both renamed to PREFIX.bin and
 * PREFIX.idx, so a failed run leaves earlier files as they were); 0, or 2 after a message */
int mmidx_writer_open(mmidx_writer *w, const char *prefix, int dtype);
/* appends one document of n ids (each must fit the dtype); 0, or 1 after a message */
int mmidx_writer_add(mmidx_writer *w, const int32_t *ids, size_t n);
/* writes the index, closes both and renames them into place; 0, or 1 after a message */
int mmidx_writer_finish(mmidx_writer *w);
/* closes and removes what was written (after a failure) */
void mmidx_writer_abort(mmidx_writer *w);

#endif
