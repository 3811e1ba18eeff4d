/* harness/formats/safetensors.c: the safetensors format: header validation (lengths, JSON, dtypes,
 * shapes, offsets), fp32 conversion of F32/F16/BF16/F64, the writer and sharded index sets. */
#define _POSIX_C_SOURCE 200809L
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/output_target.h"
#include "util/util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host (safetensors data is little-endian)"
#endif

static const struct {
    const char *name;
    size_t size;
} DTYPES[ST_N_DTYPES] = {
    [ST_BOOL] = {"BOOL", 1}, [ST_U8] = {"U8", 1},     [ST_I8] = {"I8", 1},
    [ST_F8_E5M2] = {"F8_E5M2", 1}, [ST_F8_E4M3] = {"F8_E4M3", 1},
    [ST_I16] = {"I16", 2},   [ST_U16] = {"U16", 2},   [ST_F16] = {"F16", 2},
    [ST_BF16] = {"BF16", 2}, [ST_I32] = {"I32", 4},   [ST_U32] = {"U32", 4},
    [ST_F32] = {"F32", 4},   [ST_F64] = {"F64", 8},   [ST_I64] = {"I64", 8},
    [ST_U64] = {"U64", 8},
};

const char *st_dtype_name(st_dtype d) { return d < ST_N_DTYPES ? DTYPES[d].name : "?"; }
size_t st_dtype_size(st_dtype d) { return d < ST_N_DTYPES ? DTYPES[d].size : 0; }

static int dtype_from_name(const char *s, st_dtype *out)
{
    for (int i = 0; i < ST_N_DTYPES; i++)
        if (strcmp(DTYPES[i].name, s) == 0) {
            *out = (st_dtype)i;
            return 0;
        }
    return -1;
}

/* ---- messages: the parser writes into a caller's buffer so the fuzzer stays quiet ---------- */

typedef struct {
    const char *where;
    char *err;
    size_t errlen;
} ctx;

__attribute__((format(printf, 2, 3))) static int bad(const ctx *c, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "%s: %s", c->where, msg);
    return EXIT_USAGE;
}

/* printable copy of a tensor name for messages (names come from the file) */
static const char *shown(const char *name, char *out, size_t len)
{
    size_t i = 0;
    for (; name[i] && i + 4 < len && i < 96; i++)
        out[i] = name[i] >= 0x20 && name[i] < 0x7f ? name[i] : '?';
    snprintf(out + i, len - i, "%s", name[i] ? "..." : "");
    return out;
}

/* ---- the header ------------------------------------------------------------------------------ */

static int parse_shape(const ctx *c, const char *nm, json_t *shape, st_tensor *t)
{
    if (!json_is_array(shape))
        return bad(c, "tensor \"%s\": shape must be an array of integers", nm);
    if (json_array_size(shape) > ST_MAX_DIMS)
        return bad(c, "tensor \"%s\": %zu dimensions (at most %d)", nm, json_array_size(shape),
                   ST_MAX_DIMS);
    t->ndim = (int)json_array_size(shape);
    t->n = 1;
    for (int i = 0; i < t->ndim; i++) {
        json_t *d = json_array_get(shape, (size_t)i);
        if (!json_is_integer(d) || json_integer_value(d) < 0)
            return bad(c, "tensor \"%s\": shape[%d] must be an integer >= 0", nm, i);
        uint64_t v = (uint64_t)json_integer_value(d);
        if (v && t->n > UINT64_MAX / 16 / v)
            return bad(c, "tensor \"%s\": the shape's element count overflows", nm);
        t->shape[i] = (int64_t)v;
        t->n *= v;
    }
    return 0;
}

static int parse_offsets(const ctx *c, const char *nm, json_t *offs, uint64_t data_len,
                         st_tensor *t)
{
    if (!json_is_array(offs) || json_array_size(offs) != 2)
        return bad(c, "tensor \"%s\": data_offsets must be [begin, end]", nm);
    json_t *b = json_array_get(offs, 0), *e = json_array_get(offs, 1);
    if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 ||
        json_integer_value(e) < 0)
        return bad(c, "tensor \"%s\": data_offsets must be two integers >= 0", nm);
    t->begin = (uint64_t)json_integer_value(b);
    t->end = (uint64_t)json_integer_value(e);
    if (t->begin > t->end)
        return bad(c, "tensor \"%s\": data_offsets [%llu, %llu] end before they begin", nm,
                   (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > data_len)
        return bad(c, "tensor \"%s\": data_offsets [%llu, %llu] run past the data area (%llu bytes)",
                   nm, (unsigned long long)t->begin, (unsigned long long)t->end,
                   (unsigned long long)data_len);
    uint64_t want = t->n * st_dtype_size(t->dtype);
    if (t->end - t->begin != want)
        return bad(c, "tensor \"%s\": %llu bytes at data_offsets, but %s of %llu elements takes %llu",
                   nm, (unsigned long long)(t->end - t->begin), st_dtype_name(t->dtype),
                   (unsigned long long)t->n, (unsigned long long)want);
    return 0;
}

static int parse_entry(const ctx *c, const char *key, json_t *v, uint64_t data_len, st_tensor *t)
{
    char nm[128];
    shown(key, nm, sizeof nm);
    if (!json_is_object(v))
        return bad(c, "tensor \"%s\": must be an object {dtype, shape, data_offsets}", nm);
    json_t *dt = json_object_get(v, "dtype");
    if (!json_is_string(dt))
        return bad(c, "tensor \"%s\": dtype must be a string", nm);
    if (dtype_from_name(json_string_value(dt), &t->dtype) != 0) {
        char d[64];
        return bad(c, "tensor \"%s\": unknown dtype \"%s\"", nm,
                   shown(json_string_value(dt), d, sizeof d));
    }
    int rc = parse_shape(c, nm, json_object_get(v, "shape"), t);
    if (!rc)
        rc = parse_offsets(c, nm, json_object_get(v, "data_offsets"), data_len, t);
    if (!rc && !(t->name = strdup(key)))
        rc = bad(c, "out of memory");
    return rc;
}

static int parse_metadata(const ctx *c, json_t *v, st_file *f)
{
    if (json_is_null(v)) /* as the safetensors library reads it: no metadata */
        return 0;
    if (!json_is_object(v))
        return bad(c, "__metadata__ must be an object of strings");
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x)
    {
        char nm[128];
        if (!json_is_string(x))
            return bad(c, "__metadata__ \"%s\": must be a string", shown(k, nm, sizeof nm));
    }
    f->metadata = json_incref(v);
    return 0;
}

static int cmp_offsets(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* tensors tile the data area: sorted by offset, each begins where the previous one ended */
static int check_tiling(const ctx *c, st_file *f)
{
    const st_tensor **order = malloc((size_t)(f->n ? f->n : 1) * sizeof *order);
    if (!order)
        return bad(c, "out of memory");
    for (int i = 0; i < f->n; i++)
        order[i] = &f->t[i];
    qsort(order, (size_t)f->n, sizeof *order, cmp_offsets);
    uint64_t at = 0;
    int rc = 0;
    char a[128], b[128];
    for (int i = 0; i < f->n && !rc; i++) {
        if (order[i]->begin < at)
            rc = bad(c, "tensor \"%s\" overlaps tensor \"%s\" (bytes %llu..%llu)",
                     shown(order[i]->name, a, sizeof a), shown(order[i - 1]->name, b, sizeof b),
                     (unsigned long long)order[i]->begin, (unsigned long long)at);
        else if (order[i]->begin > at)
            rc = bad(c, "bytes %llu..%llu of the data area belong to no tensor (before \"%s\")",
                     (unsigned long long)at, (unsigned long long)order[i]->begin,
                     shown(order[i]->name, a, sizeof a));
        at = order[i]->end;
    }
    if (!rc && at != f->data_len)
        rc = bad(c, "bytes %llu..%llu at the end of the data area belong to no tensor",
                 (unsigned long long)at, (unsigned long long)f->data_len);
    free(order);
    return rc;
}

static int parse_header(const ctx *c, json_t *root, st_file *f)
{
    if (!json_is_object(root))
        return bad(c, "the header must be a JSON object");
    f->t = calloc(json_object_size(root) + 1, sizeof *f->t);
    if (!f->t)
        return bad(c, "out of memory");
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        int rc = strcmp(key, "__metadata__") == 0
                     ? parse_metadata(c, v, f)
                     : parse_entry(c, key, v, f->data_len, &f->t[f->n]);
        if (rc)
            return rc;
        if (strcmp(key, "__metadata__") != 0)
            f->n++;
    }
    return check_tiling(c, f);
}

static uint64_t read_u64le(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int parse_json(const ctx *c, const unsigned char *h, size_t hlen, json_t **root)
{
    if (hlen == 0 || h[0] != '{')
        return bad(c, "the header does not start with '{' (not a safetensors file?)");
    json_error_t e;
    *root = json_loadb((const char *)h, hlen, JSON_REJECT_DUPLICATES, &e);
    if (*root)
        return 0;
    for (char *p = e.text; *p; p++)
        if (*p < 0x20 || *p > 0x7e)
            *p = '?';
    return bad(c, "the header is not valid JSON (column %d): %s", e.column, e.text);
}

int st_parse(const unsigned char *buf, size_t len, const char *where, st_file *f, char *err,
             size_t errlen)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", where);
    ctx c = {where, err, errlen};
    if (len < 8)
        return bad(&c, "%zu bytes: too short for the 8-byte header length", len);
    uint64_t hlen = read_u64le(buf);
    if (hlen > len - 8)
        return bad(&c, "header length %llu exceeds the %zu bytes after it",
                   (unsigned long long)hlen, len - 8);
    if (hlen > ST_MAX_HEADER)
        return bad(&c, "header length %llu exceeds the limit of %u bytes",
                   (unsigned long long)hlen, ST_MAX_HEADER);
    f->data = buf + 8 + hlen;
    f->data_len = len - 8 - hlen;
    json_t *root = NULL;
    int rc = parse_json(&c, buf + 8, (size_t)hlen, &root);
    if (!rc)
        rc = parse_header(&c, root, f);
    json_decref(root);
    return rc;
}

/* ---- files ----------------------------------------------------------------------------------- */

int st_open(const char *path, st_file *f)
{
    memset(f, 0, sizeof *f);
    char why[INPUT_WHY_LEN];
    uint64_t size = 0;
    int fd = input_open(path, &size, why, sizeof why);
    if (fd < 0) {
        log_error("%s: cannot read the safetensors file: %s", path, why);
        return EXIT_USAGE;
    }
    size_t len = (size_t)size;
    void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (len && map == MAP_FAILED) {
        log_error("%s: cannot map the safetensors file: %s", path, strerror(errno));
        return EXIT_USAGE;
    }
    char err[1024];
    static const unsigned char empty[1];
    int rc = st_parse(map ? map : empty, len, path, f, err, sizeof err);
    f->map = map;
    f->map_len = len;
    if (rc) {
        log_error("%s", err);
        st_close(f);
    }
    return rc;
}

void st_close(st_file *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->t[i].name);
    free(f->t);
    json_decref(f->metadata);
    if (f->map)
        munmap(f->map, f->map_len);
    memset(f, 0, sizeof *f);
}

const st_tensor *st_find(const st_file *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0)
            return &f->t[i];
    return NULL;
}

float st_f16_to_f32(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

float st_bf16_to_f32(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* element i of t as a double; 0, or -1 for a dtype that is not a float type the harness reads */
static int element(const st_file *f, const st_tensor *t, uint64_t i, double *out)
{
    const unsigned char *p = f->data + t->begin;
    uint16_t h;
    float x;
    switch (t->dtype) {
    case ST_F32: memcpy(&x, p + 4 * i, 4); *out = x; return 0;
    case ST_F16: memcpy(&h, p + 2 * i, 2); *out = st_f16_to_f32(h); return 0;
    case ST_BF16: memcpy(&h, p + 2 * i, 2); *out = st_bf16_to_f32(h); return 0;
    case ST_F64: memcpy(out, p + 8 * i, 8); return 0;
    default: return -1;
    }
}

static int unsupported(const st_file *f, const st_tensor *t)
{
    log_error("%s: tensor \"%s\" has dtype %s; the harness reads F32, F16, BF16 and F64", f->path,
              t->name, st_dtype_name(t->dtype));
    return EXIT_USAGE;
}

static int not_finite(const st_file *f, const st_tensor *t, uint64_t i, double v)
{
    log_error("%s: tensor \"%s\" holds %s at element %llu: weights must be finite", f->path,
              t->name, isnan(v) ? "NaN" : isinf(v) ? "an infinity"
                                               : "a value beyond float32's range (it would be infinite)",
              (unsigned long long)i);
    return EXIT_USAGE;
}

/* t converted to fp32 into out; with finite set, a NaN or an infinity (after the conversion: an
 * F64 value beyond float32's range too) is refused */
static int read_f32(const st_file *f, const st_tensor *t, float *out, int finite)
{
    double v;
    for (uint64_t i = 0; i < t->n; i++) {
        if (element(f, t, i, &v))
            return unsupported(f, t);
        out[i] = (float)v;
        if (finite && !isfinite(out[i]))
            return not_finite(f, t, i, v);
    }
    return 0;
}

int st_read_f32(const st_file *f, const st_tensor *t, float *out)
{
    return read_f32(f, t, out, 0);
}

int st_read_f32_finite(const st_file *f, const st_tensor *t, float *out)
{
    return read_f32(f, t, out, 1);
}

int st_read_f64(const st_file *f, const st_tensor *t, double *out)
{
    for (uint64_t i = 0; i < t->n; i++)
        if (element(f, t, i, &out[i]))
            return unsupported(f, t);
    return 0;
}

/* ---- writing --------------------------------------------------------------------------------- */

static json_t *header_json(const st_entry *e, int n, json_t *meta, uint64_t *data_len)
{
    json_t *h = json_object();
    if (meta)
        json_object_set(h, "__metadata__", meta);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        uint64_t count = 1;
        json_t *shape = json_array();
        for (int k = 0; k < e[i].ndim; k++) {
            json_array_append_new(shape, json_integer(e[i].shape[k]));
            count *= (uint64_t)e[i].shape[k];
        }
        uint64_t bytes = count * (e[i].data ? 4 : 8);
        json_t *offs = json_pack("[II]", (json_int_t)off, (json_int_t)(off + bytes));
        json_object_set_new(h, e[i].name,
                            json_pack("{s:s, s:o, s:o}", "dtype", e[i].data ? "F32" : "F64",
                                      "shape", shape, "data_offsets", offs));
        off += bytes;
    }
    *data_len = off;
    return h;
}

static int write_all(FILE *f, const void *p, size_t n)
{
    return fwrite(p, 1, n, f) == n ? 0 : -1;
}

static int write_body(FILE *f, const st_entry *e, int n, const char *header)
{
    size_t hlen = strlen(header), padded = (hlen + 7) / 8 * 8;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    if (write_all(f, len8, 8) || write_all(f, header, hlen) ||
        write_all(f, "        ", padded - hlen))
        return -1;
    for (int i = 0; i < n; i++) {
        size_t count = 1;
        for (int k = 0; k < e[i].ndim; k++)
            count *= (size_t)e[i].shape[k];
        if (e[i].data ? write_all(f, e[i].data, count * 4) : write_all(f, e[i].f64, count * 8))
            return -1;
    }
    return 0;
}

int st_write(const char *path, const st_entry *e, int n, json_t *meta)
{
    uint64_t data_len;
    json_t *h = header_json(e, n, meta, &data_len);
    char *header = h ? json_dumps(h, JSON_COMPACT) : NULL;
    json_decref(h);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = header ? output_create_fresh(tmp) : NULL; /* a link planted there is replaced */
    int rc = f ? write_body(f, e, n, header) : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc) {
        log_error("%s: cannot write the safetensors file: %s", path,
                  header ? strerror(errno) : "out of memory");
        unlink(tmp);
    }
    free(header);
    return rc ? EXIT_FAIL : 0;
}
