/* harness/formats/safetensors.h: safetensors files (Hugging Face's weight format): a validated parser of
 * the header, F32/F16/BF16/F64 tensors read as fp32, a writer, and sharded sets (index.json). */
#ifndef SAFETENSORS_H
#define SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER (100u * 1024 * 1024) /* the safetensors library's own limit */

typedef enum {
    ST_BOOL, ST_U8, ST_I8, ST_F8_E5M2, ST_F8_E4M3, ST_I16, ST_U16, ST_F16, ST_BF16, ST_I32,
    ST_U32, ST_F32, ST_F64, ST_I64, ST_U64, ST_N_DTYPES
} st_dtype;

typedef struct {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    uint64_t n;            /* elements */
    uint64_t begin, end;   /* byte offsets within the data area */
} st_tensor;

/* a parsed file: its tensors in header order, the data area, and __metadata__ (or NULL) */
typedef struct {
    char path[4096];
    int n;
    st_tensor *t;
    json_t *metadata;
    void *map;                 /* the whole file, mapped by st_open (NULL after st_parse) */
    size_t map_len;
    const unsigned char *data; /* buf + 8 + header length */
    uint64_t data_len;
} st_file;

const char *st_dtype_name(st_dtype d);
size_t st_dtype_size(st_dtype d);

/* Parses a safetensors image held in buf[len] (not copied: f->data points into buf). Checks: the 8-byte header length against len, the header is a well-formed JSON
 * object (duplicate keys refused), every entry has a known dtype, a shape of non-negative
 * integers whose byte size matches its offsets, offsets inside the data area, tensors neither
 * overlapping nor leaving holes (the safetensors library's rules), __metadata__ maps strings to
 * strings. Returns 0, or 2 with a message naming the file (`where`) and the tensor in err. */
int st_parse(const unsigned char *buf, size_t len, const char *where, st_file *f, char *err,
             size_t errlen);

/* Reads and parses path; returns 0, or 2 after printing the message. */
int st_open(const char *path, st_file *f);
void st_close(st_file *f);

const st_tensor *st_find(const st_file *f, const char *name);

/* Converts tensor t (F32, F16, BF16 or F64) to fp32 into out[t->n]. Returns 0, or 2 after
 * printing a message for another dtype. */
int st_read_f32(const st_file *f, const st_tensor *t, float *out);
/* st_read_f32 for weights: a NaN or an infinity (an F64 value beyond float32's range included)
 * is refused too, with a message naming the file, the tensor and the element. 0 or 2. */
int st_read_f32_finite(const st_file *f, const st_tensor *t, float *out);
/* the same into doubles (F64 read exactly) */
int st_read_f64(const st_file *f, const st_tensor *t, double *out);

/* One tensor to write: fp32 data (or NULL with f64 set) and its shape. */
typedef struct {
    const char *name;
    const float *data;
    const double *f64;     /* written as F64 when data is NULL */
    int ndim;
    int64_t shape[ST_MAX_DIMS];
} st_entry;

/* Writes the tensors in the order given, the header padded with spaces to a multiple of 8
 * bytes, with __metadata__ from meta (string values; may be NULL). Writes to path.tmp and
 * renames. Returns 0, or 1 after printing a message (I/O error). */
int st_write(const char *path, const st_entry *e, int n, json_t *meta);

/* ---- a set of files: one model.safetensors, or the shards of model.safetensors.index.json --- */
typedef struct {
    int n_files;
    st_file *files;
    int n;                 /* tensors over all files */
    const st_tensor **t;   /* each tensor ... */
    const st_file **of;    /* ... and the file it lives in */
} st_set;

/* Opens a model directory's weights: DIR/model.safetensors, else the index
 * DIR/model.safetensors.index.json and every shard it names (each tensor must be in the shard the
 * weight_map says, no shard may hold a tensor the map does not list, no name twice). Returns 0;
 * 2 after printing a message; -1 (no message) when the directory has neither file. */
int st_set_open_dir(const char *dir, st_set *s);
/* Parses the index JSON text (for the fuzzer and tests): fills the shard file names of every
 * tensor. Returns 0 or 2 with the message in err. */
int st_index_parse(const char *text, size_t len, const char *where, json_t **weight_map,
                   char *err, size_t errlen);
int st_set_find(const st_set *s, const char *name);
void st_set_close(st_set *s);

/* IEEE half and bfloat16 to float */
float st_f16_to_f32(uint16_t h);
float st_bf16_to_f32(uint16_t b);

#endif
